"""Eq. (1) as a validated public function."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.perf import iteration_time as _iteration_time
from ..core.validate import require_float, require_int, require_vector
from ..errors import ValidationError

__all__ = ["iteration_time"]


def iteration_time(
    t_comp: float, comm_times: Sequence[float], n_stages: int, n_micro: int
) -> float:
    """Eq. (1): ``(sum(t_comm) + L * t_comp + (M - 1) * Delta) * 2`` seconds per iteration,
    ``Delta = max(t_comp, max t_comm)``; ``comm_times`` are the L - 1 stage-boundary times.

    Equals a micro-batch-level GPipe forward pass (stages and links as servers in series),
    doubled for the backward pass.
    """
    t = require_float("t_comp", t_comp, minimum=0.0, exc=ValidationError)
    n = require_int("n_stages", n_stages, minimum=1, exc=ValidationError)
    m = require_int("n_micro", n_micro, minimum=1, exc=ValidationError)
    comm = require_vector("comm_times", comm_times, exc=ValidationError)
    if comm.shape[0] != n - 1:
        raise ValidationError(
            "comm_times", f"length {comm.shape[0]}", f"must have n_stages - 1 = {n - 1} entries"
        )
    return _iteration_time(t, comm.tolist(), n, m)
