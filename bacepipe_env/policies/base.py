"""A scheduling policy is an (ordering, placement) pair; FCFS is the simplest ordering."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.admission import AdmissionRule
from ..core.scenario import Scenario
from ..core.simulator import OrderingPolicy, PlacementPolicy, RunResult, SchedulerView, Simulator

__all__ = ["FCFSOrdering", "Policy"]


class FCFSOrdering:
    """First come, first served: the earliest-submitted candidate (ties to the lower job id)."""

    name = "fcfs"

    def choose(self, view: SchedulerView, candidates: Sequence[int]) -> int:
        """Candidates arrive in submission order, so the first one."""
        return candidates[0]


@dataclass(frozen=True)
class Policy:
    """A named (ordering, placement) pair that the simulator can run."""

    name: str
    ordering: OrderingPolicy
    placement: PlacementPolicy

    def simulate(
        self,
        scenario: Scenario,
        *,
        admission: str | AdmissionRule | None = None,
        validate: bool = True,
    ) -> RunResult:
        """Run one episode of ``scenario`` under this policy; ``admission`` overrides the
        scenario's admission rule (``greedy``, ``finish-aware``, ``full``)."""
        sim = Simulator(scenario, self.placement, admission=admission, validate=validate)
        return sim.run(self._named())

    def _named(self) -> OrderingPolicy:
        return _NamedOrdering(self.name, self.ordering)


class _NamedOrdering:
    """Reports the policy's name (not the ordering's) in run results."""

    def __init__(self, name: str, inner: OrderingPolicy) -> None:
        self.name = name
        self._inner = inner

    def choose(self, view: SchedulerView, candidates: Sequence[int]) -> int:
        return self._inner.choose(view, candidates)
