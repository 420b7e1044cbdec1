"""Run a command while other processes keep every core busy, as on a researcher's laptop that is never idle.

Starts N pure-Python busy loops (default: one per core, at normal priority so they really compete), runs the
command, stops the loops when it ends (or after ``--for`` seconds) and exits with the command's status. Used by
``make test-busy`` to run the JupyterLab browser tests on a loaded machine::

    python scripts/busy.py -- python -m pytest -q tests/test_browser.py
    python scripts/busy.py --procs 4 --for 300 -- python -m pytest -q tests/test_browser.py

``--load "CMD"`` makes real work the load: CMD runs beside the command first (its output kept and printed after
it, so the two never interleave), and the busy loops take over when it ends, so the command is under load all
along; the script then fails if either failed. ``make test`` runs the browser tests beside the fresh-clone job
this way: the time the job takes is no longer added to the suite's.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shlex
import signal
import subprocess
import sys
import tempfile
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
                   help="stop the loops after this many seconds, counted from when they start (with --load: once "
                        "the load ends); default: keep them for the whole command")
    p.add_argument("--load", default=None, metavar="CMD",
                   help="a command that is the load first (the busy loops start when it ends); its output is "
                        "printed after the command's, and the script fails if it fails")
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
    """End the loops that were started (a command that ends before its load never had any)."""
    for proc in loops:
        if proc.is_alive():
            proc.terminate()
    for proc in loops:
        if proc.pid is not None:
            proc.join(timeout=5)


class Load:
    """The real work that loads the machine first (``--load``): started at once, its output kept in a file."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.log = tempfile.TemporaryFile(mode="w+b")
        self.started = time.monotonic()
        self.seconds = 0.0  # how long it ran, once it has ended
        self.proc = subprocess.Popen(shlex.split(command), stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)  # its own group: stopped whole with the script

    def wait(self) -> int:
        rc = self.proc.wait()
        self.seconds = self.seconds or time.monotonic() - self.started
        return rc

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def report(self) -> int:
        """Print what it wrote and how it ended; its exit status."""
        rc = self.wait()
        self.log.seek(0)
        sys.stdout.write(self.log.read().decode("utf-8", "replace"))
        sys.stdout.flush()
        print(f"busy: the load ({self.command}) exited with {rc} after {self.seconds:.0f} s", file=sys.stderr,
              flush=True)
        return rc


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    loops = [mp.Process(target=spin, args=(os.getpid(),), daemon=True, name=f"busy-{k}") for k in range(args.procs)]
    load = Load(args.load) if args.load else None
    ended = threading.Event()  # the command has ended: loops not started yet never start
    timers: list[threading.Timer] = []

    def start_loops() -> None:
        if ended.is_set():
            return
        for proc in loops:
            proc.start()
        if args.seconds is not None:  # bounded from when the loops start
            timers.append(threading.Timer(args.seconds, stop, args=(loops,)))
            timers[-1].daemon = True
            timers[-1].start()

    span = "the whole run" if args.seconds is None else f"{args.seconds:g} s"
    if load is None:
        start_loops()
    else:
        span = (f"the rest of the run, once the load ({args.load}) ends" if args.seconds is None else
                f"{args.seconds:g} s once the load ({args.load}) ends")

        def take_over() -> None:  # the loops keep the machine loaded once the load's work is done
            load.wait()
            start_loops()
        taker = threading.Thread(target=take_over, daemon=True)
        taker.start()
    print(f"busy: {args.procs} busy loop(s) on {os.cpu_count()} core(s) for {span}: {' '.join(args.command)}",
          file=sys.stderr, flush=True)
    start = time.monotonic()
    try:
        rc = subprocess.call(args.command)
    except KeyboardInterrupt:
        rc = 130
        if load is not None:
            load.stop()
    finally:
        ended.set()
        for timer in timers:
            timer.cancel()
    print(f"busy: the command exited with {rc} after {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    load_rc = 0
    if load is not None:
        load_rc = load.report()
        taker.join()
    stop(loops)
    return rc or load_rc


if __name__ == "__main__":
    sys.exit(main())
