"""Network utilisation on nested lists: the fast path behind Eq. (11)."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["network_utilization_rows", "offdiag_sum"]


def offdiag_sum(rows: Sequence[Sequence[float]]) -> float:
    """Correctly rounded sum of the off-diagonal entries (independent of summation order)."""
    return math.fsum(x for i, row in enumerate(rows) for j, x in enumerate(row) if i != j)


def network_utilization_rows(
    reserved_rows: Sequence[Sequence[float]], capacity_total: float
) -> float:
    """Eq. (11): off-diagonal reserved bandwidth over ``capacity_total``; 0 without capacity."""
    if capacity_total <= 0.0:
        return 0.0
    return offdiag_sum(reserved_rows) / capacity_total
