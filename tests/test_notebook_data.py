"""What a paper's notebook works on is one type for every paper (``NotebookData``): the items its statistics
and audit use, those its models run on with what they are, and the pipeline's data identity."""

from __future__ import annotations

import pytest

from vlamb_nb import get_benchmark
from vlamb_nb.benchmarks.base import NotebookData
from vlamb_nb.datahome import identity_of

KEYS = {"release", "release_kind", "pipeline", "pipeline_kind", "data"}


def _offline(paper: str, tmp_path):
    from importlib import import_module

    report = import_module(f"vlamb_nb.benchmarks.{paper}.report")
    if paper in ("vague", "mucar", "racquet"):
        return report.notebook_data(None, sample_dir=tmp_path / "s", n=4, seed=0, profile="offline")
    return report.notebook_data(None, n=4, seed=0, profile="offline")


@pytest.mark.parametrize("paper", ["vague", "mucar", "vflute", "refadv", "racquet"])
def test_every_papers_notebook_data_is_the_one_type(paper, tmp_path, monkeypatch):
    monkeypatch.setenv("VLAMB_RUN_DIR", str(tmp_path / "runs"))
    data = _offline(paper, tmp_path)
    assert type(data) is NotebookData and KEYS <= set(data)
    assert data["pipeline"] is data.pipeline and len(data.pipeline) and len(data.release)
    assert data["data"] == data.data == identity_of(data.pipeline) and data.data is not None
    assert isinstance(data.release_kind, str) and isinstance(data.pipeline_kind, str)
    assert data.get("no such key") is None and "pipeline" in data


def test_a_paper_of_its_own_gets_the_base_step(tmp_path, monkeypatch):
    """The base's default: statistics and models on the same items, as :meth:`notebook_items` gives them."""
    monkeypatch.setenv("VLAMB_RUN_DIR", str(tmp_path / "runs"))
    data = get_benchmark("vague").notebook_data(None, profile="offline", n=3, seed=2)
    assert type(data) is NotebookData and data.release is data.pipeline and len(data.pipeline) == 3
    assert data.data.kind == "sample" and "sample" in data.pipeline_kind
