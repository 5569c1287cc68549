"""Dynamic job prioritisation: Eqs. (9)-(12)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..core.network import network_utilization_rows, offdiag_sum
from ..core.validate import require_float, require_square_matrix, require_vector
from ..errors import ValidationError

__all__ = [
    "network_utilization",
    "priority_score",
    "priority_scores",
    "priority_scores_unchecked",
]


def network_utilization(reserved: ArrayLike, bandwidth: ArrayLike) -> float:
    """Eq. (11): alpha = reserved bandwidth over all directed off-diagonal links divided by the
    total off-diagonal capacity. Both are (K, K) bytes/s; the diagonals are ignored.

    Returns 0.0 when the cluster has no inter-region capacity at all.
    """
    cap = require_square_matrix("bandwidth", bandwidth, exc=ValidationError)
    res = require_square_matrix("reserved", reserved, cap.shape[0], exc=ValidationError)
    return network_utilization_rows(res.tolist(), offdiag_sum(cap.tolist()))


def priority_scores(
    single_gpu_exec: ArrayLike, min_bandwidth: ArrayLike, alpha: float
) -> np.ndarray:
    """Eqs. (9), (10), (12): the priority of each pending job; higher runs first.

    ``I_j = E_j(1) / max E(1)`` and ``D_j = b_j / max b`` are normalised over the jobs given
    (the current pending queue); ``score = (1 - alpha)(1 - I_j) + alpha (1 - D_j)``. A metric
    whose maximum is zero normalises to zero.
    """
    e1 = require_vector("single_gpu_exec", single_gpu_exec, exc=ValidationError)
    b = require_vector("min_bandwidth", min_bandwidth, length=e1.shape[0], exc=ValidationError)
    a = require_float("alpha", alpha, minimum=0.0, maximum=1.0, exc=ValidationError)
    return np.array(priority_scores_unchecked(e1.tolist(), b.tolist(), a), dtype=float)


# --- fast paths: plain Python lists in, no validation (the callers validated already); the
# simulator's policies call these on every decision


def priority_scores_unchecked(e1: Sequence[float], b: Sequence[float], alpha: float) -> list[float]:
    """:func:`priority_scores` (Eqs. 9, 10, 12) on plain lists, unvalidated."""
    e_max = max(e1, default=0.0)
    b_max = max(b, default=0.0)
    return [priority_score(e, bw, e_max, b_max, alpha) for e, bw in zip(e1, b)]


def priority_score(e1: float, b: float, e_max: float, b_max: float, alpha: float) -> float:
    """Eq. (12) of one job: ``(1 - alpha)(1 - I) + alpha (1 - D)``, with ``I = E(1) / e_max``
    (Eq. 9) and ``D = b(K*) / b_max`` (Eq. 10) normalised by the pending queue's maxima, 0
    where a maximum is 0. Every Eq. (12) score in the project is this arithmetic (numpy's
    element-wise form in ``PriorityOrdering`` makes the same operations in the same order)."""
    intensity = e1 / e_max if e_max > 0.0 else 0.0  # Eq. (9)
    sensitivity = b / b_max if b_max > 0.0 else 0.0  # Eq. (10)
    return (1.0 - alpha) * (1.0 - intensity) + alpha * (1.0 - sensitivity)  # Eq. (12)
