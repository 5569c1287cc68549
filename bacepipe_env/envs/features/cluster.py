"""The arrays of the cluster and the system as a whole, every observation's: ``regions`` (per
region: capacity, price, intra-region bandwidth, free GPUs), ``bandwidth`` (per link: residual
and capacity) and ``summary`` (network utilisation, time, jobs pending, hidden and running, free
GPUs)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ...core.units import GBPS_PER_BYTE_PER_S, SECONDS_PER_HOUR
from .decision import Decision

if TYPE_CHECKING:
    from .state import EncoderState

__all__ = ["encode_bandwidth", "encode_regions", "encode_summary"]


def encode_regions(enc: EncoderState, d: Decision) -> np.ndarray:
    """The ``regions`` array: the episode's static columns, and each region's free GPUs now."""
    regions: np.ndarray = enc.regions_static.copy()
    regions[: enc.k, 1] = np.asarray(d.sim.free_gpus, dtype=np.float64) / enc.capacity
    return regions


def encode_bandwidth(enc: EncoderState, d: Decision) -> np.ndarray:
    """The ``bandwidth`` array: the residual layer, remade only when the simulator's
    reservations change, over the static capacity layer."""
    rows = d.sim.residual_rows  # the same object until a reservation changes
    if rows is not enc.bandwidth_rows:
        k = enc.k
        bw: np.ndarray = enc.bandwidth_static.copy()
        residual = np.asarray(rows, dtype=np.float64)  # a fresh (k, k) array
        np.maximum(residual, 0.0, out=residual)
        residual.reshape(-1)[:: k + 1] = 0.0  # the diagonal
        residual *= GBPS_PER_BYTE_PER_S  # log10(1 + Gbps) / log_gbps, in place
        residual += 1.0
        np.log10(residual, out=residual)
        residual /= enc.scales.log_gbps
        bw[0, :k, :k] = residual
        enc.bandwidth_rows, enc.bandwidth_obs = rows, bw
    out: np.ndarray = enc.bandwidth_obs.copy()
    return out


def encode_summary(enc: EncoderState, d: Decision) -> np.ndarray:
    """The ``summary`` array: the system as a whole (network utilisation, time, pending,
    hidden and running jobs, free GPUs)."""
    sim, q, n = d.sim, d.queue, enc.max_queue
    n_pending = len(sim.pending)
    return np.array(
        [
            q.alpha,  # Eq. (11)
            math.log10(1.0 + q.time / SECONDS_PER_HOUR) / enc.scales.log_hours,
            n_pending / n,
            max(0, n_pending - len(q.job_ids)) / n,
            (sim.n_in_system - n_pending) / n,  # running
            sum(sim.free_gpus) / enc.total_gpus,
        ],
        dtype=np.float32,
    )
