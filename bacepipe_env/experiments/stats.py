"""Mean and Student-t confidence intervals over seeds, without scipy."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Estimate", "estimate", "t_quantile_975"]

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
