"""Shared fixtures: the released data beside the checkout, and an offline environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# nothing in the test suite may reach a model or dataset hub
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("VLAMB_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data``: the real released files (skips with the reason where absent)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"released data not found at {SHARED_DATA} (set VLAMB_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO
