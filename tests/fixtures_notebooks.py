"""Notebook executions shared by one pytest run: each distinct (notebook, parameters, tiny seed) runs once.

A notebook takes minutes to execute, and several tests read the same execution. Notebooks run through
:func:`vlamb_nb.reproduce.reproduce`, as ``make reproduce`` runs them, so a notebook with its defaults is the run
the reproduction tests check: when the pytest run holds one of those (``full_run``) at that seed, the notebook is
served from it. An execution's folders are read-only by convention: a test that wrote there would change what
the next test reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# a default-parameter cell that runs this long is hung, not slow: fail it instead of waiting
CELL_TIMEOUT = 600
# fixtures that execute notebooks: a test that uses one is marked slow (conftest.py)
NOTEBOOK_FIXTURES = frozenset({"notebook_runs", "full_run"})


@dataclass(frozen=True)
class ExecutedNotebook:
    """One execution of ``notebooks/<name>.ipynb``: what it recorded and where it wrote."""

    name: str
    path: Path  # the executed notebook
    figures: Path  # its figures (``<figures>/<name>``; pipeline demos under ``demo/``)
    work: Path  # its working files: stores, samples, labels (its ``store_dir``)
    ok: bool
    error: str | None
    results: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reproduction:
    """One ``reproduce`` of every notebook: ``root/runs/all/`` (report, results.json, notebooks) and ``root/figures``."""

    names: list[str]
    failed: int
    root: Path

    @property
    def run(self) -> Path:
        return self.root / "runs" / "all"

    def notebook(self, name: str) -> ExecutedNotebook:
        return _executed(name, self.run, self.root / "figures")


def _executed(name: str, run: Path, figures: Path) -> ExecutedNotebook:
    from vlamb_nb.notebook import collect_results

    summary = json.loads((run / "results.json").read_text(encoding="utf-8"))[name]
    path = run / f"{name}.ipynb"
    results = collect_results(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else {}
    return ExecutedNotebook(name, path, figures / name, run / name, bool(summary["ok"]), summary["error"], results)


def _key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, default=str)


class NotebookRuns:
    """The pytest run's executions, keyed by (notebook, tiny seed, parameters)."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory, items: list[pytest.Item]) -> None:
        self._tmp = tmp_path_factory
        self._items = items
        self._runs: dict[tuple[str, int, str], ExecutedNotebook] = {}
        self._reproductions: dict[int, Reproduction] = {}

    def reproduction(self, tiny_seed: int) -> Reproduction:
        """Every notebook with its defaults under the offline profile, as ``make reproduce`` runs them."""
        if tiny_seed not in self._reproductions:
            from vlamb_nb.reproduce import available_notebooks, reproduce

            root = self._tmp.mktemp(f"reproduce-seed{tiny_seed}")
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("MPLBACKEND", "Agg")
                failed = reproduce(None, run_id="all", out_dir=root / "runs", figures=root / "figures", quiet=True,
                                   timeout=CELL_TIMEOUT, tiny_seed=tiny_seed)
            self._reproductions[tiny_seed] = Reproduction(available_notebooks(), failed, root)
        return self._reproductions[tiny_seed]

    def get(self, name: str, *, tiny_seed: int = 0, **params: Any) -> ExecutedNotebook:
        """``notebooks/<name>.ipynb`` executed with ``params`` (fails the test if the notebook failed)."""
        key = (name, tiny_seed, _key(params))
        if key not in self._runs:
            if not params and self._reproduction_wanted(tiny_seed):
                self._runs[key] = self.reproduction(tiny_seed).notebook(name)
            else:
                self._runs[key] = self._execute(name, tiny_seed, params)
        run = self._runs[key]
        if not run.ok:
            pytest.fail(f"notebooks/{name}.ipynb failed with {params or 'its defaults'}: {run.error}")
        return run

    def _reproduction_wanted(self, tiny_seed: int) -> bool:
        """A test of the whole reproduction at this seed is in the pytest run (so it executes every notebook anyway)."""
        return any("full_run" in item.fixturenames and getattr(item, "callspec", None) is not None
                   and item.callspec.params.get("full_run") == tiny_seed for item in self._items)

    def _execute(self, name: str, tiny_seed: int, params: dict[str, Any]) -> ExecutedNotebook:
        from vlamb_nb.reproduce import reproduce

        root = self._tmp.mktemp(f"nb-{name}")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MPLBACKEND", "Agg")
            reproduce([name], params={f"{name}.{k}": v for k, v in params.items()}, run_id=name,
                      out_dir=root / "runs", figures=root / "figures", quiet=True, timeout=CELL_TIMEOUT,
                      tiny_seed=tiny_seed)
        return _executed(name, root / "runs" / name, root / "figures")


#: the pytest run's test items (the collected list itself, so what deselection leaves is what it holds)
COLLECTED = pytest.StashKey[list]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[COLLECTED] = items


@pytest.fixture(scope="package")
def notebook_runs(request, tmp_path_factory) -> NotebookRuns:
    """``notebook_runs.get(name, **parameters)``: that notebook executed once per pytest run (see the module)."""
    pytest.importorskip("papermill")
    return NotebookRuns(tmp_path_factory, request.config.stash[COLLECTED])


@pytest.fixture(scope="package", params=[0, 1], ids=["tiny-seed-0", "tiny-seed-1"])
def full_run(request, notebook_runs) -> Reproduction:
    """The whole offline reproduction, on two different tiny random checkpoints (``--tiny-seed``)."""
    from vlamb_nb.reproduce import available_notebooks

    if not available_notebooks():
        pytest.skip("no notebooks yet")
    return notebook_runs.reproduction(request.param)


def deviation_lines(results: dict[str, Any]) -> list[str]:
    """A notebook's recorded deviations (one format in every notebook: Deviation fields) as printed lines."""
    from vlamb_nb.meta import deviation_lines as lines

    return lines(results["deviations"])
