"""Every memo of a simulator, in one place (:class:`Caches`)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from .helped import HelpedMemo
from .limits import MEMO_CELLS
from .placement import Placement
from .preemption import PreemptionView
from .views import HashedRows, Release

__all__ = ["MEMO_SIZE", "Caches"]

#: The most entries each shared memo keeps (placements by state, iteration times).
MEMO_SIZE = 65536
#: From this many regions on, the residual bandwidth view caches its hash (:class:`HashedRows`);
#: below, hashing a plain tuple of K^2 floats in C is as fast.
_HASHED_FROM = 16


class Caches:
    """Every memo of one simulator, in one place.

    The pure ones give answers that depend only on their keys (placements by state and job
    shape, the shape keys, Eq. (1) on the nominal links, the ``full`` rule's GPU counts, the
    arrays and submit times built once per scenario): a simulator's clones share them
    (:meth:`fork`), since a planner's forks ask about the same states again and again. The two
    kept per state (the preemption view and the next release, each valid at one version of the
    state, and the beneficiaries' memo) are each simulator's own.
    """

    __slots__ = (
        "columns",
        "full_gpus",
        "helped",
        "iteration_floors",
        "iteration_times",
        "memo_on",
        "memo_size",
        "need",
        "placement_answers",
        "price_array",
        "release",
        "rows_type",
        "shape_keys",
        "submit_times",
        "view",
    )

    def __init__(self, n_regions: int) -> None:
        self.shape_keys: dict[int, tuple[object, ...]] = {}  # see Simulator.placement_shape
        # The two memos that evict, oldest first, once full: ordered dicts, whose oldest entry
        # goes in O(1). A plain dict's ``del memo[next(iter(memo))]`` scans past every entry
        # deleted since the dict was last resized, up to ~100,000 of them on a full memo:
        # 60 us a decision, what made a million-job run superlinear (issue 39).
        self.placement_answers: OrderedDict[tuple[object, ...], Placement | None] = OrderedDict()
        # (job, placement) -> Eq. (1) on the nominal links (see _placed and iteration_time)
        self.iteration_times: OrderedDict[tuple[int, Placement], float] = OrderedDict()
        self.full_gpus: dict[int, int] = {}  # see Simulator.full_gpus
        self.iteration_floors: dict[int, float] = {}  # see Simulator._least_remaining
        self.columns: tuple[np.ndarray, np.ndarray] | None = None  # see priority_columns
        self.price_array: np.ndarray | None = None  # see placement_arrays
        self.need: np.ndarray | None = None  # see _need_array
        self.submit_times: tuple[float, ...] | None = None  # see _submit_order
        # the residual view's rows: hashed once on a large cluster (see HashedRows)
        self.rows_type: type[tuple[Any, ...]] = HashedRows if n_regions >= _HASHED_FROM else tuple
        # the placement memo's states: each key holds K free GPUs and K residual rows, so a
        # large cluster keeps fewer (16,384 at 256 regions; core.limits.MEMO_CELLS values)
        self.memo_size = max(1024, min(MEMO_SIZE, MEMO_CELLS // n_regions))
        # and a large cluster's run seldom meets a state twice: its memo is kept only once
        # the simulator has been cloned (a planner's forks do meet them; see clone)
        self.memo_on = n_regions < _HASHED_FROM
        self.view: tuple[int, PreemptionView] | None = None  # the last view, at its version
        self.release: tuple[int, Release | None] | None = None  # next_release, likewise
        # the preemption views' beneficiaries, kept across versions (see core.helped)
        self.helped: HelpedMemo | None = None

    def fork(self) -> Caches:
        """A clone's caches: the pure memos shared, the per-state ones as they are now."""
        new = object.__new__(Caches)
        for name in Caches.__slots__:
            setattr(new, name, getattr(self, name))
        new.view = None  # a view computes through its simulator: the copy makes its own
        new.helped = None  # and its memo of them is its own
        return new
