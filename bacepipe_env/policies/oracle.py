"""An exhaustive best-order oracle for small queues (semantics §6's "extra orderings").

It sees the whole scenario, future arrivals included, so it is an oracle, not a scheduler:
a bound for learned orderers. For every permutation of the jobs it runs the simulator with
that static order (at each decision the first candidate in the order) and keeps the order with
the lowest average JCT, then the lowest total cost, then the earliest permutation in
lexicographic order of job ids.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.admission import AdmissionRule
from ..core.preemption import PreemptionRule
from ..core.scenario import Scenario
from ..core.simulator import PlacementPolicy, RunResult, SchedulerView, Simulator
from ..core.snapshot import QueueSnapshot
from ..errors import ValidationError
from .base import Ordering, Policy

__all__ = ["MAX_ORACLE_JOBS", "OraclePolicy", "StaticOrdering", "best_static_order"]

#: 8! = 40,320 simulations, about 10 s on one core; 9 jobs would take ten times longer.
MAX_ORACLE_JOBS = 8


class StaticOrdering(Ordering):
    """Always the candidate that comes first in a fixed order of job ids."""

    name = "static"

    def __init__(self, order: Sequence[int]) -> None:
        self.rank = {job: i for i, job in enumerate(order)}

    def pick(self, queue: QueueSnapshot, legal: Sequence[int]) -> int:
        """The legal slot whose job is ranked first."""
        return min(legal, key=lambda i: self.rank[queue.job_ids[i]])

    def choose(self, view: SchedulerView, candidates: Sequence[int]) -> int:
        """The candidate ranked first (no snapshot needed)."""
        return min(candidates, key=self.rank.__getitem__)


def best_static_order(
    scenario: Scenario,
    placement: PlacementPolicy,
    max_jobs: int = MAX_ORACLE_JOBS,
    admission: str | AdmissionRule | None = None,
    preemption: str | PreemptionRule | None = None,
) -> tuple[tuple[int, ...], RunResult]:
    """The static job order minimising (average JCT, total cost), and its run, under the
    scenario's (or the given) admission and preemption rules."""
    jobs = sorted(j.job_id for j in scenario.jobs)
    if len(jobs) > max_jobs:
        raise ValidationError(
            "oracle", len(jobs), f"tries every order of the jobs: at most {max_jobs} jobs"
        )
    sim = Simulator(scenario, placement, admission=admission, preemption=preemption)
    best: tuple[float, float] = (math.inf, math.inf)
    best_order: tuple[int, ...] = tuple(jobs)
    best_result: RunResult | None = None
    for order in itertools.permutations(jobs):
        sim.reset()
        result = sim.run(StaticOrdering(order))
        key = (result.avg_jct, result.total_cost)
        if key < best:
            best, best_order, best_result = key, order, result
    assert best_result is not None
    return best_order, best_result


@dataclass(frozen=True)
class OraclePolicy(Policy):
    """A :class:`Policy` whose ordering is found per scenario by :func:`best_static_order`."""

    def simulate(
        self,
        scenario: Scenario,
        *,
        admission: str | AdmissionRule | None = None,
        validate: bool = True,
        preemption: str | PreemptionRule | None = None,
    ) -> RunResult:
        """The best static order's run (``validate`` is always on)."""
        _, result = best_static_order(
            scenario, self.placement, admission=admission, preemption=preemption
        )
        return dataclasses.replace(result, policy=self.name)
