"""A new user's first path, run as they run it: a fresh clone with nothing beside it, no network, no data, a plain
shell.

Clones this checkout's HEAD into an empty folder (no ``../shared`` beside it, ``VLAMB_SHARED_DATA`` unset, an
empty data home, model cache and Hugging Face cache), then runs the README as written: its first command (``make
reproduce``), then every line of its offline examples (the block after ``<!-- offline-examples -->``), each in a new
``bash`` whose ``PATH`` is the system's (no virtual environment's ``bin``) plus only what the README's own lines set
(a ``source``/``.``/``export`` line is kept and run before every later line), each expected to exit as its comment
says (``exit N``; 0 otherwise). Nothing is filled in by hand. The project's installed environment is shared: the
clone's ``.venv`` links to it and the clone's ``pyproject.toml`` is dated as installed, so ``make`` finds it up to
date instead of reinstalling. Then ``make lab`` is started as the README says (as root where this runs as root, as
most GPU containers do) and must answer on the address it prints. Without network where the machine allows it
(``unshare -n`` as root), else with ``HF_HUB_OFFLINE=1``.

It fails on any failed notebook, any executed notebook of any ``reproduce`` line that misleads its reader (a
section with no output, a progress widget frozen at 0%, a stand-in counted as matching the paper:
``reading_problems``), any traceback, any line that exits otherwise than the README says (a command a plain shell
cannot find exits 127), anything new in ``git status`` outside ignored folders, a ``make lab`` that does not
answer, and any committed figure removed or replaced by one drawn from a generated sample.
``make test`` runs it::

    python scripts/fresh_clone.py [--venv .venv] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = "<!-- offline-examples -->"
#: a README line that sets the shell's environment for the lines after it
SETS = re.compile(r"^(source|\.|export)\s")


def first_command(readme: Path) -> str:
    """The README's first command: the first line of its first ``bash`` block."""
    text = readme.read_text(encoding="utf-8")
    block = text.split("```bash", 1)[1].split("```", 1)[0]
    return next(line.partition("#")[0].strip() for line in block.strip().splitlines() if line.partition("#")[0].strip())


def examples(readme: Path) -> list[tuple[str, int]]:
    """The README's offline examples: (command, expected exit code) per line of the block after :data:`MARK`."""
    text = readme.read_text(encoding="utf-8")
    if MARK not in text:
        raise SystemExit(f"fresh_clone: README.md has no {MARK} block")
    block = text.split(MARK, 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    out = []
    for line in block.strip().splitlines():
        command, _, comment = line.partition("#")
        if not command.strip():
            continue
        m = re.search(r"\bexit (\d+)", comment)
        out.append((command.strip(), int(m.group(1)) if m else 0))
    return out


def system_path(path: str | None = None) -> str:
    """``PATH`` as a new login shell has it: the given one without any virtual environment's ``bin`` (a folder
    whose parent holds ``pyvenv.cfg``), so a command the README does not put there is not found."""
    parts = (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep)
    return os.pathsep.join(p for p in parts if p and not (Path(p).parent / "pyvenv.cfg").is_file())


class Shell:
    """The README's lines run one by one, each in a new ``bash`` with the system's ``PATH``; the lines that set
    the environment (``source``, ``.``, ``export``) are run again before each later line, as a user's shell
    would still hold them."""

    def __init__(self, cwd: Path, env: dict[str, str], prefix: list[str] | None = None) -> None:
        self.cwd, self.prefix, self.prelude = cwd, prefix or [], []
        self.env = {k: v for k, v in env.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
        self.env["PATH"] = system_path(env.get("PATH"))

    def script(self, line: str) -> str:
        return "\n".join(["set -e", *self.prelude, "set +e", line])

    def run(self, line: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*self.prefix, "bash", "--noprofile", "--norc", "-c", self.script(line)],
                              cwd=self.cwd, env=self.env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if proc.returncode == 0 and SETS.match(line):
            self.prelude.append(line)
        return proc

    def start(self, line: str) -> subprocess.Popen[str]:
        """``line`` left running (a server), in its own process group so it can be stopped whole."""
        return subprocess.Popen([*self.prefix, "bash", "--noprofile", "--norc", "-c", self.script(line)],
                                cwd=self.cwd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, stdin=subprocess.DEVNULL, start_new_session=True)


def lab_answers(shell: Shell, timeout: float = 180) -> str | None:
    """Start ``make lab`` as the README says and wait for the address it prints to answer; None when it does,
    else why not. As root the server must start (JupyterLab refuses root without ``--allow-root``)."""
    import socket

    with socket.socket() as s:  # a free port, so a server the user already runs is not in the way
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = shell.start(f"make lab PORT={port}")
    lines: list[str] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    url = None
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            url = url or next((m.group(1) for ln in list(lines) if (m := re.search(r"open: (http\S+)", ln))), None)
            if url is not None:
                try:
                    api = url.replace("/lab?", "/api/status?")
                    with urllib.request.urlopen(api, timeout=5) as r:  # noqa: S310 - 127.0.0.1, printed by make lab
                        if r.status == 200:
                            return None
                except OSError:
                    pass
            time.sleep(0.5)
        reader.join(timeout=5)
        return (f"`make lab` {'exited ' + str(proc.returncode) if proc.poll() is not None else 'did not answer'}"
                f"{' at ' + url if url else ' (printed no address to open)'}:\n{''.join(lines)[-3000:]}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def offline_prefix() -> list[str]:
    """``unshare -n`` (no network at all) where this process may use it, else nothing."""
    unshare = shutil.which("unshare")
    if unshare and os.geteuid() == 0 and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", default=str(ROOT / ".venv"), help="the installed environment to share")
    ap.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    a = ap.parse_args(argv)
    venv = Path(a.venv).resolve()
    stamp = venv / ".installed"
    if not (venv / "bin" / "vlamb-nb").exists() or not stamp.is_file():
        print(f"fresh_clone: no installed environment at {venv} (run `make install`)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="vlamb-fresh-"))
    clone = work / "nothing-beside" / "vlamb_nb"
    clone.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    (clone / ".venv").symlink_to(venv, target_is_directory=True)  # the environment `make` would have made
    installed = stamp.stat().st_mtime - 1
    os.utime(clone / "pyproject.toml", (installed, installed))  # as installed: `make` reinstalls nothing
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLAMB_", "HF_", "PYTEST_"))}
    env.update({"VLAMB_DATA": str(work / "data-home"), "VLAMB_CACHE": str(work / "cache"),
                "HF_HOME": str(work / "hf-home"), "PYTHONPATH": str(clone)})
    prefix = offline_prefix()
    if not prefix:
        env["HF_HUB_OFFLINE"] = "1"
    shell = Shell(clone, env, prefix)
    print(f"fresh clone of {head} in {clone} ({'no network: unshare -n' if prefix else 'HF_HUB_OFFLINE=1'}; "
          f"PATH without any virtual environment)", flush=True)
    problems: list[str] = []

    def run(command: str, expect: int) -> str:
        t0 = time.perf_counter()
        proc = shell.run(command)
        out = proc.stdout + proc.stderr
        status = "ok" if proc.returncode == expect else f"EXIT {proc.returncode}, README says {expect}"
        print(f"  [{time.perf_counter() - t0:5.0f} s] {command}: {status}", flush=True)
        if proc.returncode != expect:
            problems.append(f"`{command}` exited {proc.returncode} (README: {expect}):\n{out[-3000:]}")
        if "Traceback (most recent call last)" in out:
            problems.append(f"`{command}` printed a traceback:\n{out[-3000:]}")
        if "KeyboardInterrupt caught in kernel" in out:
            problems.append(f"`{command}` printed kernel-shutdown noise")
        if "reproduce" in command.split() or command.startswith("make reproduce"):
            failed = re.search(r"(\d+) notebook\(s\) ok, (\d+) failed", out)
            if failed is None or failed.group(2) != "0":
                problems.append(f"`{command}`: notebooks failed: {failed.group(0) if failed else out[-2000:]}")
            for nb in sorted((clone / "runs" / "latest").glob("*.ipynb")):  # read as a reader with nothing beside
                problems.extend(f"`{command}`: {nb.name}: {p}"
                                for p in reading_problems(json.loads(nb.read_text(encoding="utf-8"))))
        return out

    import json

    sys.path.insert(0, str(clone))
    from vlamb_nb.notebook.results import reading_problems

    run(first_command(clone / "README.md"), 0)
    for command, expect in examples(clone / "README.md"):
        run(command, expect)
    t0 = time.perf_counter()
    lab_shell = Shell(clone, env)  # outside `unshare -n`, whose 127.0.0.1 this process cannot reach
    lab_shell.prelude = list(shell.prelude)
    lab = lab_answers(lab_shell)
    print(f"  [{time.perf_counter() - t0:5.0f} s] make lab{' (as root)' if os.geteuid() == 0 else ''}: "
          f"{'answers' if lab is None else 'FAILED'}", flush=True)
    if lab is not None:
        problems.append(lab)
    status = subprocess.run(["git", "-C", str(clone), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    changed = [line for line in status if line[3:].startswith("figures/")]
    stray = [line for line in status if line not in changed and line[3:] != ".venv"]
    if stray:
        problems.append("the README's commands left files outside ignored folders (git status):\n"
                        + "\n".join(stray[:20]))
    from vlamb_nb.plots import read_figure_data

    for line in changed:
        state, path = line[:2].strip(), line[3:]
        if state == "D":
            problems.append(f"committed figure removed: {path}")
        elif path.endswith(".png"):
            drawn = read_figure_data(clone / path)
            if drawn is None or drawn.sample:
                problems.append(f"committed figure {path} replaced by one "
                                f"{'that says not what it is drawn from' if drawn is None else 'drawn from ' + drawn.text}")
    print(f"figures/: {len(changed)} file(s) changed by the fresh clone's run" + (":" if changed else ""))
    for line in changed:
        print(f"  {line}")
    if a.keep:
        print(f"kept: {clone}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    for p in problems:
        print(f"FAILED: {p}", file=sys.stderr)
    print(f"fresh clone: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
