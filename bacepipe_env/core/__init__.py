"""The simulator core: cluster, jobs, performance model, placements and the event-driven
simulator. Free of gymnasium and torch."""

from .cluster import DEFAULT_POWER_KW, Cluster, Region
from .job import Job, ModelSpec, TrainingConstants
from .perf import JobProfile, iteration_time, profile_job
from .placement import Placement
from .records import JobRecord, RunResult
from .scenario import Scenario
from .simulator import Simulator
from .views import OrderingPolicy, PlacementPolicy, SchedulerView
from .world import KNOBS, World

__all__ = [
    "DEFAULT_POWER_KW",
    "KNOBS",
    "Cluster",
    "Job",
    "JobProfile",
    "JobRecord",
    "ModelSpec",
    "OrderingPolicy",
    "Placement",
    "PlacementPolicy",
    "Region",
    "RunResult",
    "Scenario",
    "SchedulerView",
    "Simulator",
    "TrainingConstants",
    "World",
    "iteration_time",
    "profile_job",
]
