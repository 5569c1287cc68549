"""The paper's baselines and ablations (semantics §6) as placement and ordering policies."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..core.perf import JobProfile
from ..core.placement import Placement
from ..core.simulator import SchedulerView
from ..core.snapshot import QueueSnapshot
from ..scheduling.baselines import (
    cr_lcf_unchecked,
    cr_ldf_path_unchecked,
    even_allocate_unchecked,
    fill_in_path_order_unchecked,
    lcf_unchecked,
    ldf_unchecked,
)
from ..scheduling.pathfinder import cost_min_allocate_unchecked, pathfinder_unchecked
from .bace_pipe import placement_inputs, to_placement
from .base import Ordering

__all__ = ["PLACEMENT_RULES", "RandomOrdering", "RulePlacement", "SJFOrdering"]

Rule = Callable[[SchedulerView, JobProfile], tuple[list[int], dict[int, int]]]


def _lcf_rule(view: SchedulerView, prof: JobProfile) -> tuple[list[int], dict[int, int]]:
    floor = view.memory_floor(prof.job.job_id)
    return lcf_unchecked(view.free_gpus, view.cluster.prices, prof.k_star, floor)


def _ldf_rule(view: SchedulerView, prof: JobProfile) -> tuple[list[int], dict[int, int]]:
    floor = view.memory_floor(prof.job.job_id)
    return ldf_unchecked(view.free_gpus, view.cluster.prices, prof.k_star, floor)


def _cr_lcf_rule(view: SchedulerView, prof: JobProfile) -> tuple[list[int], dict[int, int]]:
    return cr_lcf_unchecked(*placement_inputs(view, prof), view.memory_floor(prof.job.job_id))


def _cr_ldf_then(allocate: Callable[..., dict[int, int]]) -> Rule:
    def rule(view: SchedulerView, prof: JobProfile) -> tuple[list[int], dict[int, int]]:
        inputs = placement_inputs(view, prof)
        path, g = cr_ldf_path_unchecked(*inputs)
        free, price = inputs[0], inputs[1]
        return (path, allocate(path, g, free, price)) if path else ([], {})

    return rule


def _pathfinder_even_rule(
    view: SchedulerView, prof: JobProfile
) -> tuple[list[int], dict[int, int]]:
    return pathfinder_unchecked(*placement_inputs(view, prof), False, even_allocate_unchecked)


#: Placement rule name -> rule. "cr-ldf+cost-min" is the w/o Pathfinder ablation's placement,
#: "pathfinder+even" the w/o Cost-Min ablation's (Alg. 1 with Alg. 2 swapped for an even
#: spread, in the path comparison too).
PLACEMENT_RULES: dict[str, Rule] = {
    "lcf": _lcf_rule,
    "ldf": _ldf_rule,
    "cr-lcf": _cr_lcf_rule,
    "cr-ldf": _cr_ldf_then(fill_in_path_order_unchecked),
    "cr-ldf+cost-min": _cr_ldf_then(cost_min_allocate_unchecked),
    "pathfinder+even": _pathfinder_even_rule,
}


class RulePlacement:
    """A placement policy from one of :data:`PLACEMENT_RULES`."""

    #: The result depends only on the cluster, the free GPUs, the residual bandwidth and the
    #: job's profile, so callers may memoise it on those.
    pure = True

    def __init__(self, rule: str) -> None:
        self.name = rule
        self._rule = PLACEMENT_RULES[rule]

    @property
    def memo_key(self) -> str:
        """What fixes the answers: memoised previews are shared by the rules of one name."""
        return self.name

    def place(self, view: SchedulerView, job_id: int) -> Placement | None:
        """The rule's path and allocation on the free GPUs and residual bandwidth."""
        return to_placement(*self._rule(view, view.profile(job_id)))


class SJFOrdering(Ordering):
    """Shortest job first by single-GPU execution time ``E(1)``; ties to the earlier
    submission, then the lower job id."""

    name = "sjf"

    def pick(self, queue: QueueSnapshot, legal: Sequence[int]) -> int:
        """The legal slot with the smallest E(1) (slots come in submission order)."""
        e1 = queue.single_gpu_exec
        return min(legal, key=lambda i: e1[i])

    def choose(self, view: SchedulerView, candidates: Sequence[int]) -> int:
        """:meth:`pick`'s choice read from the profiles, without building a snapshot (what a
        planner's forks ask thousands of times): candidates come in submission order."""
        if len(candidates) == 1:
            return candidates[0]
        return min(candidates, key=lambda j: view.profile(j).single_gpu_exec)


class RandomOrdering(Ordering):
    """A uniformly random candidate, from its own seeded generator."""

    name = "random"

    def __init__(self, seed: int | np.random.Generator = 0) -> None:
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    def pick(self, queue: QueueSnapshot, legal: Sequence[int]) -> int:
        """Any legal slot, each equally likely."""
        return legal[int(self.rng.integers(len(legal)))]

    def choose(self, view: SchedulerView, candidates: Sequence[int]) -> int:
        """Any candidate, each equally likely (one draw, even with a single candidate)."""
        return candidates[int(self.rng.integers(len(candidates)))]
