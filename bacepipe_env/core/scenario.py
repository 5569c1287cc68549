"""A concrete scenario: a cluster and a list of jobs, ready to simulate."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import ScenarioError
from .cluster import Cluster
from .deadlines import due_time
from .faults import FaultModel
from .job import Job
from .limits import MAX_JOBS
from .memory import layers_per_stage
from .perf import JobProfile, ProfileCache
from .tariff import Tariff
from .world import MAX_ANNOUNCE_H, World, check_announce_h

__all__ = ["MAX_ANNOUNCE_H", "FutureJobs", "Scenario", "World", "check_announce_h"]

#: ``future(rng, after, ids)``: jobs with the ids ``ids`` (ascending), drawn with ``rng`` from
#: the world's own workload rule and arrival process, submitted after ``after`` seconds in id
#: order (what a rollout planner's ``sampled`` fork puts in place of the jobs it cannot know).
FutureJobs = Callable[[np.random.Generator, float, Sequence[int]], tuple[Job, ...]]


@dataclass(frozen=True, eq=False)
class Scenario:
    """A cluster, its workload and its world. ``params`` records how it was made (file, seed,
    scales).

    ``world`` (:class:`~bacepipe_env.core.world.World`) holds every world setting. Among them:
    ``ignore_memory`` restores the paper's literal semantics, where a job may start on any
    number of GPUs (semantics §3a); otherwise every job must be able to fit in GPU memory on
    some set of regions, or the scenario is rejected here. ``admission`` names the rule that
    decides whether an offered placement is taken now (semantics §3b); ``preemption`` the rule
    that decides whether a running job is stopped so that a pending one can start (semantics
    §3c); ``announce_h`` (hours, default 0: no calendar) how long before its submit time a job
    is known, as large training runs are planned ahead: it changes no dynamics (a job still
    starts no earlier than its submit time), only what a scheduler may see
    (:meth:`~bacepipe_env.core.simulator.Simulator.announced`).

    Two parts are built from the world and the scenario file together: ``tariff`` prices
    electricity, carbon and egress over time (semantics §10; the default is the cluster's flat
    prices and carbon intensities, without egress), and ``faults`` (semantics §11) lists the
    outages, link and price changes and the GPU failure rate, and what an interrupted attempt
    costs (None: the perfect world with the default costs).

    ``future`` (None: the world has no arrival process to draw from, such as a fixed job
    list or a batch) draws jobs of the world's own workload and arrival process in place of
    the jobs a scheduler cannot know yet (:data:`FutureJobs`; set by the scenario builders,
    :mod:`bacepipe_env.core.sampling` uses it). It changes no dynamics and no equality.
    """

    name: str
    cluster: Cluster
    jobs: tuple[Job, ...]
    world: World = field(default_factory=World)
    description: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    profile_cache: ProfileCache | None = field(default=None, repr=False, compare=False)
    tariff: Tariff = None  # type: ignore[assignment]  # None: flat, from the cluster
    faults: FaultModel | None = None
    future: FutureJobs | None = field(default=None, repr=False, compare=False)

    @property
    def ignore_memory(self) -> bool:
        """``world.ignore_memory``: whether placements may exceed GPU memory (semantics §3a)."""
        return self.world.ignore_memory

    @property
    def admission(self) -> str:
        """``world.admission``: the admission rule's name (semantics §3b)."""
        return self.world.admission

    @property
    def preemption(self) -> str:
        """``world.preemption``: the preemption rule's canonical spec (semantics §3c)."""
        return self.world.preemption

    @property
    def elasticity(self) -> str:
        """``world.elasticity``: the elasticity rule's canonical spec (semantics §3f)."""
        return self.world.elasticity

    @cached_property
    def replica_ranges(self) -> dict[int, tuple[int, int]]:
        """Job id -> ``(min, max)`` data-parallel copies it may run (semantics §3e): its own
        ``min_replicas`` and ``max_replicas``, the world's ``max_replicas`` where it declares
        none, at most its micro-batches (a copy runs at least one); ``(1, 1)`` for every job
        of the paper's world. A minimum above that maximum is refused when the scenario is
        built (:meth:`_check_min_replicas`), so every range here is non-empty."""
        return {job.job_id: (job.min_replicas, self._replica_high(job)) for job in self.jobs}

    def _replica_high(self, job: Job) -> int:
        """The most data-parallel copies ``job`` may run: its ``max_replicas``, else the
        world's, at most its micro-batches (``batch / micro_batch``)."""
        high = self.world.max_replicas if job.max_replicas is None else job.max_replicas
        return min(high, job.batch // job.constants.micro_batch)

    @property
    def announce_h(self) -> float:
        """``world.announce_h``: hours ahead a job is announced (semantics §13)."""
        return self.world.announce_h

    def __post_init__(self) -> None:
        jobs = tuple(self.jobs)
        if not jobs:
            raise ScenarioError("jobs", [], "a scenario needs at least one job")
        if len(jobs) > MAX_JOBS:  # the builders refuse it before building; a backstop
            raise ScenarioError(
                "jobs", len(jobs), f"a scenario holds at most {MAX_JOBS:,} jobs (MAX_JOBS)"
            )
        ids = [j.job_id for j in jobs]
        if len(set(ids)) != len(ids):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            raise ScenarioError("jobs", dupes, "job ids must be unique")
        object.__setattr__(self, "jobs", jobs)
        if not isinstance(self.world, World):
            raise ScenarioError("world", self.world, "must be a World")
        if self.faults is not None:
            if not isinstance(self.faults, FaultModel):
                raise ScenarioError("faults", self.faults, "must be a FaultModel")
            self.faults.check_regions(self.cluster.n_regions, self.cluster.names)
        changes = self.faults.prices if self.faults is not None else ()
        if self.tariff is None:
            object.__setattr__(
                self,
                "tariff",
                Tariff(self.cluster.prices, self.cluster.carbon, price_changes=changes),
            )
        if not isinstance(self.tariff, Tariff):
            raise ScenarioError("tariff", self.tariff, "must be a Tariff")
        if self.tariff.n_regions != self.cluster.n_regions:
            raise ScenarioError(
                "tariff", self.tariff.n_regions, f"must cover the {self.cluster.n_regions} regions"
            )
        if self.tariff.price_changes != changes:
            raise ScenarioError(
                "tariff", "price_changes", "must be the fault model's price changes"
            )
        if self.world.model == "paper":
            self._check_one_pipeline()
        self._check_min_replicas()
        if not self.ignore_memory:
            self._check_memory()

    def _check_one_pipeline(self) -> None:
        """The paper's model has no data-parallel replicas: every job runs one pipeline."""
        if self.world.max_replicas > 1:
            raise ScenarioError(
                "max_replicas",
                self.world.max_replicas,
                "the paper's model has no data-parallel replicas; use model physical",
            )
        for job in self.jobs:
            if job.min_replicas > 1 or (job.max_replicas or 1) > 1:
                raise ScenarioError(
                    f"job {job.job_id}.max_replicas",
                    max(job.min_replicas, job.max_replicas or 1),
                    "the paper's model has no data-parallel replicas; use model physical",
                )
        if self.world.elasticity != "none":
            raise ScenarioError(
                "elasticity",
                self.world.elasticity,
                "the paper's model has no data-parallel replicas to resize; use model physical",
            )

    def _check_min_replicas(self) -> None:
        """Every job can run the copies it asks for at least (semantics §3e): its
        ``min_replicas`` is at most the world's ``max_replicas`` when it declares no maximum of
        its own, and at most its micro-batches (a copy runs at least one). Otherwise the job
        would quietly run fewer copies than its minimum."""
        for job in self.jobs:
            low = job.min_replicas
            if low == 1:
                continue
            micro = job.batch // job.constants.micro_batch
            if low > micro:
                raise ScenarioError(
                    f"job {job.job_id}.min_replicas",
                    low,
                    f"must be at most the job's {micro} micro-batches (batch "
                    f"{job.batch} / micro_batch {job.constants.micro_batch}); "
                    "a copy runs at least one",
                )
            if job.max_replicas is None and low > self.world.max_replicas:
                raise ScenarioError(
                    f"job {job.job_id}.min_replicas",
                    low,
                    f"must be at most the world's max_replicas ({self.world.max_replicas}), "
                    "which the job takes as it declares none",
                )

    @cached_property
    def _shapes(self) -> ProfileCache:
        """The profile cache this scenario's jobs share: the one it was built with, or its
        own, so that jobs of one shape are profiled and checked once either way."""
        return self.profile_cache if self.profile_cache is not None else ProfileCache()

    @cached_property
    def submit_times(self) -> dict[int, float]:
        """Job id -> its submit time (seconds)."""
        return {j.job_id: j.submit_time for j in self.jobs}

    @cached_property
    def profiles(self) -> dict[int, JobProfile]:
        """Job id -> :class:`JobProfile` as the schedulers estimate it (the Job Parser's work),
        under ``world.estimate_model``: the paper's Eq. (1) unless ``scheduler_model`` is
        ``"world"``. Computed once per scenario."""
        return self._profiles_under(self.world.estimate_model)

    @cached_property
    def world_profiles(self) -> dict[int, JobProfile]:
        """Job id -> :class:`JobProfile` under the model the world runs by (``world.model``):
        what a started job's run time and bookings come from. The very dict of
        :attr:`profiles` when the two models are one."""
        if self.world.model == self.world.estimate_model:
            return self.profiles
        return self._profiles_under(self.world.model)

    @cached_property
    def deadlines(self) -> dict[int, float]:
        """Job id -> when the job is due (s), for the jobs that have a deadline or a slack
        (semantics §15; :func:`~bacepipe_env.core.deadlines.due_time` under the world's
        profiles, whose isolated run time the slowdown divides by). Empty without deadlines."""
        if all(j.deadline is None and j.slack is None for j in self.jobs):
            return {}
        profiles = self.world_profiles
        return {
            j.job_id: due
            for j in self.jobs
            if (due := due_time(j, profiles[j.job_id].ideal_execution)) is not None
        }

    def _profiles_under(self, model: str) -> dict[int, JobProfile]:
        ref = self.cluster.regions[self.cluster.largest_region].intra_bandwidth
        get, recompute = self._shapes.get, self.world.recompute
        return {j.job_id: get(j, ref, model, recompute) for j in self.jobs}

    @cached_property
    def usable_memory(self) -> tuple[float, ...]:
        """GPU memory per region that a job's stages may fill (bytes): each GPU's memory less
        the runtime reserve (``world.reserve_bytes``; none under the paper's model)."""
        reserve = self.world.reserve_bytes
        return tuple(max(0.0, m - reserve) for m in self.cluster.gpu_memory)

    @cached_property
    def memory_floors(self) -> dict[int, tuple[int, ...]]:
        """Job id -> the smallest pipeline size that fits in GPU memory, per region (semantics §3a);
        all ones under ``ignore_memory``."""
        k = self.cluster.n_regions
        if self.ignore_memory:
            ones = (1,) * k
            return {j.job_id: ones for j in self.jobs}
        mem, floors, profiles = self.usable_memory, self._shapes.memory_floors, self.profiles
        kept = self.world.activations
        return {j.job_id: floors(profiles[j.job_id], mem, kept) for j in self.jobs}

    def _check_memory(self) -> None:
        """Reject a job that no set of regions can ever hold in GPU memory."""
        capacity = tuple(self.cluster.capacity)
        memory = self.usable_memory
        kept = self.world.activations
        startable = self._shapes.startable
        for job in self.jobs:
            prof = self.profiles[job.job_id]
            floors = self.memory_floors[job.job_id]
            if startable(floors, capacity, prof.k_star):
                continue
            n_layers = job.model.n_layers
            usable = sorted(
                (f, r) for r, f in enumerate(floors) if layers_per_stage(prof, memory[r], kept) > 0
            )
            if not usable:
                reason = f"not one of its {n_layers} layers fits in a {max(memory) / 1e9:g} GB GPU"
                if self.world.reserve_bytes > 0:  # the GPU's memory less the runtime reserve
                    reason += f" (after a {self.world.reserve_bytes / 1e9:g} GB runtime reserve)"
            else:  # the region set that comes closest: the most GPUs it could have, vs its floor
                total, closest = 0, (0, 0, 0)
                for f, r in usable:
                    total += capacity[r]
                    if min(total, prof.k_star) >= closest[0]:
                        closest = (min(total, prof.k_star), f, r)
                largest, floor, r = closest
                reason = (
                    f"needs {floor} GPUs to fit in GPU memory "
                    f"({layers_per_stage(prof, memory[r], kept)} of {n_layers} layers per "
                    f"{memory[r] / 1e9:g} GB GPU) but the largest placement possible is "
                    f"{largest} GPUs"
                )
            raise ScenarioError(
                f"job {job.name}",
                job.model.name,
                f"{reason}; set ignore_memory to run it anyway",
            )
