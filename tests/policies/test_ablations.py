"""Every registered policy is the (ordering, placement) pair semantics §6 names, checked decision
by decision against the pure functions of :mod:`bacepipe_env.scheduling` as the reference.

Two kinds of lockstep:

- *on BACE-Pipe's states*: one simulator is stepped by the full BACE-Pipe; at each decision the
  ablations' ``choose`` / ``place`` are called on that same state (both are read-only) and
  compared with BACE-Pipe's own components and with the reference. An ablation must differ
  from BACE-Pipe only in the part it removes.
- *on each policy's own run*: each policy steps its own simulator and every choice and
  placement it makes is compared with the reference.

References (semantics §5-§6):

- FCFS: the first candidate (candidates come in submission order).
- Priority (Eq. 12): ``priority_scores`` over the whole pending queue with alpha = Eq. (11)
  from ``network_utilization(reserved, capacity)``; the best candidate, ties to the earlier
  submission.
- SJF: the smallest E(1), ties to the earlier submission.
- LCF, LDF, CR-LCF: ``lcf``, ``ldf``, ``cr_lcf`` with the job's per-region memory floor as
  ``min_gpus`` (semantics §3a: they choose among regions that can host the floor).
- On a policy's own run, a placement below the memory floor of a region on its path starts
  nothing (the job stays pending), whatever the policy.
- Pathfinder: ``pathfinder(free, price, residual, K*, A, t_comp)``.
- w/o Pathfinder: the CR-LDF path (``cr_ldf``) with its GPU count g, then Alg. 2
  (``cost_min_allocate``) on that path.
- w/o Cost-Min: Alg. 1's phase 1 unchanged (one region fits K* -> identical to BACE-Pipe);
  otherwise Alg. 1's per-start path growth (written out below, independently of the library),
  each path allocated by ``even_allocate``, the most GPUs winning, ties to the strictly lower
  average price. The same reference with ``cost_min_allocate`` must give ``pathfinder``
  itself, which checks the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from bacepipe_env.core import Placement, Simulator
from bacepipe_env.errors import SimulationError
from bacepipe_env.policies import PathfinderPlacement, PriorityOrdering
from bacepipe_env.policies.registry import make_policy, policy_names
from bacepipe_env.scenarios import load_scenario, synthetic_scenario
from bacepipe_env.scheduling import (
    COST_TIE_RTOL,
    cost_min_allocate,
    network_utilization,
    pathfinder,
    priority_scores,
)
from bacepipe_env.scheduling.baselines import cr_lcf, cr_ldf, even_allocate, lcf, ldf

# ---------------------------------------------------------------------------------------------
# references
# ---------------------------------------------------------------------------------------------


def _state(sim: Simulator, job_id: int):
    prof = sim.profile(job_id)
    return (
        np.array(sim.free_gpus),
        np.array(sim.cluster.prices, dtype=float),
        np.array(sim.residual_rows, dtype=float),
        prof,
    )


def _placement(path: list[int], alloc: dict[int, int]) -> Placement | None:
    return Placement.from_allocation(path, alloc) if path else None


def ref_fcfs(sim: Simulator, cands: Sequence[int]) -> int:
    return cands[0]


def ref_priority(sim: Simulator, cands: Sequence[int]) -> int:
    pending = sim.pending
    alpha = network_utilization(sim.reserved_bandwidth, sim.cluster.bandwidth)
    scores = priority_scores(
        [sim.profile(j).single_gpu_exec for j in pending],
        [sim.profile(j).min_bandwidth_kstar for j in pending],
        alpha,
    )
    by_job = dict(zip(pending, scores))
    best = max(by_job[j] for j in cands)
    return next(j for j in cands if by_job[j] == best)  # candidates are in submission order


def ref_sjf(sim: Simulator, cands: Sequence[int]) -> int:
    e1 = [sim.profile(j).single_gpu_exec for j in cands]
    return cands[e1.index(min(e1))]  # index() finds the first, i.e. the earliest submission


def _dues(sim: Simulator, cands: Sequence[int]) -> list[float]:
    deadlines = sim.scenario.deadlines
    return [deadlines[j] if j in deadlines else float("inf") for j in cands]


def ref_edf(sim: Simulator, cands: Sequence[int]) -> int:
    dues = _dues(sim, cands)
    return cands[dues.index(min(dues))]  # the first of equal deadlines: the earliest submitted


def ref_lsf(sim: Simulator, cands: Sequence[int]) -> int:
    starts = [d - sim.profile(j).ideal_execution for j, d in zip(cands, _dues(sim, cands))]
    return cands[starts.index(min(starts))]


def ref_edf_triage(sim: Simulator, cands: Sequence[int]) -> int:
    dues = dict(zip(cands, _dues(sim, cands)))
    on_time = [j for j in cands if sim.time + sim.profile(j).ideal_execution <= dues[j]]
    if on_time:
        return ref_edf(sim, on_time)
    free = [j for j in cands if dues[j] == float("inf")]
    return free[0] if free else ref_sjf(sim, cands)


def ref_pathfinder(sim: Simulator, j: int) -> Placement | None:
    free, price, bw, prof = _state(sim, j)
    return _placement(*pathfinder(free, price, bw, prof.k_star, prof.activation_bytes, prof.t_comp))


def ref_lcf(sim: Simulator, j: int) -> Placement | None:
    free, price, _, prof = _state(sim, j)
    return _placement(*lcf(free, price, prof.k_star, sim.memory_floor(j)))


def ref_ldf(sim: Simulator, j: int) -> Placement | None:
    free, price, _, prof = _state(sim, j)
    return _placement(*ldf(free, price, prof.k_star, sim.memory_floor(j)))


def ref_cr_lcf(sim: Simulator, j: int) -> Placement | None:
    free, price, bw, prof = _state(sim, j)
    floor = sim.memory_floor(j)
    return _placement(
        *cr_lcf(free, price, bw, prof.k_star, prof.activation_bytes, prof.t_comp, floor)
    )


def ref_started(sim: Simulator, j: int, p: Placement | None) -> Placement | None:
    """What ``sim.place`` starts for a policy answer ``p`` under greedy admission: nothing if
    some region on its path has a memory floor above the GPU count (semantics §3a)."""
    floor = sim.memory_floor(j)
    if p is None or any(p.n_gpus < floor[r] for r in p.path):
        return None
    return p


def ref_cr_ldf(sim: Simulator, j: int) -> Placement | None:
    free, price, bw, prof = _state(sim, j)
    return _placement(*cr_ldf(free, price, bw, prof.k_star, prof.activation_bytes, prof.t_comp))


def ref_cr_ldf_cost_min(sim: Simulator, j: int) -> Placement | None:
    free, price, bw, prof = _state(sim, j)
    path, alloc = cr_ldf(free, price, bw, prof.k_star, prof.activation_bytes, prof.t_comp)
    if not path:
        return None
    g = sum(alloc.values())
    return _placement(path, cost_min_allocate(path, g, free, price))


def _grow(start: int, free, bw, k_star: int, a: float, t_comp) -> tuple[list[int], int]:
    """Alg. 1 lines 7-17 from one start, as printed (semantics §5)."""
    path, g, b_min = [start], min(int(free[start]), k_star), math.inf
    while g < k_star:
        tail = path[-1]
        nxt = [u for u in range(len(free)) if u not in path and free[u] > 0]
        if not nxt:
            break
        u = max(nxt, key=lambda v: (bw[tail][v], -v))  # widest, ties to the lower index
        b_tmp = min(b_min, bw[tail][u])
        g_new = min(g + int(free[u]), k_star)
        if not (b_tmp > 0 and a / b_tmp <= t_comp(g_new)):
            break
        path.append(u)
        g, b_min = g_new, b_tmp
    return path, g


def ref_alg1(sim: Simulator, j: int, allocate: Callable[..., dict[int, int]]) -> Placement | None:
    free, price, bw, prof = _state(sim, j)
    k_star = prof.k_star
    fits = [r for r in range(len(free)) if free[r] >= k_star]
    if fits:  # phase 1: the cheapest region that fits K*, ties to the lower index
        r = min(fits, key=lambda r: (price[r], r))
        return Placement((r,), (k_star,))
    best: tuple[int, float, Placement] | None = None
    for start in range(len(free)):
        if free[start] <= 0:
            continue
        path, g = _grow(start, free, bw, k_star, prof.activation_bytes, prof.t_comp)
        alloc = allocate(path, g, free, price)
        avg = math.fsum(alloc[r] * price[r] for r in path) / g
        if (
            best is None
            or g > best[0]
            or (
                g == best[0]
                and avg < best[1]
                and not math.isclose(avg, best[1], rel_tol=COST_TIE_RTOL)
            )
        ):
            best = (g, avg, Placement.from_allocation(path, alloc))
    return best[2] if best else None


def ref_pathfinder_even(sim: Simulator, j: int) -> Placement | None:
    return ref_alg1(sim, j, lambda path, g, free, price: even_allocate(path, g, free))


REFERENCES: dict[str, tuple[Callable | None, Callable]] = {
    "bace-pipe": (ref_priority, ref_pathfinder),
    "lcf": (ref_fcfs, ref_lcf),
    "ldf": (ref_fcfs, ref_ldf),
    "cr-lcf": (ref_fcfs, ref_cr_lcf),
    "cr-ldf": (ref_fcfs, ref_cr_ldf),
    "no-priority": (ref_fcfs, ref_pathfinder),
    "no-pathfinder": (ref_priority, ref_cr_ldf_cost_min),
    "no-costmin": (ref_priority, ref_pathfinder_even),
    "fcfs": (ref_fcfs, ref_pathfinder),
    "sjf": (ref_sjf, ref_pathfinder),
    "random": (None, ref_pathfinder),  # the order is random; its placement is BACE-Pipe's
    # waiting heuristics: the same order and placement; their admission rule may decline
    "sjf+full": (ref_sjf, ref_pathfinder),
    "sjf+finish-aware": (ref_sjf, ref_pathfinder),
    "bace-pipe+full": (ref_priority, ref_pathfinder),
    "bace-pipe+finish-aware": (ref_priority, ref_pathfinder),
    # preemptive heuristics: the same order and placement; their rule may stop running jobs
    # between decisions (tested in tests/core/test_preemption*.py)
    "sjf+srtf": (ref_sjf, ref_pathfinder),
    "sjf+finish-aware+srtf": (ref_sjf, ref_pathfinder),
    "bace-pipe+srtf": (ref_priority, ref_pathfinder),
    "sjf+las": (ref_sjf, ref_pathfinder),
    "sjf+finish-aware+las": (ref_sjf, ref_pathfinder),
    # announced jobs: SJF + Pathfinder; announce-aware may decline (finish-aware's rule plus
    # holds for the calendar, none here: these scenarios have none)
    "sjf+announce": (ref_sjf, ref_pathfinder),
    "sjf+announce+srtf": (ref_sjf, ref_pathfinder),
    # deadline heuristics (semantics §15; the last scenarios have deadlines)
    "edf": (ref_edf, ref_pathfinder),
    "edf+finish-aware": (ref_edf, ref_pathfinder),
    "edf+deadline-aware": (ref_edf, ref_pathfinder),
    "edf+srtf": (ref_edf, ref_pathfinder),
    "lsf": (ref_lsf, ref_pathfinder),
    "lsf+finish-aware": (ref_lsf, ref_pathfinder),
    "edf-triage": (ref_edf_triage, ref_pathfinder),
    "edf-triage+finish-aware": (ref_edf_triage, ref_pathfinder),
    "edf-triage+deadline-aware": (ref_edf_triage, ref_pathfinder),
    "edf-triage+srtf": (ref_edf_triage, ref_pathfinder),
    "sjf+deadline-aware": (ref_sjf, ref_pathfinder),
    "edf+deadline-plan": (ref_edf, ref_pathfinder),
    "lsf+deadline-plan": (ref_lsf, ref_pathfinder),
    "edf-triage+deadline-plan": (ref_edf_triage, ref_pathfinder),
    "edf+deadline-plan+srtf": (ref_edf, ref_pathfinder),
}


# Scenarios with contention: all jobs at t = 0 on a shrunk cluster, or Poisson arrivals.
def _scenarios():
    out = [load_scenario("paper", seed=s, gpu_scale=0.5) for s in range(3)]
    out += [load_scenario("paper", seed=s, gpu_scale=0.25, n_jobs=16) for s in (0, 1)]
    out += [load_scenario("paper", seed=4, gpu_scale=0.25, n_jobs=16, bandwidth_scale=0.3)]
    out += [load_scenario("paper", seed=5, gpu_scale=0.5, n_jobs=12, bandwidth_scale=1.5)]
    out += [synthetic_scenario(5, 10, seed=s, arrival_rate_per_h=2.0) for s in (1, 2)]
    out += [synthetic_scenario(6, 10, seed=3)]
    out += [
        load_scenario("online", seed=s, n_jobs=24, deadline_slack="uniform:0.8,2") for s in (1, 2)
    ]
    return out


SCENARIOS = _scenarios()
SCN_IDS = [f"{s.name}-{i}" for i, s in enumerate(SCENARIOS)]


def _snapshot(sim: Simulator):
    return (sim.time, sim.free_gpus, sim.residual_rows, sim.pending, sim.running)


def _bace_lockstep(scn, check: Callable[[Simulator, tuple[int, ...]], None]) -> int:
    """Step BACE-Pipe to the end, calling ``check`` at each decision; returns the decisions."""
    bace = make_policy("bace-pipe")
    sim = Simulator(scn, bace.placement)
    n = 0
    while (cands := sim.next_decision()) is not None:
        before = _snapshot(sim)
        check(sim, cands)
        assert _snapshot(sim) == before  # choose / place on a view do not change the state
        sim.place(bace.ordering.choose(sim, cands))
        n += 1
    assert sim.done
    return n


# ---------------------------------------------------------------------------------------------
# the reference reproduces Alg. 1 (so its even-allocation variant is trustworthy)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scn", SCENARIOS, ids=SCN_IDS)
def test_reference_alg1_with_cost_min_is_pathfinder(scn):
    def check(sim, cands):
        for j in cands:
            assert ref_alg1(sim, j, cost_min_allocate) == ref_pathfinder(sim, j)

    _bace_lockstep(scn, check)


# ---------------------------------------------------------------------------------------------
# (a) w/o Priority: FCFS, BACE-Pipe's placement
# ---------------------------------------------------------------------------------------------


def _no_priority_count(scn) -> int:
    bace = make_policy("bace-pipe")
    abl = make_policy("no-priority")
    differs = 0

    def check(sim, cands):
        nonlocal differs
        assert abl.ordering.choose(sim, cands) == cands[0]
        choice = bace.ordering.choose(sim, cands)
        assert choice == ref_priority(sim, cands)
        differs += choice != cands[0]
        for j in cands:
            expect = ref_pathfinder(sim, j)
            assert abl.placement.place(sim, j) == expect
            assert bace.placement.place(sim, j) == expect

    assert _bace_lockstep(scn, check) >= len(scn.jobs)
    return differs


@pytest.mark.parametrize("scn", SCENARIOS, ids=SCN_IDS)
def test_no_priority_is_fcfs_with_bace_pipe_placement(scn):
    _no_priority_count(scn)


def test_no_priority_lockstep_is_not_vacuous():
    # Over the scenarios, the priority order departs from FCFS at some decisions.
    assert sum(_no_priority_count(s) for s in SCENARIOS[:3]) > 0


# ---------------------------------------------------------------------------------------------
# (b) w/o Pathfinder: the priority order, the CR-LDF path, Alg. 2's GPUs
# ---------------------------------------------------------------------------------------------


def _no_pathfinder_counts(scn) -> tuple[int, int]:
    bace = make_policy("bace-pipe")
    abl = make_policy("no-pathfinder")
    differs_from_bace = differs_from_fill = 0

    def check(sim, cands):
        nonlocal differs_from_bace, differs_from_fill
        choice = bace.ordering.choose(sim, cands)
        assert abl.ordering.choose(sim, cands) == choice == ref_priority(sim, cands)
        for j in cands:
            got = abl.placement.place(sim, j)
            assert got == ref_cr_ldf_cost_min(sim, j)
            differs_from_bace += got != bace.placement.place(sim, j)
            differs_from_fill += got != ref_cr_ldf(sim, j)  # Alg. 2 vs path-order fill

    _bace_lockstep(scn, check)
    return differs_from_bace, differs_from_fill


@pytest.mark.parametrize("scn", SCENARIOS, ids=SCN_IDS)
def test_no_pathfinder_is_priority_with_cr_ldf_path_and_cost_min(scn):
    _no_pathfinder_counts(scn)


def test_no_pathfinder_lockstep_is_not_vacuous():
    counts = [_no_pathfinder_counts(s) for s in SCENARIOS[:5]]
    assert sum(c[0] for c in counts) > 0  # the ablation really places differently
    assert sum(c[1] for c in counts) > 0  # and Alg. 2 really differs from CR-LDF's own fill


# ---------------------------------------------------------------------------------------------
# (c) w/o Cost-Min: the priority order, Pathfinder's path growth, an even GPU spread
# ---------------------------------------------------------------------------------------------


def _no_costmin_counts(scn) -> tuple[int, int]:
    bace = make_policy("bace-pipe")
    abl = make_policy("no-costmin")
    phase1 = phase2_differs = 0

    def check(sim, cands):
        nonlocal phase1, phase2_differs
        choice = bace.ordering.choose(sim, cands)
        assert abl.ordering.choose(sim, cands) == choice == ref_priority(sim, cands)
        for j in cands:
            got = abl.placement.place(sim, j)
            full = bace.placement.place(sim, j)
            assert got == ref_pathfinder_even(sim, j)
            if max(sim.free_gpus) >= sim.profile(j).k_star:
                assert got == full  # phase 1 applies: nothing to spread
                phase1 += 1
            else:
                # the most GPUs does not depend on the allocator
                assert got.n_gpus == full.n_gpus
                assert got.gpus == tuple(
                    even_allocate(got.path, got.n_gpus, sim.free_gpus)[r] for r in got.path
                )
                phase2_differs += got != full

    _bace_lockstep(scn, check)
    return phase1, phase2_differs


@pytest.mark.parametrize("scn", SCENARIOS, ids=SCN_IDS)
def test_no_costmin_is_priority_with_pathfinder_path_and_even_spread(scn):
    _no_costmin_counts(scn)


def test_no_costmin_lockstep_is_not_vacuous():
    counts = [_no_costmin_counts(s) for s in SCENARIOS]
    assert sum(c[0] for c in counts) > 0  # phase-1 decisions were seen
    assert sum(c[1] for c in counts) > 0  # and phase-2 ones where the spread differs


# ---------------------------------------------------------------------------------------------
# every registered policy on its own run
# ---------------------------------------------------------------------------------------------


def _own_run(name: str, scn, sim: Simulator) -> int:
    """Step ``name``'s own simulator, checking every choice and placement; the placements."""
    ref_order, ref_place = REFERENCES[name]
    pol = make_policy(name, seed=3)
    placed = 0
    while (cands := sim.next_decision()) is not None:
        expect_place = {j: ref_started(sim, j, ref_place(sim, j)) for j in cands}
        j = pol.ordering.choose(sim, cands)
        assert j in cands
        if ref_order is not None:
            assert j == ref_order(sim, cands)
        got = sim.place(j)
        if pol.admission is None:
            assert got == expect_place[j]
        else:  # the rule (tested in test_admission.py) starts the reference's answer or waits
            assert got in (expect_place[j], None)
        placed += got is not None
    return placed


@pytest.mark.parametrize("name", policy_names())
def test_each_policy_own_run_matches_its_reference(name):
    completed = 0
    for scn in SCENARIOS[::2]:
        policy = make_policy(name, seed=3)
        sim = Simulator(
            scn, policy.placement, admission=policy.admission, preemption=policy.preemption
        )
        # LCF and LDF place a job in one region: a job whose memory floor (semantics §3a) no single
        # region can host (floor above its GPUs or above K*) never starts under them, and the
        # run ends with exactly those pending
        floors = scn.memory_floors
        cap = scn.cluster.capacity
        never = {
            j.job_id
            for j in scn.jobs
            if name in ("lcf", "ldf")
            and all(
                f > min(c, scn.profiles[j.job_id].k_star) for c, f in zip(cap, floors[j.job_id])
            )
        }
        if never:
            with pytest.raises(SimulationError, match="never start"):
                _own_run(name, scn, sim)
            assert set(sim.pending) == never
            assert sim.running == ()
            continue
        # every start is a placement: a preempted job is placed again
        placed = _own_run(name, scn, sim)
        res = sim.result(name)
        assert placed == len(scn.jobs) + res.n_restarts
        completed += 1
        assert [r.placement for r in res.records] == [
            r.placement for r in make_policy(name, seed=3).simulate(scn).records
        ]
    assert completed >= 3  # not vacuous


def test_registry_pairs_use_the_named_components():
    # Structural companion of the lockstep tests: the ablations reuse BACE-Pipe's parts.
    assert isinstance(make_policy("no-priority").placement, PathfinderPlacement)
    assert isinstance(make_policy("no-pathfinder").ordering, PriorityOrdering)
    assert isinstance(make_policy("no-costmin").ordering, PriorityOrdering)
    assert isinstance(make_policy("bace-pipe").ordering, PriorityOrdering)
    assert isinstance(make_policy("bace-pipe").placement, PathfinderPlacement)
