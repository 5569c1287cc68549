"""Elasticity rules: how many data-parallel copies of its pipeline a job runs, and when that
count changes while it runs (semantics §3f). A fifth plug point beside ordering, placement,
admission and preemption, applied identically to every policy.

- ``none``: a job starts with its ``min_replicas`` copies (1 by default) and keeps them to
  the end (the paper's world, the default);
- ``greedy``: Pollux-style greedy reallocation (Qiao et al., OSDI'21, in its simplest form). A
  job starts with ``min_replicas`` copies. At the end of every scheduling pass, when a pending
  job cannot start, the rule shrinks by one copy the running job whose remaining time grows
  least per GPU freed, if the admission rule then starts a pending job at that instant;
  otherwise, with GPUs idle, it grows by one copy the running job whose remaining time falls
  most per GPU added, by at least ``min_gain`` of it, if the new copy takes nothing a pending
  job could start on now. A job that ran less than ``min_run_h`` since its attempt started is
  left alone, a resize that undoes the job's previous one waits more than ``min_run_h`` after
  it (hysteresis), and no job grows more than ``max_grows`` times: the rule cannot thrash,
  and a job's resizes are bounded by construction (a shrink follows a grow or the start
  count, so at most ``2 max_grows + max_replicas - min_replicas`` of them).

Every resize is a checkpoint-restart: the job keeps all its work, writes a checkpoint
(``preempt_checkpoint_s``, or none under ``lose-since-checkpoint``) and restarts
(``restart_s``) on its new placement, holding the new GPUs meanwhile. The simulator books it
as an attempt that ended with the outcome ``resized``.

A rule is asked once at the end of every scheduling pass, after the preemption rule, with an
:class:`ElasticView`; it returns ``(job id, new copy count)`` or None, and is asked again after
each resize until it returns None. A job is resized at most once per instant.

Settings are written after the name: ``greedy:min_gain=0.1,min_run_h=1,max_grows=4``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .rule_specs import Setting, canonical_spec, make_rule, spec_name
from .units import SECONDS_PER_HOUR

__all__ = [
    "ELASTICITY_RULES",
    "ElasticJob",
    "ElasticView",
    "ElasticityRule",
    "GreedyElasticity",
    "NoElasticity",
    "Resize",
    "check_elasticity",
    "make_elasticity",
]


@dataclass(frozen=True)
class ElasticJob:
    """One running job as an elasticity rule sees it. Times in seconds."""

    job_id: int
    replicas: int  # d, its copies now
    min_replicas: int
    max_replicas: int
    stages: int  # L, the GPUs of one copy
    remaining: float  # until it finishes on its placement now
    run: float  # since its current attempt started (a resize starts one)
    resizable: bool  # not writing a preemption checkpoint, not resized at this instant
    last_step: int = 0  # its last resize: +1 grew, -1 shrank, 0 never resized
    since_resize: float = float("inf")  # s since its last resize
    may_grow: bool = True  # it grew fewer than the rule's max_grows times


@dataclass(frozen=True)
class Resize:
    """What one more or one fewer copy would give a running job."""

    job_id: int
    replicas: int  # the new copy count
    gpus: int  # GPUs it would hold
    remaining: float  # s to its finish after the resize, the checkpoint-restart included
    # (a shrink) pending jobs the admission rule would start at this instant once it is done
    admits: tuple[int, ...] = ()


class ElasticView:
    """The state an elasticity rule decides from, at the end of a scheduling pass: the running
    jobs in start order, whether a pending job is waiting (:attr:`blocked`), the free GPUs, and,
    computed when asked, what growing or shrinking each job would give."""

    def __init__(
        self,
        time: float,
        running: tuple[ElasticJob, ...],
        *,
        blocked: bool,
        free_gpus: int,
        grow: Callable[[int], Resize | None],
        shrink: Callable[[int], Resize | None],
    ) -> None:
        self.time = time
        self.running = running
        self.blocked = blocked
        self.free_gpus = free_gpus
        self._grow = grow
        self._shrink = shrink

    def grow(self, job_id: int) -> Resize | None:
        """One more copy of ``job_id``'s pipeline on the free GPUs, or None if none fits or
        it would take GPUs or bandwidth that a pending job could start on now."""
        return self._grow(job_id)

    def shrink(self, job_id: int) -> Resize | None:
        """``job_id`` without as few of its last copies as let the admission rule start a
        pending job at this instant (those jobs in ``admits``), or None if no count down to
        its ``min_replicas`` does."""
        return self._shrink(job_id)

    def __repr__(self) -> str:
        return f"ElasticView(time={self.time:g}, running={len(self.running)})"


@runtime_checkable
class ElasticityRule(Protocol):
    """Decides the copies a job starts with and whether a running job is resized now."""

    name: str

    def choose(self, view: ElasticView) -> tuple[int, int] | None:
        """``(job id, new copy count)`` of a resizable running job, or None."""
        ...


class NoElasticity:
    """A job keeps the copies it started with (the paper's world: one)."""

    name = "none"

    def choose(self, view: ElasticView) -> tuple[int, int] | None:
        """Never."""
        return None


@dataclass(frozen=True)
class GreedyElasticity:
    """Pollux-style greedy reallocation (see the module docs): shrink the job that loses least
    per GPU freed so that the admission rule starts a pending job; else grow the job that
    gains most per GPU added, by at least ``min_gain`` of its remaining time, on GPUs no
    pending job could start on; a job that ran less than ``min_run_s`` is left alone, an undo
    of a job's previous resize waits more than ``min_run_s`` after it, and no job is resized
    grows more than ``max_grows`` times. Ties go to the earlier start."""

    min_gain: float = 0.05
    min_run_s: float = 0.25 * SECONDS_PER_HOUR
    max_grows: int = 4

    @property
    def name(self) -> str:
        """``greedy`` with its non-default settings, as ``make_elasticity`` reads it."""
        return spec_name("greedy", self, GREEDY_SETTINGS)

    def choose(self, view: ElasticView) -> tuple[int, int] | None:
        """The shrink that admits a pending job at the least cost per GPU, else the grow with
        the most gain per GPU."""
        ready = [j for j in view.running if j.resizable and j.run >= self.min_run_s]
        if view.blocked:
            best: tuple[float, int, int] | None = None
            for j in ready:
                if j.replicas <= j.min_replicas or not self._may_step(j, -1):
                    continue
                got = view.shrink(j.job_id)
                if got is None or not got.admits:
                    continue
                loss = (got.remaining - j.remaining) / (j.stages * (j.replicas - got.replicas))
                if best is None or loss < best[0]:
                    best = (loss, j.job_id, got.replicas)
            if best is not None:
                return best[1], best[2]
        best_grow: tuple[float, int] | None = None
        for j in ready:
            if j.replicas >= j.max_replicas or view.free_gpus < j.stages:
                continue
            if not j.may_grow or not self._may_step(j, 1):
                continue
            got = view.grow(j.job_id)
            if got is None:
                continue
            gain = j.remaining - got.remaining
            if gain < self.min_gain * j.remaining:
                continue
            score = -gain / j.stages
            if best_grow is None or score < best_grow[0]:
                best_grow = (score, j.job_id)
        if best_grow is None:
            return None
        return best_grow[1], next(j.replicas + 1 for j in ready if j.job_id == best_grow[1])

    def _may_step(self, job: ElasticJob, step: int) -> bool:
        """Whether ``job`` may be resized by ``step`` now: not an undo of its previous resize
        within ``min_run_s`` of it (hysteresis)."""
        return job.last_step != -step or job.since_resize > self.min_run_s


GREEDY_SETTINGS = (
    Setting("min_gain", "min_gain", 1.0, 0.0, 10.0),
    Setting("min_run_h", "min_run_s", SECONDS_PER_HOUR, 0.0, 1e6),
    Setting("max_grows", "max_grows", 1, 0, 1000, integer=True),
)
_RULES: dict[str, tuple[type[Any], tuple[Setting, ...]]] = {
    "none": (NoElasticity, ()),
    "greedy": (GreedyElasticity, GREEDY_SETTINGS),
}
_NONE = NoElasticity()
#: The rule names, in the order the docs list them.
ELASTICITY_RULES: tuple[str, ...] = tuple(_RULES)


def make_elasticity(rule: str | ElasticityRule | None, *, field: str = "elasticity") -> Any:
    """An elasticity rule by spec (``none``, ``greedy``, with settings after a colon:
    ``greedy:min_gain=0.1,min_run_h=1``), or the object itself; None is ``none``. A one-line
    ValidationError names ``field`` for anything else."""
    return make_rule(rule, _RULES, _NONE, field)


def check_elasticity(rule: Any, *, field: str = "elasticity") -> str:
    """The canonical spec of a rule spec string (validated), e.g. ``none`` or
    ``greedy:min_gain=0.1``."""
    return canonical_spec(rule, _RULES, _NONE, field)
