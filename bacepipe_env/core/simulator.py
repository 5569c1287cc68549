"""The event-driven simulator (semantics §4).

Events are job arrivals and completions in a heap ordered by ``(time, kind, sequence)``:
completions before arrivals at the same instant, then submission order. After each batch of
simultaneous events comes a scheduling pass: while a job is pending and a GPU is free, the
ordering policy picks one of the pending jobs not yet tried in this pass (and whose memory
floor the free GPUs can reach) and the placement policy places it on the free GPUs and
residual bandwidth. A job whose placement is empty stays
pending and is not offered again until the next event; the pass ends when no candidate is left.

Two ways to drive it:

- ``Simulator(scenario, placement).run(ordering)`` runs a whole episode;
- ``next_decision()`` / ``place(job_id)`` / ``defer()`` step it one decision at a time (what the
  Gymnasium adapter does).

Whether an offered placement starts is decided in two steps, the same for every policy: it must
fit in GPU memory (its GPU count reaches the job's memory floor on every region of its path,
semantics §3a, unless the scenario ignores memory), and the admission rule must take it
(semantics §3b, :mod:`bacepipe_env.core.admission`). Otherwise the job stays pending.

Faults (semantics §11) are event objects that apply themselves
(:class:`~bacepipe_env.core.faults.FaultEvent`): the simulator only queues them and calls them.
What the simulation is at an instant, and every read of it, is
:class:`~bacepipe_env.core.state.SimulationState`'s, which this extends with the dynamics.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import SimulationError, ValidationError, choices
from .attempts import MAX_ATTEMPTS, Running
from .constraints import check_placement
from .faults import Attempt, FaultState
from .ledger import directed
from .limits import HORIZON_H, HORIZON_S
from .perf import JobProfile, job_iteration_time
from .placement import Placement
from .preemption import PreemptionRule, make_preemption
from .records import JobRecord, RunResult, check_finite, percentile
from .state import BANDWIDTH_RTOL, SimulationState
from .units import SECONDS_PER_HOUR, hours, hours_text
from .validate import require_int
from .views import OrderingPolicy, PlacementPolicy, Release, SchedulerView

__all__ = [
    "BANDWIDTH_RTOL",
    "MAX_ATTEMPTS",
    "JobRecord",
    "OrderingPolicy",
    "PlacementPolicy",
    "Release",
    "RunResult",
    "SchedulerView",
    "Simulator",
    "lookahead_horizon",
]

# Event kinds, in their order at one instant: completions, then faults, then arrivals, then
# wake-ups (a running attempt has run long enough to be preempted: a decision point, semantics §3c).
_COMPLETION, _FAULT, _ARRIVAL, _WAKE = 0, 1, 2, 3


class Simulator(SimulationState):
    """Event-driven simulation of one scenario under one placement policy.

    The simulator owns the cluster state (free GPUs, the bandwidth ledger) and the clock; the
    ordering decision is made outside, by :meth:`run`'s ordering policy or by whoever calls
    :meth:`place`. ``admission`` (a rule name or object; default: the scenario's, ``greedy``
    unless it says otherwise) decides whether an offered placement starts now; ``preemption``
    (a rule spec or object, default the scenario's, ``none`` unless it says otherwise) whether
    a running job is stopped at the end of a scheduling pass so that a pending one can start
    (semantics §3c). With ``preemption_decisions`` the caller decides instead (what the Gymnasium
    environment's preempt actions do): :meth:`next_decision` then also stops at the end of a
    pass where a preemption would let a pending job start, returning ``()``, and the caller
    answers with :meth:`preempt` or :meth:`defer`. Validation of every placement against
    constraints (5), (6), the K* cap and GPU memory is on by default; a violation raises
    :class:`PlacementError`.
    """

    def reset(self) -> None:
        """Back to time zero with every job about to arrive."""
        super().reset()
        self._seq = 0
        # (time, kind, sequence, job id or fault event)
        self._heap: list[tuple[float, int, int, Any]] = []
        for job in self._order:
            self._push(job.submit_time, _ARRIVAL, job.job_id)
        self._preempt_asked = False  # the preemption rule was asked at this pass's end
        state = self._fault_state
        if state is not None:
            for t, event in state.scheduled:
                self._push(t, _FAULT, event)
            self._apply_due(state, 0.0)  # the price changes in force at time zero

    def _push(self, t: float, kind: int, what: Any) -> None:
        heapq.heappush(self._heap, (t, kind, self._seq, what))
        self._seq += 1

    @property
    def has_future_events(self) -> bool:
        """True while an arrival, a completion or a fault is still to come (stale events, a
        failure after its attempt ended or a completion a slowdown moved, do not count)."""
        heap = self._heap
        if self._book is not None:
            while heap and self._stale(heap[0]):
                heapq.heappop(heap)  # it would be skipped when reached anyway
        return bool(heap)

    # ------------------------------------------------------------------ cloning
    def clone(
        self,
        lookahead: str = "clairvoyant",
        seed: int | None = None,
        preemption: str | PreemptionRule | None = None,
    ) -> Simulator:
        """An independent copy of the simulation as it is now: stepping or running the copy
        gives, bit for bit, what stepping or running this simulator the same way would, and
        neither sees the other's steps. What never changes (the scenario, its profiles and
        tariff, the finished records) and the pure memos (placements by state, floors,
        shapes) are shared; the clock, the ledgers, the queues, the running attempts, the
        event heap and the fault generator's state are copied. What a rollout planner forks
        at each decision.

        What the copy knows of the future (:func:`lookahead_horizon`): ``clairvoyant`` (the
        default) every job; ``submitted`` only the jobs submitted by now; ``announced:H``
        those submitted within H hours. The others never arrive in the copy, which is
        :attr:`done` when the jobs it knows of have finished. ``seed`` draws the GPU failures
        still to come afresh, from that seed (the running attempts' included: failures are
        memoryless), so that the copy does not know the original's; None keeps them, as a
        bit-identical continuation needs. Scheduled events (outages, link and price changes)
        are a calendar, known either way.

        ``preemption`` hands the copy's preemption decisions to a rule (a spec or object):
        from then on the copy stops running jobs by it, as a simulator made with it would,
        and never stops for a caller's decision. What a planner's rollouts need on a
        simulator whose caller decides the preemptions (``preemption_decisions``); the
        original must preempt (a rule or ``preemption_decisions``), since attempts are
        tracked only then."""
        horizon = lookahead_horizon(lookahead)
        if seed is not None:
            require_int("seed", seed, minimum=0, exc=ValidationError)
        rule = None if preemption is None else make_preemption(preemption)
        if rule is not None and rule.name != "none" and not self._preempts:
            raise ValidationError(
                "preemption", rule.name, "needs a simulator that preempts (a rule or decisions)"
            )
        self._caches.memo_on = True  # forks ask about the same states: the memo pays from now on
        new = object.__new__(Simulator)
        new.__dict__.update(self.__dict__)  # shared: every field not replaced below
        new._caches = self._caches.fork()
        new._ledger = self._ledger.copy()
        new._queue = self._queue.copy()
        new._running = {j: run.copy() for j, run in self._running.items()}
        new._accounts = self._accounts.copy()
        new._replicas = self._replicas.copy()
        new._heap = list(self._heap)
        if rule is not None:
            new.preemption = rule
            new._agent_preempts = False
        if self._book is not None:
            new._book = self._book.copy(self._accounts.records)
        if self._fault_state is not None:
            new._fault_state = self._fault_state.copy()
            if seed is not None and self.faults is not None:
                new._redraw_failures(seed)
        if horizon < math.inf:  # the jobs submitted after the lookahead never arrive
            cutoff = self._time + horizon
            late = {e[3] for e in new._heap if e[1] == _ARRIVAL and e[0] > cutoff}
            if late:
                new._heap = [e for e in new._heap if not (e[1] == _ARRIVAL and e[3] in late)]
                heapq.heapify(new._heap)
                new._unknown = self._unknown | late
        return new

    def __getstate__(self) -> dict[str, Any]:
        """What ``pickle`` and ``copy.deepcopy`` take: every field, but a preemption view
        :meth:`preemption_view` cached that still computes through this simulator (its
        closures would answer for the original, and refuse to be copied) is left out, as
        :meth:`clone` leaves it. The copy makes its own when first asked: a view is a function
        of the state at its version, so its answers are the same. A materialised view, plain
        data (the environment's at a decision to preempt), travels as it is."""
        state = self.__dict__.copy()
        cached = self._caches.view
        if cached is not None and not cached[1].materialized:
            state["_caches"] = self._caches.fork()  # the same caches, without the view
        return state

    def _redraw_failures(self, seed: int) -> None:
        """A new failure stream from ``seed``: every running attempt's next failure drawn again
        from now (exponential, memoryless), the old draws dropped."""
        faults, state = self.faults, self._fault_state
        assert faults is not None and state is not None
        state.reseed(seed)
        self._heap = [e for e in self._heap if not (e[1] == _FAULT and e[3].drawn)]
        heapq.heapify(self._heap)
        if faults.gpu_failure_rate <= 0:
            return
        for job_id, run in self._running.items():
            self._draw_failure(job_id, run, self._time, faults.gpu_failure_rate)

    # --------------------------------------------------------------- stepping
    def next_decision(self) -> tuple[int, ...] | None:
        """Advance the clock until a job can be offered for placement.

        Returns the candidate job ids (pending, not yet tried in this pass, with a memory floor
        no larger than the free GPUs, in submission order) or ``None`` when every job has
        finished. Calling it again without placing returns the same candidates.
        """
        candidates = self._next_candidates()
        if candidates is None or isinstance(candidates, tuple):
            return candidates
        return tuple(candidates.tolist())

    def _next_candidates(self, by_shape: bool = False) -> tuple[int, ...] | np.ndarray | None:
        """:meth:`next_decision`'s candidates, as an intp array (the same ids in the same
        order) from ``VECTOR_QUEUE`` pending jobs on: what :meth:`run` hands an ordering's
        ``choose_array`` without building a tuple of the queue. With ``by_shape`` (an
        ordering whose choice among jobs of one shape is always the earliest submitted), a
        long queue gives instead the earliest candidate of each shape, as a tuple in
        submission order (:meth:`PendingQueue.shape_firsts`)."""
        queue = self._queue
        while True:
            free = self._ledger.free_total
            if free > 0 and len(queue.tried) < len(queue.pending):
                candidates = queue.candidates(free, by_shape, self._need_array)
                if candidates is not None:
                    return candidates
            if self._preempts and not self._preempt_asked:
                self._preempt_asked = True  # once per pass end (a preemption asks again)
                if self._agent_preempts:
                    if self._running and queue.pending and self.preemption_view().any_option():
                        return ()
                elif self._running and queue.pending:
                    victim = self.preemption.choose(self.preemption_view())
                    if victim is not None:
                        self.preempt(victim)
                        continue
            replicas = self._replicas
            if replicas.on and not replicas.asked:
                replicas.asked = True  # once per pass end (a resize asks again)
                if self._running:
                    resize = self.elasticity.choose(self.elastic_view())
                    if resize is not None:
                        self.resize(*resize)
                        continue
            if not self._heap:
                if queue.pending:
                    what = "that fits in GPU memory " if self._memory else ""
                    if any(self._refused_by_world(j) for j in queue.pending):
                        what += "and the world's links (scheduler_model='world' may help) "
                    raise SimulationError(
                        f"jobs {choices(map(str, queue.pending), 60)} can never start: "
                        "placement policy "
                        f"{self.placement_policy.name!r} offers them no placement {what}"
                        f"on the idle cluster"
                    )
                return None
            self._advance()

    def _refused_by_world(self, job_id: int) -> bool:
        """Whether the placement policy's answer for ``job_id`` now fits in memory but not in
        the world's links (its booking by the world's model exceeds what they carry)."""
        p = self.placement_policy.place(self, job_id)
        if p is None or not p.path or not self.fits(job_id, p):
            return False
        return not self.world_links_fit(job_id, p, self.residual_rows)

    def place(
        self, job_id: int, placement: Placement | None = None, replicas: int | None = None
    ) -> Placement | None:
        """Start ``job_id`` now on the placement :meth:`offer` gives it (with ``replicas``
        data-parallel copies of its pipeline, default its ``min_replicas``, semantics §3e).

        Returns the placement, or ``None`` if there is none: the policy found nothing, it does
        not fit in GPU memory, or the admission rule declined it. The job then stays pending
        and is not offered again until the next event. A caller that already asked the placement
        policy on this very state (a preview) may pass its ``placement`` instead; it is validated
        the same way, memory included, and the admission rule decides on it as on any offer.
        """
        queue = self._queue
        if job_id not in queue.pending or job_id in queue.tried:
            raise SimulationError(
                f"job {job_id} is not a candidate now (candidates: "
                f"{choices((str(j) for j in queue.pending if j not in queue.tried), 60)})"
            )
        if self._ledger.free_total <= 0:
            raise SimulationError("no GPU is free: call next_decision() first")
        self._accounts.n_decisions += 1
        given = placement is not None
        if placement is None:
            placement = self.offer(job_id, replicas)
        if placement is None or not placement.path:
            queue.tried.add(job_id)
            return None
        if self.validate:
            self._check(job_id, placement)
        if given and not self.world_links_fit(job_id, placement, self.residual_rows):
            queue.tried.add(job_id)  # the world's booking does not fit: as _placed refuses
            return None
        if given and not self.admits(job_id, placement):
            queue.tried.add(job_id)
            return None
        self._start(job_id, placement)
        return placement

    def defer(self) -> None:
        """End the current scheduling pass: nothing more is placed (or preempted) until the
        next event."""
        self._queue.tried.update(self._queue.pending)
        self._preempt_asked = True

    def decline(self, job_ids: Sequence[int]) -> None:
        """Leave these candidates pending until the next event, as if each had been offered
        and had no placement that could start (what a caller that previewed them does)."""
        queue = self._queue
        for job_id in job_ids:
            if job_id in queue.pending:
                self._accounts.n_decisions += 1
                queue.tried.add(job_id)

    # ------------------------------------------------------------ preemption (semantics §3c)
    def preempt(self, job_id: int) -> None:
        """Preempt running job ``job_id`` now (semantics §3c). With a checkpoint at preemption it
        keeps its GPUs for ``preempt_checkpoint_s`` while it writes one, then returns to the
        pending queue with all its work kept; with ``lose-since-checkpoint`` (or a zero-second
        checkpoint) it returns at once, having lost the work since its last periodic checkpoint
        (nothing, for a zero-second checkpoint). Either way it is not offered again until the
        next event, and its next attempt restarts in ``restart_s``. A one-line
        SimulationError unless the job is preemptible (:class:`PreemptionView`)."""
        if not self._preempts:
            raise SimulationError("preemption is off: give the simulator a preemption rule")
        run = self._running.get(job_id)
        if run is None:
            raise SimulationError(
                f"job {job_id} is not running (running: {choices(map(str, self._running), 60)})"
            )
        row = self._running_row(job_id, run)
        if not row.preemptible:
            raise SimulationError(
                f"job {job_id} cannot be preempted now: it is writing its preemption checkpoint, "
                f"was preempted {row.preemptions} times (max_preemptions "
                f"{self._recovery.max_preemptions}) or finishes within the checkpoint"
            )
        ckpt = self._recovery.preempt_checkpoint_s
        if not ckpt:  # None (lose since the last checkpoint) or 0 s: it leaves now
            self._interrupt(job_id, "preempted")
            tried = self._queue.tried
            tried.clear()  # GPUs came free: a new pass, without the job just stopped
            tried.add(job_id)
        else:
            self._version += 1
            run.preempted_at = self._time
            run.finish = self._time + ckpt
            run.execution = run.finish - run.start
            run.token = self._seq
            self._push(run.finish, _COMPLETION, job_id)
        self._preempt_asked = False

    # ------------------------------------------------------------------ whole runs
    def run(self, ordering: OrderingPolicy) -> RunResult:
        """Run to the end with ``ordering`` choosing among the candidates at each decision.

        On a long queue an ordering with a ``choose_array(view, candidates)`` method (the
        candidates as an intp array, in submission order) is asked through it instead of
        ``choose``; it must choose as ``choose`` would (Eq. 12's ordering does, bit for bit).
        """
        self.play(ordering)
        return self.result(getattr(ordering, "name", type(ordering).__name__))

    def play(self, ordering: OrderingPolicy) -> None:
        """:meth:`run` without building the result: what a planner's forks do, which read only
        the totals (:attr:`job_seconds`, :attr:`cost_accrued`, ...)."""
        choose_array = getattr(ordering, "choose_array", None)
        by_shape = bool(getattr(ordering, "by_shape", False))
        while (candidates := self._next_candidates(by_shape)) is not None:
            if isinstance(candidates, tuple):
                job_id = ordering.choose(self, candidates)
                legal = job_id in candidates
            elif choose_array is not None:
                job_id = choose_array(self, candidates)
                legal = isinstance(job_id, (int, np.integer)) and bool((candidates == job_id).any())
            else:
                candidates = tuple(candidates.tolist())
                job_id = ordering.choose(self, candidates)
                legal = job_id in candidates
            if not legal:
                shown = candidates if isinstance(candidates, tuple) else candidates.tolist()
                raise SimulationError(
                    f"ordering policy {getattr(ordering, 'name', ordering)!r} chose job "
                    f"{job_id!r}, which is not one of the candidates "
                    f"{choices(map(str, shown), 60)}"
                )
            self.place(int(job_id))

    def result(self, policy: str = "") -> RunResult:
        """The outcome so far; complete once :attr:`done` is true."""
        records = self._accounts.records
        if not self.done:
            raise SimulationError(
                f"{len(self._jobs) - len(self._unknown) - len(records)} jobs have not finished yet"
            )
        recs = tuple(records[j] for j in sorted(records))
        first = min(r.submit_time for r in recs)
        makespan = max(r.finish_time for r in recs) - first
        busy = math.fsum(r.gpu_seconds for r in recs)
        total = self._cluster.total_gpus
        jcts = sorted(r.jct for r in recs)
        p50, p95, p99 = (percentile(jcts, q) for q in (0.50, 0.95, 0.99))
        tariff = self._accounts.tariff
        out = RunResult(
            scenario=self.scenario.name,
            policy=policy or self.placement_policy.name,
            records=recs,
            avg_jct=math.fsum(r.jct for r in recs) / len(recs),
            total_cost=math.fsum(r.cost for r in recs),
            makespan=makespan,
            gpu_utilization=busy / (total * makespan) if makespan > 0 else 0.0,
            n_decisions=self._accounts.n_decisions,
            admission=self.admission.name,
            ignore_memory=not self._memory,
            total_carbon=math.fsum(r.carbon for r in recs),
            total_egress_cost=math.fsum(r.egress_cost for r in recs),
            jct_p50=p50,
            jct_p95=p95,
            jct_p99=p99,
            mean_slowdown=math.fsum(r.slowdown for r in recs) / len(recs),
            prices=tariff.model,
            start_hour=tariff.start_hour,
            egress=self._accounts.egress,
            n_restarts=sum(r.restarts for r in recs),
            preemption=self.preemption.name,
            n_preemptions=sum(r.preemptions for r in recs),
            wasted_gpu_hours=hours(math.fsum(r.wasted_gpu_seconds for r in recs)),
            wasted_cost=math.fsum(r.wasted_cost for r in recs),
            gpu_hours=hours(busy),
            model=self.scenario.world.model,
            elasticity=self.elasticity.name,
            n_resizes=sum(r.resizes for r in recs),
        )
        check_finite(out)
        return out

    # -------------------------------------------------------------- internals
    def _advance(self) -> None:
        """Pop every event at the next instant; a new scheduling pass starts."""
        heap, queue = self._heap, self._queue
        t = heap[0][0]
        dt = t - self._time
        if dt > 0.0:  # accrue JCT (jobs in system) and electricity (running jobs) up to t
            self._accounts.job_seconds += (len(queue.pending) + len(self._running)) * dt
            if self._running:  # a region down bills none of its GPUs (none is down unfaulted)
                state = self._fault_state
                down = None if state is None else state.down
                self._accounts.accrue(self._time, t, self._ledger.free, down)
        self._time = t
        self._version += 1
        state = self._fault_state
        if state is not None and t >= state.next_due:
            self._apply_due(state, t)
        attempts = self._book is not None
        changed = not attempts
        while heap and heap[0][0] == t:
            event = heapq.heappop(heap)
            _, kind, _, what = event
            if attempts and self._stale(event):
                continue
            if kind == _COMPLETION:
                self._finish(what)
            elif kind == _FAULT:
                self._version += 1
                what.apply(_FaultEffects(self))
            elif kind == _WAKE:  # an attempt may now be preempted or resized: a decision point
                self._wake_again(what)
            else:
                queue.arrive(what)
            changed = True
        if changed:  # an instant where only stale events fell is no decision point
            queue.tried.clear()
            self._preempt_asked = False
            self._replicas.asked = False
            if queue.held:  # jobs whose preemption ended at this instant sit this pass out
                queue.tried.update(queue.held)
                queue.held.clear()

    def _check(self, job_id: int, p: Placement) -> None:
        check_placement(self, job_id, p)

    def _start(
        self, job_id: int, p: Placement, restart: float | None = None, queued: bool = True
    ) -> None:
        """Start an attempt of ``job_id`` on ``p`` now: from the pending queue (``queued``),
        or, for a resize, straight from its previous attempt, after ``restart`` seconds of
        checkpoint-restart (default: the world's restart if it has run before)."""
        self._version += 1
        prof = self._world_profiles[job_id]  # the world runs by its own model
        execution = self.world_execution_time(job_id, p)  # Eq. (2)
        if p.replicas:
            reserved = prof.min_bandwidth(p.stages) if p.links else 0.0
            booked = self.bookings(job_id, p)
        else:
            reserved = prof.min_bandwidth(p.n_gpus) if len(p.path) > 1 else 0.0  # b(L_j)
            booked = dict.fromkeys(p.links, reserved)
        self._ledger.take(job_id, p, booked)
        if queued:
            self._queue.start(job_id)
        run = self._accounts.new_attempt(p, prof, self._time, execution, reserved)
        if booked:
            run.bookings = directed(booked, self._two_way)
        if self._book is not None:
            self._begin_attempt(job_id, run, prof, restart)
        if run.finish > HORIZON_S:  # one comparison per start: the clock stays in range
            self._past_horizon(job_id, run)
        run.token = self._seq
        self._running[job_id] = run
        self._accounts.cost_rates[job_id] = run.cost_rate
        self._push(run.finish, _COMPLETION, job_id)

    def _past_horizon(self, job_id: int, run: Running) -> None:
        """Stop the run: ``run`` would end after the simulation horizon (SimulationError)."""
        job, n = self._jobs[job_id], run.placement.n_gpus
        raise SimulationError(
            f"job {job_id} ({job.name}) would finish at {hours_text(run.finish)}, past the "
            f"simulation horizon of {HORIZON_H:,.0f} h (HORIZON_H): it runs from "
            f"{hours_text(run.start)} on {n} GPU{'' if n == 1 else 's'} for "
            f"{hours_text(run.finish - run.start)}; shorten the workload"
        )

    def _release(self, job_id: int, run: Running) -> None:
        """Give back a running attempt's GPUs and bandwidth."""
        self._version += 1
        self._ledger.give_back(job_id, run.placement)

    def _finish(self, job_id: int) -> None:
        run = self._running.pop(job_id)
        if run.preempted_at is not None:  # its preemption checkpoint is written
            self._running[job_id] = run  # (it leaves through _interrupt)
            self._interrupt(job_id, "preempted")
            self._queue.held.append(job_id)  # not offered again before the next event
            return
        del self._accounts.cost_rates[job_id]
        self._release(job_id, run)
        # under faults every job's attempts are booked; without, a job never interrupted is
        # booked as in the world without preemption, to the last bit
        book = self._book
        if self.faults is not None or (book is not None and book.has_run(job_id)):
            self._finish_after_faults(job_id, run)
            return
        wait = run.start - self._jobs[job_id].submit_time
        self._record(
            job_id,
            run,
            (Attempt(run.start, run.finish, run.placement, "completed", bookings=run.bookings),),
            wait,
            run.execution,
            wait + run.execution,  # Eq. (3)
            self._accounts.completed(run),
        )

    def _record(
        self,
        job_id: int,
        run: Running,
        attempts: tuple[Attempt, ...],
        wait: float,
        execution: float,
        jct: float,
        totals: Sequence[float],  # cost, carbon, egress, wasted GPU-s, wasted cost
    ) -> None:
        """The finished job's :class:`JobRecord`; ``run`` is its last (completed) attempt."""
        self._accounts.record(
            self._jobs[job_id],
            self._world_profiles[job_id],
            self._floors[job_id],
            run,
            attempts,
            wait,
            execution,
            jct,
            totals,
        )

    # ------------------------------------------------------------------ faults (semantics §11)
    def _apply_due(self, state: FaultState, t: float) -> None:
        """Apply the calendar's events (price changes) the clock has reached by ``t``."""
        for event in state.due(t):
            event.apply(_FaultEffects(self))

    def _begin_attempt(
        self, job_id: int, run: Running, prof: JobProfile, restart: float | None = None
    ) -> None:
        """An attempt resumes from the job's last checkpoint, after a restart if it is not the
        first (``restart`` seconds, if given); its GPUs may fail at the scenario's rate."""
        book, faults = self._book, self.faults
        assert book is not None
        iters = book.iters_left[job_id]
        if restart is None:
            restart = self._recovery.restart_s if book.has_run(job_id) else 0.0
        t_iter = run.execution / prof.iterations  # seconds per iteration on this placement now
        compute = run.execution if iters == prof.iterations else iters * t_iter
        run.restart, run.iters = restart, iters
        run.segments = [(run.start + restart, iters, t_iter)]
        run.execution = restart + compute
        run.finish = run.start + run.execution
        run.attempt_id = self._seq
        if self._wake_s > 0.0 and run.start + self._wake_s < run.finish:
            run.wake = self._seq
            self._push(run.start + self._wake_s, _WAKE, job_id)
        if faults is not None and faults.gpu_failure_rate > 0:
            self._draw_failure(job_id, run, run.start, faults.gpu_failure_rate)

    def _wake_again(self, job_id: int) -> None:
        """Queue the attempt's next wake-up, when the preemption and elasticity rules wait
        different times (semantics §3c, §3f)."""
        run = self._running[job_id]
        for wake in self._replicas.later_wakes:
            t = run.start + wake
            if self._time < t < run.finish:
                run.wake = self._seq
                self._push(t, _WAKE, job_id)
                return

    def _draw_failure(self, job_id: int, run: Running, now: float, rate: float) -> None:
        """Queue the attempt's next GPU failure (:meth:`FaultState.draw_failure`)."""
        state = self._fault_state
        assert state is not None
        got = state.draw_failure(job_id, run.attempt_id, run.placement.n_gpus, now, rate)
        if got is not None:  # else after the attempt's end: stale
            self._push(got[0], _FAULT, got[1])

    def _stale(self, event: tuple[float, int, int, Any]) -> bool:
        """Whether a queued event no longer applies: a completion that an interruption or a
        slowdown replaced, a wake-up of an attempt that has ended, or a fault event that says
        so (the failure of an attempt that has already ended)."""
        _, kind, seq, what = event
        if kind == _COMPLETION:
            run = self._running.get(what)
            return run is None or run.token != seq
        if kind == _WAKE:
            run = self._running.get(what)
            return run is None or run.wake != seq or run.preempted_at is not None
        if kind == _FAULT:
            return not what.live(_FaultEffects(self))
        return False

    def _new_speed(self, job_id: int, run: Running) -> None:
        """Eq. (1) again on the links' capacity now, for the rest of the attempt's work."""
        assert run.segments is not None
        prof = self._world_profiles[job_id]
        rows = self._ledger.capacity_now
        t_iter = job_iteration_time(prof, self._cluster, run.placement, rows)
        now = self._time
        if now <= run.compute_start:  # still restarting: the whole computation is ahead
            start = run.compute_start
            run.segments[0] = (start, run.iters, t_iter)
            run.finish = start + run.iters * t_iter
        else:
            left = run.iters_left(now)
            run.segments.append((now, left, t_iter))
            run.finish = now + left * t_iter
        run.execution = run.finish - run.start
        if run.finish > HORIZON_S:  # a slowed link stretched it past the horizon
            self._past_horizon(job_id, run)
        run.token = self._seq
        self._push(run.finish, _COMPLETION, job_id)

    def _interrupt(self, job_id: int, outcome: str) -> None:
        """End a running attempt now; the job keeps its last checkpoint and waits again."""
        run = self._running.pop(job_id)
        del self._accounts.cost_rates[job_id]
        self._release(job_id, run)
        self._close_attempt(job_id, run, self._time, outcome)
        if outcome == "preempted":
            assert self._book is not None
            self._book.n_preempted[job_id] += 1
        self._queue.put_back(job_id)

    def _close_attempt(self, job_id: int, run: Running, end: float, outcome: str) -> None:
        """Book an attempt that ends at ``end`` (:meth:`Accounts.close_attempt`)."""
        book, recovery = self._book, self._recovery
        assert book is not None
        n = self._accounts.close_attempt(
            book, job_id, run, end, outcome, recovery, self._world_profiles[job_id]
        )
        if outcome != "completed" and n >= MAX_ATTEMPTS:
            raise SimulationError(self._too_many_attempts(job_id))

    def _too_many_attempts(self, job_id: int) -> str:
        """The one line that stops a run whose job was interrupted ``MAX_ATTEMPTS`` times,
        naming what interrupted it: its resizes, preemptions and failures or outages counted
        apart, with the settings behind the largest count."""
        book, recovery = self._book, self._recovery
        assert book is not None
        counts: dict[str, int] = {}
        for a in book.attempts[job_id]:
            counts[a.outcome] = counts.get(a.outcome, 0) + 1
        resized, preempted = counts.pop("resized", 0), counts.pop("preempted", 0)
        counts.pop("completed", None)
        faulted = sum(counts.values())
        cause = max(
            (resized, f"elasticity rule {self.elasticity.name!r}"),
            (preempted, f"preemption rule {self.preemption.name!r}"),
            (
                faulted,
                "failures outpace its checkpoints (gpu_failure_rate "
                f"{0.0 if self.faults is None else self.faults.gpu_failure_rate:g}, "
                f"checkpoint_interval_s {recovery.checkpoint_interval_s:g}, "
                f"restart_s {recovery.restart_s:g})",
            ),
        )[1]
        return (
            f"job {job_id} was interrupted {MAX_ATTEMPTS:,} times without finishing "
            f"({resized:,} resizes, {preempted:,} preemptions, {faulted:,} failures or "
            f"outages): {cause}"
        )

    def _finish_after_faults(self, job_id: int, run: Running) -> None:
        self._close_attempt(job_id, run, run.finish, "completed")
        book = self._book
        assert book is not None
        attempts = tuple(book.attempts[job_id])
        execution = math.fsum(a.duration for a in attempts)
        jct = run.finish - self._jobs[job_id].submit_time
        self._record(job_id, run, attempts, jct - execution, execution, jct, book.totals[job_id])


class _FaultEffects:
    """The simulator as a fault event acts on it (:class:`~bacepipe_env.core.faults.FaultTarget`):
    the operations a fault needs, and nothing else of the simulator."""

    __slots__ = ("_sim",)

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim

    @property
    def fault_state(self) -> FaultState:
        """What the faults have done so far."""
        state = self._sim._fault_state
        assert state is not None
        return state

    def jobs_on(self, region: int) -> list[int]:
        """The running attempts with a GPU in ``region``, in start order."""
        return [j for j, run in self._sim._running.items() if region in run.placement.regions]

    def attempt_live(self, job_id: int, attempt_id: int) -> bool:
        """Whether attempt ``attempt_id`` of ``job_id`` is still running."""
        run = self._sim._running.get(job_id)
        return run is not None and run.attempt_id == attempt_id

    def end_attempt(self, job_id: int, outcome: str) -> None:
        """End a running attempt now."""
        self._sim._interrupt(job_id, outcome)

    def close_region(self, region: int) -> None:
        """The region offers no GPU from now on."""
        self._sim._ledger.close_region(region)

    def open_region(self, region: int) -> None:
        """The region offers all its GPUs again."""
        self._sim._ledger.open_region(region)

    def set_link_capacity(self, src: int, dst: int, capacity: float) -> None:
        """Set the link's capacity and rerun Eq. (1) for every attempt crossing it."""
        sim = self._sim
        sim._ledger.set_link_capacity(src, dst, capacity)
        for job_id, run in list(sim._running.items()):
            if (src, dst) in run.placement.booked_links and run.preempted_at is None:
                sim._new_speed(job_id, run)


def lookahead_horizon(lookahead: str) -> float:
    """Seconds ahead a simulation's clone may know jobs: ``submitted`` 0, ``announced:H`` H
    hours, ``clairvoyant`` infinity (a bound: no scheduler knows that much). A one-line
    ValidationError otherwise."""
    if lookahead == "clairvoyant":
        return math.inf
    if lookahead == "submitted":
        return 0.0
    name, _, hours_ahead = str(lookahead).partition(":")
    if name == "announced":
        try:
            value = float(hours_ahead)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and 0.0 <= value <= 1e6:
            return value * SECONDS_PER_HOUR
    raise ValidationError(
        "lookahead", lookahead, "choose submitted, announced:H (hours, 0-1e6) or clairvoyant"
    )
