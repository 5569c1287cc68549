"""Preemption rules: which running job, if any, to stop now so that a pending job can start
(semantics §3c). A fourth plug point beside ordering, placement and admission, applied
identically to every policy.

- ``none``: a job that starts holds its GPUs to the end (the paper's world, the default);
- ``srtf``: shortest remaining time first, with hysteresis. A pending job that cannot start
  may preempt the running job with the most remaining time if that job has run at least
  ``min_run_h`` in its current attempt and the pending job's remaining time is at most
  ``1 / factor`` of the running job's;
- ``las``: least attained service, size-blind (Tiresias' two queues). A pending job that has
  held fewer than ``threshold_gpu_h`` GPU-hours may preempt the running job with the most
  attained service, if that one has held at least ``threshold_gpu_h`` and has run at least
  ``min_run_h`` in its current attempt.

A rule is asked once at the end of every scheduling pass (no more pending job can start now),
with a :class:`PreemptionView`: the running jobs, and for each one that may be preempted the
pending jobs that could start if it were (its *beneficiaries*). It returns one job id or
None; after a preemption the pass starts again and the rule is asked again, until it returns
None. What a preemption costs (a checkpoint written at preemption, or the work since the last
periodic checkpoint lost; the restart) are world settings of the scenario's
:class:`~bacepipe_env.core.faults.FaultModel`, and the simulator books a preempted attempt
like an attempt ended by a fault, with the outcome ``preempted``.

A rule reads the view alone, so the same object decides in the simulator and, as a heuristic
agent, on the Gymnasium environment, which publishes the view of its decision.

Settings are written after the name: ``srtf:factor=3,min_run_h=0.5``,
``las:threshold_gpu_h=200``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .rule_specs import Setting, canonical_spec, make_rule, spec_name
from .units import SECONDS_PER_HOUR

__all__ = [
    "PREEMPTION_RULES",
    "Beneficiary",
    "LASPreemption",
    "NoPreemption",
    "PreemptionRule",
    "PreemptionView",
    "RunningJob",
    "SRTFPreemption",
    "check_preemption",
    "make_preemption",
]


@dataclass(frozen=True)
class RunningJob:
    """One running job as a preemption rule sees it. Times in seconds, service in GPU-seconds."""

    job_id: int
    gpus: int  # GPUs it holds
    remaining: float  # until it finishes on its placement now (its restart included)
    attained: float  # GPU-seconds held over all its attempts, this one up to now
    run: float  # since its current attempt started
    start: float  # when its current attempt started (simulated time)
    since_checkpoint: float  # computing since its last periodic checkpoint (what it would lose)
    preemptions: int  # times it has been preempted so far
    preemptible: bool  # the simulator would let it be preempted now (see PreemptionView)


@dataclass(frozen=True)
class Beneficiary:
    """A pending job that cannot start now but could if one running job were preempted."""

    job_id: int
    remaining: float  # s from now to its finish if it started now on the placement it would get
    attained: float  # GPU-seconds held over its earlier attempts (0 if it never ran)
    gpus: int  # GPUs of that placement


class PreemptionView:
    """The state a preemption rule decides from, at the end of a scheduling pass.

    ``running`` lists every running job in start order. A job is ``preemptible`` unless it is
    already writing its preemption checkpoint, it has been preempted ``max_preemptions`` times,
    or it would finish before a checkpoint written now (``remaining <= checkpoint_s``).
    :meth:`beneficiaries` of a preemptible job are the pending jobs with no placement that fits
    on the cluster as it will be once the jobs already being preempted have left, but with one
    once this job has left too. The simulator computes them when first asked (a placement
    per pending job shape); :meth:`materialize` computes all of them, which the environment does
    before it publishes the view.

    :attr:`pending_min_remaining` is a lower bound on any pending job's remaining time (Eq. 1
    with no communication at K* GPUs), :attr:`pending_min_attained` the least GPU-seconds any
    pending job has held: rules use them to stop early. ``minima`` computes both when first
    asked.
    """

    def __init__(
        self,
        time: float,
        running: tuple[RunningJob, ...],
        *,
        minima: tuple[float, float] | Callable[[], tuple[float, float]] = (math.inf, math.inf),
        checkpoint_s: float | None = 0.0,
        restart_s: float = 0.0,
        compute: Callable[[int], tuple[Beneficiary, ...]] | None = None,
        known: Mapping[int, tuple[Beneficiary, ...]] | None = None,
    ) -> None:
        self.time = time
        self.running = running
        self._minima = minima
        self.checkpoint_s = checkpoint_s  # None: lose-since-checkpoint
        self.restart_s = restart_s
        self._compute = compute
        self._known: dict[int, tuple[Beneficiary, ...]] = dict(known or {})
        self._index = {r.job_id: i for i, r in enumerate(running)}

    def _both_minima(self) -> tuple[float, float]:
        if callable(self._minima):
            self._minima = self._minima()
        return self._minima

    @property
    def pending_min_remaining(self) -> float:
        """A lower bound on every pending job's remaining time (s; inf with none pending)."""
        return self._both_minima()[0]

    @property
    def pending_min_attained(self) -> float:
        """The least GPU-seconds a pending job has held (inf with none pending)."""
        return self._both_minima()[1]

    def rank(self, job_id: int) -> int:
        """The running job's place in start order (0: the earliest started)."""
        return self._index[job_id]

    def __len__(self) -> int:
        return len(self.running)

    def row(self, job_id: int) -> RunningJob:
        """The running job ``job_id``."""
        return self.running[self._index[job_id]]

    def beneficiaries(self, job_id: int) -> tuple[Beneficiary, ...]:
        """The pending jobs that could start if running job ``job_id`` were preempted now, in
        submission order (empty for a job that is not preemptible)."""
        got = self._known.get(job_id)
        if got is None:
            row = self.running[self._index[job_id]]
            got = () if not row.preemptible or self._compute is None else self._compute(job_id)
            self._known[job_id] = got
        return got

    def any_option(self) -> bool:
        """Whether some running job's preemption lets a pending job start (it stops at the
        first such job)."""
        return any(self.beneficiaries(r.job_id) for r in self.running)

    def options(self) -> tuple[int, ...]:
        """The running jobs whose preemption lets some pending job start, in start order."""
        return tuple(r.job_id for r in self.running if self.beneficiaries(r.job_id))

    @property
    def materialized(self) -> bool:
        """Whether the view is plain data (:meth:`materialize`): it no longer computes through
        its simulator, so it may be copied and pickled."""
        return self._compute is None and not callable(self._minima)

    def materialize(self) -> PreemptionView:
        """Compute every job's beneficiaries now and let go of the simulator: the view is then
        plain data, safe to copy, pickle and read after the simulator has moved on."""
        for r in self.running:
            self.beneficiaries(r.job_id)
        self._both_minima()
        self._compute = None
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> PreemptionView:
        """Itself once materialised (nothing in it changes); SB3's DummyVecEnv deep-copies
        every ``info``."""
        if self.materialized:
            return self
        raise TypeError("materialize() a PreemptionView before copying it")

    def __getstate__(self) -> dict[str, Any]:
        if not self.materialized:
            raise TypeError("materialize() a PreemptionView before pickling it")
        return self.__dict__.copy()

    def __eq__(self, other: object) -> bool:
        """Materialised views are equal when they hold the same data; others only to
        themselves."""
        if not isinstance(other, PreemptionView):
            return NotImplemented
        if self is other:
            return True
        plain = self._compute is None and other._compute is None
        return plain and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PreemptionView(time={self.time:g}, running={len(self.running)})"


@runtime_checkable
class PreemptionRule(Protocol):
    """Decides which running job, if any, to preempt now."""

    name: str

    def choose(self, view: PreemptionView) -> int | None:
        """A preemptible job id of ``view.running`` with a beneficiary, or None."""
        ...


class NoPreemption:
    """Never preempt: every job holds its GPUs to the end (the paper's world)."""

    name = "none"

    def choose(self, view: PreemptionView) -> int | None:
        """Never."""
        return None


def _has_run(view: PreemptionView, job: RunningJob, seconds: float) -> bool:
    """Whether ``job``'s attempt has run ``seconds``: ``now >= start + seconds``, the very
    float the simulator's wake-up event for it falls on."""
    return view.time >= job.start + seconds


@dataclass(frozen=True)
class SRTFPreemption:
    """Shortest remaining time first, with hysteresis: the running job with the most remaining
    time is preempted for a pending job whose remaining time is at most ``1 / factor`` of it,
    once it has run ``min_run_s`` in its attempt. Victims are tried from the most remaining
    time down; ties go to the later start."""

    factor: float = 2.0
    min_run_s: float = SECONDS_PER_HOUR

    @property
    def name(self) -> str:
        """``srtf`` with its non-default settings, as ``make_preemption`` reads it."""
        return spec_name("srtf", self, SRTF_SETTINGS)

    def choose(self, view: PreemptionView) -> int | None:
        """The first victim, by remaining time, that a short enough pending job can replace."""
        ranked = sorted(
            (r for r in view.running if r.preemptible and _has_run(view, r, self.min_run_s)),
            key=lambda r: (-r.remaining, -view.rank(r.job_id)),
        )
        for r in ranked:
            limit = r.remaining / self.factor
            if view.pending_min_remaining > limit:
                return None  # no pending job is that short: nor for any later victim
            if any(b.remaining <= limit for b in view.beneficiaries(r.job_id)):
                return r.job_id
        return None


@dataclass(frozen=True)
class LASPreemption:
    """Least attained service, size-blind: a job that has held ``threshold_gpu_s`` GPU-seconds
    drops to the low-priority queue, and a pending job still below the threshold may preempt
    the running one with the most attained service (once it has run ``min_run_s`` in its
    attempt). Ties go to the later start."""

    threshold_gpu_s: float = 500.0 * SECONDS_PER_HOUR
    min_run_s: float = SECONDS_PER_HOUR

    @property
    def name(self) -> str:
        """``las`` with its non-default settings, as ``make_preemption`` reads it."""
        return spec_name("las", self, LAS_SETTINGS)

    def choose(self, view: PreemptionView) -> int | None:
        """The victim with the most attained service that a low-service pending job replaces."""
        threshold = self.threshold_gpu_s
        if view.pending_min_attained >= threshold:
            return None
        ranked = sorted(
            (
                r
                for r in view.running
                if r.preemptible and _has_run(view, r, self.min_run_s) and r.attained >= threshold
            ),
            key=lambda r: (-r.attained, -view.rank(r.job_id)),
        )
        for r in ranked:
            if any(b.attained < threshold for b in view.beneficiaries(r.job_id)):
                return r.job_id
        return None


SRTF_SETTINGS = (
    Setting("factor", "factor", 1.0, 1.0, 1000.0),
    Setting("min_run_h", "min_run_s", SECONDS_PER_HOUR, 0.0, 1e6),
)
LAS_SETTINGS = (
    Setting("threshold_gpu_h", "threshold_gpu_s", SECONDS_PER_HOUR, 0.0, 1e9),
    Setting("min_run_h", "min_run_s", SECONDS_PER_HOUR, 0.0, 1e6),
)
_RULES: dict[str, tuple[type[Any], tuple[Setting, ...]]] = {
    "none": (NoPreemption, ()),
    "srtf": (SRTFPreemption, SRTF_SETTINGS),
    "las": (LASPreemption, LAS_SETTINGS),
}
_NONE = NoPreemption()  # stateless: one for every simulator
#: The rule names, in the order the docs list them.
PREEMPTION_RULES: tuple[str, ...] = tuple(_RULES)


def make_preemption(rule: str | PreemptionRule | None, *, field: str = "preemption") -> Any:
    """A preemption rule by spec (``none``, ``srtf``, ``las``, with settings after a colon:
    ``srtf:factor=3,min_run_h=0.5``), or the object itself; None is ``none``. A one-line
    ValidationError names ``field`` for anything else."""
    return make_rule(rule, _RULES, _NONE, field)


def check_preemption(rule: Any, *, field: str = "preemption") -> str:
    """The canonical spec of a rule spec string (validated), e.g. ``srtf`` or
    ``srtf:factor=3``."""
    return canonical_spec(rule, _RULES, _NONE, field)
