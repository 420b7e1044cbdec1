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
    return report.notebook_data(None, profile="offline", n=4, seed=0, sample_dir=tmp_path / "s")


PAPERS = ["vague", "mucar", "vflute", "refadv", "racquet"]


@pytest.mark.parametrize("paper", PAPERS)
def test_every_papers_notebook_data_has_the_base_steps_signature(paper):
    """One call for every paper's notebook: the same parameters, of the same kinds, in the same order as the
    base's step (only the sample size's default is the paper's own)."""
    import inspect
    from importlib import import_module

    from vlamb_nb.benchmarks.base import Benchmark

    def shape(fn):
        return [(p.name, p.kind, p.default if p.name != "n" else "n")
                for p in inspect.signature(fn).parameters.values() if p.name != "self"]

    report = import_module(f"vlamb_nb.benchmarks.{paper}.report")
    assert shape(report.notebook_data) == shape(Benchmark.notebook_data)


@pytest.mark.parametrize("paper", PAPERS)
def test_every_papers_notebook_data_is_the_one_type(paper, tmp_path, monkeypatch):
    monkeypatch.setenv("VLAMB_RUN_DIR", str(tmp_path / "runs"))
    data = _offline(paper, tmp_path)
    assert type(data) is NotebookData and KEYS <= set(data)
    assert data["pipeline"] is data.pipeline and len(data.pipeline) and len(data.release)
    assert data["data"] == data.data == identity_of(data.pipeline) and data.data is not None
    assert isinstance(data.release_kind, str) and isinstance(data.pipeline_kind, str)
    assert data.get("no such key") is None and "pipeline" in data
    if data.pipeline_kind.startswith("generated") or data.data.kind == "sample":  # the sample where it was asked
        assert (tmp_path / "s").is_dir() and any((tmp_path / "s").iterdir())


def test_a_paper_of_its_own_gets_the_base_step(tmp_path, monkeypatch):
    """The base's default: statistics and models on the same items, as :meth:`notebook_items` gives them."""
    monkeypatch.setenv("VLAMB_RUN_DIR", str(tmp_path / "runs"))
    data = get_benchmark("vague").notebook_data(None, profile="offline", n=3, seed=2)
    assert type(data) is NotebookData and data.release is data.pipeline and len(data.pipeline) == 3
    assert data.data.kind == "sample" and "sample" in data.pipeline_kind
