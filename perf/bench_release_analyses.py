"""What Ref-Adv's notebook spends on the released runs at two resample counts: the official table with its
intervals (``official_reproduction``) and the paired tests (``significance``), timed from one run of each.

The served- and fetched-release tests run the notebook with ``-p n_resamples=200`` (they check the pipeline, not
an interval's width); this prints what that saves against the notebook's default of 2,000, and the ratio. The
folder is a released runs' folder (``*_predictions.jsonl``): by default the fetched release's, else the files
beside the checkout.

    python perf/bench_release_analyses.py [FOLDER] [--resamples 2000 200]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path


def _time(folder: Path, n_resamples: int) -> tuple[float, float, int]:
    from vlamb_nb.benchmarks.refadv import report as analysis

    t = time.perf_counter()
    official = analysis.official_reproduction(folder, n_resamples=n_resamples)
    t_official = time.perf_counter() - t
    t = time.perf_counter()
    analysis.significance(official["runs"], n_resamples=n_resamples, seed=0)
    return t_official, time.perf_counter() - t, len(official["runs"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", help="released runs (default: the fetched release's, else beside the checkout)")
    ap.add_argument("--resamples", nargs=2, type=int, default=[2000, 200], metavar=("DEFAULT", "FEWER"))
    a = ap.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")
    from vlamb_nb.benchmarks.refadv import report as analysis

    folder = Path(a.folder) if a.folder else analysis.predictions_dir(profile="paper")
    if folder is None or not any(Path(folder).glob("*_predictions.jsonl")):
        raise SystemExit("no released Ref-Adv runs: `vlamb-nb data fetch refadv`, or name a folder of them")
    _time(folder, 10)  # imports and file reads paid by neither timing
    took = {n: _time(folder, n) for n in a.resamples}
    for n, (off, sig, runs) in took.items():
        print(f"n_resamples={n}: official table {off:.1f} s, paired tests {sig:.1f} s ({runs} runs)")
    (hi, lo) = (sum(took[n][:2]) for n in a.resamples)
    print(f"ratio {a.resamples[0]} / {a.resamples[1]} resamples: {hi / lo:.2f}x ({hi:.1f} s / {lo:.1f} s); load "
          f"average {' '.join(Path('/proc/loadavg').read_text().split()[:3]) if Path('/proc/loadavg').exists() else 'n/a'}")


if __name__ == "__main__":
    main()
