"""A new user's first path, run as they run it: a fresh clone with nothing beside it, no network, no data.

Clones this checkout's HEAD into an empty folder (no ``../shared`` beside it, ``VLAMB_SHARED_DATA`` unset, an
empty data home, model cache and Hugging Face cache), then runs the README's first command (``make reproduce``)
there with the project's installed environment shared (``make -o`` keeps it from reinstalling), and then every
command of the README's offline examples (the block after ``<!-- offline-examples -->``), each expected to exit as
its comment says (``exit N``; 0 otherwise). Without network where the machine allows it (``unshare -n`` as root),
else with ``HF_HUB_OFFLINE=1``.

It fails on any failed notebook, any traceback in any output, any command that exits otherwise than the README
says, and any committed figure removed or replaced by one drawn from a generated sample. ``make test`` runs it::

    python scripts/fresh_clone.py [--venv .venv] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = "<!-- offline-examples -->"


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
    bin_dir = venv / "bin"
    if not (bin_dir / "vlamb-nb").exists():
        print(f"fresh_clone: no installed environment at {venv} (run `make install`)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="vlamb-fresh-"))
    clone = work / "nothing-beside" / "vlamb_nb"
    clone.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLAMB_", "HF_", "PYTEST_"))}
    env.update({"VLAMB_DATA": str(work / "data-home"), "VLAMB_CACHE": str(work / "cache"),
                "HF_HOME": str(work / "hf-home"), "PYTHONPATH": str(clone),
                "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"})
    prefix = offline_prefix()
    if not prefix:
        env["HF_HUB_OFFLINE"] = "1"
    print(f"fresh clone of {head} in {clone} ({'no network: unshare -n' if prefix else 'HF_HUB_OFFLINE=1'})",
          flush=True)
    problems: list[str] = []
    runs: list[str] = []

    def run(command: str, expect: int) -> str:
        for i, rid in enumerate(runs):
            command = command.replace(f"runs/<id{'' if i == 0 else '-' + 'abcdefgh'[i]}>", f"runs/{rid}")
        argv = shlex.split(command)
        if argv[0] == "make":  # the installed environment is shared: never reinstalled into it
            argv += [f"VENV={venv}", "-o", str(venv / ".installed")]
        t0 = time.perf_counter()
        proc = subprocess.run(prefix + argv, cwd=clone, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
        out = proc.stdout + proc.stderr
        status = "ok" if proc.returncode == expect else f"EXIT {proc.returncode}, README says {expect}"
        print(f"  [{time.perf_counter() - t0:5.0f} s] {command}: {status}", flush=True)
        if proc.returncode != expect:
            problems.append(f"`{command}` exited {proc.returncode} (README: {expect}):\n{out[-3000:]}")
        if "Traceback (most recent call last)" in out:
            problems.append(f"`{command}` printed a traceback:\n{out[-3000:]}")
        if "KeyboardInterrupt caught in kernel" in out:
            problems.append(f"`{command}` printed kernel-shutdown noise")
        if "reproduce" in argv or argv[0] == "make":
            failed = re.search(r"(\d+) notebook\(s\) ok, (\d+) failed", out)
            if failed is None or failed.group(2) != "0":
                problems.append(f"`{command}`: notebooks failed: {failed.group(0) if failed else out[-2000:]}")
            pages = re.findall(r"runs/([^/\s]+)/report\.html\s*$", proc.stdout, flags=re.MULTILINE)
            if pages:
                runs.append(pages[-1])
        return out

    run("make reproduce", 0)
    for command, expect in examples(clone / "README.md"):
        run(command, expect)
    changed = subprocess.run(["git", "-C", str(clone), "status", "--porcelain", "--", "figures"],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    sys.path.insert(0, str(clone))
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
