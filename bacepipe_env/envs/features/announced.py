"""The ``announced`` array (with ``announce_window`` > 0): the jobs the scenario's calendar
announces before they are submitted, per slot of the calendar window."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ...core.job_fields import announced_fields
from .deadlines import deadline_columns
from .decision import Decision

if TYPE_CHECKING:
    from .state import EncoderState

__all__ = ["encode_announced"]

#: The job fields shown in the ``announced`` array, by Job attribute: their columns follow
#: the memory floor (the time until the submission's, ``log_until_submit_hours``, first).
_FIELDS = tuple((f.attr, f.announced.value) for f in announced_fields() if f.announced)
#: The columns every ``announced`` row has: the deadline columns (``deadline_features``) follow.
_WIDTH = 5 + len(_FIELDS)


def encode_announced(enc: EncoderState, d: Decision) -> np.ndarray:
    """One row per announced job of the window (:meth:`Simulator.announced`, the first
    ``announce_window`` in submission order): its shape (the queue's static columns) and
    memory floor, and its job fields' columns (the time until it is submitted); then, with
    ``deadline_features``, its deadline columns (when it is due, from the scenario's
    deadlines, and E*, from its profile, as the queue snapshot reads them)."""
    out = np.zeros(enc.shapes["announced"], dtype=np.float32)
    sim = d.sim
    ids = sim.announced()[: enc.announce_window]
    if not ids:
        return out
    sc, now = enc.scales, sim.time
    static, floor, lh, profile = enc.job_static, sim.memory_floor, sc.log_hours, sim.profile
    n = len(ids)
    out[:n, :_WIDTH] = [
        (
            1.0,
            *static[job],  # log_e1_hours, log_bkstar_gbps, k_star: the queue's columns 3-5
            min(floor(job)) / sc.gpus,
            *[value(getattr(profile(job).job, attr), now, lh) for attr, value in _FIELDS],
        )
        for job in ids
    ]
    if enc.deadline_features:
        deadlines = sim.scenario.deadlines
        due = [deadlines.get(job, math.inf) for job in ids]
        ideal = [profile(job).ideal_execution for job in ids]
        out[:n, _WIDTH:] = deadline_columns(due, ideal, now, lh)
    return out
