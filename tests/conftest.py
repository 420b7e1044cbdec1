"""Shared fixtures: the released data beside the checkout, and an offline environment.

The faulty endpoints live in ``fixtures_http``; test modules import helpers from fixtures modules, never from
one another (``test_layout``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# nothing in the test suite may reach a model or dataset hub
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

pytest_plugins = ["fixtures_http"]

REPO = Path(__file__).resolve().parent.parent
# a default-parameter cell that runs this long is hung, not slow: fail it instead of waiting
CELL_TIMEOUT = 600
SHARED_DATA = Path(os.environ.get("VLAMB_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="package")
def shared_data() -> Path:
    """``../shared/data``: the real released files (skips with the reason where absent)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"released data not found at {SHARED_DATA} (set VLAMB_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _close_figures():
    """Each test's figures closed after it: pyplot keeps every open figure in memory."""
    yield
    import sys

    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


@pytest.fixture(scope="package")
def repo_root() -> Path:
    return REPO


@pytest.fixture
def run_notebook(repo_root, tmp_path, monkeypatch):
    """Execute ``notebooks/<name>.ipynb`` with papermill in ``tmp_path`` and return its recorded results.

    Figures go to ``tmp_path / "figures"`` and working files to ``tmp_path / "runs"``, so the repository is
    untouched.
    """
    papermill = pytest.importorskip("papermill")
    from vlamb_nb.notebook import collect_results

    def run(name: str, **parameters):
        monkeypatch.setenv("VLAMB_FIGURES_DIR", str(tmp_path / "figures"))
        monkeypatch.setenv("VLAMB_RUN_DIR", str(tmp_path / "runs"))
        out = tmp_path / f"{name}.out.ipynb"
        papermill.execute_notebook(str(repo_root / "notebooks" / f"{name}.ipynb"), str(out), kernel_name="python3",
                                   parameters=parameters, cwd=str(tmp_path), progress_bar=False,
                                   execution_timeout=CELL_TIMEOUT)
        import json

        return collect_results(json.loads(out.read_text(encoding="utf-8")))

    return run
