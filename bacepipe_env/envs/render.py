"""Rendering of :class:`~bacepipe_env.envs.geopipe.GeoPipeEnv`: a text snapshot and a GPU timeline.

The environment copies what a frame needs into a :class:`RenderSnapshot` (plain data, no
reference to the simulator or to the environment) with :func:`capture`; :func:`render_ansi`
turns it into text and :func:`render_rgb` into a Gantt-style image, one band per region whose
height is proportional to the region's GPU capacity. :func:`assign_slots` is the pure function
that lays the jobs out on numbered GPU slots inside each band. :func:`run_snapshot` makes the
snapshot of a finished run from its records (every attempt of every job), and
:func:`save_timeline` writes a snapshot's timeline as a PNG (``bacepipe simulate --plot``).
This module knows nothing of the environment class.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from ..core.cluster import Cluster
from ..core.placement import Placement
from ..core.records import RunResult
from ..core.simulator import Simulator
from ..core.units import SECONDS_PER_HOUR
from ..errors import BacepipeError
from ..outputs import save_figure

__all__ = [
    "LISTED_MODES",
    "RGB_NEEDS_MATPLOTLIB",
    "TIMELINE_NEEDS_MATPLOTLIB",
    "QueueRow",
    "RenderSnapshot",
    "RunningRow",
    "TimelineEntry",
    "assign_slots",
    "capture",
    "render_ansi",
    "render_rgb",
    "rgb_available",
    "run_snapshot",
    "save_timeline",
    "snapshot",
]

K = TypeVar("K", bound=Hashable)

#: The one-line error of ``rgb_array`` without matplotlib (the ``viz`` extra).
RGB_NEEDS_MATPLOTLIB = "rendering rgb_array needs matplotlib: pip install 'bacepipe-env[viz]'"
#: The one-line error of :func:`save_timeline` without matplotlib.
TIMELINE_NEEDS_MATPLOTLIB = "the GPU timeline needs matplotlib: pip install 'bacepipe-env[viz]'"

#: Figure size (inches) and resolution of :func:`render_rgb`: frames are 800 x 400 pixels.
FIG_SIZE = (8.0, 4.0)
FIG_DPI = 100
#: Most jobs listed in the image's legend; with more, the legend is left out.
MAX_LEGEND_JOBS = 16
#: Narrowest bar drawn (pixels), so short or just-started jobs stay visible.
MIN_BAR_PX = 2.0


@dataclass(frozen=True)
class QueueRow:
    """One visible queue slot. Times in hours; ``preview`` is the placement the policy would
    give the job now (``EA-East:48 > US-East-2:12``) or ``-``."""

    slot: int
    job_id: int
    name: str
    model: str
    dataset: str
    k_star: int
    e1_hours: float
    wait_hours: float
    preview: str


@dataclass(frozen=True)
class RunningRow:
    """One running job: its path as text and its start and planned finish (hours)."""

    job_id: int
    name: str
    path: str
    start_hours: float
    finish_hours: float


@dataclass(frozen=True)
class TimelineEntry:
    """A started job (running or finished): GPUs per region index, start and finish (s).

    For a running job ``finish`` is the planned completion, later than the snapshot's time.
    A job that ran more than once (restarted after a fault, preempted, resized) has one entry
    per attempt in :func:`run_snapshot`'s timeline, all with its ``job_id``.
    """

    job_id: int
    name: str
    gpus: tuple[int, ...]
    start: float
    finish: float


@dataclass(frozen=True)
class RenderSnapshot:
    """Everything one frame shows, as plain data. Times in seconds unless named ``_hours``."""

    scenario: str
    time: float
    region_names: tuple[str, ...]
    capacity: tuple[int, ...]
    free: tuple[int, ...]
    prices: tuple[float, ...]  # $/kWh
    alpha: float  # Eq. (11) network utilisation
    queue: tuple[QueueRow, ...]
    n_pending: int
    max_queue: int
    running: tuple[RunningRow, ...]
    finished: int
    total_jobs: int
    timeline: tuple[TimelineEntry, ...]

    @property
    def time_hours(self) -> float:
        """The snapshot's time in hours."""
        return self.time / SECONDS_PER_HOUR


def _job_name(name: str, job_id: int) -> str:
    return name if name else f"job{job_id}"


class _Renderable(Protocol):
    def render_snapshot(self) -> RenderSnapshot: ...


def snapshot(env: _Renderable) -> RenderSnapshot:
    """``env.render_snapshot()``: the frame of an environment (after ``reset()``)."""
    return env.render_snapshot()


def capture(
    sim: Simulator,
    window: Sequence[int],
    previews: Sequence[Placement | None],
    max_queue: int,
) -> RenderSnapshot:
    """Copy the state a frame shows out of ``sim``: the visible ``window`` (job ids) with each
    job's placement preview (``None``: none that can start), and the running and finished jobs."""
    cluster = sim.cluster
    names = cluster.names
    now = sim.time
    h = SECONDS_PER_HOUR

    queue: list[QueueRow] = []
    for slot, (job_id, preview) in enumerate(zip(window, previews)):
        prof = sim.profile(job_id)
        job = prof.job
        queue.append(
            QueueRow(
                slot=slot,
                job_id=job_id,
                name=_job_name(job.name, job_id),
                model=job.model.name,
                dataset=job.dataset,
                k_star=prof.k_star,
                e1_hours=prof.single_gpu_exec / h,
                wait_hours=max(0.0, now - job.submit_time) / h,
                preview=preview.describe(names) if preview is not None and preview.path else "-",
            )
        )

    running_ids = sim.running
    running_set = set(running_ids)
    running: list[RunningRow] = []
    for job_id in running_ids:
        start, placement, finish = sim.job_state(job_id)
        if placement is None:
            continue
        running.append(
            RunningRow(
                job_id=job_id,
                name=_job_name(sim.profile(job_id).job.name, job_id),
                path=placement.describe(names),
                start_hours=start / h,
                finish_hours=(finish if finish is not None else now) / h,
            )
        )

    k = cluster.n_regions
    timeline: list[TimelineEntry] = []
    finished = 0
    for job in sim.scenario.jobs:
        start, placement, finish = sim.job_state(job.job_id)
        if placement is None:
            continue
        if job.job_id not in running_set:
            finished += 1
        gpus = [0] * k
        for r, g in zip(placement.path, placement.gpus):
            gpus[r] += g
        timeline.append(
            TimelineEntry(
                job_id=job.job_id,
                name=_job_name(job.name, job.job_id),
                gpus=tuple(gpus),
                start=start,
                finish=finish if finish is not None else now,
            )
        )
    timeline.sort(key=lambda e: (e.start, e.job_id))

    return RenderSnapshot(
        scenario=sim.scenario.name,
        time=now,
        region_names=tuple(names),
        capacity=tuple(cluster.capacity),
        free=tuple(sim.free_gpus),
        prices=tuple(cluster.prices),
        alpha=float(sim.network_utilization),
        queue=tuple(queue),
        n_pending=len(sim.pending),
        max_queue=max_queue,
        running=tuple(running),
        finished=finished,
        total_jobs=sim.n_jobs,
        timeline=tuple(timeline),
    )


def run_snapshot(result: RunResult, cluster: Cluster) -> RenderSnapshot:
    """The last frame of a finished run: ``result``'s records on ``cluster`` (the scenario's),
    every attempt of every job as a :class:`TimelineEntry` (GPUs per region over all its
    data-parallel copies), the time at the last finish, the queue empty and every GPU free.
    The network utilisation it does not record is 0."""
    k = cluster.n_regions
    timeline: list[TimelineEntry] = []
    for r in result.records:
        runs = [(a.start, a.end, a.placement) for a in r.attempts] or [
            (r.start_time, r.finish_time, r.placement)
        ]
        for start, end, placement in runs:
            assert isinstance(placement, Placement)  # Attempt types it loosely
            gpus = [0] * k
            for region, n in placement.allocation.items():
                gpus[region] += n
            timeline.append(TimelineEntry(r.job_id, r.name, tuple(gpus), start, end))
    timeline.sort(key=lambda e: (e.start, e.job_id))
    n = len(result.records)
    return RenderSnapshot(
        scenario=result.scenario,
        time=max((e.finish for e in timeline), default=0.0),
        region_names=tuple(cluster.names),
        capacity=tuple(cluster.capacity),
        free=tuple(cluster.capacity),
        prices=tuple(cluster.prices),
        alpha=0.0,
        queue=(),
        n_pending=0,
        max_queue=0,
        running=(),
        finished=n,
        total_jobs=n,
        timeline=tuple(timeline),
    )


# ---------------------------------------------------------------------------- slot layout
def assign_slots(
    capacity: Sequence[int], intervals: Mapping[K, tuple[float, float, Sequence[int]]]
) -> dict[K, list[tuple[int, int, int]]]:
    """Lay jobs out on numbered GPU slots: ``slot 0 .. capacity[r] - 1`` in each region.

    ``intervals`` maps a job to ``(start, finish, gpus per region index)``. Starts and finishes
    are replayed in time order (finishes first at the same instant, then starts in the mapping's
    order) and each starting job takes the lowest free slot indices of each of its regions.
    Returns, per job, its contiguous runs ``(region, first_slot, n_slots)`` sorted by region and
    slot. Raises ValueError if a region would run out of slots or a job's GPU counts do not
    have one entry per region.
    """
    k = len(capacity)
    free: list[set[int]] = [set(range(int(c))) for c in capacity]
    held: dict[K, list[tuple[int, list[int]]]] = {}
    # (time, kind, order, job); kind 0 = finish, 1 = start, 2 = finish of a zero-length job
    events: list[tuple[float, int, int, K]] = []
    for order, (job, (start, finish, gpus)) in enumerate(intervals.items()):
        if len(gpus) != k:
            raise ValueError(f"job {job!r}: {len(gpus)} GPU counts for {k} regions")
        t0, t1 = float(start), float(finish)
        events.append((t0, 1, order, job))
        events.append((t1, 0, order, job) if t1 > t0 else (t0, 2, order, job))
    events.sort(key=lambda e: (e[0], e[1], e[2]))

    runs: dict[K, list[tuple[int, int, int]]] = {job: [] for job in intervals}
    for t, kind, _, job in events:
        if kind != 1:
            for r, slots in held.pop(job, []):
                free[r].update(slots)
            continue
        taken: list[tuple[int, list[int]]] = []
        for r, n in enumerate(intervals[job][2]):
            if n <= 0:
                continue
            if n > len(free[r]):
                raise ValueError(
                    f"job {job!r} needs {n} slots in region {r} at t={t:g}, "
                    f"{len(free[r])} of {capacity[r]} free"
                )
            slots = sorted(free[r])[:n]
            free[r].difference_update(slots)
            taken.append((r, slots))
            first = prev = slots[0]
            for s in slots[1:]:
                if s != prev + 1:
                    runs[job].append((r, first, prev - first + 1))
                    first = s
                prev = s
            runs[job].append((r, first, prev - first + 1))
        held[job] = taken
    return runs


# ----------------------------------------------------------------------------------- text
def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    """Columns separated by two spaces; column indices in ``right`` are right-aligned."""
    widths = [len(hd) for hd in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)
        ]
        return ("  " + "  ".join(parts)).rstrip()

    return [line(headers), *(line(row) for row in rows)]


def _bar(used: int, total: int, width: int = 20) -> str:
    filled = round(width * used / total) if total > 0 else 0
    if used > 0:
        filled = max(filled, 1)
    return "[" + "#" * filled + "." * (width - filled) + "]"


def render_ansi(snap: RenderSnapshot) -> str:
    """A multi-line text frame: a header (time in hours, alpha, jobs done), the regions (free
    GPUs, price, a busy bar), the visible queue and the running jobs."""
    lines = [
        f"{snap.scenario} | t = {snap.time_hours:.2f} h | alpha = {snap.alpha:.3f} | "
        f"jobs done {snap.finished}/{snap.total_jobs} "
        f"(running {len(snap.running)}, pending {snap.n_pending})"
    ]

    lines.append("Regions")
    region_rows = [
        [name, f"{free}/{cap}", f"{price:.3f}", _bar(cap - free, cap)]
        for name, cap, free, price in zip(snap.region_names, snap.capacity, snap.free, snap.prices)
    ]
    lines += _table(["region", "free/cap", "$/kWh", "busy"], region_rows, right={1, 2})

    shown = len(snap.queue)
    hidden = f", {snap.n_pending - shown} beyond the window" if snap.n_pending > shown else ""
    lines.append(f"Queue ({shown} shown of {snap.n_pending} pending{hidden})")
    if snap.queue:
        queue_rows = [
            [
                str(q.slot),
                q.name,
                q.model,
                q.dataset,
                str(q.k_star),
                f"{q.e1_hours:.1f}",
                f"{q.wait_hours:.2f}",
                q.preview,
            ]
            for q in snap.queue
        ]
        headers = ["slot", "job", "model", "dataset", "K*", "E(1) h", "wait h", "preview"]
        lines += _table(headers, queue_rows, right={0, 4, 5, 6})
    else:
        lines.append("  (empty)")

    lines.append(f"Running ({len(snap.running)})")
    if snap.running:
        run_rows = [
            [r.name, f"{r.start_hours:.2f}", f"{r.finish_hours:.2f}", r.path] for r in snap.running
        ]
        lines += _table(["job", "start h", "finish h", "path"], run_rows, right={1, 2})
    else:
        lines.append("  (none)")
    return "\n".join(line.rstrip() for line in lines) + "\n"


# ---------------------------------------------------------------------------------- image
def _palette() -> list[tuple[float, float, float]]:
    """20 distinct qualitative colours: tab20's dark shades (= tab10) then its light ones."""
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap

    cmap = colormaps["tab20"]
    assert isinstance(cmap, ListedColormap)
    colors = [tuple(float(x) for x in c[:3]) for c in np.asarray(cmap.colors)]
    ordered = colors[0::2] + colors[1::2]
    return [(c[0], c[1], c[2]) for c in ordered]


def _luminance(c: tuple[float, float, float]) -> float:
    return 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]


def rgb_available() -> bool:
    """Whether matplotlib can be found, so :func:`render_rgb` can draw (the ``viz`` extra).

    Looks for the package without importing it (importing matplotlib takes a good fraction of a
    second); an import hook that refuses it counts as not found.
    """
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # a finder refused it, or a stub without __spec__
        return False


#: The render modes an env's ``metadata`` lists: ``rgb_array`` only where it can render, with
#: matplotlib (the viz extra), since Gymnasium's check_env renders every listed mode. Found
#: once, at import.
LISTED_MODES: tuple[str, ...] = ("ansi", "rgb_array") if rgb_available() else ("ansi",)


def render_rgb(snap: RenderSnapshot) -> np.ndarray:
    """A Gantt-style GPU timeline as an ``(H, W, 3)`` uint8 image (800 x 400 pixels).

    One horizontal band per region, its height proportional to the region's capacity; each
    started job fills the GPU slots :func:`assign_slots` gives it from its start to its finish
    (or to the current time while it runs), one colour per job; a dashed line marks the current
    time. Needs matplotlib (the ``viz`` extra).
    """
    fig = _timeline_figure(snap, None, RGB_NEEDS_MATPLOTLIB)
    canvas: Any = fig.canvas  # backend_agg has no type hints
    canvas.draw()
    image: np.ndarray = np.asarray(canvas.buffer_rgba())[..., :3].copy()
    fig.clear()
    return image


def save_timeline(snap: RenderSnapshot, path: str | Path, title: str | None = None) -> Path:
    """Write :func:`render_rgb`'s timeline of ``snap`` to ``path`` as an 800 x 400 PNG, whole
    or not at all (:func:`~bacepipe_env.outputs.save_figure`); ``title`` replaces the frame's
    (time, network utilisation and job counts). Needs matplotlib (the ``viz`` extra)."""
    fig = _timeline_figure(snap, title, TIMELINE_NEEDS_MATPLOTLIB)
    try:
        return save_figure(fig, path)
    finally:
        fig.clear()


def _timeline_figure(snap: RenderSnapshot, title: str | None, needs: str) -> Any:
    """The figure :func:`render_rgb` rasterises (an Agg canvas attached, not yet drawn);
    ``needs`` is the one-line error without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise BacepipeError(needs) from exc

    h = SECONDS_PER_HOUR
    now_h = snap.time / h
    caps = snap.capacity
    total = max(1, sum(caps))
    offsets = [sum(caps[:r]) for r in range(len(caps))]  # region 0 at the top (y inverted)
    entries = snap.timeline
    # by entry, not job: a finished run's job has one entry per attempt
    runs = assign_slots(caps, {i: (e.start, e.finish, e.gpus) for i, e in enumerate(entries)})

    x_max = max([now_h, *(min(e.finish, snap.time) / h for e in entries), 0.0])
    x_max = x_max * 1.02 if x_max > 0 else 1.0
    legend = 0 < len({e.job_id for e in entries}) <= MAX_LEGEND_JOBS

    fig = Figure(figsize=FIG_SIZE, dpi=FIG_DPI, facecolor="white")
    FigureCanvasAgg(fig)  # attaches itself as fig.canvas
    left, right, bottom, top = 0.15, (0.80 if legend else 0.97), 0.12, 0.90
    fig.subplots_adjust(left=left, right=right, bottom=bottom, top=top)
    ax = fig.add_subplot(1, 1, 1)

    # Region bands: alternating background, separators, names at the band centres.
    for r, (off, cap) in enumerate(zip(offsets, caps)):
        if r % 2 == 1:
            ax.axhspan(off, off + cap, color="#f0f0f0", zorder=0, linewidth=0)
        if r > 0:
            ax.axhline(off, color="#888888", linewidth=0.8, zorder=3)
    ax.set_yticks([off + cap / 2 for off, cap in zip(offsets, caps)])
    ax.set_yticklabels(
        [f"{name} ({cap})" for name, cap in zip(snap.region_names, caps)], fontsize=8
    )
    ax.tick_params(axis="y", length=0)
    ax.set_ylabel("region (GPUs)", fontsize=8)

    palette = _palette()
    px_per_hour = (right - left) * FIG_SIZE[0] * FIG_DPI / x_max
    px_per_slot = (top - bottom) * FIG_SIZE[1] * FIG_DPI / total
    ys: list[float] = []
    widths: list[float] = []
    lefts: list[float] = []
    heights: list[float] = []
    colors: list[tuple[float, float, float]] = []
    handles = []
    listed: set[int] = set()
    for i, e in enumerate(entries):
        color = palette[e.job_id % len(palette)]
        start_h = e.start / h
        width_h = max(0.0, min(e.finish, snap.time) / h - start_h)
        # At least a sliver, so a job that just started or ran briefly stays visible.
        width_h = max(width_h, MIN_BAR_PX / px_per_hour)
        for r, first, n in runs[i]:
            ys.append(offsets[r] + first)
            heights.append(n)
            lefts.append(start_h)
            widths.append(width_h)
            colors.append(color)
        if legend and e.job_id not in listed:
            from matplotlib.patches import Patch

            listed.add(e.job_id)
            handles.append(Patch(facecolor=color, edgecolor="none", label=e.name))
        # The job's name inside its biggest rectangle, when it fits.
        if runs[i]:
            r, first, n = max(runs[i], key=lambda run: run[2])
            if width_h * px_per_hour > 7 * len(e.name) + 6 and n * px_per_slot > 11:
                ax.text(
                    start_h + width_h / 2,
                    offsets[r] + first + n / 2,
                    e.name,
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black" if _luminance(color) > 0.6 else "white",
                    zorder=4,
                    clip_on=True,
                )
    if ys:
        ax.barh(
            ys,
            widths,
            height=heights,
            left=lefts,
            align="edge",
            color=colors,
            edgecolor="white",
            linewidth=0.4,
            zorder=2,
        )

    ax.axvline(now_h, color="#d62728", linestyle="--", linewidth=1.2, zorder=5)
    ax.set_xlim(0.0, x_max)
    ax.set_ylim(total, 0)
    ax.set_xlabel("time (hours)", fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    if title is None:
        title = (
            f"{snap.scenario}   t = {now_h:.2f} h   α = {snap.alpha:.3f}   "
            f"done {snap.finished}/{snap.total_jobs}   running {len(snap.running)}   "
            f"pending {snap.n_pending}"
        )
    ax.set_title(title, fontsize=9)
    if handles:
        ax.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize=7,
            frameon=False,
            title="jobs",
            title_fontsize=8,
            ncols=1 if len(handles) <= 12 else 2,
            handlelength=1.0,
            columnspacing=0.8,
        )

    return fig
