"""Wall and processor time of the offline ``vlamb-nb reproduce``, per notebook and in total, measured in one run.

Each variant is one whole ``reproduce`` in a fresh process, into its own run folder: this checkout with the
default number of notebooks at once (one per core, at most 4), this checkout one notebook at a time (``--jobs 1``),
and, with ``--baseline DIR``, another checkout of the package (an older commit: its code and notebooks, run with
this environment) as it runs by default. Variants alternate round by round, so a machine whose speed drifts
slows each about equally; the ratios to the first variant are printed per round and as the median over rounds.
Processor time is user + system of the command and everything it waited for (the kernels); on a shared machine
wall time depends on the other processes, processor time much less, so both are printed, with the load average.

Every variant must compute the same thing: the script compares each variant's ``results.json`` (timings and run
folder paths aside) and figures with the first variant's, and exits 1 when one differs or a notebook failed.

Usage: python perf/bench_reproduce.py [--rounds 1] [--baseline DIR] [--jobs N] [notebook ...]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TIMING_KEYS = {"seconds", "cpu_seconds"}


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def reproduce(checkout: Path, runs: Path, run_id: str, jobs: int | None, notebooks: list[str]) -> dict[str, Any]:
    """One ``vlamb-nb reproduce`` of ``checkout`` (its package first on the path, also in the kernels)."""
    path = os.pathsep.join(p for p in (str(checkout), os.environ.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-c", "import sys; from vlamb_nb.cli import main; sys.exit(main())", "reproduce",
           *notebooks, "--runs-dir", str(runs), "--run-id", run_id]
    if jobs is not None:
        cmd += ["--jobs", str(jobs)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=checkout, env={**os.environ, "PYTHONPATH": path, "MPLBACKEND": "Agg"},
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    folder = runs / run_id
    results = json.loads((folder / "results.json").read_text()) if (folder / "results.json").is_file() else {}
    per = {}
    for name, summary in results.items():
        meta = {}
        if (folder / f"{name}.ipynb").is_file():
            meta = json.loads((folder / f"{name}.ipynb").read_text()).get("metadata", {}).get("vlamb", {})
        per[name] = (summary.get("seconds"), meta.get("cpu_seconds"), bool(summary.get("ok")))
    return {"wall": wall, "cpu": cpu, "rc": proc.returncode, "per": per, "folder": folder,
            "tail": (proc.stdout + proc.stderr)[-2000:]}


def _comparable(value: Any, folder: str) -> Any:
    """``results.json`` without timings and with the run folder's path taken out."""
    if isinstance(value, dict):
        return {k: _comparable(v, folder) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_comparable(v, folder) for v in value]
    if isinstance(value, str):
        return value.replace(folder, "<run>")
    return value


def differences(a: Path, b: Path) -> list[str]:
    """What differs between two runs: results (timings aside) and figures, byte for byte."""
    out = []
    ra = _comparable(json.loads((a / "results.json").read_text()), str(a))
    rb = _comparable(json.loads((b / "results.json").read_text()), str(b))
    for name in sorted(set(ra) | set(rb)):
        if ra.get(name) != rb.get(name):
            out.append(f"results of {name}")
    figs_a = {p.relative_to(a) for p in (a / "figures").rglob("*") if p.is_file()}
    figs_b = {p.relative_to(b) for p in (b / "figures").rglob("*") if p.is_file()}
    out += [f"figure only in one run: {p}" for p in sorted(figs_a ^ figs_b)]
    out += [f"figure differs: {p}" for p in sorted(figs_a & figs_b) if not filecmp.cmp(a / p, b / p, shallow=False)]
    return out


def _median(values: list[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", help="notebooks to run (default: all)")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of every variant, alternating")
    ap.add_argument("--jobs", type=int, help="notebooks at once for the parallel variant (default: reproduce's)")
    ap.add_argument("--baseline", type=Path, help="another checkout of the package to time beside this one")
    a = ap.parse_args(argv)

    variants: list[tuple[str, Path, int | None]] = [("this checkout, default jobs", ROOT, a.jobs),
                                                    ("this checkout, --jobs 1", ROOT, 1)]
    if a.baseline is not None:
        variants.append((f"baseline {a.baseline}", a.baseline.resolve(), None))
    print(f"cpu cores: {os.cpu_count()} (usable {len(os.sched_getaffinity(0))}); load average at start: {load()}",
          flush=True)
    failed = False
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name, *_ in variants}
    with tempfile.TemporaryDirectory(prefix="bench-reproduce-") as tmp:
        runs = Path(tmp)
        for r in range(a.rounds):
            for k, (name, checkout, jobs) in enumerate(variants):
                res = reproduce(checkout, runs, f"r{r}v{k}", jobs, a.notebooks)
                rows[name].append(res)
                bad = [n for n, (_, _, ok) in res["per"].items() if not ok]
                print(f"round {r + 1} {name}: {res['wall']:.1f} s wall, {res['cpu']:.1f} s cpu, exit {res['rc']}, "
                      f"load {load()}", flush=True)
                if res["rc"] != 0 or bad or not res["per"]:
                    failed = True
                    print(f"  FAILED notebooks {bad}:\n{res['tail']}", flush=True)
                    continue
                if k:
                    diff = differences(rows[variants[0][0]][r]["folder"], res["folder"])
                    if diff:
                        failed = True
                    print(f"  same results and figures as '{variants[0][0]}': "
                          f"{'yes' if not diff else 'NO: ' + '; '.join(diff[:5])}", flush=True)
        first = variants[0][0]
        names = list(rows[first][0]["per"])
        med = {name: {nb: tuple(_median([x["per"].get(nb, (None, None))[j] for x in rows[name]]) for j in (0, 1))
                      for nb in names} for name, *_ in variants}
        print("\nper notebook, median over rounds: wall s / cpu s (its kernel and its driver)")
        print(f"{'notebook':14}" + "".join(f" | {name[:30]:>30}" for name, *_ in variants))
        for nb in [*names, "sum"]:
            cells = [(sum(v[0] for v in med[name].values()), sum(v[1] for v in med[name].values())) if nb == "sum"
                     else med[name][nb] for name, *_ in variants]
            print(f"{nb:14}" + "".join(f" | {w:14.1f} / {c:13.1f}" for w, c in cells))
        print("\nwhole command (wall s, cpu s), median over rounds, and ratio to the first variant per round:")
        for name, *_ in variants:
            walls, cpus = [x["wall"] for x in rows[name]], [x["cpu"] for x in rows[name]]
            wr = [x["wall"] / y["wall"] for x, y in zip(rows[name], rows[first], strict=True)]
            cr = [x["cpu"] / y["cpu"] for x, y in zip(rows[name], rows[first], strict=True)]
            print(f"  {name:40} {statistics.median(walls):7.1f} s wall {statistics.median(cpus):7.1f} s cpu | "
                  f"/first: wall {', '.join(f'{v:.2f}' for v in wr)}; cpu {', '.join(f'{v:.2f}' for v in cr)}")
    print(f"load average at end: {load()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
