"""Seconds per saliency map for each method on tiny checkpoints (CPU), measured in one run.

    python perf/bench_saliency.py [--families qwen2_5_vl llava] [--repeats 5] [--quantization 4bit]

The answer is teacher-forced (a fixed option), so the timings are the saliency computation itself plus
input preparation; ``greedy`` adds generating the answer first (16 tokens) for the gradient method.
Ratios are relative to the attention method of the same family in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    import numpy as np
    from PIL import Image

    from vlamb_nb.models import IMAGE_SLOT, Request, load_model, user_message
    from vlamb_nb.saliency.methods import Explainer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", nargs="+", default=["qwen2_5_vl", "llava", "llava_onevision", "idefics3"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quantization", default=None)
    ap.add_argument("--size", type=int, nargs=2, default=[320, 240], metavar=("W", "H"))
    a = ap.parse_args()

    rng = np.random.default_rng(0)
    img = Image.fromarray((rng.random((a.size[1], a.size[0], 3)) * 255).astype(np.uint8))
    req = Request("bench", [user_message(IMAGE_SLOT, "Which one is meant? (A) left (B) right")], images=[img])
    print(f"image {a.size[0]}x{a.size[1]}, repeats {a.repeats}, quantization {a.quantization or 'none'}")
    print(f"{'family':<16} {'method':<16} {'tokens':>6} {'s/map (median)':>15} {'ratio':>6}")
    for fam in a.families:
        ex = Explainer(load_model(f"tiny:{fam}", quantization=a.quantization))
        runs = {"attention": {"answer": "B"}, "rollout": {"answer": "B"}, "gradient": {"answer": "B"},
                "gradient+greedy": {"answer": None}}
        tokens = {name: ex.explain(req, name.split("+")[0], **kw).layout.n_tokens  # warm-up
                  for name, kw in runs.items()}
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(a.repeats):  # round-robin, so load on the machine hits every method alike
            for name, kw in runs.items():
                t0 = time.perf_counter()
                ex.explain(req, name.split("+")[0], **kw)
                times[name].append(time.perf_counter() - t0)
        base = statistics.median(times["attention"])
        for name in runs:
            med = statistics.median(times[name])
            print(f"{fam:<16} {name:<16} {tokens[name]:>6} {med:>15.3f} {med / base:>6.2f}")

if __name__ == "__main__":
    main()
