"""What a preemption would let start, kept across the simulation's versions (semantics §3c).

A :class:`~bacepipe_env.core.preemption.PreemptionView` is made afresh at every version of the
state (every event, start, end and preemption bumps it), and its beneficiaries used to be
worked out afresh too: per victim, per pending job shape, a placement on the cluster without the
jobs being preempted and the victim, and one without the victim's GPUs (a shape that could
start anyway helps no more). Most versions change little of that: a wake-up or an arrival
leaves the GPUs and bandwidth as they were, a preemption with a checkpoint leaves the pending
queue. A :class:`HelpedMemo` keeps each part keyed on exactly what it depends on:

- per victim, its freed state and, per pending job shape (its earliest pending job), the
  placement it would get there; per shape, whether it could start without a preemption; and
  per victim its beneficiaries: valid while the cluster's books are unchanged (the ledger's
  ``epoch``: every booking, release, region and link change bumps it; a running attempt's
  placement and bookings change only with one), the jobs already being preempted are the same,
  and, unless the placement policy is pure (its answer a function of the free GPUs, the
  residual bandwidth and the job's shape), the version too;
- per set of helped shapes (each with its placement's GPUs and iteration time), the
  beneficiaries in submission order, and the queue's minima: valid while the pending queue is
  unchanged (the queue's ``epoch``: every arrival, start and return to the queue bumps it; a
  pending job's iterations left, attempts and attained service change only while it runs).

Every answer equals, field for field and in the same order, what a fresh computation gives
(``tests/core/test_preemption_incremental.py`` compares them with a fresh simulator's at every
decision of whole episodes). The memo belongs to one simulator: a clone or a reset starts a new
one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from .attempts import AttemptBook, Running
from .faults import FaultModel
from .placement import Placement
from .preemption import Beneficiary, RunningJob
from .views import Release

__all__ = ["HelpedMemo", "beneficiary", "running_row"]

_MISSING: Any = object()


def running_row(
    job_id: int, run: Running, now: float, rec: FaultModel, book: AttemptBook
) -> RunningJob:
    """What a preemption rule reads of one running job at ``now`` (:class:`RunningJob`)."""
    n = run.placement.n_gpus
    cs = run.compute_start
    stop = now if run.preempted_at is None else run.preempted_at
    since = 0.0
    if stop > cs:
        ci = rec.checkpoint_interval_s
        since = (stop - cs) - math.floor((stop - cs) / ci) * ci
    remaining = max(0.0, run.finish - now)
    count = book.n_preempted[job_id]
    preemptible = (
        run.preempted_at is None
        and count < rec.max_preemptions
        and remaining > (rec.preempt_checkpoint_s or 0.0)
    )
    attained = book.attained[job_id] + n * (now - run.start)
    row = object.__new__(RunningJob)  # a frozen dataclass's __init__ costs more than the row
    row.__dict__.update(
        job_id=job_id,
        gpus=n,
        remaining=remaining,
        attained=attained,
        run=now - run.start,
        start=run.start,
        since_checkpoint=since,
        preemptions=count,
        preemptible=preemptible,
    )
    return row


def beneficiary(job_id: int, remaining: float, attained: float, gpus: int) -> Beneficiary:
    """``Beneficiary(job_id, remaining, attained, gpus)``, equal to it in every way (fields,
    equality, hash, pickling), without the frozen dataclass's ``__init__``."""
    b = object.__new__(Beneficiary)
    b.__dict__.update(job_id=job_id, remaining=remaining, attained=attained, gpus=gpus)
    return b


class HelpedMemo:
    """One simulator's beneficiaries and queue minima, kept while what they depend on stands
    (see the module's docstring). :meth:`sync` drops what a change made stale; the other
    methods answer through the simulator ``sim`` they are given."""

    __slots__ = (
        "base",
        "groups",
        "ledger_key",
        "low",
        "placed",
        "queue_key",
        "results",
        "starts",
        "victims",
    )

    def __init__(self) -> None:
        self.ledger_key: Hashable = None
        self.queue_key = -1
        self.base: Release | None = None  # the cluster once the draining jobs have left
        self.starts: dict[int, bool] = {}  # a shape's first job -> it can start on ``base``
        # victim -> the cluster once it has left too, and per shape's first job its placement
        self.placed: dict[int, tuple[Release, dict[int, Placement | None]]] = {}
        self.victims: dict[int, tuple[Beneficiary, ...]] = {}  # victim -> its beneficiaries
        # the pending jobs per shape (a shape's first job -> its jobs), in submission order
        self.groups: list[tuple[int, list[int]]] | None = None
        # ((first job, GPUs, iteration time) of every helped shape) -> the beneficiaries
        self.results: dict[tuple[tuple[int, int, float], ...], tuple[Beneficiary, ...]] = {}
        self.low: tuple[float, float] | None = None  # the queue's minima

    def sync(self, ledger_key: Hashable, queue_key: int) -> None:
        """Keep what still holds at ``ledger_key`` (the ledger's epoch, the draining jobs, the
        version for an impure policy) and ``queue_key`` (the queue's epoch)."""
        if ledger_key != self.ledger_key:
            self.ledger_key = ledger_key
            self.base = None
            self.starts, self.placed, self.victims = {}, {}, {}
        if queue_key != self.queue_key:
            self.queue_key = queue_key
            self.groups, self.low = None, None
            self.results, self.victims = {}, {}

    def shape_groups(
        self, pending: Iterable[int], shape: Callable[[int], Hashable]
    ) -> list[tuple[int, list[int]]]:
        """The pending jobs by placement shape, in order of first appearance, each shape's
        jobs in submission order, keyed by its first job."""
        if self.groups is None:
            by_shape: dict[Hashable, list[int]] = {}
            for j in pending:
                key = shape(j)
                jobs = by_shape.get(key)
                if jobs is None:
                    by_shape[key] = [j]
                else:
                    jobs.append(j)
            self.groups = [(jobs[0], jobs) for jobs in by_shape.values()]
        return self.groups

    def helped(
        self,
        victim: int,
        sim: Any,
        draining: frozenset[int],
        now: float,
    ) -> tuple[Beneficiary, ...]:
        """The pending jobs that could start if running job ``victim`` were preempted now
        and cannot start without it, in submission order (``sim``: the simulation state)."""
        got = self.victims.get(victim)
        if got is not None:
            return got
        entry = self.placed.get(victim)
        if entry is None:
            entry = self.placed[victim] = (sim._state_without(draining | {victim}, now), {})
        state, placed = entry
        place, helped = sim.placement_on, []
        # A pure policy's answers have no side effect, so its cheap checks come first: a shape
        # that starts without the preemption is asked once per state of the books, not once
        # per victim, and one whose smallest memory floor exceeds every GPU the preemption
        # would leave free gets no placement (constraint 5; the simulator's candidates are
        # filtered alike). Any other policy is asked exactly as before, in the same order.
        pure = sim.placement_policy.pure
        free = sum(state.free) if pure else 0
        need = sim._queue.min_floor
        for first, _ in self.shape_groups(sim._queue.pending, sim.placement_shape):
            if pure and (need[first] > free or self._starts(first, sim, draining, now)):
                continue
            p = placed.get(first, _MISSING)
            if p is _MISSING:
                p = placed[first] = place(first, state)
            if p is None or (not pure and self._starts(first, sim, draining, now)):
                continue
            helped.append((first, p.n_gpus, sim.iteration_time(first, p)))
        key = tuple(helped)
        got = self.results.get(key)
        if got is None:
            got = self.results[key] = self._build(key, sim)
        self.victims[victim] = got
        return got

    def _starts(self, first: int, sim: Any, draining: frozenset[int], now: float) -> bool:
        """Whether the jobs of the shape whose first job is ``first`` can start on the cluster
        once the draining jobs have left (without the preemption)."""
        can = self.starts.get(first)
        if can is None:
            if self.base is None:
                self.base = sim._state_without(set(draining), now)
            can = self.starts[first] = sim.placement_on(first, self.base) is not None
        return can

    def _build(self, key: tuple[tuple[int, int, float], ...], sim: Any) -> tuple[Beneficiary, ...]:
        """The beneficiaries of the helped shapes ``key``: each shape's jobs on its
        placement, in submission order."""
        book, restart = sim._book, sim._recovery.restart_s
        iters, attempts, attained = book.iters_left, book.attempts, book.attained
        jobs_of = dict(self.groups or ())
        if len(key) == 1:  # one shape: its jobs are in submission order already
            first, n, t_iter = key[0]
            jobs: Iterable[int] = jobs_of[first]
            on = dict.fromkeys(jobs_of[first], (n, t_iter))
        else:
            on = {j: (n, t_iter) for first, n, t_iter in key for j in jobs_of[first]}
            jobs = sorted(on, key=sim._queue.rank.__getitem__)  # submission order
        out = []
        for j in jobs:  # a shape's jobs get one placement on a state
            n, t_iter = on[j]
            remaining = iters[j] * t_iter + (restart if j in attempts else 0.0)
            out.append(beneficiary(j, remaining, attained[j], n))
        return tuple(out)

    def minima(self, sim: Any) -> tuple[float, float]:
        """``(a lower bound on every pending job's remaining time, the least GPU-seconds a
        pending job has held)``, inf with none pending (what ``sim._least_remaining`` and a
        pass over the queue give, the same floats)."""
        if self.low is None:
            pending, least, attained = sim._queue.pending, sim._least_remaining, sim._book.attained
            lower = min((least(j) for j in pending), default=math.inf)
            self.low = (lower, min((attained[j] for j in pending), default=math.inf))
        return self.low
