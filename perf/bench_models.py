"""Model-layer measurements, all in one run (ratios are only comparable within a run).

1. Batched (batch 8) vs one-at-a-time generation throughput on a tiny checkpoint on CPU.
2. Weight memory of a 4-bit vs an unquantized load of a tiny checkpoint whose linear layers dominate.
3. Rerun of a finished 1,000-request run: model calls and wall time.

Usage: python perf/bench_models.py [--family qwen2_5_vl] [--n 32]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def _requests(n: int, max_new_tokens: int):
    import numpy as np
    from PIL import Image

    from vlamb_nb.models import IMAGE_SLOT, DecodingParams, Request, user_message

    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        img = Image.fromarray(rng.integers(0, 255, (80 + 8 * (i % 4), 100, 3), dtype=np.uint8))
        out.append(Request(id=f"r{i}", messages=[user_message(IMAGE_SLOT, f"What is in picture {i}?")],
                           images=[img], params=DecodingParams(max_new_tokens=max_new_tokens),
                           benchmark="bench", setting="s"))
    return out


def throughput(family: str, n: int, max_new_tokens: int) -> dict[str, float]:
    from vlamb_nb import runner
    from vlamb_nb.models import load_model

    model = load_model(f"tiny:{family}")
    reqs = _requests(n, max_new_tokens)
    runner.run(model, reqs[:8], None, batch_size=8, progress=False)  # warm-up (allocator, kernels)
    t0 = time.perf_counter()
    one = runner.run(model, reqs, None, batch_size=1, progress=False)
    t_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    batched = runner.run(model, reqs, None, batch_size=8, progress=False)
    t_batch = time.perf_counter() - t0
    same = float((one["text"] == batched["text"]).mean())
    return {"items_per_s_batch1": n / t_one, "items_per_s_batch8": n / t_batch, "ratio": t_one / t_batch,
            "identical_outputs": same}


def weight_memory(family: str, width: int, layers: int) -> dict[str, float]:
    import torch

    from vlamb_nb.models.hf import HFModel
    from vlamb_nb.models.tiny import build_tiny, default_cache_dir

    path = build_tiny(family, default_cache_dir() / "tiny" / "bench" / f"{family}-w{width}-l{layers}",
                      text_width=width, text_layers=layers)
    sizes = {}
    for label, q, dtype in [("fp32", None, torch.float32), ("bf16", None, torch.bfloat16),
                            ("4bit", "4bit", torch.float32)]:
        m = HFModel(path, quantization=q, dtype=dtype)
        sizes[label] = m.weight_bytes()
        del m
    return {"bytes_fp32": sizes["fp32"], "bytes_bf16": sizes["bf16"], "bytes_4bit": sizes["4bit"],
            "ratio_4bit_vs_fp32": sizes["4bit"] / sizes["fp32"], "ratio_4bit_vs_bf16": sizes["4bit"] / sizes["bf16"]}


def rerun(n: int = 1000) -> dict[str, float]:
    from PIL import Image

    from vlamb_nb import runner
    from vlamb_nb.models import IMAGE_SLOT, Request, ScriptedModel, user_message

    reqs = [Request(id=f"q{i}", messages=[user_message(IMAGE_SLOT, f"question {i}")],
                    images=[Image.new("RGB", (32, 32), (i % 256, (i // 256) % 256, 7))],
                    benchmark="bench", setting="s") for i in range(n)]
    model = ScriptedModel(lambda r: f"answer to {r.id}")
    with tempfile.TemporaryDirectory() as d:
        store = Path(d) / "preds.jsonl"
        t0 = time.perf_counter()
        runner.run(model, reqs, store, batch_size=16, progress=False)
        t_first = time.perf_counter() - t0
        calls_before = model.calls
        t0 = time.perf_counter()
        out = runner.run(model, reqs, store, batch_size=16, progress=False)
        t_rerun = time.perf_counter() - t0
    return {"first_run_s": t_first, "rerun_s": t_rerun, "rerun_model_calls": model.calls - calls_before,
            "rerun_all_cached": bool(out["cached"].all())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="qwen2_5_vl")
    ap.add_argument("--n", type=int, default=32, help="requests for the throughput measurement")
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--width", type=int, default=512, help="text width of the linear-heavy checkpoint")
    ap.add_argument("--layers", type=int, default=6)
    a = ap.parse_args()
    import torch

    print(f"torch threads: {torch.get_num_threads()}")
    t = throughput(a.family, a.n, a.max_new_tokens)
    print(f"[throughput] tiny:{a.family}, {a.n} image requests, {a.max_new_tokens} new tokens, CPU")
    print(f"  batch 1: {t['items_per_s_batch1']:.2f} items/s   batch 8: {t['items_per_s_batch8']:.2f} items/s   "
          f"ratio {t['ratio']:.2f}x (target >= 3x); identical outputs: {t['identical_outputs']:.0%}")
    w = weight_memory(a.family, a.width, a.layers)
    print(f"[memory] {a.family} text width {a.width}, {a.layers} layers")
    print(f"  fp32 {w['bytes_fp32'] / 1e6:.2f} MB   bf16 {w['bytes_bf16'] / 1e6:.2f} MB   "
          f"4-bit {w['bytes_4bit'] / 1e6:.2f} MB")
    print(f"  ratio 4-bit/fp32 {w['ratio_4bit_vs_fp32']:.3f} (target <= 0.35)   "
          f"4-bit/bf16 {w['ratio_4bit_vs_bf16']:.3f}")
    r = rerun()
    print("[rerun] 1,000 finished requests")
    print(f"  first run {r['first_run_s']:.2f} s   rerun {r['rerun_s']:.2f} s (target < 2 s)   "
          f"model calls on rerun: {r['rerun_model_calls']}   all cached: {r['rerun_all_cached']}")


if __name__ == "__main__":
    main()
