"""One-command reproduction: execute the paper notebooks, collect their recorded results, write a report.

``vlamb-nb reproduce [PAPER ...] [-p key=value ...]`` runs each notebook with papermill into
``runs/<run-id>/``, regenerates ``figures/``, copies every result a notebook recorded
(``vlamb_nb.notebook.record``) into that notebook's metadata (``metadata.vlamb``), and writes
``runs/<run-id>/report.md``. A failing notebook is reported with its failing cell and error;
the others still run. The return value (and exit code) is the number of failed notebooks.

Parameters: ``-p key=value`` goes to every notebook that declares ``key``; ``-p paper.key=value``
goes to that notebook only, and is an error there if the notebook does not declare it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlamb_nb.errors import SettingError
from vlamb_nb.notebook import collect_results, repo_root

# execution order: the five papers, then the cross-paper saliency notebook
NOTEBOOKS = ("vague", "mucar", "vflute", "vflute_qlora", "refadv", "racquet", "saliency")


@dataclass
class NotebookRun:
    name: str
    path: Path
    output: Path
    parameters: dict[str, Any]
    ok: bool = False
    seconds: float = 0.0
    error: str | None = None
    failed_cell: int | None = None
    failed_source: str | None = None
    results: dict[str, Any] = field(default_factory=dict)


def notebooks_dir() -> Path:
    return repo_root() / "notebooks"


def available_notebooks(directory: Path | None = None) -> list[str]:
    d = directory or notebooks_dir()
    return [n for n in NOTEBOOKS if (d / f"{n}.ipynb").is_file()]


def declared_parameters(path: Path) -> dict[str, Any]:
    import papermill

    return dict(papermill.inspect_notebook(str(path)))


def split_parameters(params: dict[str, Any], names: list[str]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Separate global ``key`` parameters from per-notebook ``paper.key`` ones."""
    glob: dict[str, Any] = {}
    per: dict[str, dict[str, Any]] = {n: {} for n in names}
    for k, v in params.items():
        if "." in k:
            nb, key = k.split(".", 1)
            if nb not in per:
                raise SettingError(f"parameter {k!r} names notebook {nb!r}, which is not being run ({', '.join(names)})")
            per[nb][key] = v
        else:
            glob[k] = v
    return glob, per


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def execute(run: NotebookRun, *, cwd: Path, timeout: int | None = None) -> NotebookRun:
    """Execute one notebook; never raises for a notebook failure (it is recorded on ``run``)."""
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    t0 = time.perf_counter()
    try:
        papermill.execute_notebook(str(run.path), str(run.output), parameters=run.parameters, kernel_name="python3",
                                   cwd=str(cwd), progress_bar=False, log_output=False,
                                   execution_timeout=timeout)
        run.ok = True
    except PapermillExecutionError as e:
        run.error = f"{e.ename}: {e.evalue}"
        run.failed_cell = e.exec_count
        run.failed_source = e.source
    except Exception as e:  # noqa: BLE001 - kernel died, bad notebook file, ...: report, keep going
        run.error = f"{type(e).__name__}: {e}"
    run.seconds = time.perf_counter() - t0
    if run.output.is_file():
        nb = nbformat.read(run.output, as_version=4)
        run.results = collect_results(nb)
        nb.metadata["vlamb"] = {"results": run.results, "ok": run.ok, "error": run.error,
                                "parameters": run.parameters, "seconds": round(run.seconds, 2)}
        nbformat.write(nb, run.output)
    return run


def reproduce(papers: list[str] | None = None, *, params: dict[str, Any] | None = None, run_id: str | None = None,
              out_dir: str | os.PathLike = "runs", figures: str | os.PathLike | None = None,
              timeout: int | None = 1800, quiet: bool = False, notebook_dir: str | os.PathLike | None = None) -> int:
    """Run notebooks and write the report; return the number of failed notebooks."""
    nb_dir = Path(notebook_dir) if notebook_dir is not None else notebooks_dir()
    names = list(papers) if papers else available_notebooks(nb_dir)
    unknown = [n for n in names if n not in NOTEBOOKS]
    if unknown:
        raise SettingError(f"unknown notebook(s) {unknown}; choose from {', '.join(NOTEBOOKS)}")
    missing = [n for n in names if not (nb_dir / f"{n}.ipynb").is_file()]
    if missing:
        raise SettingError(f"notebook(s) not found: {', '.join(f'notebooks/{n}.ipynb' for n in missing)}")
    if not names:
        raise SettingError("no notebooks to run")
    glob, per = split_parameters(dict(params or {}), names)
    declared = {n: declared_parameters(nb_dir / f"{n}.ipynb") for n in names}
    unused = [k for k in glob if not any(k in d for d in declared.values())]
    if unused:
        raise SettingError(f"parameter(s) {unused} are declared by none of the notebooks {names}")

    run_dir = Path(out_dir) / (run_id or new_run_id())
    run_dir.mkdir(parents=True, exist_ok=True)
    if figures is not None:
        os.environ["VLAMB_FIGURES_DIR"] = str(Path(figures).resolve())
    # kernels inherit this: a fixed string-hash seed makes set/dict-order dependent output (e.g. the
    # font-subset names matplotlib writes into PDFs) identical from run to run
    os.environ.setdefault("PYTHONHASHSEED", "0")
    runs: list[NotebookRun] = []
    for n in names:
        path = nb_dir / f"{n}.ipynb"
        nb_params = {k: v for k, v in glob.items() if k in declared[n]}
        bad = [k for k in per[n] if k not in declared[n]]
        run = NotebookRun(n, path, run_dir / f"{n}.ipynb", {**nb_params, **per[n]})
        if bad:
            run.error = f"SettingError: parameter(s) {bad} not declared by notebooks/{n}.ipynb (declared: {sorted(declared[n])})"
        else:
            if not quiet:
                print(f"[{n}] running notebooks/{n}.ipynb ...", flush=True)
            execute(run, cwd=nb_dir, timeout=timeout)
        if not quiet:
            status = f"ok in {run.seconds:.1f}s" if run.ok else f"FAILED: {run.error}"
            print(f"[{n}] {status}", flush=True)
        runs.append(run)
    report = write_report(runs, run_dir)
    failed = sum(not r.ok for r in runs)
    if not quiet:
        print(f"report: {report}\n{len(runs) - failed} notebook(s) ok, {failed} failed")
    return failed


# notebook metadata is stored with sorted keys; tables read better in this order
PREFERRED_COLUMNS = ("table", "row", "column", "paper", "published", "paper_value", "ours", "recomputed", "diff",
                     "match", "ok", "ci_low", "ci_high", "paper_in_ci", "kind", "flag", "note")


# -- the report ------------------------------------------------------------------------------------
def _md_table(rows: list[dict[str, Any]], limit: int = 60) -> str:
    if not rows:
        return "_(none)_\n"
    keys = list(dict.fromkeys(k for r in rows for k in r))
    cols = [k for k in PREFERRED_COLUMNS if k in keys] + [k for k in keys if k not in PREFERRED_COLUMNS]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows[:limit]:
        out.append("| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |")
    if len(rows) > limit:
        out.append(f"\n_… {len(rows) - limit} more rows in the notebook metadata._")
    return "\n".join(out) + "\n"


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (dict, list)):
        v = json.dumps(v, ensure_ascii=False)
    return str(v).replace("|", "\\|").replace("\n", " ")


def _render_value(key: str, value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
        return f"**{key}**\n\n" + _md_table(value)
    if isinstance(value, list):
        return f"**{key}**\n\n" + "".join(f"- {_fmt(v)}\n" for v in value) if value else f"**{key}**: none\n"
    if isinstance(value, dict):
        inner = [f"**{key}**\n"]
        for k, v in value.items():
            if isinstance(v, list) and v and all(isinstance(r, dict) for r in v):
                inner.append(f"\n_{k}_\n\n" + _md_table(v))
            else:
                inner.append(f"- {k}: {_fmt(v)}")
        return "\n".join(inner) + "\n"
    return f"**{key}**: {_fmt(value)}\n"


def _ordered_keys(results: dict[str, Any]) -> list[str]:
    """Comparisons first, then audit findings, other results, and deviations last."""
    def rank(k: str) -> int:
        lk = k.lower()
        if "compar" in lk or "paper_vs" in lk:
            return 0
        if "audit" in lk or "finding" in lk or "check" in lk:
            return 1
        if "deviation" in lk:
            return 3
        return 2
    return sorted(results, key=lambda k: (rank(k), list(results).index(k)))


def write_report(runs: list[NotebookRun], run_dir: Path) -> Path:
    lines = ["# Reproduction report", "",
             f"Run `{run_dir.name}`: {sum(r.ok for r in runs)} of {len(runs)} notebook(s) succeeded.", "",
             "| notebook | status | seconds | parameters |", "|---|---|---|---|"]
    for r in runs:
        status = "ok" if r.ok else "**failed**"
        lines.append(f"| {r.name} | {status} | {r.seconds:.1f} | {_fmt(r.parameters)} |")
    lines.append("")
    for r in runs:
        lines += [f"## {r.name}", "", f"Executed notebook: `{r.output.name}`", ""]
        if not r.ok:
            where = f" in cell In [{r.failed_cell}]" if r.failed_cell is not None else ""
            lines += [f"**Failed{where}:** `{r.error}`", ""]
            if r.failed_source:
                lines += ["```python", r.failed_source.strip(), "```", ""]
        if not r.results:
            lines += ["_No recorded results._", ""]
        for k in _ordered_keys(r.results):
            lines.append(_render_value(k, r.results[k]))
    path = run_dir / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    (run_dir / "results.json").write_text(json.dumps(
        {r.name: {"ok": r.ok, "error": r.error, "seconds": round(r.seconds, 2), "parameters": r.parameters,
                  "results": r.results} for r in runs}, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    return path
