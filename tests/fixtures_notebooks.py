"""Notebook executions shared by one pytest run: each distinct (notebook, parameters, tiny seed) runs once.

A notebook takes minutes to execute, and several tests read the same execution. Notebooks run through
:func:`vlamb_nb.reproduce.reproduce`, as ``make reproduce`` runs them, so a notebook with its defaults is the run
the reproduction tests check: when the pytest run holds one of those (``full_run``) at that seed, the notebook is
served from it. An execution's folders are read-only by convention: a test that wrote there would change what
the next test reads.

With ``$VLAMB_TEST_REPRODUCTIONS`` set (``make test`` sets it), a whole reproduction is kept in that folder, named
by its tiny seed and a digest of what makes it (the package, the notebooks, the data beside the checkout), and the
next pytest run of the same ``make test`` reads it instead of executing every notebook again: the slow tier makes
it, the browser tests read its pages.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
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


#: the folder whole reproductions are kept in between the pytest runs of one ``make test``
SHARED_ENV = "VLAMB_TEST_REPRODUCTIONS"
#: written last into a kept reproduction: without it the folder is a run that did not finish
DONE = "reproduction.json"
ROOT = Path(__file__).resolve().parent.parent


def inputs_digest() -> str:
    """What a reproduction is made from: the package's and notebooks' files and the data beside the checkout."""
    from vlamb_nb.paths import shared_data_dir

    h = hashlib.sha256()
    files = [*ROOT.glob("vlamb_nb/**/*.py"), *ROOT.glob("notebooks/*.ipynb"), ROOT / "pyproject.toml"]
    for f in sorted(p for p in files if p.is_file()):
        h.update(f.relative_to(ROOT).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(str(shared_data_dir()).encode())
    return h.hexdigest()[:16]


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

            def run(root: Path) -> int:
                with pytest.MonkeyPatch.context() as mp:
                    mp.setenv("MPLBACKEND", "Agg")
                    return reproduce(None, run_id="all", out_dir=root / "runs", figures=root / "figures", quiet=True,
                                     timeout=CELL_TIMEOUT, tiny_seed=tiny_seed)

            shared = os.environ.get(SHARED_ENV)
            if shared:
                root, failed = kept_reproduction(Path(shared), tiny_seed, run)
            else:
                root = self._tmp.mktemp(f"reproduce-seed{tiny_seed}")
                failed = run(root)
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
        """A test of the whole reproduction (tiny seed 0) is in the pytest run, so it executes every notebook
        anyway."""
        return tiny_seed == 0 and any("full_run" in item.fixturenames for item in self._items)

    def _execute(self, name: str, tiny_seed: int, params: dict[str, Any]) -> ExecutedNotebook:
        from vlamb_nb.reproduce import reproduce

        root = self._tmp.mktemp(f"nb-{name}")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MPLBACKEND", "Agg")
            reproduce([name], params={f"{name}.{k}": v for k, v in params.items()}, run_id=name,
                      out_dir=root / "runs", figures=root / "figures", quiet=True, timeout=CELL_TIMEOUT,
                      tiny_seed=tiny_seed)
        return _executed(name, root / "runs" / name, root / "figures")


def kept_reproduction(folder: Path, tiny_seed: int, run: Any) -> tuple[Path, int]:
    """The reproduction at ``tiny_seed`` kept under ``folder`` (made by ``run(root)`` when none finished there
    from today's inputs): its root and how many notebooks failed. A lock keeps two pytest runs from making it
    at once; a folder of other inputs or of an unfinished run is removed, never read."""
    folder.mkdir(parents=True, exist_ok=True)
    root = folder / f"seed{tiny_seed}-{inputs_digest()}"
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = root / DONE
        if done.is_file():
            kept = json.loads(done.read_text(encoding="utf-8"))
            changed = sorted(set(kept["files"].items()) ^ set(_manifest(root).items()))
            if changed:  # a test wrote into an execution the others read: that test is wrong, not this one
                pytest.fail(f"the kept reproduction {root} changed after it was made (by a test that wrote into it?): "
                            + ", ".join(sorted({f for f, _ in changed})[:10]))
            return root, int(kept["failed"])
        for old in folder.glob(f"seed{tiny_seed}-*"):
            shutil.rmtree(old)
        root.mkdir()
        failed = run(root)
        done.write_text(json.dumps({"failed": failed, "tiny_seed": tiny_seed, "files": _manifest(root)}),
                        encoding="utf-8")
        return root, failed


def _manifest(root: Path) -> dict[str, int]:
    """Each file of a kept reproduction and its size (lock files, made by any reader of a store, left out)."""
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in root.rglob("*")
            if p.is_file() and not p.name.endswith(".lock") and p.name != DONE}


#: the pytest run's test items (the collected list itself, so what deselection leaves is what it holds)
COLLECTED = pytest.StashKey[list]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[COLLECTED] = items


@pytest.fixture(scope="package")
def notebook_runs(request, tmp_path_factory) -> NotebookRuns:
    """``notebook_runs.get(name, **parameters)``: that notebook executed once per pytest run (see the module)."""
    pytest.importorskip("papermill")
    return NotebookRuns(tmp_path_factory, request.config.stash[COLLECTED])


@pytest.fixture(scope="package")
def full_run(notebook_runs) -> Reproduction:
    """The whole offline reproduction with the data beside the checkout (tiny seed 0). Every notebook on another
    tiny checkpoint and other samples, with nothing beside, is the README's ``vlamb-nb reproduce --tiny-seed 1 -p
    seed=1``, which ``make test`` runs in a fresh clone (``scripts/fresh_clone.py``)."""
    from vlamb_nb.reproduce import available_notebooks

    if not available_notebooks():
        pytest.skip("no notebooks yet")
    return notebook_runs.reproduction(0)


def deviation_lines(results: dict[str, Any]) -> list[str]:
    """A notebook's recorded deviations (one format in every notebook: Deviation fields) as printed lines."""
    from vlamb_nb.meta import deviation_lines as lines

    return lines(results["deviations"])
