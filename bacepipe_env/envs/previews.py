"""Placement previews: what the placement policy would give each visible job now.

The environment shows the agent, for every job of its window, the placement the policy would
offer at this decision (observation features 7-10) and masks the jobs whose placement could not
start (empty, or below the memory floor; the admission rule decides only once a job is chosen,
as in the simulator's pass). Computing a placement
is the costly part of a step, so :class:`PlacementPreviewer` remembers answers by cluster state
and job shape.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..core.perf import preview_iteration_time
from ..core.placement import Placement
from ..core.simulator import PlacementPolicy, Release, Simulator

__all__ = ["DEFAULT_MEMO_SIZE", "PlacementPreviewer", "Preview"]

#: Most (state, job shape) answers a :class:`PlacementPreviewer` keeps; the oldest goes first.
DEFAULT_MEMO_SIZE = 16384

_EMPTY = Placement((), ())
_new = tuple.__new__
_Answer = tuple[Placement, float, float, bool]
Waited = tuple[float, Placement]  # (finish time, placement) if the job waits for a release


class Preview(NamedTuple):
    """A placement the job could start on now, with what the observation shows of it."""

    placement: Placement
    execution: float  # s, Eq. (2) on the placement's hops: I * t_iter
    avg_price: float  # $/kWh, GPU-weighted mean price of the placement


class PlacementPreviewer:
    """Previews of a placement policy's answers, memoised.

    Jobs of the same shape (K*, activation size, compute coefficients, micro-batches, memory
    floor) get the same placement on the same state, so one answer serves all of them. A policy
    that declares itself ``pure`` (its answer depends only on the cluster, the free GPUs, the
    residual bandwidth and the job's profile) has its answers remembered across decisions and
    episodes too; any other policy's memo is cleared at every decision.
    """

    def __init__(self, placement: PlacementPolicy, memo_size: int = DEFAULT_MEMO_SIZE) -> None:
        self.placement = placement
        self.pure = placement.pure  # checked by make_placement
        self.memo_size = memo_size
        # (hash of (cluster, free, residual), job shape) -> (that state, (placement, t_iter,
        # $/kWh, fits in memory)); a hit is checked against the stored state, so a hash
        # collision is harmless.
        self._memo: OrderedDict[tuple[object, ...], tuple[object, _Answer]]
        self._memo = OrderedDict()
        # the same for the state after the next release: (hash, shape) -> (state, (placement,
        # t_iter) or None)
        self._after: OrderedDict[tuple[object, ...], tuple[object, tuple[Placement, float] | None]]
        self._after = OrderedDict()
        self._shapes: dict[int, tuple[object, ...]] = {}  # job id -> its shape, this scenario
        self._scenario: object = None
        self._cluster: object = None  # the cluster the memos' answers are for

    def __len__(self) -> int:
        return len(self._memo)

    def clear(self) -> None:
        """Forget every remembered answer."""
        self._memo.clear()
        self._after.clear()

    def shape(self, sim: Simulator, job: int) -> tuple[object, ...]:
        """What the placement of ``job`` depends on besides the state (remembered per
        scenario): jobs of one shape get the same placement on the same state."""
        if sim.scenario is not self._scenario:
            self._scenario, self._shapes = sim.scenario, {}
        shape = self._shapes.get(job)
        if shape is None:
            p = sim.profile(job)
            shape = self._shapes[job] = (
                p.k_star,
                p.activation_bytes,
                p.compute_coeff,
                p.stage_overhead,
                p.n_micro,
                sim.memory_floor(job),
            )
        return shape

    def waits(self, sim: Simulator, release: Release) -> Callable[[int], Waited | None]:
        """:func:`~bacepipe_env.core.admission.finish_after_release` at one decision's
        ``release`` (the ``wait_preview`` array asks it once per visible job), memoised by job
        shape and, for a pure policy, by the release state across decisions and episodes,
        like the previews. The memo holds each shape's placement and Eq. (1) iteration time;
        the finish is ``release.time + I * t_iter``, :meth:`Simulator.execution_time`'s
        product, so the answers are bit for bit the function's."""
        self._new_cluster(sim)
        if not self.pure:
            self._after.clear()
        memo = self._after
        # the links' capacities now enter t_iter: under faults they are part of the state
        caps = None if sim.faults is None else sim.link_capacity_rows
        state = (sim.cluster, release.free, release.residual, caps)
        state_hash = hash(state)
        at = release.time

        def waited(job: int) -> Waited | None:
            key = (state_hash, self.shape(sim, job))
            hit = memo.get(key)
            if hit is not None and hit[0] == state:
                got = hit[1]
            else:
                later = sim.placement_on(job, release)
                got = None if later is None else (later, sim.iteration_time(job, later))
                memo[key] = (state, got)
                if len(memo) > self.memo_size:
                    memo.popitem(last=False)  # first in, first out
            if got is None:
                return None
            return at + sim.profile(job).iterations * got[1], got[0]

        return waited

    def _new_cluster(self, sim: Simulator) -> None:
        """Forget every answer when the cluster changes (a random env draws one per episode):
        no state of the old cluster comes back, and a small memo is a fast one."""
        if sim.cluster is not self._cluster:
            self._cluster = sim.cluster
            self._memo.clear()
            self._after.clear()

    def __call__(self, sim: Simulator, window: Sequence[int]) -> list[Preview | None]:
        """Per job of ``window``: its preview, or ``None`` if its placement could not start."""
        self._new_cluster(sim)
        if not self.pure:
            self._memo.clear()  # only this decision's state may be reused
        memo = self._memo
        state = (sim.cluster, sim.free_gpus, sim.residual_rows)
        state_hash = hash(state)  # hashed once per decision, not once per job
        prices = sim.cluster.prices
        if sim.scenario is not self._scenario:
            self._scenario, self._shapes = sim.scenario, {}
        shapes, profile, fits = self._shapes, sim.profile, sim.fits
        out: list[Preview | None] = []
        same: object = state
        for job in window:
            p = profile(job)
            shape = shapes.get(job) or self.shape(sim, job)
            hit = memo.get((state_hash, shape))
            got = None
            if hit is not None and (hit[0] is same or hit[0] == state):
                same, got = hit[0], hit[1]  # later hits on that stored state skip the compare
            if got is None:
                pl = self.placement.place(sim, job) or _EMPTY
                t_iter = avg_price = 0.0
                if pl.path:
                    t_iter = preview_iteration_time(p, sim.cluster, pl.path, pl.gpus)  # Eq. (1)
                    avg_price = sum(g * prices[r] for r, g in zip(pl.path, pl.gpus))
                    avg_price /= pl.n_gpus
                # whether it fits in memory depends on the shape's floors and pl alone
                got = (pl, t_iter, avg_price, bool(pl.path) and fits(job, pl))
                memo[state_hash, shape] = (state, got)
                if len(memo) > self.memo_size:
                    memo.popitem(last=False)  # first in, first out
            pl = got[0]
            # Admission is not applied here: it decides when the chosen job is placed, as in
            # the simulator's pass (a declined job then waits for the next event).
            if got[3]:
                # Eq. (2): E = I * t_iter; tuple.__new__ is NamedTuple's constructor, minus a call
                out.append(_new(Preview, (pl, got[1] * p.iterations, got[2])))
            else:
                out.append(None)
        return out
