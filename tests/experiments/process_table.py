"""Reading the process table (Linux ``/proc``) for the signal tests: which processes of a run
are alive, by session and by parentage. A helper module, not a test module."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: The longest a run's processes may outlive the signal that stops it (issue 25).
BOUND_S = 2.0


def _stats() -> list[tuple[int, str, int, int]]:
    """(pid, state, parent pid, session id) of every process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it ended while we looked
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        found.append((int(entry.name), fields[0], int(fields[1]), int(fields[3])))
    return found


def alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` that still run (a zombie has ended: only its exit status is left)."""
    return {pid for pid, state, _, _ in _stats() if pid in pids and state != "Z"}


def run_processes(leader: int) -> set[int]:
    """The live processes of the run led by ``leader``: its session, and every descendant
    (a process that started its own session, as Ray's daemons may, is still a descendant)."""
    table = [s for s in _stats() if s[1] != "Z"]
    found = {pid for pid, _, _, sid in table if sid == leader}
    grew = True
    while grew:
        more = {pid for pid, _, ppid, _ in table if ppid in found and pid not in found}
        found |= more
        grew = bool(more)
    return found


def start(argv: list[str], workers: int, python: str = sys.executable) -> subprocess.Popen[str]:
    """``python -m bacepipe_env ARGV`` in a new session, once it has ``workers`` processes
    besides itself."""
    proc = subprocess.Popen(
        [python, "-m", "bacepipe_env", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    deadline = time.monotonic() + 90
    while len(run_processes(proc.pid)) < 1 + workers:
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "the workers never started"
        time.sleep(0.05)
    time.sleep(0.3)  # well inside the run
    return proc


def stop(proc: subprocess.Popen[str], sig: int, *, group: bool) -> tuple[int, str, float, set[int]]:
    """Signal the run (its whole process group, as a terminal's Ctrl-C does, or its leader,
    as ``kill PID`` does). Returns its exit status, its stderr, how long until none of its
    processes was alive (at most 10 s is waited), and those still alive then."""
    processes = run_processes(proc.pid)
    (os.killpg if group else os.kill)(proc.pid, sig)
    start_s = time.monotonic()
    _, err = proc.communicate(timeout=30)
    while alive(processes) and time.monotonic() - start_s < 10:
        time.sleep(0.02)
    took = time.monotonic() - start_s
    left = alive(processes)
    if left:  # clean up after a failing test
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    return proc.returncode, err, took, left
