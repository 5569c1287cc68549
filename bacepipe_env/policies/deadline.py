"""Deadline orderings (semantics §15): earliest deadline first, least slack first and EDF with
triage, each read from the :class:`QueueSnapshot` (``due``, ``ideal_execution``) so that the
simulator and a heuristic agent on the environment decide alike, bit for bit.

The prediction a job's slack and triage use is its isolated run time E* (the execution on K*
GPUs in one region, as the scheduler estimates it), not its execution on the placement the
policy would give it now. E* is known to the simulator and to the environment's snapshot
alike, costs nothing to read, and is the least any placement takes (a single pipeline, the
paper's jobs), so a job it finds late is late whatever the placement; the placement now would
depend on the order being decided (placing one job changes the next one's GPUs) and cost a
Pathfinder run per candidate and decision. Since "now" is the same for every candidate, least
slack first is the order of the latest start times ``due - E*``.

A job without a deadline is due at infinity: it comes after every job with one, by
submission, so with no deadlines at all each ordering here is FCFS.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..core.snapshot import QueueSnapshot
from ..core.views import SchedulerView
from .base import Ordering

__all__ = ["EDFOrdering", "EDFTriageOrdering", "LSFOrdering"]

Key = Callable[[float, float, float, float], tuple[float, float]]


def _columns(queue: QueueSnapshot) -> tuple[Sequence[float], Sequence[float]]:
    """The snapshot's ``(due, ideal_execution)``; a snapshot built by hand without them has
    no deadlines (every job due at infinity)."""
    n = len(queue)
    due = queue.due or (math.inf,) * n
    ideal = queue.ideal_execution or (0.0,) * n
    return due, ideal


class _DeadlineOrdering(Ordering):
    """An ordering by ``key(due, E*, E(1), now)``, ties to the earlier submission (slots and
    candidates come in submission order, and ``min`` keeps the first of equal keys)."""

    @staticmethod
    def key(due: float, ideal: float, e1: float, now: float) -> tuple[float, float]:
        """The sort key of a job due at ``due`` with E* ``ideal`` and E(1) ``e1`` at ``now``."""
        raise NotImplementedError

    def pick(self, queue: QueueSnapshot, legal: Sequence[int]) -> int:
        """The legal slot of the smallest key."""
        due, ideal = _columns(queue)
        e1, now, key = queue.single_gpu_exec, queue.time, self.key
        return min(legal, key=lambda i: key(due[i], ideal[i], e1[i], now))

    def choose(self, view: SchedulerView, candidates: Sequence[int]) -> int:
        """:meth:`pick`'s choice read from the profiles and the scenario's deadlines, without
        building a snapshot: the same numbers, so the same job."""
        if len(candidates) == 1:
            return candidates[0]
        scenario = getattr(view, "scenario", None)
        deadlines = {} if scenario is None else scenario.deadlines
        now, key, inf = view.time, self.key, math.inf

        def of(j: int) -> tuple[float, float]:
            p = view.profile(j)
            return key(deadlines.get(j, inf), p.ideal_execution, p.single_gpu_exec, now)

        return min(candidates, key=of)


class EDFOrdering(_DeadlineOrdering):
    """Earliest deadline first: the candidate due soonest; jobs without a deadline after all
    with one; ties (and the jobs without) by submission, so with no deadlines it is FCFS."""

    name = "edf"

    @staticmethod
    def key(due: float, ideal: float, e1: float, now: float) -> tuple[float, float]:
        """The deadline."""
        return due, 0.0


class LSFOrdering(_DeadlineOrdering):
    """Least slack first: the candidate with the least ``due - now - E*`` (E* its isolated run
    time: the module's docstring says why not the placement now); jobs without a deadline
    last, by submission, so with no deadlines it is FCFS."""

    name = "lsf"

    @staticmethod
    def key(due: float, ideal: float, e1: float, now: float) -> tuple[float, float]:
        """The latest start time ``due - E*`` (the slack plus ``now``, which all share)."""
        return due - ideal, 0.0


class EDFTriageOrdering(_DeadlineOrdering):
    """EDF among the jobs that can still make their deadline, then the jobs without one (by
    submission), then the hopeless ones, shortest E(1) first (SJF: they are late anyway, and
    finishing the short ones first lowers their summed tardiness most). A job is hopeless when
    ``now + E* > due``: even started now on its best placement it would be late. With no
    deadlines it is FCFS."""

    name = "edf-triage"

    @staticmethod
    def key(due: float, ideal: float, e1: float, now: float) -> tuple[float, float]:
        """(0, due) on time, (1, 0) without a deadline, (2, E(1)) hopeless."""
        if due == math.inf:
            return 1.0, 0.0
        if now + ideal > due:
            return 2.0, e1
        return 0.0, due
