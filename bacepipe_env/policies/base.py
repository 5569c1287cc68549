"""A scheduling policy is an (ordering, placement) pair; the ordering base class and FCFS, the
simplest ordering."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.admission import AdmissionRule
from ..core.preemption import PreemptionRule
from ..core.scenario import Scenario
from ..core.simulator import OrderingPolicy, PlacementPolicy, RunResult, SchedulerView, Simulator
from ..core.snapshot import QueueSnapshot

__all__ = ["FCFSOrdering", "Ordering", "Policy"]


class Ordering:
    """Base of the built-in orderings: each decides from a :class:`QueueSnapshot` alone, in
    :meth:`pick`, so that the same object orders jobs in the simulator (:meth:`choose`) and
    as a heuristic agent on the Gymnasium environment (which hands it the snapshot of its
    visible window and the legal slots)."""

    name = "ordering"

    def pick(self, queue: QueueSnapshot, legal: Sequence[int]) -> int:
        """The index into ``queue`` of the job to place next; one of ``legal`` (not empty)."""
        raise NotImplementedError

    def choose(self, view: SchedulerView, candidates: Sequence[int]) -> int:
        """The simulator's entry point: :meth:`pick` on the snapshot of ``candidates``."""
        if len(candidates) == 1:
            return candidates[0]
        queue = QueueSnapshot.from_view(view, candidates)
        return candidates[self.pick(queue, range(len(candidates)))]


class FCFSOrdering(Ordering):
    """First come, first served: the earliest-submitted candidate (ties to the lower job id)."""

    name = "fcfs"

    def pick(self, queue: QueueSnapshot, legal: Sequence[int]) -> int:
        """Slots come in submission order, so the first legal one."""
        return legal[0]

    def choose(self, view: SchedulerView, candidates: Sequence[int]) -> int:
        """Candidates arrive in submission order, so the first one (no snapshot needed)."""
        return candidates[0]

    def choose_array(self, view: SchedulerView, candidates: np.ndarray) -> int:
        """:meth:`choose` on the candidates as an intp array (the simulator's long-queue
        entry point); a subclass that overrides ``choose`` is asked through it."""
        if type(self).choose is not FCFSOrdering.choose:
            return self.choose(view, tuple(candidates.tolist()))
        return int(candidates[0])


@dataclass(frozen=True)
class Policy:
    """A named (ordering, placement) pair that the simulator can run, with the admission rule
    it waits by (None: the scenario's; a waiting heuristic names ``full`` or
    ``finish-aware``), the preemption rule it stops running jobs by (None: the scenario's;
    a preemptive heuristic names ``srtf`` or ``las``) and the elasticity rule it resizes
    jobs' data-parallel copies by (None: the scenario's; an elastic one names ``greedy``)."""

    name: str
    ordering: OrderingPolicy
    placement: PlacementPolicy
    admission: str | None = None
    preemption: str | None = None
    elasticity: str | None = None

    def simulate(
        self,
        scenario: Scenario,
        *,
        admission: str | AdmissionRule | None = None,
        validate: bool = True,
        preemption: str | PreemptionRule | None = None,
    ) -> RunResult:
        """Run one episode of ``scenario`` under this policy. The admission rule is
        ``admission`` when given (``greedy``, ``finish-aware``, ``full``), else the policy's
        own, else the scenario's; the preemption rule likewise (``none``, ``srtf``, ``las``);
        the elasticity rule is the policy's own, else the scenario's."""
        rule = self.admission if admission is None else admission
        stop = self.preemption if preemption is None else preemption
        sim = Simulator(
            scenario,
            self.placement,
            admission=rule,
            validate=validate,
            preemption=stop,
            elasticity=self.elasticity,
        )
        return sim.run(self._named())

    def _named(self) -> OrderingPolicy:
        return _NamedOrdering(self.name, self.ordering)


class _NamedOrdering:
    """Reports the policy's name (not the ordering's) in run results."""

    def __init__(self, name: str, inner: OrderingPolicy) -> None:
        self.name = name
        self._inner = inner
        fast = getattr(inner, "choose_array", None)
        if fast is not None:  # the simulator's long-queue entry point, passed through
            self.choose_array = fast
        self.by_shape = bool(getattr(inner, "by_shape", False))  # likewise

    def choose(self, view: SchedulerView, candidates: Sequence[int]) -> int:
        """The wrapped ordering's choice."""
        return self._inner.choose(view, candidates)
