"""The baselines' placement rules (semantics §6) and the ablations' allocator.

Each public function takes the same arguments as :func:`pathfinder` (what a placement needs
to know) and returns ``(path, allocation)``; ``([], {})`` when no GPU is free. Every rule caps
a job at ``k_star`` GPUs, as the paper's evaluation does for all schedulers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..core.validate import require_int, require_vector
from ..errors import ValidationError
from .pathfinder import grow_widest_path, validated_inputs, validated_path

__all__ = [
    "cr_lcf",
    "cr_lcf_unchecked",
    "cr_ldf",
    "cr_ldf_path_unchecked",
    "even_allocate",
    "even_allocate_unchecked",
    "fill_in_path_order",
    "fill_in_path_order_unchecked",
    "lcf",
    "lcf_unchecked",
    "ldf",
    "ldf_unchecked",
]


def lcf(
    free: ArrayLike, price: ArrayLike, k_star: int, min_gpus: int | ArrayLike = 1
) -> tuple[list[int], dict[int, int]]:
    """Lowest-Cost-First: the cheapest region with at least ``min_gpus`` free GPUs (and
    ``min_gpus <= K*``; ties to the lower index) takes ``min(free, K*)`` GPUs. ``min_gpus`` is
    the job's memory floor, one number or one per region (semantics §3a); 1 is the paper's
    rule."""
    f, p, _, k, _ = validated_inputs(free, price, None, k_star)
    return lcf_unchecked(f, p, k, _floors(min_gpus, len(f)))


def ldf(
    free: ArrayLike, price: ArrayLike, k_star: int, min_gpus: int | ArrayLike = 1
) -> tuple[list[int], dict[int, int]]:
    """Lowest-Delay-First: among the regions with at least ``min_gpus`` free GPUs (and
    ``min_gpus <= K*``), the one with the most (ties to the cheaper, then the lower index)
    takes ``min(free, K*)`` GPUs."""
    f, p, _, k, _ = validated_inputs(free, price, None, k_star)
    return ldf_unchecked(f, p, k, _floors(min_gpus, len(f)))


def _floors(min_gpus: int | ArrayLike, k: int) -> list[int]:
    if isinstance(min_gpus, (int, np.integer)) and not isinstance(min_gpus, bool):
        n = require_int("min_gpus", min_gpus, minimum=1, exc=ValidationError)
        return [n] * k
    floors = require_vector("min_gpus", min_gpus, length=k, integer=True, exc=ValidationError)
    out: list[int] = floors.tolist()
    for i, n in enumerate(out):
        if n < 1:
            raise ValidationError(f"min_gpus[{i}]", n, "must be >= 1")
    return out


def cr_lcf(
    free: ArrayLike,
    price: ArrayLike,
    bandwidth: ArrayLike,
    k_star: int,
    activation_bytes: float,
    t_comp: Callable[[int], float],
    min_gpus: int | ArrayLike = 1,
) -> tuple[list[int], dict[int, int]]:
    """Cross-Region LCF: walk the regions with free GPUs by ascending price (ties to the lower
    index), appending each whose link from the current tail passes the bandwidth check for the
    new GPU count, ``A / min(b_min, B[tail, u]) <= t_comp(g')``, and skipping those that fail,
    until K* GPUs are reached; GPUs are taken in path order.

    If the walk ends below the memory floor ``min_gpus`` (of any region on its path), it starts
    again from the next-cheapest region, and so on; ``([], {})`` if no walk reaches it."""
    f, p, bw, k, a = validated_inputs(free, price, bandwidth, k_star, activation_bytes, t_comp)
    return cr_lcf_unchecked(f, p, bw, k, a, t_comp, _floors(min_gpus, len(f)))


def cr_ldf(
    free: ArrayLike,
    price: ArrayLike,
    bandwidth: ArrayLike,
    k_star: int,
    activation_bytes: float,
    t_comp: Callable[[int], float],
) -> tuple[list[int], dict[int, int]]:
    """Cross-Region LDF: start at the region with the most free GPUs (ties to the cheaper, then
    the lower index) and append the unvisited region with the widest residual link from the
    tail while the bandwidth check passes (Alg. 1's expansion from one start); GPUs are taken
    in path order."""
    f, p, bw, k, a = validated_inputs(free, price, bandwidth, k_star, activation_bytes, t_comp)
    path, g = cr_ldf_path_unchecked(f, p, bw, k, a, t_comp)
    return path, fill_in_path_order_unchecked(path, g, f, p)


def fill_in_path_order(path: Sequence[int], g: int, free: ArrayLike) -> dict[int, int]:
    """Take ``g`` GPUs from the path's regions in path order, each up to its free GPUs.

    Raises ValidationError if ``g`` runs out before the path's last region (a pipeline region
    needs at least one GPU); the baselines' rules never build such a path.
    """
    f, _, _, _, _ = validated_inputs(free, [0.0] * len(_as_list(free)), None, 1)
    p, g = _checked(path, g, f)
    alloc = fill_in_path_order_unchecked(p, g, f, [])
    empty = [r for r in p if alloc[r] == 0]
    if empty:
        raise ValidationError("g", g, f"runs out before path region {empty[0]} gets a GPU")
    return alloc


def even_allocate(path: Sequence[int], g: int, free: ArrayLike) -> dict[int, int]:
    """The w/o Cost-Min ablation's allocator: ``g`` GPUs spread over the path as evenly as the
    free GPUs allow (water-filling; leftover GPUs go to the earliest path regions with room)."""
    f, _, _, _, _ = validated_inputs(free, [0.0] * len(_as_list(free)), None, 1)
    p, g = _checked(path, g, f)
    return even_allocate_unchecked(p, g, f, [])


def _as_list(free: ArrayLike) -> list[object]:
    try:
        return list(free)  # type: ignore[arg-type]
    except TypeError:
        raise ValidationError("free", free, "must be a sequence of numbers") from None


def _checked(path: Sequence[int], g: int, free: list[int]) -> tuple[list[int], int]:
    p = validated_path(path, len(free))
    g = require_int("g", g, minimum=len(p), exc=ValidationError)
    room = sum(free[r] for r in p)
    if g > room or any(free[r] < 1 for r in p):
        raise ValidationError("g", g, f"the path has {room} free GPUs, at least one per region")
    return p, g


# --- fast paths: plain Python lists in, no validation (the callers validated already); the
# simulator's policies call these on every decision


def lcf_unchecked(
    free: Sequence[int], price: Sequence[float], k_star: int, floor: Sequence[int] | None = None
) -> tuple[list[int], dict[int, int]]:
    """:func:`lcf` on plain lists, unvalidated; ``floor`` is the per-region memory floor."""
    best = -1
    for r, n in enumerate(free):
        if (
            n > 0
            and (floor is None or k_star >= floor[r] <= n)  # the region can host the floor
            and (best < 0 or price[r] < price[best])
        ):
            best = r
    return ([best], {best: min(free[best], k_star)}) if best >= 0 else ([], {})


def _ldf_start(
    free: Sequence[int],
    price: Sequence[float],
    floor: Sequence[int] | None = None,
    k_star: int = 0,
) -> int:
    best = -1
    for r, n in enumerate(free):
        if (
            n > 0
            and (floor is None or k_star >= floor[r] <= n)  # the region can host the floor
            and (best < 0 or (n, -price[r]) > (free[best], -price[best]))
        ):
            best = r
    return best


def ldf_unchecked(
    free: Sequence[int], price: Sequence[float], k_star: int, floor: Sequence[int] | None = None
) -> tuple[list[int], dict[int, int]]:
    """:func:`ldf` on plain lists, unvalidated; ``floor`` is the per-region memory floor."""
    best = _ldf_start(free, price, floor, k_star)
    return ([best], {best: min(free[best], k_star)}) if best >= 0 else ([], {})


def cr_lcf_unchecked(
    free: Sequence[int],
    price: Sequence[float],
    bw: Sequence[Sequence[float]],
    k_star: int,
    a: float,
    t_comp: Callable[[int], float],
    floor: Sequence[int] | None = None,
) -> tuple[list[int], dict[int, int]]:
    """:func:`cr_lcf` on plain lists, unvalidated; ``floor`` is the per-region memory floor."""
    order = sorted((r for r in range(len(free)) if free[r] > 0), key=lambda r: (price[r], r))
    for first in range(len(order)):  # restart only when a walk ends below the memory floor
        path = [order[first]]
        g, b_min = min(free[order[first]], k_star), math.inf
        for u in order[first + 1 :]:
            if g >= k_star:
                break
            g_new = min(g + free[u], k_star)
            b_tmp = min(b_min, bw[path[-1]][u])
            if b_tmp > 0.0 and a / b_tmp <= t_comp(g_new):  # constraint (6) on the whole path
                path.append(u)
                g, b_min = g_new, b_tmp
        if floor is None or all(g >= floor[r] for r in path):
            return path, fill_in_path_order_unchecked(path, g, free, price)
    return [], {}


def cr_ldf_path_unchecked(
    free: Sequence[int],
    price: Sequence[float],
    bw: Sequence[Sequence[float]],
    k_star: int,
    a: float,
    t_comp: Callable[[int], float],
) -> tuple[list[int], int]:
    """CR-LDF's path and GPU count (:func:`cr_ldf` before allocation), unvalidated."""
    start = _ldf_start(free, price)
    if start < 0:
        return [], 0
    return grow_widest_path(start, free, bw, k_star, a, t_comp, False)


def fill_in_path_order_unchecked(
    path: Sequence[int], g: int, free: Sequence[int], price: Sequence[float]
) -> dict[int, int]:
    """:func:`fill_in_path_order` on plain lists, unvalidated (``price`` is unused)."""
    alloc: dict[int, int] = {}
    remaining = g
    for r in path:
        alloc[r] = min(free[r], remaining)
        remaining -= alloc[r]
    return alloc


def even_allocate_unchecked(
    path: Sequence[int], g: int, free: Sequence[int], price: Sequence[float]
) -> dict[int, int]:
    """:func:`even_allocate` on plain lists, unvalidated (``price`` is unused)."""
    alloc = dict.fromkeys(path, 0)
    remaining = g
    open_ = [r for r in path if free[r] > 0]
    while remaining and open_:
        share = max(1, remaining // len(open_))
        for r in list(open_):
            add = min(share, free[r] - alloc[r], remaining)
            alloc[r] += add
            remaining -= add
            if alloc[r] == free[r]:
                open_.remove(r)
            if not remaining:
                break
    return alloc
