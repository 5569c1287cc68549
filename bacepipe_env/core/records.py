"""What a run produces: one :class:`JobRecord` per finished job and the episode's
:class:`RunResult` (semantics §4 and §12), with the figures a result is summarised by."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import SimulationError
from .faults import Attempt
from .job_fields import record_fields
from .metrics import ordered
from .placement import Placement
from .units import hours

__all__ = [
    "FINITE_FIELDS",
    "JobRecord",
    "RunResult",
    "attempt_dict",
    "attempt_rows",
    "check_finite",
    "percentile",
]

#: The run's figures that must be finite (see :func:`check_finite`).
FINITE_FIELDS = (
    "avg_jct",
    "total_cost",
    "total_carbon",
    "total_egress_cost",
    "makespan",
    "mean_slowdown",
    "wasted_cost",
    "gpu_hours",
)


@dataclass(frozen=True)
class JobRecord:
    """What happened to one job. Times in seconds, cost in dollars, bandwidth in bytes/s,
    emissions in kg CO2e. ``cost`` is the electricity (Eq. 4, or its integral under hourly
    prices); ``egress_cost`` the cross-region traffic, 0 unless the tariff charges it. The job
    fields of :data:`~bacepipe_env.core.job_fields.JOB_FIELDS` with a ``record`` (``name``,
    ``submit_time``) are copied from the job: declared here, or set on the instance."""

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
    deadline: float | None = None  # s, when the job was due (None: no deadline, semantics §15)
    tardiness: float = 0.0  # s, max(0, finish_time - deadline)
    missed: bool = False  # tardiness > 0

    @property
    def restarts(self) -> int:
        """Attempts after the first (0 in a world without faults or preemption)."""
        return max(0, len(self.attempts) - 1)

    @property
    def preemptions(self) -> int:
        """Attempts that a preemption ended (semantics §3c)."""
        return sum(1 for a in self.attempts if a.outcome == "preempted")

    @property
    def resizes(self) -> int:
        """Attempts that a change of the job's data-parallel copies ended (semantics §3f)."""
        return sum(1 for a in self.attempts if a.outcome == "resized")

    @property
    def gpu_seconds(self) -> float:
        """GPU-seconds the job held, over all its attempts."""
        if len(self.attempts) <= 1:
            return self.n_gpus * self.execution
        return math.fsum(a.placement.n_gpus * a.duration for a in self.attempts)  # type: ignore[attr-defined]

    @property
    def n_gpus(self) -> int:
        """The GPUs the job's last attempt ran on: L, its pipeline stages, times its
        data-parallel copies (semantics §3e)."""
        return self.placement.n_gpus

    def to_dict(self, names: Sequence[str]) -> dict[str, Any]:
        """A JSON-ready dict; ``names`` are the cluster's region names. A job that ran
        data-parallel copies (semantics §3e) also lists each copy's path under ``replicas``
        and its resizes; ``path`` is its first copy's. A job with a deadline gives it, its
        tardiness and whether it missed it (semantics §15)."""
        out = self._as_dict(names)
        if self.deadline is not None:
            out["deadline_s"] = self.deadline
            out["tardiness_s"] = self.tardiness
            out["missed"] = self.missed
        if self.placement.replicas:
            out["replicas"] = [
                [{"region": names[r], "gpus": n} for r, n in zip(q.path, q.gpus)]
                for q in self.placement.pipelines
            ]
        if self.resizes:
            out["resizes"] = self.resizes
        return out

    def _as_dict(self, names: Sequence[str]) -> dict[str, Any]:
        """The record's own keys, with each job field's (``name``, ``submit_s``, ...: the
        rows of JOB_FIELDS with a ``record``) after the key its row names."""
        own = {
            "job_id": self.job_id,
            "model": self.model,
            "dataset": self.dataset,
            "k_star": self.k_star,
            "memory_floor": self.memory_floor,
            "gpus": self.n_gpus,
            "path": [{"region": names[r], "gpus": n} for r, n in zip(*_pg(self.placement))],
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
            "attempts": [attempt_dict(a, names) for a in self.attempts],
        }
        fields = record_fields()
        out: dict[str, Any] = {}
        for key, value in own.items():
            out[key] = value
            for f in fields:
                if f.json_after == key:
                    out[f.json_key] = getattr(self, f.record)
        for f in fields:
            if f.json_after not in own:
                out[f.json_key] = getattr(self, f.record)
        return out


def _pg(p: Placement) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return p.path, p.gpus


def attempt_dict(a: Attempt, names: Sequence[str]) -> dict[str, Any]:
    """One attempt as JSON: its times and outcome, its first copy's ``path``, every copy's
    regions and GPUs (``copies``, the first one first) and the rate it booked on each
    directed link (``links``, bytes/s): enough to check GPU and link capacity at every
    instant from the JSON alone (semantics §3e, §4)."""
    p: Placement = a.placement  # type: ignore[assignment]
    return {
        "start_s": a.start,
        "end_s": a.end,
        "path": [{"region": names[r], "gpus": n} for r, n in zip(p.path, p.gpus)],
        "outcome": a.outcome,
        "gpus": p.n_gpus,
        "copies": [
            [{"region": names[r], "gpus": n} for r, n in zip(q.path, q.gpus)] for q in p.pipelines
        ],
        "links": [
            {"from": names[u], "to": names[v], "booked_Bps": rate} for u, v, rate in a.bookings
        ],
    }


def attempt_rows(result: RunResult, names: Sequence[str]) -> list[dict[str, Any]]:
    """One CSV row per attempt of every job: the job, the attempt's number, times and
    outcome, its GPUs, every copy's path (``R0:4>R1:4``, copies joined by `` | ``) and the
    rate it booked on each directed link (``R0>R1=1250000000``, joined by ``; ``)."""
    rows = []
    for rec in result.records:
        for i, a in enumerate(rec.attempts):
            p: Placement = a.placement  # type: ignore[assignment]
            rows.append(
                {
                    "job_id": rec.job_id,
                    "attempt": i + 1,
                    "start_s": a.start,
                    "end_s": a.end,
                    "outcome": a.outcome,
                    "gpus": p.n_gpus,
                    "copies": " | ".join(
                        ">".join(f"{names[r]}:{n}" for r, n in zip(q.path, q.gpus))
                        for q in p.pipelines
                    ),
                    "links": "; ".join(
                        f"{names[u]}>{names[v]}={rate:.17g}" for u, v, rate in a.bookings
                    ),
                }
            )
    return rows


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
    model: str = "paper"  # the performance model the world ran by (semantics §3d)
    elasticity: str = "none"  # the elasticity rule the run used (semantics §3f)
    n_resizes: int = 0  # attempts a change of a job's data-parallel copies ended

    @property
    def deadlines(self) -> bool:
        """Whether any job had a deadline (semantics §15)."""
        return any(r.deadline is not None for r in self.records)

    @property
    def miss_rate(self) -> float:
        """The fraction of the jobs with a deadline that missed it (0 without deadlines)."""
        due = [r for r in self.records if r.deadline is not None]
        return sum(r.missed for r in due) / len(due) if due else 0.0

    @property
    def total_tardiness(self) -> float:
        """The jobs' tardiness summed, seconds (0 without deadlines)."""
        return math.fsum(r.tardiness for r in self.records)

    @property
    def throughput(self) -> float:
        """Jobs completed per hour of makespan (0 for a zero makespan)."""
        return len(self.records) / hours(self.makespan) if self.makespan > 0 else 0.0

    def to_dict(self, names: Sequence[str]) -> dict[str, Any]:
        """A JSON-ready dict; ``names`` are the cluster's region names: the figures of
        :data:`~.metrics.METRICS` (a run setting a row names just before it), the run's
        settings and its jobs. An elastic run (semantics §3f) also gives, last, the figures
        shown under elasticity and their rule."""
        elastic = self.elasticity != "none"
        out: dict[str, Any] = {"scenario": self.scenario, "policy": self.policy}
        tail: dict[str, Any] = {}
        for metric in ordered("json"):
            if metric.show == "deadlines" and not self.deadlines:
                continue
            if metric.show != "elastic":
                out.update(metric.json_items(self))
            elif elastic:
                tail.update(metric.json_items(self))
        out.update(
            {
                "admission": self.admission,
                "ignore_memory": self.ignore_memory,
                "prices": self.prices,
                "start_hour": self.start_hour,
                "egress": self.egress,
                "model": self.model,
                "jobs": [r.to_dict(names) for r in self.records],
            }
        )
        return {**out, **tail}


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values with numpy's default ("linear") method, without
    numpy's per-call overhead: ``numpy.percentile(values, 100 * q)`` to the last bit."""
    h = (len(ordered) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    a, b, t = ordered[lo], ordered[hi], h - lo
    diff = b - a
    return b - diff * (1.0 - t) if t >= 0.5 else a + diff * t


def check_finite(result: RunResult) -> None:
    """Raise a one-line SimulationError if a figure of ``result`` is NaN or infinite (inputs
    at the far ends of their ranges, multiplied together), naming the figure and a job."""
    for name in FINITE_FIELDS:
        value = getattr(result, name)
        if not math.isfinite(value):
            worst = max(result.records, key=lambda r: (not math.isfinite(r.jct + r.cost), r.jct))
            raise SimulationError(
                f"the run's {name} is {value}: job {worst.job_id}'s figures overflow; bring the "
                "scenario's sizes, prices and rates inside their ranges (docs/scenarios.md)"
            )
