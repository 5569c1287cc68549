"""The cluster's resources at one instant: free GPUs per region and the bandwidth ledger
(constraints 5 and 6, semantics §4).

A :class:`Ledger` books what a running attempt holds (its GPUs, and ``b(L)`` on every
cross-region link of its path, and under the physical model on the reverse link too, which
the backward pass uses) and gives it back, and keeps the read-only views policies read
(free GPUs, residual bandwidth rows, Eq. 11's alpha) up to date cheaply: a start or a finish
touches a few regions and links of K, and only those are rebuilt.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .cluster import Cluster
from .placement import Placement
from .views import Release

__all__ = ["Ledger", "directed"]


class Ledger:
    """Free GPUs and bandwidth reservations of one simulated cluster.

    ``rows_type`` builds the residual view's rows (a plain tuple, or
    :class:`~bacepipe_env.core.views.HashedRows` on a large cluster). ``faults``: the links'
    capacity can change (semantics §11), so the ledger keeps its own copy of it; otherwise it
    is the cluster's nominal rows, shared. ``two_way`` (the physical model, semantics §3d):
    every booking on ``u -> v`` is made on ``v -> u`` as well, and the residual view of either
    direction is what both can still carry, ``min(B[u, v], B[v, u]) - booked``, so a policy
    that checks its path's forward links never overbooks a reverse one.
    """

    __slots__ = (
        "alpha",
        "booked",
        "capacity",
        "capacity_now",
        "epoch",
        "free",
        "free_array",
        "free_array_of",
        "free_total",
        "free_view",
        "job_links",
        "link_jobs",
        "link_total",
        "nominal",
        "reserved",
        "residual",
        "residual_array",
        "residual_view",
        "row_views",
        "rows_type",
        "two_way",
    )

    def __init__(
        self,
        cluster: Cluster,
        rows_type: type[tuple[Any, ...]],
        faults: bool,
        two_way: bool = False,
    ) -> None:
        k = cluster.n_regions
        self.capacity = cluster.capacity  # GPUs per region
        self.two_way = two_way
        rows = cluster.bandwidth_rows
        # (K, K) bytes/s, nominal: what a job may book on each link of an idle cluster
        self.nominal = (
            rows_type(
                rows_type(min(b, rows[v][u]) for v, b in enumerate(row))
                for u, row in enumerate(rows)
            )
            if two_way
            else rows
        )
        self.link_total = cluster.link_capacity  # bytes/s over every directed link
        self.rows_type = rows_type
        self.free = list(cluster.capacity)
        self.free_total = sum(self.free)
        self.free_view: tuple[int, ...] | None = None
        self.reserved = [[0.0] * k for _ in range(k)]
        # link -> its reservation, for the links with one > 0 (what alpha sums)
        self.booked: dict[tuple[int, int], float] = {}
        self.residual = [list(row) for row in self.nominal]
        # placement arrays' mirrors of the free GPUs and the residual ledger, made when asked
        self.free_array: np.ndarray | None = None
        self.free_array_of: tuple[int, ...] | None = None
        self.residual_array: np.ndarray | None = None
        self.residual_view: tuple[tuple[float, ...], ...] | None = None
        # each residual row as a tuple, None once a reservation changed it: the view is
        # rebuilt from the changed rows only (a start or finish touches a few of K)
        self.row_views: list[tuple[float, ...] | None] = [None] * k
        self.alpha: float | None = 0.0
        # link -> {job id: its reservation on the link}
        self.link_jobs: dict[tuple[int, int], dict[int, float]] = {}
        # job id -> the links it booked, as its booking named them
        self.job_links: dict[int, tuple[tuple[int, int], ...]] = {}
        # the links' capacity now, each direction its own: the cluster's rows, or a copy that
        # link changes rewrite
        self.capacity_now: Any = [list(row) for row in rows] if faults else rows
        # bumped at every change of the books (a booking, a release, a region or link change):
        # what was worked out at one epoch holds while it stands (see core.helped)
        self.epoch = 0

    def copy(self) -> Ledger:
        """An independent copy (the immutable views are shared, the mutable rows copied)."""
        new = object.__new__(Ledger)
        for name in Ledger.__slots__:
            setattr(new, name, getattr(self, name))
        new.free = list(self.free)
        new.reserved = [list(row) for row in self.reserved]
        new.booked = dict(self.booked)
        new.residual = [list(row) for row in self.residual]
        new.row_views = list(self.row_views)
        new.link_jobs = {link: dict(holders) for link, holders in self.link_jobs.items()}
        new.job_links = dict(self.job_links)
        if self.residual_array is not None:  # updated in place by rebook
            new.residual_array = self.residual_array.copy()
        if isinstance(self.capacity_now, list):  # a link change may rewrite it
            new.capacity_now = [list(row) for row in self.capacity_now]
        return new

    @property
    def free_gpus(self) -> tuple[int, ...]:
        """Free GPUs per region now."""
        if self.free_view is None:
            self.free_view = tuple(self.free)
        return self.free_view

    @property
    def residual_rows(self) -> tuple[tuple[float, ...], ...]:
        """Residual bandwidth ``B - reserved`` (bytes/s) as nested tuples; row u, column v."""
        if self.residual_view is None:
            rows, make = self.row_views, self.rows_type
            for u, row in enumerate(rows):
                if row is None:
                    rows[u] = make(self.residual[u])
            self.residual_view = make(rows)  # no None is left
        return self.residual_view

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(free, residual)`` as int64 (K) and float64 (K, K) arrays holding the views'
        numbers: the residual array is kept up to date in place from the first call on (one
        element per ledger change), the free array rebuilt after a change."""
        free = self.free_gpus
        free_array = self.free_array
        if free_array is None or self.free_array_of is not free:
            free_array = self.free_array = np.array(free, dtype=np.int64)
            self.free_array_of = free
        if self.residual_array is None:
            self.residual_array = np.array(self.residual, dtype=np.float64)
        return free_array, self.residual_array

    @property
    def network_utilization(self) -> float:
        """Eq. (11) alpha on the current reservations."""
        if self.alpha is None:
            # Eq. (11) over the booked links only: fsum is correctly rounded, so leaving out
            # the zeros gives the very same float as summing all K^2 entries, in O(booked)
            total = self.link_total
            booked = math.fsum(self.booked.values())
            self.alpha = booked / total if total > 0.0 else 0.0
        return self.alpha

    def take(self, job_id: int, p: Placement, bookings: dict[tuple[int, int], float]) -> None:
        """Book ``p``'s GPUs (every copy's) and ``bookings[u, v]`` bytes/s on each link for
        ``job_id`` (under ``two_way`` on ``v -> u`` as well): ``b(L)`` on every link of a
        pipeline's path, and for data-parallel copies what they book together (semantics §3e)."""
        self.epoch += 1
        free = self.free
        for r, g in p.cells:
            free[r] -= g
        self.free_total -= p.n_gpus
        self.free_view = None
        self.job_links[job_id] = tuple(bookings)
        for (u, v), amount in bookings.items():
            self.link_jobs.setdefault((u, v), {})[job_id] = amount
            if self.two_way:
                self.link_jobs.setdefault((v, u), {})[job_id] = amount
            self.rebook(u, v)

    def give_back(self, job_id: int, p: Placement) -> None:
        """Return what ``job_id`` holds on ``p``."""
        self.epoch += 1
        free = self.free
        for r, g in p.cells:
            free[r] += g
        self.free_total += p.n_gpus
        self.free_view = None
        for u, v in self.job_links.pop(job_id):
            del self.link_jobs[(u, v)][job_id]
            if self.two_way:
                del self.link_jobs[(v, u)][job_id]
            self.rebook(u, v)

    def link_capacity(self, u: int, v: int) -> float:
        """What bookings on ``u -> v`` may add up to now: the link's capacity, or under
        ``two_way`` the smaller of its two directions' (bytes/s)."""
        cap = self.capacity_now
        return min(cap[u][v], cap[v][u]) if self.two_way else cap[u][v]  # type: ignore[no-any-return]

    def rebook(self, u: int, v: int) -> None:
        """Recompute one link's ledger exactly from the jobs that hold it (both directions
        under ``two_way``, whose bookings are the same)."""
        self._rebook(u, v)
        if self.two_way:
            self._rebook(v, u)

    def _rebook(self, u: int, v: int) -> None:
        self.epoch += 1
        holders = self.link_jobs.get((u, v))
        booked = math.fsum(holders.values()) if holders else 0.0
        capacity = self.link_capacity(u, v)
        if booked > capacity:  # a degraded link: the holders' reservations shrink to fit
            booked = capacity
        self.reserved[u][v] = booked
        if booked:
            self.booked[u, v] = booked
        else:
            self.booked.pop((u, v), None)
        self.residual[u][v] = capacity - booked
        if self.residual_array is not None:
            self.residual_array[u, v] = capacity - booked
        self.residual_view = None
        self.row_views[u] = None
        self.alpha = None

    def close_region(self, region: int) -> None:
        """A region goes down: none of its GPUs is free until it comes back (its attempts
        have already given theirs back)."""
        self.epoch += 1
        self.free_total -= self.free[region]
        self.free[region] = 0
        self.free_view = None

    def open_region(self, region: int) -> None:
        """A region comes back with every GPU free."""
        self.epoch += 1
        self.free[region] = self.capacity[region]
        self.free_total += self.free[region]
        self.free_view = None

    def set_link_capacity(self, u: int, v: int, capacity: float) -> None:
        """The link ``u -> v`` carries ``capacity`` bytes/s from now on (a link change)."""
        self.epoch += 1
        self.capacity_now[u][v] = capacity
        self.rebook(u, v)

    def without(self, done: dict[int, Placement], t: float) -> Release:
        """The cluster at time ``t`` once the attempts ``done`` (job id -> placement) have
        given back their GPUs and bandwidth (the others keep theirs)."""
        free = list(self.free)
        touched: set[tuple[int, int]] = set()
        for job_id, p in done.items():
            for r, g in p.cells:
                free[r] += g
            links = self.job_links[job_id]
            touched.update(links)
            if self.two_way:
                touched.update((v, u) for u, v in links)
        residual: list[Any] = list(self.residual_rows)  # rows as tuples; touched ones as lists
        for u, v in touched:
            if isinstance(residual[u], tuple):
                residual[u] = list(residual[u])
            left = [b for j, b in self.link_jobs[(u, v)].items() if j not in done]
            residual[u][v] = self.link_capacity(u, v) - (math.fsum(left) if left else 0.0)
        make = self.rows_type
        rows = make(row if isinstance(row, tuple) else make(row) for row in residual)
        return Release(t, tuple(free), rows)


def directed(
    booked: dict[tuple[int, int], float], two_way: bool
) -> tuple[tuple[int, int, float], ...]:
    """``booked`` as ``(u, v, bytes/s)`` per directed link, as the ledger holds it: under
    ``two_way`` (the physical model) a pair's booking on both of its directions."""
    out = [(u, v, rate) for (u, v), rate in booked.items()]
    if two_way:
        out += [(v, u, rate) for (u, v), rate in booked.items() if u != v]
    return tuple(sorted(out))
