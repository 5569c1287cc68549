"""The arrays of the running jobs: ``running`` (per region) and ``release`` (overall), with
``running_features``, computed together once per decision by :func:`running_state`; and
``running_jobs`` (per slot of the preemption window, with ``preempt_window`` > 0)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ...core.units import SECONDS_PER_HOUR
from .decision import Decision

if TYPE_CHECKING:
    from .state import EncoderState

__all__ = [
    "encode_release",
    "encode_running",
    "encode_running_jobs",
    "running_arrays",
    "running_state",
]


def running_state(enc: EncoderState, d: Decision) -> tuple[np.ndarray, np.ndarray]:
    """Both running-job arrays of decision ``d``, computed once per decision (the two
    encoders below share it)."""
    sim = d.sim
    key = (sim.time, sim.running)
    if key == enc.running_key:
        return enc.running_obs
    if key[1]:
        state = running_arrays(enc, d)
    else:  # nothing runs: every column is log10(1 + 0) or 0 / x, a zero (a reset's case)
        state = (
            np.zeros(enc.shapes["running"], dtype=np.float32),
            np.zeros(enc.shapes["release"], dtype=np.float32),
        )
    enc.running_key, enc.running_obs = key, state
    return state


def running_arrays(enc: EncoderState, d: Decision) -> tuple[np.ndarray, np.ndarray]:
    """The running-job arrays: a pass over the running jobs' placements and finish times."""
    sim = d.sim
    k, lh, h, now = enc.k, enc.scales.log_hours, SECONDS_PER_HOUR, sim.time
    # per region, in Python floats (as float64 arrays would hold them, in the same order)
    jobs = [0.0] * k
    held = [0.0] * k
    gpu_rem = [0.0] * k  # sum of GPUs x remaining seconds
    first = [math.inf] * k  # the earliest finish of a job holding GPUs here
    first_gpus = [0.0] * k  # the GPUs released here at that instant
    t_next, next_gpus, hour_gpus, all_gpus, all_rem = math.inf, 0.0, 0.0, 0.0, 0.0
    for pl, finish in sim.running_placements():
        left = finish - now
        if left <= 0.0:  # as max(0.0, left): never -0.0
            left = 0.0
        n = pl.n_gpus
        all_gpus += n
        all_rem += n * left
        if left < t_next:
            t_next, next_gpus = left, float(n)
        elif left == t_next:
            next_gpus += n
        if left <= h:
            hour_gpus += n
        for r, g in zip(pl.path, pl.gpus):
            jobs[r] += 1.0
            held[r] += g
            gpu_rem[r] += g * left
            if left < first[r]:
                first[r], first_gpus[r] = left, float(g)
            elif left == first[r]:
                first_gpus[r] += g
    # one log10 over the three log columns (numpy's, as the arrays always used); the divisions
    # are correctly rounded, so Python's equal numpy's
    cap = enc.capacity_list
    busy = [held[r] > 0 for r in range(k)]
    logs = np.array(
        (
            jobs,
            [first[r] / h if busy[r] else 0.0 for r in range(k)],
            [gpu_rem[r] / held[r] / h if busy[r] else 0.0 for r in range(k)],
        )
    )
    logs += 1.0
    np.log10(logs, out=logs)
    logs /= enc.running_log_scale
    per_region = np.zeros(enc.shapes["running"], dtype=np.float32)
    per_region[:k, 0::2] = logs.T  # log_jobs, log_next_release_hours, log_mean_remaining_hours
    per_region[:k, 1::2] = [(held[r] / cap[r], first_gpus[r] / cap[r]) for r in range(k)]
    total = enc.total_gpus
    overall = np.zeros(enc.shapes["release"], dtype=np.float32)
    if all_gpus > 0:
        overall[:] = (
            math.log10(1.0 + t_next / h) / lh,
            next_gpus / total,
            hour_gpus / total,
            math.log10(1.0 + all_rem / all_gpus / h) / lh,
        )
    return per_region, overall


def encode_running(enc: EncoderState, d: Decision) -> np.ndarray:
    """The ``running`` array: per region, the running jobs (see :func:`running_state`)."""
    out: np.ndarray = running_state(enc, d)[0].copy()
    return out


def encode_running_jobs(enc: EncoderState, d: Decision) -> np.ndarray:
    """One row per running job of the preemption window (start order): its size, remaining
    time, attained service, run time, time since its last checkpoint, preemptions so far,
    whether it may be preempted, and, at a decision to preempt, what its preemption would let
    start."""
    out = np.zeros(enc.shapes["running_jobs"], dtype=np.float32)
    window = d.preemption
    if window is None or not window.job_ids:
        return out
    sim, sc, log10, h = d.sim, enc.scales, math.log10, SECONDS_PER_HOUR
    view = window.view if window.view is not None else sim.preemption_view()
    lh, cap = sc.log_hours, max(1, sim.recovery.max_preemptions)
    rows = []
    for job in window.job_ids:
        r = view.row(job)
        helped = view.beneficiaries(job) if window.view is not None else ()
        best = min((b.remaining for b in helped), default=0.0)
        rows.append(
            (
                1.0,
                r.gpus / sc.gpus,
                log10(1.0 + r.remaining / h) / lh,
                log10(1.0 + r.attained / h) / (lh + 2.0),
                log10(1.0 + r.run / h) / lh,
                log10(1.0 + r.since_checkpoint / h) / lh,
                r.preemptions / cap,
                1.0 if r.preemptible else 0.0,
                len(helped) / enc.max_queue,
                log10(1.0 + best / h) / lh,
            )
        )
    out[: len(rows)] = rows
    return out


def encode_release(enc: EncoderState, d: Decision) -> np.ndarray:
    """The ``release`` array: the next GPU releases overall (see :func:`running_state`)."""
    out: np.ndarray = running_state(enc, d)[1].copy()
    return out
