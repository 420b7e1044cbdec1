"""What a reproduce run's page step costs after its notebooks end: the run's stores scored for the items each
paper's section lists (``reproduce.scored_runs``), then ``report.html`` written, on a copy of a run folder.

Prints the page step's seconds with its records left as the notebooks wrote them (what ``reproduce`` does) beside
the same scoring that also rewrites every store's run record (what it did before), and their ratio, from one run
of each on the same folder; the machine's load average says how much of a core they had.

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


def _scored(run: Path, *, write_records: bool) -> tuple[float, int]:
    from vlamb_nb.compare import load_runs

    t = time.perf_counter()
    runs = load_runs(run, unloaded=[], failed={}, write_records=write_records)
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
    from vlamb_nb.reproduce import scored_runs

    with tempfile.TemporaryDirectory() as tmp:
        for i, write in enumerate((True, False)):  # the first also pays the imports; the second is what ships
            run = Path(tmp) / f"run{i}"
            shutil.copytree(src, run, symlinks=True)
            if i == 0:
                _scored(run, write_records=False)  # imports and the encoder's first load, paid by neither timing
            secs, n = _scored(run, write_records=write)
            print(f"score {n} stores{' and rewrite their records' if write else ', records read as written'}: "
                  f"{secs:.1f} s")
            if write:
                before = secs
        results = json.loads((run / "results.json").read_text(encoding="utf-8"))
        t = time.perf_counter()
        runs, err, notes = scored_runs(run)
        write_run_page(run, results, report_card.build(results), runs=runs, items_error=err, items_notes=notes,
                       figures=run / "figures")
        page = time.perf_counter() - t
    print(f"page step as reproduce runs it (scoring + report.html): {page:.1f} s")
    print(f"records rewritten / records read: {before / secs:.2f}x  (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
