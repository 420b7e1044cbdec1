"""Speed of the vectorized bootstrap against a straightforward per-resample Python loop.

V-FLUTE scale: 10,000 paired resamples over 6,027 items, for accuracy and for macro-F1.
Both paths run in this one process on the same data; the printed ratios are what the
package's claims rest on. Each time is the best of ``--repeat`` runs, and the runs of a case
and of its loop alternate, so a slow spell of a shared machine falls on both sides of a ratio.
Also prints coverage of the 95% intervals by simulation (Wilson against the bootstrap intervals).

Exits with status 1, naming the cases, when a vectorized case misses its target: every case
must beat its loop (a vectorized path that loses to a loop is a bug, not a result), the
bootstrap means of continuous values must run at least ``--continuous-target`` (3) times their
loops' speed, and the sign-flip permutation test (accuracy and continuous values) at least
``--permutation-target`` (10) times its loop's. scipy's permutation test is printed beside them
for reference, not gated.

    python perf/bench_stats.py            # full run
    python perf/bench_stats.py --quick    # fewer loop resamples (ratio extrapolated per resample)
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

import numpy as np

from vlamb_nb import stats
from vlamb_nb.benchmarks.vflute.score import macro_f1


@dataclass
class Row:
    name: str
    vec_s: float
    loop_s: float | None  # scaled to the full number of resamples; None: no loop to compare
    gated: bool = True  # False: library code (scipy), printed for information only
    target: float = 1.0  # the least ratio (loop / vectorized) that passes

    @property
    def ratio(self) -> float | None:
        return None if self.loop_s is None else self.loop_s / self.vec_s


def missed_cases(rows: list[Row]) -> list[str]:
    """Gated cases whose ratio is below their target, with the ratio and the target."""
    return [f"{r.name} ({r.ratio:.2f}x < {r.target:g}x)" for r in rows
            if r.gated and r.ratio is not None and r.ratio < r.target]


def systems(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 2, n)
    pa = np.where(rng.random(n) < 0.75, gold, 1 - gold)
    pb = np.where(rng.random(n) < 0.72, gold, 1 - gold)
    return gold, pa, pb


def loop_paired(a: np.ndarray, b: np.ndarray, metric, n_resamples: int, seed: int = 0,
                clusters: list[np.ndarray] | None = None) -> np.ndarray:
    """The textbook Koehn loop: draw indices (or whole clusters), score both systems, keep the difference."""
    rng = np.random.default_rng(seed)
    n = len(a)
    out = np.empty(n_resamples)
    for i in range(n_resamples):
        if clusters is None:
            idx = rng.integers(0, n, n)
        else:
            idx = np.concatenate([clusters[j] for j in rng.integers(0, len(clusters), len(clusters))])
        out[i] = metric(a, idx) - metric(b, idx)
    return out


def loop_sign_flip(d: np.ndarray, n_resamples: int, seed: int = 0) -> np.ndarray:
    """The textbook paired permutation loop: flip each item's difference with probability 1/2."""
    rng = np.random.default_rng(seed)
    return np.array([np.where(rng.random(len(d)) < 0.5, -d, d).mean() for _ in range(n_resamples)])


def timed(fn, repeat: int = 1):
    """(best wall time over ``repeat`` runs, value of the last run)."""
    best, value = float("inf"), None
    for _ in range(max(1, repeat)):
        t = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t)
    return best, value


def timed_pair(vec, loop, repeat: int = 1):
    """((best time, last value) of ``vec``, the same of ``loop``), their runs alternating."""
    runs = [(timed(vec), timed(loop)) for _ in range(max(1, repeat))]
    return tuple((min(r[k][0] for r in runs), runs[-1][k][1]) for k in (0, 1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=6027, help="items per system (default: V-FLUTE test size)")
    ap.add_argument("--resamples", type=int, default=10000, help="bootstrap/permutation resamples")
    ap.add_argument("--quick", action="store_true", help="time the loops on 1/10 of the resamples")
    ap.add_argument("--repeat", type=int, default=5, help="time each case this many times and keep the best")
    ap.add_argument("--continuous-target", type=float, default=3.0,
                    help="least ratio for the bootstrap means of continuous values (default: 3)")
    ap.add_argument("--permutation-target", type=float, default=10.0,
                    help="least ratio for the sign-flip permutation test (default: 10)")
    args = ap.parse_args(argv)
    n, b, rep = args.n, args.resamples, args.repeat
    loop_b = max(1, b // 10) if args.quick else b
    gold, pa, pb = systems(n)
    ca, cb = (pa == gold).astype(float), (pb == gold).astype(float)
    # warm-up: first calls import pandas/scipy/statsmodels; keep import time out of the measurements
    stats.paired_bootstrap(ca[:50], cb[:50], stats.macro_f1_statistic(gold[:50]), n_resamples=10)
    stats.bootstrap_ci(ca[:50], n_resamples=10, method="bca")
    stats.permutation_test(ca[:50], cb[:50], n_resamples=10)
    stats.permutation_test(ca[:50], cb[:50], n_resamples=10, engine="scipy")
    stats.bootstrap_ci(np.random.default_rng(0).normal(size=50), n_resamples=10)  # the gather path's check

    print(f"items={n} resamples={b} (loop timed on {loop_b} resamples, scaled per resample; "
          f"best of {rep} runs)")
    print(f"{'case':<44}{'vectorized s':>14}{'loop s':>10}{'ratio':>9}")
    rows: list[Row] = []

    def row(name: str, vec_s: float, loop_s: float | None, gated: bool = True, target: float = 1.0) -> None:
        r = Row(name, vec_s, None if loop_s is None else loop_s * b / loop_b, gated, target)
        rows.append(r)
        if r.ratio is None:
            print(f"{name:<44}{vec_s:>14.3f}{'-':>10}{'-':>9}")
        else:
            note = "  (library code, not gated)" if not gated else f"  (target {target:g}x)" if target > 1 else ""
            print(f"{name:<44}{vec_s:>14.3f}{r.loop_s:>10.3f}{r.ratio:>8.2f}x{note}")

    mean = lambda v, idx: v[idx].mean()  # noqa: E731
    (vec_s, res), (loop_s, deltas) = timed_pair(lambda: stats.paired_bootstrap(ca, cb, n_resamples=b),
                                                lambda: loop_paired(ca, cb, mean, loop_b), rep)
    row("paired accuracy", vec_s, loop_s)
    print(f"{'':<4}vectorized: {res}; loop CI "
          f"[{np.quantile(deltas, 0.025):.4f}, {np.quantile(deltas, 0.975):.4f}]")

    f1 = stats.macro_f1_statistic(gold)
    (vec_s, res), (loop_s, deltas) = timed_pair(
        lambda: stats.paired_bootstrap(pa, pb, f1, n_resamples=b),
        lambda: loop_paired(pa, pb, lambda v, idx: macro_f1(gold[idx], v[idx]), loop_b), rep)
    row("paired macro-F1", vec_s, loop_s)
    print(f"{'':<4}vectorized: {res}; loop CI "
          f"[{np.quantile(deltas, 0.025):.4f}, {np.quantile(deltas, 0.975):.4f}]")

    # no compression possible: continuous per-item values (every item is its own atom)
    x = np.random.default_rng(1).normal(size=n)
    y = x + np.random.default_rng(2).normal(size=n)
    def loop_mean() -> np.ndarray:
        rng = np.random.default_rng(0)
        return np.array([x[rng.integers(0, n, n)].mean() for _ in range(loop_b)])

    (vec_s, res), (loop_s, means) = timed_pair(lambda: stats.bootstrap_ci(x, n_resamples=b), loop_mean, rep)
    row("mean of continuous values", vec_s, loop_s, target=args.continuous_target)
    print(f"{'':<4}vectorized: {res}; loop CI "
          f"[{np.quantile(means, 0.025):.4f}, {np.quantile(means, 0.975):.4f}]")
    (vec_s, res), (loop_s, deltas) = timed_pair(lambda: stats.paired_bootstrap(x, y, n_resamples=b),
                                                lambda: loop_paired(x, y, mean, loop_b), rep)
    row("paired mean of continuous values", vec_s, loop_s, target=args.continuous_target)
    print(f"{'':<4}vectorized: {res}; loop CI "
          f"[{np.quantile(deltas, 0.025):.4f}, {np.quantile(deltas, 0.975):.4f}]")

    pairs = np.arange(n) // 2
    members = [np.flatnonzero(pairs == c) for c in range(pairs.max() + 1)]
    (vec_s, _), (loop_s, _) = timed_pair(lambda: stats.paired_bootstrap(ca, cb, n_resamples=b, clusters=pairs),
                                         lambda: loop_paired(ca, cb, mean, loop_b, clusters=members), rep)
    row("paired accuracy, cluster (pairs)", vec_s, loop_s)
    vec_s, _ = timed(lambda: stats.bootstrap_ci(ca, n_resamples=b, method="bca"), rep)
    row("accuracy, BCa", vec_s, None)

    # the loop flips every item; the engine drops the items that agree and draws binomials/bytes
    for label, u, v in [("accuracy", ca, cb), ("continuous values", x, y)]:
        (vec_s, res), (loop_s, _) = timed_pair(lambda u=u, v=v: stats.permutation_test(u, v, n_resamples=b),
                                               lambda u=u, v=v: loop_sign_flip(u - v, loop_b), rep)
        row(f"paired permutation, {label}", vec_s, loop_s, target=args.permutation_target)
        print(f"{'':<4}{res}")
    (vec_s, res), (loop_s, _) = timed_pair(lambda: stats.permutation_test(ca, cb, n_resamples=b, engine="scipy"),
                                           lambda: loop_sign_flip(ca - cb, loop_b), rep)
    row("paired permutation, accuracy [scipy]", vec_s, loop_s, gated=False)
    print(f"{'':<4}{res}")

    print("\ncoverage of the 95% interval for a proportion (300 simulated datasets, 2,000 resamples)")
    for p_true, size in [(0.95, 31), (0.5, 10), (0.3, 150), (0.7, 600), (0.9, 100)]:
        cells = []
        for method in ("wilson", "percentile", "bca"):
            t, cov = timed(lambda m=method, p=p_true, s=size: stats.proportion_coverage(
                p, s, n_datasets=300, n_resamples=2000, method=m, seed=7))
            cells.append(f"{method} {cov:.3f} ({t:.2f}s)")
        print(f"    p={p_true} n={size}: " + ", ".join(cells))

    print("\nratios (loop / vectorized) measured in this run: "
          + ", ".join(f"{r.name} {r.ratio:.2f}x" for r in rows if r.ratio is not None))
    missed = missed_cases(rows)
    if missed:
        print(f"FAIL: below target: {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
