"""The observation as a feature table: one entry per array, read by the encoder, the docs and
the tests.

:data:`FEATURES` lists the observation's float arrays (``regions``, ``bandwidth``, ``queue``,
``summary``, and the optional ``grid``, ``region_faults``, ``link_faults``, ``running``,
``release``, ``wait_preview``, ``running_jobs`` and ``announced``): each
:class:`Feature` has a name, a shape in terms of ``max_regions``, ``max_queue``,
``preempt_window`` and ``announce_window``, a
description, its named columns (with their lower bounds), the function that computes it and,
for an optional array, the
:class:`~bacepipe_env.envs.geopipe.GeoPipeEnv` keyword that turns it on (``enabled_by``).
:func:`active_features` picks the arrays of an environment; :class:`ObservationEncoder` runs
their functions at each decision; :func:`observation_space` and :func:`flat_space` build the
Gymnasium spaces from the same table; :func:`markdown_table` writes the Observation tables of
``docs/environment.md``, and a test checks that the docs carry them.

Every value is float32, brought to O(1) by :class:`~bacepipe_env.envs.config.ObsScales`, and
>= 0 except ``grid``'s ``price_now``: an hourly electricity price can be negative, so that
column's Box bound is ``-inf`` (the only one). The observation holds only what a real
scheduler knows: no future arrivals (but the announced ones, the scenario's calendar), no
future prices, no future faults.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from ..core.admission import finish_after_release
from ..core.placement import Placement
from ..core.preemption import PreemptionView
from ..core.scenario import Scenario
from ..core.simulator import Simulator
from ..core.snapshot import QueueSnapshot
from ..core.units import GBPS_PER_BYTE_PER_S, SECONDS_PER_HOUR
from .config import ObsScales
from .previews import PlacementPreviewer, Preview

__all__ = [
    "ANNOUNCED_FEATURES",
    "BANDWIDTH_LAYERS",
    "FEATURES",
    "GRID_FEATURES",
    "LINK_FAULT_LAYERS",
    "OPTIONAL_FEATURES",
    "QUEUE_FEATURES",
    "REGION_FAULT_FEATURES",
    "REGION_FEATURES",
    "RELEASE_FEATURES",
    "RUNNING_FEATURES",
    "RUNNING_JOB_FEATURES",
    "SUMMARY_FEATURES",
    "WAIT_PREVIEW_FEATURES",
    "Column",
    "Decision",
    "Feature",
    "ObservationEncoder",
    "PreemptionWindow",
    "active_features",
    "feature",
    "flat_space",
    "flatten",
    "layout",
    "layout_space",
    "markdown_table",
    "observation_space",
]


@dataclass(frozen=True)
class Column:
    """One named column of a feature array (a layer, for ``bandwidth``), and the lower bound
    its values keep (the observation space's ``low``; every upper bound is ``inf``)."""

    name: str
    description: str
    low: float = 0.0


@dataclass(frozen=True)
class PreemptionWindow:
    """The running jobs an agent may preempt at one decision: the first ``preempt_window``
    running jobs in start order (``job_ids``, slot order), the action of slot 0
    (``first_action``; slot i is ``first_action + i``), and, at a decision to preempt (the end
    of a scheduling pass), the simulator's :class:`~bacepipe_env.core.preemption.PreemptionView`
    with every beneficiary computed (None at a decision to place a job)."""

    job_ids: tuple[int, ...]
    first_action: int
    view: PreemptionView | None = None

    def action(self, job_id: int) -> int | None:
        """The action that preempts ``job_id``, or None if it is outside the window."""
        try:
            return self.first_action + self.job_ids.index(job_id)
        except ValueError:
            return None


class Decision(NamedTuple):
    """What the encoder reads at one decision point."""

    sim: Simulator
    queue: QueueSnapshot  # the visible window's jobs, in slot order
    previews: Sequence[Preview | None]  # per window slot; None: no placement that can start
    previewer: PlacementPreviewer | None = None  # its memo serves ``wait_preview``
    preemption: PreemptionWindow | None = None  # the preempt actions' window (if any)


@dataclass(frozen=True)
class Feature:
    """One float32 array of the observation.

    ``shape`` holds ints and the names ``"max_regions"``, ``"max_queue"``,
    ``"preempt_window"`` and ``"announce_window"``; ``columns`` name
    the axis ``column_axis`` (the last one, the first for ``bandwidth``). ``enabled_by`` is
    None for an array every observation has, else the ``GeoPipeEnv`` keyword (a bool, default
    False, or ``preempt_window`` / ``announce_window`` > 0) that adds it.
    """

    name: str
    shape: tuple[int | str, ...]
    description: str
    columns: tuple[Column, ...]
    encode: Callable[[ObservationEncoder, Decision], np.ndarray]
    column_axis: int = -1
    enabled_by: str | None = None

    def resolve(
        self, max_queue: int, max_regions: int, preempt_window: int = 0, announce_window: int = 0
    ) -> tuple[int, ...]:
        """The concrete shape for a window of ``max_queue``, ``max_regions`` regions, a
        preemption window of ``preempt_window`` running jobs and ``announce_window`` announced
        jobs."""
        sizes = {
            "max_queue": max_queue,
            "max_regions": max_regions,
            "preempt_window": preempt_window,
            "announce_window": announce_window,
        }
        return tuple(sizes[d] if isinstance(d, str) else d for d in self.shape)

    @property
    def column_names(self) -> tuple[str, ...]:
        """The columns' names, in index order."""
        return tuple(c.name for c in self.columns)

    def space(
        self, max_queue: int, max_regions: int, preempt_window: int = 0, announce_window: int = 0
    ) -> spaces.Box:
        """This array's Box: each column's ``low`` (broadcast along the other axes) to inf."""
        shape = self.resolve(max_queue, max_regions, preempt_window, announce_window)
        lows = [c.low for c in self.columns]
        if not any(lows):  # all zero: the scalar-bounded Box the v1 spaces always had
            return spaces.Box(0.0, np.inf, shape=shape, dtype=np.float32)
        axis = self.column_axis % len(shape)
        view = [1] * len(shape)
        view[axis] = len(lows)
        low = np.broadcast_to(np.array(lows, dtype=np.float32).reshape(view), shape)
        return spaces.Box(low, np.full(shape, np.inf, np.float32), dtype=np.float32)


def _log_gbps(bytes_per_s: np.ndarray, sc: ObsScales) -> np.ndarray:
    """``log10(1 + Gbps) / log_gbps`` of a float64 array of bytes/s."""
    out: np.ndarray = np.log10(1.0 + bytes_per_s * GBPS_PER_BYTE_PER_S) / sc.log_gbps
    return out


class ObservationEncoder:
    """Turns decisions into observation arrays, following :data:`FEATURES`.

    :meth:`start` computes an episode's static parts (capacities, prices, link capacities,
    per-job constants) once; :meth:`encode` fills in the rest at each decision.
    """

    k: int  # the episode's regions
    capacity: np.ndarray  # (k,) GPUs, float64
    capacity_list: list[float]  # the same as Python floats
    running_log_scale: np.ndarray  # (3, 1) divisors of the ``running`` array's log columns
    total_gpus: float
    regions_static: np.ndarray  # (max_regions, 5): every column but free_frac
    bandwidth_static: np.ndarray  # (2, max_regions, max_regions): the capacity layer
    bandwidth_rows: object  # the residual rows the cached layer was made from
    bandwidth_obs: np.ndarray  # (2, max_regions, max_regions), the cached array
    job_static: dict[int, tuple[float, float, float]]  # job id -> queue columns 3-5
    job_row: dict[int, int]  # job id -> its row of job_table
    job_table: np.ndarray  # (jobs, 6) float64: E(1), b(K*), queue columns 3-5, K*
    k_star: dict[int, int]  # job id -> K*
    grid_hour: Any  # the tariff hour (and active price changes) grid_obs holds; None: not yet
    grid_obs: np.ndarray  # (max_regions, 2), the cached ``grid`` array
    nominal: np.ndarray  # (k, k) the links' nominal capacity (bytes/s), float64
    healthy_links: np.ndarray  # (1, max_regions, max_regions): ``link_faults`` without faults
    no_outage: np.ndarray  # (max_regions, 1): ``region_faults`` without faults (zeros)
    down_key: object  # the down_regions tuple down_obs was made from (None: not yet)
    down_obs: np.ndarray  # (max_regions, 1), the cached ``region_faults`` array
    links_key: object  # the link_capacity_rows links_obs was made from (None: not yet)
    links_obs: np.ndarray  # (1, max_regions, max_regions), the cached ``link_faults`` array
    running_key: object  # (time, running ids) running_obs was made at (None: not yet)
    running_obs: tuple[np.ndarray, np.ndarray]  # the cached ``running`` and ``release`` arrays

    def __init__(
        self,
        max_queue: int,
        max_regions: int,
        scales: ObsScales,
        enabled: Collection[str] = (),
        preempt_window: int = 0,
        announce_window: int = 0,
    ) -> None:
        self.max_queue = max_queue
        self.max_regions = max_regions
        self.preempt_window = preempt_window
        self.announce_window = announce_window
        self.scales = scales
        self.features = active_features(enabled)  # the arrays this encoder fills
        self._encoders = tuple((f.name, f.encode) for f in self.features)
        self._cluster: object = None  # the cluster the static arrays were made for
        self._jobs: object = None  # the jobs (with _cluster) the job tables were made for
        self.grid_hour = None
        self.grid_obs = np.zeros((max_regions, len(GRID_COLUMNS)), dtype=np.float32)

    def start(self, scenario: Scenario) -> None:
        """Static parts of an episode's observations."""
        cl, sc = scenario.cluster, self.scales
        same_cluster = cl is self._cluster
        if not same_cluster:  # a named scenario keeps its cluster: so do its arrays
            self._cluster = cl
            k, kk = cl.n_regions, self.max_regions
            self.k = k
            self.capacity = np.array(cl.capacity, dtype=np.float64)
            self.capacity_list = [float(c) for c in cl.capacity]
            # the running array's log columns' divisors: log10(1 + jobs) / 2, hours / lh
            self.running_log_scale = np.array([[2.0], [sc.log_hours], [sc.log_hours]])
            self.total_gpus = float(cl.total_gpus)
            regions = np.zeros((kk, len(REGION_COLUMNS)), dtype=np.float32)
            regions[:k, 0] = 1.0
            regions[:k, 2] = self.capacity / sc.gpus
            regions[:k, 3] = np.array(cl.prices) / sc.price
            intra = np.array([r.intra_bandwidth for r in cl.regions])
            regions[:k, 4] = np.log10(1.0 + intra * GBPS_PER_BYTE_PER_S)
            regions[:k, 4] /= sc.log_gbps  # in float32, as it always was
            self.regions_static = regions
            bw = np.zeros((2, kk, kk), dtype=np.float32)
            bw[1, :k, :k] = _log_gbps(cl.bandwidth, sc)
            self.bandwidth_static = bw
            self.nominal = np.array(cl.bandwidth_rows, dtype=np.float64)
            healthy = np.zeros((1, kk, kk), dtype=np.float32)
            healthy[0, :k, :k] = 1.0
            healthy[0, range(k), range(k)] = 0.0  # the diagonal
            self.healthy_links = healthy
            self.no_outage = np.zeros((kk, len(REGION_FAULT_COLUMNS)), dtype=np.float32)
        self.bandwidth_rows = None
        self.bandwidth_obs = self.bandwidth_static
        self.grid_hour = None  # a new episode: a new tariff, maybe a new start hour
        self.down_key, self.down_obs = None, self.no_outage
        self.links_key, self.links_obs = None, self.healthy_links
        self.running_key = None
        if same_cluster and scenario.jobs is self._jobs:
            return  # a fixed scenario's next episode: the same jobs, so the same job tables
        self._jobs = scenario.jobs
        lg, lh = sc.log_gbps, sc.log_hours
        self.job_static, self.k_star, self.job_row = {}, {}, {}
        for j, p in scenario.profiles.items():  # they never change during an episode
            self.job_static[j] = (
                math.log10(1.0 + p.single_gpu_exec / SECONDS_PER_HOUR) / lh,
                math.log10(1.0 + p.min_bandwidth_kstar * GBPS_PER_BYTE_PER_S) / lg,
                p.k_star / sc.gpus,
            )
            self.k_star[j] = p.k_star
            self.job_row[j] = len(self.job_row)
        # the same per job as float64 arrays, row job_row[j]: E(1), b(K*), then the static
        # queue columns 3-5, then K* (what the queue array gathers with numpy)
        profiles = scenario.profiles
        self.job_table = np.array(
            [
                (p.single_gpu_exec, p.min_bandwidth_kstar, *self.job_static[j], p.k_star)
                for j, p in profiles.items()
            ],
            dtype=np.float64,
        ).reshape(len(profiles), 6)

    def encode(self, d: Decision) -> dict[str, np.ndarray]:
        """The float arrays of this encoder's :data:`FEATURES` at decision ``d``."""
        return {name: encode(self, d) for name, encode in self._encoders}


# ------------------------------------------------------------------------ the four arrays
def _regions(enc: ObservationEncoder, d: Decision) -> np.ndarray:
    regions: np.ndarray = enc.regions_static.copy()
    regions[: enc.k, 1] = np.asarray(d.sim.free_gpus, dtype=np.float64) / enc.capacity
    return regions


def _bandwidth(enc: ObservationEncoder, d: Decision) -> np.ndarray:
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


#: From this many visible jobs on, the ``queue`` array is filled column by column with numpy.
COLUMNS_FROM = 48


def _queue(enc: ObservationEncoder, d: Decision) -> np.ndarray:
    q, sc, log10, h = d.queue, enc.scales, math.log10, SECONDS_PER_HOUR
    out = np.zeros((enc.max_queue, len(QUEUE_COLUMNS)), dtype=np.float32)
    ids = q.job_ids
    n = len(ids)
    if not n:
        return out
    e_max, b_max = q.pending_e1_max, q.pending_bkstar_max
    now, lh, kk, price = q.time, sc.log_hours, enc.max_regions, sc.price
    if n < COLUMNS_FROM:  # a narrow window: row by row in Python is cheaper
        static, k_star, e1, bk = (
            enc.job_static,
            enc.k_star,
            q.single_gpu_exec,
            q.min_bandwidth_kstar,
        )
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
                    log10(1.0 + (now - q.submit_time[i]) / h) / lh,
                    *preview,
                )
            )
        out[:n] = rows
        return out
    # a wide one: column by column, gathered with numpy from the per-job table; every
    # division is IEEE's either way, so the float64 values (and their float32 casts) are the
    # row-by-row ones
    row = enc.job_row
    table = enc.job_table[[row[j] for j in ids]]
    out[:n, 0] = 1.0
    if e_max > 0:
        out[:n, 1] = table[:, 0] / e_max  # Eq. (9)
    if b_max > 0:
        out[:n, 2] = table[:, 1] / b_max  # Eq. (10)
    out[:n, 3:6] = table[:, 2:5]
    out[:n, 6] = [log10(1.0 + (now - t) / h) / lh for t in q.submit_time]  # math's log10
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
        out[slots, 7] = np.array(gpus, dtype=np.float64) / table[slots, 5]
        out[slots, 8] = np.array(hops, dtype=np.float64) / kk
        out[slots, 9] = logs
        out[slots, 10] = np.array(prices, dtype=np.float64) / price
    return out


def _summary(enc: ObservationEncoder, d: Decision) -> np.ndarray:
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


def _grid(enc: ObservationEncoder, d: Decision) -> np.ndarray:
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
        grid = np.zeros((enc.max_regions, len(GRID_COLUMNS)), dtype=np.float32)
        grid[:k] = [
            (tariff.price_at(r, now) / price, tariff.carbon_at(r, now) / carbon) for r in range(k)
        ]
        enc.grid_hour, enc.grid_obs = hour, grid
    out: np.ndarray = enc.grid_obs.copy()
    return out


def _region_faults(enc: ObservationEncoder, d: Decision) -> np.ndarray:
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


def _link_faults(enc: ObservationEncoder, d: Decision) -> np.ndarray:
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


def _running_state(enc: ObservationEncoder, d: Decision) -> tuple[np.ndarray, np.ndarray]:
    """Both running-job arrays of decision ``d``, computed once per decision (the two
    encoders below share it)."""
    sim = d.sim
    key = (sim.time, sim.running)
    if key == enc.running_key:
        return enc.running_obs
    if key[1]:
        state = _running_arrays(enc, d)
    else:  # nothing runs: every column is log10(1 + 0) or 0 / x, a zero (a reset's case)
        state = (
            np.zeros((enc.max_regions, len(RUNNING_COLUMNS)), dtype=np.float32),
            np.zeros(len(RELEASE_COLUMNS), dtype=np.float32),
        )
    enc.running_key, enc.running_obs = key, state
    return state


def _running_arrays(enc: ObservationEncoder, d: Decision) -> tuple[np.ndarray, np.ndarray]:
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
    per_region = np.zeros((enc.max_regions, len(RUNNING_COLUMNS)), dtype=np.float32)
    per_region[:k, 0::2] = logs.T  # log_jobs, log_next_release_hours, log_mean_remaining_hours
    per_region[:k, 1::2] = [(held[r] / cap[r], first_gpus[r] / cap[r]) for r in range(k)]
    total = enc.total_gpus
    overall = np.zeros(len(RELEASE_COLUMNS), dtype=np.float32)
    if all_gpus > 0:
        overall[:] = (
            math.log10(1.0 + t_next / h) / lh,
            next_gpus / total,
            hour_gpus / total,
            math.log10(1.0 + all_rem / all_gpus / h) / lh,
        )
    return per_region, overall


def _wait_preview(enc: ObservationEncoder, d: Decision) -> np.ndarray:
    sim, q, sc = d.sim, d.queue, enc.scales
    out = np.zeros((enc.max_queue, len(WAIT_PREVIEW_COLUMNS)), dtype=np.float32)
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


def _running(enc: ObservationEncoder, d: Decision) -> np.ndarray:
    out: np.ndarray = _running_state(enc, d)[0].copy()
    return out


def _running_jobs(enc: ObservationEncoder, d: Decision) -> np.ndarray:
    """One row per running job of the preemption window (start order): its size, remaining
    time, attained service, run time, time since its last checkpoint, preemptions so far,
    whether it may be preempted, and, at a decision to preempt, what its preemption would let
    start."""
    out = np.zeros((enc.preempt_window, len(RUNNING_JOB_COLUMNS)), dtype=np.float32)
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


def _release(enc: ObservationEncoder, d: Decision) -> np.ndarray:
    out: np.ndarray = _running_state(enc, d)[1].copy()
    return out


def _announced(enc: ObservationEncoder, d: Decision) -> np.ndarray:
    """One row per announced job of the window (:meth:`Simulator.announced`, the first
    ``announce_window`` in submission order): its shape (the queue's static columns) and
    memory floor, and the time until it is submitted."""
    out = np.zeros((enc.announce_window, len(ANNOUNCED_COLUMNS)), dtype=np.float32)
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


# ------------------------------------------------------------------------------ the table
REGION_COLUMNS = (
    Column("present", "1 for a region of the scenario, 0 for padding"),
    Column("free_frac", "free GPUs / capacity"),
    Column("capacity", "GPUs / `scales.gpus` (128)"),
    Column("price", "$/kWh / `scales.price` (0.35)"),
    Column("log_intra_gbps", "intra-region bandwidth, `log10(1 + Gbps) / 2`"),
)
BANDWIDTH_COLUMNS = (
    Column("residual", "residual bandwidth (capacity minus reservations), `log10(1 + Gbps) / 2`"),
    Column("capacity", "link capacity, `log10(1 + Gbps) / 2`"),
)
QUEUE_COLUMNS = (
    Column("present", "1 for a job, 0 for an empty slot"),
    Column("intensity", "`I_j` (Eq. 9): `E(1)` / its maximum over the pending queue"),
    Column("sensitivity", "`D_j` (Eq. 10): `b(K*)` / its maximum over the pending queue"),
    Column("log_e1_hours", "`E(1)`, `log10(1 + hours) / 4`"),
    Column("log_bkstar_gbps", "`b(K*)`, `log10(1 + Gbps) / 2`"),
    Column("k_star", "K* / 128"),
    Column("log_wait_hours", "wait so far, `log10(1 + hours) / 4`"),
    Column("preview_gpu_frac", "preview: GPUs the placement policy gives the job now / K*"),
    Column("preview_regions", "preview: regions on its path / max_regions"),
    Column("preview_log_exec_hours", "preview: its execution time, `log10(1 + hours) / 4`"),
    Column("preview_price", "preview: its GPU-weighted average $/kWh / 0.35"),
)
SUMMARY_COLUMNS = (
    Column("alpha", "network utilisation alpha (Eq. 11)"),
    Column("log_time_hours", "time, `log10(1 + hours) / 4`"),
    Column("pending", "pending jobs / max_queue"),
    Column("hidden", "pending jobs beyond the window / max_queue"),
    Column("running", "running jobs / max_queue"),
    Column("free_gpu_frac", "free GPUs / total GPUs"),
)
GRID_COLUMNS = (
    Column(
        "price_now",
        "electricity price now, $/kWh / `scales.price` (0.35), not clipped: an hourly price "
        "can be negative (EU-Central's 2023 series dips to -0.30 $/kWh, -0.85 here), so this "
        "column alone is unbounded below (Box low `-inf`), and spikes reach 14 (OC-East)",
        low=-np.inf,
    ),
    Column("carbon_now", "grid carbon intensity now, gCO2e/kWh / `scales.carbon` (600)"),
)
REGION_FAULT_COLUMNS = (
    Column("down", "1 while the region is down (an outage: it offers no GPU), else 0"),
)
LINK_FAULT_COLUMNS = (
    Column(
        "capacity_factor",
        "the link's capacity now / its nominal capacity (the `bandwidth` array's static "
        "`capacity` layer): 1 when healthy, the link change's factor while one is in force",
    ),
)
RUNNING_COLUMNS = (
    Column("log_jobs", "running jobs with a stage in the region, `log10(1 + jobs) / 2`"),
    Column("held_frac", "GPUs the running jobs hold here / capacity"),
    Column(
        "log_next_release_hours",
        "time until the first running job holding GPUs here finishes, `log10(1 + hours) / 4` "
        "(0 when none does)",
    ),
    Column("next_release_frac", "GPUs that finish releases here / capacity"),
    Column(
        "log_mean_remaining_hours",
        "GPU-weighted mean remaining time of the jobs running here, `log10(1 + hours) / 4`",
    ),
)
RELEASE_COLUMNS = (
    Column(
        "log_next_release_hours",
        "time until the next running job finishes anywhere, `log10(1 + hours) / 4` (0 when "
        "nothing runs)",
    ),
    Column("next_release_gpu_frac", "GPUs released at that instant / total GPUs"),
    Column("hour_release_gpu_frac", "GPUs released within the next hour / total GPUs"),
    Column(
        "log_mean_remaining_hours",
        "GPU-weighted mean remaining time of all running jobs, `log10(1 + hours) / 4`",
    ),
)
RUNNING_JOB_COLUMNS = (
    Column("present", "1 for a running job, 0 for an empty slot"),
    Column("gpus", "GPUs it holds / `scales.gpus` (128)"),
    Column(
        "log_remaining_hours",
        "time until it finishes on its placement now, `log10(1 + hours) / 4` (its restart "
        "included; a job writing its preemption checkpoint: until it leaves)",
    ),
    Column(
        "log_attained_gpu_hours",
        "GPU-hours it has held over all its attempts (its attained service), "
        "`log10(1 + GPU-hours) / 6`",
    ),
    Column("log_run_hours", "time since its current attempt started, `log10(1 + hours) / 4`"),
    Column(
        "log_since_checkpoint_hours",
        "computing since its last periodic checkpoint (what `lose-since-checkpoint` would lose), "
        "`log10(1 + hours) / 4`",
    ),
    Column("preemptions", "times it has been preempted / `max_preemptions`"),
    Column(
        "preemptible",
        "1 unless it is writing its preemption checkpoint, has been preempted `max_preemptions` "
        "times or finishes within a checkpoint",
    ),
    Column(
        "beneficiaries",
        "pending jobs its preemption would let start / max_queue (0 at a decision to place a "
        "job: preempt actions are offered at the end of a scheduling pass)",
    ),
    Column(
        "log_best_remaining_hours",
        "the shortest remaining time among those jobs, `log10(1 + hours) / 4` (0 when none)",
    ),
)
ANNOUNCED_COLUMNS = (
    Column("present", "1 for an announced job, 0 for an empty slot"),
    Column("log_e1_hours", "`E(1)`, `log10(1 + hours) / 4` (the queue's column)"),
    Column("log_bkstar_gbps", "`b(K*)`, `log10(1 + Gbps) / 2` (the queue's column)"),
    Column("k_star", "K* / 128 (the queue's column)"),
    Column(
        "memory_floor",
        "the fewest GPUs it needs to fit in GPU memory in any region / `scales.gpus` (128)",
    ),
    Column(
        "log_until_submit_hours",
        "time until it is submitted, `log10(1 + hours) / 4` (> 0: a job submitted now is in "
        "the queue)",
    ),
)
WAIT_PREVIEW_COLUMNS = (
    Column(
        "next_gpu_frac",
        "GPUs the placement policy would give the job right after the next GPU release / K*",
    ),
    Column(
        "next_log_finish_hours",
        "time from now until it would finish if it waits for that release, `log10(1 + hours) / 4`",
    ),
    Column(
        "finish_share",
        "that wait-then-run time / (itself + the execution time if placed now), in (0, 1): "
        "below 1/2 waiting finishes sooner, the `finish-aware` rule's test (0 when the job has "
        "no placement now)",
    ),
)

#: The observation's float arrays, in the order the docs list them. ``obs["action_mask"]``
#: (int8, ``(n_actions,)``) comes with them.
FEATURES: tuple[Feature, ...] = (
    Feature(
        "regions",
        ("max_regions", len(REGION_COLUMNS)),
        "per region (zero rows pad the scenario's regions up to max_regions)",
        REGION_COLUMNS,
        _regions,
    ),
    Feature(
        "bandwidth",
        (len(BANDWIDTH_COLUMNS), "max_regions", "max_regions"),
        "per directed link u -> v (zero diagonal)",
        BANDWIDTH_COLUMNS,
        _bandwidth,
        column_axis=0,
    ),
    Feature(
        "queue",
        ("max_queue", len(QUEUE_COLUMNS)),
        "per slot of the visible window (zero rows for empty slots)",
        QUEUE_COLUMNS,
        _queue,
    ),
    Feature(
        "summary",
        (len(SUMMARY_COLUMNS),),
        "the whole system",
        SUMMARY_COLUMNS,
        _summary,
    ),
    Feature(
        "grid",
        ("max_regions", len(GRID_COLUMNS)),
        "per region, the tariff's price and carbon intensity at the decision's time (zero "
        "rows pad); constant under flat prices, changing on the hour under hourly ones",
        GRID_COLUMNS,
        _grid,
        enabled_by="grid_features",
    ),
    Feature(
        "region_faults",
        ("max_regions", len(REGION_FAULT_COLUMNS)),
        "per region, whether an outage holds it down now (zero rows pad); all zeros in a "
        "scenario without faults",
        REGION_FAULT_COLUMNS,
        _region_faults,
        enabled_by="fault_features",
    ),
    Feature(
        "link_faults",
        (len(LINK_FAULT_COLUMNS), "max_regions", "max_regions"),
        "per directed link u -> v, its capacity now relative to nominal (zero diagonal and "
        "padding); changes only at a link change's start or end",
        LINK_FAULT_COLUMNS,
        _link_faults,
        column_axis=0,
        enabled_by="fault_features",
    ),
    Feature(
        "running",
        ("max_regions", len(RUNNING_COLUMNS)),
        "per region, the running jobs: how many, the GPUs they hold, when the first of them "
        "finishes and what it frees, their mean remaining time (zero rows pad). Remaining times "
        "are the planned finishes: a failure that has not happened yet is not known",
        RUNNING_COLUMNS,
        _running,
        enabled_by="running_features",
    ),
    Feature(
        "release",
        (len(RELEASE_COLUMNS),),
        "the running jobs as a whole: the time to the next GPU release and how much it and the "
        "next hour free (zeros when nothing runs)",
        RELEASE_COLUMNS,
        _release,
        enabled_by="running_features",
    ),
    Feature(
        "wait_preview",
        ("max_queue", len(WAIT_PREVIEW_COLUMNS)),
        "per slot of the window, what waiting for the next GPU release would give the job "
        "(zero rows when nothing runs, for empty slots and when nothing fits then)",
        WAIT_PREVIEW_COLUMNS,
        _wait_preview,
        enabled_by="running_features",
    ),
    Feature(
        "running_jobs",
        ("preempt_window", len(RUNNING_JOB_COLUMNS)),
        "per slot of the preemption window (the first running jobs in start order; zero rows "
        "for empty slots): what a preemption decision reads of each",
        RUNNING_JOB_COLUMNS,
        _running_jobs,
        enabled_by="preempt_window",
    ),
    Feature(
        "announced",
        ("announce_window", len(ANNOUNCED_COLUMNS)),
        "per slot of the calendar window (the first jobs announced but not yet submitted, in "
        "submission order, within the scenario's `announce_h`; zero rows for empty slots, all "
        "zeros without a calendar): what is known of the jobs to come",
        ANNOUNCED_COLUMNS,
        _announced,
        enabled_by="announce_window",
    ),
)

REGION_FEATURES = tuple(c.name for c in REGION_COLUMNS)
BANDWIDTH_LAYERS = tuple(c.name for c in BANDWIDTH_COLUMNS)
QUEUE_FEATURES = tuple(c.name for c in QUEUE_COLUMNS)
SUMMARY_FEATURES = tuple(c.name for c in SUMMARY_COLUMNS)
GRID_FEATURES = tuple(c.name for c in GRID_COLUMNS)
REGION_FAULT_FEATURES = tuple(c.name for c in REGION_FAULT_COLUMNS)
LINK_FAULT_LAYERS = tuple(c.name for c in LINK_FAULT_COLUMNS)
RUNNING_FEATURES = tuple(c.name for c in RUNNING_COLUMNS)
RELEASE_FEATURES = tuple(c.name for c in RELEASE_COLUMNS)
WAIT_PREVIEW_FEATURES = tuple(c.name for c in WAIT_PREVIEW_COLUMNS)
RUNNING_JOB_FEATURES = tuple(c.name for c in RUNNING_JOB_COLUMNS)
ANNOUNCED_FEATURES = tuple(c.name for c in ANNOUNCED_COLUMNS)
#: The ``GeoPipeEnv`` keywords that add optional arrays, in table order (one keyword may add
#: several arrays: ``fault_features`` adds ``region_faults`` and ``link_faults``).
OPTIONAL_FEATURES: tuple[str, ...] = tuple(
    dict.fromkeys(f.enabled_by for f in FEATURES if f.enabled_by)
)


def feature(name: str) -> Feature:
    """The entry of :data:`FEATURES` called ``name``."""
    for f in FEATURES:
        if f.name == name:
            return f
    raise KeyError(name)


def active_features(enabled: Collection[str] = ()) -> tuple[Feature, ...]:
    """The arrays of :data:`FEATURES` an observation has: every one that is always there, and
    the optional ones whose ``enabled_by`` keyword is in ``enabled``."""
    unknown = set(enabled) - set(OPTIONAL_FEATURES)
    if unknown:
        raise KeyError(f"no optional feature is enabled by {sorted(unknown)}")
    return tuple(f for f in FEATURES if f.enabled_by is None or f.enabled_by in enabled)


def observation_space(
    max_queue: int,
    max_regions: int,
    n_actions: int,
    enabled: Collection[str] = (),
    preempt_window: int = 0,
    announce_window: int = 0,
) -> spaces.Dict:
    """The Dict space of the active :data:`FEATURES` (see :func:`active_features`) plus the
    action mask."""
    arrays: dict[str, spaces.Space[Any]] = {
        f.name: f.space(max_queue, max_regions, preempt_window, announce_window)
        for f in active_features(enabled)
    }
    arrays["action_mask"] = spaces.MultiBinary(n_actions)
    return spaces.Dict(arrays)


def flat_space(space: spaces.Dict) -> spaces.Box:
    """One Box holding every array of ``space`` (for ``MlpPolicy``), in :func:`flatten`'s
    order, with each array's lower bounds (0 for the mask) and no upper bound."""
    parts = space.spaces.values()
    size = int(sum(np.prod(s.shape or ()) for s in parts))
    lows = [
        np.ravel(s.low) if isinstance(s, spaces.Box) else np.zeros(int(np.prod(s.shape or ())))
        for s in parts
    ]
    low = np.concatenate(lows).astype(np.float32) if lows else np.zeros(0, np.float32)
    if not low.any():  # all zero: the scalar-bounded Box the v1 spaces always had
        return spaces.Box(0.0, np.inf, shape=(size,), dtype=np.float32)
    return spaces.Box(low, np.full(size, np.inf, np.float32), dtype=np.float32)


def flatten(obs: dict[str, np.ndarray], space: spaces.Dict) -> np.ndarray:
    """The arrays of ``obs`` raveled and concatenated in ``space``'s key order (alphabetical,
    as :func:`gymnasium.spaces.flatten` does), as float32."""
    return np.concatenate([np.ravel(obs[key]).astype(np.float32) for key in space])


def layout_space(space: spaces.Dict, observation: str) -> spaces.Space[Any]:
    """The observation space of layout ``observation`` (see :func:`layout`)."""
    if observation == "dict":
        return space
    if observation == "flat":
        return flat_space(space)
    n = int(np.prod(space["action_mask"].shape or ()))  # MultiBinary(n_actions)
    arrays = spaces.Dict({k: s for k, s in space.spaces.items() if k != "action_mask"})
    return spaces.Dict(
        {
            "observations": flat_space(arrays),
            "action_mask": spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32),
        }
    )


def layout(obs: dict[str, np.ndarray], space: spaces.Dict, observation: str) -> Any:
    """``obs`` (the Dict of ``space``) in layout ``observation``: ``"dict"`` as it is,
    ``"flat"`` one float32 vector (:func:`flatten`, the mask included), ``"masked"``
    ``{"observations": the features flattened, "action_mask": the mask as float32}``, the
    layout RLlib's action-masking RL module reads."""
    if observation == "dict":
        return obs
    if observation == "flat":
        return flatten(obs, space)
    mask = obs["action_mask"].astype(np.float32)
    parts = [np.ravel(obs[key]).astype(np.float32) for key in space if key != "action_mask"]
    return {"observations": np.concatenate(parts), "action_mask": mask}


def markdown_table() -> str:
    """The Observation tables of ``docs/environment.md``: the arrays, then their columns."""
    lines = ["| key | shape | content |", "|---|---|---|"]
    for f in FEATURES:
        shape = "(" + ", ".join(str(d) for d in f.shape) + (",)" if len(f.shape) == 1 else ")")
        on = " > 0" if f.enabled_by in ("preempt_window", "announce_window") else "=True"
        optional = f" (optional: `{f.enabled_by}{on}`)" if f.enabled_by else ""
        lines.append(f"| `{f.name}` | {shape} | {f.description}{optional} |")
    lines += ["| `action_mask` | (n_actions,) | the legal actions (int8) |", ""]
    lines += ["| key | index | column | content |", "|---|---|---|---|"]
    for f in FEATURES:
        for i, c in enumerate(f.columns):
            lines.append(f"| `{f.name}` | {i} | `{c.name}` | {c.description} |")
    return "\n".join(lines) + "\n"
