"""The ``grid`` array (with ``grid_features``): each region's electricity price and carbon
intensity at the decision's time, from the scenario's tariff."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .decision import Decision

if TYPE_CHECKING:
    from .state import EncoderState

__all__ = ["encode_grid"]


def encode_grid(enc: EncoderState, d: Decision) -> np.ndarray:
    """The ``grid`` array: each region's price and carbon intensity now, remade only when the
    tariff's hour or its active price changes do."""
    sim = d.sim
    tariff = sim.tariff
    # A flat tariff never changes; an hourly one only when h = floor(t / 3600 + start_hour),
    # the hour of its series (see bacepipe_env.core.tariff), does: compute once per hour, and
    # again when a scheduled price change (semantics §11) starts or ends.
    hour: Any = 0 if tariff.flat else math.floor(sim.time / 3600.0 + tariff.start_hour)
    if tariff.price_changes:
        now = sim.time
        hour = (hour, tuple(c.start <= now < c.end for c in tariff.price_changes))
    if hour != enc.grid_hour:
        now, price, carbon, k = sim.time, enc.scales.price, enc.scales.carbon, enc.k
        grid = np.zeros(enc.shapes["grid"], dtype=np.float32)
        grid[:k] = [
            (tariff.price_at(r, now) / price, tariff.carbon_at(r, now) / carbon) for r in range(k)
        ]
        enc.grid_hour, enc.grid_obs = hour, grid
    out: np.ndarray = enc.grid_obs.copy()
    return out
