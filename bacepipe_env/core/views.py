"""What policies and rules read of a simulation: the scheduler's view, the two policy
protocols, and a hypothetical state (the cluster after the next release).

Nothing here imports the simulator: :class:`~bacepipe_env.core.simulator.Simulator`
implements :class:`SchedulerView`, and the admission rules, the environment and the policies
depend on these types alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .cluster import Cluster
from .network import network_utilization_rows
from .perf import JobProfile
from .placement import Placement

__all__ = [
    "HashedRows",
    "OrderingPolicy",
    "PlacementPolicy",
    "Release",
    "SchedulerView",
    "StateView",
]


@runtime_checkable
class SchedulerView(Protocol):
    """What a policy may read: the state a real scheduler's State Collector and Job Parser have
    (no future arrivals). :class:`~bacepipe_env.core.simulator.Simulator` implements it."""

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
    def memory_floor(self, job_id: int) -> tuple[int, ...]: ...


class OrderingPolicy(Protocol):
    """Picks which pending job to place next."""

    name: str

    def choose(self, view: SchedulerView, candidates: Sequence[int]) -> int:
        """Return one of ``candidates`` (job ids, in submission order)."""
        ...


class PlacementPolicy(Protocol):
    """Decides where a job runs; ``None`` (or an empty placement) leaves it pending.

    ``pure`` says whether the answer depends only on the cluster, the free GPUs, the residual
    bandwidth and the job's profile; the Gym environment then memoises its placement previews.
    A pure policy may also have a hashable ``memo_key``: policies of one type with equal keys
    give equal answers, so the environments of one process share their memoised previews
    (without one, only the envs given the same policy object share them).
    """

    name: str
    pure: bool

    def place(self, view: SchedulerView, job_id: int) -> Placement | None:
        """Return a placement on the currently free GPUs and residual bandwidth."""
        ...


@dataclass(frozen=True)
class Release:
    """The cluster right after the next GPU release: every running job finishing at ``time``
    has given back its GPUs and bandwidth. What admission rules look ahead to."""

    time: float  # s
    free: tuple[int, ...]  # free GPUs per region
    residual: tuple[tuple[float, ...], ...]  # residual bandwidth, bytes/s


class HashedRows(tuple):  # type: ignore[type-arg]
    """A tuple that computes its hash once: the residual bandwidth view and its rows, which the
    placement memo hashes at every decision. A plain tuple's hash is recomputed at every lookup
    (K^2 floats: 1.3 ms a decision at 256 regions); a view's is worked out once from its rows'
    own cached hashes, so a decision costs one hash per changed row and K for the view. Equal
    to, and hashing like, the plain tuple of the same values."""

    def __hash__(self) -> int:
        cached = self.__dict__
        h: int | None = cached.get("h")
        if h is None:
            h = cached["h"] = tuple.__hash__(self)
        return h


class StateView:
    """A :class:`SchedulerView` of a hypothetical state (another instant's free GPUs and
    residual bandwidth) of the simulation ``base``, for asking the placement policy what it
    would do then. The rest (the cluster, the queue, the profiles) is ``base``'s."""

    def __init__(
        self, base: SchedulerView, time: float, free: tuple[int, ...], residual: Any
    ) -> None:
        self._base = base
        self.time = time
        self.free_gpus = free
        self.residual_rows = residual

    @property
    def cluster(self) -> Cluster:
        """The simulated cluster."""
        return self._base.cluster

    @property
    def network_utilization(self) -> float:
        """Eq. (11) alpha on this state's reservations."""
        cap = self._base.cluster.bandwidth_rows
        reserved = [
            [c - r for c, r in zip(crow, rrow)] for crow, rrow in zip(cap, self.residual_rows)
        ]
        return network_utilization_rows(reserved, self._base.cluster.link_capacity)

    @property
    def pending(self) -> tuple[int, ...]:
        """The pending jobs (the base simulation's, now)."""
        return self._base.pending

    def profile(self, job_id: int) -> JobProfile:
        """The job's :class:`JobProfile`."""
        return self._base.profile(job_id)

    def memory_floor(self, job_id: int) -> tuple[int, ...]:
        """The job's memory floor per region (semantics §3a)."""
        return self._base.memory_floor(job_id)
