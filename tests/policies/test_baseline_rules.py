"""The baselines' placement rules (semantics §6) as pure functions, worked out by hand.

Instances with links use ``t_comp(g) = 10 / g`` and ``A = 10`` bytes, so the bandwidth check
``A / min(b_min, B[tail, u]) <= t_comp(g')`` reads simply ``min(b_min, B[tail, u]) >= g'``.
Bandwidth matrices are read row = tail, column = next region (``B[tail, u]``).
"""

from __future__ import annotations

import numpy as np
import pytest

from bacepipe_env.errors import ValidationError
from bacepipe_env.scheduling.baselines import (
    cr_lcf,
    cr_ldf,
    even_allocate,
    fill_in_path_order,
    lcf,
    ldf,
)

A = 10.0


def t10(g: int) -> float:
    return 10.0 / g


def full(k: int, value: float) -> np.ndarray:
    bw = np.full((k, k), float(value))
    np.fill_diagonal(bw, 0.0)
    return bw


def _plain(result: tuple[list[int], dict[int, int]]) -> None:
    """semantics §9: plain values out (not numpy scalars), one allocation entry per region."""
    path, alloc = result
    assert isinstance(path, list) and isinstance(alloc, dict)
    assert all(type(r) is int for r in path)
    assert all(type(r) is int and type(n) is int for r, n in alloc.items())
    assert sorted(alloc) == sorted(path)


# --- LCF ---------------------------------------------------------------------------------------


def test_lcf_cheapest_region_with_a_free_gpu():
    # Region 1 is the cheapest (0.1) but full -> skipped. Regions 2 and 3 tie at 0.2 -> the
    # lower index, 2. It has 5 free, K* = 4 -> min(5, 4) = 4 GPUs.
    free = [3, 0, 5, 2]
    price = [0.3, 0.1, 0.2, 0.2]
    assert lcf(free, price, 4) == ([2], {2: 4})


def test_lcf_takes_all_free_when_below_k_star():
    # Same cluster, K* = 8: region 2 has only 5 free -> min(5, 8) = 5 (fewer than K*).
    assert lcf([3, 0, 5, 2], [0.3, 0.1, 0.2, 0.2], 8) == ([2], {2: 5})


def test_lcf_ignores_capacity_for_price():
    # Region 0 has 1 free GPU but is the cheapest: LCF goes there with 1 GPU, though region 1
    # could host all of K* = 6.
    assert lcf([1, 8], [0.1, 0.2], 6) == ([0], {0: 1})


def test_lcf_price_tie_goes_to_lower_index():
    assert lcf([2, 4, 4], [0.3, 0.1, 0.1], 3) == ([1], {1: 3})


def test_lcf_all_busy_is_empty():
    assert lcf([0, 0, 0], [0.1, 0.2, 0.3], 4) == ([], {})


def test_lcf_numpy_inputs_give_plain_values():
    res = lcf(np.array([3, 0, 5, 2]), np.array([0.3, 0.1, 0.2, 0.2]), np.int64(4))
    assert res == ([2], {2: 4})
    _plain(res)


# --- LDF ---------------------------------------------------------------------------------------


def test_ldf_most_free_gpus_ties_to_cheaper():
    # Regions 1 and 2 both have 6 free (the most); 2 is cheaper (0.2 < 0.3) -> region 2.
    # Region 3 is the cheapest overall but has only 2 free: irrelevant for LDF. K* = 5 -> 5.
    free = [4, 6, 6, 2]
    price = [0.1, 0.3, 0.2, 0.05]
    assert ldf(free, price, 5) == ([2], {2: 5})


def test_ldf_capped_at_k_star_or_free():
    free = [4, 6, 6, 2]
    price = [0.1, 0.3, 0.2, 0.05]
    assert ldf(free, price, 3) == ([2], {2: 3})
    assert ldf(free, price, 10) == ([2], {2: 6})


def test_ldf_ties_in_count_and_price_go_to_lower_index():
    assert ldf([2, 6, 6], [0.2, 0.3, 0.3], 8) == ([1], {1: 6})


def test_ldf_ignores_price_when_counts_differ():
    # 5 free at 0.9 beats 4 free at 0.1.
    assert ldf([5, 4], [0.9, 0.1], 8) == ([0], {0: 5})


def test_ldf_all_busy_is_empty():
    assert ldf([0, 0], [0.1, 0.2], 3) == ([], {})


def test_ldf_numpy_inputs_give_plain_values():
    res = ldf(np.array([4, 6, 6, 2]), np.array([0.1, 0.3, 0.2, 0.05]), 5)
    assert res == ([2], {2: 5})
    _plain(res)


# --- CR-LCF -------------------------------------------------------------------------------------


def test_cr_lcf_skips_a_failing_region_and_continues():
    # Price order 0, 1, 2. Start 0: g = 2.
    #   u = 1: g' = min(2 + 3, 10) = 5, B[0, 1] = 4 < 5 -> fails, skipped (Alg. 1 would stop).
    #   u = 2: g' = min(2 + 2, 10) = 4, B[0, 2] = 5 >= 4 -> appended, g = 4.
    # GPUs in path order: {0: 2, 2: 2}.
    free = [2, 3, 2]
    price = [0.1, 0.2, 0.3]
    bw = np.array([[0.0, 4.0, 5.0], [100.0, 0.0, 100.0], [100.0, 100.0, 0.0]])
    assert cr_lcf(free, price, bw, 10, A, t10) == ([0, 2], {0: 2, 2: 2})


def test_cr_lcf_check_uses_the_bottleneck_of_the_path_so_far():
    # Start 0: g = 2. u = 1: g' = 4, B[0, 1] = 4 >= 4 -> appended, b_min = 4.
    # u = 2: g' = 6, B[1, 2] = 100 but min(4, 100) = 4 < 6 -> fails (a check on the new link
    # alone would pass). Path [0, 1], {0: 2, 1: 2}.
    free = [2, 2, 2]
    price = [0.1, 0.2, 0.3]
    bw = full(3, 100.0)
    bw[0, 1] = 4.0
    assert cr_lcf(free, price, bw, 10, A, t10) == ([0, 1], {0: 2, 1: 2})


def test_cr_lcf_tail_stays_after_a_skip():
    # Price order 0, 1, 2, 3. Start 0: g = 1.
    #   u = 1: g' = 3, B[0, 1] = 2 < 3 -> skipped; the tail is still 0.
    #   u = 2: g' = 2, B[0, 2] = 50 >= 2 -> appended, tail 2, b_min = 50, g = 2.
    #   u = 3: g' = 4, B[2, 3] = 4 >= 4 -> appended (B[0, 3] = 1 and B[1, 3] = 1 would fail).
    free = [1, 2, 1, 2]
    price = [0.1, 0.2, 0.3, 0.4]
    bw = full(4, 1.0)
    bw[0, 1] = 2.0
    bw[0, 2] = 50.0
    bw[2, 3] = 4.0
    assert cr_lcf(free, price, bw, 10, A, t10) == ([0, 2, 3], {0: 1, 2: 1, 3: 2})


def test_cr_lcf_stops_at_k_star_and_fills_in_path_order():
    # Price order 0 (0.1), 3 (0.15), 1 (0.2), 2 (0.3); every link 100 passes any check.
    # Start 0: g = 3; 3: g' = 5; 1: g' = min(9, 6) = 6 = K* -> stop, region 2 is never used.
    # Path order fill: 0 takes 3, 3 takes 2, 1 takes the last 1.
    free = [3, 4, 5, 2]
    price = [0.1, 0.2, 0.3, 0.15]
    assert cr_lcf(free, price, full(4, 100.0), 6, A, t10) == ([0, 3, 1], {0: 3, 3: 2, 1: 1})


def test_cr_lcf_check_uses_the_capped_gpu_count():
    # Start 0: g = 2; u = 1: g' = min(2 + 5, 4) = 4 and B[0, 1] = 4 >= 4 -> passes (with the
    # uncapped 7 it would fail). Fill: 0 takes 2, 1 takes 2.
    bw = full(2, 4.0)
    assert cr_lcf([2, 5], [0.1, 0.2], bw, 4, A, t10) == ([0, 1], {0: 2, 1: 2})


def test_cr_lcf_first_region_alone_when_it_fits_k_star():
    # The cheapest region has 8 free >= K* = 4: it takes 4 and nothing is appended.
    assert cr_lcf([8, 5], [0.1, 0.2], full(2, 100.0), 4, A, t10) == ([0], {0: 4})


def test_cr_lcf_link_direction_is_tail_to_next():
    # B[0, 1] = 1 < g' = 2 fails even though B[1, 0] = 100.
    bw = np.array([[0.0, 1.0], [100.0, 0.0]])
    assert cr_lcf([1, 1], [0.1, 0.2], bw, 2, A, t10) == ([0], {0: 1})
    # Reversed prices: start 1, B[1, 0] = 100 >= 2 -> both.
    assert cr_lcf([1, 1], [0.2, 0.1], bw, 2, A, t10) == ([1, 0], {1: 1, 0: 1})


def test_cr_lcf_skips_full_regions_and_ties_to_lower_index():
    # Region 2 is the cheapest but full. Regions 0 and 1 tie at 0.2 -> 0 first, then 1.
    bw = full(3, 100.0)
    assert cr_lcf([1, 1, 0], [0.2, 0.2, 0.1], bw, 4, A, t10) == ([0, 1], {0: 1, 1: 1})


def test_cr_lcf_all_busy_is_empty():
    assert cr_lcf([0, 0, 0], [0.1, 0.2, 0.3], full(3, 100.0), 4, A, t10) == ([], {})


def test_cr_lcf_numpy_inputs_give_plain_values():
    res = cr_lcf(np.array([3, 4, 5, 2]), np.array([0.1, 0.2, 0.3, 0.15]), full(4, 100.0), 6, A, t10)
    assert res == ([0, 3, 1], {0: 3, 3: 2, 1: 1})
    _plain(res)


# --- CR-LDF -------------------------------------------------------------------------------------


def test_cr_ldf_widest_links_from_the_largest_region():
    # Start: most free = region 3 (6). g = 6.
    #   row 3: {0: 5, 1: 12, 2: 20} -> 2 (20): g' = 9, 20 >= 9 -> append, b_min = 20.
    #   row 2: {0: 30, 1: 11} -> 0 (30): g' = 10, min(20, 30) = 20 >= 10 -> append.
    #   row 0: {1: 8} -> 1: g' = 14, min(20, 8) = 8 < 14 -> stop.
    # Path order fill (g = 10): 3 takes 6, 2 takes 3, 0 takes 1.
    free = [1, 4, 3, 6]
    price = [0.1, 0.2, 0.3, 0.4]
    bw = full(4, 1.0)
    bw[3, :3] = [5.0, 12.0, 20.0]
    bw[2, 0], bw[2, 1] = 30.0, 11.0
    bw[0, 1] = 8.0
    assert cr_ldf(free, price, bw, 20, A, t10) == ([3, 2, 0], {3: 6, 2: 3, 0: 1})


def test_cr_ldf_stops_at_the_first_failed_check():
    # Start 0 (5 free). Widest from 0: region 1 (8): g' = 9, 8 < 9 -> stop. Region 2 over the
    # narrower link (7) would pass (g' = 6 <= 7), but CR-LDF does not try it.
    free = [5, 4, 1]
    price = [0.3, 0.2, 0.1]
    bw = full(3, 100.0)
    bw[0, 1], bw[0, 2] = 8.0, 7.0
    assert cr_ldf(free, price, bw, 10, A, t10) == ([0], {0: 5})
    # CR-LCF on the same input walks 2 (g 1), 1 (B[2, 1] = 100, g' 5), 0 (B[1, 0] = 100, g' 10).
    assert cr_lcf(free, price, bw, 10, A, t10) == ([2, 1, 0], {2: 1, 1: 4, 0: 5})


def test_cr_ldf_ties_skip_full_regions_and_lower_index():
    # Start 0 (3 free). Region 1 has the widest link (100) but no free GPU -> ignored.
    # Regions 2 and 3 tie at 5 -> 2: g' = 4, 5 >= 4 -> append, b_min = 5.
    # Row 2: region 3 (5): g' = 5, min(5, 5) = 5 >= 5 -> append. Fill {0: 3, 2: 1, 3: 1}.
    free = [3, 0, 1, 1]
    price = [0.1, 0.1, 0.1, 0.1]
    bw = full(4, 5.0)
    bw[0, 1] = 100.0
    assert cr_ldf(free, price, bw, 10, A, t10) == ([0, 2, 3], {0: 3, 2: 1, 3: 1})


def test_cr_ldf_start_ties_to_cheaper_then_lower_index():
    # All have 4 free (K* = 4, so no expansion): cheapest of the tie is 1 or 2 at 0.2 -> 1.
    assert cr_ldf([4, 4, 4], [0.3, 0.2, 0.2], full(3, 100.0), 4, A, t10) == ([1], {1: 4})


def test_cr_ldf_capped_at_k_star():
    # Start 1 (7 free) > K* = 5 -> 5 GPUs, nothing appended.
    assert cr_ldf([3, 7], [0.1, 0.2], full(2, 100.0), 5, A, t10) == ([1], {1: 5})
    # Start 0 (4); link 6 >= g' = min(4 + 3, 6) = 6 -> append; fill 0 takes 4, 1 takes 2.
    assert cr_ldf([4, 3], [0.1, 0.2], full(2, 6.0), 6, A, t10) == ([0, 1], {0: 4, 1: 2})


def test_cr_ldf_link_direction_is_tail_to_next():
    # Start 0 (2 free); B[0, 1] = 2 < g' = 3 fails although B[1, 0] = 100.
    bw = np.array([[0.0, 2.0], [100.0, 0.0]])
    assert cr_ldf([2, 1], [0.1, 0.2], bw, 4, A, t10) == ([0], {0: 2})


def test_cr_ldf_all_busy_is_empty():
    assert cr_ldf([0, 0], [0.1, 0.2], full(2, 100.0), 4, A, t10) == ([], {})


def test_cr_ldf_numpy_inputs_give_plain_values():
    res = cr_ldf(np.array([3, 0, 1, 1]), np.full(4, 0.1), full(4, 5.0), 10, A, t10)
    assert res == ([0, 2, 3], {0: 3, 2: 1, 3: 1})
    _plain(res)


# --- fill_in_path_order ------------------------------------------------------------------------


def test_fill_in_path_order_follows_the_path_not_the_index():
    # Path [2, 0, 1], g = 8: region 2 takes its 4, region 0 its 3, region 1 the last 1.
    assert fill_in_path_order([2, 0, 1], 8, [3, 5, 4]) == {2: 4, 0: 3, 1: 1}


def test_fill_in_path_order_everything_and_one_region():
    assert fill_in_path_order([0, 1], 7, [3, 4, 9]) == {0: 3, 1: 4}
    assert fill_in_path_order([2], 5, [3, 4, 9]) == {2: 5}


# --- even_allocate (water-filling) -------------------------------------------------------------


def test_even_allocate_water_fills_around_a_small_region():
    # Level t with min(2, t) + 2 min(10, t) = 10 -> t = 4: {0: 2, 1: 4, 2: 4}.
    assert even_allocate([0, 1, 2], 10, [2, 10, 10]) == {0: 2, 1: 4, 2: 4}


def test_even_allocate_leftover_to_earliest_path_regions():
    # 7 over three regions with 5 free: level 2 (6 GPUs), the 1 left over goes to the first.
    assert even_allocate([0, 1, 2], 7, [5, 5, 5]) == {0: 3, 1: 2, 2: 2}
    # ...the first in path order, not the lowest index.
    assert even_allocate([2, 0, 1], 7, [5, 5, 5]) == {2: 3, 0: 2, 1: 2}
    # 8: level 2 and two left over -> the first two path regions.
    assert even_allocate([1, 2, 0], 8, [5, 5, 5]) == {1: 3, 2: 3, 0: 2}


def test_even_allocate_small_region_in_the_middle():
    # 2 + 2t = 11 -> t = 4.5: level 4 on regions 0 and 2 (10 in all), 1 left over -> region 0.
    assert even_allocate([0, 1, 2], 11, [10, 2, 10]) == {0: 5, 1: 2, 2: 4}


def test_even_allocate_several_caps():
    # 1 + 3 + 2t = 12 -> t = 4 (>= 3, so both small regions are full): {1, 3, 4, 4}.
    assert even_allocate([0, 1, 2, 3], 12, [1, 3, 10, 10]) == {0: 1, 1: 3, 2: 4, 3: 4}


def test_even_allocate_extremes():
    # g = path length: one each. g = all free on the path: everything.
    assert even_allocate([3, 1], 2, [0, 6, 0, 4]) == {3: 1, 1: 1}
    assert even_allocate([3, 1], 10, [0, 6, 0, 4]) == {3: 4, 1: 6}
    assert even_allocate([1], 3, [0, 6]) == {1: 3}


@pytest.mark.parametrize(
    ("fn", "path", "expect"),
    [
        # water-filling as above: {0: 2, 1: 4, 2: 4}
        (even_allocate, [0, 1, 2], {0: 2, 1: 4, 2: 4}),
        # path order: 0 takes its 2, 1 takes the other 8
        (fill_in_path_order, [0, 1], {0: 2, 1: 8}),
    ],
    ids=["even", "fill"],
)
def test_allocators_numpy_inputs_give_plain_values(fn, path, expect):
    # semantics §9: numpy in, plain values out - also when g is a numpy integer.
    res = fn(np.array(path), np.int64(10), np.array([2, 10, 10]))
    assert res == expect
    assert all(type(r) is int and type(n) is int for r, n in res.items()), res


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [fill_in_path_order, even_allocate], ids=["fill", "even"])
@pytest.mark.parametrize(
    ("path", "g", "free"),
    [
        ([0, 1, 2], 2, [3, 3, 3]),  # g below the path length
        ([0, 1], 7, [3, 3, 3]),  # g above the path's 6 free GPUs
        ([0, 1], 0, [3, 3, 3]),  # g zero
        ([0, 0], 2, [3, 3, 3]),  # a region twice
        ([0, 3], 2, [3, 3, 3]),  # no region 3
        ([], 1, [3, 3, 3]),  # empty path
        ([0, 1], 2, [3, 0, 3]),  # a path region without a free GPU
        ([-1, 0], 2, [3, 3, 3]),  # negative index
    ],
    ids=["g<len", "g>free", "g0", "repeat", "range", "empty", "no-free", "negative"],
)
def test_allocator_validation(fn, path, g, free):
    with pytest.raises(ValidationError):
        fn(path, g, free)


@pytest.mark.parametrize(
    "call",
    [
        lambda: lcf([1, 2], [0.1], 2),  # price length
        lambda: lcf([1, 2], [0.1, 0.2], 0),  # K* below 1
        lambda: ldf([-1, 2], [0.1, 0.2], 2),  # negative free
        lambda: ldf([], [], 2),  # no region
        lambda: cr_lcf([1, 2], [0.1, 0.2], np.zeros((3, 3)), 2, A, t10),  # matrix shape
        lambda: cr_ldf([1, 2], [0.1, 0.2], np.zeros((2, 2)), 2, -1.0, t10),  # negative A
        lambda: cr_ldf([1, 2], [0.1, 0.2], np.zeros((2, 2)), 2, A, None),  # t_comp missing
    ],
    ids=["price-len", "kstar0", "neg-free", "empty", "bw-shape", "neg-A", "no-tcomp"],
)
def test_rule_validation(call):
    with pytest.raises(ValidationError):
        call()
