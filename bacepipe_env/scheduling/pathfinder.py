"""Bandwidth-aware Pathfinder (Alg. 1) and the Cost-Min Allocator (Alg. 2), as printed.

Regions are indices ``0..K-1``; ``free`` and ``price`` are length-K sequences (free GPUs now,
$/kWh); ``bandwidth`` is the (K, K) matrix of residual bytes/s; allocations map a region index
to a GPU count. semantics §5 fixes the tie-breaks the paper leaves open.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..core.validate import require_float, require_int, require_square_matrix, require_vector
from ..errors import ValidationError

__all__ = [
    "COST_TIE_RTOL",
    "cost_min_allocate",
    "cost_min_allocate_unchecked",
    "grow_widest_path",
    "pathfinder",
    "pathfinder_unchecked",
    "validated_inputs",
    "validated_path",
]

#: Two average prices closer than this relative gap are a tie in Alg. 1 line 20, so that
#: rounding in a float sum never decides between paths that cost the same in real arithmetic.
COST_TIE_RTOL = 1e-12


def cost_min_allocate(
    path: Sequence[int], g: int, free: ArrayLike, price: ArrayLike
) -> dict[int, int]:
    """Alg. 2: put ``g`` GPUs on ``path`` at the lowest electricity price.

    One GPU per path region first (pipeline continuity), then the surplus region by region in
    ascending price (ties keep path order), each region up to its free GPUs.
    Raises ValidationError if ``g`` is smaller than the path or larger than its free GPUs.
    """
    free_a = require_vector("free", free, integer=True, exc=ValidationError)
    k = free_a.shape[0]
    price_a = require_vector("price", price, length=k, exc=ValidationError)
    p = validated_path(path, k)
    g = require_int("g", g, minimum=len(p), exc=ValidationError)
    free_l = free_a.tolist()
    for r in p:
        if free_l[r] < 1:
            raise ValidationError(f"free[{r}]", free_l[r], "a path region needs a free GPU")
    if g > sum(free_l[r] for r in p):
        raise ValidationError(
            "g", g, f"exceeds the {sum(free_l[r] for r in p)} free GPUs on the path"
        )
    return cost_min_allocate_unchecked(p, g, free_l, price_a.tolist())


def pathfinder(
    free: ArrayLike,
    price: ArrayLike,
    bandwidth: ArrayLike,
    k_star: int,
    activation_bytes: float,
    t_comp: Callable[[int], float],
    partial_take: bool = False,
) -> tuple[list[int], dict[int, int]]:
    """Alg. 1: the pipeline path and GPU allocation for one job.

    Phase 1: the cheapest region with at least ``k_star`` free GPUs takes all of them.
    Phase 2: from every region with a free GPU, grow a path greedily along the widest residual
    link from the tail while ``activation_bytes / bottleneck <= t_comp(g')`` (constraint 6),
    allocate it with Alg. 2, keep the path with the most GPUs, ties to the lower average price.
    ``partial_take`` (not in the paper) lets an expansion take fewer of a region's free GPUs when
    taking all of them would fail the bandwidth check. Returns ``([], {})`` if no GPU is free.
    """
    f, p, bw, k, a = validated_inputs(free, price, bandwidth, k_star, activation_bytes, t_comp)
    if not isinstance(partial_take, (bool, np.bool_)):
        raise ValidationError("partial_take", partial_take, "must be True or False")
    return pathfinder_unchecked(f, p, bw, k, a, t_comp, bool(partial_take))


def validated_inputs(
    free: ArrayLike,
    price: ArrayLike,
    bandwidth: ArrayLike | None,
    k_star: int,
    activation_bytes: float = 0.0,
    t_comp: Callable[[int], float] | None = None,
) -> tuple[list[int], list[float], list[list[float]], int, float]:
    """Check a placement function's arguments; return them as plain Python values.

    ``bandwidth=None`` (single-region placements) gives an empty matrix.
    """
    free_a = require_vector("free", free, integer=True, exc=ValidationError)
    k = free_a.shape[0]
    if k == 0:
        raise ValidationError("free", [], "needs one entry per region (at least one region)")
    price_a = require_vector("price", price, length=k, exc=ValidationError)
    bw: list[list[float]] = []
    if bandwidth is not None:
        bw = require_square_matrix("bandwidth", bandwidth, k, exc=ValidationError).tolist()
    k_star = require_int("k_star", k_star, minimum=1, exc=ValidationError)
    a = require_float("activation_bytes", activation_bytes, minimum=0.0, exc=ValidationError)
    if bandwidth is not None and not callable(t_comp):
        raise ValidationError("t_comp", t_comp, "must be a callable of the GPU count")
    return free_a.tolist(), price_a.tolist(), bw, k_star, a


def validated_path(path: Sequence[int], k: int) -> list[int]:
    """A path of distinct region indices below ``k`` as a list; ValidationError otherwise."""
    if isinstance(path, (str, bytes)) or not isinstance(path, (Sequence, np.ndarray)):
        raise ValidationError("path", path, "must be a sequence of region indices")
    p = [require_int(f"path[{i}]", r, minimum=0, exc=ValidationError) for i, r in enumerate(path)]
    if not p:
        raise ValidationError("path", list(path), "must not be empty")
    for i, r in enumerate(p):
        if r >= k:
            raise ValidationError(f"path[{i}]", r, f"must be a region index below {k}")
    if len(set(p)) != len(p):
        raise ValidationError("path", p, "must not visit a region twice")
    return p


# --- fast paths: plain Python lists in, no validation (the callers validated already); the
# simulator's policies call these on every decision


def cost_min_allocate_unchecked(
    path: Sequence[int], g: int, free: Sequence[int], price: Sequence[float]
) -> dict[int, int]:
    """:func:`cost_min_allocate` (Alg. 2) on plain lists, unvalidated."""
    alloc = dict.fromkeys(path, 1)  # Alg. 2 lines 1-2: one GPU per stage region
    remaining = g - len(path)  # line 3
    for r in sorted(path, key=price.__getitem__):  # line 4 (stable: ties keep path order)
        if remaining == 0:  # lines 6-7
            break
        add = min(free[r] - 1, remaining)  # line 8
        alloc[r] += add  # line 9
        remaining -= add  # line 10
    return alloc


Allocator = Callable[[Sequence[int], int, Sequence[int], Sequence[float]], dict[int, int]]


def grow_widest_path(
    start: int,
    free: Sequence[int],
    bw: Sequence[Sequence[float]],
    k_star: int,
    a: float,
    t_comp: Callable[[int], float],
    partial_take: bool,
    with_gpus: Sequence[int] | None = None,
) -> tuple[list[int], int]:
    """Alg. 1 lines 7-17 from one start: the path and its GPU count g.

    ``with_gpus`` lists the regions with a free GPU in index order (computed if omitted)."""
    if with_gpus is None:
        with_gpus = [r for r in range(len(free)) if free[r] > 0]
    k = len(free)
    path = [start]
    on_path = {start}
    tail, g, b_min = start, min(free[start], k_star), math.inf  # lines 7-8
    while len(path) < k and g < k_star:  # line 9
        row = bw[tail]
        nxt, b_next = -1, -math.inf
        for u in with_gpus:  # line 10: widest residual link to an unvisited region with GPUs
            if row[u] > b_next and u not in on_path:
                nxt, b_next = u, row[u]
        if nxt < 0:
            break
        b_tmp = b_next if b_next < b_min else b_min  # line 11
        hi = min(g + free[nxt], k_star)  # line 12
        lo = g + 1 if partial_take else hi
        g_new = 0
        if b_tmp > 0.0:
            need = a / b_tmp
            for cand in range(hi, lo - 1, -1):
                if need <= t_comp(cand):  # line 13: constraint (6)
                    g_new = cand
                    break
        if not g_new:
            break  # line 17
        path.append(nxt)  # lines 14-15
        on_path.add(nxt)
        tail, b_min, g = nxt, b_tmp, g_new
    return path, g


def pathfinder_unchecked(
    free: Sequence[int],
    price: Sequence[float],
    bw: Sequence[Sequence[float]],
    k_star: int,
    a: float,
    t_comp: Callable[[int], float],
    partial_take: bool,
    allocate: Allocator = cost_min_allocate_unchecked,
) -> tuple[list[int], dict[int, int]]:
    """:func:`pathfinder` (Alg. 1) on plain lists, unvalidated; ``allocate`` is Alg. 2 unless an
    ablation swaps it out."""
    k = len(free)
    # Phase 1, lines 1-4: the cheapest region that fits K* alone (ties to the lower index).
    best = -1
    for r in range(k):
        if free[r] >= k_star and (best < 0 or price[r] < price[best]):
            best = r
    if best >= 0:
        return [best], {best: k_star}

    # Phase 2, lines 5-22.
    g_max, c_min = 0, math.inf
    best_path: list[int] = []
    best_alloc: dict[int, int] = {}
    with_gpus = [r for r in range(k) if free[r] > 0]
    for start in with_gpus:  # line 6 (a start needs a free GPU)
        path, g = grow_widest_path(start, free, bw, k_star, a, t_comp, partial_take, with_gpus)
        if g < g_max:
            continue  # line 20 cannot pick it: skip allocating and pricing it
        alloc = allocate(path, g, free, price)  # line 18
        # line 19, summed left to right in region-index order (canonical): a plain loop, not
        # sum(), whose float sum is compensated from Python 3.12 on
        total = 0.0
        for r in sorted(path):
            total += alloc[r] * price[r]
        c_avg = total / g
        if g > g_max or (  # line 20
            g == g_max
            and c_avg < c_min
            and not math.isclose(c_avg, c_min, rel_tol=COST_TIE_RTOL, abs_tol=0.0)
        ):
            best_path, best_alloc, g_max, c_min = path, alloc, g, c_avg  # lines 21-22
    return best_path, best_alloc
