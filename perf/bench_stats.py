"""Speed of the vectorized bootstrap against a straightforward per-resample Python loop.

V-FLUTE scale: 10,000 paired resamples over 6,027 items, for accuracy and for macro-F1.
Both paths run in this one process on the same data; the printed ratios are what the
package's claims rest on. Also prints coverage of the 95% intervals by simulation.

    python perf/bench_stats.py            # full run
    python perf/bench_stats.py --quick    # fewer loop resamples (ratio extrapolated per resample)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vlamb_nb import metrics, stats


def systems(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 2, n)
    pa = np.where(rng.random(n) < 0.75, gold, 1 - gold)
    pb = np.where(rng.random(n) < 0.72, gold, 1 - gold)
    return gold, pa, pb


def loop_paired(a: np.ndarray, b: np.ndarray, metric, n_resamples: int, seed: int = 0) -> np.ndarray:
    """The textbook Koehn loop: draw indices, score both systems, keep the difference."""
    rng = np.random.default_rng(seed)
    n = len(a)
    out = np.empty(n_resamples)
    for i in range(n_resamples):
        idx = rng.integers(0, n, n)
        out[i] = metric(a, idx) - metric(b, idx)
    return out


def timed(fn):
    t = time.perf_counter()
    value = fn()
    return time.perf_counter() - t, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=6027)
    ap.add_argument("--resamples", type=int, default=10000)
    ap.add_argument("--quick", action="store_true", help="time the loops on 1/10 of the resamples")
    args = ap.parse_args()
    n, b = args.n, args.resamples
    loop_b = b // 10 if args.quick else b
    gold, pa, pb = systems(n)
    ca, cb = (pa == gold).astype(float), (pb == gold).astype(float)
    # warm-up: first calls import pandas/scipy; keep import time out of the measurements
    stats.paired_bootstrap(ca[:50], cb[:50], stats.macro_f1_statistic(gold[:50]), n_resamples=10)
    stats.bootstrap_ci(ca[:50], n_resamples=10, method="bca")

    print(f"items={n} resamples={b} (loop timed on {loop_b} resamples, scaled per resample)")
    print(f"{'case':<34}{'vectorized s':>14}{'loop s':>10}{'ratio':>9}")

    def row(name: str, vec_s: float, loop_s: float | None) -> None:
        if loop_s is None:
            print(f"{name:<34}{vec_s:>14.3f}{'-':>10}{'-':>9}")
            return
        full = loop_s * b / loop_b
        print(f"{name:<34}{vec_s:>14.3f}{full:>10.2f}{full / vec_s:>8.0f}x")

    vec_s, res = timed(lambda: stats.paired_bootstrap(ca, cb, n_resamples=b))
    loop_s, deltas = timed(lambda: loop_paired(ca, cb, lambda v, idx: v[idx].mean(), loop_b))
    row("paired accuracy", vec_s, loop_s)
    print(f"{'':<4}vectorized: {res}; loop CI "
          f"[{np.quantile(deltas, 0.025):.4f}, {np.quantile(deltas, 0.975):.4f}]")

    f1 = stats.macro_f1_statistic(gold)
    vec_s, res = timed(lambda: stats.paired_bootstrap(pa, pb, f1, n_resamples=b))
    loop_s, deltas = timed(lambda: loop_paired(pa, pb, lambda v, idx: metrics.macro_f1(gold[idx], v[idx]),
                                               loop_b))
    row("paired macro-F1", vec_s, loop_s)
    print(f"{'':<4}vectorized: {res}; loop CI "
          f"[{np.quantile(deltas, 0.025):.4f}, {np.quantile(deltas, 0.975):.4f}]")

    # no compression possible: continuous per-item values (every item is its own atom)
    x = np.random.default_rng(1).normal(size=n)
    vec_s, _ = timed(lambda: stats.bootstrap_ci(x, n_resamples=b))
    rng = np.random.default_rng(0)
    loop_s, _ = timed(lambda: [x[rng.integers(0, n, n)].mean() for _ in range(loop_b)])
    row("mean of continuous values", vec_s, loop_s)

    pairs = np.arange(n) // 2
    vec_s, _ = timed(lambda: stats.paired_bootstrap(ca, cb, n_resamples=b, clusters=pairs))
    row("paired accuracy, cluster (pairs)", vec_s, None)
    vec_s, _ = timed(lambda: stats.bootstrap_ci(ca, n_resamples=b, method="bca"))
    row("accuracy, BCa", vec_s, None)

    print("\ncoverage of the 95% interval for a proportion (300 simulated datasets, 2,000 resamples)")
    for p_true, size in [(0.3, 150), (0.7, 600), (0.9, 100)]:
        cells = []
        for method in ("percentile", "bca"):
            t, cov = timed(lambda m=method, p=p_true, s=size: stats.proportion_coverage(
                p, s, n_datasets=300, n_resamples=2000, method=m, seed=7))
            cells.append(f"{method} {cov:.3f} ({t:.1f}s)")
        print(f"    p={p_true} n={size}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
