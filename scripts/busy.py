"""Run a command while other processes keep every core busy, as on a researcher's laptop that is never idle.

Starts N pure-Python busy loops (default: one per core, at normal priority so they really compete), runs the
command, stops the loops when it ends (or after ``--for`` seconds) and exits with the command's status. Used by
``make test-busy`` to run the JupyterLab browser tests on a loaded machine::

    python scripts/busy.py -- python -m pytest -q tests/test_browser.py
    python scripts/busy.py --procs 4 --for 300 -- python -m pytest -q tests/test_browser.py
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import threading
import time


def spin(parent: int) -> None:
    """Burn one core until terminated: integer arithmetic, no I/O, no sleeping.

    Also ends when ``parent`` is gone (this script killed outright), so no loop is left spinning.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the command; the loops are ended by us
    x = 0
    while os.getppid() == parent:
        for _ in range(1_000_000):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--procs", type=int, default=os.cpu_count() or 1, help="busy loops (default: one per core)")
    p.add_argument("--for", dest="seconds", type=float, default=None,
                   help="stop the loops after this many seconds (default: keep them for the whole command)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = p.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        p.error("no command given (put it after --)")
    if args.procs < 1:
        p.error(f"--procs must be at least 1, got {args.procs}")
    return args


def stop(loops: list[mp.Process]) -> None:
    for proc in loops:
        if proc.is_alive():
            proc.terminate()
    for proc in loops:
        proc.join(timeout=5)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    loops = [mp.Process(target=spin, args=(os.getpid(),), daemon=True, name=f"busy-{k}") for k in range(args.procs)]
    for proc in loops:
        proc.start()
    span = "the whole run" if args.seconds is None else f"the first {args.seconds:g} s"
    print(f"busy: {args.procs} busy loop(s) on {os.cpu_count()} core(s) for {span}: {' '.join(args.command)}",
          file=sys.stderr, flush=True)
    timer = None
    if args.seconds is not None:
        timer = threading.Timer(args.seconds, stop, args=(loops,))
        timer.daemon = True
        timer.start()
    start = time.monotonic()
    try:
        rc = subprocess.call(args.command)
    except KeyboardInterrupt:
        rc = 130
    finally:
        if timer is not None:
            timer.cancel()
        stop(loops)
    print(f"busy: the command exited with {rc} after {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
