"""The run's accounts: what running jobs cost and emit, how long jobs stay in the system, and
the record of every finished job (Eqs. 3-4 and 7-8, semantics §10).

Under flat prices a running attempt accrues at a constant rate, so its cost is Eq. (4); under
hourly prices or scheduled price changes the bill is the integral of the price over each
region's busy GPUs (:class:`~bacepipe_env.core.tariff.Tariff`). Egress is charged when an
attempt ends, for the traffic it sent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from .attempts import AttemptBook, Running
from .cluster import Cluster
from .deadlines import due_time, lateness
from .faults import Attempt, FaultModel
from .job import Job
from .job_fields import attach, record_fields, split_declared
from .perf import JobProfile, allreduce_link_bytes, electricity_cost, replica_micro_batches
from .placement import Placement
from .records import JobRecord
from .tariff import Tariff
from .units import SECONDS_PER_HOUR, hours

__all__ = ["Accounts"]


class Accounts:
    """The bill and the record book of one run on ``cluster`` under ``tariff``.

    Totals so far: :attr:`job_seconds` (the integral of the jobs in the system, at the end the
    sum of all JCTs), :attr:`cost_accrued` ($) and :attr:`carbon_accrued` (kg; flat carbon is
    summed when asked, see :meth:`carbon_now`); the scheduling decisions made; and the
    finished jobs' :class:`~bacepipe_env.core.records.JobRecord` by job id.
    """

    __slots__ = (
        "capacity",
        "carbon",
        "carbon_accrued",
        "cost_accrued",
        "cost_rates",
        "egress",
        "flat",
        "job_seconds",
        "n_decisions",
        "power",
        "prices",
        "records",
        "tariff",
    )

    def __init__(self, cluster: Cluster, tariff: Tariff) -> None:
        self.tariff = tariff
        self.flat = tariff.flat  # constant prices and carbon: Eq. (4) per attempt
        self.egress = tariff.egress is not None
        self.prices = list(cluster.prices)  # $/kWh per region, Table II
        self.carbon = tariff.carbon  # g/kWh per region (flat carbon)
        self.power = cluster.power_kw  # per GPU
        self.capacity = cluster.capacity
        self.records: dict[int, JobRecord] = {}
        self.n_decisions = 0
        self.job_seconds = 0.0
        self.cost_accrued = 0.0
        self.carbon_accrued = 0.0
        self.cost_rates: dict[int, float] = {}  # job id -> its running attempt's cost_rate

    def copy(self) -> Accounts:
        """An independent copy (the records themselves are frozen: shared)."""
        new = object.__new__(Accounts)
        for name in Accounts.__slots__:
            setattr(new, name, getattr(self, name))
        new.records = dict(self.records)
        new.cost_rates = dict(self.cost_rates)
        return new

    def new_attempt(
        self,
        p: Placement,
        prof: JobProfile,
        start: float,
        execution: float,
        reserved: float,
    ) -> Running:
        """A running attempt on ``p`` from ``start`` for ``execution`` seconds, with the rates
        its cost and emissions accrue at and its egress over the whole execution."""
        price_sum = math.fsum(g * self.prices[r] for r, g in p.cells)
        power = self.power
        rate = electricity_cost(1.0, price_sum, power)
        carbon_sum = math.fsum(g * self.carbon[r] for r, g in p.cells)
        carbon_rate = carbon_sum * power / SECONDS_PER_HOUR / 1000.0
        egress = 0.0
        if self.egress:
            egress = self.egress_of(p, prof, prof.iterations)
        return Running(
            p,
            start,
            start + execution,
            execution,
            reserved,
            rate,
            carbon_rate,
            egress,
            price_sum,
            carbon_sum,
        )

    def egress_of(self, p: Placement, prof: JobProfile, iterations: float) -> float:
        """Egress ($) of ``iterations`` iterations on ``p``: ``M * A`` bytes each way per
        iteration on every cross-region hop of the path; with data-parallel copies
        (semantics §3e), each copy's ``ceil(M / d)`` micro-batches on its own path, and the
        all-reduce's bytes on each link its ring edges cross."""
        tariff = self.tariff
        if not p.replicas:
            return tariff.egress_cost(p.path, iterations * prof.n_micro * prof.activation_bytes)
        each_way = iterations * replica_micro_batches(prof.n_micro, p.n_replicas)
        each_way *= prof.activation_bytes
        pipelines = math.fsum(tariff.egress_cost(q.path, each_way) for q in p.pipelines)
        ring = tariff.egress_links_cost(
            (link, iterations * n_bytes) for link, n_bytes in allreduce_link_bytes(prof, p)
        )
        return pipelines + ring

    def accrue(
        self, t0: float, t1: float, free: Sequence[int], down: Sequence[bool] | None
    ) -> None:
        """Cost and carbon of the running jobs over ``[t0, t1]``, where none starts or ends;
        ``free`` GPUs per region, ``down``: the regions down (their GPUs cost nothing)."""
        dt = t1 - t0
        if self.flat:  # (flat carbon is summed when asked, see carbon_now)
            # fsum is correctly rounded: over the rates' dict, in C, the same float
            self.cost_accrued += dt * math.fsum(self.cost_rates.values())
        else:  # the busy GPUs of each region, times its price's and carbon's integrals
            busy = [
                (r, cap - f)
                for r, (cap, f) in enumerate(zip(self.capacity, free))
                if cap > f and not (down and down[r])
            ]
            cost, carbon = self.tariff.busy_hours(t0, t1, busy)
            power = self.power
            self.cost_accrued += power * cost
            self.carbon_accrued += power * carbon / 1000.0

    def carbon_now(self, running: Iterable[Running], now: float) -> float:
        """Emissions so far (kg): under flat carbon the finished attempts', plus the running
        ones' up to ``now``."""
        if self.flat:
            return self.carbon_accrued + math.fsum(r.carbon_rate * (now - r.start) for r in running)
        return self.carbon_accrued

    def energy(self, run: Running, t0: float, t1: float) -> tuple[float, float]:
        """Electricity ($) and emissions (kg) of the attempt's GPUs over ``[t0, t1]``."""
        power, p = self.power, run.placement
        if t1 <= t0:
            return 0.0, 0.0
        if self.flat:
            return (
                electricity_cost(t1 - t0, run.price_sum, power),
                hours(t1 - t0) * run.carbon_sum * power / 1000.0,
            )
        tariff = self.tariff
        cost = power * math.fsum(g * tariff.price_hours(r, t0, t1) for r, g in p.cells)
        carbon = math.fsum(g * tariff.carbon_hours(r, t0, t1) for r, g in p.cells)
        return cost, power * carbon / 1000.0

    def completed(self, run: Running) -> tuple[float, float, float, float, float]:
        """The totals of a job's only attempt, which completed (no fault, no preemption):
        ``(cost, carbon, egress, 0, 0)``; its carbon (flat) and egress join the run's."""
        p = run.placement
        power = self.power
        if self.flat:
            cost = electricity_cost(run.execution, run.price_sum, power)  # Eq. (4)
            carbon = hours(run.execution) * run.carbon_sum * power / 1000.0
        else:  # the integrals of semantics §10 over [start, finish]
            t0, t1, tariff = run.start, run.finish, self.tariff
            cost = power * math.fsum(g * tariff.price_hours(r, t0, t1) for r, g in p.cells)
            carbon = (
                power * math.fsum(g * tariff.carbon_hours(r, t0, t1) for r, g in p.cells) / 1000.0
            )
        if self.flat:
            self.carbon_accrued += run.carbon_rate * run.execution
        self.cost_accrued += run.egress  # charged when the attempt ends
        return (cost, carbon, run.egress, 0.0, 0.0)

    def close_attempt(
        self,
        book: AttemptBook,
        job_id: int,
        run: Running,
        end: float,
        outcome: str,
        recovery: FaultModel,
        prof: JobProfile,
    ) -> int:
        """Book an attempt that ends at ``end``: what it cost, what it wasted, and the
        iterations the job has left (its last checkpoint, if it did not complete); its carbon
        (flat) and egress join the run's. A preempted attempt that wrote a checkpoint keeps
        all its work up to its preemption (the checkpoint written since is wasted time); any
        other interrupted one keeps its last periodic checkpoint. Returns the job's attempts
        so far."""
        start, cs = run.start, run.compute_start
        stop = end if run.preempted_at is None else run.preempted_at  # computing stopped
        iters_left = book.iters_left
        if outcome == "completed":
            done, wasted = run.iters, [(start, cs)]
            iters_left[job_id] = 0.0
        elif stop <= cs:  # interrupted while restoring its checkpoint: nothing done
            done, wasted = 0.0, [(start, end)]
        elif outcome == "resized" or (
            outcome == "preempted" and recovery.preempt_checkpoint_s is not None
        ):  # a checkpoint written at the stop keeps all the work (a resize writes one too)
            done = run.iters - run.iters_left(stop)
            iters_left[job_id] = run.iters_left(stop)
            wasted = [(start, cs), (stop, end)]
        else:  # checkpoints every checkpoint_interval_s of computing
            ci = recovery.checkpoint_interval_s
            kept = cs + math.floor((stop - cs) / ci) * ci
            done = run.iters - run.iters_left(stop)
            iters_left[job_id] = run.iters_left(kept)
            wasted = [(start, cs), (kept, end)]
        cost, carbon = self.energy(run, start, end)
        wasted_cost = math.fsum(self.energy(run, a, b)[0] for a, b in wasted)
        wasted_s = math.fsum(max(0.0, b - a) for a, b in wasted)
        egress = 0.0
        if self.egress:
            egress = self.egress_of(run.placement, prof, done)
        n = run.placement.n_gpus
        acc = book.totals.setdefault(job_id, [0.0] * 5)
        acc[0] += cost
        acc[1] += carbon
        acc[2] += egress
        acc[3] += wasted_s * n
        acc[4] += wasted_cost
        book.attained[job_id] += n * (end - start)
        if self.flat:
            self.carbon_accrued += run.carbon_rate * (end - start)
        self.cost_accrued += egress
        attempts = book.attempts.setdefault(job_id, [])
        attempts.append(
            Attempt(start, end, run.placement, outcome, run.restart, wasted_s, run.bookings)
        )
        return len(attempts)

    def record(
        self,
        job: Job,
        prof: JobProfile,
        floors: tuple[int, ...],
        run: Running,
        attempts: tuple[Attempt, ...],
        wait: float,
        execution: float,
        jct: float,
        totals: Sequence[float],  # cost, carbon, egress, wasted GPU-s, wasted cost
    ) -> None:
        """The finished job's :class:`JobRecord`; ``run`` is its last (completed) attempt. A
        job with a deadline or a slack also records when it was due, its tardiness and
        whether it missed (semantics §15)."""
        cost, carbon, egress, wasted_gpu_s, wasted_cost = totals
        due = due_time(job, prof.ideal_execution)
        tardiness, missed = lateness(due, run.finish)
        mine, extra = split_declared(
            JobRecord, {f.record: getattr(job, f.attr) for f in record_fields()}
        )
        record = JobRecord(
            job_id=job.job_id,
            model=job.model.name,
            dataset=job.dataset,
            k_star=prof.k_star,
            memory_floor=min(floors),
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
            deadline=due,
            tardiness=tardiness,
            missed=missed,
            **mine,
        )
        self.records[job.job_id] = attach(record, extra) if extra else record
