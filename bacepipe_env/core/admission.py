"""Admission rules: whether a job takes the placement it is offered now (semantics §3b).

The paper's Alg. 1 never waits: a job starts on whatever path Pathfinder finds, however few
GPUs it has. When a job starts is a scheduling decision of its own, so it is a third plug point
beside ordering and placement, applied identically to every policy:

- ``greedy``: start whenever a placement that fits in GPU memory exists (the paper's rule);
- ``finish-aware``: start now only if the job's predicted completion now is no later than its
  predicted completion when it waits for the next GPU release and takes the placement the same
  policy would offer then;
- ``full``: start only with ``min(K*, the GPUs the placement policy gives it on the idle
  cluster)``;
- ``announce-aware``: ``finish-aware``, and also hold the GPUs for an announced job (the
  scenario's ``announce_h`` calendar) that the job would block, when the two jobs' predicted
  completion times sum lower that way (:class:`AnnounceAwareAdmission`);
- ``deadline-aware``: ``finish-aware``, and also defer a job that can no longer meet its
  deadline (semantics §15) when it would take the GPUs of a pending job that still can
  (:class:`DeadlineAwareAdmission`);
- ``deadline-plan``: ``finish-aware``, and also hold a job when a reservation plan of the
  queue, the running jobs' releases and the calendar predicts fewer deadline misses (then less
  tardiness) if it waits for the next release (:class:`DeadlinePlanAdmission`).

A declined job stays pending and is offered again after the next event; the scheduling pass
goes on with the other jobs. Predictions use only what a scheduler knows: the running jobs'
finish times and resources, the pending jobs' deadlines and the calendar of announced jobs,
never an unannounced arrival.
A learned agent that can wait decides admission itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from ..errors import ValidationError
from .memory import largest_feasible_gpus
from .perf import JobProfile
from .placement import Placement
from .reservation import FreeProfile, PlanJob, plan_lateness
from .views import Release

__all__ = [
    "ADMISSION_RULES",
    "AdmissionRule",
    "AdmissionView",
    "AnnounceAwareAdmission",
    "DeadlineAwareAdmission",
    "DeadlinePlanAdmission",
    "FinishAwareAdmission",
    "FullAdmission",
    "GreedyAdmission",
    "SubmitCalendar",
    "finish_after_release",
    "hold_for_announced",
    "make_admission",
    "plan_outlook",
    "plan_start_or_hold",
    "yield_to_deadline",
]


class SubmitCalendar(Protocol):
    """The part of a scenario admission rules read: every job's submit time (seconds) and,
    for the jobs that have one, when it is due (seconds, semantics §15)."""

    @property
    def submit_times(self) -> Mapping[int, float]: ...
    @property
    def deadlines(self) -> Mapping[int, float]: ...


class AdmissionView(Protocol):
    """What admission rules read of a simulation, and nothing else: the clock, the free GPUs
    and residual bandwidth, the pending jobs, the jobs' profiles, memory floors, submit times
    and deadlines, the calendar
    of announced jobs, and the placement policy's answers and Eq. (2) on any state. The
    simulator implements it (:class:`~bacepipe_env.core.state.SimulationState`)."""

    @property
    def time(self) -> float: ...
    @property
    def free_gpus(self) -> tuple[int, ...]: ...
    @property
    def residual_rows(self) -> tuple[tuple[float, ...], ...]: ...
    @property
    def pending(self) -> tuple[int, ...]: ...
    @property
    def scenario(self) -> SubmitCalendar: ...
    def profile(self, job_id: int) -> JobProfile: ...
    def memory_floor(self, job_id: int) -> tuple[int, ...]: ...
    def execution_time(self, job_id: int, placement: Placement) -> float: ...
    def next_release(self) -> Release | None: ...
    def placement_on(self, job_id: int, state: Release) -> Placement | None: ...
    def full_gpus(self, job_id: int) -> int: ...
    def announced(self) -> tuple[int, ...]: ...
    def running_placements(self) -> list[tuple[Placement, float]]: ...
    @property
    def running(self) -> tuple[int, ...]: ...
    def job_state(self, job_id: int) -> tuple[float, Placement | None, float | None]: ...


class AdmissionRule(Protocol):
    """Decides whether ``job_id`` starts now on ``placement`` (which fits in memory)."""

    name: str

    def admit(self, sim: AdmissionView, job_id: int, placement: Placement) -> bool:
        """True to start now, False to leave the job pending until the next event."""
        ...


class GreedyAdmission:
    """Start whenever a feasible placement exists (Alg. 1 as printed)."""

    name = "greedy"

    def admit(self, sim: AdmissionView, job_id: int, placement: Placement) -> bool:
        """Always."""
        return True


class FinishAwareAdmission:
    """Start now unless waiting for the next GPU release would finish the job earlier.

    Compares ``now + E(placement)`` with ``t_release + E(placement at t_release)``, where
    ``t_release`` is the earliest finish among the running jobs and the later placement is the
    same policy's answer on the free GPUs and residual bandwidth after every job finishing at
    that instant has released them. Ties start now; with nothing running, the job starts now.
    """

    name = "finish-aware"

    def admit(self, sim: AdmissionView, job_id: int, placement: Placement) -> bool:
        """Whether starting now finishes no later than waiting for the next release."""
        release = sim.next_release()
        if release is None:
            return True
        waited = finish_after_release(sim, job_id, release)
        if waited is None:
            return True
        now = sim.time + sim.execution_time(job_id, placement)
        return now <= waited[0]


def finish_after_release(
    sim: AdmissionView, job_id: int, release: Release
) -> tuple[float, Placement] | None:
    """``(finish time, placement)`` of ``job_id`` if it waits for ``release`` (the state after
    the next GPU release, :meth:`AdmissionView.next_release`) and starts then on what the placement
    policy offers it there; None when nothing it offers there fits. What ``finish-aware``
    compares with starting now, and what the environment's ``wait_preview`` shows (through
    :meth:`~bacepipe_env.envs.previews.PlacementPreviewer.waits`, a memo of it)."""
    later = sim.placement_on(job_id, release)
    if later is None:
        return None
    return release.time + sim.execution_time(job_id, later), later


class FullAdmission:
    """Start only with as many GPUs as the placement policy would give the job on the idle
    cluster (never more than K*), so that no job runs on leftovers."""

    name = "full"

    def admit(self, sim: AdmissionView, job_id: int, placement: Placement) -> bool:
        """Whether the placement has the job's full GPU count."""
        return placement.n_gpus >= sim.full_gpus(job_id)


class AnnounceAwareAdmission(FinishAwareAdmission):
    """``finish-aware`` that also holds the GPUs for an announced job the offered one would
    block, when a predicted-finish comparison says the two jobs' average JCT is lower.

    The offered job ``j`` on placement ``p`` at ``t`` = now, ``E_j`` its execution time on
    ``p``, starts now iff:

    1. ``finish-aware`` starts it (else it waits, as under ``finish-aware``); and
    2. :func:`hold_for_announced` finds no announced job to hold for: among the announced jobs
       (:meth:`~bacepipe_env.core.simulator.Simulator.announced`, in submission order), one
       ``a`` submitted at ``t_a < t + E_j`` that ``j`` blocks (some set of regions holds ``a``
       in GPU memory on the GPUs free now, none on the GPUs left once ``j`` takes ``p``;
       :func:`~bacepipe_env.core.memory.largest_feasible_gpus`, bandwidth aside), that the
       placement policy offers ``p_a`` on the free GPUs and residual bandwidth of now (at time
       ``t_a``), ``E_a`` its execution time there, and for which the sum of the two jobs'
       predicted completion times is lower if ``j`` waits:

       - start now: ``(t + E_j) + (t + E_j + E_a)``: ``a`` starts on ``p_a`` when ``j`` ends;
       - hold: ``(t_a + E_a) + (t_a + E_a + E_j)``: ``j`` starts on ``p`` when ``a`` ends;

       ``j`` waits iff hold < start now (ties start now), which is ``2 (t_a - t) + E_a < E_j``.

    The approximation: the rest of the cluster stays as it is now (no other job starts or
    finishes in between, so ``p_a`` is also ``a``'s placement after ``j``, and ``p`` ``j``'s
    after ``a``), and each announced job is weighed against ``j`` alone. Deterministic, and
    it reads only what a scheduler knows: the free GPUs, the running jobs and the calendar,
    never an unannounced job. With nothing announced (``announce_h`` 0, the default) it is
    ``finish-aware``, decision for decision.
    """

    name = "announce-aware"

    def admit(self, sim: AdmissionView, job_id: int, placement: Placement) -> bool:
        """Whether finish-aware starts the job now and no announced job is worth holding for."""
        if not super().admit(sim, job_id, placement):
            return False
        return hold_for_announced(sim, job_id, placement) is None


def _left_after(free: tuple[int, ...], placement: Placement) -> list[int]:
    """The free GPUs per region once ``placement`` takes its GPUs."""
    left = list(free)
    for r, g in zip(placement.path, placement.gpus):
        left[r] -= g
    return left


def _blocks(sim: AdmissionView, job_id: int, free: tuple[int, ...], left: list[int]) -> bool:
    """Whether a placement that leaves ``left`` of the ``free`` GPUs blocks ``job_id``: some
    set of regions holds it in GPU memory on ``free``, none on ``left`` (bandwidth aside)."""
    floors, k_star = sim.memory_floor(job_id), sim.profile(job_id).k_star
    if largest_feasible_gpus(floors, left, k_star)[0] > 0:
        return False  # it fits beside: not blocked
    return largest_feasible_gpus(floors, free, k_star)[0] > 0  # else it blocks nothing


def hold_for_announced(sim: AdmissionView, job_id: int, placement: Placement) -> int | None:
    """The first announced job (submission order) that ``job_id`` starting now on
    ``placement`` would block and that should go first by :class:`AnnounceAwareAdmission`'s
    test, or None (nothing announced, nothing blocked, or starting now is no worse)."""
    announced = sim.announced()
    if not announced:
        return None
    now = sim.time
    e_j = sim.execution_time(job_id, placement)
    finish_now = now + e_j
    free = sim.free_gpus
    left = _left_after(free, placement)
    submits = sim.scenario.submit_times
    residual = None
    for a in announced:
        t_a = submits[a]
        if t_a >= finish_now:  # the later ones too: submission order
            break
        if not _blocks(sim, a, free, left):
            continue
        if residual is None:
            residual = sim.residual_rows
        later = sim.placement_on(a, Release(t_a, free, residual))
        if later is None:
            continue
        e_a = sim.execution_time(a, later)
        start_now = finish_now + (finish_now + e_a)
        hold = (t_a + e_a) + (t_a + e_a + e_j)
        if hold < start_now:
            return a
    return None


class DeadlineAwareAdmission(FinishAwareAdmission):
    """``finish-aware`` that also defers a job that can no longer meet its deadline while a
    pending job that still can is waiting for the same GPUs (semantics §15).

    The offered job ``j`` on placement ``p`` at ``t`` = now, ``E_j`` its execution time on
    ``p``, starts now iff:

    1. ``finish-aware`` starts it (else it waits, as under ``finish-aware``); and
    2. :func:`yield_to_deadline` finds no job to yield to. ``j`` is *hopeless* when it has a
       deadline ``d_j`` and ``t + E_j > d_j``; only a hopeless job yields. It yields to the
       first pending job ``k`` (submission order, ``k`` not ``j``) that has a deadline ``d_k``,
       that ``j`` blocks (some set of regions holds ``k`` in GPU memory on the GPUs free now,
       none on the GPUs left once ``j`` takes ``p``;
       :func:`~bacepipe_env.core.memory.largest_feasible_gpus`, bandwidth aside), that can
       still make it (the placement policy offers it ``p_k`` on the free GPUs and residual
       bandwidth of now, and ``t + E_k(p_k) <= d_k``) and that would take the GPUs now:
       ``finish-aware`` would start it on ``p_k`` (waiting for the next release would not
       finish it sooner), so the GPUs ``j`` leaves do not stand idle.

    A yielding job stays pending and is offered again after the next event, as any declined
    job; it waits only while it blocks a job that can still be on time, and that job's
    chance shrinks as time passes, so no job waits for ever. Deterministic, and it reads only
    what a scheduler knows (the free GPUs, the running jobs, the pending jobs' deadlines and
    profiles). A job without a deadline is never hopeless, so without deadlines the rule is
    ``finish-aware``, decision for decision.
    """

    name = "deadline-aware"

    def admit(self, sim: AdmissionView, job_id: int, placement: Placement) -> bool:
        """Whether finish-aware starts the job now and it need not yield to a job on time."""
        if not super().admit(sim, job_id, placement):
            return False
        return yield_to_deadline(sim, job_id, placement) is None


def yield_to_deadline(sim: AdmissionView, job_id: int, placement: Placement) -> int | None:
    """The pending job that ``job_id``, hopeless on ``placement`` now, yields to by
    :class:`DeadlineAwareAdmission`'s test, or None (no deadline, on time, or it blocks no
    job that can still make its own)."""
    deadlines = sim.scenario.deadlines
    due = deadlines.get(job_id) if deadlines else None
    if due is None:
        return None
    now = sim.time
    if now + sim.execution_time(job_id, placement) <= due:
        return None  # it can still make it: no reason to yield
    free = sim.free_gpus
    left = _left_after(free, placement)
    residual = release = None
    for k in sim.pending:
        due_k = deadlines.get(k)
        if k == job_id or due_k is None or due_k < now:
            continue  # no deadline, or already past it
        if not _blocks(sim, k, free, left):
            continue
        if residual is None:
            residual, release = sim.residual_rows, sim.next_release()
        offered = sim.placement_on(k, Release(now, free, residual))
        if offered is None:
            continue
        finish = now + sim.execution_time(k, offered)
        if finish > due_k:
            continue  # too late for it as well
        waited = None if release is None else finish_after_release(sim, k, release)
        if waited is not None and waited[0] < finish:
            continue  # finish-aware would hold it for the next release: no use yielding now
        return k
    return None


class DeadlinePlanAdmission(FinishAwareAdmission):
    """``finish-aware`` that also holds a job when a reservation plan predicts fewer deadline
    misses (then less tardiness) if it waits for the next GPU release (semantics §15).

    The offered job ``j`` on placement ``p`` at ``t`` = now starts now iff ``finish-aware``
    starts it and :func:`plan_start_or_hold` finds starting now no worse: two plans
    (:mod:`~bacepipe_env.core.reservation`: EDF with conservative backfilling on the pooled
    GPUs, a job found late sent to the back and counted as a miss) of the pending jobs, the
    announced ones (the calendar, each ready at its submission) and the running jobs' releases,

    - *start now*: ``j`` holds ``p``'s GPUs from ``t`` to ``t + E_j(p)``, the others planned;
    - *hold*: ``j`` is planned with the others, ready no earlier than the next release;

    and ``j`` waits iff the hold plan has fewer misses, or as many and less total tardiness
    (ties start now). With nothing running, or without deadlines, it is ``finish-aware``,
    decision for decision. Deterministic, and it reads only what a scheduler knows.
    """

    name = "deadline-plan"

    def admit(self, sim: AdmissionView, job_id: int, placement: Placement) -> bool:
        """Whether finish-aware starts the job now and the plan finds holding no better."""
        if not super().admit(sim, job_id, placement):
            return False
        return plan_start_or_hold(sim, job_id, placement)

    def resize_hurts(self, before: AdmissionView, after: Callable[[], AdmissionView]) -> bool:
        """Whether a resize of a running job (``after()``: the simulation once it is made,
        copied only when asked) makes the plan of the pending and announced jobs, and the
        running jobs' own lateness, worse in (misses, tardiness): the elasticity rule then
        leaves the job as it is, so that a grow never takes the GPUs the plan keeps for a
        job's deadline. Without deadlines nothing is planned and no copy is made."""
        if not before.scenario.deadlines:
            return False
        return plan_outlook(after()) > plan_outlook(before)


def _plan_job(sim: AdmissionView, job_id: int, ready: float, due: float, rank: float) -> PlanJob:
    """What ``job_id`` needs in a reservation plan: ``full_gpus`` GPUs for its isolated run
    time stretched by ``K* / full_gpus`` (:mod:`~bacepipe_env.core.reservation`)."""
    prof = sim.profile(job_id)
    g = sim.full_gpus(job_id)
    return PlanJob(job_id, ready, g, prof.ideal_execution * prof.k_star / g, due, rank)


def _waiting(sim: AdmissionView, skip: int | None = None) -> list[PlanJob]:
    """The pending and announced jobs (but ``skip``) as a plan reserves them."""
    deadlines, now = sim.scenario.deadlines, sim.time
    submits = sim.scenario.submit_times
    inf = float("inf")
    return [
        _plan_job(sim, k, max(now, submits[k]), deadlines.get(k, inf), submits[k])
        for k in (*sim.pending, *sim.announced())
        if k != skip
    ]


def plan_outlook(sim: AdmissionView) -> tuple[int, float]:
    """``(misses, tardiness in s)`` the reservation plan predicts from ``sim``'s state: the
    running jobs' by their predicted finishes, the pending and announced jobs' by a plan on
    the GPUs free now and the running jobs' releases."""
    deadlines, now = sim.scenario.deadlines, sim.time
    if not deadlines:
        return 0, 0.0
    running = sim.running_placements()
    misses, tardiness, _ = plan_lateness(
        FreeProfile(now, sum(sim.free_gpus), [(f, p.n_gpus) for p, f in running]), _waiting(sim)
    )
    for job_id, (_, _, finish) in ((j, sim.job_state(j)) for j in sim.running):
        due = deadlines.get(job_id)
        if due is not None and finish is not None and finish > due:
            misses, tardiness = misses + 1, tardiness + finish - due
    return misses, tardiness


def plan_start_or_hold(sim: AdmissionView, job_id: int, placement: Placement) -> bool:
    """True when :class:`DeadlinePlanAdmission`'s plans find starting ``job_id`` now on
    ``placement`` no worse than holding it to the next GPU release, in (misses, tardiness)."""
    deadlines = sim.scenario.deadlines
    release = sim.next_release() if deadlines else None
    if release is None:
        return True
    inf, now = float("inf"), sim.time
    submits = sim.scenario.submit_times
    others = _waiting(sim, skip=job_id)
    running = [(finish, p.n_gpus) for p, finish in sim.running_placements()]
    free = sum(sim.free_gpus)
    due = deadlines.get(job_id, inf)
    # start now: j's GPUs are taken until its predicted finish, and it is late or not by it
    finish = now + sim.execution_time(job_id, placement)
    go = FreeProfile(now, free - placement.n_gpus, [*running, (finish, placement.n_gpus)])
    misses, tardiness, _ = plan_lateness(go, others)
    if finish > due:
        misses, tardiness = misses + 1, tardiness + finish - due
    # hold: j is one more job of the plan, ready at the next release
    held = _plan_job(sim, job_id, release.time, due, submits[job_id])
    wait = FreeProfile(now, free, running)
    misses_h, tardiness_h, _ = plan_lateness(wait, [*others, held])
    return (misses, tardiness) <= (misses_h, tardiness_h)


#: Admission rule name -> class, in the order the docs list them.
ADMISSION_RULES: dict[str, type[AdmissionRule]] = {
    "greedy": GreedyAdmission,
    "finish-aware": FinishAwareAdmission,
    "full": FullAdmission,
    "announce-aware": AnnounceAwareAdmission,
    "deadline-aware": DeadlineAwareAdmission,
    "deadline-plan": DeadlinePlanAdmission,
}


def make_admission(rule: str | AdmissionRule) -> AdmissionRule:
    """An admission rule by name (``greedy``, ``finish-aware``, ``full``,
    ``announce-aware``, ``deadline-aware``, ``deadline-plan``), or the object."""
    if not isinstance(rule, str):
        if not callable(getattr(rule, "admit", None)):
            raise ValidationError("admission", rule, "must have an admit(sim, job, placement)")
        return rule
    try:
        return ADMISSION_RULES[rule]()
    except KeyError:
        raise ValidationError(
            "admission", rule, f"unknown rule; choose from: {', '.join(ADMISSION_RULES)}"
        ) from None
