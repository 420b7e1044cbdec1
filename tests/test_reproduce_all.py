"""The README's main job on this checkout: every notebook runs offline with defaults, and reproduces figures/."""

import json
import subprocess

import pytest

from vlamb_nb.reproduce import available_notebooks, reproduce


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, repo_root):
    names = available_notebooks()
    if not names:
        pytest.skip("no notebooks yet")
    tmp = tmp_path_factory.mktemp("reproduce")
    failed = reproduce(None, run_id="all", out_dir=tmp / "runs", figures=tmp / "figures", quiet=True, timeout=600)
    return names, failed, tmp


@pytest.mark.slow
def test_every_notebook_succeeds_and_records_results(full_run):
    names, failed, tmp = full_run
    summary = json.loads((tmp / "runs" / "all" / "results.json").read_text())
    errors = {n: s["error"] for n, s in summary.items() if not s["ok"]}
    assert failed == 0, errors
    for n in names:
        assert summary[n]["results"], f"{n} recorded no results"
    report = (tmp / "runs" / "all" / "report.md").read_text()
    for n in names:
        assert f"## {n}" in report


@pytest.mark.slow
def test_every_committed_figure_is_regenerated(full_run, repo_root, shared_data):
    """The committed figures were made with the released data beside the checkout, so compare only there."""
    _, _, tmp = full_run
    tracked = subprocess.run(["git", "ls-files", "figures"], cwd=repo_root, capture_output=True, text=True,
                             check=True).stdout.split()
    figures = [f for f in tracked if f.endswith((".png", ".pdf"))]
    missing = [f for f in figures if not (tmp / f).is_file()]
    assert not missing, f"committed figures that reproduce did not write: {missing}"
