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


@pytest.mark.slow
def test_each_figure_follows_the_table_its_cell_recorded_and_the_page_is_printed_last(nb_dir, tmp_path, capsys):
    """The notebook records a comparison and its deviations, then saves a figure in the same cell: the figure
    belongs to the comparison (never to the folded deviations), in report.md (a relative link), results.json and
    report.html (inlined once); the page's path is the last line printed."""
    assert reproduce(["mucar"], run_id="p", out_dir=tmp_path / "runs", notebook_dir=nb_dir) == 0
    run = tmp_path / "runs" / "p"
    assert capsys.readouterr().out.splitlines()[-1] == str(run / "report.html")
    summary = json.loads((run / "results.json").read_text())
    assert summary["mucar"]["figures"] == [{"table": "comparison", "name": "bars",
                                            "files": ["figures/mucar/bars.png", "figures/mucar/bars.pdf"]}]
    md = (run / "report.md").read_text()
    link = "![mucar/bars](figures/mucar/bars.png) ([PDF](figures/mucar/bars.pdf))"
    from vlamb_nb.run_view import section_title

    first, folded = (f"**{section_title(k)}**" for k in ("comparison", "deviations"))
    assert md.index(first) < md.index(link) < md.index(folded) and md.count(link) == 1
    page = (run / "report.html").read_text()
    assert page.count('data-file="mucar/bars.png"') == 1 and 'src="data:image/png;base64,' in page
    assert page.index('id="nb-mucar-comparison"') < page.index('data-file="mucar/bars.png"') \
        < page.index('id="nb-mucar-deviations"')


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


GENERATE = """
from vlamb_nb import runner
from vlamb_nb.models import Request, ScriptedModel, user_message
from vlamb_nb.notebook import record

def answer(r):
    if r.id in FAIL:
        raise RuntimeError("HTTP 401: bad key")
    return "A"

reqs = [Request(id=f"q{i}", messages=[user_message(f"which {i}?")]) for i in range(4)]
out = runner.run(ScriptedModel(answer), reqs, None, progress=False)
record("accuracy", float((out["text"] == "A").mean()))
"""


@pytest.fixture
def gen_dir(tmp_path):
    d = tmp_path / "gen"
    d.mkdir()
    _notebook(d / "vague.ipynb", "n = 0", "FAIL = {'q0', 'q1', 'q2', 'q3'}\n" + GENERATE)
    _notebook(d / "mucar.ipynb", "n = 0", "FAIL = {'q0'}\n" + GENERATE)
    return d


@pytest.mark.slow
def test_a_notebook_whose_requests_all_failed_is_failed(gen_dir, tmp_path):
    failed = reproduce(None, run_id="g", out_dir=tmp_path / "runs", notebook_dir=gen_dir, quiet=True)
    assert failed == 1
    summary = json.loads((tmp_path / "runs" / "g" / "results.json").read_text())
    assert not summary["vague"]["ok"]
    assert "every model request failed" in summary["vague"]["error"]
    assert "4 of 4 requests failed: 4 × RuntimeError: HTTP 401: bad key" in summary["vague"]["error"]
    assert summary["mucar"]["ok"]  # a partial failure is a warning with counts
    assert summary["mucar"]["warnings"] == [
        "partial failure: 1 of 4 requests failed: 1 × RuntimeError: HTTP 401: bad key; "
        "the affected items count as wrong in its scores"]
    report = (tmp_path / "runs" / "g" / "report.md").read_text()
    assert "| vague | **failed** |" in report and "**Warning:** partial failure" in report


DRAW = """
from vlamb_nb.plots import new_figure, save_figure
fig, ax = new_figure()
ax.bar([0, 1], [1, 2])
save_figure(fig, NAME, "bars")
fig, ax = new_figure()
ax.plot([0, 1], [1, 0])
save_figure(fig, NAME, "noise", demo=True)
"""


@pytest.mark.slow
def test_figures_stay_in_the_run_unless_asked_to_update(tmp_path, monkeypatch):
    d = tmp_path / "nbs"
    d.mkdir()
    _notebook(d / "vague.ipynb", "n = 0", "NAME = 'vague'\n" + DRAW)
    checkout = tmp_path / "checkout"
    (checkout / "figures" / "vague").mkdir(parents=True)
    (checkout / "figures" / "vague" / "stale.png").write_bytes(b"old")
    monkeypatch.setattr("vlamb_nb.reproduce.repo_root", lambda: checkout)
    monkeypatch.delenv("VLAMB_FIGURES_DIR", raising=False)
    assert reproduce(None, run_id="a", out_dir=tmp_path / "runs", notebook_dir=d, quiet=True) == 0
    run_figs = tmp_path / "runs" / "a" / "figures" / "vague"
    assert sorted(p.name for p in run_figs.iterdir()) == ["bars.pdf", "bars.png", "demo"]
    assert sorted(p.name for p in (run_figs / "demo").iterdir()) == ["noise.pdf", "noise.png"]
    assert [p.name for p in (checkout / "figures" / "vague").iterdir()] == ["stale.png"]  # untouched
    assert reproduce(None, run_id="b", out_dir=tmp_path / "runs", notebook_dir=d, quiet=True,
                     update_figures=True) == 0
    # refreshed: this run's figures, no stale file, never a demo
    assert sorted(p.name for p in (checkout / "figures" / "vague").iterdir()) == ["bars.pdf", "bars.png"]


@pytest.mark.slow
def test_a_notebook_run_from_a_copy_leaves_the_installed_checkout_alone(tmp_path, repo_root, monkeypatch):
    """The editable install points the package at the original checkout; figures and working files follow
    the working directory instead."""
    papermill = pytest.importorskip("papermill")
    import hashlib

    def snapshot():
        figs = repo_root / "figures"
        return {str(p.relative_to(figs)): hashlib.sha1(p.read_bytes()).hexdigest()
                for p in sorted(figs.rglob("*")) if p.is_file()}

    before = snapshot()
    copy = tmp_path / "copy" / "notebooks"
    copy.mkdir(parents=True)
    _notebook(copy / "vague.ipynb", "n = 0", "NAME = 'vague'\n" + DRAW +
              "from vlamb_nb.notebook import run_dir\n(run_dir('vague') / 'store.jsonl').write_text('{}')\n")
    for var in ("VLAMB_FIGURES_DIR", "VLAMB_RUN_DIR"):
        monkeypatch.delenv(var, raising=False)
    papermill.execute_notebook(str(copy / "vague.ipynb"), str(tmp_path / "out.ipynb"), kernel_name="python3",
                               cwd=str(copy), progress_bar=False)
    assert snapshot() == before
    assert (copy / "figures" / "vague" / "bars.png").is_file()
    assert (copy / "runs" / "vague" / "store.jsonl").is_file()


def test_offline_profile_is_passed_only_to_notebooks_without_a_model():
    from vlamb_nb.reproduce import declared_parameters, notebooks_dir, with_profile

    declared = declared_parameters(notebooks_dir() / "vague.ipynb")
    assert with_profile({}, declared) == {"profile": "offline"}
    # a real model named for this notebook: its own profile resolution picks "paper", no offline shortcut
    real = with_profile({"model": "Qwen/Qwen2.5-VL-7B-Instruct"}, declared)
    assert "profile" not in real
    assert with_profile({"profile": "paper", "model": "x"}, declared) == {"profile": "paper", "model": "x"}
    assert with_profile({}, {"seed": {}}) == {}  # a notebook without profiles gets none


def test_a_real_model_through_reproduce_resolves_the_paper_profile():
    from vlamb_nb.notebook import setup

    cfg = setup("vague", model="Qwen/Qwen2.5-VL-7B-Instruct")
    assert cfg.profile == "paper"
    assert cfg.value("max_new_tokens", None, paper=None, offline=4) is None  # the paper's per-setting defaults
    assert not [d for d in cfg.deviations if d.what == "max_new_tokens"]


def test_the_report_lists_what_the_released_data_cannot_give(tmp_path):
    from vlamb_nb.reproduce import NotebookRun, write_report

    run = NotebookRun("x", tmp_path / "x.ipynb", tmp_path / "x.out.ipynb", {})
    run.results = {"not_derivable": [{"item": "Table 8", "reason": "the ADE20K pilot is not released"}]}
    assert write_report([run], tmp_path) == tmp_path / "report.html"
    text = (tmp_path / "report.md").read_text()
    top = text.index("## Not derivable from the released data")
    assert top < text.index("## x") and "the ADE20K pilot is not released" in text[top:]


@pytest.mark.slow
def test_notebook_kernels_talk_over_private_unix_sockets_not_tcp(nb_dir, tmp_path, capfd):
    """Batch kernels use IPC in a private temporary folder: nothing listens on a TCP port another user could
    reach, and the kernel has no transport warning to print into the terminal."""
    from vlamb_nb.reproduce import _local_kernel_manager

    km = _local_kernel_manager()()
    assert km.transport == "ipc" and km.ip.startswith(km._socket_dir.name)
    failed = reproduce(["mucar"], params={}, run_id="r-ipc", out_dir=tmp_path / "runs", figures=tmp_path / "figs",
                       notebook_dir=nb_dir, quiet=True)
    assert failed == 0
    err = capfd.readouterr().err
    assert "without encryption" not in err and "Traceback" not in err
    assert not list(tmp_path.rglob("kernel-ipc*")) and not list(nb_dir.glob("kernel*"))


@pytest.mark.slow
def test_notebooks_run_side_by_side_compute_what_they_compute_one_at_a_time(nb_dir, tmp_path):
    """Two notebooks at once (each in a worker process of its own, with its own generation log) record the
    same results, write the same figures and report in the same order as one at a time."""
    import filecmp

    out = {}
    for jobs in (1, 2):
        failed = reproduce(None, params={"n": 2}, run_id=f"j{jobs}", out_dir=tmp_path / "runs",
                           figures=tmp_path / f"figs{jobs}", notebook_dir=nb_dir, quiet=True, jobs=jobs)
        assert failed == 0
        out[jobs] = json.loads((tmp_path / "runs" / f"j{jobs}" / "results.json").read_text())
    assert list(out[2]) == list(out[1]) == ["vague", "mucar"]  # the registry's order, whoever finished first
    for name in ("vague", "mucar"):
        assert out[2][name]["results"] == out[1][name]["results"] and out[2][name]["ok"]
        nb = nbformat.read(tmp_path / "runs" / "j2" / f"{name}.ipynb", as_version=4)
        assert nb.metadata["vlamb"]["cpu_seconds"] > 0  # the kernel's processor time, counted in its worker
        assert filecmp.cmp(tmp_path / "figs1" / name / "bars.png", tmp_path / "figs2" / name / "bars.png",
                           shallow=False)


def test_notebooks_run_one_at_a_time_with_a_model_and_jobs_must_be_positive(nb_dir, tmp_path):
    from vlamb_nb.reproduce import NotebookRun, default_jobs

    offline = [NotebookRun("vague", nb_dir / "vague.ipynb", tmp_path / "v.ipynb", {"profile": "offline"})]
    assert 1 <= default_jobs(offline) <= 4
    real = [*offline, NotebookRun("mucar", nb_dir / "mucar.ipynb", tmp_path / "m.ipynb", {"model": "org/vlm"})]
    assert default_jobs(real) == 1  # a real model wants the accelerator and the memory to itself
    with pytest.raises(SettingError, match="jobs must be a positive"):
        reproduce(None, out_dir=tmp_path, notebook_dir=nb_dir, quiet=True, jobs=0)


def test_a_notebook_whose_worker_fails_is_reported_failed_and_the_others_are_kept(nb_dir, tmp_path):
    """A run that cannot reach its worker process (here a parameter that cannot be sent to another process) is a
    failed notebook with the reason, never a traceback out of reproduce."""
    from vlamb_nb.reproduce import NotebookRun, execute_all

    runs = [NotebookRun(n, nb_dir / f"{n}.ipynb", tmp_path / f"{n}.ipynb", {"n": lambda: 1}) for n in ("vague", "mucar")]
    runs.append(NotebookRun("skipped", nb_dir / "x.ipynb", tmp_path / "x.ipynb", {}, skipped="not run: no weights"))
    out = execute_all(runs, cwd=nb_dir, timeout=60, jobs=2, quiet=True)
    assert [r.name for r in out] == ["vague", "mucar", "skipped"]
    assert all(not r.ok and "worker process failed" in r.error for r in out[:2])
    assert out[2].skipped and out[2].error is None


def test_kernels_start_with_idle_threads_asleep_unless_the_caller_chose(tmp_path, monkeypatch):
    """OMP_WAIT_POLICY=PASSIVE for the kernels (a spinning OpenMP thread holds the core another kernel waits for);
    a policy or hash seed the caller set is kept."""
    from vlamb_nb.reproduce import kernel_environment

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    env = kernel_environment(tmp_path / "run", tmp_path / "figs", tiny_seed=3)
    assert env["OMP_WAIT_POLICY"] == "PASSIVE" and env["PYTHONHASHSEED"] == "0" and env["VLAMB_TINY_SEED"] == "3"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    monkeypatch.setenv("PYTHONHASHSEED", "7")
    env = kernel_environment(tmp_path / "run", tmp_path / "figs")
    assert env["OMP_WAIT_POLICY"] == "ACTIVE" and env["PYTHONHASHSEED"] == "7" and "VLAMB_TINY_SEED" not in env
