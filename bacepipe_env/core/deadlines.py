"""Per-job deadlines (semantics §15): when a job is due, how late it finished, and the
``deadline_slack`` knob's distribution of slacks for the jobs that give no deadline.

A job is due at its ``deadline`` (seconds from time 0), or, given a ``slack`` s instead, at
``submit + s * E*``, E* its isolated run time: its execution on K* GPUs in one region under
the model the world runs by (:attr:`JobProfile.ideal_execution`, the time the slowdown divides
by). Its tardiness is ``max(0, finish - due)`` and it missed its deadline exactly when the
tardiness is positive.

The knob's slacks come from their own random stream, ``SeedSequence([seed, 45])``, so that
turning it on leaves every other draw of the scenario (models, datasets, arrivals, the start
hour, faults) as it was; a world without it is the world it was, bit for bit.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ScenarioError
from .limits import LIMITS, check_limit

__all__ = [
    "DEFAULT_SLACK",
    "SLACK_STREAM",
    "check_deadline_slack",
    "draw_slacks",
    "due_time",
    "lateness",
    "with_slacks",
]

#: The slack distribution of ``deadline_slack`` when deadlines are turned on without one (the
#: bare ``--deadline-slack`` flag): U[1.2, 3.0] times the isolated run time, issue 45's
#: prototype. Its median 2.1, 10th percentile 1.38 and 90th 2.82 sit close to what Chronus
#: (SoCC'21) measured of deadline / duration on a production cluster (median 1.97, p10 1.39,
#: p90 3.13); ElasticFlow's (ASPLOS'23) U(0.5, 1.5) x duration is `uniform:0.5,1.5`, under
#: which a slack below 1 cannot be met even by a job that starts at once.
DEFAULT_SLACK = "uniform:1.2,3.0"

#: The second word of the slacks' seed: ``SeedSequence([seed, SLACK_STREAM])`` (issue 45).
SLACK_STREAM = 45


def _bounds(text: str) -> tuple[float, float]:
    """``uniform:A,B`` -> (A, B)."""
    kind, _, args = text.partition(":")
    parts = args.split(",")
    if kind == "fixed" and len(parts) == 1:
        x = float(parts[0])
        return x, x
    if kind == "uniform" and len(parts) == 2:
        return float(parts[0]), float(parts[1])
    raise ValueError(text)


def check_deadline_slack(value: Any, field: str) -> str:
    """The ``deadline_slack`` knob's value in its canonical form: ``none``, ``uniform:A,B``
    (a slack drawn uniformly in [A, B]) or ``fixed:X`` (every job X), slacks in (0, 1e6];
    a one-line ScenarioError naming ``field`` otherwise."""
    if value == "none":
        return "none"
    usage = "must be 'none', 'uniform:LOW,HIGH' or 'fixed:X' (slacks in (0, 1e6])"
    if not isinstance(value, str):
        raise ScenarioError(field, value, usage)
    try:
        low, high = _bounds(value.strip())
    except ValueError:
        raise ScenarioError(field, value, usage) from None
    for x in (low, high):
        check_limit("jobs.slack", x, field=field)
    if high < low:
        raise ScenarioError(field, value, f"the high slack must be at least the low ({low:g})")
    if low == high:
        return f"fixed:{low:g}"
    return f"uniform:{low:g},{high:g}"


def draw_slacks(
    spec: str, seed: int, n: int, rng: np.random.Generator | None = None
) -> list[float]:
    """``n`` slacks of the knob's ``spec`` (not ``none``) for the scenario of ``seed``, from
    their own stream (or from ``rng`` when given: a planner's sampled future jobs)."""
    low, high = _bounds(spec)
    if low == high:
        return [low] * n
    if rng is None:
        rng = np.random.default_rng(np.random.SeedSequence([seed, SLACK_STREAM]))
    return [float(x) for x in rng.uniform(low, high, size=n)]


def with_slacks(jobs: Sequence[Any], slacks: Sequence[float]) -> tuple[Any, ...]:
    """``jobs`` with each one that has neither a deadline nor a slack given the matching one
    of ``slacks`` (a copy: jobs are immutable and may be shared); the others as they are."""
    out = []
    for job, slack in zip(jobs, slacks):
        if job.deadline is None and job.slack is None:
            job = copy.copy(job)
            object.__setattr__(job, "slack", slack)
        out.append(job)
    return tuple(out)


def due_time(job: Any, ideal_execution: float) -> float | None:
    """When ``job`` is due (s): its ``deadline``, else its submit time plus its ``slack``
    times ``ideal_execution`` (its isolated run time, s); None for a job without either."""
    if job.deadline is not None:
        return float(job.deadline)
    if job.slack is not None:
        return float(job.submit_time + job.slack * ideal_execution)
    return None


def lateness(due: float | None, finish: float) -> tuple[float, bool]:
    """``(tardiness, missed)`` of a job due at ``due`` that finished at ``finish``:
    ``max(0, finish - due)`` seconds, and whether that is positive ((0, False) without a
    deadline)."""
    if due is None:
        return 0.0, False
    tardiness = max(0.0, finish - due)
    return tardiness, tardiness > 0.0


assert math.isclose(LIMITS["jobs.slack"].high, 1e6), "check_deadline_slack's message != LIMITS"
