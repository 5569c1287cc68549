"""The ``announced`` array (with ``announce_window`` > 0): the jobs the scenario's calendar
announces before they are submitted, per slot of the calendar window."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ...core.units import SECONDS_PER_HOUR
from .decision import Decision

if TYPE_CHECKING:
    from .state import EncoderState

__all__ = ["encode_announced"]


def encode_announced(enc: EncoderState, d: Decision) -> np.ndarray:
    """One row per announced job of the window (:meth:`Simulator.announced`, the first
    ``announce_window`` in submission order): its shape (the queue's static columns) and
    memory floor, and the time until it is submitted."""
    out = np.zeros(enc.shapes["announced"], dtype=np.float32)
    sim = d.sim
    ids = sim.announced()[: enc.announce_window]
    if not ids:
        return out
    sc, log10, h, now = enc.scales, math.log10, SECONDS_PER_HOUR, sim.time
    static, submits, floor, lh = (
        enc.job_static,
        sim.scenario.submit_times,
        sim.memory_floor,
        sc.log_hours,
    )
    out[: len(ids)] = [
        (
            1.0,
            *static[job],  # log_e1_hours, log_bkstar_gbps, k_star: the queue's columns 3-5
            min(floor(job)) / sc.gpus,
            log10(1.0 + (submits[job] - now) / h) / lh,
        )
        for job in ids
    ]
    return out
