"""Mean and Student-t confidence intervals over seeds, the interquartile mean and bootstrap
intervals over (training seed, episode) tables, without scipy."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Estimate",
    "bootstrap_ci",
    "estimate",
    "iqm",
    "paired_ratio_ci",
    "t_quantile_975",
]

# Two-sided 95% Student-t critical values t_{0.975, df} for df = 1..30.
_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip
_Z975 = 1.959963984540054


def t_quantile_975(df: int) -> float:
    """``t_{0.975, df}``: the table up to 30 degrees of freedom, then the Cornish-Fisher
    expansion around the normal quantile (error below 1e-4 there)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


@dataclass(frozen=True)
class Estimate:
    """A sample mean with the half-width of its 95% confidence interval (NaN for n = 1)."""

    mean: float
    ci95: float
    n: int

    def __str__(self) -> str:
        if math.isnan(self.ci95):
            return f"{self.mean:.3g}"
        return f"{self.mean:.3g} ± {self.ci95:.2g}"


def estimate(values: Sequence[float]) -> Estimate:
    """Mean and 95% t-interval half-width of ``values``."""
    n = len(values)
    if n == 0:
        raise ValueError("no values to estimate from")
    mean = math.fsum(values) / n
    if n == 1:
        return Estimate(mean, math.nan, 1)
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return Estimate(mean, t_quantile_975(n - 1) * math.sqrt(var / n), n)


def iqm(values: Sequence[float] | np.ndarray) -> float:
    """The interquartile mean: the mean of the middle half of the sorted values (a quarter
    of them, rounded down, cut from each end; the 25% trimmed mean rliable reports)."""
    x = np.sort(np.asarray(values, dtype=np.float64).ravel())
    if x.size == 0:
        raise ValueError("no values to take the interquartile mean of")
    cut = x.size // 4
    return float(x[cut : x.size - cut].mean())


def _draw(shape: tuple[int, ...], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices that resample a (training seed, episode) table with
    replacement on both axes: the seeds are runs of one recipe, the episodes held-out draws."""
    return rng.integers(0, shape[0], shape[0]), rng.integers(0, shape[1], shape[1])


def bootstrap_ci(
    table: Sequence[Sequence[float]] | np.ndarray,
    statistic: str = "mean",
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``(point, low, high)``: ``statistic`` (``"mean"`` or ``"iqm"``) of a (training seed,
    episode) table (one row for a heuristic) and its 95% percentile-bootstrap interval."""
    x = np.asarray(table, dtype=np.float64)
    x = x.reshape(1, -1) if x.ndim == 1 else x
    stat = iqm if statistic == "iqm" else (lambda a: float(np.mean(a)))
    if statistic not in ("mean", "iqm"):
        raise ValueError(f"statistic must be mean or iqm, got {statistic!r}")
    rng = np.random.default_rng(seed)
    draws = np.array([stat(x[np.ix_(*_draw(x.shape, rng))]) for _ in range(n_boot)])
    low, high = np.percentile(draws, [2.5, 97.5])
    return stat(x), float(low), float(high)


def paired_ratio_ci(
    table: Sequence[Sequence[float]] | np.ndarray,
    reference: Sequence[float] | np.ndarray,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``(point, low, high)`` of ``mean(table) / mean(reference)``, the policy's mean over
    its (training seed, episode) table against a reference's over the same episodes, with a
    95% percentile-bootstrap interval that resamples the episodes in pairs (and the seeds)."""
    x = np.asarray(table, dtype=np.float64)
    x = x.reshape(1, -1) if x.ndim == 1 else x
    ref = np.asarray(reference, dtype=np.float64).ravel()
    if ref.size != x.shape[1]:
        raise ValueError("the reference needs one value per episode of the table")
    rng = np.random.default_rng(seed)
    draws = np.empty(n_boot)
    for i in range(n_boot):
        rows, cols = _draw(x.shape, rng)
        draws[i] = x[np.ix_(rows, cols)].mean() / ref[cols].mean()
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(x.mean() / ref.mean()), float(low), float(high)
