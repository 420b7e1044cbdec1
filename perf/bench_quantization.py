"""What 4-bit changes, measured: one model's runs of the same items at NF4, 8-bit and 16-bit on two papers.

For each quantization the model is loaded once through ``load_model(spec, quantization=...)`` (NF4 for ``4bit``,
LLM.int8 for ``8bit``, the default dtype -- bf16 on a GPU -- for ``none``) and each paper's default setting runs on
the same items through ``Benchmark.evaluate`` into a store of its own; then ``vlamb_nb.quantization`` compares every
quantization with the unquantized run: paired differences per declared metric, two one-sided tests of equivalence
within ``--margin`` points, the items that flip, the weights' memory (and on a GPU the memory after load and at its
peak) and the tokens per second each run generated.

On a GPU: ``--model`` names local weights (a checkpoint folder, or a hub id already in the cache) and
``--profile paper`` runs on the fetched releases (``vlamb-nb data fetch vague refadv``); without ``--model`` the
random-weight checkpoint of ``bench_gpu.py`` (Qwen2.5-VL-7B's real config) is built, whose answers measure only
the machinery, not the model. ``--dry-run`` runs the whole path on CPU with a tiny checkpoint on generated samples
(what the test suite runs).

Usage: PYTHONPATH=. python perf/bench_quantization.py --model Qwen/Qwen2.5-VL-7B-Instruct --papers vague,refadv \\
           --profile paper --limit 200 --json quant.json
       python perf/bench_quantization.py --dry-run --limit 3 --json quant.json
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any


def _free() -> None:
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def run_quantization(spec: str, quantization: str | None, papers: dict[str, Any], work: Path, *, limit: int,
                     new_tokens: int, profile: str) -> dict[str, Any]:
    """Load ``spec`` at ``quantization`` once and run every paper's default setting; the scored runs and what
    the load cost."""
    import torch

    from vlamb_nb import get_benchmark
    from vlamb_nb.models import load_model

    cuda = torch.cuda.is_available()
    _free()
    base = torch.cuda.memory_allocated() if cuda else 0
    t0 = time.perf_counter()
    model = load_model(spec, quantization=quantization)
    out: dict[str, Any] = {"load_s": time.perf_counter() - t0, "weights_gib": model.weight_bytes() / 2**30,
                           "gpu_gib_after_load": (torch.cuda.memory_allocated() - base) / 2**30 if cuda else None,
                           "scored": {}}
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    label = quantization or "none"
    for name, items in papers.items():
        bench = get_benchmark(name)
        options = dict(bench.offline_score_options) if profile == "offline" else {}
        out["scored"][name] = bench.evaluate(model, items, bench.default_setting, store=work / label / f"{name}.jsonl",
                                             limit=limit, progress=False, max_new_tokens=new_tokens, **options)
    out["gpu_gib_peak"] = (torch.cuda.max_memory_allocated() - base) / 2**30 if cuda else None
    del model
    _free()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="local weights or a cached hub id (default: bench_gpu's random 7B checkpoint on a "
                                    "GPU, a tiny checkpoint with --dry-run)")
    ap.add_argument("--papers", default="vague,refadv", help="comma-separated papers (default vague,refadv)")
    ap.add_argument("--quantizations", default="4bit,8bit,none", help="comma-separated: 4bit, 8bit, none")
    ap.add_argument("--profile", choices=["offline", "paper"], default="offline",
                    help="paper: the fetched releases; offline: generated samples")
    ap.add_argument("--limit", type=int, default=64, help="items per paper (the same items at every quantization)")
    ap.add_argument("--new-tokens", type=int, default=64, help="max_new_tokens of every request")
    ap.add_argument("--margin", type=float, default=2.0, help="equivalence margin, percentage points (default 2)")
    ap.add_argument("--n-resamples", type=int, default=2000)
    ap.add_argument("--dry-run", action="store_true", help="a tiny checkpoint on CPU, generated samples")
    ap.add_argument("--json", help="also write the comparison here")
    a = ap.parse_args(argv)

    import torch

    from vlamb_nb import get_benchmark
    from vlamb_nb.quantization import quantization_comparison

    cuda = torch.cuda.is_available()
    if not cuda and not a.dry_run and a.model is None:
        raise SystemExit("no GPU: use --dry-run (a tiny checkpoint on CPU), or name --model to run on CPU anyway")
    papers = [p.strip() for p in a.papers.split(",") if p.strip()]
    quants = [None if q.strip() in ("none", "bf16") else q.strip() for q in a.quantizations.split(",") if q.strip()]
    work = Path(tempfile.mkdtemp(prefix="vlamb-bench-quant-"))
    spec = a.model
    if a.dry_run:
        spec, a.limit, a.new_tokens = spec or "tiny:qwen2_5_vl", min(a.limit, 4), min(a.new_tokens, 8)
    elif spec is None:  # bench_gpu's checkpoint: Qwen2.5-VL-7B's config, random weights, built on the GPU
        import sys

        sys.path.insert(0, str(Path(__file__).parent))
        from bench_gpu import PIXELS, REAL_TEXT, REAL_VISION, build_checkpoint  # noqa: F401

        spec = str(work / "qwen2_5_vl-7b-random")
        build_checkpoint(Path(spec), REAL_TEXT, REAL_VISION, device="cuda", min_new_tokens=1)
    items = {}
    for p in papers:
        bench = get_benchmark(p)
        items[p] = bench.notebook_items(None, profile=a.profile, n=a.limit, seed=0)
    device = torch.cuda.get_device_name() if cuda else "CPU"
    print(f"device: {device}; model {spec}; papers {', '.join(papers)}; {a.limit} items each")
    results: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    for q in quants:
        try:
            results[q or "none"] = run_quantization(spec, q, items, work, limit=a.limit, new_tokens=a.new_tokens,
                                                    profile=a.profile)
        except Exception as e:  # noqa: BLE001 - a quantization this machine cannot load is said, the rest still run
            skipped.append(f"{q or 'none'}: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
            continue
        r = results[q or "none"]
        print(f"  {q or 'none'}: loaded in {r['load_s']:.1f} s, weights {r['weights_gib']:.3f} GiB", flush=True)
    doc: dict[str, Any] = {"device": device, "model": spec, "limit": a.limit, "margin": a.margin, "skipped": skipped,
                           "loads": {q: {k: v for k, v in r.items() if k != "scored"} for q, r in results.items()},
                           "papers": {}}
    if len(results) >= 2:
        for p in papers:
            comp = quantization_comparison(p, {q: r["scored"][p] for q, r in results.items()}, margin=a.margin,
                                           memory={q: r["weights_gib"] for q, r in results.items()},
                                           n_resamples=a.n_resamples)
            print(comp.markdown())
            doc["papers"][p] = comp.to_dict()
    for s in skipped:
        print(f"not measured: {s}")
    if a.json:
        Path(a.json).write_text(json.dumps(doc, indent=2, default=lambda v: None if isinstance(v, float) and
                                           math.isnan(v) else str(v)), encoding="utf-8")
    return 0 if len(results) >= 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
