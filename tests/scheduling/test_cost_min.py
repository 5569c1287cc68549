"""Alg. 2 (Cost-Min Allocator), hand-worked.

One GPU per path region (lines 1-3), then the surplus ``g - |P|`` to the path regions in
ascending price, ties in path order (semantics §5), each up to its free GPUs (line 8).
"""

from __future__ import annotations

import numpy as np
import pytest

from bacepipe_env.errors import ValidationError
from bacepipe_env.scheduling import cost_min_allocate


def test_g_equal_to_path_length_gives_one_gpu_each():
    # No surplus: every path region gets exactly its connectivity GPU.
    got = cost_min_allocate([2, 0, 1], 3, free=[4, 4, 4], price=[0.1, 0.2, 0.3])
    assert got == {2: 1, 0: 1, 1: 1}


def test_surplus_fills_cheapest_then_next():
    # free [3, 4, 2], price [0.3, 0.1, 0.2], path [0, 1, 2], g = 7.
    # Step 1: {0: 1, 1: 1, 2: 1}, surplus 4.
    # Region 1 (0.1): add min(4 - 1, 4) = 3 -> surplus 1.
    # Region 2 (0.2): add min(2 - 1, 1) = 1 -> surplus 0. Region 0 stays at 1.
    got = cost_min_allocate([0, 1, 2], 7, free=[3, 4, 2], price=[0.3, 0.1, 0.2])
    assert got == {0: 1, 1: 4, 2: 2}


def test_surplus_spills_over_several_regions():
    # free [5, 2, 3, 4], price [0.4, 0.1, 0.2, 0.3], path [3, 0, 1, 2], g = 9.
    # Step 1: one each, surplus 5. Region 1: +1 (full at 2), surplus 4.
    # Region 2: +2 (full at 3), surplus 2. Region 3: +2 (of 3 possible), surplus 0.
    got = cost_min_allocate([3, 0, 1, 2], 9, free=[5, 2, 3, 4], price=[0.4, 0.1, 0.2, 0.3])
    assert got == {3: 3, 0: 1, 1: 2, 2: 3}


def test_g_equal_to_all_free_gpus_on_path_takes_everything():
    got = cost_min_allocate([0, 1, 2], 9, free=[3, 4, 2], price=[0.3, 0.1, 0.2])
    assert got == {0: 3, 1: 4, 2: 2}


def test_price_ties_keep_path_order():
    # All prices equal: the sort is stable, so the surplus of 2 goes to path[0] = region 2
    # first (it can take 2 more), and regions 0 and 1 keep one GPU each.
    got = cost_min_allocate([2, 0, 1], 5, free=[3, 3, 3], price=[0.2, 0.2, 0.2])
    assert got == {2: 3, 0: 1, 1: 1}


def test_partial_price_tie_prefers_earlier_path_position_not_lower_index():
    # Regions 2 and 1 tie at 0.1 and precede region 0 (0.3). Path order [0, 2, 1] puts 2 before
    # 1, so with surplus 2 region 2 takes min(3 - 1, 2) = 2 and region 1 gets nothing extra.
    got = cost_min_allocate([0, 2, 1], 5, free=[3, 3, 3], price=[0.3, 0.1, 0.1])
    assert got == {0: 1, 2: 3, 1: 1}
    # Reversing the path order of the tied regions hands the surplus to region 1 instead.
    got = cost_min_allocate([0, 1, 2], 5, free=[3, 3, 3], price=[0.3, 0.1, 0.1])
    assert got == {0: 1, 1: 3, 2: 1}


def test_off_path_regions_never_receive_gpus():
    # Region 2 is by far the cheapest but not on the path.
    got = cost_min_allocate([0, 1], 4, free=[5, 5, 5], price=[0.5, 0.4, 0.01])
    assert got == {0: 1, 1: 3}


def test_single_region_path():
    got = cost_min_allocate([1], 3, free=[0, 4], price=[0.1, 0.9])
    assert got == {1: 3}


def test_numpy_inputs():
    got = cost_min_allocate(
        np.array([1, 0]), np.int64(3), free=np.array([2, 2]), price=np.array([0.2, 0.3])
    )
    # one each, surplus 1 to region 0 (0.2 < 0.3)
    assert got == {1: 1, 0: 2}
    assert all(isinstance(k, int) and isinstance(v, int) for k, v in got.items())


@pytest.mark.parametrize(
    ("path", "g", "free", "field"),
    [
        ([0, 1, 2], 2, [3, 3, 3], "g"),  # g below the path length
        ([0, 1], 4, [1, 2, 10], "g"),  # only 1 + 2 = 3 free GPUs on the path
        ([0, 1], 2, [2, 0, 3], "free[1]"),  # a path region with no free GPU
        ([0, 1, 0], 3, [3, 3, 3], "path"),  # repeated region
        ([0, 3], 2, [3, 3, 3], "path[1]"),  # index out of range for K = 3
        ([-1, 0], 2, [3, 3, 3], "path[0]"),  # negative index
        ([], 1, [3, 3, 3], "path"),  # empty path
    ],
)
def test_validation_errors(path: list[int], g: int, free: list[int], field: str):
    with pytest.raises(ValidationError) as info:
        cost_min_allocate(path, g, free, [0.1, 0.2, 0.3])
    assert isinstance(info.value, ValueError)
    assert info.value.field == field


def test_price_of_wrong_length_is_rejected():
    with pytest.raises(ValidationError) as info:
        cost_min_allocate([0], 1, [1, 1], [0.1])
    assert info.value.field == "price"


def test_negative_free_is_rejected():
    with pytest.raises(ValidationError) as info:
        cost_min_allocate([0], 1, [1, -1], [0.1, 0.2])
    assert info.value.field == "free[1]"
