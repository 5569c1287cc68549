"""How a run stops: signals become one exception, and worker processes never outlive it.

- :func:`handle_signals` (the command line's) turns SIGTERM and SIGHUP into
  :class:`Terminated`, a ``KeyboardInterrupt``, so that every ``finally`` and ``with`` block
  that cleans up after Ctrl-C cleans up after ``kill`` too. :func:`exit_status` gives the
  shell's status for each: 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP).
- :func:`worker_pool` is a ``ProcessPoolExecutor`` whose workers ignore the terminal's Ctrl-C
  (their leader handles it), die on SIGTERM without a traceback, and are killed by the kernel
  if the leader dies first (``PR_SET_PDEATHSIG``, Linux). When the block it guards raises
  (an interrupt, an error), the workers are terminated at once (killed after 1 s) instead of
  finishing their tasks.
- :func:`descendants` and :func:`stop_pids` stop what a run leaves behind (Ray's local
  processes after Ctrl-C).

Portability: the process table is read from ``/proc`` on Linux and from ``ps -A -o pid,ppid``
where there is no ``/proc`` (macOS); whether a process still runs, from ``/proc``, else from
``os.kill(pid, 0)`` (a zombie then counts as running until the grace period ends). The
module imports and runs on any system: without ``ps`` either (Windows) no descendant is
found, a signal the system lacks (SIGHUP, SIGKILL on Windows) is left out or replaced by
SIGTERM, and ``PR_SET_PDEATHSIG`` is Linux only.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import multiprocessing.process
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from types import FrameType

__all__ = [
    "Terminated",
    "descendants",
    "exit_status",
    "handle_signals",
    "reclaim_signals",
    "stop_forkserver",
    "stop_pids",
    "stop_processes",
    "worker_init",
    "worker_pool",
]

#: How long a terminated worker has to exit before it is killed (seconds).
GRACE_S = 1.0
_PR_SET_PDEATHSIG = 1
#: Linux's process table; macOS and Windows have none, and a test points this at a missing
#: folder.
_PROC = "/proc"
#: The signals that stop a run besides SIGINT: SIGTERM and SIGHUP, those the system has.
_STOPPING: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)
#: SIGKILL; on Windows, which has none, SIGTERM (``os.kill`` then ends the process at once).
_SIGKILL: signal.Signals = getattr(signal, "SIGKILL", signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_status(exc: BaseException) -> int:
    """The shell's exit status for a run stopped by ``exc``: ``128 + signal``. A library
    that turns the :class:`Terminated` it was interrupted by into a plain
    ``KeyboardInterrupt`` (Ray's ``wait`` does) keeps the status of the signal received."""
    if isinstance(exc, Terminated):
        return 128 + exc.signum
    return 128 + _HANDLING["received"]


def _raise(signum: int, frame: FrameType | None) -> None:
    _HANDLING["received"] = signum
    raise Terminated(signum)


#: How deep handle_signals blocks are nested, and the last signal their handlers received.
_HANDLING = {"depth": 0, "received": int(signal.SIGINT)}


@contextlib.contextmanager
def handle_signals() -> Iterator[None]:
    """Within the block SIGTERM and SIGHUP raise :class:`Terminated` in the main thread
    (SIGINT raises ``KeyboardInterrupt`` as always); the previous handlers come back after."""
    before = {s: signal.signal(s, _raise) for s in _STOPPING}
    _HANDLING["depth"] += 1
    _HANDLING["received"] = signal.SIGINT
    try:
        yield
    finally:
        _HANDLING["depth"] -= 1
        for s, handler in before.items():
            signal.signal(s, handler)


def reclaim_signals() -> None:
    """Inside :func:`handle_signals`, put its handlers back after a library replaced them
    (Ray's driver installs its own SIGTERM handler, which aborts the process)."""
    if _HANDLING["depth"]:
        for s in _STOPPING:
            signal.signal(s, _raise)
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def descendants(pid: int | None = None) -> set[int]:
    """Every live descendant of ``pid`` (default: this process), from ``/proc`` (Linux), else
    from ``ps`` (macOS); an empty set where neither exists (Windows)."""
    root = os.getpid() if pid is None else pid
    parents = _parents_from_proc()
    if parents is None:
        parents = _parents_from_ps()
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in (parents or {}).get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _parents_from_proc() -> dict[int, list[int]] | None:
    """The children of every parent process, from ``/proc``; None where it cannot be read."""
    try:
        entries = list(os.scandir(_PROC))
    except OSError:
        return None
    parents: dict[int, list[int]] = {}
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            with open(f"{_PROC}/{entry.name}/stat") as fh:
                stat = fh.read()
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):  # it ended while we looked
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    return parents


def _parents_from_ps() -> dict[int, list[int]] | None:
    """The children of every parent process, from POSIX ``ps`` (itself left out); None where
    there is no ``ps`` or it fails."""
    if os.name != "posix":
        return None
    try:
        ps = subprocess.Popen(
            ["ps", "-A", "-o", "pid=", "-o", "ppid="],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
    except (OSError, subprocess.SubprocessError):  # no ps
        return None
    try:
        out, _ = ps.communicate(timeout=5.0)
    except subprocess.TimeoutExpired:
        return None
    finally:
        if ps.returncode is None:  # it hung, or we were interrupted
            ps.kill()
            ps.communicate()
    if ps.returncode != 0:
        return None
    parents: dict[int, list[int]] = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
            child = int(fields[0])
            if child != ps.pid:
                parents.setdefault(int(fields[1]), []).append(child)
    return parents


def stop_pids(pids: Iterable[int], grace_s: float = GRACE_S) -> None:
    """SIGTERM each of ``pids`` still alive, then SIGKILL those alive after ``grace_s``
    (0: SIGKILL at once, for processes already asked to stop); a process that has ended,
    or whose pid is not ours to signal, is skipped."""
    pending = set(pids)
    for sig in (signal.SIGTERM, _SIGKILL) if grace_s > 0 else (_SIGKILL,):
        for pid in list(pending):
            try:
                os.kill(pid, sig)
            except OSError:  # gone already
                pending.discard(pid)
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else GRACE_S)
        while pending and time.monotonic() < deadline:
            pending = {p for p in pending if _running(p)}
            time.sleep(0.02)
        if not pending:
            return


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has ended; its parent has yet to collect it). Without
    ``/proc``, whether it exists (a zombie included); on Windows, never (``os.kill`` has
    ended it at once, and its signal 0 would be a Ctrl-C)."""
    try:
        with open(f"{_PROC}/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        if os.path.isdir(f"{_PROC}/self") or os.name != "posix":
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:  # someone else's: it exists
            return True
        return True
    return stat[stat.rindex(")") + 2] != "Z"


def worker_init() -> None:
    """A worker process's set-up: Ctrl-C is its leader's to handle, SIGTERM and SIGHUP end
    it at once, and it dies with its leader."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for s in _STOPPING:
        signal.signal(s, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Terminate ``pool``'s workers now, kill those still alive after :data:`GRACE_S`."""
    # the executor has no public way to reach its processes; _processes is stable since 3.2
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    stop_processes(procs)


def stop_forkserver() -> None:
    """Stop multiprocessing's fork server, if this process started one (SubprocVecEnv's
    workers come from it): left alone it tears down its copy of torch for about 2 s after its
    leader has gone, and holds the resource tracker that long."""
    from multiprocessing import forkserver

    # no public handle on the server; its pid has been this attribute since Python 3.4
    pid = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    if pid:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)


def stop_processes(procs: Iterable[multiprocessing.process.BaseProcess]) -> None:
    """Terminate ``procs`` (multiprocessing processes: a pool's, SubprocVecEnv's) now and kill
    those still alive after :data:`GRACE_S`."""
    procs = list(procs)
    for proc in procs:
        with contextlib.suppress(OSError):
            proc.terminate()
    deadline = time.monotonic() + GRACE_S
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            with contextlib.suppress(OSError):
                proc.kill()
            proc.join(GRACE_S)


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A ``ProcessPoolExecutor`` of ``workers`` processes set up by :func:`worker_init`; if
    the block raises (Ctrl-C, SIGTERM, an error), its workers stop within about a second."""
    pool = ProcessPoolExecutor(max_workers=workers, initializer=worker_init)
    try:
        yield pool
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown(wait=True)
