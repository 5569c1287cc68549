"""The event-driven simulator (SPEC section 4).

Events are job arrivals and completions in a heap ordered by ``(time, kind, sequence)``:
completions before arrivals at the same instant, then submission order. After each batch of
simultaneous events comes a scheduling pass: while a job is pending and a GPU is free, the
ordering policy picks one of the pending jobs not yet tried in this pass and the placement
policy places it on the free GPUs and residual bandwidth. A job whose placement is empty stays
pending and is not offered again until the next event; the pass ends when no candidate is left.

Two ways to drive it:

- ``Simulator(scenario, placement).run(ordering)`` runs a whole episode;
- ``next_decision()`` / ``place(job_id)`` / ``defer()`` step it one decision at a time (what the
  Gymnasium adapter does).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import PlacementError, SimulationError
from .cluster import Cluster
from .network import network_utilization_rows
from .perf import JobProfile, electricity_cost, placement_comm_times
from .placement import Placement
from .scenario import Scenario
from .units import hours

__all__ = [
    "BANDWIDTH_RTOL",
    "JobRecord",
    "OrderingPolicy",
    "PlacementPolicy",
    "RunResult",
    "SchedulerView",
    "Simulator",
]

_COMPLETION, _ARRIVAL = 0, 1

#: A placement may reserve up to this relative amount more than a link's residual bandwidth:
#: Alg. 1 checks ``A / b <= t_comp(g)`` while the ledger books ``b(g) = A / t_comp(g)``, and the
#: two can differ in the last bit.
BANDWIDTH_RTOL = 1e-9


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


class OrderingPolicy(Protocol):
    """Picks which pending job to place next."""

    name: str

    def choose(self, view: SchedulerView, candidates: Sequence[int]) -> int:
        """Return one of ``candidates`` (job ids, in submission order)."""
        ...


class PlacementPolicy(Protocol):
    """Decides where a job runs; ``None`` (or an empty placement) leaves it pending.

    A policy whose answer depends only on the cluster, the free GPUs, the residual bandwidth
    and the job's profile may set a class attribute ``pure = True``; the Gym environment then
    memoises its placement previews.
    """

    name: str

    def place(self, view: SchedulerView, job_id: int) -> Placement | None:
        """Return a placement on the currently free GPUs and residual bandwidth."""
        ...


@dataclass(frozen=True)
class JobRecord:
    """What happened to one job. Times in seconds, cost in dollars, bandwidth in bytes/s."""

    job_id: int
    name: str
    model: str
    dataset: str
    k_star: int
    submit_time: float
    start_time: float
    finish_time: float
    wait: float  # W
    execution: float  # E, Eq. (2)
    jct: float  # T = W + E, Eq. (3)
    cost: float  # C, Eq. (4)
    placement: Placement
    reserved_bandwidth: float  # b(L) on each cross-region link of the path

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
            "gpus": self.n_gpus,
            "path": [{"region": names[r], "gpus": n} for r, n in zip(*_pg(self.placement))],
            "submit_s": self.submit_time,
            "start_s": self.start_time,
            "finish_s": self.finish_time,
            "wait_s": self.wait,
            "execution_s": self.execution,
            "jct_s": self.jct,
            "cost_usd": self.cost,
            "reserved_bandwidth_Bps": self.reserved_bandwidth,
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

    def to_dict(self, names: Sequence[str]) -> dict[str, Any]:
        """A JSON-ready dict; ``names`` are the cluster's region names."""
        return {
            "scenario": self.scenario,
            "policy": self.policy,
            "avg_jct_s": self.avg_jct,
            "avg_jct_h": hours(self.avg_jct),
            "total_cost_usd": self.total_cost,
            "makespan_s": self.makespan,
            "makespan_h": hours(self.makespan),
            "gpu_utilization": self.gpu_utilization,
            "n_decisions": self.n_decisions,
            "jobs": [r.to_dict(names) for r in self.records],
        }


@dataclass
class _Running:
    placement: Placement
    start: float
    finish: float
    execution: float
    reserved: float
    cost_rate: float  # $/s while running, Eq. (4) per second


class Simulator:
    """Event-driven simulation of one scenario under one placement policy.

    The simulator owns the cluster state (free GPUs, the bandwidth ledger) and the clock; the
    ordering decision is made outside, by :meth:`run`'s ordering policy or by whoever calls
    :meth:`place`. Validation of every placement against constraints (5), (6) and the K* cap
    is on by default; a violation raises :class:`PlacementError`.
    """

    def __init__(
        self, scenario: Scenario, placement: PlacementPolicy, *, validate: bool = True
    ) -> None:
        self.scenario = scenario
        self.placement_policy = placement
        self.validate = validate
        self._cluster = scenario.cluster
        self._profiles = scenario.profiles
        self._jobs = {j.job_id: j for j in scenario.jobs}
        self._capacity_rows = scenario.cluster.bandwidth_rows
        self._capacity_total = scenario.cluster.link_capacity
        self._prices = list(scenario.cluster.prices)
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
        self._residual = [list(row) for row in self._capacity_rows]
        self._residual_view: tuple[tuple[float, ...], ...] | None = None
        self._alpha: float | None = 0.0
        self._link_jobs: dict[tuple[int, int], dict[int, float]] = {}
        self._pending: list[int] = []
        self._tried: set[int] = set()
        self._running: dict[int, _Running] = {}
        self._records: dict[int, JobRecord] = {}
        self._n_decisions = 0
        self._job_seconds = 0.0
        self._cost_accrued = 0.0
        self._seq = 0
        self._heap: list[tuple[float, int, int, int]] = []
        for job in sorted(self._jobs.values(), key=lambda j: (j.submit_time, j.job_id)):
            self._push(job.submit_time, _ARRIVAL, job.job_id)

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
            self._residual_view = tuple(tuple(row) for row in self._residual)
        return self._residual_view

    @property
    def residual_bandwidth(self) -> np.ndarray:
        """Residual bandwidth as a fresh (K, K) array (bytes/s)."""
        return np.array(self.residual_rows, dtype=float)

    @property
    def reserved_bandwidth(self) -> np.ndarray:
        """Reserved bandwidth per directed link as a fresh (K, K) array (bytes/s)."""
        return np.array(self._reserved, dtype=float)

    @property
    def network_utilization(self) -> float:
        """Eq. (11) alpha on the current reservations."""
        if self._alpha is None:
            self._alpha = network_utilization_rows(self._reserved, self._capacity_total)
        return self._alpha

    @property
    def pending(self) -> tuple[int, ...]:
        """Job ids waiting to start, in submission order."""
        return tuple(self._pending)

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

    @property
    def job_seconds(self) -> float:
        """Integral of the number of jobs in the system over time so far (s); at the end it is
        the sum of all JCTs."""
        return self._job_seconds

    @property
    def cost_accrued(self) -> float:
        """Electricity cost incurred by running jobs so far ($); at the end, the total cost."""
        return self._cost_accrued

    @property
    def has_future_events(self) -> bool:
        """True while an arrival or a completion is still to come."""
        return bool(self._heap)

    @property
    def n_jobs(self) -> int:
        """Jobs in the scenario."""
        return len(self._jobs)

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
        """True once every job has finished."""
        return len(self._records) == len(self._jobs)

    # --------------------------------------------------------------- stepping
    def next_decision(self) -> tuple[int, ...] | None:
        """Advance the clock until a job can be offered for placement.

        Returns the candidate job ids (pending, not yet tried in this pass, in submission
        order) or ``None`` when every job has finished. Calling it again without placing
        returns the same candidates.
        """
        while True:
            if self._free_total > 0 and len(self._tried) < len(self._pending):
                tried = self._tried
                return tuple(j for j in self._pending if j not in tried)
            if not self._heap:
                if self._pending:
                    raise SimulationError(
                        f"jobs {self._pending} can never start: placement policy "
                        f"{self.placement_policy.name!r} gave them nothing on an idle cluster"
                    )
                return None
            self._advance()

    def place(self, job_id: int, placement: Placement | None = None) -> Placement | None:
        """Ask the placement policy to place ``job_id`` now and start it.

        Returns the placement, or ``None`` if the policy found none (the job then stays pending
        and is not offered again until the next event). A caller that already asked the policy
        on this very state (a preview) may pass its ``placement`` instead; it is validated the
        same way.
        """
        if job_id not in self._pending or job_id in self._tried:
            raise SimulationError(
                f"job {job_id} is not a candidate now (candidates: "
                f"{[j for j in self._pending if j not in self._tried]})"
            )
        if self._free_total <= 0:
            raise SimulationError("no GPU is free: call next_decision() first")
        self._n_decisions += 1
        if placement is None:
            placement = self.placement_policy.place(self, job_id)
        if placement is None or not placement.path:
            self._tried.add(job_id)
            return None
        if self.validate:
            self._check(job_id, placement)
        self._start(job_id, placement)
        return placement

    def defer(self) -> None:
        """End the current scheduling pass: nothing more is placed until the next event."""
        self._tried.update(self._pending)

    def run(self, ordering: OrderingPolicy) -> RunResult:
        """Run to the end with ``ordering`` choosing among the candidates at each decision."""
        while (candidates := self.next_decision()) is not None:
            job_id = ordering.choose(self, candidates)
            if job_id not in candidates:
                raise SimulationError(
                    f"ordering policy {getattr(ordering, 'name', ordering)!r} chose job "
                    f"{job_id!r}, which is not one of the candidates {list(candidates)}"
                )
            self.place(job_id)
        return self.result(getattr(ordering, "name", type(ordering).__name__))

    def result(self, policy: str = "") -> RunResult:
        """The outcome so far; complete once :attr:`done` is true."""
        if not self.done:
            raise SimulationError(
                f"{len(self._jobs) - len(self._records)} jobs have not finished yet"
            )
        recs = tuple(self._records[j] for j in sorted(self._records))
        first = min(r.submit_time for r in recs)
        makespan = max(r.finish_time for r in recs) - first
        busy = math.fsum(r.n_gpus * r.execution for r in recs)
        total = self._cluster.total_gpus
        return RunResult(
            scenario=self.scenario.name,
            policy=policy or self.placement_policy.name,
            records=recs,
            avg_jct=math.fsum(r.jct for r in recs) / len(recs),
            total_cost=math.fsum(r.cost for r in recs),
            makespan=makespan,
            gpu_utilization=busy / (total * makespan) if makespan > 0 else 0.0,
            n_decisions=self._n_decisions,
        )

    # -------------------------------------------------------------- internals
    def _advance(self) -> None:
        """Pop every event at the next instant; a new scheduling pass starts."""
        heap = self._heap
        t = heap[0][0]
        dt = t - self._time
        if dt > 0.0:  # accrue JCT (jobs in system) and electricity (running jobs) up to t
            self._job_seconds += (len(self._pending) + len(self._running)) * dt
            if self._running:
                self._cost_accrued += dt * math.fsum(r.cost_rate for r in self._running.values())
        while heap and heap[0][0] == t:
            _, kind, _, job_id = heapq.heappop(heap)
            if kind == _COMPLETION:
                self._finish(job_id)
            else:
                self._pending.append(job_id)
        self._time = t
        self._tried.clear()

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
        need = prof.min_bandwidth(p.n_gpus)
        for u, v in p.links:
            if need > self._residual[u][v] * (1.0 + BANDWIDTH_RTOL):
                raise PlacementError(
                    f"{name}: job {job_id} needs {need:.6g} B/s on link {u}->{v}, "
                    f"{self._residual[u][v]:.6g} B/s left (constraint 6)"
                )

    def _start(self, job_id: int, p: Placement) -> None:
        prof = self._profiles[job_id]
        n = p.n_gpus
        comm = placement_comm_times(prof, self._cluster, p.path, p.gpus)
        execution = prof.execution_time(comm, n)  # Eq. (2)
        reserved = prof.min_bandwidth(n) if len(p.path) > 1 else 0.0  # b(L_j)
        for r, g in zip(p.path, p.gpus):
            self._free[r] -= g
        self._free_total -= n
        self._free_view = None
        for u, v in p.links:
            self._link_jobs.setdefault((u, v), {})[job_id] = reserved
            self._rebook(u, v)
        self._pending.remove(job_id)
        finish = self._time + execution
        price_sum = math.fsum(g * self._prices[r] for r, g in zip(p.path, p.gpus))
        rate = electricity_cost(1.0, price_sum, self._cluster.power_kw)
        self._running[job_id] = _Running(p, self._time, finish, execution, reserved, rate)
        self._push(finish, _COMPLETION, job_id)

    def _finish(self, job_id: int) -> None:
        run = self._running.pop(job_id)
        p = run.placement
        for r, g in zip(p.path, p.gpus):
            self._free[r] += g
        self._free_total += p.n_gpus
        self._free_view = None
        for u, v in p.links:
            del self._link_jobs[(u, v)][job_id]
            self._rebook(u, v)
        job = self._jobs[job_id]
        wait = run.start - job.submit_time
        price_sum = math.fsum(g * self._prices[r] for r, g in zip(p.path, p.gpus))
        self._records[job_id] = JobRecord(
            job_id=job_id,
            name=job.name,
            model=job.model.name,
            dataset=job.dataset,
            k_star=self._profiles[job_id].k_star,
            submit_time=job.submit_time,
            start_time=run.start,
            finish_time=run.finish,
            wait=wait,
            execution=run.execution,
            jct=wait + run.execution,  # Eq. (3)
            cost=electricity_cost(run.execution, price_sum, self._cluster.power_kw),  # Eq. (4)
            placement=p,
            reserved_bandwidth=run.reserved,
        )

    def _rebook(self, u: int, v: int) -> None:
        """Recompute one link's ledger exactly from the jobs that hold it."""
        holders = self._link_jobs[(u, v)]
        booked = math.fsum(holders.values()) if holders else 0.0
        self._reserved[u][v] = booked
        self._residual[u][v] = self._capacity_rows[u][v] - booked
        self._residual_view = None
        self._alpha = None
