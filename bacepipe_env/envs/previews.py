"""Placement previews: what the placement policy would give each visible job now.

The environment shows the agent, for every job of its window, the placement the policy would
offer at this decision (observation features 7-10) and masks the jobs whose placement could not
start (empty, or below the memory floor; the admission rule decides only once a job is chosen,
as in the simulator's pass). Computing a placement
is the costly part of a step, so :class:`PlacementPreviewer` remembers answers by cluster state
and job shape.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import NamedTuple

from ..core.perf import preview_iteration_time
from ..core.placement import Placement
from ..core.simulator import PlacementPolicy, Release, Simulator

__all__ = ["DEFAULT_MEMO_SIZE", "PlacementPreviewer", "Preview", "memo_key"]

#: Most (state, job shape) answers a :class:`PlacementPreviewer` keeps; the oldest goes first.
DEFAULT_MEMO_SIZE = 16384

_EMPTY = Placement((), ())
_new = tuple.__new__
_Answer = tuple[Placement, float, float, bool]
Waited = tuple[float, Placement]  # (finish time, placement) if the job waits for a release


class _Store:
    """One cluster's remembered answers for one placement behaviour: the previews' memo, the
    wait previews' memo and the shape ids both are keyed on. States are keyed without the
    cluster (the store is the cluster's), so a store never holds its own cluster alive."""

    __slots__ = ("after", "memo", "shape_ids")

    def __init__(self) -> None:
        # (hash of (free, residual), job shape id) -> (that state, (placement, t_iter, $/kWh,
        # fits in memory)); a hit is checked against the stored state, so a hash collision is
        # harmless. A shape id is a small int naming one job shape (cheap to hash).
        self.memo: OrderedDict[tuple[object, ...], tuple[object, _Answer]] = OrderedDict()
        # the same for the state after the next release: (hash, shape) -> (state, (placement,
        # t_iter) or None)
        self.after: OrderedDict[tuple[object, ...], tuple[object, tuple[Placement, float] | None]]
        self.after = OrderedDict()
        self.shape_ids: dict[tuple[object, ...], int] = {}  # shape -> id


#: cluster -> {(memo key, memo size): store}: the stores pure policies share within a process
#: (the envs of a vector env on one scenario file see one cluster object). Weak on the cluster:
#: a random env's old clusters take their stores with them.
_SHARED: weakref.WeakKeyDictionary[object, dict[Hashable, _Store]] = weakref.WeakKeyDictionary()


def memo_key(placement: PlacementPolicy) -> Hashable | None:
    """What a pure placement policy's answers are shared under: its type with its
    ``memo_key`` attribute (policies of one type with equal keys give equal answers, as two
    ``PathfinderPlacement``s with the same ``partial_take`` do), else the policy object itself
    (``None``, shared with nobody, if it cannot be hashed)."""
    key = getattr(placement, "memo_key", None)
    if key is not None:
        return (type(placement), key)
    if not isinstance(placement, Hashable):  # a dataclass with eq: answers of its own
        return None
    return placement


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
        # the store's key among the cluster's shared ones (None: a store of its own); the memo
        # size is part of it, so that each store keeps to one size
        key = memo_key(placement) if self.pure else None
        self._key = None if key is None else (key, memo_size)
        self._store = _Store()  # the current cluster's (see _new_cluster)
        self._shapes: dict[int, tuple[object, ...]] = {}  # job id -> its shape, this scenario
        self._sids: dict[int, int] = {}  # job id -> its shape's id, this scenario
        self._scenario: object = None
        self._cluster: object = None  # the cluster the memos' answers are for

    def __len__(self) -> int:
        return len(self._store.memo)

    def clear(self) -> None:
        """Forget every remembered answer of the current cluster (for every previewer that
        shares them)."""
        self._store.memo.clear()
        self._store.after.clear()

    def _new_scenario(self, sim: Simulator) -> None:
        if sim.scenario is not self._scenario:
            self._scenario, self._shapes, self._sids = sim.scenario, {}, {}

    def shape_id(self, sim: Simulator, job: int) -> int:
        """A small int naming :meth:`shape` of ``job`` (the same for every job of that shape
        until the cluster changes): what the memos are keyed on."""
        self._new_scenario(sim)
        sid = self._sids.get(job)
        if sid is None:
            ids = self._store.shape_ids
            sid = self._sids[job] = ids.setdefault(self.shape(sim, job), len(ids))
        return sid

    def shape(self, sim: Simulator, job: int) -> tuple[object, ...]:
        """What the placement of ``job`` depends on besides the state (remembered per
        scenario): jobs of one shape get the same placement on the same state."""
        self._new_scenario(sim)
        shape = self._shapes.get(job)
        if shape is None:
            shape = self._shapes[job] = sim.placement_shape(job)
        return shape

    def waits(self, sim: Simulator, release: Release) -> Callable[[int], Waited | None]:
        """:func:`~bacepipe_env.core.admission.finish_after_release` at one decision's
        ``release`` (the ``wait_preview`` array asks it once per visible job), memoised by job
        shape and, for a pure policy, by the release state across decisions and episodes,
        like the previews. The memo holds each shape's placement and Eq. (1) iteration time;
        the finish is ``release.time + I * t_iter``, :meth:`Simulator.execution_time`'s
        product, so the answers are bit for bit the function's."""
        self._new_cluster(sim)
        memo = self._store.after
        if not self.pure:
            memo.clear()
        # the links' capacities now enter t_iter: under faults they are part of the state
        caps = None if sim.faults is None else sim.link_capacity_rows
        state = (release.free, release.residual, caps)
        state_hash = hash(state)
        at = release.time
        local: dict[int, tuple[Placement, float] | None] = {}  # shape id -> answer, here
        self._new_scenario(sim)
        sids, shape_id = self._sids, self.shape_id

        def waited(job: int) -> Waited | None:
            sid = sids.get(job)
            if sid is None:
                sid = shape_id(sim, job)
            if sid in local:
                got = local[sid]
            else:
                hit = memo.get((state_hash, sid))
                if hit is not None and hit[0] == state:
                    got = hit[1]
                else:
                    later = sim.placement_on(job, release)
                    got = None if later is None else (later, sim.iteration_time(job, later))
                    memo[state_hash, sid] = (state, got)
                    if len(memo) > self.memo_size:
                        memo.popitem(last=False)  # first in, first out
                local[sid] = got
            if got is None:
                return None
            return at + sim.profile(job).iterations * got[1], got[0]

        return waited

    def _new_cluster(self, sim: Simulator) -> None:
        """Take up the new cluster's store when the cluster changes (a random env draws one
        per episode): a pure policy's is shared with every previewer of an equal policy on
        that cluster object in this process (the envs of a vector env); any other policy gets
        a fresh one. The old cluster's answers are let go (no state of it comes back)."""
        cluster = sim.cluster
        if cluster is not self._cluster:
            self._cluster = cluster
            if self._key is None:
                self._store = _Store()
            else:
                stores = _SHARED.get(cluster)
                if stores is None:
                    stores = _SHARED[cluster] = {}
                store = stores.get(self._key)
                if store is None:
                    store = stores[self._key] = _Store()
                self._store = store
            # a new cluster has new floors (new shapes): the store's ids, not the old ones
            self._scenario = None

    def __call__(self, sim: Simulator, window: Sequence[int]) -> list[Preview | None]:
        """Per job of ``window``: its preview, or ``None`` if its placement could not start."""
        self._new_cluster(sim)
        memo = self._store.memo
        if not self.pure:
            memo.clear()  # only this decision's state may be reused
        state = (sim.free_gpus, sim.residual_rows)
        state_hash = hash(state)  # hashed once per decision, not once per job
        prices = sim.cluster.prices
        self._new_scenario(sim)
        sids, shape_id, profile, fits = self._sids, self.shape_id, sim.profile, sim.fits
        local: dict[int, _Answer] = {}  # shape id -> answer, at this decision
        out: list[Preview | None] = []
        for job in window:
            p = profile(job)
            sid = sids.get(job)
            if sid is None:
                sid = shape_id(sim, job)
            got = local.get(sid)
            if got is None:
                hit = memo.get((state_hash, sid))
                if hit is not None and (hit[0] is state or hit[0] == state):
                    got = hit[1]
                else:
                    pl = self.placement.place(sim, job) or _EMPTY
                    t_iter = avg_price = 0.0
                    if pl.path:
                        t_iter = preview_iteration_time(p, sim.cluster, pl.path, pl.gpus)  # (1)
                        avg_price = sum(g * prices[r] for r, g in zip(pl.path, pl.gpus))
                        avg_price /= pl.n_gpus
                    # whether it fits in memory depends on the shape's floors and pl alone
                    got = (pl, t_iter, avg_price, bool(pl.path) and fits(job, pl))
                    memo[state_hash, sid] = (state, got)
                    if len(memo) > self.memo_size:
                        memo.popitem(last=False)  # first in, first out
                local[sid] = got
            # Admission is not applied here: it decides when the chosen job is placed, as in
            # the simulator's pass (a declined job then waits for the next event).
            if got[3]:
                # Eq. (2): E = I * t_iter; tuple.__new__ is NamedTuple's constructor, minus a call
                out.append(_new(Preview, (got[0], got[1] * p.iterations, got[2])))
            else:
                out.append(None)
        return out
