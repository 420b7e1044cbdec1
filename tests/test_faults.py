"""Runs are safe against each other and against faults, and bad input ends in one line: run folders are unique when
two runs start in the same second; a comparison's page and files are written all-or-nothing; Ctrl-C ends
``reproduce``, ``compare`` and ``score`` with one line (exit 130); an unusable folder, a full disk, a run id or name
that is not UTF-8, a ``-p`` value YAML cannot read and a damaged ``results.json`` each end in one line."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from procs import interruptible

from vlamb_nb import cli, get_benchmark
from vlamb_nb import report_card as rc
from vlamb_nb.errors import SettingError

ROOT = Path(__file__).resolve().parent.parent
#: the console script's start (its import of the CLI), then a line to say it is past it, then main()
CLI = [sys.executable, "-c", "import sys; from vlamb_nb.cli import main; print('started', flush=True); "
       "sys.exit(main(sys.argv[1:]))"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _main(argv: list[str], capsys) -> tuple[int, str]:
    code = cli.main(argv)
    return code, capsys.readouterr().err


# -- stores to compare --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """Two models' VAGUE stores on one generated sample: (source, store a, store b)."""
    from vlamb_nb.models import ScriptedModel

    d = tmp_path_factory.mktemp("stores")
    bench = get_benchmark("vague")
    src = bench.make_sample(d / "data", n=8, seed=0)
    items = bench.load(src)
    out = []
    for name, answer in (("a", "A"), ("b", "B")):
        store = d / f"{name}.jsonl"
        bench.run(ScriptedModel(lambda r, a=answer: a, model_id=name), items, "vlm", store=store, progress=False)
        out.append(store)
    return src, out[0], out[1]


def _compare_args(stores, out: Path, *extra: str) -> list[str]:
    src, a, b = stores
    return ["compare", str(a), str(b), "--source", f"vague={src}", "--n-resamples", "100", "--out", str(out), *extra]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- a comparison is written all-or-nothing -----------------------------------------------------------------------
@pytest.mark.parametrize("where", ["the figure", "the page"])
def test_ctrl_c_while_a_comparison_is_written_leaves_the_old_one_whole(stores, tmp_path, capsys, monkeypatch, where):
    out = tmp_path / "cmp"
    assert _main(_compare_args(stores, out), capsys)[0] == 0
    before = _snapshot(out)
    assert {"comparison.md", "comparison.html", "comparison.json", "comparison.png"} <= set(before)

    def ctrl_c(*a, **k):
        raise KeyboardInterrupt

    target = ("vlamb_nb.plots.save_figure" if where == "the figure" else "vlamb_nb.report_html.write_comparison_page")
    monkeypatch.setattr(target, ctrl_c)
    code, err = _main(_compare_args(stores, out, "--baseline", "b"), capsys)
    assert code == 130 and "stopped (Ctrl-C)" in _one_line(err)
    assert _snapshot(out) == before  # the earlier comparison, whole: no new comparison.md beside its page
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmp"]  # nothing half-written left beside it


def test_a_new_comparison_replaces_every_file_of_the_old_one(stores, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert _main(_compare_args(stores, out), capsys)[0] == 0
    first = _snapshot(out)
    assert _main(_compare_args(stores, out, "--baseline", "b", "--seed", "7"), capsys)[0] == 0
    second = _snapshot(out)
    assert set(second) == set(first) and second["comparison.json"] != first["comparison.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmp"]


def test_ctrl_c_during_the_moves_is_held_until_every_file_is_in(tmp_path, monkeypatch):
    from vlamb_nb import atomic

    d = tmp_path / "out"
    d.mkdir()
    (d / "x.md").write_text("old")
    (d / "x.html").write_text("old page")
    real = os.replace
    moves: list[str] = []

    def replace(src, dst):
        if not moves:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C arrives after the first move
        moves.append(Path(dst).name)
        real(src, dst)

    with atomic.staged(d) as tmp:
        (tmp / "x.md").write_text("new")
        (tmp / "x.html").write_text("new page")
        monkeypatch.setattr(os, "replace", replace)
        with pytest.raises(KeyboardInterrupt):
            atomic.move_in(tmp, d, ["x.md", "x.html"], page="x.html")
    assert moves == ["x.md", "x.html"]
    assert (d / "x.md").read_text() == "new" and (d / "x.html").read_text() == "new page"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_full_disk_while_a_comparison_is_written_is_one_line_and_keeps_the_old_one(stores, tmp_path, capsys,
                                                                                      monkeypatch):
    out = tmp_path / "cmp"
    assert _main(_compare_args(stores, out), capsys)[0] == 0
    before = _snapshot(out)
    real = Path.write_text

    def full(self, *a, **k):
        if self.suffix == ".json":
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "write_text", full)
    code, err = _main(_compare_args(stores, out, "--baseline", "b"), capsys)
    line = _one_line(err)
    assert code == 2 and "No space left on device" in line and "disk is full" in line, line
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmp"]


# -- unusable folders and names: one line -------------------------------------------------------------------------
def test_an_unusable_out_folder_is_one_line(stores, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for out in (blocker / "cmp", blocker, Path("/proc/vlamb-compare")):  # a file; /proc refuses even root
        code, err = _main(_compare_args(stores, out), capsys)
        line = _one_line(err)
        assert code == 2 and str(out if out == blocker else out.parent) in line, line


def test_an_unusable_runs_folder_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code, err = _main(["reproduce", "vague", "--runs-dir", str(blocker / "runs")], capsys)
    line = _one_line(err)
    assert code == 2 and "a file, not a folder" in line and str(blocker) in line, line
    code, err = _main(["reproduce", "vague", "--runs-dir", "/proc/vlamb-runs"], capsys)  # /proc refuses even root
    assert code == 2 and "/proc/vlamb-runs" in _one_line(err)


def test_a_read_only_folder_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    """What a read-only runs/ folder (or a full one that refuses a new folder) looks like to the check before a
    run: the OS says it cannot be written (chmod is no test where the tests run as root)."""
    real = os.access
    ro = tmp_path / "ro"
    ro.mkdir()
    monkeypatch.setattr(os, "access", lambda p, mode, **k: False if Path(p) == ro else real(p, mode, **k))
    code, err = _main(["reproduce", "vague", "--runs-dir", str(ro / "runs")], capsys)
    line = _one_line(err)
    assert code == 2 and "cannot be written" in line and str(ro) in line, line
    assert not (ro / "runs").exists()


def test_a_read_only_disk_met_while_writing_is_one_line(tmp_path, capsys, monkeypatch):
    from vlamb_nb import reproduce as R

    def read_only(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / "runs"))

    monkeypatch.setattr(R, "make_run_dir", read_only)
    code, err = _main(["reproduce", "vague", "--runs-dir", str(tmp_path / "runs")], capsys)
    line = _one_line(err)
    assert code == 2 and "Read-only file system" in line and str(tmp_path / "runs") in line, line


@pytest.mark.parametrize("run_id,words", [("\udcff", "not UTF-8"), ("a/b", "not a folder name"),
                                          ("..", "not a folder name"), ("x\ny", "not a folder name")])
def test_a_run_id_that_cannot_name_a_folder_is_one_line(tmp_path, capsys, run_id, words):
    code, err = _main(["reproduce", "vague", "--runs-dir", str(tmp_path / "runs"), "--run-id", run_id], capsys)
    line = _one_line(err)
    assert code == 2 and words in line, line
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_model_name_with_a_lone_surrogate_is_one_line(tmp_path, capsys):
    code, err = _main(["reproduce", "vague", "--runs-dir", str(tmp_path / "runs"), "-p", "model=m\udcff"], capsys)
    assert code == 2 and "not UTF-8" in _one_line(err) and "0xff" in err
    code, err = _main(["run", "vague", "--model", "m\udcff", "--source", str(tmp_path), "--store-dir",
                       str(tmp_path / "s")], capsys)
    assert code == 2 and "--model" in _one_line(err) and "not UTF-8" in err


def test_a_non_utf8_run_id_from_the_shell_is_one_line(tmp_path):
    """The bytes as a shell passes them (not UTF-8), through a real process."""
    code = "import sys; from vlamb_nb.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run([os.fsencode(sys.executable), b"-c", code.encode(), b"reproduce", b"vague", b"--runs-dir",
                           os.fsencode(tmp_path / "runs"), b"--run-id", b"run-\xff\xfe"],
                          capture_output=True, env=_env(), timeout=120)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and "not UTF-8" in _one_line(err), err


# -- run folders are unique -----------------------------------------------------------------------------------------
def test_runs_started_in_the_same_second_get_folders_of_their_own(tmp_path, monkeypatch):
    from vlamb_nb import reproduce as R

    monkeypatch.setattr(R, "new_run_id", lambda: "20260101-000000")
    got: list[Path] = []
    lock = threading.Lock()

    def start() -> None:
        d = R.make_run_dir(tmp_path / "runs", None)
        with lock:
            got.append(d)

    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 8
    assert sorted(p.name for p in got) == sorted(["20260101-000000"] + [f"20260101-000000-{n}" for n in range(2, 9)])
    assert R.make_run_dir(tmp_path / "runs", "mine") == R.make_run_dir(tmp_path / "runs", "mine")  # a named rerun
    with pytest.raises(SettingError, match="not a folder name"):
        R.make_run_dir(tmp_path / "runs", "../elsewhere")


def _notebooks(folder: Path, body: str) -> Path:
    """Stand-ins for the VAGUE and MUCAR notebooks: a parameters cell and ``body``."""
    import nbformat

    folder.mkdir(parents=True, exist_ok=True)
    for name in ("vague", "mucar"):
        nb = nbformat.v4.new_notebook()
        params = nbformat.v4.new_code_cell("model = None\nprofile = 'offline'")
        params.metadata["tags"] = ["parameters"]
        nb.cells = [params, nbformat.v4.new_code_cell(body)]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, folder / f"{name}.ipynb")
    return folder


def _reproduce(notebooks: Path, *argv: str, same_second: bool = False) -> subprocess.Popen:
    fixed = "R.new_run_id = lambda: '20260101-000000'; " if same_second else ""
    code = (f"import sys; from pathlib import Path; import vlamb_nb.reproduce as R; {fixed}"
            f"R.notebooks_dir = lambda: Path({str(notebooks)!r}); from vlamb_nb.cli import main; "
            "print('started', flush=True); sys.exit(main(sys.argv[1:]))")
    return subprocess.Popen([sys.executable, "-c", code, "reproduce", *argv], preexec_fn=interruptible,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(), start_new_session=True)


@pytest.mark.slow
def test_two_reproductions_started_in_the_same_second_keep_both_runs(tmp_path):
    nbs = _notebooks(tmp_path / "nb", "x = 1")
    runs = tmp_path / "runs"
    procs = [_reproduce(nbs, "vague", "--runs-dir", str(runs), same_second=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    folders = sorted(p.name for p in runs.iterdir() if not p.is_symlink())  # runs/latest and runs/previous: links
    assert folders == ["20260101-000000", "20260101-000000-2"]
    pages = {out.strip().splitlines()[-1] for out, _ in outs}  # each names its own page
    assert pages == {str((runs / f / "report.html").resolve()) for f in folders}
    for f in folders:
        assert json.loads((runs / f / "results.json").read_text())["vague"]["ok"] is True


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_during_reproduce_is_one_line_and_exit_130(tmp_path, jobs):
    nbs = _notebooks(tmp_path / "nb", "import time\ntime.sleep(120)")
    proc = _reproduce(nbs, "vague", "mucar", "--runs-dir", str(tmp_path / "runs"), "--jobs", jobs)
    assert proc.stdout.readline().strip() == "started"
    assert "running" in proc.stdout.readline()  # a notebook is under way
    time.sleep(3)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
    t0 = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and time.monotonic() - t0 < 30, err
    assert "reproduce: stopped (Ctrl-C)" in _one_line(err)


def test_ctrl_c_during_compare_and_score_is_one_line_and_exit_130(stores, tmp_path):
    src, a, b = stores
    argvs = {"compare": ["compare", str(a), str(b), "--source", f"vague={src}", "--n-resamples", "200000",
                         "--out", str(tmp_path / "cmp")],
             "score": ["score", "vague", "--predictions", str(a), "--source", str(src)]}
    for name, argv in argvs.items():
        proc = subprocess.Popen([*CLI, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                                preexec_fn=interruptible)
        assert proc.stdout.readline().strip() == "started"
        time.sleep(1.0)  # inside main(): importing, reading, resampling
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        if name == "score" and (proc.returncode == 0 or (proc.returncode == -signal.SIGINT and out.strip()
                                                          and not err)):
            continue  # it finished before the signal came (or while the interpreter was closing): nothing to stop
        assert proc.returncode == 130, (name, err)
        assert f"{name}: stopped (Ctrl-C)" in _one_line(err)
    assert not (tmp_path / "cmp").exists()


# -- -p values ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value,words", [
    ("limit=[1, 2", "expected ',' or ']'"),
    ("model='abc", "unexpected end of stream"),
    ("model=\tx: y", "cannot start any token"),
    ("model=org/name: v2", "reads this value as a mapping"),
    ("model=*anchor", "is not a number"),
    ("=3", "the key is empty"),
])
def test_a_parameter_value_yaml_cannot_read_is_one_line(tmp_path, capsys, value, words):
    code, err = _main(["reproduce", "vague", "--runs-dir", str(tmp_path / "runs"), "-p", value], capsys)
    line = _one_line(err)
    assert code == 2 and words in line, line
    assert not (tmp_path / "runs").exists()


def test_parameter_values_that_read_still_read():
    assert cli._kv(["a=1", "b=[1, 2]", "c=null", "d=x:y", "e={k: 1}", "f='a: b'", "g="]) == {
        "a": 1, "b": [1, 2], "c": None, "d": "x:y", "e": {"k": 1}, "f": "a: b", "g": ""}


# -- a damaged results.json -----------------------------------------------------------------------------------------
def _results() -> dict:
    head = rc.Headline(paper="vague", metric="accuracy", slice="VCR VLM", value=50.0, ci_low=40.0, ci_high=60.0,
                       n=100, comparators=[rc.Comparator("x", 45.0, n=1144)], rank=1, rank_low=1, rank_high=2,
                       n_ranked=2, model="m", profile="offline")
    return {"vague": {"ok": True, "results": {"headline": [head.to_dict()]}},
            "mucar": {"ok": False, "error": "SettingError: boom"}}


def _headline_with(**change) -> dict:
    r = _results()
    r["vague"]["results"]["headline"][0].update(change)
    return r


DAMAGED = {
    "not JSON": ("{'vague': }", "not valid JSON"),
    "truncated": (json.dumps(_results())[:90], "not valid JSON"),
    "empty": ("", "not valid JSON"),
    "a list": ("[1, 2]", "expected a JSON object"),
    "an entry that is text": (json.dumps({"vague": "ok"}), "the 'vague' entry is str, not an object"),
    "ok missing": (json.dumps({"vague": {"results": {}}}), "the 'vague' entry has no 'ok'"),
    "ok as text": (json.dumps({"vague": {"ok": "yes"}}), "'ok' is str"),
    "headline an object": (json.dumps({"vague": {"ok": True, "results": {"headline": {"a": 1}}}}),
                           "its headline is dict"),
    "a value as text": (json.dumps(_headline_with(value="high")), "headline row 1: 'value' is str"),
    "a row without its metric": (json.dumps({"vague": {"ok": True, "results": {"headline": [{"paper": "vague"}]}}}),
                                 "headline row 1 has no 'metric'"),
    "n as a float": (json.dumps(_headline_with(n=1.5)), "'n' is float"),
    "a comparator as text": (json.dumps(_headline_with(comparators=["x"])), "comparator 1 is str"),
    "a comparator's value as a list": (json.dumps(_headline_with(comparators=[{"name": "x", "value": [1]}])),
                                       "comparator 1: 'value' is list"),
    "deviations of numbers": (json.dumps(_headline_with(deviations=[1])), "deviations are not all text"),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_card_on_a_damaged_results_json_is_one_line(tmp_path, capsys, case):
    text, words = DAMAGED[case]
    (tmp_path / "results.json").write_text(text, encoding="utf-8")
    code, err = _main(["card", str(tmp_path)], capsys)
    line = _one_line(err)
    assert code == 2 and "results.json" in line and words in line, line


def test_card_on_a_sound_results_json_still_prints_the_card(tmp_path, capsys):
    (tmp_path / "results.json").write_text(json.dumps(_results()), encoding="utf-8")
    assert cli.main(["card", str(tmp_path)]) == 0
    assert "| vague |" in capsys.readouterr().out


# -- a reproduction's report is written all-or-nothing --------------------------------------------------------------
def _report_runs(run_dir: Path) -> list:
    from vlamb_nb.reproduce import NotebookRun

    return [NotebookRun("vague", ROOT / "notebooks" / "vague.ipynb", run_dir / "vague.ipynb", {}, ok=True,
                        results={"accuracy": 50.0})]


def test_a_report_cut_short_by_a_full_disk_leaves_no_page_beside_it(tmp_path, monkeypatch):
    from vlamb_nb import atomic
    from vlamb_nb.reproduce import write_report

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name in ("report.html", "report.md", "results.json"):
        (run_dir / name).write_text(f"an earlier {name}")
    real = atomic.write_text

    def full(path, text):
        if Path(path).name == "results.json":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, text)

    monkeypatch.setattr(atomic, "write_text", full)
    with pytest.raises(OSError, match="No space left"):
        write_report(_report_runs(run_dir), run_dir)
    assert not (run_dir / "report.html").exists()  # no page that is not this report's
    assert (run_dir / "results.json").read_text() == "an earlier results.json"  # whole, never half-written
    assert not [p for p in run_dir.iterdir() if p.name.endswith(".part")]
    monkeypatch.setattr(atomic, "write_text", real)
    page = write_report(_report_runs(run_dir), run_dir)
    assert page == run_dir / "report.html" and "**Accuracy**: 50" in (run_dir / "report.md").read_text()
    assert json.loads((run_dir / "results.json").read_text())["vague"]["ok"] is True


def test_a_model_or_record_with_a_lone_surrogate_is_refused_before_anything_is_stored(tmp_path):
    from vlamb_nb.errors import StoreError
    from vlamb_nb.models import ScriptedModel
    from vlamb_nb.store import PredictionStore

    bench = get_benchmark("vague")
    items = bench.load(bench.make_sample(tmp_path / "data", n=2, seed=0))
    store = tmp_path / "s.jsonl"
    with pytest.raises(SettingError, match=r"model 'm\\udcff': its identity holds text that is not UTF-8"):
        bench.run(ScriptedModel(lambda r: "A", model_id="m\udcff"), items, "lm", store=store, progress=False)
    assert not store.exists() or store.read_bytes() == b""
    with PredictionStore(store) as st:
        with pytest.raises(StoreError, match=r"request 'r1': field 'text' holds text that is not UTF-8"):
            st.append_many([{"key": "k0", "request_id": "r0", "text": "A"},
                            {"key": "k1", "request_id": "r1", "text": "B\udcff"}])
    assert store.read_bytes() == b""  # nothing of the batch was written


# -- faults keep what was computed ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fault", ["full disk", "read-only folder"])
def test_score_says_in_one_line_when_its_record_cannot_be_written_and_leaves_no_temporary_file(stores, tmp_path,
                                                                                                fault):
    """On a full disk or a read-only mount ``score`` once left ``.a.record.json.<pid>.tmp`` behind a traceback:
    every view reads a run from its record, so a record that cannot be written is an error, in one line naming the
    file and why, and no temporary file (and no half record) is left."""
    import shutil

    src, a, _ = stores
    store = tmp_path / "a.jsonl"
    shutil.copy(a, store)
    errno_name, why = ("ENOSPC", "No space left on device") if fault == "full disk" else \
        ("EROFS", "Read-only file system")
    code = (  # the console script, with every write of a temporary file refused (half written on a full disk)
        "import errno, sys\nfrom pathlib import Path\nreal = Path.write_text\n"
        "def refuse(self, data, *a, **k):\n"
        "    if self.name.endswith('.tmp'):\n"
        f"        if {fault == 'full disk'!r}:\n"
        "            real(self, data[: len(data) // 2], *a, **k)\n"
        f"        raise OSError(errno.{errno_name}, {why!r}, str(self))\n"
        "    return real(self, data, *a, **k)\n"
        "Path.write_text = refuse\n"
        "from vlamb_nb.cli import main\nsys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, "score", "vague", "--predictions", str(store), "--source",
                           str(src), "--json"], capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode not in (0, 1) and not proc.stdout.strip(), (proc.returncode, proc.stdout, proc.stderr)
    line = _one_line(proc.stderr)
    assert line.startswith("vlamb-nb: ") and "a.record.json: run record not written" in line and why in line, line
    assert "the answers stand in the store" in line
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))
    assert not (tmp_path / "a.record.json").exists()


def test_a_notebook_cut_short_by_a_full_disk_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    """A full disk while papermill writes the executed notebook left a cut file that nbformat refused to read
    (``NotJSONError`` out of ``reproduce``): the notebook is a failure with one line saying why, and the run goes on."""
    import papermill

    import vlamb_nb.reproduce as R

    nbs = _notebooks(tmp_path / "nb", "x = 1")

    def cut(path, output, **kwargs):
        Path(output).write_text('{"cells": [{"cell_type": "code", "sou', encoding="utf-8")

    monkeypatch.setattr(papermill, "execute_notebook", cut)
    run = R.execute(R.NotebookRun("vague", nbs / "vague.ipynb", tmp_path / "vague.ipynb", {}), cwd=tmp_path)
    assert not run.ok and "\n" not in run.error, run.error
    assert "could not be read back" in run.error and "full disk" in run.error


def test_a_run_folder_in_use_by_another_reproduce_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    """Two ``reproduce --run-id same`` at once mixed two stand-ins' records in one folder: the second is refused
    while the first lives; a lock left by a process that died is taken over."""
    import vlamb_nb.reproduce as R

    nbs = _notebooks(tmp_path / "nb", "x = 1")
    monkeypatch.setattr(R, "notebooks_dir", lambda: nbs)
    run_dir = tmp_path / "runs" / "same"
    run_dir.mkdir(parents=True)
    with R.run_lock(run_dir):  # a reproduce under way in this folder
        code, err = _main(["reproduce", "vague", "--run-id", "same", "--runs-dir", str(tmp_path / "runs")], capsys)
        line = _one_line(err)
        assert code == cli.EXIT_ERROR and f"another reproduce (pid {os.getpid()})" in line, line
        assert "--run-id" in line and not (run_dir / "vague.ipynb").exists()
    (run_dir / R.RUN_LOCK).write_text("999999999\n")  # the lock file of a process that is gone
    with R.run_lock(run_dir):
        assert (run_dir / R.RUN_LOCK).read_text().strip() == str(os.getpid())
