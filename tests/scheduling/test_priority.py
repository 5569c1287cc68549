"""Eqs. (9)-(12): computation intensity, bandwidth sensitivity, network utilisation, priority.

``I_j = E_j(1) / max E(1)``, ``D_j = b_j / max b`` over the given (pending) queue,
``score = (1 - alpha)(1 - I_j) + alpha (1 - D_j)``; ``alpha`` = reserved off-diagonal bandwidth
over total off-diagonal capacity. All expected values below are exact binary fractions.
"""

from __future__ import annotations

import numpy as np
import pytest

from bacepipe_env.errors import ValidationError
from bacepipe_env.scheduling import network_utilization, priority_scores

E1 = [2.0, 4.0, 8.0, 1.0]  # I = [0.25, 0.5, 1, 0.125]
B = [5.0, 10.0, 20.0, 40.0]  # D = [0.125, 0.25, 0.5, 1]


def test_alpha_zero_is_sjf_on_single_gpu_time():
    # 1 - I = [0.75, 0.5, 0, 0.875]; b is irrelevant.
    got = priority_scores(E1, B, 0.0)
    assert isinstance(got, np.ndarray)
    assert got.shape == (4,)
    np.testing.assert_allclose(got, [0.75, 0.5, 0.0, 0.875], rtol=0, atol=1e-15)
    # Highest score first: shortest E(1) first.
    assert list(np.argsort(-got, kind="stable")) == [3, 0, 1, 2]


def test_alpha_one_is_bandwidth_sensitivity_only():
    # 1 - D = [0.875, 0.75, 0.5, 0]; E(1) is irrelevant.
    got = priority_scores(E1, B, 1.0)
    np.testing.assert_allclose(got, [0.875, 0.75, 0.5, 0.0], rtol=0, atol=1e-15)


def test_intermediate_alpha_by_hand():
    # alpha = 0.25: 0.75 (1 - I) + 0.25 (1 - D)
    #   j0: 0.75 * 0.75  + 0.25 * 0.875 = 0.5625 + 0.21875 = 0.78125
    #   j1: 0.75 * 0.5   + 0.25 * 0.75  = 0.375  + 0.1875  = 0.5625
    #   j2: 0.75 * 0     + 0.25 * 0.5   = 0.125
    #   j3: 0.75 * 0.875 + 0.25 * 0     = 0.65625
    got = priority_scores(E1, B, 0.25)
    np.testing.assert_allclose(got, [0.78125, 0.5625, 0.125, 0.65625], rtol=0, atol=1e-15)


def test_intermediate_alpha_reorders_jobs():
    # Two jobs: job 0 short but bandwidth-hungry, job 1 long but light.
    # E1 = [1, 4] -> I = [0.25, 1]; b = [8, 2] -> D = [1, 0.25].
    # alpha = 0.5: job 0: 0.5 * 0.75 + 0.5 * 0 = 0.375; job 1: 0.5 * 0 + 0.5 * 0.75 = 0.375 (tie)
    # alpha = 0.75: job 0: 0.25 * 0.75 = 0.1875; job 1: 0.75 * 0.75 = 0.5625 -> job 1 first
    # alpha = 0.25: job 0: 0.75 * 0.75 = 0.5625; job 1: 0.25 * 0.75 = 0.1875 -> job 0 first
    np.testing.assert_allclose(priority_scores([1, 4], [8, 2], 0.5), [0.375, 0.375], atol=1e-15)
    np.testing.assert_allclose(priority_scores([1, 4], [8, 2], 0.75), [0.1875, 0.5625], atol=1e-15)
    np.testing.assert_allclose(priority_scores([1, 4], [8, 2], 0.25), [0.5625, 0.1875], atol=1e-15)


def test_normalised_by_maxima_of_the_given_queue():
    # Same jobs 0 and 1 as above, but without jobs 2 and 3 the maxima are E = 4, b = 10:
    # I = [0.5, 1], D = [0.5, 1]; alpha 0 -> [0.5, 0]; alpha 1 -> [0.5, 0].
    np.testing.assert_allclose(priority_scores(E1[:2], B[:2], 0.0), [0.5, 0.0], atol=1e-15)
    np.testing.assert_allclose(priority_scores(E1[:2], B[:2], 1.0), [0.5, 0.0], atol=1e-15)
    # Only ratios matter: scaling one metric by any positive factor changes nothing.
    scaled = priority_scores([e * 3600.0 for e in E1], [b * 1e9 for b in B], 0.25)
    np.testing.assert_allclose(scaled, [0.78125, 0.5625, 0.125, 0.65625], rtol=0, atol=1e-15)


def test_single_job_scores_zero_on_both_metrics():
    # A lone job is its own maximum: I = D = 1 -> score 0 for any alpha.
    np.testing.assert_allclose(priority_scores([7.0], [3.0], 0.4), [0.0], atol=1e-15)


def test_zero_maximum_normalises_to_zero():
    # All b = 0: D = 0 -> the bandwidth term contributes alpha * 1.
    # alpha = 0.5, E1 = [2, 4]: I = [0.5, 1] -> [0.5 * 0.5 + 0.5, 0 + 0.5] = [0.75, 0.5]
    np.testing.assert_allclose(priority_scores([2.0, 4.0], [0.0, 0.0], 0.5), [0.75, 0.5])
    # All E(1) = 0: I = 0 -> (1 - alpha) * 1; b = [1, 4] -> D = [0.25, 1]
    # alpha = 0.5: [0.5 + 0.5 * 0.75, 0.5 + 0] = [0.875, 0.5]
    np.testing.assert_allclose(priority_scores([0.0, 0.0], [1.0, 4.0], 0.5), [0.875, 0.5])
    # Both zero: score 1 for everyone, no NaN.
    got = priority_scores([0.0, 0.0], [0.0, 0.0], 0.3)
    np.testing.assert_allclose(got, [1.0, 1.0])


def test_empty_queue():
    got = priority_scores([], [], 0.5)
    assert isinstance(got, np.ndarray)
    assert got.shape == (0,)


@pytest.mark.parametrize(
    ("e1", "b", "alpha", "field"),
    [
        ([1.0, 2.0], [1.0, 2.0], -0.01, "alpha"),
        ([1.0, 2.0], [1.0, 2.0], 1.01, "alpha"),
        ([1.0, 2.0], [1.0, 2.0], float("nan"), "alpha"),
        ([1.0, 2.0], [1.0], 0.5, "min_bandwidth"),
        ([1.0, 2.0], [1.0, 2.0, 3.0], 0.5, "min_bandwidth"),
        ([1.0, -2.0], [1.0, 2.0], 0.5, "single_gpu_exec[1]"),
        ([1.0, 2.0], [-1.0, 2.0], 0.5, "min_bandwidth[0]"),
        ([1.0, float("inf")], [1.0, 2.0], 0.5, "single_gpu_exec[1]"),
        ([1.0, 2.0], [1.0, float("nan")], 0.5, "min_bandwidth[1]"),
    ],
)
def test_priority_validation_errors(e1, b, alpha, field):
    with pytest.raises(ValidationError) as info:
        priority_scores(e1, b, alpha)
    assert isinstance(info.value, ValueError)
    assert info.value.field == field


# --- Eq. (11) -------------------------------------------------------------------------------


def test_network_utilization_hand_made_matrix():
    # Off-diagonal capacity: 10 + 20 + 30 + 40 + 50 + 60 = 210.
    # Off-diagonal reserved: 1 + 2 + 3 + 4 + 5 + 6 = 21. The 999 diagonals are ignored.
    # alpha = 21 / 210 = 0.1
    capacity = np.array([[100.0, 10.0, 20.0], [30.0, 100.0, 40.0], [50.0, 60.0, 100.0]])
    reserved = np.array([[999.0, 1.0, 2.0], [3.0, 999.0, 4.0], [5.0, 6.0, 999.0]])
    assert network_utilization(reserved, capacity) == pytest.approx(0.1, rel=1e-15)


def test_network_utilization_directed_links_count_separately():
    # One job reserving 25 on 0 -> 1 only, capacity 50 each way: 25 / 100 = 0.25.
    capacity = [[0.0, 50.0], [50.0, 0.0]]
    assert network_utilization([[0.0, 25.0], [0.0, 0.0]], capacity) == pytest.approx(0.25)
    # Fully reserved in both directions: 1.
    assert network_utilization([[0.0, 50.0], [50.0, 0.0]], capacity) == pytest.approx(1.0)
    # Nothing reserved: 0.
    assert network_utilization(np.zeros((2, 2)), capacity) == 0.0


def test_network_utilization_zero_capacity_is_zero():
    assert network_utilization(np.zeros((3, 3)), np.zeros((3, 3))) == 0.0
    # Only a diagonal: still no inter-region capacity.
    assert network_utilization(np.zeros((2, 2)), np.eye(2) * 100.0) == 0.0
    # A single region has no inter-region link at all.
    assert network_utilization([[5.0]], [[7.0]]) == 0.0


def test_network_utilization_returns_python_float():
    got = network_utilization([[0.0, 1.0], [1.0, 0.0]], [[0.0, 4.0], [4.0, 0.0]])
    assert isinstance(got, float)
    assert got == pytest.approx(0.25, rel=1e-15)


@pytest.mark.parametrize(
    ("reserved", "capacity", "field"),
    [
        (np.zeros((2, 2)), np.zeros((2, 3)), "bandwidth"),
        (np.zeros((3, 3)), np.zeros((2, 2)), "reserved"),
        ([[0.0, -1.0], [0.0, 0.0]], [[0.0, 1.0], [1.0, 0.0]], "reserved[0][1]"),
        ([[0.0, 0.0], [0.0, 0.0]], [[0.0, float("nan")], [1.0, 0.0]], "bandwidth[0][1]"),
    ],
)
def test_network_utilization_validation_errors(reserved, capacity, field):
    with pytest.raises(ValidationError) as info:
        network_utilization(reserved, capacity)
    assert info.value.field == field
