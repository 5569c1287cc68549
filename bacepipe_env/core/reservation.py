"""A reservation plan of the future on the pooled GPUs: what the ``deadline-plan`` admission
rule (semantics §15) compares starting a job now with holding it by.

The plan is conservative backfilling (Mu'alem and Feitelson, 2001) on one pool of GPUs, the
cluster's GPUs summed over its regions: the GPUs free now, every running job's GPUs given back
at its predicted finish, and a list of jobs to place, each with a ready time, a GPU count and a
duration. Jobs are taken in earliest-deadline order (those without a deadline after, by
submission), and each is reserved the earliest start at or after its ready time at which its
GPUs are free for its whole duration, never delaying a job reserved before it (a later job may
start earlier, in a gap). A job whose reservation would finish after its deadline goes to the
back instead, as in Moore and Hodgson's rule for one machine: it is counted as a miss, and the
late jobs are reserved after the others have been, the least GPU-time first, for their
tardiness.

What a job needs in the plan is what it would get alone on the idle cluster: ``g =``
``full_gpus`` (``min(K*, what the placement policy gives it on the idle cluster)``), for
``E* x K* / g`` (E* its isolated run time on K* GPUs; the time stretched in proportion when the
cluster offers fewer). The pool ignores regions, GPU memory and bandwidth: a plan says when the
cluster has enough GPUs, not which. It reads only what a scheduler knows: the free GPUs, the
running jobs' predicted finishes, the pending jobs and the calendar of announced jobs, with
their deadlines.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["FreeProfile", "PlanJob", "plan_lateness"]


@dataclass(frozen=True)
class PlanJob:
    """A job to reserve: ready at ``ready`` (s), ``gpus`` GPUs for ``duration`` s, due at
    ``due`` (s, inf without a deadline); ``rank`` breaks deadline ties (its submission)."""

    job_id: int
    ready: float
    gpus: int
    duration: float
    due: float
    rank: float


class FreeProfile:
    """The pool's free GPUs over time, a step function from ``start`` on: ``free[i]`` GPUs are
    free over ``[times[i], times[i + 1])`` (the last step lasts for ever)."""

    __slots__ = ("free", "times")

    def __init__(self, start: float, free_now: int, releases: Iterable[tuple[float, int]]):
        """The pool at ``start`` with ``free_now`` GPUs free, and ``(time, gpus)`` given back
        at each release (releases at or before ``start`` count as free now)."""
        self.times = [start]
        self.free = [free_now]
        for t, g in sorted(releases):
            if t <= self.times[-1]:
                self.free[-1] += g
            else:
                self.times.append(t)
                self.free.append(self.free[-1] + g)

    def earliest(self, ready: float, gpus: int, duration: float) -> float:
        """The earliest start at or after ``ready`` at which ``gpus`` GPUs stay free for
        ``duration``; inf when the pool never has that many."""
        times, free = self.times, self.free
        if gpus > free[-1]:
            return math.inf  # the last step lasts for ever: were it enough, a start exists
        i = max(0, bisect.bisect_right(times, ready) - 1)
        start = max(ready, times[0])
        n = len(times)
        while True:
            # the steps [start, start + duration) covers must all have gpus free
            end = start + duration
            j = i
            while j < n and times[j] < end:
                if free[j] < gpus:
                    break
                j += 1
            else:
                return start
            # step j is short: the window can start no earlier than its end
            i = j + 1
            start = times[i]  # exists: the last step has enough, so j < n - 1

    def reserve(self, start: float, gpus: int, duration: float) -> None:
        """Take ``gpus`` GPUs over ``[start, start + duration)`` (where :meth:`earliest` says
        they are free)."""
        end = start + duration
        i = self._cut(start)
        j = self._cut(end) if end < math.inf else len(self.times)
        for k in range(i, j):
            self.free[k] -= gpus

    def _cut(self, t: float) -> int:
        """The index of the step that starts at ``t``, splitting the step around it if
        needed."""
        times = self.times
        i = bisect.bisect_left(times, t)
        if i < len(times) and times[i] == t:
            return i
        times.insert(i, t)
        self.free.insert(i, self.free[i - 1])
        return i


def plan_lateness(
    profile: FreeProfile, jobs: Sequence[PlanJob]
) -> tuple[int, float, dict[int, float]]:
    """``(misses, total tardiness in s, job id -> planned finish)`` of ``jobs`` reserved on
    ``profile`` (changed in place) by the module's rule: EDF with conservative backfilling,
    a job the plan finds late sent to the back (the least GPU-time first) and counted as a
    miss."""
    order = sorted(jobs, key=lambda p: (p.due, p.rank))
    late: list[PlanJob] = []
    finish: dict[int, float] = {}
    for p in order:
        start = profile.earliest(p.ready, p.gpus, p.duration)
        end = start + p.duration
        if end > p.due:
            late.append(p)
            continue
        profile.reserve(start, p.gpus, p.duration)
        finish[p.job_id] = end
    tardiness = 0.0
    for p in sorted(late, key=lambda p: (p.duration * p.gpus, p.rank)):
        start = profile.earliest(p.ready, p.gpus, p.duration)
        end = start + p.duration
        if start < math.inf:
            profile.reserve(start, p.gpus, p.duration)
        finish[p.job_id] = end
        tardiness += end - p.due
    return len(late), tardiness, finish
