"""Pathfinder (Alg. 1) with the Cost-Min Allocator (Alg. 2) compiled with numba: the optional
``fast`` extra (``pip install 'bacepipe-env[fast]'``).

The pure-Python :func:`~bacepipe_env.scheduling.pathfinder.pathfinder_unchecked` is the
reference. This kernel makes the same IEEE double operations in the same order (no fastmath),
so it returns the same path and GPUs on every instance; ``tests/scheduling/test_compiled.py``
checks that on random instances, and the simulator's records under both on whole runs. It
pays on large clusters, where Alg. 1's widest-path growth is O(K) per hop from each of K
starts. :class:`~bacepipe_env.policies.bace_pipe.PathfinderPlacement` calls it on the
simulator's own arrays (:meth:`~bacepipe_env.core.simulator.Simulator.placement_arrays`) when
asked to, or by default when :func:`worth_it` says the run pays for loading numba.

numba is imported, and the kernel compiled (once, then cached on disk beside this module, or
in the user's cache folder when the package's is read-only; afresh in each process when numba
can cache nowhere), on the first call of :func:`kernel`, never at ``import bacepipe_env``.
Setting the environment variable ``BACEPIPE_COMPILED=0`` turns the automatic use off.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable

import numpy as np

from .pathfinder import COST_TIE_RTOL

__all__ = [
    "COMPILED_FROM",
    "COMPILED_WORK",
    "available",
    "enabled",
    "kernel",
    "loaded",
    "pathfinder_arrays",
    "worth_it",
]

#: From this many regions on, the compiled kernel is faster per call than the Python loops
#: (1.7 against 12 us at 16 regions, 10 against 390 us at 64, on a phase-2 instance).
COMPILED_FROM = 16
#: Loading numba and the cached kernel costs about 0.5 s of CPU once per process. A run whose
#: jobs x regions^2 reaches this much work pays for it (about 12,000 jobs on 128 regions,
#: 50,000 on 64), so the automatic choice loads numba for such a run; once it is loaded,
#: every run of :data:`COMPILED_FROM` regions or more in the process uses it.
COMPILED_WORK = 2e8

Kernel = Callable[..., tuple[np.ndarray, np.ndarray]]
_KERNEL: Kernel | None = None
_TRIED = False


@functools.cache
def available() -> bool:
    """Whether numba can be imported here (found without importing it)."""
    import importlib.util

    return importlib.util.find_spec("numba") is not None


def enabled() -> bool:
    """Whether the automatic use is on: numba installed and ``BACEPIPE_COMPILED`` not ``0``."""
    return os.environ.get("BACEPIPE_COMPILED", "1") != "0" and available()


def loaded() -> bool:
    """Whether the kernel is loaded in this process (its one-time cost paid)."""
    return _KERNEL is not None


def worth_it(n_regions: int, n_jobs: int) -> bool:
    """The automatic choice: run the kernel on this run? From :data:`COMPILED_FROM` regions
    on, if it is loaded already or the run is big enough to pay for loading it
    (:data:`COMPILED_WORK`), and :func:`enabled`."""
    if n_regions < COMPILED_FROM or not enabled():
        return False
    return loaded() or n_jobs * n_regions * n_regions >= COMPILED_WORK


def kernel() -> Kernel | None:
    """The compiled :func:`pathfinder_arrays`, or ``None`` when numba is not installed."""
    global _KERNEL, _TRIED
    if not _TRIED:
        _TRIED = True
        try:
            import numba
        except ImportError:
            return None
        try:  # cached beside this module, or in the user's cache folder when that is read-only
            _KERNEL = numba.njit(cache=True, nogil=True)(pathfinder_arrays)
        except RuntimeError:  # no folder numba can cache in: compile in each process instead
            _KERNEL = numba.njit(cache=False, nogil=True)(pathfinder_arrays)
    return _KERNEL


def pathfinder_arrays(
    free: np.ndarray,
    price: np.ndarray,
    bw: np.ndarray,
    k_star: int,
    a: float,
    coeff: float,
    overhead: float,
    partial_take: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Alg. 1 and Alg. 2 on arrays: free GPUs (int64, K), prices (float64, K) and residual
    bandwidth (float64, K x K); ``t_comp(L) = coeff / L + overhead``. Returns the path and the
    GPUs of each of its regions (int64 arrays, empty when no GPU is free), as
    :func:`~bacepipe_env.scheduling.pathfinder.pathfinder_unchecked` returns them. Runs as
    plain Python too (slowly): the compiled form is :func:`kernel`'s."""
    k = free.shape[0]
    # Phase 1, lines 1-4: the cheapest region that fits K* alone (ties to the lower index).
    best = -1
    for r in range(k):
        if free[r] >= k_star and (best < 0 or price[r] < price[best]):
            best = r
    if best >= 0:
        return np.array([best], dtype=np.int64), np.array([k_star], dtype=np.int64)

    # Phase 2, lines 5-22.
    with_gpus = np.empty(k, dtype=np.int64)
    n_with = 0
    for r in range(k):
        if free[r] > 0:
            with_gpus[n_with] = r
            n_with += 1
    path = np.empty(k, dtype=np.int64)
    on_path = np.zeros(k, dtype=np.bool_)
    alloc = np.zeros(k, dtype=np.int64)  # region -> GPUs, for the path being priced
    order = np.empty(k, dtype=np.int64)
    best_path = np.empty(0, dtype=np.int64)
    best_gpus = np.empty(0, dtype=np.int64)
    g_max, c_min = 0, math.inf
    for i in range(n_with):  # line 6 (a start needs a free GPU)
        start = with_gpus[i]
        # Alg. 1 lines 7-17 from this start (grow_widest_path)
        n_path = 1
        path[0] = start
        on_path[:] = False
        on_path[start] = True
        tail, g, b_min = start, min(free[start], k_star), math.inf  # lines 7-8
        while n_path < k and g < k_star:  # line 9
            nxt, b_next = -1, -math.inf
            for j in range(n_with):  # line 10: the widest link to an unvisited region
                u = with_gpus[j]
                if bw[tail, u] > b_next and not on_path[u]:
                    nxt, b_next = u, bw[tail, u]
            if nxt < 0:
                break
            b_tmp = b_next if b_next < b_min else b_min  # line 11
            hi = min(g + free[nxt], k_star)  # line 12
            lo = g + 1 if partial_take else hi
            g_new = 0
            if b_tmp > 0.0:
                need = a / b_tmp
                for cand in range(hi, lo - 1, -1):
                    if need <= coeff / cand + overhead:  # line 13: constraint (6)
                        g_new = cand
                        break
            if g_new == 0:
                break  # line 17
            path[n_path] = nxt  # lines 14-15
            n_path += 1
            on_path[nxt] = True
            tail, b_min, g = nxt, b_tmp, g_new
        if g < g_max:
            continue  # line 20 cannot pick it
        # line 18, Alg. 2: one GPU per region, then the cheapest regions first (a stable
        # insertion sort by price: ties keep path order)
        for j in range(n_path):
            alloc[path[j]] = 1
            order[j] = path[j]
            m = j
            while m > 0 and price[order[m - 1]] > price[order[m]]:
                order[m - 1], order[m] = order[m], order[m - 1]
                m -= 1
        remaining = g - n_path
        for j in range(n_path):
            if remaining == 0:
                break
            r = order[j]
            add = min(free[r] - 1, remaining)
            alloc[r] += add
            remaining -= add
        # line 19: the GPU-weighted price, summed in region-index order (canonical)
        total = 0.0
        for r in range(k):
            if on_path[r]:
                total += alloc[r] * price[r]
        c_avg = total / g
        # line 20; the tie test is math.isclose(c_avg, c_min, rel_tol=COST_TIE_RTOL,
        # abs_tol=0.0) as CPython computes it (c_avg < c_min here, so they differ)
        tie = False
        if not (math.isinf(c_avg) or math.isinf(c_min)):
            diff = abs(c_min - c_avg)
            tie = diff <= abs(COST_TIE_RTOL * c_min) or diff <= abs(COST_TIE_RTOL * c_avg)
        if g > g_max or (g == g_max and c_avg < c_min and not tie):
            best_path = path[:n_path].copy()  # lines 21-22
            best_gpus = np.empty(n_path, dtype=np.int64)
            for j in range(n_path):
                best_gpus[j] = alloc[path[j]]
            g_max, c_min = g, c_avg
    return best_path, best_gpus
