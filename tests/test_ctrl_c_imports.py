"""Ctrl-C while a module is being imported: raised once the import is done (``cli.ctrl_c_after_imports``).

Raised inside an extension module's import (pybind11: matplotlib's ft2font, SciPy's HiGHS), a KeyboardInterrupt
becomes that module's ImportError and leaves it half-made, and one raised in the import system's own callbacks is
printed as "Exception ignored" and lost: a command then died with a traceback, or finished as if never stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from procs import interruptible


def _module(tmp_path: Path, name: str) -> None:
    """A module whose import is interrupted half-way (as a terminal's Ctrl-C would) and that then ends its import."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        import os, signal, time
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)  # the signal's handler runs here, inside the import
        DONE = True
    """), encoding="utf-8")


def test_ctrl_c_inside_an_import_is_raised_once_the_import_is_done(tmp_path, monkeypatch):
    from vlamb_nb.cli import ctrl_c_after_imports

    monkeypatch.syspath_prepend(str(tmp_path))
    _module(tmp_path, "interrupted_on_import")
    old = signal.signal(signal.SIGINT, ctrl_c_after_imports)
    try:
        with pytest.raises(KeyboardInterrupt):
            import interrupted_on_import  # noqa: F401
            for _ in range(200):  # the deferred signal arrives within 50 ms of the import's end
                __import__("time").sleep(0.01)
        assert sys.modules["interrupted_on_import"].DONE is True  # whole, never half-made
    finally:
        signal.signal(signal.SIGINT, old)
        sys.modules.pop("interrupted_on_import", None)


def test_without_it_the_import_itself_is_cut(tmp_path):
    """The default handler, for contrast: the interrupt lands inside the import and the module is not made."""
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        try:
            import interrupted_on_import
        except KeyboardInterrupt:
            print("cut", "interrupted_on_import" in sys.modules)
    """)
    _module(tmp_path, "interrupted_on_import")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                         timeout=60, preexec_fn=interruptible).stdout
    assert out.strip() == "cut False"


def test_the_cli_holds_it_while_a_command_runs_and_puts_the_default_back(monkeypatch):
    from vlamb_nb import cli

    seen = []
    monkeypatch.setattr(cli, "_main", lambda argv: seen.append(signal.getsignal(signal.SIGINT)) or 0)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, whatever started pytest
    try:
        assert cli.main([]) == 0
        assert seen == [cli.ctrl_c_after_imports]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # started in the background: Ctrl-C is not the command's
        assert cli.main([]) == 0 and seen[-1] is signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, old)
