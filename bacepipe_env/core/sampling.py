"""What a rollout planner's ``sampled`` fork knows of the future, and the deadline totals a
fork is scored by (issue 45; semantics §15).

A ``sampled`` fork (:func:`sampled_clone`) knows what a scheduler knows now: the jobs
submitted by now and those the world's calendar announces (submitted within ``announce_h``
hours), with their contents, submit times and deadlines. Every later job keeps its id (ids
follow submission order) and the episode keeps its count of jobs (the world's ``n_jobs`` is a
known statistic), but the job's model, dataset, submit time and deadline are a draw of the
world's own workload rule and arrival process (:attr:`Scenario.future
<bacepipe_env.core.scenario.Scenario.future>`), submitted after the calendar's end: never the
real ones. A world without an arrival process to draw from (a fixed job list, batch arrivals)
gives the fork what a ``submitted`` (or, with a calendar, ``announced``) fork knows.
"""

from __future__ import annotations

import dataclasses
import math
from collections import OrderedDict

import numpy as np

from .preemption import PreemptionRule
from .scenario import Scenario
from .simulator import _ARRIVAL, Simulator
from .units import SECONDS_PER_HOUR

__all__ = ["deadline_totals", "sampled_clone"]

#: The memos of :class:`~bacepipe_env.core.caches.Caches` keyed by job id (or built from every
#: job): a sampled fork, whose later ids are other jobs, starts them empty, so that neither
#: the real jobs' answers reach the fork nor the fork's reach the simulator it was made from.
PER_JOB_MEMOS = (
    "shape_keys",
    "iteration_times",
    "full_gpus",
    "iteration_floors",
    "columns",
    "need",
    "submit_times",
    "release",
)


def sampled_clone(
    sim: Simulator,
    rng: np.random.Generator,
    seed: int | None = None,
    preemption: str | PreemptionRule | None = None,
) -> Simulator:
    """A clone of ``sim`` (:meth:`Simulator.clone`, with ``seed`` and ``preemption``) that
    knows the jobs submitted by now and those announced, and in place of each later job one
    that :attr:`Scenario.future` draws with ``rng`` (see the module docstring). Without such
    a hook, or with no job left to draw, the clone knows only the jobs submitted or
    announced."""
    scenario = sim.scenario
    ahead = scenario.announce_h
    lookahead = "submitted" if ahead <= 0.0 else f"announced:{ahead!r}"
    fork = sim.clone(lookahead, seed=seed, preemption=preemption)
    unknown = fork._unknown
    if not unknown or scenario.future is None:
        return fork
    ids = tuple(sorted(unknown))
    after = sim.time + ahead * SECONDS_PER_HOUR
    drawn = {job.job_id: job for job in scenario.future(rng, after, ids)}
    assert sorted(drawn) == list(ids) and all(j.submit_time > after for j in drawn.values())
    jobs = tuple(drawn.get(job.job_id, job) for job in scenario.jobs)
    # the same profile cache: the fork's jobs of a known shape are not profiled again
    new = dataclasses.replace(scenario, jobs=jobs, profile_cache=scenario._shapes)
    _rebind(fork, new, ids)
    return fork


def _rebind(fork: Simulator, scenario: Scenario, ids: tuple[int, ...]) -> None:
    """Make ``fork`` (a clone that left the jobs ``ids`` out) simulate ``scenario``, whose
    jobs ``ids`` are new: every table read by job id rebuilt from it, the memos keyed by job
    id emptied and the new jobs' arrivals queued. The state of the known jobs (queued,
    running, finished) is the clone's, untouched."""
    fork.scenario = scenario
    fork._profiles = scenario.profiles
    fork._world_profiles = scenario.world_profiles
    fork._floors = scenario.memory_floors
    fork._jobs = {j.job_id: j for j in scenario.jobs}
    fork._order = sorted(fork._jobs.values(), key=lambda j: (j.submit_time, j.job_id))
    queue = fork._queue  # a copy already: its pending jobs are known ones
    queue.rank = {j.job_id: i for i, j in enumerate(fork._order)}
    queue.min_floor = {j: min(f) for j, f in fork._floors.items()}
    queue.profiles = fork._profiles
    queue.shapes, queue.shape_of = None, {}  # rebuilt from the new profiles when asked
    caches = fork._caches  # a fork already: the pure memos by state and shape stay shared
    for name in PER_JOB_MEMOS:
        value = getattr(caches, name)
        setattr(caches, name, type(value)() if isinstance(value, (dict, OrderedDict)) else None)
    if fork._book is not None:  # a copy already; the new jobs have never run
        for j in ids:
            fork._book.iters_left[j] = float(fork._profiles[j].iterations)
    fork._replicas.ranges = scenario.replica_ranges
    fork._unknown = frozenset()
    for j in sorted(ids, key=lambda j: (fork._jobs[j].submit_time, j)):
        fork._push(fork._jobs[j].submit_time, _ARRIVAL, j)


def deadline_totals(sim: Simulator) -> tuple[int, float]:
    """``(misses, tardiness)`` of the jobs ``sim`` has finished: how many missed their
    deadline and their tardiness summed (s), from their records (semantics §15); ``(0, 0.0)``
    without deadlines."""
    records = sim._accounts.records.values()
    return sum(r.missed for r in records), math.fsum(r.tardiness for r in records)
