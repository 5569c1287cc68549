"""A simulation at one instant, and everything policies, rules and the environment may read
of it (semantics §4).

:class:`SimulationState` holds the state in a few parts, each in its own module: the
cluster's GPUs and bandwidth (:class:`~bacepipe_env.core.ledger.Ledger`), the pending queue
(:class:`~bacepipe_env.core.queue.PendingQueue`), the running attempts, the bill and the
records (:class:`~bacepipe_env.core.accounting.Accounts`), the attempts' bookkeeping
(:class:`~bacepipe_env.core.attempts.AttemptBook`), the faults' state
(:class:`~bacepipe_env.core.faults.FaultState`) and every memo
(:class:`~bacepipe_env.core.caches.Caches`). It implements the reads: the
:class:`~bacepipe_env.core.views.SchedulerView`, what admission and preemption rules ask, and
what the Gymnasium environment observes. How the state moves (events, decisions, attempts,
preemptions) is :class:`~bacepipe_env.core.simulator.Simulator`'s, which extends it.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from ..errors import SimulationError, ValidationError
from .accounting import Accounts
from .admission import AdmissionRule, make_admission
from .attempts import AttemptBook, Running
from .caches import MEMO_SIZE, Caches
from .cluster import Cluster
from .elasticity import ElasticityRule, make_elasticity
from .faults import FaultModel, FaultState
from .helped import HelpedMemo, running_row
from .ledger import Ledger
from .limits import HORIZON_H, HORIZON_S
from .perf import JobProfile, job_iteration_time, replica_micro_batches
from .placement import Placement
from .preemption import Beneficiary, PreemptionRule, PreemptionView, RunningJob, make_preemption
from .queue import PendingQueue
from .replicas import ReplicaReads, ReplicaState
from .scenario import Scenario
from .tariff import Tariff
from .units import SECONDS_PER_HOUR, hours_text
from .views import PlacementPolicy, Release, SchedulerView, StateView

__all__ = ["BANDWIDTH_RTOL", "SimulationState"]

#: The checkpoint, restart and preemption settings of a scenario without a fault model.
_DEFAULT_RECOVERY = FaultModel()
_MISSING = object()


#: A placement may reserve up to this relative amount more than a link's residual bandwidth:
#: Alg. 1 checks ``A / b <= t_comp(g)`` while the ledger books ``b(g) = A / t_comp(g)``, and the
#: two can differ in the last bit.
BANDWIDTH_RTOL = 1e-9


class SimulationState(ReplicaReads):
    """One scenario's simulation at one instant under one placement policy, and its reads.

    Built from the scenario (its jobs, profiles, memory floors, tariff and fault model) and the
    policies and rules :class:`~bacepipe_env.core.simulator.Simulator` documents; read through
    the properties and methods below, changed only by the simulator.
    """

    def __init__(
        self,
        scenario: Scenario,
        placement: PlacementPolicy,
        *,
        admission: str | AdmissionRule | None = None,
        validate: bool = True,
        fault_seed: int | None = None,
        preemption: str | PreemptionRule | None = None,
        preemption_decisions: bool = False,
        preemption_wake_s: float = 3600.0,
        elasticity: str | ElasticityRule | None = None,
    ) -> None:
        self.scenario = scenario
        self.placement_policy = placement
        self.admission = make_admission(scenario.admission if admission is None else admission)
        self._greedy = self.admission.name == "greedy"
        self.preemption: PreemptionRule = make_preemption(
            scenario.preemption if preemption is None else preemption
        )
        if not isinstance(preemption_decisions, bool):
            raise ValidationError("preemption_decisions", preemption_decisions, "must be a bool")
        if preemption_decisions and self.preemption.name != "none":
            raise ValidationError(
                "preemption",
                self.preemption.name,
                "must be 'none' when the caller makes the preemption decisions",
            )
        self._agent_preempts = preemption_decisions
        self._preempts = preemption_decisions or self.preemption.name != "none"
        self.elasticity: ElasticityRule = make_elasticity(
            scenario.elasticity if elasticity is None else elasticity
        )
        self._replicas = ReplicaState(self.elasticity, scenario.replica_ranges)
        if self._replicas.on and scenario.world.model == "paper":
            raise ValidationError(
                "elasticity",
                self.elasticity.name,
                "the paper's model has no data-parallel replicas to resize; use model physical",
            )
        # each attempt becomes a decision point once it has run this long (0: never)
        wake = (
            preemption_wake_s
            if preemption_decisions
            else getattr(self.preemption, "min_run_s", 0.0)
        )
        if not isinstance(wake, (int, float)) or not 0.0 <= wake < math.inf:
            raise ValidationError("preemption_wake_s", wake, "must be seconds >= 0")
        # an elastic rule's hysteresis ends in a decision point too (semantics §3f)
        wakes = sorted({float(wake), self._replicas.min_run_s} - {0.0})
        self._wake_s = wakes[0] if wakes else 0.0
        self._replicas.later_wakes = tuple(wakes[1:])
        self.validate = validate
        self._cluster = cluster = scenario.cluster
        self._profiles = scenario.profiles  # the schedulers' estimates
        self._world_profiles = scenario.world_profiles  # what the world runs by
        # the physical model books the backward pass's reverse links too (semantics §3d)
        self._two_way = scenario.world.model == "physical"
        self._floors = scenario.memory_floors
        self._memory = not scenario.ignore_memory
        self._jobs = {j.job_id: j for j in scenario.jobs}
        # submission order, (submit time, id): the arrivals' order and the pending queue's
        self._order = sorted(self._jobs.values(), key=lambda j: (j.submit_time, j.job_id))
        last = self._order[-1]
        if last.submit_time > HORIZON_S:  # built by hand: the builders refuse it earlier
            raise SimulationError(
                f"job {last.job_id} ({last.name}) is submitted at {hours_text(last.submit_time)}, "
                f"past the simulation horizon of {HORIZON_H:,.0f} h (HORIZON_H)"
            )
        faults = scenario.faults
        self.faults: FaultModel | None = faults if faults is not None and faults.dynamic else None
        # the checkpoint, restart and preemption settings, faults or not
        self._recovery = faults if faults is not None else _DEFAULT_RECOVERY
        seed = int(scenario.params.get("seed", 0)) if fault_seed is None else fault_seed
        self._fault_state = (
            FaultState(faults, cluster.bandwidth_rows, seed)
            if faults is not None and faults.active
            else None
        )
        self._queue = PendingQueue(
            {j.job_id: i for i, j in enumerate(self._order)},
            {j: min(f) for j, f in self._floors.items()},
            self._profiles,
        )
        self._caches = Caches(cluster.n_regions)
        self.reset()

    def reset(self) -> None:
        """Back to time zero: the cluster idle, no job pending, running or finished."""
        self._time = 0.0
        self._ledger = Ledger(
            self._cluster,
            self._caches.rows_type,
            self.faults is not None,
            two_way=self._two_way,
        )
        self._queue.reset()
        self._running: dict[int, Running] = {}  # job id -> its attempt, in start order
        self._accounts = Accounts(self._cluster, self.scenario.tariff)
        self._version = 0  # bumped at every change a preemption view reads
        self._caches.view = self._caches.release = self._caches.helped = None
        self._unknown: frozenset[int] = frozenset()  # jobs a lookahead-limited clone left out
        # attempts are tracked when one can end early or change speed
        self._book = (
            AttemptBook(self._profiles, self._jobs)
            if self.faults is not None or self._preempts or self._replicas.on
            else None
        )
        self._replicas.reset()
        if self._fault_state is not None:
            self._fault_state.reset()

    # ----------------------------------------------------- SchedulerView API
    @property
    def time(self) -> float:
        """Simulated time now (seconds)."""
        return self._time

    @property
    def cluster(self) -> Cluster:
        """The simulated cluster."""
        return self._cluster

    @property
    def free_gpus(self) -> tuple[int, ...]:
        """Free GPUs per region now."""
        view = self._ledger.free_view  # read at every decision: the ledger's cached view
        return view if view is not None else self._ledger.free_gpus

    @property
    def residual_rows(self) -> tuple[tuple[float, ...], ...]:
        """Residual bandwidth ``B - reserved`` (bytes/s) as nested tuples; row u, column v."""
        view = self._ledger.residual_view
        return view if view is not None else self._ledger.residual_rows

    def placement_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(free, prices, residual)``: :attr:`free_gpus` (int64, K), the cluster's prices
        (float64, K) and :attr:`residual_rows` (float64, K x K) as arrays holding the same
        numbers, for a compiled placement rule. The residual array is kept up to date in place
        from the first call on (one element per ledger change), the free array rebuilt after
        a change; read them, do not modify them."""
        free_array, residual_array = self._ledger.arrays()
        caches = self._caches
        if caches.price_array is None:
            caches.price_array = np.array(self._cluster.prices, dtype=np.float64)
        return free_array, caches.price_array, residual_array

    @property
    def residual_bandwidth(self) -> np.ndarray:
        """Residual bandwidth as a fresh (K, K) array (bytes/s)."""
        return np.array(self.residual_rows, dtype=float)

    @property
    def reserved_bandwidth(self) -> np.ndarray:
        """Reserved bandwidth per directed link as a fresh (K, K) array (bytes/s)."""
        return np.array(self._ledger.reserved, dtype=float)

    @property
    def down_regions(self) -> tuple[bool, ...]:
        """Per region, whether it is down now (an outage, semantics §11); all False without
        faults."""
        if self.faults is None or self._fault_state is None:
            return (False,) * self._cluster.n_regions
        return tuple(self._fault_state.down)

    @property
    def link_capacity_rows(self) -> tuple[tuple[float, ...], ...]:
        """The links' capacity now (bytes/s) as nested tuples, row u = links out of u: the
        nominal ``cluster.bandwidth_rows`` times the factors of the link changes in force
        (semantics §11); the nominal rows themselves without faults."""
        if self.faults is None:
            return self._ledger.nominal
        return tuple(tuple(row) for row in self._ledger.capacity_now)

    def price_at(self, region: int) -> float:
        """Region ``region``'s electricity price now ($/kWh): the tariff's price model at this
        instant times the factors of the price changes in force, which their events put in
        and out of force as the clock passes them (semantics §10-11). The same float as
        ``tariff.price_at(region, time)``."""
        price = self._accounts.tariff.model_price_at(region, self._time)
        state = self._fault_state
        if state is not None:
            for factor in state.price_factors(region):
                price *= factor
        return price

    @property
    def network_utilization(self) -> float:
        """Eq. (11) alpha on the current reservations."""
        alpha = self._ledger.alpha
        return alpha if alpha is not None else self._ledger.network_utilization

    @property
    def pending(self) -> tuple[int, ...]:
        """Job ids waiting to start, in submission order."""
        return tuple(self._queue.pending)

    @property
    def n_pending(self) -> int:
        """How many jobs wait to start (``len(pending)`` without the tuple)."""
        return len(self._queue.pending)

    def priority_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(pending, e1, bkstar)``: the pending job ids as an array, in submission order,
        and E(1) and b(K*) of every job indexed by job id (read-only; the last two built once
        per simulator). What a vectorised Eq. (12) reads instead of a snapshot per decision."""
        caches = self._caches
        if caches.columns is None:
            size = max(self._profiles, default=0) + 1
            e1, bk = np.zeros(size), np.zeros(size)
            for j, p in self._profiles.items():
                e1[j], bk[j] = p.single_gpu_exec, p.min_bandwidth_kstar
            e1.setflags(write=False)
            bk.setflags(write=False)
            caches.columns = (e1, bk)
        return self._queue.ids(), *caches.columns

    def pending_maxima(self) -> tuple[float, float]:
        """``(max E(1), max b(K*))`` over the pending queue, 0.0 when it is empty: the
        divisors of Eqs. (9)-(10), from two max-heaps kept from the first call on (pushed at
        each arrival and each return to the queue, stale tops dropped when asked): O(log n)
        per decision on a queue of thousands. A maximum is exact, so these are the floats a
        pass over the queue gives."""
        return self._queue.maxima_now()

    def _need_array(self) -> np.ndarray:
        """Each job's smallest memory floor (its fewest GPUs anywhere), indexed by job id."""
        caches = self._caches
        if caches.need is None:
            min_floor = self._queue.min_floor
            need = np.zeros(max(min_floor, default=0) + 1, dtype=np.int64)
            for j, n in min_floor.items():
                need[j] = n
            caches.need = need
        return caches.need

    @property
    def running(self) -> tuple[int, ...]:
        """Job ids running now, in start order."""
        return tuple(self._running)

    @property
    def n_in_system(self) -> int:
        """Jobs submitted and not finished (pending plus running)."""
        return len(self._queue.pending) + len(self._running)

    def profile(self, job_id: int) -> JobProfile:
        """The job's :class:`JobProfile` (K*, b(L), E(1), ...)."""
        return self._profiles[job_id]

    def memory_floor(self, job_id: int) -> tuple[int, ...]:
        """Per region, the fewest GPUs the job's pipeline must have to fit in that region's GPU
        memory (semantics §3a); all ones when the scenario ignores memory."""
        return self._floors[job_id]

    def fits(self, job_id: int, placement: Placement) -> bool:
        """Whether every stage of ``placement`` fits in its GPU's memory."""
        if not self._memory:
            return True
        floors = self._floors[job_id]
        if placement.replicas:  # every copy holds L stages (semantics §3e)
            n = placement.stages
            return all(n >= floors[r] for r in placement.regions)
        n = placement.n_gpus
        return all(n >= floors[r] for r in placement.path)

    def execution_time(self, job_id: int, placement: Placement) -> float:
        """Eq. (2): the job's execution time on ``placement`` (seconds), ``I * t_iter``, as
        the schedulers estimate it (:meth:`iteration_time`)."""
        return self._profiles[job_id].iterations * self.iteration_time(job_id, placement)

    def iteration_time(self, job_id: int, placement: Placement) -> float:
        """Eq. (1): one iteration of the job on ``placement`` (seconds), on the links'
        capacities now (they differ from the nominal ones only under a link change), as the
        schedulers estimate it: by the paper's model unless ``scheduler_model`` is
        ``"world"`` (the world's own time is :meth:`world_execution_time`)."""
        memo = self._caches.iteration_times if self.faults is None else None  # nominal links
        if memo is not None:
            got = memo.get((job_id, placement))
            if got is not None:
                return got
        prof = self._profiles[job_id]
        rows = None if self.faults is None else self._ledger.capacity_now
        t = job_iteration_time(prof, self._cluster, placement, rows)
        if memo is not None:
            memo[(job_id, placement)] = t
            if len(memo) > MEMO_SIZE:
                memo.popitem(last=False)  # the oldest first, in O(1)
        return t

    def world_execution_time(self, job_id: int, placement: Placement) -> float:
        """The job's execution time on ``placement`` (seconds) by the model the world runs by
        (``world.model``), on the links' capacities now: what a start books. The same as
        :meth:`execution_time` when the schedulers estimate with the world's model."""
        prof = self._world_profiles[job_id]
        if prof is self._profiles[job_id]:
            return self.execution_time(job_id, placement)
        rows = None if self.faults is None else self._ledger.capacity_now
        t = job_iteration_time(prof, self._cluster, placement, rows)
        return prof.iterations * t

    def world_links_fit(
        self, job_id: int, placement: Placement, residual: tuple[tuple[float, ...], ...]
    ) -> bool:
        """Whether the links of ``placement`` can carry what the job books under the world's
        model, ``b(L)`` by the world's profile, on ``residual`` (which under the physical
        model is already what both directions can carry). Always true when the schedulers
        estimate with the world's model: the placement policy checked that very need."""
        if placement.replicas:  # the copies' bookings together, which no policy checked
            return all(
                amount <= residual[u][v] * (1.0 + BANDWIDTH_RTOL)
                for (u, v), amount in self.bookings(job_id, placement).items()
            )
        prof = self._world_profiles[job_id]
        if prof is self._profiles[job_id] or len(placement.path) < 2:
            return True
        need = prof.min_bandwidth(placement.n_gpus)
        return all(need <= residual[u][v] * (1.0 + BANDWIDTH_RTOL) for u, v in placement.links)

    def next_release(self) -> Release | None:
        """The state right after the earliest running job finishes (every job finishing at
        that instant released); ``None`` when nothing is running."""
        memo = self._caches.release
        if memo is not None and memo[0] == self._version:
            return memo[1]  # nothing started, ended or changed since it was worked out
        if not self._running:
            got = None
        else:
            t = min(r.finish for r in self._running.values())
            got = self._state_without({j for j, r in self._running.items() if r.finish == t}, t)
        self._caches.release = (self._version, got)
        return got

    def _state_without(self, done: set[int], t: float) -> Release:
        """The cluster at time ``t`` once the running jobs ``done`` have given back their GPUs
        and bandwidth (the others keep theirs)."""
        running = self._running
        return self._ledger.without({j: running[j].placement for j in done}, t)

    def placement_on(self, job_id: int, state: Release) -> Placement | None:
        """What the placement policy would offer ``job_id`` at ``state`` (``None`` if nothing,
        or nothing that fits in memory)."""
        return self._placed(job_id, state.free, state.residual, state.time)

    def _placed(
        self,
        job_id: int,
        free: tuple[int, ...],
        residual: tuple[tuple[float, ...], ...],
        time: float | None = None,
    ) -> Placement | None:
        """The placement policy's answer for ``job_id`` on the given free GPUs and residual
        bandwidth (now when ``time`` is None: asked on the simulator itself), None unless it
        fits in memory. A pure policy's answers are remembered by state and job shape
        (:meth:`placement_shape`), in a memo every clone shares: a planner's forks ask about
        the same states again and again."""
        policy = self.placement_policy
        caches = self._caches
        memo_on = policy.pure and caches.memo_on
        if memo_on:
            key = (free, residual, self.placement_shape(job_id))
            memo = caches.placement_answers
            got = memo.get(key, _MISSING)
            if got is not _MISSING:
                return got  # type: ignore[return-value]
        view: SchedulerView = self if time is None else StateView(self, time, free, residual)
        p = policy.place(view, job_id)
        if p is None or not p.path or not self.fits(job_id, p):
            p = None
        elif not self.world_links_fit(job_id, p, residual):
            p = None  # the world's model needs more bandwidth than the policy's estimate
        if memo_on:
            memo[key] = p
            if len(memo) > caches.memo_size:
                memo.popitem(last=False)  # the oldest first, in O(1)
        return p

    def placement_shape(self, job_id: int) -> tuple[object, ...]:
        """What a job's placement depends on besides the cluster's state: jobs of one shape
        get one placement on one state (the environment's previews group them alike)."""
        keys = self._caches.shape_keys
        key = keys.get(job_id)
        if key is None:
            p = self._profiles[job_id]
            w = self._world_profiles[job_id]  # what the world books: it can refuse an answer
            key = keys[job_id] = (
                p.k_star,
                p.activation_bytes,
                p.compute_coeff,
                p.stage_overhead,
                p.n_micro,
                self._floors[job_id],
                w.compute_coeff,
            )
        return key

    def full_gpus(self, job_id: int) -> int:
        """``min(K*, GPUs the placement policy gives the job on the idle cluster)``: what the
        ``full`` admission rule waits for (K* if the idle cluster offers nothing)."""
        memo = self._caches.full_gpus
        got = memo.get(job_id)
        if got is None:
            idle = Release(self._time, self._cluster.capacity, self._ledger.nominal)
            p = self.placement_on(job_id, idle)
            k_star = self._profiles[job_id].k_star
            got = memo[job_id] = k_star if p is None else min(k_star, p.n_gpus)
        return got

    def admits(self, job_id: int, placement: Placement) -> bool:
        """Whether the admission rule starts ``job_id`` now on ``placement`` (which fits)."""
        return self._greedy or self.admission.admit(self, job_id, placement)

    def offer(self, job_id: int, replicas: int | None = None) -> Placement | None:
        """The placement ``job_id`` would start on now: the placement policy's answer if it
        fits in memory and the admission rule takes it, else ``None``. Changes nothing.
        ``replicas`` data-parallel copies of its pipeline (semantics §3e; default: the job's
        ``min_replicas``, what every elasticity rule starts it with)."""
        p = self._placed(job_id, self.free_gpus, self.residual_rows)
        if p is None:
            return None
        d = self.replica_range(job_id)[0] if replicas is None else replicas
        if d > 1:
            p = self.replicate(job_id, p, d)
            if p is None:
                return None
        return p if self.admits(job_id, p) else None

    @property
    def job_seconds(self) -> float:
        """Integral of the number of jobs in the system over time so far (s); at the end it is
        the sum of all JCTs."""
        return self._accounts.job_seconds

    @property
    def cost_accrued(self) -> float:
        """Cost incurred by running jobs so far ($): electricity, plus egress (spread evenly
        over each job's execution) when the tariff charges it; at the end, the run's total."""
        return self._accounts.cost_accrued

    @property
    def carbon_accrued(self) -> float:
        """Emissions of the running jobs' electricity so far (kg CO2e); at the end, the total."""
        return self._accounts.carbon_now(self._running.values(), self._time)

    @property
    def recovery(self) -> FaultModel:
        """What an interrupted attempt costs: the checkpoint interval, the restart, the
        checkpoint written at a preemption and the most preemptions of a job (the scenario's
        fault model, or the defaults)."""
        return self._recovery

    @property
    def preempts(self) -> bool:
        """Whether running jobs may be preempted in this run (a rule, or the caller's
        decisions)."""
        return self._preempts

    @property
    def tariff(self) -> Tariff:
        """The scenario's prices, carbon intensities and egress charges over time."""
        return self._accounts.tariff

    def announced(self) -> tuple[int, ...]:
        """The jobs known ahead of their submission: the ids of the jobs not yet submitted
        (submit time > now) whose submit time is at most ``now + announce_h`` hours (the
        scenario's calendar, :class:`~bacepipe_env.core.scenario.Scenario`), in submission
        order; ``()`` without a calendar. A job submitted now or earlier is never announced
        (it is pending, running or done), nor is a job a lookahead-limited clone left out.
        Two bisections over the submission order, then one step per announced job."""
        ahead = self.scenario.announce_h
        if ahead <= 0.0:
            return ()
        times, now = self._submit_order(), self._time
        lo = bisect.bisect_right(times, now)
        hi = bisect.bisect_right(times, now + ahead * SECONDS_PER_HOUR, lo)
        order, unknown = self._order, self._unknown
        ids = (order[i].job_id for i in range(lo, hi))
        return tuple(j for j in ids if j not in unknown) if unknown else tuple(ids)

    def _submit_order(self) -> tuple[float, ...]:
        """The submit times in submission order (``_order``'s, so sorted), made on first use
        and then shared by clones (it never changes)."""
        caches = self._caches
        if caches.submit_times is None:
            caches.submit_times = tuple(j.submit_time for j in self._order)
        return caches.submit_times

    @property
    def n_jobs(self) -> int:
        """Jobs in the scenario."""
        return len(self._jobs)

    def running_placements(self) -> list[tuple[Placement, float]]:
        """``(placement, finish time)`` of every running job, in start order."""
        return [(r.placement, r.finish) for r in self._running.values()]

    def job_state(self, job_id: int) -> tuple[float, Placement | None, float | None]:
        """``(start, placement, finish)`` of a started job, ``(nan, None, None)`` otherwise."""
        run = self._running.get(job_id)
        if run is not None:
            return run.start, run.placement, run.finish
        rec = self._accounts.records.get(job_id)
        if rec is not None:
            return rec.start_time, rec.placement, rec.finish_time
        return math.nan, None, None

    @property
    def done(self) -> bool:
        """True once every job has finished (every job the simulation knows of: a clone with
        a limited lookahead knows only the jobs submitted, or announced, when it was made)."""
        return len(self._accounts.records) == len(self._jobs) - len(self._unknown)

    # ------------------------------------------------------------ preemption (semantics §3c)
    def _running_row(self, job_id: int, run: Running) -> RunningJob:
        """What a preemption rule reads of one running job."""
        book = self._book
        assert book is not None
        return running_row(job_id, run, self._time, self._recovery, book)

    def preemption_view(self) -> PreemptionView:
        """What a preemption rule decides from now (see :class:`PreemptionView`): every running
        job, and, computed when asked, the pending jobs each preemption would let start. A
        one-line SimulationError when preemption is off.

        The beneficiaries and the queue's minima come through a
        :class:`~bacepipe_env.core.helped.HelpedMemo`, which keeps them across versions while
        what they depend on (the cluster's books, the jobs being preempted, the pending queue)
        stands: the same answers as a fresh computation, without its placements."""
        if not self._preempts:
            raise SimulationError("preemption is off: give the simulator a preemption rule")
        caches = self._caches
        version = self._version
        if caches.view is not None and caches.view[0] == version:
            return caches.view[1]  # nothing changed since it was made: its answers stand
        book = self._book
        assert book is not None
        now, rec, running = self._time, self._recovery, self._running
        rows = tuple(running_row(j, run, now, rec, book) for j, run in running.items())
        draining = frozenset(j for j, run in running.items() if run.preempted_at is not None)
        memo = caches.helped
        if memo is None:
            memo = caches.helped = HelpedMemo()
        pure = self.placement_policy.pure
        ledger_key = (self._ledger.epoch, draining, None if pure else version)
        queue_key = self._queue.epoch

        def kept() -> HelpedMemo:
            """The memo, synced to this view's state; a throwaway one for a view read after
            its simulator moved on (which answers on the state then, as it always did)."""
            got = memo if caches.helped is memo and self._version == version else HelpedMemo()
            got.sync(ledger_key, queue_key)
            return got

        def compute(victim: int) -> tuple[Beneficiary, ...]:
            return kept().helped(victim, self, draining, now)

        def minima() -> tuple[float, float]:
            return kept().minima(self)

        view = PreemptionView(
            now,
            rows,
            minima=minima,
            checkpoint_s=rec.preempt_checkpoint_s,
            restart_s=rec.restart_s,
            compute=compute,
        )
        caches.view = (version, view)
        return view

    def _least_remaining(self, job_id: int) -> float:
        """A lower bound on the job's remaining time on any placement, as the schedulers
        estimate it: the iteration with no communication and K* GPUs' per-stage compute
        (``L t(L) >= coeff + c0`` and ``Delta >= t(K*)`` for every ``L <= K*``, forward and
        backward), times its iterations left (the bound per iteration worked out once per
        job and shared by clones)."""
        book = self._book
        assert book is not None
        floors = self._caches.iteration_floors
        floor = floors.get(job_id)
        if floor is None:
            p = self._profiles[job_id]
            high = self.replica_range(job_id)[1]  # its most copies, each with ceil(M / d)
            m1, k = replica_micro_batches(p.n_micro, high) - 1, p.k_star
            forward = p.compute_coeff + p.stage_overhead + m1 * p.t_comp(k)
            back = p.compute_coeff if p.backward_coeff is None else p.backward_coeff
            floor = floors[job_id] = forward + (back + p.stage_overhead + m1 * p.t_bwd(k))
        restart = self._recovery.restart_s if book.has_run(job_id) else 0.0
        return restart + book.iters_left[job_id] * floor
