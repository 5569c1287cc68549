"""Running attempts and what each job's attempts have done (semantics §3c and §11).

An attempt is one run of a job on one placement. Without faults or preemption a job has one
attempt, from its start to its completion; with them an attempt can end early (a failure, an
outage, a preemption), change speed (a link change) and be followed by another, which resumes
from the job's last checkpoint after a restart. :class:`Running` is an attempt in progress;
:class:`AttemptBook` keeps, per job, the iterations left and its closed attempts' totals.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .faults import Attempt
from .perf import JobProfile
from .placement import Placement

__all__ = ["MAX_ATTEMPTS", "AttemptBook", "Running"]

#: A job interrupted this many times without finishing ends the run with a SimulationError:
#: its failures outpace its checkpoints, and it would restart forever.
MAX_ATTEMPTS = 10_000


@dataclass
class Running:
    """A running attempt: its placement, its times (s), its reservation on each link of its
    path (bytes/s) and the rates its cost and emissions accrue at."""

    placement: Placement
    start: float
    finish: float
    execution: float
    reserved: float
    cost_rate: float  # $/s while running, Eq. (4) per second (flat prices)
    carbon_rate: float  # kg/s while running (flat carbon)
    egress: float  # $ of its cross-region traffic over the whole execution
    price_sum: float  # sum_r n_r P_r, $/kWh (flat prices)
    carbon_sum: float  # sum_r n_r c_r, g/kWh (flat carbon)
    token: int = 0  # the sequence number of its live completion event
    # With faults (semantics §11) or preemption (semantics §3c) only:
    attempt_id: int = 0
    restart: float = 0.0  # s restoring a checkpoint before computing
    iters: float = 0.0  # iterations left when the attempt started
    # (time, iterations left then, seconds per iteration from then on), from compute start
    segments: list[tuple[float, float, float]] | None = None
    # preempted at this time, writing its checkpoint until ``finish`` (None: not preempted)
    preempted_at: float | None = None
    wake: int = -1  # the sequence number of its live wake-up event (preemption only)
    # what it books on each directed link, as the ledger holds it: (u, v, bytes/s)
    bookings: tuple[tuple[int, int, float], ...] = ()

    def copy(self) -> Running:
        """An independent copy (its segments list too)."""
        out = copy.copy(self)
        if self.segments is not None:
            out.segments = list(self.segments)
        return out

    @property
    def compute_start(self) -> float:
        """When the attempt starts computing (after its restart)."""
        return self.start + self.restart

    def iters_left(self, t: float) -> float:
        """Iterations still to do at time ``t`` (faults and preemption only); a preempted
        attempt computes nothing after its preemption."""
        assert self.segments is not None
        if self.preempted_at is not None and t > self.preempted_at:
            t = self.preempted_at
        if t <= self.compute_start:
            return self.iters
        t0, left, t_iter = self.segments[0]
        for seg in self.segments:
            if seg[0] <= t:
                t0, left, t_iter = seg
        return max(0.0, left - (t - t0) / t_iter)


class AttemptBook:
    """Per job: the iterations it has left (from its last checkpoint), its closed attempts,
    their totals (cost, carbon, egress, wasted GPU-seconds, wasted cost), its preemptions and
    the GPU-seconds it has held (its attained service). Kept only when attempts can end early
    or change speed (faults or preemption)."""

    __slots__ = ("attained", "attempts", "iters_left", "n_preempted", "totals")

    def __init__(self, profiles: Mapping[int, JobProfile], jobs: Iterable[int]) -> None:
        jobs = tuple(jobs)
        self.iters_left = {j: float(p.iterations) for j, p in profiles.items()}
        # only the jobs that have run: their attempts, and their cost, carbon, egress,
        # wasted GPU-s and wasted cost over them
        self.attempts: dict[int, list[Attempt]] = {}
        self.totals: dict[int, list[float]] = {}
        self.n_preempted: dict[int, int] = dict.fromkeys(jobs, 0)
        self.attained: dict[int, float] = dict.fromkeys(jobs, 0.0)  # closed attempts

    def copy(self, done: Mapping[int, object]) -> AttemptBook:
        """An independent copy; the attempts and totals of a ``done`` job (a finished one)
        never change again and are shared."""
        new = object.__new__(AttemptBook)
        new.iters_left = dict(self.iters_left)
        new.attempts = {j: a if j in done else list(a) for j, a in self.attempts.items()}
        new.totals = {j: t if j in done else list(t) for j, t in self.totals.items()}
        new.n_preempted = dict(self.n_preempted)
        new.attained = dict(self.attained)
        return new

    def has_run(self, job_id: int) -> bool:
        """Whether the job has had an attempt (its next one restarts from a checkpoint)."""
        return job_id in self.attempts
