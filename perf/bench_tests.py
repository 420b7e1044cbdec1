"""Wall time of the fast test tier (``make test-fast``) and of a cold ``import vlamb_nb.cli``, from one run.

The fast tier is the edit–test loop: ``pytest -m "not slow and not browser"`` (no notebook executions, no
model builds, no browser). Its target is under 3 minutes on a 2-core machine; the script prints the wall
time, the machine's load average before and after (other processes on the machine slow every timing), and
exits 1 when the tier fails or misses the target. Timings live here, never as assertions in the tests, which
run with every core busy. The import of the CLI is timed too (the best of ``--imports`` cold starts in fresh
interpreters): a command that answers ``--help`` must not pay for torch.

``--notebooks`` also times the notebook tests (each notebook executed once per test run and shared by the
tests that read it): the per-notebook test files and the whole reproduction, minutes each.

The tier runs as ``make test-fast`` runs it, on every core (pytest-xdist, ``--workers auto``); ``--serial`` also
times it in one process, in the same run, and prints the ratio.

Usage: python perf/bench_tests.py [--target 180] [--workers auto] [--serial] [--imports 5] [--notebooks]
                                  [-- extra pytest arguments]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAST = ["-m", "not slow and not browser", "--ignore=tests/test_browser.py"]
NOTEBOOK_TESTS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*_notebook.py")) + [
    "tests/test_reproduce_all.py"]


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def import_seconds(n: int) -> float:
    """The best of ``n`` cold imports of the CLI, each timed inside a fresh interpreter."""
    code = "import time; t = time.perf_counter(); import vlamb_nb.cli; print(time.perf_counter() - t)"
    return min(float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                    cwd=ROOT).stdout) for _ in range(n))


def timed_pytest(args: list[str]) -> tuple[int, float, str, str]:
    """(exit code, wall seconds, load before, load after) of one quiet pytest run in the checkout."""
    # this checkout's package first, also for the notebook kernels the tests start
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    before = load()
    t0 = time.perf_counter()
    rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=ROOT,
                        env={**os.environ, "PYTHONPATH": path}).returncode
    return rc, time.perf_counter() - t0, before, load()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=float, default=180.0, help="seconds the fast tier must stay under")
    ap.add_argument("--imports", type=int, default=5, help="cold imports of the CLI to time (the best counts)")
    ap.add_argument("--notebooks", action="store_true", help="also time the notebook tests (minutes)")
    ap.add_argument("--workers", default="auto", help="pytest-xdist workers for the fast tier (as make test-fast)")
    ap.add_argument("--serial", action="store_true", help="also time the fast tier in one process, for the ratio")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments for the fast tier (after --)")
    a = ap.parse_args(argv)

    print(f"cpu cores: {os.cpu_count()}; load average at start: {load()}", flush=True)
    print(f"import vlamb_nb.cli: {import_seconds(a.imports):.3f} s (best of {a.imports} cold starts)", flush=True)
    rc, secs, before, after = timed_pytest(["-n", a.workers, *FAST, *a.pytest_args])
    verdict = "ok" if secs < a.target else "MISSED"
    print(f"fast tier (pytest -n {a.workers} -m 'not slow and not browser'): {secs:.1f} s wall, exit {rc}; target < "
          f"{a.target:.0f} s: {verdict}; load {before} -> {after}", flush=True)
    failed = rc != 0 or secs >= a.target
    if a.serial:
        src, ssecs, sbefore, safter = timed_pytest([*FAST, *a.pytest_args])
        print(f"fast tier in one process: {ssecs:.1f} s wall, exit {src}; load {sbefore} -> {safter}; "
              f"one process / {a.workers} workers: {ssecs / secs:.2f}x", flush=True)
        failed = failed or src != 0
    if a.notebooks:
        nrc, nsecs, nbefore, nafter = timed_pytest(NOTEBOOK_TESTS)
        print(f"notebook tests ({' '.join(NOTEBOOK_TESTS)}): {nsecs:.1f} s wall, exit {nrc}; load {nbefore} -> "
              f"{nafter}", flush=True)
        failed = failed or nrc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
