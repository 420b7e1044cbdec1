"""Shared fixtures: the released data beside the checkout, and an offline environment.

The faulty endpoints live in ``fixtures_http``, the notebook executions shared by a test run in ``fixtures_notebooks``;
test modules import helpers from those, never from one another (``test_layout``).
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

pytest_plugins = ["fixtures_http", "fixtures_notebooks"]

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("VLAMB_SHARED_DATA", REPO.parent / "shared" / "data"))


# a test that executes notebooks waits, in its setup, for the test run's first execution of all of them
NOTEBOOK_TIMEOUT = 3600


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Every test that executes notebooks is slow (``-m "not slow"`` leaves it out) and has a hang bound long
    enough for the shared executions it may be the first to wait for."""
    from fixtures_notebooks import NOTEBOOK_FIXTURES

    for item in items:
        if NOTEBOOK_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.slow)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(NOTEBOOK_TIMEOUT))


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
def inline_sweep(monkeypatch):
    """A sweep whose local executor runs each job in this process (so a monkeypatched ``load_model`` reaches it);
    returns the sweep module."""
    pytest.importorskip("submitit")
    import vlamb_nb.sweep as sweep_mod

    class Handle:
        def __init__(self, fn, job):
            self.fn, self.job = fn, job

        def result(self):
            return self.fn(self.job)

    class Executor:
        def submit(self, fn, job):
            return Handle(fn, job)

    monkeypatch.setattr(sweep_mod, "_executor", lambda cfg: Executor())
    return sweep_mod
