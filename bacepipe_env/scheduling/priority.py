"""Dynamic job prioritisation: Eqs. (9)-(12)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..core.network import network_utilization_rows, offdiag_sum
from ..core.validate import require_float, require_square_matrix, require_vector
from ..errors import ValidationError

__all__ = ["network_utilization", "priority_scores", "priority_scores_unchecked"]


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
    scores = []
    for e, bw in zip(e1, b):
        intensity = e / e_max if e_max > 0.0 else 0.0  # Eq. (9)
        sensitivity = bw / b_max if b_max > 0.0 else 0.0  # Eq. (10)
        scores.append((1.0 - alpha) * (1.0 - intensity) + alpha * (1.0 - sensitivity))  # Eq. (12)
    return scores
