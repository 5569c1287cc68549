"""The world a scenario's jobs run in, in one place: a frozen, typed :class:`World` and the
:data:`KNOBS` table that describes each of its settings.

A scenario file gives a cluster, models, datasets and jobs; its world settings (admission,
memory, prices, start hour, egress, load, arrivals, faults and preemption) are the fields of
:class:`World`. Every setting has one row in :data:`KNOBS`: its name, type, range, unit,
scenario-file key, CLI flag, help and default. The loader reads a file's settings into a
``World`` (:meth:`World.from_file`), the keyword arguments of ``load_scenario`` and the CLI's
flags override them (:meth:`World.with_knobs`, :meth:`Knob.from_flag`), and a built
:class:`~bacepipe_env.core.scenario.Scenario` carries the result as ``scenario.world``.

Each value is validated once, here, by its row (:meth:`Knob.check`); the CLI's world flags
and the docs' table of knobs are generated from :data:`KNOBS`. To add a setting, add a field
to :class:`World` and a row to :data:`KNOBS`, and read ``world.<name>`` where it takes effect.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ScenarioError, ValidationError, choices
from .admission import ADMISSION_RULES
from .deadlines import DEFAULT_SLACK, check_deadline_slack
from .elasticity import ELASTICITY_RULES, check_elasticity
from .faults import (
    DEFAULT_CHECKPOINT_INTERVAL_S,
    DEFAULT_MAX_PREEMPTIONS,
    DEFAULT_PREEMPT_CHECKPOINT_S,
    DEFAULT_RESTART_S,
    LLAMA3_FAILURE_RATE,
    LOSE_SINCE_CHECKPOINT,
)
from .limits import LIMITS, Limit, check_limit
from .memory import MODEL_RESERVE_GB
from .perf import MODELS, SCHEDULER_MODELS
from .preemption import PREEMPTION_RULES, check_preemption
from .tariff import DEFAULT_EGRESS_USD_PER_GB, HOURS_PER_YEAR, PRICE_MODELS
from .validate import require_float
from .world_flags import (
    LinkChange,
    Outage,
    choice_flag,
    each,
    elasticity_flag,
    flag_number,
    number_flag,
    number_text,
    parse_link_degrade,
    parse_outage,
    preempt_checkpoint_flag,
    preemption_flag,
    start_hour_flag,
)

__all__ = [
    "KNOBS",
    "MAX_ANNOUNCE_H",
    "Knob",
    "World",
    "check_announce_h",
    "check_knob_names",
    "flag_number",
    "knob_table",
    "number_text",
    "parse_link_degrade",
    "parse_outage",
]

#: The longest calendar of announced jobs, in hours (``announce_h``): 1e6 h, as for
#: ``lookahead="announced:H"``.
MAX_ANNOUNCE_H = 1e6


def check_announce_h(value: Any, field: str = "announce_h") -> float:
    """``announce_h`` as a float: finite hours in [0, 1e6], else a one-line ScenarioError."""
    return require_float(field, value, minimum=0.0, maximum=MAX_ANNOUNCE_H)


# ------------------------------------------------------------------------------ checks
# Each takes (value, field) and returns the value in its canonical form, or raises a one-line
# ScenarioError naming ``field``.


def _bool(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise ScenarioError(field, value, "must be true or false")
    return value


def _choice(names: Sequence[str], what: str) -> Callable[[Any, str], str]:
    def check(value: Any, field: str) -> str:
        if value not in names:
            raise ScenarioError(field, value, f"unknown {what}; choose from: {', '.join(names)}")
        return str(value)

    return check


def _limited(key: str | Limit, *, optional: bool = False) -> Callable[[Any, str], Any]:
    def check(value: Any, field: str) -> Any:
        if optional and value is None:
            return None
        if isinstance(key, Limit):
            return check_limit(field, value, limit=key)
        return check_limit(key, value, field=field)

    return check


def _start_hour(value: Any, field: str) -> float | str:
    if value == "random":
        return "random"
    hour = require_float(field, value, minimum=0.0)
    if hour >= HOURS_PER_YEAR:
        raise ScenarioError(
            field, value, f"must be in [0, {HOURS_PER_YEAR}) (an hour of 2023) or 'random'"
        )
    return hour


def _egress(value: Any, field: str) -> Any:
    # true: AWS's inter-region rate; false: no charge; a K x K matrix is checked by the Tariff,
    # which knows K
    if isinstance(value, bool):
        return DEFAULT_EGRESS_USD_PER_GB if value else None
    if value is None or not isinstance(value, (int, float)):
        if not isinstance(value, list):
            return value
        for i, row in enumerate(value):
            if not isinstance(row, (list, tuple)):
                raise ScenarioError(f"{field}[{i}]", row, "must be a row of the K x K matrix")
        return tuple(tuple(row) for row in value)
    return check_limit("egress_usd_per_gb", value, field=field)


def _preemption(value: Any, field: str) -> str:
    try:
        return check_preemption(value, field=field)
    except ValidationError as err:
        raise ScenarioError(field, value, err.reason) from None


def _elasticity(value: Any, field: str) -> str:
    try:
        return check_elasticity(value, field=field)
    except ValidationError as err:
        raise ScenarioError(field, value, err.reason) from None


def _preempt_checkpoint(value: Any, field: str) -> float | str:
    if value == LOSE_SINCE_CHECKPOINT:
        return LOSE_SINCE_CHECKPOINT
    if isinstance(value, str):
        raise ScenarioError(field, value, f"must be seconds or '{LOSE_SINCE_CHECKPOINT}'")
    return check_limit("preempt_checkpoint_s", value, field=field)  # type: ignore[no-any-return]


def _window(field: str, start: Any, end: Any) -> tuple[float, float]:
    t0 = check_limit("events.start_h", start, field=f"{field}.start_h")
    t1 = check_limit("events.end_h", end, field=f"{field}.end_h")
    if t1 <= t0:
        raise ScenarioError(f"{field}.end_h", end, f"must be after start_h ({t0:g})")
    return t0, t1


def _outages(value: Any, field: str) -> tuple[Outage, ...]:
    out = []
    for i, item in enumerate(_items(value, field)):
        f = f"--outage[{i}]"
        if not isinstance(item, Sequence) or isinstance(item, str) or len(item) != 3:
            raise ScenarioError(f, item, "must be (region, start_h, end_h)")
        region, start, end = item
        out.append((region, *_window(f, start, end)))
    return tuple(out)  # the regions are checked against the cluster's names when it is built


def _link_changes(value: Any, field: str) -> tuple[LinkChange, ...]:
    out = []
    for i, item in enumerate(_items(value, field)):
        f = f"--link-degrade[{i}]"
        if not isinstance(item, Sequence) or isinstance(item, str) or len(item) != 5:
            raise ScenarioError(f, item, "must be (src, dst, factor, start_h, end_h)")
        src, dst, factor, start, end = item
        if src == dst:
            raise ScenarioError(f"{f}.dst", dst, "a link joins two different regions")
        x = check_limit("events.factor (link)", factor, field=f"{f}.factor")
        out.append((src, dst, x, *_window(f, start, end)))
    return tuple(out)


def _items(value: Any, field: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise ScenarioError(field, value, "must be a list")
    return value


# ------------------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Knob:
    """One world setting: its row of :data:`KNOBS`.

    ``type`` and ``range`` read as the docs show them; ``unit`` is the value's unit (empty
    for none); ``key`` the scenario file's field (empty: not a file field; a dotted key lives
    in a section); ``flag`` the CLI flag (empty: Python and ``gym.make`` only) and ``scope``
    the commands that have it (``world``: every command that runs a scenario; ``simulate``:
    only ``bacepipe simulate``, where the experiments sweep or set it themselves). ``check``
    validates a value (from a file or Python) and ``parse`` a flag's text."""

    name: str
    type: str
    range: str
    unit: str
    key: str
    flag: str
    help: str
    default: Any
    check: Callable[[Any, str], Any] = dataclasses.field(repr=False)
    parse: Callable[[str, Any], Any] | None = dataclasses.field(default=None, repr=False)
    metavar: str = ""
    scope: str = "world"
    repeat: bool = False  # the flag may be given many times
    const: Any = None  # the value of the bare flag, if it may be bare
    paper: str = ""  # the paper's values, where it varies this knob

    def from_flag(self, text: Any) -> Any:
        """The value of ``self.flag`` given ``text`` (for a repeatable flag, the list of its
        texts), checked; a bad text is a one-line ValidationError naming the flag."""
        value = text if self.parse is None else self.parse(self.flag, text)
        try:
            return self.check(value, self.name)
        except ValidationError as err:
            raise ValidationError(self.flag, text, err.reason) from None


def _limit(key: str) -> tuple[str, str]:
    """A LIMITS entry's range and unit as the table shows them."""
    lim = LIMITS[key]
    return lim.text(), lim.unit


#: The power usage effectiveness' range: 1 is a facility that spends nothing beyond its IT
#: load; large operators report 1.1-1.2 and the industry's average is about 1.5-1.6 (Uptime
#: Institute's annual surveys).
_PUE = Limit(1.0, 10.0)

#: Every world setting, in :class:`World`'s field order.
KNOBS: Mapping[str, Knob] = {
    k.name: k
    for k in (
        Knob(
            "bandwidth_scale",
            "float",
            *_limit("bandwidth_scale"),
            key="",
            flag="--bandwidth-scale",
            help="multiply every inter-region link (not the intra-region bandwidth)",
            default=1.0,
            check=_limited("bandwidth_scale"),
            parse=number_flag("bandwidth_scale"),
            metavar="X",
            scope="simulate",
            paper="0.3, 0.9, 1.5",
        ),
        Knob(
            "gpu_scale",
            "float",
            *_limit("gpu_scale"),
            key="",
            flag="--gpu-scale",
            help="multiply every region's GPUs, rounded half up, at least 1",
            default=1.0,
            check=_limited("gpu_scale"),
            parse=number_flag("gpu_scale"),
            metavar="X",
            scope="simulate",
            paper="0.5, 0.75, 1.25",
        ),
        Knob(
            "n_jobs",
            "int or None",
            *_limit("workload.n_jobs"),
            key="workload.n_jobs",
            flag="--jobs",
            help="number of jobs: a workload rule draws that many; an explicit job list is cut "
            "or cycled (None: the scenario's)",
            default=None,
            check=_limited("workload.n_jobs", optional=True),
            parse=number_flag("workload.n_jobs"),
            metavar="N",
            scope="simulate",
            paper="8 ... 24",
        ),
        Knob(
            "ignore_memory",
            "bool",
            "true, false",
            "",
            key="ignore_memory",
            flag="--ignore-memory",
            help="the paper's literal semantics: jobs may start on placements that do not fit "
            "in GPU memory (semantics §3a)",
            default=False,
            check=_bool,
            const=True,
        ),
        Knob(
            "admission",
            "str",
            ", ".join(ADMISSION_RULES),
            "",
            key="admission",
            flag="--admission",
            help="when an offered placement starts (semantics §3b)",
            default="greedy",
            check=_choice(tuple(ADMISSION_RULES), "rule"),
            parse=choice_flag(tuple(ADMISSION_RULES)),
            metavar="RULE",
        ),
        Knob(
            "prices",
            "str",
            ", ".join(PRICE_MODELS),
            "",
            key="prices",
            flag="--prices",
            help="electricity prices and carbon: flat, or 2023's hourly wholesale movement "
            "around each region's price (semantics §10)",
            default="flat",
            check=_choice(tuple(PRICE_MODELS), "price model"),
            parse=choice_flag(tuple(PRICE_MODELS)),
            metavar="MODEL",
        ),
        Knob(
            "start_hour",
            "float or 'random'",
            f"[0, {HOURS_PER_YEAR}) or random",
            "h",
            key="start_hour",
            flag="--start-hour",
            help="the hour of 2023 (UTC) that time 0 falls on, or 'random' (drawn from each "
            "seed); matters under hourly prices",
            default=0.0,
            check=_start_hour,
            parse=start_hour_flag,
            metavar="H",
        ),
        Knob(
            "egress_usd_per_gb",
            "float, K x K matrix or None",
            *_limit("egress_usd_per_gb"),
            key="egress_usd_per_gb",
            flag="--egress",
            help="charge cross-region traffic at this rate each way; a file may give a K x K "
            f"matrix (row = sender) or true (bare flag: {DEFAULT_EGRESS_USD_PER_GB}, AWS "
            "inter-region; None: no charge)",
            default=None,
            check=_egress,
            parse=number_flag(dataclasses.replace(LIMITS["egress_usd_per_gb"], open_low=True)),
            metavar="USD_PER_GB",
            const=DEFAULT_EGRESS_USD_PER_GB,
        ),
        Knob(
            "load",
            "float or None",
            *_limit("workload.load"),
            key="workload.load",
            flag="--load",
            help="offered load of an online workload (poisson or philly arrivals): the arrival "
            "rate that keeps this fraction of the GPUs busy (None: the scenario's rate)",
            default=None,
            check=_limited("workload.load", optional=True),
            parse=number_flag("workload.load"),
            metavar="X",
        ),
        Knob(
            "horizon_h",
            "float or None",
            *_limit("workload.horizon_h"),
            key="workload.horizon_h",
            flag="",
            help="keep only the jobs an online workload draws within this many hours",
            default=None,
            check=_limited("workload.horizon_h", optional=True),
        ),
        Knob(
            "outages",
            "list of (region, start_h, end_h)",
            "hours in [0, 1,000,000]",
            "h",
            key="",
            flag="--outage",
            help="take a region down over [start_h, end_h): its attempts end and restart "
            "elsewhere or later; adds to the file's events (semantics §11)",
            default=(),
            check=_outages,
            parse=each(parse_outage),
            metavar="REGION:START_H:END_H",
            repeat=True,
        ),
        Knob(
            "link_changes",
            "list of (src, dst, factor, start_h, end_h)",
            "factor in (0, 1]",
            "",
            key="",
            flag="--link-degrade",
            help="the link src -> dst carries factor of its capacity over [start_h, end_h); "
            "adds to the file's events (semantics §11)",
            default=(),
            check=_link_changes,
            parse=each(parse_link_degrade),
            metavar="SRC:DST:FACTOR:START_H:END_H",
            repeat=True,
        ),
        Knob(
            "gpu_failure_rate",
            "float",
            *_limit("gpu_failure_rate"),
            key="gpu_failure_rate",
            flag="--gpu-failure-rate",
            help="GPU failures, a Poisson process per GPU drawn from the seed (Llama 3 measured "
            f"~{LLAMA3_FAILURE_RATE:.1e}; semantics §11)",
            default=0.0,
            check=_limited("gpu_failure_rate"),
            parse=number_flag("gpu_failure_rate"),
            metavar="PER_GPU_HOUR",
        ),
        Knob(
            "checkpoint_interval_s",
            "float",
            *_limit("checkpoint_interval_s"),
            key="checkpoint_interval_s",
            flag="--checkpoint-interval-s",
            help="a job checkpoints every this many seconds of computing",
            default=DEFAULT_CHECKPOINT_INTERVAL_S,
            check=_limited("checkpoint_interval_s"),
            parse=number_flag("checkpoint_interval_s"),
            metavar="S",
        ),
        Knob(
            "restart_s",
            "float",
            *_limit("restart_s"),
            key="restart_s",
            flag="--restart-s",
            help="seconds to restore the checkpoint on every attempt after the first",
            default=DEFAULT_RESTART_S,
            check=_limited("restart_s"),
            parse=number_flag("restart_s"),
            metavar="S",
        ),
        Knob(
            "preemption",
            "str",
            ", ".join(PREEMPTION_RULES) + ", with settings",
            "",
            key="preemption",
            flag="--preemption",
            help="which running job a pending one may stop, with settings after a colon "
            "(srtf:factor=3,min_run_h=0.5; las:threshold_gpu_h=200); a policy's own rule wins "
            "(semantics §3c)",
            default="none",
            check=_preemption,
            parse=preemption_flag,
            metavar="RULE",
        ),
        Knob(
            "preempt_checkpoint_s",
            f"float or '{LOSE_SINCE_CHECKPOINT}'",
            *_limit("preempt_checkpoint_s"),
            key="preempt_checkpoint_s",
            flag="--preempt-checkpoint",
            help="seconds a preempted job holds its GPUs writing a checkpoint, or "
            f"{LOSE_SINCE_CHECKPOINT} (it stops at once and loses the work since its last "
            "periodic checkpoint)",
            default=DEFAULT_PREEMPT_CHECKPOINT_S,
            check=_preempt_checkpoint,
            parse=preempt_checkpoint_flag,
            metavar=f"S|{LOSE_SINCE_CHECKPOINT}",
        ),
        Knob(
            "max_preemptions",
            "int",
            *_limit("max_preemptions"),
            key="max_preemptions",
            flag="--max-preemptions",
            help="the most times one job may be preempted",
            default=DEFAULT_MAX_PREEMPTIONS,
            check=lambda value, field: int(check_limit("max_preemptions", value, field=field)),
            parse=number_flag("max_preemptions"),
            metavar="N",
        ),
        Knob(
            "max_replicas",
            "int",
            *_limit("jobs.replicas"),
            key="max_replicas",
            flag="--max-replicas",
            help="the most data-parallel copies of its pipeline a job may run, for the jobs "
            "that declare none (at most its micro-batches; 1: one pipeline, the paper's "
            "jobs; above 1 needs model physical; semantics §3e)",
            default=1,
            check=lambda value, field: int(check_limit("jobs.replicas", value, field=field)),
            parse=number_flag("jobs.replicas"),
            metavar="N",
        ),
        Knob(
            "elasticity",
            "str",
            ", ".join(ELASTICITY_RULES) + ", with settings",
            "",
            key="elasticity",
            flag="--elasticity",
            help="how many copies a job starts with and when a running job's copies change "
            "(greedy:min_gain=0.1,min_run_h=1); a policy's own rule wins (semantics §3f)",
            default="none",
            check=_elasticity,
            parse=elasticity_flag,
            metavar="RULE",
        ),
        Knob(
            "announce_h",
            "float",
            f"[0, {MAX_ANNOUNCE_H:,.0f}]",
            "h",
            key="announce_h",
            flag="",
            help="the calendar: how many hours before its submit time each job is announced "
            "(semantics §13); changes what a scheduler may see, not the dynamics",
            default=0.0,
            check=lambda value, field: check_announce_h(value, field),
        ),
        Knob(
            "pue",
            "float",
            _PUE.text(),
            "",
            key="pue",
            flag="--pue",
            help="power usage effectiveness: the facility's energy per unit of GPU energy "
            "(cooling, power delivery); multiplies every GPU's power, so the electricity bill "
            "and the carbon (the paper counts GPUs alone: 1)",
            default=1.0,
            check=_limited(_PUE),
            parse=number_flag(_PUE),
            metavar="X",
        ),
        Knob(
            "model",
            "str",
            ", ".join(MODELS),
            "",
            key="model",
            flag="--model",
            help="the performance model the world runs by: the paper's Eq. (1) as printed, or "
            "the physical one (6N or 8N FLOPs per token over the active parameters, the "
            "backward pass on the reverse links, both directions booked, latency once per "
            "pipeline fill, a per-GPU runtime reserve; semantics §3d)",
            default="paper",
            check=_choice(MODELS, "model"),
            parse=choice_flag(MODELS),
            metavar="MODEL",
        ),
        Knob(
            "scheduler_model",
            "str",
            ", ".join(SCHEDULER_MODELS),
            "",
            key="scheduler_model",
            flag="--scheduler-model",
            help="what the schedulers estimate with: the paper's Eq. (1) whatever the world "
            "('paper'), or the world's own model ('world'), to measure the cost of the mismatch",
            default="paper",
            check=_choice(SCHEDULER_MODELS, "scheduler model"),
            parse=choice_flag(SCHEDULER_MODELS),
            metavar="WHICH",
        ),
        Knob(
            "recompute",
            "bool",
            "true, false",
            "",
            key="recompute",
            flag="--no-recompute",
            help="activations are recomputed in the backward pass (the memory model's "
            "assumption: only each stage's input is kept; under the physical model 2N more "
            "FLOPs per token); the bare flag keeps every layer's activations instead",
            default=True,
            check=_bool,
            const=False,
        ),
        Knob(
            "state_only_floors",
            "bool",
            "true, false",
            "",
            key="state_only_floors",
            flag="--state-only-floors",
            help="memory floors count the training state only, no activations: a variant for "
            "checking how a result depends on the memory model (semantics §3a)",
            default=False,
            check=_bool,
            const=True,
        ),
        Knob(
            "gpu_reserve_gb",
            "float or None",
            *_limit("gpu_reserve_gb"),
            key="gpu_reserve_gb",
            flag="--gpu-reserve-gb",
            help="GPU memory each GPU keeps for the runtime (CUDA context, communication "
            f"buffers, fragmentation), out of the model's reach (None: the model's, "
            f"{MODEL_RESERVE_GB['paper']:g} GB under paper, {MODEL_RESERVE_GB['physical']:g} GB "
            "under physical)",
            default=None,
            check=_limited("gpu_reserve_gb", optional=True),
            parse=number_flag("gpu_reserve_gb"),
            metavar="GB",
        ),
        Knob(
            "deadline_slack",
            "str",
            "none, uniform:LOW,HIGH, fixed:X in (0, 1e6]",
            "x",
            key="deadline_slack",
            flag="--deadline-slack",
            help="a job with no deadline of its own is due at its submit time plus a drawn slack "
            f"x its isolated run time (bare flag: {DEFAULT_SLACK}; semantics §15)",
            default="none",
            check=check_deadline_slack,
            metavar="DIST",
            const=DEFAULT_SLACK,
        ),
    )
}


@dataclass(frozen=True, repr=False)
class World:
    """Every world setting of a scenario, typed and validated once (by :data:`KNOBS`).

    The defaults are the perfect world of the paper: memory checked, ``greedy`` admission,
    flat prices from hour 0, no egress charge, no fault, no preemption, no calendar, GPUs
    counted alone (PUE 1).
    ``n_jobs``, ``load`` and ``horizon_h`` None keep the workload's own; ``outages`` and
    ``link_changes`` add to the scenario file's events. See :data:`KNOBS` for each field's
    meaning, range and unit, and ``docs/scenarios.md`` for the table."""

    bandwidth_scale: float = 1.0
    gpu_scale: float = 1.0
    n_jobs: int | None = None
    ignore_memory: bool = False
    admission: str = "greedy"
    prices: str = "flat"
    start_hour: float | str = 0.0
    egress_usd_per_gb: float | tuple[tuple[float, ...], ...] | None = None
    load: float | None = None
    horizon_h: float | None = None
    outages: tuple[Outage, ...] = ()
    link_changes: tuple[LinkChange, ...] = ()
    gpu_failure_rate: float = 0.0
    checkpoint_interval_s: float = DEFAULT_CHECKPOINT_INTERVAL_S
    restart_s: float = DEFAULT_RESTART_S
    preemption: str = "none"
    preempt_checkpoint_s: float | str = DEFAULT_PREEMPT_CHECKPOINT_S
    max_preemptions: int = DEFAULT_MAX_PREEMPTIONS
    max_replicas: int = 1
    elasticity: str = "none"
    announce_h: float = 0.0
    pue: float = 1.0
    model: str = "paper"
    scheduler_model: str = "paper"
    recompute: bool = True
    state_only_floors: bool = False
    gpu_reserve_gb: float | None = None
    deadline_slack: str = "none"

    def __post_init__(self) -> None:
        for knob in KNOBS.values():
            object.__setattr__(self, knob.name, knob.check(getattr(self, knob.name), knob.name))

    @classmethod
    def from_file(cls, spec: Mapping[str, Any]) -> World:
        """The world settings a parsed scenario file gives (its top-level fields of
        :data:`KNOBS`' keys), the defaults for the rest. A bad value is a one-line
        ScenarioError naming the file's field."""
        given = {}
        for knob in KNOBS.values():
            if knob.key and "." not in knob.key and knob.key in spec:
                given[knob.name] = knob.check(spec[knob.key], knob.key)
        return cls(**given)

    def with_knobs(self, knobs: Mapping[str, Any]) -> World:
        """This world with ``knobs`` (names of :data:`KNOBS`) set; a None value leaves that
        setting as it is, and ``outages`` and ``link_changes`` add to this world's. An unknown
        name or a bad value is a one-line error naming it."""
        check_knob_names(knobs)
        changes = {name: value for name, value in knobs.items() if value is not None}
        for name in ("outages", "link_changes"):
            if name in changes:
                changes[name] = (*getattr(self, name), *KNOBS[name].check(changes[name], name))
        return dataclasses.replace(self, **changes) if changes else self

    def changed(self) -> dict[str, Any]:
        """The settings that differ from :class:`World`'s defaults, by name."""
        return {
            name: value for name, value in self.items() if not _same(value, KNOBS[name].default)
        }

    def items(self) -> Iterator[tuple[str, Any]]:
        """``(name, value)`` for every setting, in :data:`KNOBS` order."""
        return ((name, getattr(self, name)) for name in KNOBS)

    def __repr__(self) -> str:
        """The settings that differ from the defaults: ``World(admission='full', pue=1.2)``,
        which builds the same world again."""
        args = ", ".join(f"{name}={value!r}" for name, value in self.changed().items())
        return f"World({args})"

    @property
    def random_start(self) -> bool:
        """Whether the start hour is drawn from each seed."""
        return self.start_hour == "random"

    @property
    def reserve_bytes(self) -> float:
        """GPU memory each GPU keeps for the runtime (bytes): ``gpu_reserve_gb``, else the
        model's (:data:`~bacepipe_env.core.memory.MODEL_RESERVE_GB`)."""
        gb = MODEL_RESERVE_GB[self.model] if self.gpu_reserve_gb is None else self.gpu_reserve_gb
        return gb * 1e9

    @property
    def activations(self) -> str:
        """What a stage keeps of its activations, for the memory floors
        (:data:`~bacepipe_env.core.memory.ACTIVATIONS`): none with ``state_only_floors``,
        else each stage's inputs with ``recompute``, else every layer's."""
        if self.state_only_floors:
            return "none"
        return "recompute" if self.recompute else "all"

    @property
    def estimate_model(self) -> str:
        """The performance model the schedulers estimate with: the paper's, or under
        ``scheduler_model="world"`` the world's."""
        return self.model if self.scheduler_model == "world" else "paper"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


def check_knob_names(knobs: Mapping[str, Any]) -> None:
    """A one-line ValidationError naming the first name of ``knobs`` that is not a world
    setting, with the known ones."""
    for name in knobs:
        if name not in KNOBS:
            raise ValidationError(name, knobs[name], f"unknown knob; known: {choices(KNOBS)}")


assert tuple(f.name for f in dataclasses.fields(World)) == tuple(KNOBS), "World != KNOBS"
assert all(_same(f.default, KNOBS[f.name].default) for f in dataclasses.fields(World)), (
    "World's defaults != KNOBS'"
)


def knob_table() -> str:
    """The Markdown table of :data:`KNOBS` that ``docs/scenarios.md`` shows (a test checks
    that the page holds it)."""
    lines = [
        "| knob | type | range | unit | file key | CLI flag | default | paper | meaning |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for k in KNOBS.values():
        flag = f"`{k.flag}`" if k.flag else "-"
        if k.flag and k.scope == "simulate":
            flag += " (simulate)"
        key = f"`{k.key}`" if k.key else "-"
        cells = (
            f"`{k.name}`",
            k.type,
            k.range,
            k.unit or "-",
            key,
            flag,
            f"`{k.default!r}`" if k.default not in ((), None) else "-",
            k.paper or "-",
            k.help.replace("|", "\\|"),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
