"""The README's commands run as written in a plain shell, and ``make lab`` starts where a researcher starts it.

``scripts/fresh_clone.py`` runs the README's first command and every offline example in a fresh clone, each line in
a new ``bash`` whose ``PATH`` is the system's plus only what the README's own lines set. These tests check that
runner (a command a plain shell cannot find fails it; a README line that puts it on ``PATH`` passes it), that the
README's examples reach ``vlamb-nb`` that way, and how ``vlamb-nb lab`` (``make lab``) plans its server.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

from vlamb_nb import lab

ROOT = Path(__file__).resolve().parent.parent


def _fresh_clone():
    spec = importlib.util.spec_from_file_location("fresh_clone", ROOT / "scripts" / "fresh_clone.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fc = _fresh_clone()


def _venv(tmp_path: Path) -> Path:
    """A folder shaped like a virtual environment: ``pyvenv.cfg``, ``bin/activate`` and one command in ``bin``."""
    env = tmp_path / "env"
    (env / "bin").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    tool = env / "bin" / "vlamb-nb-probe"
    tool.write_text("#!/bin/sh\necho probe-ran\n")
    tool.chmod(0o755)
    (env / "bin" / "activate").write_text(f'export PATH="{env / "bin"}:$PATH"\n')
    return env


def test_a_command_only_an_activated_environment_has_is_not_found_in_a_plain_shell(tmp_path):
    env = _venv(tmp_path)
    shell = fc.Shell(tmp_path, {**os.environ, "PATH": f"{env / 'bin'}{os.pathsep}{os.environ['PATH']}"})
    assert str(env / "bin") not in shell.env["PATH"].split(os.pathsep)  # the caller's environment is not the user's
    assert shell.run("vlamb-nb-probe").returncode == 127


def test_a_readme_line_that_activates_the_environment_holds_for_every_later_line(tmp_path):
    env = _venv(tmp_path)
    shell = fc.Shell(tmp_path, dict(os.environ))
    assert shell.run("source env/bin/activate").returncode == 0
    proc = shell.run("vlamb-nb-probe")
    assert (proc.returncode, proc.stdout.strip()) == (0, "probe-ran")
    assert env.is_dir()


def test_a_failing_environment_line_is_not_kept(tmp_path):
    shell = fc.Shell(tmp_path, dict(os.environ))
    assert shell.run("source missing/bin/activate").returncode != 0
    assert shell.prelude == []
    assert shell.run("true").returncode == 0


def test_the_readmes_examples_announce_their_exits_and_start_by_entering_the_environment():
    lines = fc.examples(ROOT / "README.md")
    first_tool = next(i for i, (cmd, _) in enumerate(lines) if cmd.split()[0] == "vlamb-nb")
    assert any(fc.SETS.match(cmd) for cmd, _ in lines[:first_tool]), \
        "the offline examples call vlamb-nb before any line puts it on PATH"
    assert fc.first_command(ROOT / "README.md") == "make reproduce"
    assert not any("<" in cmd for cmd, _ in lines), "an example holds a placeholder a user would have to fill"


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "vlamb-nb").exists(), reason="no .venv in this checkout")
def test_every_command_of_the_readmes_examples_is_found_by_a_plain_shell_that_ran_the_lines_before_it():
    shell = fc.Shell(ROOT, {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"})
    for cmd, _ in fc.examples(ROOT / "README.md"):
        if fc.SETS.match(cmd):
            assert shell.run(cmd).returncode == 0, cmd
            continue
        tool = cmd.split()[0]
        found = shell.run(f"command -v {tool}")
        assert found.returncode == 0, f"`{cmd}`: a plain shell finds no {tool}"


# -- make lab ---------------------------------------------------------------------------------------------------


def _where(**kw) -> lab.Where:
    base = dict(root=False, display=True, remote=False, host="gpu-07.cluster", user="ana")
    return lab.Where(**{**base, **kw})


def test_root_gets_allow_root_and_a_remote_node_no_browser_and_the_tunnel():
    p = lab.plan(Path("/nb"), _where(root=True, display=False, remote=True), port=8890, token="t0k")
    assert "--allow-root" in p.argv and "--ServerApp.open_browser=False" in p.argv
    assert p.url == "http://127.0.0.1:8890/lab?token=t0k"
    assert any("ssh -N -L 8890:127.0.0.1:8890 ana@gpu-07.cluster" in line for line in p.lines)
    assert not any("t0k" in a for a in p.argv), "the token is on the command line, readable in the process list"
    assert p.env == {"JUPYTER_TOKEN": "t0k"}


def test_a_laptop_opens_its_browser_and_needs_no_tunnel():
    p = lab.plan(Path("/nb"), _where(), port=8888, token="x")
    assert "--allow-root" not in p.argv and "--ServerApp.open_browser=True" in p.argv
    assert not any("ssh" in line for line in p.lines)


def test_a_scheduler_node_names_the_jump_through_the_login_node():
    p = lab.plan(Path("/nb"), _where(remote=True, display=False, scheduler="slurm"), port=9000, token="x")
    assert any("-J ana@<login-node>" in line for line in p.lines)


@pytest.mark.parametrize("env, remote", [({"SSH_CONNECTION": "1 2 3 4", "DISPLAY": ":0"}, True),
                                          ({"DISPLAY": ":0"}, False), ({}, True),
                                          ({"SLURM_JOB_ID": "12", "DISPLAY": ":0"}, True)])
def test_where_reads_ssh_displays_and_schedulers(monkeypatch, env, remote):
    for k in ("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY", "DISPLAY", "WAYLAND_DISPLAY", "SLURM_JOB_ID", "PBS_JOBID",
              "LSB_JOBID"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(sys, "platform", "linux")
    w = lab.Where.here()
    assert w.remote is remote and w.display is (not remote)
    assert w.root is (os.geteuid() == 0)


def test_free_port_skips_a_taken_one():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        taken = s.getsockname()[1]
        assert lab.free_port("127.0.0.1", taken) != taken


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None or not (ROOT / ".venv" / ".installed").is_file(),
                    reason="needs make and the installed .venv")
def test_make_lab_serves_and_answers_on_the_address_it_prints():
    """As the README says, in a plain shell: as root where this runs as root (JupyterLab refuses root unless told)."""
    shell = fc.Shell(ROOT, {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"})
    assert fc.lab_answers(shell, timeout=120) is None


# -- runs/latest and outputs under runs/ ------------------------------------------------------------------------


def test_latest_follows_the_newest_run_and_previous_the_one_before(tmp_path):
    from vlamb_nb.paths import link_latest

    runs = tmp_path / "runs"
    for name in ("a", "b", "c"):
        (runs / name).mkdir(parents=True)
    link_latest(runs, runs / "a")
    assert os.readlink(runs / "latest") == "a" and not (runs / "previous").exists()
    link_latest(runs, runs / "b")
    assert (os.readlink(runs / "latest"), os.readlink(runs / "previous")) == ("b", "a")
    link_latest(runs, runs / "b")  # a rerun into the same folder keeps the run before it
    assert (os.readlink(runs / "latest"), os.readlink(runs / "previous")) == ("b", "a")
    link_latest(runs, runs / "c")
    assert (os.readlink(runs / "latest"), os.readlink(runs / "previous")) == ("c", "b")
    assert (runs / "latest").resolve() == (runs / "c").resolve()  # relative: the folder can move
    assert not list(runs.glob(".*tmp"))


@pytest.mark.parametrize("name", ["latest", "previous"])
def test_a_run_cannot_take_the_name_of_a_link(name):
    from vlamb_nb.errors import SettingError
    from vlamb_nb.reproduce import check_run_id

    with pytest.raises(SettingError, match="link to the newest runs"):
        check_run_id(name)


def test_card_with_no_argument_reads_the_latest_run_and_says_how_to_make_one(tmp_path, monkeypatch, capsys):
    from vlamb_nb import cli, report_card
    from vlamb_nb.errors import VlambError

    monkeypatch.chdir(tmp_path)
    assert cli.main(["card"]) != 0
    assert "runs/latest is missing" in capsys.readouterr().err
    (tmp_path / "runs" / "20260101-000000").mkdir(parents=True)
    from vlamb_nb.paths import link_latest

    link_latest(tmp_path / "runs", tmp_path / "runs" / "20260101-000000")
    seen = []

    def from_run(run_dir, model=None):
        seen.append(Path(run_dir).resolve())
        raise VlambError("stop here")

    monkeypatch.setattr(report_card, "from_run", from_run)
    cli.main(["card"])
    assert seen == [(tmp_path / "runs" / "20260101-000000").resolve()]


def test_compare_writes_under_runs_not_into_the_folder_it_was_started_in(tmp_path, monkeypatch, capsys):
    from vlamb_nb import cli, compare

    class Result:
        def save(self, out, name):
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{name}.html").write_text("x")
            return [out / f"{name}.html"]

        def markdown(self):
            return "table"

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(compare, "compare", lambda *a, **k: Result())
    assert cli.main(["compare", "x", "y"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["runs"]
    page = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert page.parent.parent == (tmp_path / "runs" / "comparisons").resolve() and page.is_file()
