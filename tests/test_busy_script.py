"""scripts/busy.py (``make test-busy``): the load really runs beside the command and ends with it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "busy.py"

# the command lists its parent's other children (the busy loops) and how much CPU they have used so far
PROBE = """
import os, sys, time
time.sleep(1.0)
parent = os.getppid()
kids = open(f"/proc/{parent}/task/{parent}/children").read().split()
loops = [k for k in kids if int(k) != os.getpid()]
ticks = [int(open(f"/proc/{k}/stat").read().rsplit(")", 1)[1].split()[11]) for k in loops]
print(" ".join(loops))
print(sum(ticks))
sys.exit(3)
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_loops_burn_cpu_beside_the_command_and_end_with_it():
    out = subprocess.run([sys.executable, str(SCRIPT), "--procs", "2", "--", sys.executable, "-c", PROBE],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 3, out.stderr  # the command's status is the script's
    pids_line, ticks_line = out.stdout.splitlines()[-2:]
    pids = [int(p) for p in pids_line.split()]
    assert len(pids) == 2, out.stdout
    assert int(ticks_line) > 0, "the loops used no CPU while the command ran"
    time.sleep(0.5)
    alive = [p for p in pids if Path(f"/proc/{p}").exists()
             and Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
    assert alive == [], f"busy loops {alive} outlived the command"


def test_without_a_command_it_says_so():
    out = subprocess.run([sys.executable, str(SCRIPT), "--procs", "1"], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ))
    assert out.returncode == 2
    assert "no command given" in out.stderr


# the command lists its parent's children twice: while the load runs, then after it has ended
PROBE_LOAD = """
import os, sys, time
parent = os.getppid()
def kids():
    return [k for k in open(f"/proc/{parent}/task/{parent}/children").read().split() if int(k) != os.getpid()]
time.sleep(0.5)
first = kids()
time.sleep(3.0)
print(len(first), len(kids()))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("load_rc", [0, 4])
def test_a_load_command_runs_first_then_the_loops_and_its_failure_fails_the_script(load_rc):
    load = f"{sys.executable} -c \"import sys, time; print('the load spoke'); time.sleep(1.5); sys.exit({load_rc})\""
    out = subprocess.run([sys.executable, str(SCRIPT), "--procs", "2", "--load", load, "--", sys.executable, "-c",
                          PROBE_LOAD], capture_output=True, text=True, timeout=60)
    assert out.returncode == load_rc, out.stderr  # the command passed: the load's status decides
    during, after = (int(x) for x in out.stdout.splitlines()[0].split())
    assert (during, after) == (1, 2)  # the load alone, then the two loops in its place
    assert out.stdout.splitlines()[1:] == ["the load spoke"]  # its output after the command's, not interleaved
    assert f"the load ({load}) exited with {load_rc}" in out.stderr


# the command watches the other children of its parent until it has seen the loops come and go (or 20 s pass),
# and prints each count it saw in turn and whether they went
PROBE_BOUNDED = """
import os, time
parent = os.getppid()
def kids():
    return len([k for k in open(f"/proc/{parent}/task/{parent}/children").read().split() if int(k) != os.getpid()])
seen, end = [kids()], time.monotonic() + 20
while time.monotonic() < end and not (2 in seen and seen[-1] == 0):
    time.sleep(0.05)
    if (n := kids()) != seen[-1]:
        seen.append(n)
print(" ".join(map(str, seen)), "gone" if 2 in seen and seen[-1] == 0 else "still running")
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_loops_that_take_over_from_a_load_stop_after_for_seconds_counted_from_their_start():
    """``make test`` bounds the loops after the fresh clone: --for counts from when they start, so loops that start
    after a load longer than --for are still stopped (they were left running to the end)."""
    load = f"{sys.executable} -c \"import time; time.sleep(1.5)\""
    out = subprocess.run([sys.executable, str(SCRIPT), "--procs", "2", "--for", "0.5", "--load", load, "--",
                          sys.executable, "-c", PROBE_BOUNDED], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    *counts, state = out.stdout.split()
    assert counts[0] == "1" and "2" in counts and state == "gone", out.stdout  # the load, the two loops, none
    assert "for 0.5 s once the load" in out.stderr


def test_a_command_that_ends_before_its_load_exits_with_its_status_and_starts_no_loop():
    """The browser tests run 2-wide can end before the fresh clone that loads them: the loops that would take over
    never start, the script waits for the load and exits with the command's status (it failed joining loops it
    never started)."""
    load = f"{sys.executable} -c \"import time; time.sleep(2); print('the load spoke')\""
    out = subprocess.run([sys.executable, str(SCRIPT), "--procs", "2", "--for", "5", "--load", load, "--",
                          sys.executable, "-c", "import sys; sys.exit(4)"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 4 and "Traceback" not in out.stderr, out.stderr
    assert out.stdout.splitlines() == ["the load spoke"] and f"the load ({load}) exited with 0" in out.stderr
