"""The deadline columns (``deadline_features=True``; semantics §15) of a job's row in the
``queue`` and ``announced`` arrays: whether it has a deadline, the time to it and its slack,
from the decision's snapshot (``due``, ``ideal_execution``) or, for an announced job, from the
same sources the snapshot reads (the scenario's deadlines and the job's profile)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...core.units import SECONDS_PER_HOUR

__all__ = ["deadline_columns", "signed_log_hours"]

#: The row of a job without a deadline: the flag 0 and zeros (``due`` is inf then).
NO_DEADLINE = (0.0, 0.0, 0.0)


def signed_log_hours(seconds: float, log_hours: float) -> float:
    """``sign(x) * log10(1 + |x| / 1 h) / log_hours``: the time columns' hours scale, made
    symmetric so that a time past (an overdue deadline, a negative slack) stays below 0."""
    return math.copysign(math.log10(1.0 + abs(seconds) / SECONDS_PER_HOUR) / log_hours, seconds)


def deadline_columns(
    due: Sequence[float], ideal: Sequence[float], now: float, log_hours: float
) -> np.ndarray:
    """One row per job of ``due`` (when it is due, s; inf without a deadline) and ``ideal``
    (its isolated run time E*, s) at time ``now``: ``(1, time to due, slack due - now - E*)``
    on the signed hours scale, or :data:`NO_DEADLINE`; float64, shape ``(len(due), 3)``."""
    rows = [
        NO_DEADLINE
        if math.isinf(d)
        else (1.0, signed_log_hours(d - now, log_hours), signed_log_hours(d - now - e, log_hours))
        for d, e in zip(due, ideal)
    ]
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(NO_DEADLINE))
