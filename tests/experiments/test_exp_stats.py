"""Student-t quantiles and mean/CI estimates, against textbook values and hand arithmetic."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from bacepipe_env.experiments.stats import Estimate, estimate, t_quantile_975

Z975 = 1.959963984540054  # the standard normal 0.975 quantile


@pytest.mark.parametrize(
    "df,textbook",
    [
        (1, 12.706),
        (2, 4.303),
        (3, 3.182),
        (5, 2.571),
        (9, 2.262),
        (10, 2.228),
        (20, 2.086),
        (29, 2.045),
        (30, 2.042),
        (40, 2.021),
        (60, 2.000),
        (120, 1.980),
        (1000, 1.962),
    ],
)
def test_t_quantile_matches_textbook_tables_to_3_decimals(df: int, textbook: float) -> None:
    assert round(t_quantile_975(df), 3) == pytest.approx(textbook, abs=1e-9)


@pytest.mark.parametrize(
    "df,precise",
    # t_{0.975, df} to 6 decimals (standard tables / scipy.stats.t.ppf).
    [(31, 2.039513), (40, 2.021075), (50, 2.008559), (60, 2.000298), (100, 1.983972)],
)
def test_t_quantile_beyond_the_table_is_within_1e4(df: int, precise: float) -> None:
    assert t_quantile_975(df) == pytest.approx(precise, abs=1e-4)


def test_t_quantile_decreases_monotonically_towards_the_normal_quantile() -> None:
    values = [t_quantile_975(df) for df in range(1, 3001)]
    assert all(a > b for a, b in itertools.pairwise(values))
    assert all(v > Z975 for v in values)
    assert t_quantile_975(10**6) == pytest.approx(Z975, abs=1e-5)
    # No jump where the table hands over to the expansion (df 30 -> 31).
    assert 0 < t_quantile_975(30) - t_quantile_975(31) < 0.005


@pytest.mark.parametrize("df", [0, -1])
def test_t_quantile_rejects_df_below_1(df: int) -> None:
    with pytest.raises(ValueError):
        t_quantile_975(df)


def test_estimate_of_1_to_4() -> None:
    est = estimate([1.0, 2.0, 3.0, 4.0])
    # mean 2.5; sample variance (2.25 + 0.25 + 0.25 + 2.25) / 3 = 5/3; t_{0.975,3} = 3.182
    assert est.mean == 2.5
    assert est.n == 4
    assert est.ci95 == pytest.approx(3.182 * math.sqrt(5 / 3) / math.sqrt(4), rel=2e-4)


def test_estimate_of_eight_values() -> None:
    est = estimate([2, 4, 4, 4, 5, 5, 7, 9])
    # mean 5; squared deviations 9+1+1+1+0+0+4+16 = 32; s^2 = 32/7; t_{0.975,7} = 2.365
    assert est.mean == 5.0
    assert est.n == 8
    assert est.ci95 == pytest.approx(2.365 * math.sqrt(32 / 7) / math.sqrt(8), rel=2e-4)
    assert est.ci95 == pytest.approx(1.7878, abs=1e-3)


def test_estimate_of_two_values_uses_df_1() -> None:
    est = estimate([10.0, 12.0])
    # s = sqrt(2), half-width 12.706 * sqrt(2) / sqrt(2) = 12.706
    assert est.mean == 11.0
    assert est.ci95 == pytest.approx(12.706, rel=1e-4)


def test_constant_values_have_zero_width() -> None:
    est = estimate([3.0, 3.0, 3.0])
    assert est == Estimate(3.0, 0.0, 3)


def test_single_value_has_nan_ci() -> None:
    est = estimate([7.5])
    assert est.mean == 7.5
    assert est.n == 1
    assert math.isnan(est.ci95)
    assert str(est) == "7.5"


def test_str_shows_mean_and_half_width() -> None:
    assert str(estimate([1.0, 2.0, 3.0, 4.0])) == "2.5 ± 2.1"


def test_empty_raises() -> None:
    with pytest.raises(ValueError):
        estimate([])


# --------------------------------------------------------------- IQM and the bootstrap
def test_iqm_by_hand():
    from bacepipe_env.experiments.stats import iqm

    # 8 values, sorted -50, 1, 2, 3, 4, 5, 6, 100: cut 2 from each end, the mean of 2, 3, 4
    # and 5 is 3.5 (the outliers drop out)
    assert iqm([100.0, 1.0, 6.0, 3.0, 4.0, 5.0, -50.0, 2.0]) == 3.5
    # 5 values: cut 1 from each end: mean(2, 3, 4) = 3
    assert iqm([5.0, 1.0, 4.0, 2.0, 3.0]) == 3.0
    assert iqm([7.0]) == 7.0


def test_bootstrap_of_a_constant_table_is_that_constant():
    from bacepipe_env.experiments.stats import bootstrap_ci, paired_ratio_ci

    table = np.full((3, 20), 2.5)
    assert bootstrap_ci(table) == (2.5, 2.5, 2.5)
    assert bootstrap_ci(table, "iqm") == (2.5, 2.5, 2.5)
    point, lo, hi = paired_ratio_ci(table, np.full(20, 5.0))
    assert (point, lo, hi) == (0.5, 0.5, 0.5)


def test_bootstrap_intervals_cover_the_point_and_repeat_under_a_seed():
    from bacepipe_env.experiments.stats import bootstrap_ci, paired_ratio_ci

    rng = np.random.default_rng(1)
    ref = rng.uniform(100, 200, 200)
    table = ref * rng.uniform(0.8, 1.0, (3, 200))  # every episode 0.8-1.0x the reference
    point, lo, hi = paired_ratio_ci(table, ref, n_boot=500, seed=3)
    assert point == pytest.approx(table.mean() / ref.mean())
    assert 0.8 < lo < point < hi < 1.0
    assert paired_ratio_ci(table, ref, n_boot=500, seed=3) == (point, lo, hi)
    p, lo2, hi2 = bootstrap_ci(ref, n_boot=500)
    assert p == pytest.approx(ref.mean()) and lo2 < p < hi2
    with pytest.raises(ValueError, match="one value per episode"):
        paired_ratio_ci(table, ref[:10])
    with pytest.raises(ValueError, match="statistic"):
        bootstrap_ci(ref, "median")
