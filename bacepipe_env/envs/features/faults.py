"""The fault arrays (with ``fault_features``): ``region_faults`` (the regions an outage holds
down now) and ``link_faults`` (each link's capacity now relative to nominal). Neither knows a
fault before it starts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .decision import Decision

if TYPE_CHECKING:
    from .state import EncoderState

__all__ = ["encode_link_faults", "encode_region_faults"]


def encode_region_faults(enc: EncoderState, d: Decision) -> np.ndarray:
    """The ``region_faults`` array: 1 for each region an outage holds down now."""
    sim = d.sim
    if sim.faults is None:  # the perfect world: no region is ever down
        static: np.ndarray = enc.no_outage.copy()
        return static
    down = sim.down_regions  # changes only at an outage's start or end
    if down != enc.down_key:
        arr = np.zeros_like(enc.no_outage)
        arr[: enc.k, 0] = down
        enc.down_key, enc.down_obs = down, arr
    out: np.ndarray = enc.down_obs.copy()
    return out


def encode_link_faults(enc: EncoderState, d: Decision) -> np.ndarray:
    """The ``link_faults`` array: each link's capacity now relative to its nominal one."""
    sim = d.sim
    if sim.faults is None:  # every link at its nominal capacity
        static: np.ndarray = enc.healthy_links.copy()
        return static
    rows = sim.link_capacity_rows  # changes only at a link change's start or end
    if rows != enc.links_key:
        k, nominal = enc.k, enc.nominal
        now = np.array(rows, dtype=np.float64)
        factor = np.divide(now, nominal, out=np.ones_like(now), where=nominal > 0)
        arr = enc.healthy_links.copy()
        arr[0, :k, :k] = factor
        arr[0, range(k), range(k)] = 0.0  # the diagonal
        enc.links_key, enc.links_obs = rows, arr
    out: np.ndarray = enc.links_obs.copy()
    return out
