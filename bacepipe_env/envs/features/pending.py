"""The arrays of the pending jobs' window, per slot: ``queue`` (every observation's: the job's
priority terms, its shape, its wait so far and its placement preview), ``wait_preview`` (with
``running_features``: what waiting for the next GPU release would give the job) and
``replicas`` (with ``replica_choices``: what each count of data-parallel copies would give it)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from ...core.admission import finish_after_release
from ...core.job_fields import queue_fields
from ...core.placement import Placement
from ...core.units import SECONDS_PER_HOUR
from .deadlines import deadline_columns
from .decision import Decision

if TYPE_CHECKING:
    from .state import EncoderState

__all__ = ["COLUMNS_FROM", "encode_queue", "encode_replicas", "encode_wait_preview"]

#: From this many visible jobs on, the ``queue`` array is filled column by column with numpy.
COLUMNS_FROM = 48
#: The job fields shown in the ``queue`` array, by their snapshot tuple's name: their columns
#: follow the static ones (3-5), from column 6 on, and the preview's follow them.
_FIELDS = tuple((f.snapshot, f.queue.value) for f in queue_fields() if f.queue is not None)
_PREVIEW = 6 + len(_FIELDS)
#: The columns every ``queue`` row has: the deadline columns (``deadline_features``) follow.
_WIDTH = _PREVIEW + 4


def encode_queue(enc: EncoderState, d: Decision) -> np.ndarray:
    """The ``queue`` array: per slot of the visible window, the job's Eq. (9)-(10) terms, its
    static columns, its job fields' columns (its wait so far) and its placement preview (row
    by row for a narrow window, column by column from :attr:`ObservationEncoder.job_table`
    from :data:`COLUMNS_FROM` jobs), then, with ``deadline_features``, its deadline columns
    (from the snapshot's ``due`` and ``ideal_execution``)."""
    q = d.queue
    out = np.zeros(enc.shapes["queue"], dtype=np.float32)
    n = len(q.job_ids)
    if not n:
        return out
    if n < COLUMNS_FROM:  # a narrow window: row by row in Python is cheaper
        out[:n, :_WIDTH] = _rows(enc, d)
    else:
        _columns(enc, d, out)
    if enc.deadline_features:
        out[:n, _WIDTH:] = deadline_columns(q.due, q.ideal_execution, q.time, enc.scales.log_hours)
    return out


def _rows(enc: EncoderState, d: Decision) -> list[tuple[float, ...]]:
    """The ``queue`` rows of a narrow window, row by row (every column but the deadlines')."""
    q, sc, log10, h = d.queue, enc.scales, math.log10, SECONDS_PER_HOUR
    ids = q.job_ids
    e_max, b_max = q.pending_e1_max, q.pending_bkstar_max
    now, lh, kk, price = q.time, sc.log_hours, enc.max_regions, sc.price
    static, k_star, e1, bk = enc.job_static, enc.k_star, q.single_gpu_exec, q.min_bandwidth_kstar
    fields = [(getattr(q, name), value) for name, value in _FIELDS]
    rows = []
    for i, (job, pv) in enumerate(zip(ids, d.previews)):
        if pv is None:
            preview: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)
        else:
            pl = pv.placement
            preview = (
                pl.n_gpus / k_star[job],
                len(pl.path) / kk,
                log10(1.0 + pv.execution / h) / lh,
                pv.avg_price / price,
            )
        rows.append(
            (
                1.0,
                e1[i] / e_max if e_max > 0 else 0.0,  # Eq. (9)
                bk[i] / b_max if b_max > 0 else 0.0,  # Eq. (10)
                *static[job],
                *[value(seq[i], now, lh) for seq, value in fields],  # wait so far, ...
                *preview,
            )
        )
    return rows


def _columns(enc: EncoderState, d: Decision, out: np.ndarray) -> None:
    """Fill the ``queue`` columns of a wide window (every one but the deadlines') column by
    column, gathered with numpy from the per-job table; every division is IEEE's either way,
    so the float64 values (and their float32 casts) are the row-by-row ones."""
    q, sc, log10, h = d.queue, enc.scales, math.log10, SECONDS_PER_HOUR
    ids = q.job_ids
    n = len(ids)
    e_max, b_max = q.pending_e1_max, q.pending_bkstar_max
    now, lh, kk, price = q.time, sc.log_hours, enc.max_regions, sc.price
    row = enc.job_row
    table = enc.job_table[[row[j] for j in ids]]
    out[:n, 0] = 1.0
    if e_max > 0:
        out[:n, 1] = table[:, 0] / e_max  # Eq. (9)
    if b_max > 0:
        out[:n, 2] = table[:, 1] / b_max  # Eq. (10)
    out[:n, 3:6] = table[:, 2:5]
    for c, (name, value) in enumerate(_FIELDS, start=6):  # math's log10, as row by row
        out[:n, c] = [value(x, now, lh) for x in getattr(q, name)]
    slots, gpus, hops, logs, prices = [], [], [], [], []
    for i, pv in enumerate(d.previews):
        if pv is not None:  # a job with no placement now keeps zeros
            pl = pv.placement
            slots.append(i)
            gpus.append(pl.n_gpus)
            hops.append(len(pl.path))
            logs.append(log10(1.0 + pv.execution / h) / lh)
            prices.append(pv.avg_price)
    if slots:
        p = _PREVIEW
        out[slots, p] = np.array(gpus, dtype=np.float64) / table[slots, 5]
        out[slots, p + 1] = np.array(hops, dtype=np.float64) / kk
        out[slots, p + 2] = logs
        out[slots, p + 3] = np.array(prices, dtype=np.float64) / price


def encode_wait_preview(enc: EncoderState, d: Decision) -> np.ndarray:
    """The ``wait_preview`` array: per slot of the window, the placement and finish the job
    would get by waiting for the next GPU release (through the previewer's memo when there is
    one)."""
    sim, q, sc = d.sim, d.queue, enc.scales
    out = np.zeros(enc.shapes["wait_preview"], dtype=np.float32)
    release = sim.next_release() if sim.running else None
    if release is None:  # nothing runs: waiting frees nothing
        return out
    lh, h, now, k_star, log10 = sc.log_hours, SECONDS_PER_HOUR, sim.time, enc.k_star, math.log10
    # jobs of one shape get one placement on the release state: ask once per shape
    waits: Callable[[int], tuple[float, Placement] | None]
    if d.previewer is None:
        waits = partial(finish_after_release, sim, release=release)
    else:
        waits = d.previewer.waits(sim, release)
    slots, rows = [], []
    for i, (job, pv) in enumerate(zip(q.job_ids, d.previews)):
        waited = waits(job)
        if waited is None:
            continue
        finish, later = waited
        left = finish - now
        share = 0.0
        if pv is not None:  # < 1/2: waiting finishes sooner than starting now
            share = left / (left + pv.execution)
        slots.append(i)
        rows.append((later.n_gpus / k_star[job], log10(1.0 + left / h) / lh, share))
    if rows:
        out[slots] = rows
    return out


def encode_replicas(enc: EncoderState, d: Decision) -> np.ndarray:
    """The ``replicas`` array: per slot of the window and per count of copies, 1 when that
    placement is legal now, the GPUs it holds over the cluster's, and its execution time as the
    schedulers estimate it (semantics §3e)."""
    out = np.zeros(enc.shapes["replicas"], dtype=np.float32)
    sim, lh = d.sim, enc.scales.log_hours
    for i, (job, options) in enumerate(zip(d.queue.job_ids, d.copies)):
        for c, p in enumerate(options):
            if p is not None:
                hours = sim.execution_time(job, p) / SECONDS_PER_HOUR
                out[i, c] = (1.0, p.n_gpus / enc.total_gpus, math.log10(1.0 + hours) / lh)
    return out
