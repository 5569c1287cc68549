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

The simulator runs a fault model as events (SimPy-style: an event is an object that carries
what it does; the simulator only pops its heap and calls :meth:`FaultEvent.apply`). Each
scheduled change gives a start and an end event (:meth:`FaultModel.events`), and each running
attempt's next GPU failure is a :class:`GpuFailure` drawn from the run's generator
(:meth:`FaultState.draw_failure`). An event acts on a :class:`FaultTarget`, the few operations
a fault needs of the simulation, and on its :class:`FaultState`. A new kind of fault is a
scheduled record with an ``events`` method, its event classes, a field of
:class:`FaultModel` listed in :meth:`FaultModel.events`, and the scenario file's parser.

The same model prices a deliberate preemption (:mod:`bacepipe_env.core.preemption`): a
preempted job writes a checkpoint of its state now, holding its GPUs for
``preempt_checkpoint_s`` (default 60 s: each GPU writes its stages' shard in parallel), or,
with ``preempt_checkpoint_s = None`` ("lose-since-checkpoint"), stops at once and loses the
work since its last periodic checkpoint, as a failure does. Its next attempt restarts in
``restart_s``. No job is preempted more than ``max_preemptions`` times (default 4): the bound
that rules out livelock whatever the rule (or a learned agent) does.
"""

from __future__ import annotations

import bisect
import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from ..errors import ScenarioError, choices
from .limits import HORIZON_S, LIMITS, check_limit
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
    "FaultEvent",
    "FaultModel",
    "FaultState",
    "FaultTarget",
    "GpuFailure",
    "LinkChange",
    "LinkChangeEnd",
    "LinkChangeStart",
    "Outage",
    "OutageEnd",
    "OutageStart",
    "PriceChange",
    "PriceChangeEnd",
    "PriceChangeStart",
    "ScheduledChange",
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

    def events(self, index: int) -> tuple[tuple[float, FaultEvent], ...]:
        """``(time, event)`` of its start and its end (``index``: its place in the model)."""
        return (self.start, OutageStart(self.region)), (self.end, OutageEnd(self.region))


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

    def events(self, index: int) -> tuple[tuple[float, FaultEvent], ...]:
        """``(time, event)`` of its start and its end (``index``: its place in the model)."""
        src, dst, factor = self.src, self.dst, self.factor
        return (
            (self.start, LinkChangeStart(src, dst, factor)),
            (self.end, LinkChangeEnd(src, dst, factor)),
        )


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

    def events(self, index: int) -> tuple[tuple[float, FaultEvent], ...]:
        """``(time, event)`` of its start and its end; ``index``, its place among the model's
        price changes, is the order their factors multiply in (as the tariff's)."""
        region, factor = self.region, self.factor
        return (
            (self.start, PriceChangeStart(region, index, factor)),
            (self.end, PriceChangeEnd(region, index, factor)),
        )


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
    # what it booked on each directed link (u, v, bytes/s): b(L) on every link of a pipeline's
    # path, the copies' and the all-reduce's together for data-parallel copies, both
    # directions of a pair under the physical model (semantics §3e, §4)
    bookings: tuple[tuple[int, int, float], ...] = ()

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

    def events(self) -> list[tuple[float, FaultEvent]]:
        """Every scheduled change's ``(time, event)`` pairs, in the model's order: each
        change's start then its end; the outages, then the link changes, then the price
        changes. The simulator queues them in this order (ties at one instant keep it)."""
        out: list[tuple[float, FaultEvent]] = []
        groups: tuple[Sequence[ScheduledChange], ...] = (self.outages, self.links, self.prices)
        for changes in groups:
            for index, change in enumerate(changes):
                out.extend(change.events(index))
        return out

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


class ScheduledChange(Protocol):
    """A change of the world over a window of time (an outage, a link or a price change): it
    runs as events, at least its start and its end."""

    @property
    def start(self) -> float: ...
    @property
    def end(self) -> float: ...
    def events(self, index: int) -> tuple[tuple[float, FaultEvent], ...]:
        """``(time, event)`` pairs; ``index`` is the change's place among its kind's."""
        ...


class FaultTarget(Protocol):
    """What a fault event acts on: the simulation, through the few operations a fault needs
    (the simulator provides them; semantics §11)."""

    @property
    def fault_state(self) -> FaultState:
        """What the faults have done so far."""
        ...

    def jobs_on(self, region: int) -> list[int]:
        """The running attempts with a GPU in ``region``, in start order."""
        ...

    def attempt_live(self, job_id: int, attempt_id: int) -> bool:
        """Whether attempt ``attempt_id`` of ``job_id`` is still running."""
        ...

    def end_attempt(self, job_id: int, outcome: str) -> None:
        """End a running attempt now: the job keeps its last checkpoint and waits again."""
        ...

    def close_region(self, region: int) -> None:
        """The region offers no GPU from now on."""
        ...

    def open_region(self, region: int) -> None:
        """The region offers all its GPUs again."""
        ...

    def set_link_capacity(self, src: int, dst: int, capacity: float) -> None:
        """The link carries ``capacity`` bytes/s from now on: its reservations shrink to fit,
        and every attempt crossing it runs at the speed Eq. (1) gives on it."""
        ...


class FaultEvent:
    """Something that happens to the simulated world at one instant. A subclass applies
    itself to a :class:`FaultTarget` (:meth:`apply`) and may have stopped applying by the time
    it is reached (:meth:`live`, e.g. the failure of an attempt that has already ended)."""

    __slots__ = ()

    #: A scheduling pass follows it (False: it moves no job, e.g. a price change, which the
    #: bill integrates exactly; the simulator applies it as its clock passes it).
    decision_point: ClassVar[bool] = True
    #: Drawn from the run's generator (a clone given a new seed draws it again).
    drawn: ClassVar[bool] = False

    def live(self, sim: FaultTarget) -> bool:
        """Whether it still applies when reached (a scheduled change always does)."""
        return True

    def apply(self, sim: FaultTarget) -> None:
        """Change the simulation as this event does."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class OutageStart(FaultEvent):
    """Region ``region`` goes down: every attempt with a GPU there ends (outcome ``outage``),
    and the region offers no GPU until its last overlapping outage ends."""

    region: int

    def apply(self, sim: FaultTarget) -> None:
        """Count the outage; on the first, end the region's attempts and close it."""
        state, r = sim.fault_state, self.region
        state.outages_on[r] += 1
        if not state.down[r]:
            for job_id in sim.jobs_on(r):
                sim.end_attempt(job_id, "outage")
            state.down[r] = True
            sim.close_region(r)


@dataclass(frozen=True, slots=True)
class OutageEnd(FaultEvent):
    """One outage of region ``region`` ends; with the last one the region is back."""

    region: int

    def apply(self, sim: FaultTarget) -> None:
        """Uncount the outage; with none left, open the region with every GPU free."""
        state, r = sim.fault_state, self.region
        state.outages_on[r] -= 1
        if state.outages_on[r] == 0 and state.down[r]:
            state.down[r] = False
            sim.open_region(r)


@dataclass(frozen=True, slots=True)
class LinkChangeStart(FaultEvent):
    """The link ``src -> dst`` starts carrying ``factor`` times what it carried."""

    src: int
    dst: int
    factor: float

    def apply(self, sim: FaultTarget) -> None:
        """Put the factor in force and set the link's capacity."""
        active = sim.fault_state.link_on.setdefault((self.src, self.dst), [])
        active.append(self.factor)
        _set_link(sim, self.src, self.dst, active)


@dataclass(frozen=True, slots=True)
class LinkChangeEnd(FaultEvent):
    """A link change of ``src -> dst`` by ``factor`` ends."""

    src: int
    dst: int
    factor: float

    def apply(self, sim: FaultTarget) -> None:
        """Take the factor out of force and set the link's capacity."""
        active = sim.fault_state.link_on.setdefault((self.src, self.dst), [])
        active.remove(self.factor)
        _set_link(sim, self.src, self.dst, active)


def _set_link(sim: FaultTarget, u: int, v: int, factors: list[float]) -> None:
    """The link's nominal capacity times the factors in force, in the order they came."""
    capacity = sim.fault_state.nominal[u][v]
    for f in factors:
        capacity *= f
    sim.set_link_capacity(u, v, capacity)


@dataclass(frozen=True, slots=True)
class PriceChangeStart(FaultEvent):
    """Region ``region``'s electricity price starts being multiplied by ``factor``; ``index``
    is the change's place among the model's price changes (the factors' order)."""

    decision_point: ClassVar[bool] = False

    region: int
    index: int
    factor: float

    def apply(self, sim: FaultTarget) -> None:
        """Put the factor in force, in the changes' order."""
        bisect.insort(sim.fault_state.prices_on[self.region], (self.index, self.factor))


@dataclass(frozen=True, slots=True)
class PriceChangeEnd(FaultEvent):
    """Price change ``index`` of region ``region`` (by ``factor``) ends."""

    decision_point: ClassVar[bool] = False

    region: int
    index: int
    factor: float

    def apply(self, sim: FaultTarget) -> None:
        """Take the factor out of force."""
        sim.fault_state.prices_on[self.region].remove((self.index, self.factor))


@dataclass(frozen=True, slots=True)
class GpuFailure(FaultEvent):
    """A GPU of attempt ``attempt_id`` of job ``job_id`` fails: the attempt ends (outcome
    ``failed``), unless it has already ended."""

    drawn: ClassVar[bool] = True

    job_id: int
    attempt_id: int

    def live(self, sim: FaultTarget) -> bool:
        """Whether the attempt is still running."""
        return sim.attempt_live(self.job_id, self.attempt_id)

    def apply(self, sim: FaultTarget) -> None:
        """End the attempt."""
        sim.end_attempt(self.job_id, "failed")


class FaultState:
    """What a fault model's events have done so far in one run: the regions down (and how many
    outages hold each), the link and price factors in force, and the generator the failures
    are drawn from (seeded by ``seed``). ``nominal``: the links' nominal capacity rows.

    :attr:`scheduled` are the events that are decision points, for the simulator's heap, in
    :meth:`FaultModel.events`'s order; :attr:`calendar` the others (price changes) in time
    order, applied as the clock passes them (:meth:`due`). :meth:`reset` before first use.
    """

    __slots__ = (
        "_due",
        "calendar",
        "down",
        "link_on",
        "next_due",
        "nominal",
        "outages_on",
        "prices_on",
        "rng",
        "scheduled",
        "seed",
    )

    def __init__(self, model: FaultModel, nominal: Sequence[Sequence[float]], seed: int) -> None:
        events = model.events()
        self.scheduled = tuple((t, e) for t, e in events if e.decision_point)
        quiet = [(t, e) for t, e in events if not e.decision_point]
        self.calendar = tuple(sorted(quiet, key=lambda te: te[0]))  # stable: ties keep order
        self.nominal = nominal
        self.seed = seed

    def reset(self) -> None:
        """Back to time zero: every region up, no factor in force, the generator reseeded."""
        k = len(self.nominal)
        self.reseed(self.seed)
        self.down = [False] * k
        self.outages_on = [0] * k
        self.link_on: dict[tuple[int, int], list[float]] = {}
        # per region, the (index, factor) of the price changes in force, in index order
        self.prices_on: list[list[tuple[int, float]]] = [[] for _ in range(k)]
        self._due = 0  # the calendar's next event
        self.next_due = self.calendar[0][0] if self.calendar else math.inf

    def reseed(self, seed: int) -> None:
        """A new generator for the failures still to be drawn, from ``seed``."""
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, 11]))

    def copy(self) -> FaultState:
        """An independent copy (the generator's state too)."""
        new = object.__new__(FaultState)
        for name in FaultState.__slots__:
            setattr(new, name, getattr(self, name))
        new.rng = copy.deepcopy(self.rng)  # the failures still to be drawn
        new.down = list(self.down)
        new.outages_on = list(self.outages_on)
        new.link_on = {link: list(f) for link, f in self.link_on.items()}
        new.prices_on = [list(on) for on in self.prices_on]
        return new

    def due(self, t: float) -> list[FaultEvent]:
        """The calendar's events at or before ``t`` not yet applied, in time order (the
        caller applies them); :attr:`next_due` moves past them."""
        calendar, i = self.calendar, self._due
        out: list[FaultEvent] = []
        while i < len(calendar) and calendar[i][0] <= t:
            out.append(calendar[i][1])
            i += 1
        self._due = i
        self.next_due = calendar[i][0] if i < len(calendar) else math.inf
        return out

    def price_factors(self, region: int) -> tuple[float, ...]:
        """The factors of the region's price changes in force, in the model's order."""
        return tuple(f for _, f in self.prices_on[region])

    def draw_failure(
        self, job_id: int, attempt_id: int, n_gpus: int, now: float, rate: float
    ) -> tuple[float, GpuFailure] | None:
        """The first failure among an attempt's ``n_gpus`` GPUs from ``now`` on (each fails at
        ``rate`` per hour, memoryless), drawn from the generator; None past the horizon,
        where the attempt has ended (finishes are within the horizon)."""
        mean = SECONDS_PER_HOUR / (rate * n_gpus)
        t = now + float(self.rng.exponential(mean))
        if t > HORIZON_S:
            return None
        return t, GpuFailure(job_id, attempt_id)
