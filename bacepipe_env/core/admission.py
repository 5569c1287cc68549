"""Admission rules: whether a job takes the placement it is offered now (SPEC section 3b).

The paper's Alg. 1 never waits: a job starts on whatever path Pathfinder finds, however few
GPUs it has. When a job starts is a scheduling decision of its own, so it is a third plug point
beside ordering and placement, applied identically to every policy:

- ``greedy``: start whenever a placement that fits in GPU memory exists (the paper's rule);
- ``finish-aware``: start now only if the job's predicted completion now is no later than its
  predicted completion when it waits for the next GPU release and takes the placement the same
  policy would offer then;
- ``full``: start only with ``min(K*, the GPUs the placement policy gives it on the idle
  cluster)``.

A declined job stays pending and is offered again after the next event; the scheduling pass
goes on with the other jobs. Predictions use only what a scheduler knows: the running jobs'
finish times and resources, never future arrivals. A learned agent that can wait decides
admission itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..errors import ValidationError
from .placement import Placement

if TYPE_CHECKING:
    from .simulator import Release, Simulator

__all__ = [
    "ADMISSION_RULES",
    "AdmissionRule",
    "FinishAwareAdmission",
    "FullAdmission",
    "GreedyAdmission",
    "finish_after_release",
    "make_admission",
]


class AdmissionRule(Protocol):
    """Decides whether ``job_id`` starts now on ``placement`` (which fits in memory)."""

    name: str

    def admit(self, sim: Simulator, job_id: int, placement: Placement) -> bool:
        """True to start now, False to leave the job pending until the next event."""
        ...


class GreedyAdmission:
    """Start whenever a feasible placement exists (Alg. 1 as printed)."""

    name = "greedy"

    def admit(self, sim: Simulator, job_id: int, placement: Placement) -> bool:
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

    def admit(self, sim: Simulator, job_id: int, placement: Placement) -> bool:
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
    sim: Simulator, job_id: int, release: Release
) -> tuple[float, Placement] | None:
    """``(finish time, placement)`` of ``job_id`` if it waits for ``release`` (the state after
    the next GPU release, :meth:`Simulator.next_release`) and starts then on what the placement
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

    def admit(self, sim: Simulator, job_id: int, placement: Placement) -> bool:
        """Whether the placement has the job's full GPU count."""
        return placement.n_gpus >= sim.full_gpus(job_id)


#: Admission rule name -> class, in the order the docs list them.
ADMISSION_RULES: dict[str, type[AdmissionRule]] = {
    "greedy": GreedyAdmission,
    "finish-aware": FinishAwareAdmission,
    "full": FullAdmission,
}


def make_admission(rule: str | AdmissionRule) -> AdmissionRule:
    """An admission rule by name (``greedy``, ``finish-aware``, ``full``), or the object."""
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
