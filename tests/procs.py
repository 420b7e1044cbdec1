"""What a test needs to stop a child process with Ctrl-C whatever started the test run.

A shell that runs a command in the background (``make test &``, a CI runner's script) starts it with SIGINT
ignored, and an ignored signal stays ignored in every child: a Python started that way never raises
KeyboardInterrupt, so a test of Ctrl-C would see its command run to the end. The child gets the default back."""

from __future__ import annotations

import signal


def interruptible() -> None:
    """``preexec_fn`` for ``subprocess.Popen``: SIGINT as a terminal's Ctrl-C delivers it (Python then installs its
    own handler, as in a shell)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
