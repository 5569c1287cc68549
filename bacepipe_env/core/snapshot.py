"""What an ordering sees at a decision: the typed contract between the simulator, the
orderings, the environment and the agents.

An ordering decides from a :class:`QueueSnapshot` alone, so the same ordering object serves
the simulator (which builds the snapshot from its state) and a heuristic agent on the
Gymnasium environment (which receives the snapshot the environment built at that decision).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .job_fields import JOB_FIELDS, attach, snapshot_values, split_declared

if TYPE_CHECKING:
    from .views import SchedulerView

__all__ = ["VECTOR_MAXIMA_FROM", "QueueSnapshot", "pending_count", "pending_maxima"]


#: The snapshot's own per-candidate fields; the job fields' (``JobField.snapshot``, such as
#: ``submit_time``) join them (the only ones a copy could need to copy).
_SEQUENCES = ("job_ids", "single_gpu_exec", "min_bandwidth_kstar", "ideal_execution", "due")


def _sequences() -> tuple[str, ...]:
    return _SEQUENCES + tuple(f.snapshot for f in JOB_FIELDS.values() if f.snapshot)


@dataclass(frozen=True)
class QueueSnapshot:
    """The candidate jobs of one decision, in submission order, with what orderings read.

    Eqs. (9)-(10) normalise over the whole pending queue, candidates or not, so its maxima
    travel with the candidates. Every job field with a ``snapshot`` name in
    :data:`~bacepipe_env.core.job_fields.JOB_FIELDS` has its per-candidate tuple here: a
    declared field (``submit_time``), else an attribute :meth:`from_view` sets.
    """

    job_ids: tuple[int, ...]  # candidates, in submission order
    single_gpu_exec: tuple[float, ...]  # E(1) of each candidate, s (Eq. 9 input)
    min_bandwidth_kstar: tuple[float, ...]  # b(K*) of each candidate, bytes/s (Eq. 10 input)
    submit_time: tuple[float, ...]  # s
    pending_e1_max: float  # max E(1) over the pending queue, s
    pending_bkstar_max: float  # max b(K*) over the pending queue, bytes/s
    alpha: float  # Eq. (11) now
    time: float  # s
    # E* of each candidate (its isolated run time as the scheduler estimates it), s; and when
    # it is due (semantics §15), s, inf without a deadline. Empty in a snapshot built by hand.
    ideal_execution: tuple[float, ...] = ()
    due: tuple[float, ...] = ()

    def __len__(self) -> int:
        return len(self.job_ids)

    def __deepcopy__(self, memo: dict[int, object]) -> QueueSnapshot:
        """Itself when immutable (a frozen dataclass whose sequences are tuples of numbers, as
        :meth:`from_view` makes them), since a copy would be equal in every way; else a copy.
        SB3's DummyVecEnv deep-copies every env's ``info`` at every step, where walking the
        tuples had cost a sixth of the step."""
        names = _sequences()
        if all(type(getattr(self, name, ())) is tuple for name in names):
            return self
        copies = {
            name: copy.deepcopy(getattr(self, name), memo) for name in names if hasattr(self, name)
        }
        mine, extra = split_declared(type(self), copies)
        return attach(dataclasses.replace(self, **mine), extra)

    @classmethod
    def from_view(cls, view: SchedulerView, candidates: Sequence[int]) -> QueueSnapshot:
        """The snapshot of ``candidates`` (job ids) on ``view``'s state."""
        profiles = [view.profile(j) for j in candidates]
        e_max, b_max = pending_maxima(view)
        scenario = getattr(view, "scenario", None)
        deadlines = {} if scenario is None else scenario.deadlines
        mine, extra = split_declared(cls, snapshot_values(p.job for p in profiles))
        snapshot = cls(
            job_ids=tuple(candidates),
            single_gpu_exec=tuple([p.single_gpu_exec for p in profiles]),
            min_bandwidth_kstar=tuple([p.min_bandwidth_kstar for p in profiles]),
            pending_e1_max=e_max,
            pending_bkstar_max=b_max,
            alpha=view.network_utilization,
            time=view.time,
            ideal_execution=tuple([p.ideal_execution for p in profiles]),
            due=tuple([deadlines.get(j, math.inf) for j in candidates]),
            **mine,
        )
        return attach(snapshot, extra) if extra else snapshot


#: From this many pending jobs on, :func:`pending_maxima` asks a view with its own
#: ``pending_maxima`` (the simulator keeps them in heaps) instead of passing over the queue.
VECTOR_MAXIMA_FROM = 48


def pending_maxima(view: SchedulerView) -> tuple[float, float]:
    """``(max E(1), max b(K*))`` over the pending queue, 0.0 when it is empty: the divisors of
    Eqs. (9)-(10). On a long queue, a view with its own ``pending_maxima`` (the simulator's
    heaps) is asked; a maximum is exact, so both ways give the same floats."""
    own = getattr(view, "pending_maxima", None)
    if own is not None and pending_count(view) >= VECTOR_MAXIMA_FROM:
        maxima: tuple[float, float] = own()
        return maxima
    e_max = b_max = 0.0
    for j in view.pending:
        p = view.profile(j)
        if p.single_gpu_exec > e_max:
            e_max = p.single_gpu_exec
        if p.min_bandwidth_kstar > b_max:
            b_max = p.min_bandwidth_kstar
    return e_max, b_max


def pending_count(view: SchedulerView) -> int:
    """How many jobs are pending on ``view`` (the simulator's ``n_pending``, else
    ``len(view.pending)``)."""
    n = getattr(view, "n_pending", None)
    return len(view.pending) if n is None else int(n)
