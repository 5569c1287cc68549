"""The pending queue: the jobs waiting to start, in submission order, and what a decision reads
of them (semantics §4).

Besides the queue itself, a :class:`PendingQueue` keeps, once first asked, the indexes a long
queue needs so that a decision does not cost a pass over thousands of jobs: the ids as an
array, two max-heaps for Eqs. (9)-(10)'s divisors and, per job shape, its pending jobs. Each is
updated at every arrival, start and return to the queue, and gives what a plain pass would.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Mapping

import numpy as np

from .perf import JobProfile

__all__ = ["VECTOR_QUEUE", "PendingQueue"]

#: From this many pending jobs on, a decision's candidates are filtered with numpy (the same
#: tuple, in the same order; below it the plain loop is faster).
VECTOR_QUEUE = 48


class PendingQueue:
    """Pending job ids in submission order (``rank``: job id -> its place in that order), and
    the jobs tried in the current scheduling pass. ``min_floor``: each job's fewest GPUs
    anywhere (its smallest memory floor); ``profiles``: the jobs' profiles."""

    __slots__ = (
        "array",
        "epoch",
        "held",
        "maxima",
        "min_floor",
        "pending",
        "profiles",
        "rank",
        "shape_of",
        "shapes",
        "tried",
    )

    def __init__(
        self,
        rank: Mapping[int, int],
        min_floor: Mapping[int, int],
        profiles: Mapping[int, JobProfile],
    ) -> None:
        self.rank = rank
        self.min_floor = min_floor
        self.profiles = profiles
        self.reset()

    def reset(self) -> None:
        """Empty: no job pending, none tried."""
        # pending job ids in submission order (a dict: O(1) membership and removal)
        self.pending: dict[int, None] = {}
        self.array: np.ndarray | None = None  # the pending ids as an array, or stale
        # max-heaps of (-E(1), id) and (-b(K*), id), see maxima_now; None until asked
        self.maxima: tuple[list[tuple[float, int]], list[tuple[float, int]]] | None = None
        # per job shape, its memory floor and pending jobs (see shape_firsts); None until asked
        self.shapes: list[tuple[int, list[int]]] | None = None
        self.shape_of: dict[int, int] = {}
        self.tried: set[int] = set()  # offered in this pass, or sitting it out
        self.held: list[int] = []  # preempted at this instant: not offered in its pass
        # bumped at every arrival, start and return to the queue: what was worked out of the
        # queue at one epoch holds while it stands (see core.helped)
        self.epoch = 0

    def copy(self) -> PendingQueue:
        """An independent copy (the ids array is replaced, never changed: shared)."""
        new = object.__new__(PendingQueue)
        for name in PendingQueue.__slots__:
            setattr(new, name, getattr(self, name))
        new.pending = dict(self.pending)
        if self.maxima is not None:
            new.maxima = (list(self.maxima[0]), list(self.maxima[1]))
        if self.shapes is not None:
            new.shapes = [(need, list(jobs)) for need, jobs in self.shapes]
        new.tried = set(self.tried)
        new.held = list(self.held)
        return new

    # ------------------------------------------------------------------ changes
    def arrive(self, job_id: int) -> None:
        """A submitted job joins the queue, the latest in submission order."""
        self.epoch += 1
        self.pending[job_id] = None
        if self.array is not None:  # kept, not rebuilt: O(1) numpy calls
            self.array = np.append(self.array, job_id)
        if self.maxima is not None:
            self._push_maxima(job_id)
        if self.shapes is not None:
            self._shape_add(job_id)

    def start(self, job_id: int) -> None:
        """A job leaves the queue: it starts."""
        self.epoch += 1
        del self.pending[job_id]
        if self.shapes is not None:
            self._shape_remove(job_id)
        arr = self.array
        if arr is not None:  # kept on a long queue, dropped on a short one (cheaper to rebuild)
            if len(self.pending) < VECTOR_QUEUE:
                self.array = None
            else:
                self.array = np.delete(arr, int(np.flatnonzero(arr == job_id)[0]))

    def put_back(self, job_id: int) -> None:
        """An interrupted job returns to the queue, in its submission order."""
        self.epoch += 1
        pending, rank = list(self.pending), self.rank
        i = len(pending)
        while i and rank[pending[i - 1]] > rank[job_id]:
            i -= 1
        pending.insert(i, job_id)  # back in submission order
        self.pending = dict.fromkeys(pending)
        self.array = None
        self._push_maxima(job_id)
        self._shape_add(job_id)

    # ------------------------------------------------------------------ reads
    def ids(self) -> np.ndarray:
        """The pending job ids as an intp array, in submission order (read-only)."""
        if self.array is None:
            self.array = np.fromiter(self.pending, np.intp, len(self.pending))
        return self.array

    def maxima_now(self) -> tuple[float, float]:
        """``(max E(1), max b(K*))`` over the queue, 0.0 when it is empty, from two max-heaps
        kept from the first call on (stale tops dropped when asked): O(log n) per decision. A
        maximum is exact, so these are the floats a pass over the queue gives."""
        heaps = self.maxima
        if heaps is None:
            heaps = self.maxima = ([], [])
            for j in self.pending:
                self._push_maxima(j)
        pending = self.pending
        out = []
        for heap in heaps:
            while heap and heap[0][1] not in pending:
                heapq.heappop(heap)
            out.append(-heap[0][0] if heap else 0.0)
        return out[0], out[1]

    def candidates(
        self, free: int, by_shape: bool, need_array: Callable[[], np.ndarray]
    ) -> tuple[int, ...] | np.ndarray | None:
        """The jobs that may be offered now (pending, not tried in this pass, with a smallest
        memory floor no larger than the ``free`` GPUs together), in submission order; None if
        there is none. From ``VECTOR_QUEUE`` pending jobs on they come as an intp array (the
        same ids in the same order; ``need_array``: each job's smallest floor, by id), or,
        with ``by_shape``, as the earliest candidate of each shape (:meth:`shape_firsts`)."""
        tried, need = self.tried, self.min_floor
        # A job whose memory floor exceeds every free GPU together cannot start now.
        if by_shape and len(self.pending) >= VECTOR_QUEUE:
            firsts = self.shape_firsts(free)
            if firsts:
                return firsts
        elif len(self.pending) < VECTOR_QUEUE:
            candidates = tuple(j for j in self.pending if j not in tried and need[j] <= free)
            if candidates:
                return candidates
        else:  # the same ids, filtered in numpy
            pending = self.ids()
            fit: np.ndarray = pending[need_array()[pending] <= free]
            if tried:
                fit = fit[~np.isin(fit, np.fromiter(tried, np.intp, len(tried)))]
            if len(fit):
                return fit
        return None

    def shape_firsts(self, free: int) -> tuple[int, ...]:
        """The earliest candidate of each shape, in submission order: a shape is a job's
        ``(E(1), b(K*), memory floor)``, everything Eq. (12) and the candidate filter read of
        it, so its other candidates score the same and come later. The shapes' queues are
        built on first use and kept at each arrival, start and return to the queue."""
        groups = self._shape_queues()
        tried = self.tried
        firsts = []
        for need, jobs in groups:
            if jobs and need <= free:
                for j in jobs:
                    if j not in tried:
                        firsts.append(j)
                        break
        firsts.sort(key=self.rank.__getitem__)
        return tuple(firsts)

    # ------------------------------------------------------------------ indexes
    def _push_maxima(self, job_id: int) -> None:
        """A job (back) in the queue: onto :meth:`maxima_now`'s heaps, once they exist."""
        heaps = self.maxima
        if heaps is not None:
            p = self.profiles[job_id]
            heapq.heappush(heaps[0], (-p.single_gpu_exec, job_id))
            heapq.heappush(heaps[1], (-p.min_bandwidth_kstar, job_id))

    def _shape_queues(self) -> list[tuple[int, list[int]]]:
        """Per shape, its memory floor and its pending jobs in submission order."""
        if self.shapes is None:
            keys: dict[tuple[float, float, int], int] = {}
            shapes: list[tuple[int, list[int]]] = []
            for j, p in self.profiles.items():
                key = (p.single_gpu_exec, p.min_bandwidth_kstar, self.min_floor[j])
                if key not in keys:
                    keys[key] = len(shapes)
                    shapes.append((self.min_floor[j], []))
                self.shape_of[j] = keys[key]
            for j in self.pending:  # already in submission order
                shapes[self.shape_of[j]][1].append(j)
            self.shapes = shapes
        return self.shapes

    def _shape_add(self, job_id: int) -> None:
        """A job (back) in the queue: into its shape's queue, in submission order."""
        if self.shapes is not None:
            jobs, rank = self.shapes[self.shape_of[job_id]][1], self.rank
            if not jobs or rank[jobs[-1]] < rank[job_id]:
                jobs.append(job_id)  # an arrival: the latest so far
            else:
                bisect.insort(jobs, job_id, key=rank.__getitem__)

    def _shape_remove(self, job_id: int) -> None:
        """A job out of the queue: out of its shape's queue."""
        if self.shapes is not None:
            jobs, rank = self.shapes[self.shape_of[job_id]][1], self.rank
            del jobs[bisect.bisect_left(jobs, rank[job_id], key=rank.__getitem__)]
