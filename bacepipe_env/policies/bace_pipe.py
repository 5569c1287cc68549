"""BACE-Pipe exactly as printed: dynamic priority (Eqs. 9-12), Pathfinder (Alg. 1) and the
Cost-Min Allocator (Alg. 2), composed from :mod:`bacepipe_env.scheduling`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..core.perf import JobProfile
from ..core.placement import Placement
from ..core.simulator import SchedulerView
from ..core.snapshot import QueueSnapshot, pending_maxima
from ..errors import ValidationError
from ..scheduling import compiled as compiled_pathfinder
from ..scheduling.pathfinder import pathfinder_unchecked
from ..scheduling.priority import priority_score
from .base import Ordering, Policy

__all__ = [
    "PathfinderPlacement",
    "PriorityOrdering",
    "bace_pipe",
    "placement_inputs",
    "to_placement",
]


def placement_inputs(
    view: SchedulerView, prof: JobProfile
) -> tuple[
    tuple[int, ...],
    tuple[float, ...],
    tuple[tuple[float, ...], ...],
    int,
    float,
    Callable[[int], float],
]:
    """What every placement rule reads: free GPUs, prices, residual bandwidth, K*, the
    activation size and the job's ``t_comp`` (the arguments of :func:`pathfinder`)."""
    return (
        view.free_gpus,
        view.cluster.prices,
        view.residual_rows,
        prof.k_star,
        prof.activation_bytes,
        prof.t_comp,
    )


def to_placement(path: list[int], alloc: dict[int, int]) -> Placement | None:
    """A rule's ``(path, allocation)`` as a Placement; None for the empty answer."""
    if not path:
        return None
    return Placement.of(tuple(path), tuple([alloc[r] for r in path]))


class PriorityOrdering(Ordering):
    """Eq. (12): the candidate with the highest priority; ties to the earlier submission, then
    the lower job id. ``I_j`` and ``D_j`` are normalised over the whole pending queue (jobs that
    failed to place earlier in this pass included), alpha is Eq. (11) now."""

    name = "priority"
    #: From this many candidates on, :meth:`choose` scores them with numpy on the
    #: simulator's columns (:meth:`~bacepipe_env.core.simulator.Simulator.priority_columns`)
    #: instead of building a snapshot; the two give bit-identical scores (the same IEEE
    #: operations in the same order, element by element) and so the same choice.
    vector_from = 24

    def choose(self, view: SchedulerView, candidates: Sequence[int]) -> int:
        """Eq. (12)'s choice among ``candidates``; vectorised over a long queue."""
        columns = getattr(view, "priority_columns", None)
        if columns is None:
            return super().choose(view, candidates)
        if len(candidates) < self.vector_from:
            # a short list: pick's arithmetic on the profiles, no snapshot (a long queue's
            # maxima come from the simulator's heaps)
            if len(candidates) == 1:
                return candidates[0]
            profile = view.profile
            e_max, b_max = pending_maxima(view)
            e1 = [profile(j).single_gpu_exec for j in candidates]
            b = [profile(j).min_bandwidth_kstar for j in candidates]
            return _first_best(candidates, e1, b, e_max, b_max, view.network_utilization)
        c = np.fromiter(candidates, dtype=np.intp, count=len(candidates))
        return candidates[self._best(view, c)]

    @property
    def by_shape(self) -> bool:
        """Eq. (12) scores jobs of one shape (E(1), b(K*)) alike and takes the first of equals,
        so the simulator may offer a long queue's earliest candidate of each shape only; not a
        subclass that overrides :meth:`choose`."""
        return type(self).choose is PriorityOrdering.choose

    def choose_array(self, view: SchedulerView, candidates: np.ndarray) -> int:
        """:meth:`choose` on the candidates as an intp array (what
        :meth:`~bacepipe_env.core.simulator.Simulator.run` passes on a long queue), without
        a tuple of them; a subclass that overrides ``choose`` is asked through it."""
        if type(self).choose is not PriorityOrdering.choose:
            return self.choose(view, tuple(candidates.tolist()))
        return int(candidates[self._best(view, candidates)])

    def _best(self, view: SchedulerView, c: np.ndarray) -> int:
        """The index of the first maximum of Eq. (12) over the candidates ``c``."""
        _, e1, bk = view.priority_columns()  # type: ignore[attr-defined]
        e_max, b_max = pending_maxima(view)  # Eqs. (9)-(10) normalise over the queue
        alpha = view.network_utilization
        intensity = e1[c] / e_max if e_max > 0.0 else np.zeros(len(c))  # Eq. (9)
        sensitivity = bk[c] / b_max if b_max > 0.0 else np.zeros(len(c))  # Eq. (10)
        scores = (1.0 - alpha) * (1.0 - intensity) + alpha * (1.0 - sensitivity)  # Eq. (12)
        return int(np.argmax(scores))  # the first maximum, as pick's loop

    def pick(self, queue: QueueSnapshot, legal: Sequence[int]) -> int:
        """The legal slot with the highest Eq. (12) score (the first of equals)."""
        if len(legal) == 1:
            return legal[0]
        e1 = [queue.single_gpu_exec[i] for i in legal]
        b = [queue.min_bandwidth_kstar[i] for i in legal]
        return _first_best(
            legal, e1, b, queue.pending_e1_max, queue.pending_bkstar_max, queue.alpha
        )


def _first_best(
    items: Sequence[int],
    e1: list[float],
    b: list[float],
    e_max: float,
    b_max: float,
    alpha: float,
) -> int:
    """The item with the highest Eq. (12) score (the first of equals, so submission order
    breaks ties), its E(1) and b(K*) normalised by the pending queue's maxima (Eqs. 9-10;
    never below the items' own, as if the items were part of the queue)."""
    e_max, b_max = max(e_max, max(e1)), max(b_max, max(b))
    best, best_score = items[0], -float("inf")
    for item, e, bw in zip(items, e1, b):
        score = priority_score(e, bw, e_max, b_max, alpha)
        if score > best_score:
            best, best_score = item, score
    return best


class PathfinderPlacement:
    """Alg. 1 (with Alg. 2 inside) on the free GPUs and the residual bandwidth.

    ``compiled`` picks the implementation. ``None`` (the default) decides per run with
    :func:`~bacepipe_env.scheduling.compiled.worth_it`: the numba kernel of
    :mod:`bacepipe_env.scheduling.compiled` on a cluster of 16 regions or more when numba is
    installed (the ``fast`` extra), ``BACEPIPE_COMPILED`` is not ``0``, and the run is big
    enough to pay for loading numba (about 0.5 s, once per process) or it is loaded already;
    the Python reference otherwise. ``False`` always runs the reference; ``True`` runs the
    kernel at every size and needs numba. Both give the same placements. The kernel reads the
    simulator's arrays (:meth:`~bacepipe_env.core.simulator.Simulator.placement_arrays`);
    other views (a hypothetical state's) go through the reference.
    """

    #: The result depends only on the cluster, the free GPUs, the residual bandwidth and the
    #: job's profile, so callers may memoise it on those.
    pure = True

    def __init__(self, partial_take: bool = False, *, compiled: bool | None = None) -> None:
        self.partial_take = partial_take
        self.name = "pathfinder+partial" if partial_take else "pathfinder"
        if compiled not in (None, True, False):
            raise ValidationError("compiled", compiled, "must be None, True or False")
        if compiled and not compiled_pathfinder.available():
            raise ValidationError(
                "compiled", compiled, "needs numba: pip install 'bacepipe-env[fast]'"
            )
        self.compiled = compiled

    @property
    def memo_key(self) -> bool:
        """What fixes the answers (``compiled`` does not): memoised previews are shared by the
        Pathfinders of a process with the same ``partial_take``."""
        return self.partial_take

    def place(self, view: SchedulerView, job_id: int) -> Placement | None:
        """Pathfinder's path and Cost-Min's GPUs; ``None`` when no GPU is free."""
        prof = view.profile(job_id)
        if self.compiled is not False and self._kernel_for(view):
            kernel = compiled_pathfinder.kernel()
            if kernel is not None:
                free, price, residual = view.placement_arrays()  # type: ignore[attr-defined]
                path_a, gpus_a = kernel(
                    free,
                    price,
                    residual,
                    prof.k_star,
                    prof.activation_bytes,
                    prof.compute_coeff,
                    prof.stage_overhead,
                    self.partial_take,
                )
                if not len(path_a):
                    return None
                return Placement.of(tuple(path_a.tolist()), tuple(gpus_a.tolist()))
        path, alloc = pathfinder_unchecked(*placement_inputs(view, prof), self.partial_take)
        return to_placement(path, alloc)

    def _kernel_for(self, view: SchedulerView) -> bool:
        """Whether ``view`` gets the kernel: it has the simulator's arrays, and ``compiled`` is
        True or the automatic choice says so."""
        if not hasattr(view, "placement_arrays"):
            return False
        if self.compiled:
            return True
        return compiled_pathfinder.worth_it(view.cluster.n_regions, int(getattr(view, "n_jobs", 0)))


def bace_pipe(partial_take: bool = False, *, compiled: bool | None = None) -> Policy:
    """The full BACE-Pipe policy; ``compiled`` picks Pathfinder's implementation as
    :class:`PathfinderPlacement`'s does (the same placements either way)."""
    return Policy(
        "bace-pipe+partial" if partial_take else "bace-pipe",
        PriorityOrdering(),
        PathfinderPlacement(partial_take, compiled=compiled),
    )
