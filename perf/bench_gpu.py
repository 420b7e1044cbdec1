"""Real-size model measurements on one GPU: load time, GPU memory and tokens/s, 4-bit (NF4) vs bf16.

The CPU benchmarks (``bench_models.py``) use tiny checkpoints, whose timings say little about a 7B model. Here a
checkpoint with random weights is built from the real config of Qwen2.5-VL-7B-Instruct (8.3B parameters, the
vision tower included) with the tiny builder's tokenizer, processor and chat template, saved to local disk and
loaded back through ``load_model(path, quantization=...)``; image+text requests go through ``runner.run``, the
package's own path. Everything is measured in one run, so the ratios compare like with like.

EOS is held off with ``min_new_tokens`` in the checkpoint's generation config (``DecodingParams`` has no such
knob), so every request generates the same number of tokens; tokens/s counts the tokens the runner reports
(``completion_tokens``), over the wall time of the whole ``runner.run`` call (image encoding and prefill included).

Usage: python perf/bench_gpu.py [--new-tokens 64] [--n1 4] [--n8 16] [--json out.json]
       python perf/bench_gpu.py --dry-run   # a small model of the same family, on CPU, in well under a minute
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

# Qwen2.5-VL-7B-Instruct's config.json, less what the tokenizer decides (vocabulary ids).
REAL_TEXT = dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                 num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=128000, rms_norm_eps=1e-6)
REAL_VISION = dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, out_hidden_size=3584,
                   patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=112,
                   fullatt_block_indexes=[7, 15, 23, 31], tokens_per_second=2)
# Same family and head size (128, so the same mrope sections apply), small enough for a CPU check.
DRY_TEXT = dict(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096, rms_norm_eps=1e-6)
DRY_VISION = dict(depth=2, hidden_size=128, intermediate_size=256, num_heads=2, out_hidden_size=256,
                  patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=112,
                  fullatt_block_indexes=[1], tokens_per_second=2)
MROPE = [16, 24, 24]
# the released processor's pixel budget (min_pixels / max_pixels)
PIXELS = {"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 16384}


def build_checkpoint(out: Path, text: dict[str, Any], vision: dict[str, Any], *, device: str,
                     min_new_tokens: int, seed: int = 0) -> int:
    """Write a random-weight Qwen2.5-VL checkpoint; return its parameter count.

    Tokenizer, chat template and processor come from the tiny builder, so only the sizes differ from the tested
    tiny checkpoint. Weights are created on ``device`` directly in bf16: a 7B model initialised on CPU in fp32
    would take minutes and 33 GB of host memory.
    """
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration

    from vlamb_nb.models.tiny import qwen2_5_vl_parts

    config, processor, tok = qwen2_5_vl_parts(text, vision, PIXELS, mrope_section=MROPE, tie_word_embeddings=False)
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen2_5_VLForConditionalGeneration._from_config(config, dtype=torch.bfloat16).eval()
    n_params = sum(p.numel() for p in model.parameters())
    gen = model.generation_config
    gen.eos_token_id = tok.eos_token_id
    gen.pad_token_id = tok.pad_token_id
    gen.do_sample = False
    gen.min_new_tokens = min_new_tokens  # holds EOS off: every request generates exactly max_new_tokens
    model.save_pretrained(out)
    processor.save_pretrained(out)
    del model
    _free()
    return n_params


def requests(n: int, new_tokens: int, side: int, tag: str):
    """``n`` image+text requests as in ``bench_models.py``; distinct ids per ``tag`` so nothing is reused."""
    import numpy as np
    from PIL import Image

    from vlamb_nb.models import IMAGE_SLOT, DecodingParams, Request, user_message

    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        img = Image.fromarray(rng.integers(0, 255, (side, side + 28 * (i % 3), 3), dtype=np.uint8))
        out.append(Request(id=f"{tag}{i}", messages=[user_message(IMAGE_SLOT, f"What is in picture {i}? "
                                                                               "Describe it in detail.")],
                           images=[img], params=DecodingParams(max_new_tokens=new_tokens),
                           benchmark="bench", setting="s"))
    return out


def _free() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _gib(n: int | None) -> float | None:
    return None if n is None else n / 2**30


def measure(path: Path, quantization: str | None, *, new_tokens: int, n1: int, n8: int, side: int) -> dict[str, Any]:
    """Load once, warm up, then time batch 1 and batch 8 through ``runner.run``."""
    import torch

    from vlamb_nb import runner
    from vlamb_nb.models import load_model

    cuda = torch.cuda.is_available()
    _free()
    base = torch.cuda.memory_allocated() if cuda else 0
    t0 = time.perf_counter()
    model = load_model(str(path), quantization=quantization)
    if cuda:
        torch.cuda.synchronize()
    res: dict[str, Any] = {"quantization": quantization or model.info.dtype, "load_s": time.perf_counter() - t0,
                           "weight_bytes": model.weight_bytes(),
                           "mem_after_load": torch.cuda.memory_allocated() - base if cuda else None,
                           "dtype": model.info.dtype}
    runner.run(model, requests(8, new_tokens, side, "warm"), None, batch_size=8, progress=False)  # kernels, allocator
    for b, n in ((1, n1), (8, n8)):
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        df = runner.run(model, requests(n, new_tokens, side, f"b{b}-"), None, batch_size=b, progress=False)
        if cuda:
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        errors = df["error"].dropna().tolist()
        if errors:
            raise RuntimeError(f"{res['quantization']} batch {b}: {len(errors)} failed requests: {errors[0]}")
        tokens = int(df["completion_tokens"].sum())
        res[f"b{b}"] = {"requests": n, "seconds": dt, "tokens": tokens, "tokens_per_s": tokens / dt,
                        "prompt_tokens": int(df["prompt_tokens"].max()),
                        "short": int((df["completion_tokens"] < new_tokens).sum()),
                        "batch_size_used": df.attrs.get("batch_size"), "oom_events": df.attrs.get("oom_events"),
                        "peak": torch.cuda.max_memory_allocated() - base if cuda else None}
    del model
    _free()
    return res


def _fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def report(results: list[dict[str, Any]], header: str) -> None:
    """One table and the ratios, from this run only."""
    print(header)
    print("| load | load s | weights GiB | GPU GiB after load | peak GiB b1 | peak GiB b8 | tok/s b1 | tok/s b8 |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['quantization']} | {r['load_s']:.1f} | {r['weight_bytes'] / 2**30:.2f} | "
              f"{_fmt(_gib(r['mem_after_load']), '.2f')} | {_fmt(_gib(r['b1']['peak']), '.2f')} | "
              f"{_fmt(_gib(r['b8']['peak']), '.2f')} | {r['b1']['tokens_per_s']:.1f} | {r['b8']['tokens_per_s']:.1f} |")
    for r in results:
        q = r["quantization"]
        print(f"{q}: batch 8 / batch 1 throughput {r['b8']['tokens_per_s'] / r['b1']['tokens_per_s']:.2f}x; "
              f"tokens counted b1 {r['b1']['tokens']} ({r['b1']['requests']} requests, {r['b1']['short']} short), "
              f"b8 {r['b8']['tokens']} ({r['b8']['requests']} requests, {r['b8']['short']} short); "
              f"prompt {r['b1']['prompt_tokens']} tokens; batch size used {r['b8']['batch_size_used']}, "
              f"OOM events {r['b8']['oom_events']}")
    by = {r["quantization"]: r for r in results}
    full = next((r for r in results if r["quantization"] in ("bfloat16", "float16", "float32")), None)
    if "4bit" in by and full is not None:
        q, f = by["4bit"], full
        parts = [f"weights {q['weight_bytes'] / f['weight_bytes']:.3f}"]
        if q["mem_after_load"] is not None:
            parts += [f"GPU after load {q['mem_after_load'] / f['mem_after_load']:.3f}",
                      f"peak b8 {q['b8']['peak'] / f['b8']['peak']:.3f}"]
        parts += [f"tok/s b1 {q['b1']['tokens_per_s'] / f['b1']['tokens_per_s']:.2f}",
                  f"tok/s b8 {q['b8']['tokens_per_s'] / f['b8']['tokens_per_s']:.2f}"]
        print(f"4-bit / {f['quantization']}: " + ", ".join(parts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true", help="small model of the same family; runs on CPU")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--n1", type=int, default=4, help="requests timed at batch 1")
    ap.add_argument("--n8", type=int, default=16, help="requests timed at batch 8")
    ap.add_argument("--image-side", type=int, default=448, help="image height in pixels (448: 256 image tokens)")
    ap.add_argument("--quantizations", default="4bit,none",
                    help="comma-separated: 4bit, 8bit, none (the package's default dtype: bf16 on a GPU)")
    ap.add_argument("--dir", default=None, help="where to write the checkpoint (default: a temporary folder)")
    ap.add_argument("--json", default=None, help="also write the results here")
    a = ap.parse_args()

    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    cuda = torch.cuda.is_available()
    if not cuda and not a.dry_run:
        raise SystemExit("no GPU: use --dry-run for the small CPU check")
    if a.dry_run:
        text, vision, side = DRY_TEXT, DRY_VISION, min(a.image_side, 112)
        new_tokens, n1, n8 = min(a.new_tokens, 8), min(a.n1, 2), min(a.n8, 8)
    else:
        text, vision, side, new_tokens, n1, n8 = REAL_TEXT, REAL_VISION, a.image_side, a.new_tokens, a.n1, a.n8
    wanted = [q.strip() for q in a.quantizations.split(",") if q.strip()]
    bnb = importlib.util.find_spec("bitsandbytes") is not None
    skipped = []
    if "4bit" in wanted and not bnb:
        wanted.remove("4bit")
        skipped.append("4bit (bitsandbytes is not installed)")
    versions = f"torch {torch.__version__}, transformers {transformers.__version__}"
    if bnb:
        import bitsandbytes

        versions += f", bitsandbytes {bitsandbytes.__version__}"
    device = torch.cuda.get_device_name() if cuda else "CPU"
    print(f"device: {device}; {versions}")

    root = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(prefix="vlamb-bench-gpu-"))
    path = root / ("qwen2_5_vl-dry" if a.dry_run else "qwen2_5_vl-7b-random")
    t0 = time.perf_counter()
    try:
        n_params = build_checkpoint(path, text, vision, device="cuda" if cuda else "cpu", min_new_tokens=new_tokens)
        size = sum(f.stat().st_size for f in path.glob("*.safetensors"))
        print(f"built {n_params:,} parameters ({size / 2**30:.3f} GiB bf16 on disk) "
              f"in {time.perf_counter() - t0:.1f} s")
        results = []
        for q in wanted:
            results.append(measure(path, None if q in ("bf16", "none") else q, new_tokens=new_tokens,
                                   n1=n1, n8=n8, side=side))
            r = results[-1]
            print(f"  {r['quantization']}: loaded in {r['load_s']:.1f} s; b1 {r['b1']['tokens_per_s']:.1f} tok/s, "
                  f"b8 {r['b8']['tokens_per_s']:.1f} tok/s", flush=True)
    finally:
        if a.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    what = "dry run, small model" if a.dry_run else "Qwen2.5-VL-7B-Instruct config, random weights"
    report(results, f"[{what}] {device}; {new_tokens} new tokens per request, images {side}x{side}..{side + 56}, "
                    f"{n1} requests at batch 1, {n8} at batch 8")
    for s in skipped:
        print(f"not measured: {s}")
    if a.json:
        Path(a.json).write_text(json.dumps({"device": device, "versions": versions, "params": n_params,
                                            "new_tokens": new_tokens, "results": results, "skipped": skipped},
                                           indent=2))


if __name__ == "__main__":
    main()
