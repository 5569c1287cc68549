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
"""

from __future__ import annotations

import bisect
import copy
import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import PlacementError, SimulationError, ValidationError, choices
from .admission import AdmissionRule, make_admission
from .cluster import Cluster
from .faults import Attempt, FaultModel
from .limits import HORIZON_H, HORIZON_S, MEMO_CELLS
from .network import network_utilization_rows
from .perf import JobProfile, electricity_cost, iteration_time, placement_comm_times
from .placement import Placement
from .preemption import Beneficiary, PreemptionRule, PreemptionView, RunningJob, make_preemption
from .scenario import Scenario
from .tariff import Tariff
from .units import SECONDS_PER_HOUR, hours
from .validate import require_int

__all__ = [
    "BANDWIDTH_RTOL",
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

#: A placement may reserve up to this relative amount more than a link's residual bandwidth:
#: Alg. 1 checks ``A / b <= t_comp(g)`` while the ledger books ``b(g) = A / t_comp(g)``, and the
#: two can differ in the last bit.
BANDWIDTH_RTOL = 1e-9
#: A job interrupted this many times without finishing ends the run with a SimulationError:
#: its failures outpace its checkpoints, and it would restart forever.
MAX_ATTEMPTS = 10_000
#: The checkpoint, restart and preemption settings of a scenario without a fault model.
_DEFAULT_RECOVERY = FaultModel()
#: The most entries each shared memo keeps (placements by state, iteration times).
_MEMO_SIZE = 65536
_MISSING = object()
#: From this many regions on, the residual bandwidth view caches its hash (:class:`_Rows`);
#: below, hashing a plain tuple of K^2 floats in C is as fast.
_HASHED_FROM = 16
#: From this many pending jobs on, a decision's candidates are filtered with numpy (the same
#: tuple, in the same order; below it the plain loop is faster).
_VECTOR_QUEUE = 48
_FINITE_FIELDS = (
    "avg_jct",
    "total_cost",
    "total_carbon",
    "total_egress_cost",
    "makespan",
    "mean_slowdown",
    "wasted_cost",
    "gpu_hours",
)


@runtime_checkable
class SchedulerView(Protocol):
    """What a policy may read: the state a real scheduler's State Collector and Job Parser have
    (no future arrivals). :class:`Simulator` implements it."""

    @property
    def time(self) -> float: ...
    @property
    def cluster(self) -> Cluster: ...
    @property
    def free_gpus(self) -> tuple[int, ...]: ...
    @property
    def residual_rows(self) -> tuple[tuple[float, ...], ...]: ...
    @property
    def network_utilization(self) -> float: ...
    @property
    def pending(self) -> tuple[int, ...]: ...
    def profile(self, job_id: int) -> JobProfile: ...
    def memory_floor(self, job_id: int) -> tuple[int, ...]: ...


class OrderingPolicy(Protocol):
    """Picks which pending job to place next."""

    name: str

    def choose(self, view: SchedulerView, candidates: Sequence[int]) -> int:
        """Return one of ``candidates`` (job ids, in submission order)."""
        ...


class PlacementPolicy(Protocol):
    """Decides where a job runs; ``None`` (or an empty placement) leaves it pending.

    ``pure`` says whether the answer depends only on the cluster, the free GPUs, the residual
    bandwidth and the job's profile; the Gym environment then memoises its placement previews.
    A pure policy may also have a hashable ``memo_key``: policies of one type with equal keys
    give equal answers, so the environments of one process share their memoised previews
    (without one, only the envs given the same policy object share them).
    """

    name: str
    pure: bool

    def place(self, view: SchedulerView, job_id: int) -> Placement | None:
        """Return a placement on the currently free GPUs and residual bandwidth."""
        ...


@dataclass(frozen=True)
class JobRecord:
    """What happened to one job. Times in seconds, cost in dollars, bandwidth in bytes/s,
    emissions in kg CO2e. ``cost`` is the electricity (Eq. 4, or its integral under hourly
    prices); ``egress_cost`` the cross-region traffic, 0 unless the tariff charges it."""

    job_id: int
    name: str
    model: str
    dataset: str
    k_star: int
    memory_floor: int  # the fewest GPUs the job fits in (1 when memory is ignored)
    submit_time: float
    start_time: float
    finish_time: float
    wait: float  # W
    execution: float  # E, Eq. (2)
    jct: float  # T = W + E, Eq. (3)
    cost: float  # C, Eq. (4)
    placement: Placement
    reserved_bandwidth: float  # b(L) on each cross-region link of the path
    carbon: float = 0.0  # kg CO2e of its electricity
    egress_cost: float = 0.0  # $ of cross-region traffic (semantics §10)
    slowdown: float = 1.0  # jct / the execution on K* GPUs in one region (semantics §12)
    attempts: tuple[Attempt, ...] = ()  # every run of the job, the last one completed
    wasted_gpu_seconds: float = 0.0  # GPU-seconds of restarts and of work lost to faults
    wasted_cost: float = 0.0  # $ of electricity of those GPU-seconds

    @property
    def restarts(self) -> int:
        """Attempts after the first (0 in a world without faults or preemption)."""
        return max(0, len(self.attempts) - 1)

    @property
    def preemptions(self) -> int:
        """Attempts that a preemption ended (semantics §3c)."""
        return sum(1 for a in self.attempts if a.outcome == "preempted")

    @property
    def gpu_seconds(self) -> float:
        """GPU-seconds the job held, over all its attempts."""
        if len(self.attempts) <= 1:
            return self.n_gpus * self.execution
        return math.fsum(a.placement.n_gpus * a.duration for a in self.attempts)  # type: ignore[attr-defined]

    @property
    def n_gpus(self) -> int:
        """L, the GPUs (= pipeline stages) the job ran on."""
        return self.placement.n_gpus

    def to_dict(self, names: Sequence[str]) -> dict[str, Any]:
        """A JSON-ready dict; ``names`` are the cluster's region names."""
        return {
            "job_id": self.job_id,
            "name": self.name,
            "model": self.model,
            "dataset": self.dataset,
            "k_star": self.k_star,
            "memory_floor": self.memory_floor,
            "gpus": self.n_gpus,
            "path": [{"region": names[r], "gpus": n} for r, n in zip(*_pg(self.placement))],
            "submit_s": self.submit_time,
            "start_s": self.start_time,
            "finish_s": self.finish_time,
            "wait_s": self.wait,
            "execution_s": self.execution,
            "jct_s": self.jct,
            "cost_usd": self.cost,
            "carbon_kg": self.carbon,
            "egress_usd": self.egress_cost,
            "slowdown": self.slowdown,
            "reserved_bandwidth_Bps": self.reserved_bandwidth,
            "restarts": self.restarts,
            "preemptions": self.preemptions,
            "wasted_gpu_hours": hours(self.wasted_gpu_seconds),
            "wasted_cost_usd": self.wasted_cost,
            "attempts": [
                {
                    "start_s": a.start,
                    "end_s": a.end,
                    "path": [
                        {"region": names[r], "gpus": n}
                        for r, n in zip(*_pg(a.placement))  # type: ignore[arg-type]
                    ],
                    "outcome": a.outcome,
                }
                for a in self.attempts
            ],
        }


def _pg(p: Placement) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return p.path, p.gpus


@dataclass(frozen=True)
class RunResult:
    """One episode's outcome: per-job records (in job id order) and the run's totals."""

    scenario: str
    policy: str
    records: tuple[JobRecord, ...]
    avg_jct: float  # s, Eq. (7)
    total_cost: float  # $, Eq. (8)
    makespan: float  # s, last completion minus first submission
    gpu_utilization: float  # busy GPU-seconds / (total GPUs * makespan)
    n_decisions: int  # placement attempts made
    admission: str = "greedy"  # the admission rule the run used
    ignore_memory: bool = False  # True: the paper's literal semantics, no memory check
    total_carbon: float = 0.0  # kg CO2e
    total_egress_cost: float = 0.0  # $, 0 unless the tariff charges egress
    jct_p50: float = 0.0  # s
    jct_p95: float = 0.0  # s
    jct_p99: float = 0.0  # s
    mean_slowdown: float = 1.0  # mean of jct / ideal execution
    prices: str = "flat"  # the tariff's price model
    start_hour: float = 0.0  # the hour of 2023 that time 0 falls on (hourly prices)
    egress: bool = False  # whether egress was charged
    n_restarts: int = 0  # attempts that followed a failure, an outage or a preemption
    wasted_gpu_hours: float = 0.0  # restarts and work lost to faults
    wasted_cost: float = 0.0  # $ of electricity of the wasted GPU-hours
    gpu_hours: float = 0.0  # every GPU-hour held, useful + wasted
    preemption: str = "none"  # the preemption rule the run used (semantics §3c)
    n_preemptions: int = 0  # attempts a preemption ended

    @property
    def throughput(self) -> float:
        """Jobs completed per hour of makespan (0 for a zero makespan)."""
        return len(self.records) / hours(self.makespan) if self.makespan > 0 else 0.0

    def to_dict(self, names: Sequence[str]) -> dict[str, Any]:
        """A JSON-ready dict; ``names`` are the cluster's region names."""
        return {
            "scenario": self.scenario,
            "policy": self.policy,
            "avg_jct_s": self.avg_jct,
            "avg_jct_h": hours(self.avg_jct),
            "total_cost_usd": self.total_cost,
            "total_egress_usd": self.total_egress_cost,
            "total_carbon_kg": self.total_carbon,
            "jct_p50_s": self.jct_p50,
            "jct_p95_s": self.jct_p95,
            "jct_p99_s": self.jct_p99,
            "mean_slowdown": self.mean_slowdown,
            "throughput_jobs_per_h": self.throughput,
            "n_restarts": self.n_restarts,
            "preemption": self.preemption,
            "n_preemptions": self.n_preemptions,
            "gpu_hours": self.gpu_hours,
            "wasted_gpu_hours": self.wasted_gpu_hours,
            "wasted_cost_usd": self.wasted_cost,
            "makespan_s": self.makespan,
            "makespan_h": hours(self.makespan),
            "gpu_utilization": self.gpu_utilization,
            "n_decisions": self.n_decisions,
            "admission": self.admission,
            "ignore_memory": self.ignore_memory,
            "prices": self.prices,
            "start_hour": self.start_hour,
            "egress": self.egress,
            "jobs": [r.to_dict(names) for r in self.records],
        }


class _Rows(tuple):  # type: ignore[type-arg]
    """A tuple that computes its hash once: the residual bandwidth view and its rows, which the
    placement memo hashes at every decision. A plain tuple's hash is recomputed at every lookup
    (K^2 floats: 1.3 ms a decision at 256 regions); a view's is worked out once from its rows'
    own cached hashes, so a decision costs one hash per changed row and K for the view. Equal
    to, and hashing like, the plain tuple of the same values."""

    def __hash__(self) -> int:
        cached = self.__dict__
        h: int | None = cached.get("h")
        if h is None:
            h = cached["h"] = tuple.__hash__(self)
        return h


@dataclass(frozen=True)
class Release:
    """The cluster right after the next GPU release: every running job finishing at ``time``
    has given back its GPUs and bandwidth. What admission rules look ahead to."""

    time: float  # s
    free: tuple[int, ...]  # free GPUs per region
    residual: tuple[tuple[float, ...], ...]  # residual bandwidth, bytes/s


class _StateView:
    """A :class:`SchedulerView` of a hypothetical state (another instant's free GPUs and
    residual bandwidth), for asking the placement policy what it would do then."""

    def __init__(self, sim: Simulator, time: float, free: tuple[int, ...], residual: Any) -> None:
        self._sim = sim
        self.time = time
        self.free_gpus = free
        self.residual_rows = residual

    @property
    def cluster(self) -> Cluster:
        return self._sim.cluster

    @property
    def network_utilization(self) -> float:
        cap = self._sim.cluster.bandwidth_rows
        reserved = [
            [c - r for c, r in zip(crow, rrow)] for crow, rrow in zip(cap, self.residual_rows)
        ]
        return network_utilization_rows(reserved, self._sim.cluster.link_capacity)

    @property
    def pending(self) -> tuple[int, ...]:
        return self._sim.pending

    def profile(self, job_id: int) -> JobProfile:
        return self._sim.profile(job_id)

    def memory_floor(self, job_id: int) -> tuple[int, ...]:
        return self._sim.memory_floor(job_id)


@dataclass
class _Running:
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

    def copy(self) -> _Running:
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


def _percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values with numpy's default ("linear") method, without
    numpy's per-call overhead: ``numpy.percentile(values, 100 * q)`` to the last bit."""
    h = (len(ordered) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    a, b, t = ordered[lo], ordered[hi], h - lo
    diff = b - a
    return b - diff * (1.0 - t) if t >= 0.5 else a + diff * t


class Simulator:
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
        # each attempt becomes a decision point once it has run this long (0: never)
        wake = (
            preemption_wake_s
            if preemption_decisions
            else getattr(self.preemption, "min_run_s", 0.0)
        )
        if not isinstance(wake, (int, float)) or not 0.0 <= wake < math.inf:
            raise ValidationError("preemption_wake_s", wake, "must be seconds >= 0")
        self._wake_s = float(wake)
        self.validate = validate
        self._cluster = scenario.cluster
        self._profiles = scenario.profiles
        self._floors = scenario.memory_floors
        self._min_floor = {j: min(f) for j, f in self._floors.items()}
        self._memory = not scenario.ignore_memory
        self._full_gpus: dict[int, int] = {}
        self._jobs = {j.job_id: j for j in scenario.jobs}
        # submission order, (submit time, id): the arrivals' order and the pending queue's
        self._order = sorted(self._jobs.values(), key=lambda j: (j.submit_time, j.job_id))
        self._rank = {j.job_id: i for i, j in enumerate(self._order)}
        last = self._order[-1]
        if last.submit_time > HORIZON_S:  # built by hand: the builders refuse it earlier
            raise SimulationError(
                f"job {last.job_id} ({last.name}) is submitted at {_hours_text(last.submit_time)}, "
                f"past the simulation horizon of {HORIZON_H:,.0f} h (HORIZON_H)"
            )
        self._capacity_rows = scenario.cluster.bandwidth_rows
        self._capacity_total = scenario.cluster.link_capacity
        self._prices = list(scenario.cluster.prices)
        self._tariff = tariff = scenario.tariff
        self._flat = tariff.flat
        self._egress = tariff.egress is not None
        self._carbon = tariff.carbon
        faults = scenario.faults
        self.faults: FaultModel | None = faults if faults is not None and faults.dynamic else None
        # the checkpoint, restart and preemption settings, faults or not
        self._recovery = faults if faults is not None else _DEFAULT_RECOVERY
        # attempts are tracked when one can end early or change speed
        self._attempts_on = self.faults is not None or self._preempts
        self._shape_keys: dict[int, tuple[object, ...]] = {}  # see _placement_shape
        self._placement_answers: dict[tuple[object, ...], Placement | None] = {}  # see _placed
        # (job, placement) -> Eq. (1) on the nominal links; shared by clones, like the above
        self._iteration_times: dict[tuple[int, Placement], float] = {}
        self._fault_seed = int(scenario.params.get("seed", 0)) if fault_seed is None else fault_seed
        self._columns: tuple[np.ndarray, np.ndarray] | None = None  # see priority_columns
        self._price_array: np.ndarray | None = None  # see placement_arrays
        self._need: np.ndarray | None = None  # see _need_array
        # the residual view's rows: hashed once on a large cluster (see _Rows)
        k = scenario.cluster.n_regions
        self._rows_type: type[tuple[Any, ...]] = _Rows if k >= _HASHED_FROM else tuple
        # the placement memo's states: each key holds K free GPUs and K residual rows, so a
        # large cluster keeps fewer (16,384 at 256 regions; core.limits.MEMO_CELLS values)
        self._memo_size = max(1024, min(_MEMO_SIZE, MEMO_CELLS // k))
        # and a large cluster's run seldom meets a state twice: its memo is kept only once
        # the simulator has been cloned (a planner's forks do meet them; see clone)
        self._memo_on = k < _HASHED_FROM
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Back to time zero with every job about to arrive."""
        k = self._cluster.n_regions
        self._time = 0.0
        self._free = list(self._cluster.capacity)
        self._free_total = sum(self._free)
        self._free_view: tuple[int, ...] | None = None
        self._reserved = [[0.0] * k for _ in range(k)]
        # link -> its reservation, for the links with one > 0 (what alpha sums)
        self._booked_links: dict[tuple[int, int], float] = {}
        self._residual = [list(row) for row in self._capacity_rows]
        # placement_arrays' mirrors of the free GPUs and the residual ledger, made when asked
        self._free_array: np.ndarray | None = None
        self._free_array_of: tuple[int, ...] | None = None
        self._residual_array: np.ndarray | None = None
        self._residual_view: tuple[tuple[float, ...], ...] | None = None
        # each residual row as a tuple, None once a reservation changed it: the view is
        # rebuilt from the changed rows only (a start or finish touches a few of K)
        self._row_views: list[tuple[float, ...] | None] = [None] * k
        self._alpha: float | None = 0.0
        self._link_jobs: dict[tuple[int, int], dict[int, float]] = {}
        # pending job ids in submission order (a dict: O(1) membership and removal)
        self._pending: dict[int, None] = {}
        self._pending_array: np.ndarray | None = None  # self._pending as an array, or stale
        # max-heaps of (-E(1), id) and (-b(K*), id), see pending_maxima; None until asked
        self._maxima_heaps: tuple[list[tuple[float, int]], list[tuple[float, int]]] | None = None
        # per job shape, its memory floor and pending jobs (see _shape_firsts); None until asked
        self._shapes: list[tuple[int, list[int]]] | None = None
        self._shape_of: dict[int, int] = {}
        self._tried: set[int] = set()
        self._running: dict[int, _Running] = {}
        self._cost_rates: dict[int, float] = {}  # job id -> its run's cost_rate, as _running
        self._records: dict[int, JobRecord] = {}
        self._n_decisions = 0
        self._job_seconds = 0.0
        self._cost_accrued = 0.0
        self._carbon_accrued = 0.0
        self._seq = 0
        self._heap: list[tuple[float, int, int, int]] = []
        for job in self._order:
            self._push(job.submit_time, _ARRIVAL, job.job_id)
        self._capacity_now: Any = self._capacity_rows  # the links' capacity now (faults)
        self._preempt_asked = False  # the preemption rule was asked at this pass's end
        self._version = 0  # bumped at every change a preemption view reads
        self._view: tuple[int, PreemptionView] | None = None  # the last view, at its version
        self._release_memo: tuple[int, Release | None] | None = None  # next_release, likewise
        self._held: list[int] = []  # preempted at this instant: not offered in its pass
        self._unknown: frozenset[int] = frozenset()  # jobs a lookahead-limited clone left out
        if self._attempts_on:
            self._reset_attempts()
        if self.faults is not None:
            self._reset_faults(self.faults)

    def _push(self, t: float, kind: int, job_id: int) -> None:
        heapq.heappush(self._heap, (t, kind, self._seq, job_id))
        self._seq += 1

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
        if self._free_view is None:
            self._free_view = tuple(self._free)
        return self._free_view

    @property
    def residual_rows(self) -> tuple[tuple[float, ...], ...]:
        """Residual bandwidth ``B - reserved`` (bytes/s) as nested tuples; row u, column v."""
        if self._residual_view is None:
            rows, make = self._row_views, self._rows_type
            for u, row in enumerate(rows):
                if row is None:
                    rows[u] = make(self._residual[u])
            self._residual_view = make(rows)  # no None is left
        return self._residual_view

    def placement_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(free, prices, residual)``: :attr:`free_gpus` (int64, K), the cluster's prices
        (float64, K) and :attr:`residual_rows` (float64, K x K) as arrays holding the same
        numbers, for a compiled placement rule. The residual array is kept up to date in place
        from the first call on (one element per ledger change), the free array rebuilt after
        a change; read them, do not modify them."""
        free = self.free_gpus
        free_array = self._free_array
        if free_array is None or self._free_array_of is not free:
            free_array = self._free_array = np.array(free, dtype=np.int64)
            self._free_array_of = free
        if self._residual_array is None:
            self._residual_array = np.array(self._residual, dtype=np.float64)
        if self._price_array is None:
            self._price_array = np.array(self._cluster.prices, dtype=np.float64)
        return free_array, self._price_array, self._residual_array

    @property
    def residual_bandwidth(self) -> np.ndarray:
        """Residual bandwidth as a fresh (K, K) array (bytes/s)."""
        return np.array(self.residual_rows, dtype=float)

    @property
    def reserved_bandwidth(self) -> np.ndarray:
        """Reserved bandwidth per directed link as a fresh (K, K) array (bytes/s)."""
        return np.array(self._reserved, dtype=float)

    @property
    def down_regions(self) -> tuple[bool, ...]:
        """Per region, whether it is down now (an outage, semantics §11); all False without
        faults."""
        if self.faults is None:
            return (False,) * self._cluster.n_regions
        return tuple(self._down)

    @property
    def link_capacity_rows(self) -> tuple[tuple[float, ...], ...]:
        """The links' capacity now (bytes/s) as nested tuples, row u = links out of u: the
        nominal ``cluster.bandwidth_rows`` times the factors of the link changes in force
        (semantics §11); the nominal rows themselves without faults."""
        if self.faults is None:
            return self._capacity_rows
        return tuple(tuple(row) for row in self._capacity_now)

    @property
    def network_utilization(self) -> float:
        """Eq. (11) alpha on the current reservations."""
        if self._alpha is None:
            # Eq. (11) over the booked links only: fsum is correctly rounded, so leaving out
            # the zeros gives the very same float as summing all K^2 entries, in O(booked)
            total = self._capacity_total
            booked = math.fsum(self._booked_links.values())
            self._alpha = booked / total if total > 0.0 else 0.0
        return self._alpha

    @property
    def pending(self) -> tuple[int, ...]:
        """Job ids waiting to start, in submission order."""
        return tuple(self._pending)

    @property
    def n_pending(self) -> int:
        """How many jobs wait to start (``len(pending)`` without the tuple)."""
        return len(self._pending)

    def priority_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(pending, e1, bkstar)``: the pending job ids as an array, in submission order,
        and E(1) and b(K*) of every job indexed by job id (read-only; the last two built once
        per simulator). What a vectorised Eq. (12) reads instead of a snapshot per decision."""
        if self._columns is None:
            size = max(self._profiles, default=0) + 1
            e1, bk = np.zeros(size), np.zeros(size)
            for j, p in self._profiles.items():
                e1[j], bk[j] = p.single_gpu_exec, p.min_bandwidth_kstar
            e1.setflags(write=False)
            bk.setflags(write=False)
            self._columns = (e1, bk)
        if self._pending_array is None:
            self._pending_array = np.fromiter(self._pending, np.intp, len(self._pending))
        return self._pending_array, *self._columns

    def pending_maxima(self) -> tuple[float, float]:
        """``(max E(1), max b(K*))`` over the pending queue, 0.0 when it is empty: the
        divisors of Eqs. (9)-(10), from two max-heaps kept from the first call on (pushed at
        each arrival and each return to the queue, stale tops dropped when asked): O(log n)
        per decision on a queue of thousands. A maximum is exact, so these are the floats a
        pass over the queue gives."""
        heaps = self._maxima_heaps
        if heaps is None:
            heaps = self._maxima_heaps = ([], [])
            for j in self._pending:
                self._push_maxima(j)
        pending = self._pending
        out = []
        for heap in heaps:
            while heap and heap[0][1] not in pending:
                heapq.heappop(heap)
            out.append(-heap[0][0] if heap else 0.0)
        return out[0], out[1]

    def _push_maxima(self, job_id: int) -> None:
        """A job (back) in the queue: onto :meth:`pending_maxima`'s heaps, once they exist."""
        heaps = self._maxima_heaps
        if heaps is not None:
            p = self._profiles[job_id]
            heapq.heappush(heaps[0], (-p.single_gpu_exec, job_id))
            heapq.heappush(heaps[1], (-p.min_bandwidth_kstar, job_id))

    def _need_array(self) -> np.ndarray:
        """Each job's smallest memory floor (its fewest GPUs anywhere), indexed by job id."""
        if self._need is None:
            need = np.zeros(max(self._min_floor, default=0) + 1, dtype=np.int64)
            for j, n in self._min_floor.items():
                need[j] = n
            self._need = need
        return self._need

    @property
    def running(self) -> tuple[int, ...]:
        """Job ids running now, in start order."""
        return tuple(self._running)

    @property
    def n_in_system(self) -> int:
        """Jobs submitted and not finished (pending plus running)."""
        return len(self._pending) + len(self._running)

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
        n = placement.n_gpus
        return all(n >= floors[r] for r in placement.path)

    def execution_time(self, job_id: int, placement: Placement) -> float:
        """Eq. (2): the job's execution time on ``placement`` (seconds), ``I * t_iter``."""
        return self._profiles[job_id].iterations * self.iteration_time(job_id, placement)

    def iteration_time(self, job_id: int, placement: Placement) -> float:
        """Eq. (1): one iteration of the job on ``placement`` (seconds), on the links'
        capacities now (they differ from the nominal ones only under a link change)."""
        memo = self._iteration_times if self.faults is None else None  # nominal links
        if memo is not None:
            got = memo.get((job_id, placement))
            if got is not None:
                return got
        prof = self._profiles[job_id]
        rows = None if self.faults is None else self._capacity_now
        comm = placement_comm_times(prof, self._cluster, placement.path, placement.gpus, rows)
        n = placement.n_gpus
        t = iteration_time(prof.t_comp(n), comm, n, prof.n_micro)
        if memo is not None:
            memo[(job_id, placement)] = t
            if len(memo) > _MEMO_SIZE:
                del memo[next(iter(memo))]  # the oldest first
        return t

    def next_release(self) -> Release | None:
        """The state right after the earliest running job finishes (every job finishing at
        that instant released); ``None`` when nothing is running."""
        memo = self._release_memo
        if memo is not None and memo[0] == self._version:
            return memo[1]  # nothing started, ended or changed since it was worked out
        if not self._running:
            got = None
        else:
            t = min(r.finish for r in self._running.values())
            got = self._state_without({j for j, r in self._running.items() if r.finish == t}, t)
        self._release_memo = (self._version, got)
        return got

    def _state_without(self, done: set[int], t: float) -> Release:
        """The cluster at time ``t`` once the running jobs ``done`` have given back their GPUs
        and bandwidth (the others keep theirs)."""
        free = list(self._free)
        touched: set[tuple[int, int]] = set()
        for j in done:
            p = self._running[j].placement
            for r, g in zip(p.path, p.gpus):
                free[r] += g
            touched.update(p.links)
        residual: list[Any] = list(self.residual_rows)  # rows as tuples; touched ones as lists
        for u, v in touched:
            if isinstance(residual[u], tuple):
                residual[u] = list(residual[u])
            left = [b for j, b in self._link_jobs[(u, v)].items() if j not in done]
            residual[u][v] = self._capacity_now[u][v] - (math.fsum(left) if left else 0.0)
        make = self._rows_type
        rows = make(row if isinstance(row, tuple) else make(row) for row in residual)
        return Release(t, tuple(free), rows)

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
        (:meth:`_placement_shape`), in a memo every clone shares: a planner's forks ask about
        the same states again and again."""
        policy = self.placement_policy
        memo_on = policy.pure and self._memo_on
        if memo_on:
            key = (free, residual, self._placement_shape(job_id))
            memo = self._placement_answers
            got = memo.get(key, _MISSING)
            if got is not _MISSING:
                return got  # type: ignore[return-value]
        view: SchedulerView = self if time is None else _StateView(self, time, free, residual)
        p = policy.place(view, job_id)
        if p is None or not p.path or not self.fits(job_id, p):
            p = None
        if memo_on:
            memo[key] = p
            if len(memo) > self._memo_size:
                del memo[next(iter(memo))]  # the oldest first
        return p

    def full_gpus(self, job_id: int) -> int:
        """``min(K*, GPUs the placement policy gives the job on the idle cluster)``: what the
        ``full`` admission rule waits for (K* if the idle cluster offers nothing)."""
        got = self._full_gpus.get(job_id)
        if got is None:
            idle = Release(self._time, self._cluster.capacity, self._capacity_rows)
            p = self.placement_on(job_id, idle)
            k_star = self._profiles[job_id].k_star
            got = self._full_gpus[job_id] = k_star if p is None else min(k_star, p.n_gpus)
        return got

    def admits(self, job_id: int, placement: Placement) -> bool:
        """Whether the admission rule starts ``job_id`` now on ``placement`` (which fits)."""
        return self._greedy or self.admission.admit(self, job_id, placement)

    def offer(self, job_id: int) -> Placement | None:
        """The placement ``job_id`` would start on now: the placement policy's answer if it
        fits in memory and the admission rule takes it, else ``None``. Changes nothing."""
        p = self._placed(job_id, self.free_gpus, self.residual_rows)
        return p if p is not None and self.admits(job_id, p) else None

    @property
    def job_seconds(self) -> float:
        """Integral of the number of jobs in the system over time so far (s); at the end it is
        the sum of all JCTs."""
        return self._job_seconds

    @property
    def cost_accrued(self) -> float:
        """Cost incurred by running jobs so far ($): electricity, plus egress (spread evenly
        over each job's execution) when the tariff charges it; at the end, the run's total."""
        return self._cost_accrued

    @property
    def carbon_accrued(self) -> float:
        """Emissions of the running jobs' electricity so far (kg CO2e); at the end, the total."""
        if self._flat:  # computed when asked: the finished jobs', plus the running ones' so far
            now = self._time
            return self._carbon_accrued + math.fsum(
                r.carbon_rate * (now - r.start) for r in self._running.values()
            )
        return self._carbon_accrued

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
        return self._tariff

    @property
    def has_future_events(self) -> bool:
        """True while an arrival, a completion or a fault is still to come (stale events, a
        failure after its attempt ended or a completion a slowdown moved, do not count)."""
        heap = self._heap
        if self._attempts_on:
            while heap and self._stale(heap[0]):
                heapq.heappop(heap)  # it would be skipped when reached anyway
        return bool(heap)

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
        times: tuple[float, ...] | None = self.__dict__.get("_submit_times")
        if times is None:
            times = self._submit_times = tuple(j.submit_time for j in self._order)
        return times

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
        rec = self._records.get(job_id)
        if rec is not None:
            return rec.start_time, rec.placement, rec.finish_time
        return math.nan, None, None

    @property
    def done(self) -> bool:
        """True once every job has finished (every job the simulation knows of: a clone with
        a limited lookahead knows only the jobs submitted, or announced, when it was made)."""
        return len(self._records) == len(self._jobs) - len(self._unknown)

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
        self._memo_on = True  # forks ask about the same states: the memo pays from now on
        new = object.__new__(Simulator)
        new.__dict__.update(self.__dict__)  # shared: every field not replaced below
        new._free = list(self._free)
        new._reserved = [list(row) for row in self._reserved]
        new._booked_links = dict(self._booked_links)
        new._residual = [list(row) for row in self._residual]
        new._row_views = list(self._row_views)
        new._link_jobs = {link: dict(holders) for link, holders in self._link_jobs.items()}
        if self._residual_array is not None:  # updated in place by _rebook
            new._residual_array = self._residual_array.copy()
        new._pending = dict(self._pending)  # (_pending_array is replaced, never changed)
        if self._maxima_heaps is not None:
            new._maxima_heaps = (list(self._maxima_heaps[0]), list(self._maxima_heaps[1]))
        if self._shapes is not None:
            new._shapes = [(need, list(jobs)) for need, jobs in self._shapes]
        new._tried = set(self._tried)
        new._running = {j: run.copy() for j, run in self._running.items()}
        new._cost_rates = dict(self._cost_rates)
        new._records = dict(self._records)  # the records themselves are frozen
        new._heap = list(self._heap)
        new._held = list(self._held)
        new._view = None  # a view computes through its simulator: the copy makes its own
        if rule is not None:
            new.preemption = rule
            new._agent_preempts = False
        if self._attempts_on:
            new._iters_left = dict(self._iters_left)
            # a finished job's attempts and totals never change again: shared
            done = self._records
            new._attempts = {j: a if j in done else list(a) for j, a in self._attempts.items()}
            new._acc = {j: a if j in done else list(a) for j, a in self._acc.items()}
            new._n_preempted = dict(self._n_preempted)
            new._attained = dict(self._attained)
            new._actions = list(self._actions)
        if self.faults is not None:
            new._rng = copy.deepcopy(self._rng)  # the failures still to be drawn
            new._capacity_now = [list(row) for row in self._capacity_now]
            new._down = list(self._down)
            new._outages_on = list(self._outages_on)
            new._link_on = {link: list(f) for link, f in self._link_on.items()}
            if seed is not None:
                new._redraw_failures(seed)
        if horizon < math.inf:  # the jobs submitted after the lookahead never arrive
            cutoff = self._time + horizon
            late = {e[3] for e in new._heap if e[1] == _ARRIVAL and e[0] > cutoff}
            if late:
                new._heap = [e for e in new._heap if not (e[1] == _ARRIVAL and e[3] in late)]
                heapq.heapify(new._heap)
                new._unknown = self._unknown | late
        return new

    def _redraw_failures(self, seed: int) -> None:
        """A new failure stream from ``seed``: every running attempt's next failure drawn again
        from now (exponential, memoryless), the old draws dropped."""
        faults = self.faults
        assert faults is not None
        self._rng = np.random.default_rng(np.random.SeedSequence([seed, 11]))
        self._heap = [
            e for e in self._heap if not (e[1] == _FAULT and self._actions[e[3]][0] == "fail")
        ]
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
        order) from ``_VECTOR_QUEUE`` pending jobs on: what :meth:`run` hands an ordering's
        ``choose_array`` without building a tuple of the queue. With ``by_shape`` (an
        ordering whose choice among jobs of one shape is always the earliest submitted), a
        long queue gives instead the earliest candidate of each shape, as a tuple in
        submission order (:meth:`_shape_firsts`)."""
        while True:
            free = self._free_total
            if free > 0 and len(self._tried) < len(self._pending):
                tried, need = self._tried, self._min_floor
                # A job whose memory floor exceeds every free GPU together cannot start now.
                if by_shape and len(self._pending) >= _VECTOR_QUEUE:
                    firsts = self._shape_firsts(free)
                    if firsts:
                        return firsts
                elif len(self._pending) < _VECTOR_QUEUE:
                    candidates = tuple(
                        j for j in self._pending if j not in tried and need[j] <= free
                    )
                    if candidates:
                        return candidates
                else:  # the same ids, filtered in numpy
                    pending = self.priority_columns()[0]
                    fit: np.ndarray = pending[self._need_array()[pending] <= free]
                    if tried:
                        fit = fit[~np.isin(fit, np.fromiter(tried, np.intp, len(tried)))]
                    if len(fit):
                        return fit
            if self._preempts and not self._preempt_asked:
                self._preempt_asked = True  # once per pass end (a preemption asks again)
                if self._agent_preempts:
                    if self._running and self._pending and self.preemption_view().any_option():
                        return ()
                elif self._running and self._pending:
                    victim = self.preemption.choose(self.preemption_view())
                    if victim is not None:
                        self.preempt(victim)
                        continue
            if not self._heap:
                if self._pending:
                    what = "that fits in GPU memory " if self._memory else ""
                    raise SimulationError(
                        f"jobs {choices(map(str, self._pending), 60)} can never start: "
                        "placement policy "
                        f"{self.placement_policy.name!r} offers them no placement {what}"
                        f"on the idle cluster"
                    )
                return None
            self._advance()

    def _shape_firsts(self, free: int) -> tuple[int, ...]:
        """The earliest candidate of each shape, in submission order: a shape is a job's
        ``(E(1), b(K*), memory floor)``, everything Eq. (12) and the candidate filter read of
        it, so its other candidates score the same and come later. The shapes' queues are
        built on first use and kept at each arrival, start and return to the queue."""
        groups = self._shape_queues()
        tried = self._tried
        firsts = []
        for need, jobs in groups:
            if jobs and need <= free:
                for j in jobs:
                    if j not in tried:
                        firsts.append(j)
                        break
        firsts.sort(key=self._rank.__getitem__)
        return tuple(firsts)

    def _shape_queues(self) -> list[tuple[int, list[int]]]:
        """Per shape, its memory floor and its pending jobs in submission order."""
        if self._shapes is None:
            keys: dict[tuple[float, float, int], int] = {}
            shapes: list[tuple[int, list[int]]] = []
            for j, p in self._profiles.items():
                key = (p.single_gpu_exec, p.min_bandwidth_kstar, self._min_floor[j])
                if key not in keys:
                    keys[key] = len(shapes)
                    shapes.append((self._min_floor[j], []))
                self._shape_of[j] = keys[key]
            for j in self._pending:  # already in submission order
                shapes[self._shape_of[j]][1].append(j)
            self._shapes = shapes
        return self._shapes

    def _shape_add(self, job_id: int) -> None:
        """A job (back) in the queue: into its shape's queue, in submission order."""
        if self._shapes is not None:
            jobs, rank = self._shapes[self._shape_of[job_id]][1], self._rank
            if not jobs or rank[jobs[-1]] < rank[job_id]:
                jobs.append(job_id)  # an arrival: the latest so far
            else:
                bisect.insort(jobs, job_id, key=rank.__getitem__)

    def _shape_remove(self, job_id: int) -> None:
        """A job out of the queue: out of its shape's queue."""
        if self._shapes is not None:
            jobs, rank = self._shapes[self._shape_of[job_id]][1], self._rank
            del jobs[bisect.bisect_left(jobs, rank[job_id], key=rank.__getitem__)]

    def place(self, job_id: int, placement: Placement | None = None) -> Placement | None:
        """Start ``job_id`` now on the placement :meth:`offer` gives it.

        Returns the placement, or ``None`` if there is none: the policy found nothing, it does
        not fit in GPU memory, or the admission rule declined it. The job then stays pending
        and is not offered again until the next event. A caller that already asked the placement
        policy on this very state (a preview) may pass its ``placement`` instead; it is validated
        the same way, memory included, and the admission rule decides on it as on any offer.
        """
        if job_id not in self._pending or job_id in self._tried:
            raise SimulationError(
                f"job {job_id} is not a candidate now (candidates: "
                f"{choices((str(j) for j in self._pending if j not in self._tried), 60)})"
            )
        if self._free_total <= 0:
            raise SimulationError("no GPU is free: call next_decision() first")
        self._n_decisions += 1
        given = placement is not None
        if placement is None:
            placement = self.offer(job_id)
        if placement is None or not placement.path:
            self._tried.add(job_id)
            return None
        if self.validate:
            self._check(job_id, placement)
        if given and not self.admits(job_id, placement):
            self._tried.add(job_id)
            return None
        self._start(job_id, placement)
        return placement

    def defer(self) -> None:
        """End the current scheduling pass: nothing more is placed (or preempted) until the
        next event."""
        self._tried.update(self._pending)
        self._preempt_asked = True

    def decline(self, job_ids: Sequence[int]) -> None:
        """Leave these candidates pending until the next event, as if each had been offered
        and had no placement that could start (what a caller that previewed them does)."""
        for job_id in job_ids:
            if job_id in self._pending:
                self._n_decisions += 1
                self._tried.add(job_id)

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
            self._tried.clear()  # GPUs came free: a new pass, without the job just stopped
            self._tried.add(job_id)
        else:
            self._version += 1
            run.preempted_at = self._time
            run.finish = self._time + ckpt
            run.execution = run.finish - run.start
            run.token = self._seq
            self._push(run.finish, _COMPLETION, job_id)
        self._preempt_asked = False

    def _running_row(self, job_id: int, run: _Running) -> RunningJob:
        """What a preemption rule reads of one running job."""
        now, rec = self._time, self._recovery
        n = run.placement.n_gpus
        cs = run.compute_start
        stop = now if run.preempted_at is None else run.preempted_at
        since = 0.0
        if stop > cs:
            ci = rec.checkpoint_interval_s
            since = (stop - cs) - math.floor((stop - cs) / ci) * ci
        remaining = max(0.0, run.finish - now)
        count = self._n_preempted[job_id]
        preemptible = (
            run.preempted_at is None
            and count < rec.max_preemptions
            and remaining > (rec.preempt_checkpoint_s or 0.0)
        )
        attained = self._attained[job_id] + n * (now - run.start)
        return RunningJob(
            job_id, n, remaining, attained, now - run.start, run.start, since, count, preemptible
        )

    def preemption_view(self) -> PreemptionView:
        """What a preemption rule decides from now (see :class:`PreemptionView`): every running
        job, and, computed when asked, the pending jobs each preemption would let start. A
        one-line SimulationError when preemption is off."""
        if not self._preempts:
            raise SimulationError("preemption is off: give the simulator a preemption rule")
        if self._view is not None and self._view[0] == self._version:
            return self._view[1]  # nothing changed since it was made: its answers stand
        now, rec = self._time, self._recovery
        rows = tuple(self._running_row(j, run) for j, run in self._running.items())
        draining = {j for j, run in self._running.items() if run.preempted_at is not None}
        base = self._state_without(draining, now)
        pending = tuple(self._pending)
        groups: dict[tuple[object, ...], list[int]] = {}  # per placement shape, its jobs
        base_memo: dict[tuple[object, ...], bool] = {}  # shape -> it can start without one

        def compute(victim: int) -> tuple[Beneficiary, ...]:
            if not groups:
                for j in pending:
                    groups.setdefault(self._placement_shape(j), []).append(j)
            state = self._state_without(draining | {victim}, now)
            out = []
            iters, attempts, attained = self._iters_left, self._attempts, self._attained
            for key, jobs in groups.items():  # a shape's jobs get one placement on a state
                p = self.placement_on(jobs[0], state)
                if p is None:
                    continue
                if key not in base_memo:
                    base_memo[key] = self.placement_on(jobs[0], base) is not None
                if base_memo[key]:
                    continue  # they can start without this preemption
                t_iter = self.iteration_time(jobs[0], p)
                for j in jobs:
                    remaining = iters[j] * t_iter + (rec.restart_s if j in attempts else 0.0)
                    out.append(Beneficiary(j, remaining, attained[j], p.n_gpus))
            out.sort(key=lambda b: self._rank[b.job_id])  # submission order
            return tuple(out)

        def minima() -> tuple[float, float]:
            lower = min((self._least_remaining(j) for j in pending), default=math.inf)
            return lower, min((self._attained[j] for j in pending), default=math.inf)

        view = PreemptionView(
            now,
            rows,
            minima=minima,
            checkpoint_s=rec.preempt_checkpoint_s,
            restart_s=rec.restart_s,
            compute=compute,
        )
        self._view = (self._version, view)
        return view

    def _least_remaining(self, job_id: int) -> float:
        """A lower bound on the job's remaining time on any placement: Eq. (1) with no
        communication and K* GPUs' per-stage compute (``L t_comp(L) >= coeff + c0`` and
        ``Delta >= t_comp(K*)`` for every ``L <= K*``), times its iterations left."""
        p = self._profiles[job_id]
        floor = 2.0 * (p.compute_coeff + p.stage_overhead + (p.n_micro - 1) * p.t_comp(p.k_star))
        restart = self._recovery.restart_s if job_id in self._attempts else 0.0
        return restart + self._iters_left[job_id] * floor

    def _placement_shape(self, job_id: int) -> tuple[object, ...]:
        """What a job's placement depends on besides the cluster's state: jobs of one shape
        get one placement on one state (the environment's previews group them alike)."""
        key = self._shape_keys.get(job_id)
        if key is None:
            p = self._profiles[job_id]
            key = self._shape_keys[job_id] = (
                p.k_star,
                p.activation_bytes,
                p.compute_coeff,
                p.stage_overhead,
                p.n_micro,
                self._floors[job_id],
            )
        return key

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
        if not self.done:
            raise SimulationError(
                f"{len(self._jobs) - len(self._unknown) - len(self._records)} jobs have not "
                "finished yet"
            )
        recs = tuple(self._records[j] for j in sorted(self._records))
        first = min(r.submit_time for r in recs)
        makespan = max(r.finish_time for r in recs) - first
        busy = math.fsum(r.gpu_seconds for r in recs)
        total = self._cluster.total_gpus
        jcts = sorted(r.jct for r in recs)
        p50, p95, p99 = (_percentile(jcts, q) for q in (0.50, 0.95, 0.99))
        tariff = self._tariff
        out = RunResult(
            scenario=self.scenario.name,
            policy=policy or self.placement_policy.name,
            records=recs,
            avg_jct=math.fsum(r.jct for r in recs) / len(recs),
            total_cost=math.fsum(r.cost for r in recs),
            makespan=makespan,
            gpu_utilization=busy / (total * makespan) if makespan > 0 else 0.0,
            n_decisions=self._n_decisions,
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
            egress=self._egress,
            n_restarts=sum(r.restarts for r in recs),
            preemption=self.preemption.name,
            n_preemptions=sum(r.preemptions for r in recs),
            wasted_gpu_hours=hours(math.fsum(r.wasted_gpu_seconds for r in recs)),
            wasted_cost=math.fsum(r.wasted_cost for r in recs),
            gpu_hours=hours(busy),
        )
        _check_finite(out)
        return out

    # -------------------------------------------------------------- internals
    def _advance(self) -> None:
        """Pop every event at the next instant; a new scheduling pass starts."""
        heap = self._heap
        t = heap[0][0]
        dt = t - self._time
        if dt > 0.0:  # accrue JCT (jobs in system) and electricity (running jobs) up to t
            self._job_seconds += (len(self._pending) + len(self._running)) * dt
            if self._running:
                self._accrue(self._time, t)
        self._time = t
        self._version += 1
        faults = self._attempts_on
        changed = not faults
        while heap and heap[0][0] == t:
            event = heapq.heappop(heap)
            _, kind, _, job_id = event
            if faults and self._stale(event):
                continue
            if kind == _COMPLETION:
                self._finish(job_id)
            elif kind == _FAULT:
                self._on_fault(job_id)
            elif kind == _WAKE:
                pass  # a running attempt may now be preempted: a decision point
            else:
                self._pending[job_id] = None
                if self._pending_array is not None:  # kept, not rebuilt: O(1) numpy calls
                    self._pending_array = np.append(self._pending_array, job_id)
                if self._maxima_heaps is not None:
                    self._push_maxima(job_id)
                if self._shapes is not None:
                    self._shape_add(job_id)
            changed = True
        if changed:  # an instant where only stale events fell is no decision point
            self._tried.clear()
            self._preempt_asked = False
            if self._held:  # jobs whose preemption ended at this instant sit this pass out
                self._tried.update(self._held)
                self._held.clear()

    def _accrue(self, t0: float, t1: float) -> None:
        """Cost and carbon of the running jobs over ``[t0, t1]``, where none starts or ends."""
        dt = t1 - t0
        if self._flat:  # (flat carbon is summed when asked, see carbon_accrued)
            # fsum is correctly rounded: over the rates' dict, in C, the same float
            self._cost_accrued += dt * math.fsum(self._cost_rates.values())
        else:  # the busy GPUs of each region, times its price's and carbon's integrals
            down = self._down if self.faults is not None else None
            busy = [
                (r, cap - free)
                for r, (cap, free) in enumerate(zip(self._cluster.capacity, self._free))
                if cap > free and not (down and down[r])
            ]
            cost, carbon = self._tariff.busy_hours(t0, t1, busy)
            power = self._cluster.power_kw
            self._cost_accrued += power * cost
            self._carbon_accrued += power * carbon / 1000.0

    def _check(self, job_id: int, p: Placement) -> None:
        name = self.placement_policy.name
        k = self._cluster.n_regions
        prof = self._profiles[job_id]
        if len(p.path) != len(p.gpus) or len(set(p.path)) != len(p.path):
            raise PlacementError(f"{name}: path {p.path} with GPUs {p.gpus} is malformed")
        for r, n in zip(p.path, p.gpus):
            if not 0 <= r < k:
                raise PlacementError(f"{name}: region {r} does not exist (K = {k})")
            if n < 1 or n > self._free[r]:
                raise PlacementError(
                    f"{name}: job {job_id} asks {n} GPUs in region {r}, {self._free[r]} free "
                    f"(constraint 5)"
                )
        if p.n_gpus > prof.k_star:
            raise PlacementError(
                f"{name}: job {job_id} gets {p.n_gpus} GPUs, more than K* = {prof.k_star}"
            )
        if not self.fits(job_id, p):
            floors = [self._floors[job_id][r] for r in p.path]
            raise PlacementError(
                f"{name}: job {job_id} gets {p.n_gpus} GPUs, below its memory floor "
                f"{max(floors)} on path {p.path} (semantics §3a)"
            )
        need = prof.min_bandwidth(p.n_gpus)
        for u, v in p.links:
            if need > self._residual[u][v] * (1.0 + BANDWIDTH_RTOL):
                raise PlacementError(
                    f"{name}: job {job_id} needs {need:.6g} B/s on link {u}->{v}, "
                    f"{self._residual[u][v]:.6g} B/s left (constraint 6)"
                )

    def _start(self, job_id: int, p: Placement) -> None:
        self._version += 1
        prof = self._profiles[job_id]
        n = p.n_gpus
        execution = self.execution_time(job_id, p)  # Eq. (2)
        reserved = prof.min_bandwidth(n) if len(p.path) > 1 else 0.0  # b(L_j)
        for r, g in zip(p.path, p.gpus):
            self._free[r] -= g
        self._free_total -= n
        self._free_view = None
        for u, v in p.links:
            self._link_jobs.setdefault((u, v), {})[job_id] = reserved
            self._rebook(u, v)
        del self._pending[job_id]
        if self._shapes is not None:
            self._shape_remove(job_id)
        arr = self._pending_array
        if arr is not None:  # kept on a long queue, dropped on a short one (cheaper to rebuild)
            if len(self._pending) < _VECTOR_QUEUE:
                self._pending_array = None
            else:
                self._pending_array = np.delete(arr, int(np.flatnonzero(arr == job_id)[0]))
        finish = self._time + execution
        price_sum = math.fsum(g * self._prices[r] for r, g in zip(p.path, p.gpus))
        power = self._cluster.power_kw
        rate = electricity_cost(1.0, price_sum, power)
        carbon_sum = math.fsum(g * self._carbon[r] for r, g in zip(p.path, p.gpus))
        carbon_rate = carbon_sum * power / SECONDS_PER_HOUR / 1000.0
        egress = 0.0
        if self._egress:  # M * A bytes each way per iteration on every cross-region hop
            each_way = prof.iterations * prof.n_micro * prof.activation_bytes
            egress = self._tariff.egress_cost(p.path, each_way)
        run = _Running(
            p,
            self._time,
            finish,
            execution,
            reserved,
            rate,
            carbon_rate,
            egress,
            price_sum,
            carbon_sum,
        )
        if self._attempts_on:
            self._begin_attempt(job_id, run, prof)
        if run.finish > HORIZON_S:  # one comparison per start: the clock stays in range
            self._past_horizon(job_id, run)
        run.token = self._seq
        self._running[job_id] = run
        self._cost_rates[job_id] = run.cost_rate
        self._push(run.finish, _COMPLETION, job_id)

    def _past_horizon(self, job_id: int, run: _Running) -> None:
        """Stop the run: ``run`` would end after the simulation horizon (SimulationError)."""
        job, n = self._jobs[job_id], run.placement.n_gpus
        raise SimulationError(
            f"job {job_id} ({job.name}) would finish at {_hours_text(run.finish)}, past the "
            f"simulation horizon of {HORIZON_H:,.0f} h (HORIZON_H): it runs from "
            f"{_hours_text(run.start)} on {n} GPU{'' if n == 1 else 's'} for "
            f"{_hours_text(run.finish - run.start)}; shorten the workload"
        )

    def _release(self, job_id: int, run: _Running) -> None:
        """Give back a running attempt's GPUs and bandwidth."""
        self._version += 1
        p = run.placement
        for r, g in zip(p.path, p.gpus):
            self._free[r] += g
        self._free_total += p.n_gpus
        self._free_view = None
        for u, v in p.links:
            del self._link_jobs[(u, v)][job_id]
            self._rebook(u, v)

    def _finish(self, job_id: int) -> None:
        run = self._running.pop(job_id)
        if run.preempted_at is not None:  # its preemption checkpoint is written
            self._running[job_id] = run  # (it leaves through _interrupt)
            self._interrupt(job_id, "preempted")
            self._held.append(job_id)  # not offered again before the next event
            return
        del self._cost_rates[job_id]
        self._release(job_id, run)
        # under faults every job's attempts are booked; without, a job never interrupted is
        # booked as in the world without preemption, to the last bit
        if self.faults is not None or (self._attempts_on and job_id in self._attempts):
            self._finish_after_faults(job_id, run)
            return
        p = run.placement
        job = self._jobs[job_id]
        wait = run.start - job.submit_time
        power = self._cluster.power_kw
        if self._flat:
            cost = electricity_cost(run.execution, run.price_sum, power)  # Eq. (4)
            carbon = hours(run.execution) * run.carbon_sum * power / 1000.0
        else:  # the integrals of semantics §10 over [start, finish]
            t0, t1, tariff = run.start, run.finish, self._tariff
            cost = power * math.fsum(
                g * tariff.price_hours(r, t0, t1) for r, g in zip(p.path, p.gpus)
            )
            carbon = (
                power
                * math.fsum(g * tariff.carbon_hours(r, t0, t1) for r, g in zip(p.path, p.gpus))
                / 1000.0
            )
        if self._flat:
            self._carbon_accrued += run.carbon_rate * run.execution
        self._cost_accrued += run.egress  # charged when the attempt ends
        self._record(
            job_id,
            run,
            (Attempt(run.start, run.finish, p, "completed"),),
            wait,
            run.execution,
            wait + run.execution,  # Eq. (3)
            (cost, carbon, run.egress, 0.0, 0.0),
        )

    def _record(
        self,
        job_id: int,
        run: _Running,
        attempts: tuple[Attempt, ...],
        wait: float,
        execution: float,
        jct: float,
        totals: Sequence[float],  # cost, carbon, egress, wasted GPU-s, wasted cost
    ) -> None:
        """The finished job's :class:`JobRecord`; ``run`` is its last (completed) attempt."""
        job = self._jobs[job_id]
        prof = self._profiles[job_id]
        cost, carbon, egress, wasted_gpu_s, wasted_cost = totals
        self._records[job_id] = JobRecord(
            job_id=job_id,
            name=job.name,
            model=job.model.name,
            dataset=job.dataset,
            k_star=prof.k_star,
            memory_floor=min(self._floors[job_id]),
            submit_time=job.submit_time,
            start_time=attempts[0].start,
            finish_time=run.finish,
            wait=wait,
            execution=execution,
            jct=jct,
            cost=cost,
            placement=run.placement,
            reserved_bandwidth=run.reserved,
            carbon=carbon,
            egress_cost=egress,
            slowdown=jct / prof.ideal_execution if prof.ideal_execution > 0 else 1.0,
            attempts=attempts,
            wasted_gpu_seconds=wasted_gpu_s,
            wasted_cost=wasted_cost,
        )

    def _rebook(self, u: int, v: int) -> None:
        """Recompute one link's ledger exactly from the jobs that hold it."""
        holders = self._link_jobs.get((u, v))
        booked = math.fsum(holders.values()) if holders else 0.0
        capacity = self._capacity_now[u][v]
        if booked > capacity:  # a degraded link: the holders' reservations shrink to fit
            booked = capacity
        self._reserved[u][v] = booked
        if booked:
            self._booked_links[u, v] = booked
        else:
            self._booked_links.pop((u, v), None)
        self._residual[u][v] = capacity - booked
        if self._residual_array is not None:
            self._residual_array[u, v] = capacity - booked
        self._residual_view = None
        self._row_views[u] = None
        self._alpha = None

    # ------------------------------------------------------------------ faults (semantics §11)
    def _reset_attempts(self) -> None:
        """Per job: iterations left, attempts, their totals, preemptions, attained service."""
        self._iters_left = {j: float(p.iterations) for j, p in self._profiles.items()}
        # only the jobs that have run: their attempts, and their cost, carbon, egress,
        # wasted GPU-s and wasted cost over them
        self._attempts: dict[int, list[Attempt]] = {}
        self._acc: dict[int, list[float]] = {}
        self._n_preempted: dict[int, int] = dict.fromkeys(self._jobs, 0)
        self._attained: dict[int, float] = dict.fromkeys(self._jobs, 0.0)  # closed attempts
        self._actions: list[tuple[Any, ...]] = []

    def _reset_faults(self, faults: FaultModel) -> None:
        k = self._cluster.n_regions
        self._rng = np.random.default_rng(np.random.SeedSequence([self._fault_seed, 11]))
        self._capacity_now = [list(row) for row in self._capacity_rows]
        self._down = [False] * k
        self._outages_on = [0] * k
        self._link_on: dict[tuple[int, int], list[float]] = {}
        for o in faults.outages:
            self._push_fault(o.start, ("down", o.region))
            self._push_fault(o.end, ("up", o.region))
        for c in faults.links:
            self._push_fault(c.start, ("degrade", c.src, c.dst, c.factor))
            self._push_fault(c.end, ("restore", c.src, c.dst, c.factor))

    def _push_fault(self, t: float, action: tuple[Any, ...]) -> None:
        self._actions.append(action)
        self._push(t, _FAULT, len(self._actions) - 1)

    def _begin_attempt(self, job_id: int, run: _Running, prof: JobProfile) -> None:
        """An attempt resumes from the job's last checkpoint, after a restart if it is not the
        first; its GPUs may fail at the scenario's rate."""
        faults = self.faults
        iters = self._iters_left[job_id]
        restart = self._recovery.restart_s if job_id in self._attempts else 0.0
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

    def _draw_failure(self, job_id: int, run: _Running, now: float, rate: float) -> None:
        """The first failure among the attempt's GPUs from ``now`` on (each GPU fails at
        ``rate`` per hour, memoryless), drawn from the run's generator and queued."""
        mean = SECONDS_PER_HOUR / (rate * run.placement.n_gpus)
        t = now + float(self._rng.exponential(mean))
        if t > HORIZON_S:  # after the attempt's end (finishes are within the horizon): stale
            return
        self._push_fault(t, ("fail", job_id, run.attempt_id))

    def _stale(self, event: tuple[float, int, int, int]) -> bool:
        """Whether a queued event no longer applies: a completion that an interruption or a
        slowdown replaced, or the failure of an attempt that has already ended."""
        _, kind, seq, job_id = event
        if kind == _COMPLETION:
            run = self._running.get(job_id)
            return run is None or run.token != seq
        if kind == _WAKE:
            run = self._running.get(job_id)
            return run is None or run.wake != seq or run.preempted_at is not None
        if kind == _FAULT:
            action = self._actions[job_id]
            if action[0] == "fail":
                run = self._running.get(action[1])
                return run is None or run.attempt_id != action[2]
        return False

    def _on_fault(self, index: int) -> None:
        """Apply a (live) fault event."""
        self._version += 1
        action = self._actions[index]
        kind = action[0]
        if kind == "fail":
            self._interrupt(action[1], "failed")
        elif kind == "down":
            r = action[1]
            self._outages_on[r] += 1
            if not self._down[r]:
                for job_id in [j for j, run in self._running.items() if r in run.placement.path]:
                    self._interrupt(job_id, "outage")
                self._down[r] = True
                self._free_total -= self._free[r]
                self._free[r] = 0
                self._free_view = None
        elif kind == "up":
            r = action[1]
            self._outages_on[r] -= 1
            if self._outages_on[r] == 0 and self._down[r]:
                self._down[r] = False
                self._free[r] = self._cluster.capacity[r]
                self._free_total += self._free[r]
                self._free_view = None
        else:  # a link's capacity changes: degrade or restore
            _, u, v, factor = action
            active = self._link_on.setdefault((u, v), [])
            if kind == "degrade":
                active.append(factor)
            else:
                active.remove(factor)
            capacity = self._capacity_rows[u][v]
            for f in active:
                capacity *= f
            self._capacity_now[u][v] = capacity
            self._rebook(u, v)
            for job_id, run in list(self._running.items()):
                if (u, v) in run.placement.links and run.preempted_at is None:
                    self._new_speed(job_id, run)

    def _new_speed(self, job_id: int, run: _Running) -> None:
        """Eq. (1) again on the links' capacity now, for the rest of the attempt's work."""
        assert run.segments is not None
        prof = self._profiles[job_id]
        p = run.placement
        comm = placement_comm_times(prof, self._cluster, p.path, p.gpus, self._capacity_now)
        t_iter = iteration_time(prof.t_comp(p.n_gpus), comm, p.n_gpus, prof.n_micro)
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
        del self._cost_rates[job_id]
        self._release(job_id, run)
        self._close_attempt(job_id, run, self._time, outcome)
        if outcome == "preempted":
            self._n_preempted[job_id] += 1
        pending, rank = list(self._pending), self._rank
        i = len(pending)
        while i and rank[pending[i - 1]] > rank[job_id]:
            i -= 1
        pending.insert(i, job_id)  # back in submission order
        self._pending = dict.fromkeys(pending)
        self._pending_array = None
        self._push_maxima(job_id)
        self._shape_add(job_id)

    def _energy(self, run: _Running, t0: float, t1: float) -> tuple[float, float]:
        """Electricity ($) and emissions (kg) of the attempt's GPUs over ``[t0, t1]``."""
        power, p = self._cluster.power_kw, run.placement
        if t1 <= t0:
            return 0.0, 0.0
        if self._flat:
            return (
                electricity_cost(t1 - t0, run.price_sum, power),
                hours(t1 - t0) * run.carbon_sum * power / 1000.0,
            )
        tariff = self._tariff
        cost = power * math.fsum(g * tariff.price_hours(r, t0, t1) for r, g in zip(p.path, p.gpus))
        carbon = math.fsum(g * tariff.carbon_hours(r, t0, t1) for r, g in zip(p.path, p.gpus))
        return cost, power * carbon / 1000.0

    def _close_attempt(self, job_id: int, run: _Running, end: float, outcome: str) -> None:
        """Book an attempt that ends at ``end``: what it cost, what it wasted, and the
        iterations the job has left (its last checkpoint, if it did not complete). A preempted
        attempt that wrote a checkpoint keeps all its work up to its preemption (the checkpoint
        written since is wasted time); any other interrupted one keeps its last periodic
        checkpoint."""
        recovery = self._recovery
        start, cs = run.start, run.compute_start
        stop = end if run.preempted_at is None else run.preempted_at  # computing stopped
        if outcome == "completed":
            kept, done, wasted = end, run.iters, [(start, cs)]
            self._iters_left[job_id] = 0.0
        elif stop <= cs:  # interrupted while restoring its checkpoint: nothing done
            kept, done, wasted = stop, 0.0, [(start, end)]
        elif outcome == "preempted" and recovery.preempt_checkpoint_s is not None:
            done = run.iters - run.iters_left(stop)
            self._iters_left[job_id] = run.iters_left(stop)
            wasted = [(start, cs), (stop, end)]
        else:  # checkpoints every checkpoint_interval_s of computing
            ci = recovery.checkpoint_interval_s
            kept = cs + math.floor((stop - cs) / ci) * ci
            done = run.iters - run.iters_left(stop)
            self._iters_left[job_id] = run.iters_left(kept)
            wasted = [(start, cs), (kept, end)]
        cost, carbon = self._energy(run, start, end)
        wasted_cost = math.fsum(self._energy(run, a, b)[0] for a, b in wasted)
        wasted_s = math.fsum(max(0.0, b - a) for a, b in wasted)
        egress = 0.0
        if self._egress:
            prof = self._profiles[job_id]
            egress = self._tariff.egress_cost(
                run.placement.path, done * prof.n_micro * prof.activation_bytes
            )
        acc = self._acc.setdefault(job_id, [0.0] * 5)
        acc[0] += cost
        acc[1] += carbon
        acc[2] += egress
        acc[3] += wasted_s * run.placement.n_gpus
        acc[4] += wasted_cost
        self._attained[job_id] += run.placement.n_gpus * (end - start)
        if self._flat:
            self._carbon_accrued += run.carbon_rate * (end - start)
        self._cost_accrued += egress
        self._attempts.setdefault(job_id, []).append(
            Attempt(start, end, run.placement, outcome, run.restart, wasted_s)
        )
        if outcome != "completed" and len(self._attempts[job_id]) >= MAX_ATTEMPTS:
            rate = 0.0 if self.faults is None else self.faults.gpu_failure_rate
            raise SimulationError(
                f"job {job_id} was interrupted {MAX_ATTEMPTS:,} times without finishing: "
                f"failures outpace its checkpoints (gpu_failure_rate "
                f"{rate:g}, checkpoint_interval_s "
                f"{recovery.checkpoint_interval_s:g}, restart_s {recovery.restart_s:g})"
            )

    def _finish_after_faults(self, job_id: int, run: _Running) -> None:
        self._close_attempt(job_id, run, run.finish, "completed")
        job = self._jobs[job_id]
        attempts = tuple(self._attempts[job_id])
        execution = math.fsum(a.duration for a in attempts)
        jct = run.finish - job.submit_time
        self._record(job_id, run, attempts, jct - execution, execution, jct, self._acc[job_id])


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


def _hours_text(seconds: float) -> str:
    """Seconds as hours for an error line: ``1,234,568 h``, or ``1.23e+301 h`` when huge."""
    h = seconds / SECONDS_PER_HOUR
    return f"{h:,.1f} h" if abs(h) < 1e12 else f"{h:.3g} h"


def _check_finite(result: RunResult) -> None:
    """Raise a one-line SimulationError if a figure of ``result`` is NaN or infinite (inputs
    at the far ends of their ranges, multiplied together), naming the figure and a job."""
    for name in _FINITE_FIELDS:
        value = getattr(result, name)
        if not math.isfinite(value):
            worst = max(result.records, key=lambda r: (not math.isfinite(r.jct + r.cost), r.jct))
            raise SimulationError(
                f"the run's {name} is {value}: job {worst.job_id}'s figures overflow; bring the "
                "scenario's sizes, prices and rates inside their ranges (docs/scenarios.md)"
            )
