"""What a reproduce run's page step costs after its notebooks end: the runs each paper's section lists
(``reproduce.recorded_runs``), then ``report.html`` written, on a copy of a run folder.

Prints the seconds to read the runs as the page step does now (each store's run record as its notebook wrote it,
the data loaded only for prompts and images) beside scoring every store again (what it did before), and their
ratio, from one run of each on the same folder; the machine's load average says how much of a core they had.

    python perf/bench_page_step.py                 # runs/latest (make reproduce first)
    python perf/bench_page_step.py runs/<id>
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path


def _runs(run: Path, *, rescore: bool) -> tuple[float, int]:
    """The run's stores read as the page does; ``rescore``: every record removed first, so each store is scored
    again (and its record written), as the page step did before it read records."""
    from vlamb_nb.compare import load_runs
    from vlamb_nb.record import SUFFIX

    if rescore:
        for rec in run.rglob(f"*{SUFFIX}"):
            rec.unlink()
    t = time.perf_counter()
    runs = load_runs(run, unloaded=[], failed={}, score_missing=rescore)
    return time.perf_counter() - t, len(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", nargs="?", default="runs/latest", help="a reproduce run folder (default: runs/latest)")
    a = ap.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")
    src = Path(a.run).resolve()
    if not (src / "results.json").is_file():
        raise SystemExit(f"not a reproduce run folder: {src} (run `make reproduce` first)")
    from vlamb_nb import report_card
    from vlamb_nb.report_html import write_run_page
    from vlamb_nb.reproduce import recorded_runs

    with tempfile.TemporaryDirectory() as tmp:
        took = {}
        for i, rescore in enumerate((True, False)):
            run = Path(tmp) / f"run{i}"
            shutil.copytree(src, run, symlinks=True)
            if i == 0:
                _runs(run, rescore=False)  # imports and the encoder's first load, paid by neither timing
            took[rescore], n = _runs(run, rescore=rescore)
            print(f"{n} stores {'scored again' if rescore else 'read from their run records'}: {took[rescore]:.1f} s")
        run = Path(tmp) / "run1"  # its records as the notebooks wrote them
        results = json.loads((run / "results.json").read_text(encoding="utf-8"))
        t = time.perf_counter()
        runs, err, notes = recorded_runs(run)
        write_run_page(run, results, report_card.build(results), runs=runs, items_error=err, items_notes=notes,
                       figures=run / "figures")
        page = time.perf_counter() - t
    print(f"page step as reproduce runs it (records read + report.html): {page:.1f} s")
    print(f"scored again / records read: {took[True] / took[False]:.2f}x  (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
