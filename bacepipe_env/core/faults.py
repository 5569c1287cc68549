"""Faults: scheduled region outages, link bandwidth changes and price changes, and stochastic
GPU failures (semantics §11).

A :class:`FaultModel` is part of a scenario. The simulator reads it; nothing here runs.

- An :class:`Outage` takes a region down over ``[start, end)`` seconds: every attempt using one
  of its GPUs ends at ``start`` (outcome ``outage``), and the region offers no GPU until
  ``end``.
- A :class:`LinkChange` multiplies the capacity of the directed link ``src -> dst`` by
  ``factor`` (in (0, 1]) over ``[start, end)``. The residual bandwidth drops with it (the
  reservations of the jobs holding the link are scaled down to fit), and every running job
  whose path crosses the link slows down from that instant: Eq. (1) is recomputed with the
  degraded capacity for the rest of its work, and again when the link recovers.
- A :class:`PriceChange` multiplies a region's electricity price by ``factor`` (>= 0) over
  ``[start, end)``.
- GPU failures: every GPU of a running attempt fails independently at ``gpu_failure_rate`` per
  GPU-hour (a Poisson process), drawn from the run's seed. A failure ends the attempt (outcome
  ``failed``).

An attempt that ends early loses the work done since its last checkpoint: a job checkpoints
every ``checkpoint_interval_s`` seconds of computing, and every attempt after the first spends
``restart_s`` seconds restoring the checkpoint before it computes. The job then returns to the
pending queue, where the same policy schedules it again.

Defaults: ``checkpoint_interval_s = 3600`` (hourly; large LLM runs checkpoint every 25 to 100
minutes, and Huawei's MindCluster guide for foundation-model training saves once an hour) and
``restart_s = 600`` (ten minutes to reschedule, re-initialise collective communication and
load the checkpoint). Meta's Llama 3 report counts 419 unexpected interruptions in 54 days on
16,384 GPUs: about 2e-5 failures per GPU-hour, the rate the docs use as "measured".

The same model prices a deliberate preemption (:mod:`bacepipe_env.core.preemption`): a
preempted job writes a checkpoint of its state now, holding its GPUs for
``preempt_checkpoint_s`` (default 60 s: each GPU writes its stages' shard in parallel), or,
with ``preempt_checkpoint_s = None`` ("lose-since-checkpoint"), stops at once and loses the
work since its last periodic checkpoint, as a failure does. Its next attempt restarts in
``restart_s``. No job is preempted more than ``max_preemptions`` times (default 4): the bound
that rules out livelock whatever the rule (or a learned agent) does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ScenarioError, choices
from .limits import LIMITS, check_limit
from .units import SECONDS_PER_HOUR
from .validate import require_int

_TIME = LIMITS["events.start_h"].scaled(SECONDS_PER_HOUR, "s")

__all__ = [
    "DEFAULT_CHECKPOINT_INTERVAL_S",
    "DEFAULT_MAX_PREEMPTIONS",
    "DEFAULT_PREEMPT_CHECKPOINT_S",
    "DEFAULT_RESTART_S",
    "LLAMA3_FAILURE_RATE",
    "LOSE_SINCE_CHECKPOINT",
    "OUTCOMES",
    "Attempt",
    "FaultModel",
    "LinkChange",
    "Outage",
    "PriceChange",
]

DEFAULT_CHECKPOINT_INTERVAL_S = 3600.0
DEFAULT_RESTART_S = 600.0
#: Llama 3 (2024): 419 unexpected interruptions in 54 days on 16,384 GPUs, per GPU-hour.
LLAMA3_FAILURE_RATE = 419 / (54 * 24 * 16384)
#: How an attempt ended.
OUTCOMES = ("completed", "failed", "outage", "preempted")
DEFAULT_PREEMPT_CHECKPOINT_S = 60.0
DEFAULT_MAX_PREEMPTIONS = 4
#: ``preempt_checkpoint_s`` as scenario files and the CLI write "None".
LOSE_SINCE_CHECKPOINT = "lose-since-checkpoint"


def _window(where: str, start: float, end: float) -> tuple[float, float]:
    t0 = check_limit("events.start_h", start, field=f"{where}.start", limit=_TIME)
    t1 = check_limit("events.end_h", end, field=f"{where}.end", limit=_TIME)
    if t1 <= t0:
        raise ScenarioError(f"{where}.end", end, f"must be after start ({start})")
    return t0, t1


@dataclass(frozen=True)
class Outage:
    """Region ``region`` (an index) is down over ``[start, end)`` seconds."""

    region: int
    start: float
    end: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "region", require_int("outage.region", self.region, minimum=0))
        t0, t1 = _window("outage", self.start, self.end)
        object.__setattr__(self, "start", t0)
        object.__setattr__(self, "end", t1)


@dataclass(frozen=True)
class LinkChange:
    """The directed link ``src -> dst`` carries ``factor`` times its capacity over
    ``[start, end)`` seconds."""

    src: int
    dst: int
    factor: float
    start: float
    end: float

    def __post_init__(self) -> None:
        src = require_int("link.src", self.src, minimum=0)
        dst = require_int("link.dst", self.dst, minimum=0)
        if src == dst:
            raise ScenarioError("link.dst", dst, "a link joins two different regions")
        factor = check_limit("events.factor (link)", self.factor, field="link.factor")
        t0, t1 = _window("link", self.start, self.end)
        for name, value in (("src", src), ("dst", dst), ("factor", factor)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "start", t0)
        object.__setattr__(self, "end", t1)


@dataclass(frozen=True)
class PriceChange:
    """Region ``region``'s electricity price is multiplied by ``factor`` over ``[start, end)``
    seconds."""

    region: int
    factor: float
    start: float
    end: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "region", require_int("price.region", self.region, minimum=0))
        factor = check_limit("events.factor (price)", self.factor, field="price.factor")
        object.__setattr__(self, "factor", factor)
        t0, t1 = _window("price", self.start, self.end)
        object.__setattr__(self, "start", t0)
        object.__setattr__(self, "end", t1)


@dataclass(frozen=True)
class Attempt:
    """One run of a job on one placement: ``start`` to ``end`` seconds, and how it ended.

    ``restart`` seconds at its start restored a checkpoint (0 for a first attempt);
    ``wasted`` seconds of it (the restart and, for an attempt that did not complete, the work
    since its last checkpoint) produced nothing the job kept."""

    start: float
    end: float
    placement: object  # a Placement (typed loosely to keep this module free of cycles)
    outcome: str
    restart: float = 0.0
    wasted: float = 0.0

    @property
    def duration(self) -> float:
        """``end - start`` (s)."""
        return self.end - self.start


@dataclass(frozen=True)
class FaultModel:
    """What can go wrong in a scenario: scheduled events and a GPU failure rate (semantics §11);
    and what an interrupted attempt costs, by a fault or by a preemption (semantics §3c): the
    checkpoints, the restart, the checkpoint written at a preemption (None: the work since the
    last periodic checkpoint is lost instead) and the most preemptions of one job."""

    outages: tuple[Outage, ...] = ()
    links: tuple[LinkChange, ...] = ()
    prices: tuple[PriceChange, ...] = ()
    gpu_failure_rate: float = 0.0  # failures per GPU-hour
    checkpoint_interval_s: float = DEFAULT_CHECKPOINT_INTERVAL_S
    restart_s: float = DEFAULT_RESTART_S
    preempt_checkpoint_s: float | None = DEFAULT_PREEMPT_CHECKPOINT_S
    max_preemptions: int = DEFAULT_MAX_PREEMPTIONS

    def __post_init__(self) -> None:
        object.__setattr__(self, "outages", tuple(self.outages))
        object.__setattr__(self, "links", tuple(self.links))
        object.__setattr__(self, "prices", tuple(self.prices))
        for key in ("gpu_failure_rate", "checkpoint_interval_s", "restart_s", "max_preemptions"):
            object.__setattr__(self, key, check_limit(key, getattr(self, key)))
        if self.preempt_checkpoint_s is not None:
            value = check_limit("preempt_checkpoint_s", self.preempt_checkpoint_s)
            object.__setattr__(self, "preempt_checkpoint_s", value)

    @property
    def recovery_default(self) -> bool:
        """Whether the checkpoint, restart and preemption settings are all the defaults."""
        return (
            self.checkpoint_interval_s == DEFAULT_CHECKPOINT_INTERVAL_S
            and self.restart_s == DEFAULT_RESTART_S
            and self.preempt_checkpoint_s == DEFAULT_PREEMPT_CHECKPOINT_S
            and self.max_preemptions == DEFAULT_MAX_PREEMPTIONS
        )

    @property
    def active(self) -> bool:
        """Whether anything can happen at all (no events and a zero rate: the perfect world)."""
        return bool(self.outages or self.links or self.prices or self.gpu_failure_rate > 0)

    @property
    def dynamic(self) -> bool:
        """Whether attempts can end early or change speed (outages, links or failures)."""
        return bool(self.outages or self.links or self.gpu_failure_rate > 0)

    def check_regions(self, n_regions: int, names: Sequence[str]) -> None:
        """Raise a one-line ScenarioError for an event naming a region the cluster lacks."""
        for kind, events in (("outage", self.outages), ("price", self.prices)):
            for e in events:
                if e.region >= n_regions:
                    raise ScenarioError(f"{kind}.region", e.region, _known(names))
        for link in self.links:
            for idx in (link.src, link.dst):
                if idx >= n_regions:
                    raise ScenarioError("link", idx, _known(names))


def _known(names: Sequence[str]) -> str:
    return f"unknown region; known: {choices(names)}"
