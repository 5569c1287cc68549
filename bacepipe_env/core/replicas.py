"""Data-parallel copies of a job's pipeline (semantics §3e) and their elasticity (§3f): what a
simulation reads of them. A job with ``d`` copies runs ``d`` pipelines of the same ``L`` stages,
each placed like one pipeline by the placement policy; :class:`ReplicaReads` places a job's
extra copies, works out what its copies book on the links, and builds the
:class:`~bacepipe_env.core.elasticity.ElasticView` an elasticity rule decides from.
:class:`ReplicaState` is the per-simulation part: the rule, each job's range of copies and when
each job was last resized. The timing is :func:`~bacepipe_env.core.perf.job_iteration_time`'s.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import SimulationError, choices
from .accounting import Accounts
from .attempts import Running
from .caches import Caches
from .cluster import Cluster
from .elasticity import ElasticityRule, ElasticJob, ElasticView, Resize
from .faults import FaultModel
from .ledger import Ledger
from .perf import JobProfile, allreduce_link_bytes, job_iteration_time
from .placement import Placement
from .queue import PendingQueue
from .views import PlacementPolicy, Release, SchedulerView, StateView

__all__ = ["ReplicaReads", "ReplicaState"]


class ReplicaState:
    """One simulation's data-parallel settings and bookkeeping: the elasticity ``rule`` (and
    whether it is ``on``: not ``none``), each job's ``(min, max)`` copies (``ranges``; a job not
    listed runs one pipeline), when each job was last resized, and whether the rule was asked
    at the end of this scheduling pass."""

    __slots__ = (
        "asked",
        "later_wakes",
        "max_grows",
        "min_run_s",
        "n_grown",
        "on",
        "ranges",
        "resized",
        "rule",
        "step",
    )

    def __init__(self, rule: ElasticityRule, ranges: dict[int, tuple[int, int]]) -> None:
        self.rule = rule
        self.on = rule.name != "none"
        self.ranges = ranges  # shared with the scenario: never changed
        self.resized: dict[int, float] = {}  # job -> when it was last resized
        self.step: dict[int, int] = {}  # job -> its last resize: +1 grew, -1 shrank
        self.n_grown: dict[int, int] = {}  # job -> the times it grew so far
        self.asked = False
        # how long a job runs before the rule may resize it: a wake-up then
        self.min_run_s = float(getattr(rule, "min_run_s", 0.0)) if self.on else 0.0
        # the most grows of one job (semantics §3f): as a job shrinks only after it grew or
        # from its start count, its resizes are at most 2 max_grows + its range of copies
        self.max_grows = int(getattr(rule, "max_grows", 0)) if self.on else 0
        # wake-ups after an attempt's first, when preemption waits another time (simulator's)
        self.later_wakes: tuple[float, ...] = ()

    def reset(self) -> None:
        """Back to time zero: no job resized, the rule not asked."""
        self.resized = {}
        self.step = {}
        self.n_grown = {}
        self.asked = False

    def note(self, job_id: int, step: int, now: float) -> None:
        """Book a resize of ``job_id`` at ``now``: ``step`` +1 grew, -1 shrank."""
        self.resized[job_id] = now
        self.step[job_id] = step
        if step > 0:
            self.n_grown[job_id] = self.n_grown.get(job_id, 0) + 1

    def copy(self) -> ReplicaState:
        """An independent copy (the rule and the ranges shared)."""
        new = ReplicaState.__new__(ReplicaState)
        new.rule, new.on, new.ranges = self.rule, self.on, self.ranges
        new.min_run_s, new.later_wakes = self.min_run_s, self.later_wakes
        new.max_grows = self.max_grows
        new.resized = dict(self.resized)
        new.step = dict(self.step)
        new.n_grown = dict(self.n_grown)
        new.asked = self.asked
        return new


class ReplicaReads:
    """What :class:`~bacepipe_env.core.state.SimulationState` reads of data-parallel copies,
    and :meth:`resize`, the one change it makes to them (a
    :class:`~bacepipe_env.core.simulator.Simulator`'s), on the state's own fields and methods
    (declared here for the type checker)."""

    _replicas: ReplicaState
    _profiles: dict[int, JobProfile]
    _world_profiles: dict[int, JobProfile]
    _two_way: bool
    _ledger: Ledger
    _cluster: Cluster
    _time: float
    _running: dict[int, Running]
    _recovery: FaultModel
    _queue: PendingQueue
    _caches: Caches
    faults: FaultModel | None
    placement_policy: PlacementPolicy

    if TYPE_CHECKING:

        @property
        def free_gpus(self) -> tuple[int, ...]: ...
        @property
        def residual_rows(self) -> tuple[tuple[float, ...], ...]: ...
        def fits(self, job_id: int, placement: Placement) -> bool: ...
        def world_links_fit(
            self, job_id: int, placement: Placement, residual: tuple[tuple[float, ...], ...]
        ) -> bool: ...
        def world_execution_time(self, job_id: int, placement: Placement) -> float: ...
        def placement_on(self, job_id: int, state: Release) -> Placement | None: ...
        def placement_shape(self, job_id: int) -> tuple[object, ...]: ...
        def next_release(self) -> Release | None: ...
        def _state_without(self, done: set[int], t: float) -> Release: ...
        def _release(self, job_id: int, run: Running) -> None: ...
        def _close_attempt(self, job_id: int, run: Running, end: float, outcome: str) -> None: ...
        def _start(
            self, job_id: int, p: Placement, restart: float | None = None, queued: bool = True
        ) -> None: ...

        _accounts: Accounts
        _preempt_asked: bool

    def bookings(self, job_id: int, placement: Placement) -> dict[tuple[int, int], float]:
        """What a start of ``job_id`` on ``placement`` books on each link (bytes/s), by the
        world's model: ``b(L)`` on every link of its path (semantics §4). Data-parallel copies
        (semantics §3e) book ``b(L)`` per pipeline that crosses a link and the all-reduce's
        average rate, its bytes per iteration over the iteration time; under the physical
        model, whose bookings hold both ways, per pair of regions: the pipelines of either
        direction add up and the all-reduce books its busier direction."""
        prof = self._world_profiles[job_id]
        if not placement.replicas:
            if len(placement.path) < 2:
                return {}
            need = prof.min_bandwidth(placement.n_gpus)
            return dict.fromkeys(placement.links, need)
        two_way = self._two_way

        def key(u: int, v: int) -> tuple[int, int]:
            return (min(u, v), max(u, v)) if two_way else (u, v)

        need = prof.min_bandwidth(placement.stages)
        out: dict[tuple[int, int], float] = {}
        for u, v in placement.links:
            out[key(u, v)] = out.get(key(u, v), 0.0) + need
        link_bytes = allreduce_link_bytes(prof, placement)
        if link_bytes:
            rows = None if self.faults is None else self._ledger.capacity_now
            t_iter = job_iteration_time(prof, self._cluster, placement, rows)
            ring: dict[tuple[int, int], float] = {}
            for (u, v), n_bytes in link_bytes:
                rate = n_bytes / t_iter
                k = key(u, v)
                ring[k] = max(ring.get(k, 0.0), rate) if two_way else ring.get(k, 0.0) + rate
            for k, rate in ring.items():
                out[k] = out.get(k, 0.0) + rate
        return out

    def replica_range(self, job_id: int) -> tuple[int, int]:
        """``(min, max)`` data-parallel copies of its pipeline ``job_id`` may run
        (semantics §3e); ``(1, 1)`` in a world without replicas."""
        return self._replicas.ranges.get(job_id, (1, 1))

    def replicate(
        self,
        job_id: int,
        head: Placement,
        replicas: int,
        free: tuple[int, ...] | None = None,
        residual: tuple[tuple[float, ...], ...] | None = None,
    ) -> Placement | None:
        """``head`` with ``replicas - 1`` more copies of its pipeline (semantics §3e), each
        placed by the placement policy with exactly ``head``'s L stages on what the earlier
        copies leave of ``free`` and ``residual`` (default: now), or None when a copy gets
        no such placement, does not fit in memory, or the copies' bookings together do not
        fit the links."""
        if replicas <= 1:
            return head
        free = self.free_gpus if free is None else free
        residual = self.residual_rows if residual is None else residual
        return self._add_copies(job_id, (head,), replicas - 1, free, residual, residual)

    def _add_copies(
        self,
        job_id: int,
        copies: tuple[Placement, ...],
        more: int,
        free: tuple[int, ...],
        residual: tuple[tuple[float, ...], ...],
        check_on: tuple[tuple[float, ...], ...],
    ) -> Placement | None:
        """``copies`` and ``more`` new copies of the job's pipeline, each placed by the placement
        policy with exactly their L stages on what ``free`` and ``residual`` leave once the
        earlier new ones hold theirs (``copies`` already hold theirs there unless they are
        the first one, ``residual is check_on``), or None; the whole must fit in memory and
        its bookings on ``check_on``."""
        stages = copies[0].stages
        shaped = dataclasses.replace(self._profiles[job_id], k_star=stages)
        need = self._world_profiles[job_id].min_bandwidth(stages)
        two_way = self._two_way
        if residual is check_on:  # a new job: its first copy is not booked yet
            free, residual = _booked(free, residual, copies[0], need, two_way)
        got = list(copies)
        for _ in range(more):
            view = _CopyView(self, self._time, free, residual, shaped)  # type: ignore[arg-type]
            p = self.placement_policy.place(view, job_id)
            if p is None or not p.path or p.stages != stages or not self.fits(job_id, p):
                return None
            got.append(p)
            free, residual = _booked(free, residual, p, need, two_way)
        out = Placement.replicated(got)
        return out if self.world_links_fit(job_id, out, check_on) else None

    def resized_placement(self, job_id: int, replicas: int) -> Placement | None:
        """Running job ``job_id``'s placement with ``replicas`` copies of its pipeline
        (semantics §3f): its first ``replicas`` copies, or all of them and new ones placed on
        the free GPUs now; None when a new copy gets no placement or the bookings do not fit
        the links once the job's own are given back."""
        p = self._running[job_id].placement
        without = self._state_without({job_id}, self._time).residual
        if replicas <= p.n_replicas:
            out = Placement.replicated(p.pipelines[:replicas])
            return out if self.world_links_fit(job_id, out, without) else None
        more = replicas - p.n_replicas
        return self._add_copies(
            job_id, p.pipelines, more, self.free_gpus, self.residual_rows, without
        )

    def elastic_view(self) -> ElasticView:
        """What an elasticity rule decides from now (see
        :class:`~bacepipe_env.core.elasticity.ElasticView`): every running job, whether a job
        is pending, the free GPUs, and, computed when asked, what one more or one fewer copy
        would give each running job (semantics §3f). A shrink lists the pending jobs the
        admission rule would start at this instant once it is done (worked out on a copy of
        the simulation that makes it); a grow is None when it would take GPUs or bandwidth a
        pending job could start on now (the placement policy's answer for one changes)."""
        now, rec, reps = self._time, self._recovery, self._replicas
        cost = (rec.preempt_checkpoint_s or 0.0) + rec.restart_s  # a resize's checkpoint-restart
        rows = []
        for j, run in self._running.items():
            low, high = self.replica_range(j)
            p = run.placement
            last = reps.resized.get(j)
            rows.append(
                ElasticJob(
                    j,
                    p.n_replicas,
                    low,
                    high,
                    p.stages,
                    max(0.0, run.finish - now),
                    now - run.start,
                    run.preempted_at is None and last != now and low < high,
                    reps.step.get(j, 0),
                    math.inf if last is None else now - last,
                    reps.n_grown.get(j, 0) < reps.max_grows,
                )
            )

        def after(job_id: int, replicas: int) -> tuple[Placement, float] | None:
            q = self.resized_placement(job_id, replicas)
            if q is None:
                return None
            iters = self._running[job_id].iters_left(now)
            t_iter = self.world_execution_time(job_id, q) / self._world_profiles[job_id].iterations
            return q, cost + iters * t_iter

        def grow(job_id: int) -> Resize | None:
            d = self._running[job_id].placement.n_replicas
            got = after(job_id, d + 1) if d < self.replica_range(job_id)[1] else None
            if got is None or self._takes_from_pending(job_id, d + 1):
                return None
            return Resize(job_id, d + 1, got[0].n_gpus, got[1])

        def shrink(job_id: int) -> Resize | None:
            # the most copies it can keep while the admission rule starts a pending job
            low = self.replica_range(job_id)[0]
            for d in range(self._running[job_id].placement.n_replicas - 1, low - 1, -1):
                got = after(job_id, d)
                if got is None:
                    continue
                trial = self.clone()  # type: ignore[attr-defined]  # an exact continuation
                trial.resize(job_id, d)
                admits = tuple(j for j in trial.pending if trial.offer(j) is not None)
                if admits:
                    return Resize(job_id, d, got[0].n_gpus, got[1], admits)
            return None

        return ElasticView(
            now,
            tuple(rows),
            blocked=bool(self._queue.pending),
            free_gpus=self._ledger.free_total,
            grow=_remembered(grow),
            shrink=_remembered(shrink),
        )

    def _takes_from_pending(self, job_id: int, replicas: int) -> bool:
        """Whether running ``job_id`` on ``replicas`` copies from now would change what the
        placement policy offers a pending job now or at the next GPU release (it takes GPUs
        or bandwidth that job could start on, now or when it would start by ``finish-aware``'s
        model of the future). Worked out on a copy of the simulation that makes the resize;
        jobs of one shape get one answer, so each shape is asked once. An admission rule that
        plans ahead (``resize_hurts``, as ``deadline-plan``) also vetoes a resize that makes
        its plan worse, the announced jobs' deadlines included."""
        # an admission rule that plans ahead (the state's) may veto a resize; it is handed the
        # copy lazily, so that a rule with nothing to plan (no deadlines) costs no copy
        hurts = getattr(getattr(self, "admission", None), "resize_hurts", None)
        made: list[Any] = []

        def trial_sim() -> Any:
            if not made:
                made.append(self.clone())  # type: ignore[attr-defined]  # an exact continuation
                made[0].resize(job_id, replicas)
            return made[0]

        if not self._queue.pending:
            return hurts is not None and bool(hurts(self, trial_sim))
        trial = trial_sim()
        now = self._time
        pairs = [
            (
                Release(now, self.free_gpus, self.residual_rows),
                Release(now, trial.free_gpus, trial.residual_rows),
            )
        ]
        before, after = self.next_release(), trial.next_release()
        if before is not None and after is not None:
            pairs.append((before, after))
        seen: set[tuple[object, ...]] = set()
        for j in self._queue.pending:
            shape = self.placement_shape(j)
            if shape in seen:
                continue
            seen.add(shape)
            for here, there in pairs:
                p = self.placement_on(j, here)
                if p is not None and trial.placement_on(j, there) != p:
                    return True
        return hurts is not None and bool(hurts(self, trial_sim))

    def resize(self, job_id: int, replicas: int) -> Placement:
        """Run running job ``job_id`` on ``replicas`` data-parallel copies of its pipeline from
        now (semantics §3f): one fewer drops its last copy, more add copies placed by the
        placement policy on the free GPUs. A checkpoint-restart: the attempt ends with all its
        work kept (outcome ``resized``), and the next starts at once on the new placement
        after the preemption checkpoint plus the restart. A new scheduling pass begins.
        Returns the new placement; a one-line SimulationError when the job is not running,
        is writing a preemption checkpoint, was resized at this instant, the count is outside
        its range, or the copies find no placement."""
        run = self._running.get(job_id)
        if run is None:
            raise SimulationError(
                f"job {job_id} is not running (running: {choices(map(str, self._running), 60)})"
            )
        low, high = self.replica_range(job_id)
        if not (isinstance(replicas, int) and low <= replicas <= high):
            raise SimulationError(
                f"job {job_id} may run {low} to {high} copies of its pipeline, not {replicas!r}"
            )
        reps = self._replicas
        if run.preempted_at is not None or reps.resized.get(job_id) == self._time:
            raise SimulationError(
                f"job {job_id} cannot be resized now: it is writing its preemption checkpoint "
                "or was resized at this instant"
            )
        grows = replicas > run.placement.n_replicas
        if reps.on and grows and reps.n_grown.get(job_id, 0) >= reps.max_grows:
            raise SimulationError(
                f"job {job_id} cannot grow again: it grew {reps.max_grows} times "
                "(the elasticity rule's max_grows)"
            )
        new = self.resized_placement(job_id, replicas)
        if new is None:
            raise SimulationError(
                f"job {job_id} gets no placement for {replicas} copies of its pipeline now"
            )
        self._running.pop(job_id)
        del self._accounts.cost_rates[job_id]
        self._release(job_id, run)
        self._close_attempt(job_id, run, self._time, "resized")
        rec = self._recovery
        self._start(job_id, new, (rec.preempt_checkpoint_s or 0.0) + rec.restart_s, queued=False)
        reps.note(job_id, 1 if replicas > run.placement.n_replicas else -1, self._time)
        self._queue.tried.clear()  # GPUs came free or were taken: a new pass
        self._preempt_asked = self._replicas.asked = False
        return new


class _CopyView(StateView):
    """A hypothetical state on which a job's next data-parallel copy is placed: its profile's
    K* is the first copy's L, so that every copy gets that many stages (semantics §3e)."""

    def __init__(
        self,
        base: SchedulerView,
        time: float,
        free: tuple[int, ...],
        residual: tuple[tuple[float, ...], ...],
        profile: JobProfile,
    ) -> None:
        super().__init__(base, time, free, residual)
        self._profile = profile

    def profile(self, job_id: int) -> JobProfile:
        """The job's profile with K* the copies' L."""
        return self._profile


def _booked(
    free: tuple[int, ...],
    residual: tuple[tuple[float, ...], ...],
    p: Placement,
    need: float,
    two_way: bool,
) -> tuple[tuple[int, ...], tuple[tuple[float, ...], ...]]:
    """``free`` and ``residual`` once ``p`` (one pipeline) holds its GPUs and ``need`` bytes/s
    on each link of its path (both ways under ``two_way``)."""
    return _apply(free, residual, p, dict.fromkeys(p.links, need), two_way)


def _apply(
    free: tuple[int, ...],
    residual: tuple[tuple[float, ...], ...],
    p: Placement,
    bookings: dict[tuple[int, int], float],
    two_way: bool,
) -> tuple[tuple[int, ...], tuple[tuple[float, ...], ...]]:
    """``free`` and ``residual`` once ``p`` holds its GPUs and ``bookings`` (both ways under
    ``two_way``), as the ledger would book them."""
    left = list(free)
    for r, g in p.cells:
        left[r] -= g
    rows = [list(row) for row in residual]
    for (u, v), amount in bookings.items():
        rows[u][v] -= amount
        if two_way:
            rows[v][u] -= amount
    return tuple(left), tuple(tuple(row) for row in rows)


def _remembered(func: Callable[[int], Resize | None]) -> Callable[[int], Resize | None]:
    """``func`` with its answers kept by job id (a view's answers never change)."""
    memo: dict[int, Resize | None] = {}

    def once(job_id: int) -> Resize | None:
        if job_id not in memo:
            memo[job_id] = func(job_id)
        return memo[job_id]

    return once
