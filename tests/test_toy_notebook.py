"""A paper installed as a package of its own, registered by its entry point, its notebook beside its code: the
registry finds it without importing it, ``reproduce`` runs its notebook, and its section, its card row and its
store's scores reach ``report.md`` and ``report.html`` — no registry edit, no monkeypatching of the package."""

from __future__ import annotations

import json
import os

import fixtures_toy
import hubstub
import pytest
from fixtures_toy import RELEASED, REVISION, N, cli


@pytest.fixture
def site(tmp_path, monkeypatch):
    """The toy paper installed under ``site/`` (on ``sys.path`` here and ``PYTHONPATH`` for a kernel), with a data
    home of its own."""
    site = tmp_path / "site"
    fixtures_toy.install(site)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setenv("VLAMB_DATA", str(tmp_path / "data-home"))
    yield site
    import sys

    for name in [m for m in sys.modules if m == "toy_paper" or m.startswith("toy_paper.")]:
        sys.modules.pop(name)


def test_an_installed_paper_registers_by_its_entry_point_with_the_notebook_beside_its_code(site):
    import sys

    from vlamb_nb.benchmarks import get_benchmark, list_benchmarks, notebook_file, notebooks, paper
    from vlamb_nb.reproduce import available_notebooks, notebooks_dir

    assert "toy_paper" not in sys.modules
    assert list_benchmarks()[-1] == "toy" and paper("toy").module == "toy_paper"
    assert "toy_paper" not in sys.modules  # listed without importing it
    assert "toy" in notebooks() and "toy" in available_notebooks()
    assert notebook_file("toy", notebooks_dir()) == site / "toy_paper" / "toy.ipynb"
    assert notebook_file("vague", notebooks_dir()) == notebooks_dir() / "vague.ipynb"
    assert get_benchmark("toy").folder() == site / "toy_paper"


def test_an_entry_point_whose_package_is_missing_is_one_line_for_that_paper_only(tmp_path, monkeypatch):
    from vlamb_nb.benchmarks import BrokenPaper, get_benchmark, list_benchmarks

    fixtures_toy.entry_point(tmp_path, "gone", "gone_paper")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "gone" in list_benchmarks()
    with pytest.raises(BrokenPaper, match="gone: cannot be loaded: its package gone_paper is not installed"):
        get_benchmark("gone")
    assert get_benchmark("vague").name == "vague"


def test_the_base_gives_a_notebook_its_items_tagged_sample_given_or_fetched(site, tmp_path):
    from vlamb_nb.benchmarks import get_benchmark
    from vlamb_nb.errors import VlambError

    bench = get_benchmark("toy")
    os.environ["VLAMB_RUN_DIR"] = str(tmp_path / "run")
    try:
        sample = bench.notebook_items(profile="offline", n=5, seed=3)
    finally:
        del os.environ["VLAMB_RUN_DIR"]
    d = sample.attrs["data"]
    assert len(sample) == 5 and sample["id"].iloc[0] == "s3-0"
    assert (d["kind"], d["n_items"], d["n_loaded"]) == ("sample", 5, 5)
    given = tmp_path / "mine.jsonl"
    given.write_bytes(RELEASED)
    items = bench.notebook_items(given, profile="paper")
    assert (items.attrs["data"]["kind"], len(items)) == ("source", N)
    with pytest.raises(VlambError, match="vlamb-nb data fetch toy"):
        bench.notebook_items(profile="paper")  # nothing fetched: one line naming the command


@pytest.mark.slow
def test_the_toy_paper_goes_from_data_fetch_through_its_notebook_to_both_pages(site, tmp_path):
    from vlamb_nb.notebook.config import OFFLINE_MODEL
    from vlamb_nb.record import RunRecord
    from vlamb_nb.reproduce import reproduce

    with hubstub.StaticServer() as host, pytest.MonkeyPatch.context() as mp:
        host.add(f"/raw.githubusercontent.com/acme/toy/{REVISION}/items.jsonl", RELEASED)
        mp.setenv("VLAMB_MIRRORS", f"*={host.endpoint}/")
        rc, out, err = cli("data", "fetch", "toy", "-q")
    assert rc == 0, err
    failed = reproduce(["toy"], params={"profile": "paper", "model": OFFLINE_MODEL, "limit": 6}, run_id="toy-run",
                       out_dir=tmp_path / "runs", figures=tmp_path / "figures", quiet=True)
    run = tmp_path / "runs" / "toy-run"
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert failed == 0, results["toy"].get("error")
    head = results["toy"]["results"]["headline"]
    assert [h["metric"] for h in head] == ["accuracy"]
    assert (head[0]["data"]["kind"], head[0]["data"]["revision"], head[0]["data"]["n_run"]) == ("release", REVISION, 6)
    [record] = run.glob("toy/**/*.record.json")
    rec = RunRecord.read(record)
    assert (rec.benchmark, rec.data.revision, rec.coverage.answered) == ("toy", REVISION, 6)
    value = next(m.value for m in rec.metrics if m.metric == "accuracy")
    md = (run / "report.md").read_text(encoding="utf-8")
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "## toy" in md and 'id="nb-toy"' in page
    assert any(ln.startswith("| toy |") and "accuracy" in ln for ln in md.splitlines())  # its card row
    store_row = next(ln for ln in md.splitlines() if ln.startswith("| toy/") and "| accuracy |" in ln)
    assert f"| {value:.4g} |" in store_row  # its store's score, read from its run record
    assert "toy/" in page and "accuracy" in page
    # the base's paper-vs-ours step: the paper's row beside ours (the record's value), first in its section
    [cmp] = results["toy"]["results"]["paper_vs_ours"]
    assert (cmp["row"], cmp["column"], cmp["paper"], cmp["ours"]) == ("Small model", "accuracy", 50.0, value)
    assert cmp["diff"] == pytest.approx(value - 50.0) and cmp["ci_low"] <= value <= cmp["ci_high"]
    from vlamb_nb.run_view import section_title

    assert md.index(f"**{section_title('paper_vs_ours')}**") < md.index(f"**{section_title('answers')}**")
    assert page.index('id="nb-toy-paper_vs_ours"') < page.index('id="nb-toy-answers"')
    # what the paper declares it cannot rebuild is listed on both pages, though its notebook never recorded it
    assert "Table 2 (human answers)" in md and "Table 2 (human answers)" in page
    assert "answers are not released" in md and "answers are not released" in page


def test_an_installed_paper_that_takes_a_registered_name_is_left_out_with_a_warning(tmp_path, monkeypatch):
    from vlamb_nb.benchmarks import RegistryWarning, get_benchmark, list_benchmarks

    fixtures_toy.entry_point(tmp_path, "ref-adv", "clash_paper")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(RegistryWarning, match="clash_paper is not registered as 'ref-adv': 'ref-adv' is an alias"):
        names = list_benchmarks()
    assert names.count("refadv") == 1 and "ref-adv" not in names
    assert get_benchmark("ref-adv").name == "refadv"  # the package's own paper, as before
