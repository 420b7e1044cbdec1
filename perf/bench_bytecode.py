"""What compiled bytecode saves the suite, from one run: collecting the fast tier and a cold import of the package
as a notebook kernel does it, each with bytecode off (``PYTHONDONTWRITEBYTECODE=1``, no ``__pycache__`` of the
package or the tests: every process compiles them, and pytest rewrites every test module's asserts again) and
with it on (the caches ``make test`` writes, warm). ``make test`` turns bytecode on for its processes: the suite
starts hundreds of them (pytest workers, notebook kernels, the command line).

Usage: python perf/bench_bytecode.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLLECT = [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
           "-m", "not slow and not browser", "--ignore=tests/test_browser.py"]
IMPORT = [sys.executable, "-c", "import vlamb_nb.notebook, vlamb_nb.compare, vlamb_nb.record, vlamb_nb.report_html, "
          "vlamb_nb.benchmarks.refadv.benchmark, vlamb_nb.benchmarks.vflute.benchmark"]


def _drop_caches() -> None:
    for d in [*ROOT.glob("vlamb_nb/**/__pycache__"), *ROOT.glob("tests/**/__pycache__")]:
        shutil.rmtree(d, ignore_errors=True)


def _time(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs of each")
    args = ap.parse_args(argv)
    off = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    on = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for name, cmd in (("collect the fast tier", COLLECT), ("import the package (a kernel's)", IMPORT)):
        cold = []
        for _ in range(args.repeat):
            _drop_caches()
            cold.append(_time(cmd, off))
        _time(cmd, on)  # writes the caches
        warm = [_time(cmd, on) for _ in range(args.repeat)]
        print(f"{name}: bytecode off {min(cold):.2f} s, on {min(warm):.2f} s: {min(cold) / min(warm):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
