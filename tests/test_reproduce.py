"""The reproduction driver on small stand-in notebooks: parameters, failures, recorded results, report."""

import json

import nbformat
import pytest

from vlamb_nb.errors import SettingError
from vlamb_nb.reproduce import reproduce


def _notebook(path, params_src: str, body: str) -> None:
    nb = nbformat.v4.new_notebook()
    p = nbformat.v4.new_code_cell(params_src)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [p, nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


BODY = """
from vlamb_nb.notebook import record, figures_dir
from vlamb_nb.plots import new_figure, save_figure
if n < 0:
    raise ValueError(f"n must be >= 0, got {n}")
record("comparison", [{"table": "Table 1", "row": "m", "column": "acc", "paper": 50.0, "ours": 50.0 + n}])
record("deviations", ["quantization: paper fp16; here 4-bit"])
fig, ax = new_figure()
ax.bar([0, 1], [1, n])
save_figure(fig, NAME, "bars")
"""


@pytest.fixture
def nb_dir(tmp_path):
    d = tmp_path / "notebooks"
    d.mkdir()
    for name in ("vague", "mucar"):
        _notebook(d / f"{name}.ipynb", "n = 1\nlabel = 'x'", f"NAME = {name!r}\n" + BODY)
    return d


@pytest.mark.slow
def test_reproduce_records_results_and_isolates_failures(nb_dir, tmp_path):
    figs = tmp_path / "figures"
    failed = reproduce(None, params={"vague.n": -1, "n": 3}, run_id="r1", out_dir=tmp_path / "runs",
                       figures=figs, notebook_dir=nb_dir, quiet=True)
    assert failed == 1
    run = tmp_path / "runs" / "r1"
    report = (run / "report.md").read_text()
    assert "**Failed in cell In [3]:** `ValueError: n must be >= 0, got -1`" in report
    assert "| mucar | ok |" in report and "| vague | **failed** |" in report
    summary = json.loads((run / "results.json").read_text())
    assert summary["mucar"]["ok"] and summary["mucar"]["parameters"] == {"n": 3}
    assert summary["mucar"]["results"]["comparison"][0]["ours"] == 53.0
    nb = nbformat.read(run / "mucar.ipynb", as_version=4)
    assert nb.metadata["vlamb"]["results"]["deviations"] == ["quantization: paper fp16; here 4-bit"]
    assert sorted(p.name for p in (figs / "mucar").iterdir()) == ["bars.pdf", "bars.png"]
    assert not (figs / "vague").exists()
    assert "| table | row | column | paper | ours |" in report


def test_parameter_errors(nb_dir, tmp_path):
    with pytest.raises(SettingError, match="declared by none"):
        reproduce(None, params={"nope": 1}, out_dir=tmp_path, notebook_dir=nb_dir, quiet=True)
    with pytest.raises(SettingError, match="unknown notebook"):
        reproduce(["nope"], out_dir=tmp_path, notebook_dir=nb_dir, quiet=True)
    with pytest.raises(SettingError, match="not found"):
        reproduce(["racquet"], out_dir=tmp_path, notebook_dir=nb_dir, quiet=True)


@pytest.mark.slow
def test_undeclared_per_notebook_parameter_fails_only_that_notebook(nb_dir, tmp_path):
    failed = reproduce(["mucar", "vague"], params={"mucar.bogus": 1}, run_id="r2", out_dir=tmp_path,
                       figures=tmp_path / "f", notebook_dir=nb_dir, quiet=True)
    assert failed == 1
    summary = json.loads((tmp_path / "r2" / "results.json").read_text())
    assert "not declared" in summary["mucar"]["error"] and summary["vague"]["ok"]
