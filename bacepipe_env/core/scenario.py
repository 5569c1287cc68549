"""A concrete scenario: a cluster and a list of jobs, ready to simulate."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..errors import ScenarioError
from .cluster import Cluster
from .job import Job
from .perf import JobProfile, ProfileCache, profile_job

__all__ = ["Scenario"]


@dataclass(frozen=True, eq=False)
class Scenario:
    """A cluster and its workload. ``params`` records how it was made (file, seed, scales)."""

    name: str
    cluster: Cluster
    jobs: tuple[Job, ...]
    description: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    profile_cache: ProfileCache | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        jobs = tuple(self.jobs)
        if not jobs:
            raise ScenarioError("jobs", [], "a scenario needs at least one job")
        ids = [j.job_id for j in jobs]
        if len(set(ids)) != len(ids):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            raise ScenarioError("jobs", dupes, "job ids must be unique")
        object.__setattr__(self, "jobs", jobs)

    @cached_property
    def profiles(self) -> dict[int, JobProfile]:
        """Job id -> :class:`JobProfile`, computed once per scenario (the Job Parser's work)."""
        ref = self.cluster.regions[self.cluster.largest_region].intra_bandwidth
        if self.profile_cache is not None:
            return {j.job_id: self.profile_cache.get(j, ref) for j in self.jobs}
        return {j.job_id: profile_job(j, ref) for j in self.jobs}
