"""The observation's feature table, :data:`FEATURES`: one :class:`Feature` per float32 array,
read by the encoder, the spaces, the docs and the tests.

Each entry has a name, a shape in terms of ``max_regions``, ``max_queue``, ``preempt_window``
and ``announce_window``, a description, its named columns (with their lower bounds), the
function that computes it (from the modules of its concept: :mod:`.cluster`, :mod:`.pending`,
:mod:`.running`, :mod:`.grid`, :mod:`.faults`, :mod:`.announced`) and, for an optional array,
the :class:`~bacepipe_env.envs.geopipe.GeoPipeEnv` keyword that turns it on (``enabled_by``).
Every column is defined here and only here, but for a job field's (the ``queue`` and
``announced`` columns of a row of :data:`~bacepipe_env.core.job_fields.JOB_FIELDS`, after
those arrays' own columns of the job); the ``*_FEATURES`` / ``*_LAYERS`` tuples name them in
index order. :func:`active_features` picks the arrays of an environment and
:func:`markdown_table` writes the Observation tables of ``docs/environment.md`` (a test checks
that the docs carry them).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from gymnasium import spaces

from ...core.job_fields import JobField, announced_fields, queue_fields
from .announced import encode_announced
from .cluster import encode_bandwidth, encode_regions, encode_summary
from .decision import Decision
from .faults import encode_link_faults, encode_region_faults
from .grid import encode_grid
from .pending import encode_queue, encode_replicas, encode_wait_preview
from .running import encode_release, encode_running, encode_running_jobs

if TYPE_CHECKING:
    from .state import EncoderState

__all__ = [
    "ANNOUNCED_FEATURES",
    "BANDWIDTH_LAYERS",
    "DEADLINE_FEATURES",
    "FEATURES",
    "GRID_FEATURES",
    "LINK_FAULT_LAYERS",
    "OPTIONAL_FEATURES",
    "QUEUE_FEATURES",
    "REGION_FAULT_FEATURES",
    "REGION_FEATURES",
    "RELEASE_FEATURES",
    "REPLICA_FEATURES",
    "RUNNING_FEATURES",
    "RUNNING_JOB_FEATURES",
    "SUMMARY_FEATURES",
    "WAIT_PREVIEW_FEATURES",
    "Column",
    "Feature",
    "active_features",
    "feature",
    "markdown_table",
]


@dataclass(frozen=True)
class Column:
    """One named column of a feature array (a layer, for ``bandwidth``), and the lower bound
    its values keep (the observation space's ``low``; every upper bound is ``inf``)."""

    name: str
    description: str
    low: float = 0.0
    enabled_by: str | None = None  # an optional column's GeoPipeEnv keyword (Feature.extra)


@dataclass(frozen=True)
class Feature:
    """One float32 array of the observation.

    ``shape`` holds ints and the names ``"max_regions"``, ``"max_queue"``,
    ``"preempt_window"``, ``"announce_window"`` and ``"replica_choices"``; ``columns`` name
    the axis ``column_axis`` (the last one, the first for ``bandwidth``). ``enabled_by`` is
    None for an array every observation has, else the ``GeoPipeEnv`` keyword (a bool, default
    False, or ``preempt_window`` / ``announce_window`` / ``replica_choices`` > 0) that adds it.
    ``extra`` are optional columns that follow ``columns`` when their own ``enabled_by``
    keyword is on (``deadline_features``), in order; ``shape`` counts ``columns`` alone, and
    :meth:`resolve` and :meth:`space` add the extra columns of the ``enabled`` keywords.
    """

    name: str
    shape: tuple[int | str, ...]
    description: str
    columns: tuple[Column, ...]
    encode: Callable[[EncoderState, Decision], np.ndarray]
    column_axis: int = -1
    enabled_by: str | None = None
    extra: tuple[Column, ...] = ()

    def resolve(
        self,
        max_queue: int,
        max_regions: int,
        preempt_window: int = 0,
        announce_window: int = 0,
        replica_choices: int = 0,
        enabled: Collection[str] = (),
    ) -> tuple[int, ...]:
        """The concrete shape for a window of ``max_queue``, ``max_regions`` regions, a
        preemption window of ``preempt_window`` running jobs, ``announce_window`` announced
        jobs and ``replica_choices`` counts of data-parallel copies, with the extra columns
        of the keywords in ``enabled``."""
        sizes = {
            "max_queue": max_queue,
            "max_regions": max_regions,
            "preempt_window": preempt_window,
            "announce_window": announce_window,
            "replica_choices": replica_choices,
        }
        shape = [sizes[d] if isinstance(d, str) else d for d in self.shape]
        shape[self.column_axis] += len(self.active_columns(enabled)) - len(self.columns)
        return tuple(shape)

    def active_columns(self, enabled: Collection[str] = ()) -> tuple[Column, ...]:
        """The columns an observation has with the keywords ``enabled`` on: :attr:`columns`,
        then each of :attr:`extra` whose ``enabled_by`` is among them."""
        return self.columns + tuple(c for c in self.extra if c.enabled_by in enabled)

    @property
    def column_names(self) -> tuple[str, ...]:
        """The columns' names, in index order (without the optional :attr:`extra` ones)."""
        return tuple(c.name for c in self.columns)

    def space(
        self,
        max_queue: int,
        max_regions: int,
        preempt_window: int = 0,
        announce_window: int = 0,
        replica_choices: int = 0,
        enabled: Collection[str] = (),
    ) -> spaces.Box:
        """This array's Box (with the extra columns of the keywords ``enabled``): each
        column's ``low`` (broadcast along the other axes) to inf."""
        shape = self.resolve(
            max_queue, max_regions, preempt_window, announce_window, replica_choices, enabled
        )
        lows = [c.low for c in self.active_columns(enabled)]
        if not any(lows):  # all zero: the scalar-bounded Box the v1 spaces always had
            return spaces.Box(0.0, np.inf, shape=shape, dtype=np.float32)
        axis = self.column_axis % len(shape)
        view = [1] * len(shape)
        view[axis] = len(lows)
        low = np.broadcast_to(np.array(lows, dtype=np.float32).reshape(view), shape)
        return spaces.Box(low, np.full(shape, np.inf, np.float32), dtype=np.float32)


# ------------------------------------------------------------------------------ the table


def _job_columns(rows: tuple[JobField, ...], array: str) -> tuple[Column, ...]:
    """The columns the job fields ``rows`` (of ``JOB_FIELDS``) have in the array ``array``."""
    cols = [getattr(f, array) for f in rows]
    return tuple(Column(c.name, c.description, c.low) for c in cols)


#: The deadline columns (``deadline_features=True``; semantics §15) that follow a job's row of
#: the ``queue`` and ``announced`` arrays; :mod:`.deadlines` computes them. The times are in
#: the time columns' hours scale, signed: ``sign(x) * log10(1 + abs(x) / 1 h) / log_hours``.
DEADLINE_COLUMNS = (
    Column(
        "has_deadline",
        "1 for a job with a deadline (semantics §15), else 0, and then 0 in the next two "
        "(with `deadline_features=True`)",
        enabled_by="deadline_features",
    ),
    Column(
        "log_to_deadline_hours",
        "time to its deadline, x = `due - now` hours, as `sign(x) * log10(1 + abs(x)) / 4`: "
        "< 0 once it is overdue (with `deadline_features=True`)",
        low=-np.inf,
        enabled_by="deadline_features",
    ),
    Column(
        "log_slack_hours",
        "its slack `due - now - E*` (E* its isolated run time, the snapshot's "
        "`ideal_execution`), the same scale: < 0 when, started now, it would finish late even "
        "in E* (with `deadline_features=True`)",
        low=-np.inf,
        enabled_by="deadline_features",
    ),
)
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
    *_job_columns(queue_fields(), "queue"),  # log_wait_hours: the submit time's
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
REPLICA_COLUMNS = (
    Column("legal", "1 when the job may start now with this many copies (the action's mask)"),
    Column("gpu_frac", "GPUs the copies would hold / the cluster's GPUs"),
    Column("log_exec_hours", "their execution time, `log10(1 + hours) / 4`"),
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
    *_job_columns(announced_fields(), "announced"),  # log_until_submit_hours: the submit's
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
        encode_regions,
    ),
    Feature(
        "bandwidth",
        (len(BANDWIDTH_COLUMNS), "max_regions", "max_regions"),
        "per directed link u -> v (zero diagonal)",
        BANDWIDTH_COLUMNS,
        encode_bandwidth,
        column_axis=0,
    ),
    Feature(
        "queue",
        ("max_queue", len(QUEUE_COLUMNS)),
        "per slot of the visible window (zero rows for empty slots)",
        QUEUE_COLUMNS,
        encode_queue,
        extra=DEADLINE_COLUMNS,
    ),
    Feature(
        "summary",
        (len(SUMMARY_COLUMNS),),
        "the whole system",
        SUMMARY_COLUMNS,
        encode_summary,
    ),
    Feature(
        "grid",
        ("max_regions", len(GRID_COLUMNS)),
        "per region, the tariff's price and carbon intensity at the decision's time (zero "
        "rows pad); constant under flat prices, changing on the hour under hourly ones",
        GRID_COLUMNS,
        encode_grid,
        enabled_by="grid_features",
    ),
    Feature(
        "region_faults",
        ("max_regions", len(REGION_FAULT_COLUMNS)),
        "per region, whether an outage holds it down now (zero rows pad); all zeros in a "
        "scenario without faults",
        REGION_FAULT_COLUMNS,
        encode_region_faults,
        enabled_by="fault_features",
    ),
    Feature(
        "link_faults",
        (len(LINK_FAULT_COLUMNS), "max_regions", "max_regions"),
        "per directed link u -> v, its capacity now relative to nominal (zero diagonal and "
        "padding); changes only at a link change's start or end",
        LINK_FAULT_COLUMNS,
        encode_link_faults,
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
        encode_running,
        enabled_by="running_features",
    ),
    Feature(
        "release",
        (len(RELEASE_COLUMNS),),
        "the running jobs as a whole: the time to the next GPU release and how much it and the "
        "next hour free (zeros when nothing runs)",
        RELEASE_COLUMNS,
        encode_release,
        enabled_by="running_features",
    ),
    Feature(
        "wait_preview",
        ("max_queue", len(WAIT_PREVIEW_COLUMNS)),
        "per slot of the window, what waiting for the next GPU release would give the job "
        "(zero rows when nothing runs, for empty slots and when nothing fits then)",
        WAIT_PREVIEW_COLUMNS,
        encode_wait_preview,
        enabled_by="running_features",
    ),
    Feature(
        "running_jobs",
        ("preempt_window", len(RUNNING_JOB_COLUMNS)),
        "per slot of the preemption window (the first running jobs in start order; zero rows "
        "for empty slots): what a preemption decision reads of each",
        RUNNING_JOB_COLUMNS,
        encode_running_jobs,
        enabled_by="preempt_window",
    ),
    Feature(
        "announced",
        ("announce_window", len(ANNOUNCED_COLUMNS)),
        "per slot of the calendar window (the first jobs announced but not yet submitted, in "
        "submission order, within the scenario's `announce_h`; zero rows for empty slots, all "
        "zeros without a calendar): what is known of the jobs to come",
        ANNOUNCED_COLUMNS,
        encode_announced,
        enabled_by="announce_window",
        extra=DEADLINE_COLUMNS,
    ),
    Feature(
        "replicas",
        ("max_queue", "replica_choices", len(REPLICA_COLUMNS)),
        "per slot of the window and per count of data-parallel copies (1, 2, ...; semantics "
        "§3e): whether placing the job with that many copies is legal now, and what it would "
        "hold and take (zeros where it is not)",
        REPLICA_COLUMNS,
        encode_replicas,
        enabled_by="replica_choices",
    ),
)

REGION_FEATURES = tuple(c.name for c in REGION_COLUMNS)
REPLICA_FEATURES = tuple(c.name for c in REPLICA_COLUMNS)
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
#: The optional columns ``deadline_features=True`` appends to ``queue`` and ``announced`` rows.
DEADLINE_FEATURES = tuple(c.name for c in DEADLINE_COLUMNS)
#: The ``GeoPipeEnv`` keywords that add optional arrays, in table order (one keyword may add
#: several arrays: ``fault_features`` adds ``region_faults`` and ``link_faults``), then those
#: that add optional columns (``deadline_features``: the ``queue``'s and ``announced``'s).
OPTIONAL_FEATURES: tuple[str, ...] = tuple(
    dict.fromkeys(
        [f.enabled_by for f in FEATURES if f.enabled_by]
        + [c.enabled_by for f in FEATURES for c in f.extra if c.enabled_by]
    )
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


def markdown_table() -> str:
    """The Observation tables of ``docs/environment.md``: the arrays, then their columns."""
    lines = ["| key | shape | content |", "|---|---|---|"]
    for f in FEATURES:
        shape = "(" + ", ".join(str(d) for d in f.shape) + (",)" if len(f.shape) == 1 else ")")
        windows = ("preempt_window", "announce_window", "replica_choices")
        on = " > 0" if f.enabled_by in windows else "=True"
        optional = f" (optional: `{f.enabled_by}{on}`)" if f.enabled_by else ""
        for kw in dict.fromkeys(c.enabled_by for c in f.extra):
            n = sum(c.enabled_by == kw for c in f.extra)
            optional += f"; {n} more columns with `{kw}=True`"
        lines.append(f"| `{f.name}` | {shape} | {f.description}{optional} |")
    lines += ["| `action_mask` | (n_actions,) | the legal actions (int8) |", ""]
    lines += ["| key | index | column | content |", "|---|---|---|---|"]
    for f in FEATURES:
        for i, c in enumerate(f.columns + f.extra):
            lines.append(f"| `{f.name}` | {i} | `{c.name}` | {c.description} |")
    return "\n".join(lines) + "\n"
