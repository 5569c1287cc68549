"""Every registered policy on random synthetic scenarios (semantics §4 and §6).

The simulator validates each placement (constraints 5 and 6 and the K* cap) and raises
PlacementError on a violation, and SimulationError if a job can never start; so a run that
completes is the main check. On top: every job finished once, at most K* GPUs each, every
stage fits in GPU memory (semantics §3a), and the single-region baselines stay in one region.
With memory checked, a run may also end with jobs that can never start (LCF and LDF cannot host
a job whose memory floor exceeds every single region); that ending is checked too.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from bacepipe_env.core import Simulator
from bacepipe_env.errors import ScenarioError, SimulationError, ValidationError
from bacepipe_env.policies.registry import baseline_names, make_policy, policy_names
from bacepipe_env.scenarios import synthetic_scenario
from bacepipe_env.scheduling.baselines import (
    cr_lcf,
    cr_ldf,
    even_allocate,
    fill_in_path_order,
    lcf,
    ldf,
)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def synthetic_args(draw: st.DrawFn) -> dict[str, object]:
    return {
        "n_regions": draw(st.integers(1, 6)),
        "n_jobs": draw(st.integers(1, 10)),
        "seed": draw(st.integers(0, 2**16)),
        "arrival_rate_per_h": draw(
            st.one_of(st.none(), st.floats(0.5, 5.0, allow_nan=False, allow_infinity=False))
        ),
    }


def _check_never_start(name, scn, policy_seed, exc):
    """A run of ``name`` that ended with jobs that can never start: replay it and check that
    the cluster is idle and the policy offers each stuck job nothing that fits in memory."""
    assert "never start" in str(exc)
    assert not scn.ignore_memory
    pol = make_policy(name, seed=policy_seed)
    sim = Simulator(scn, pol.placement)
    with pytest.raises(SimulationError, match="never start"):
        sim.run(pol.ordering)
    assert sim.running == ()
    assert sim.free_gpus == scn.cluster.capacity
    for j in sim.pending:
        p = pol.placement.place(sim, j)
        floor = scn.memory_floors[j]
        assert p is None or any(p.n_gpus < floor[r] for r in p.path), (name, j, p)
    if name in ("lcf", "ldf"):  # exactly the jobs no single region can host (GPUs and K*)
        cap = scn.cluster.capacity
        never = {
            j.job_id
            for j in scn.jobs
            if all(
                f > min(c, scn.profiles[j.job_id].k_star)
                for c, f in zip(cap, scn.memory_floors[j.job_id])
            )
        }
        assert set(sim.pending) == never


@SETTINGS
@given(args=synthetic_args(), policy_seed=st.integers(0, 100))
def test_every_policy_finishes_every_job(args, policy_seed):
    try:
        scn = synthetic_scenario(**args)
    except ScenarioError as exc:  # a job no set of regions can hold in GPU memory
        assert "ignore_memory" in str(exc)
        reject()
    k = scn.cluster.n_regions
    job_ids = sorted(j.job_id for j in scn.jobs)
    baselines = set(baseline_names())
    for name in policy_names():
        try:
            res = make_policy(name, seed=policy_seed).simulate(scn)  # validate=True by default
        except SimulationError as exc:
            _check_never_start(name, scn, policy_seed, exc)
            continue
        assert [r.job_id for r in res.records] == job_ids, name
        for r in res.records:
            p = r.placement
            assert r.k_star == scn.profiles[r.job_id].k_star
            assert 1 <= p.n_gpus <= r.k_star, (name, r)
            floor = scn.memory_floors[r.job_id]
            assert r.memory_floor == min(floor)
            assert all(p.n_gpus >= floor[u] for u in p.path), (name, r)
            assert all(g >= 1 for g in p.gpus)
            assert len(set(p.path)) == len(p.path)
            assert all(0 <= u < k for u in p.path)
            assert r.start_time >= r.submit_time
            if name in baselines:
                assert p.n_gpus <= r.k_star
            if name in ("lcf", "ldf"):
                assert len(p.path) == 1, (name, p)


# --- the pure rules on random small inputs -------------------------------------------------------
# t_comp(g) = 10 / g and A = 10: the check reads min(b_min, B[tail, u]) >= g'.

A = 10.0


def t10(g: int) -> float:
    return 10.0 / g


@st.composite
def rule_inputs(draw: st.DrawFn):
    k = draw(st.integers(1, 6))
    free = draw(st.lists(st.integers(0, 8), min_size=k, max_size=k))
    price = draw(st.lists(st.sampled_from([0.1, 0.2, 0.3]), min_size=k, max_size=k))
    bw = [[0.0 if u == v else float(draw(st.integers(0, 14))) for v in range(k)] for u in range(k)]
    k_star = draw(st.integers(1, 14))
    return free, price, bw, k_star


def _well_formed(free, k_star, path, alloc):
    if sum(free) == 0:
        assert (path, alloc) == ([], {})
        return False
    assert path and len(set(path)) == len(path)
    assert sorted(alloc) == sorted(path)
    assert all(1 <= alloc[r] <= free[r] for r in path)
    assert sum(alloc.values()) <= k_star
    return True


def _checks_pass(path, alloc, bw):
    # every appended region passed min(bottleneck so far, B[tail, u]) >= g' (g' = GPUs so far)
    b_min, g = float("inf"), alloc[path[0]]
    for tail, u in itertools.pairwise(path):
        b_min = min(b_min, bw[tail][u])
        g += alloc[u]
        assert b_min >= g


@settings(max_examples=300, deadline=None)
@given(inp=rule_inputs())
def test_single_region_rules(inp):
    free, price, _, k_star = inp
    for rule, key in ((lcf, lambda r: (price[r], r)), (ldf, lambda r: (-free[r], price[r], r))):
        path, alloc = rule(free, price, k_star)
        if _well_formed(free, k_star, path, alloc):
            best = min((r for r in range(len(free)) if free[r] > 0), key=key)
            assert path == [best]
            assert alloc == {best: min(free[best], k_star)}


@settings(max_examples=300, deadline=None)
@given(inp=rule_inputs())
def test_cr_lcf_properties(inp):
    free, price, bw, k_star = inp
    path, alloc = cr_lcf(free, price, bw, k_star, A, t10)
    if not _well_formed(free, k_star, path, alloc):
        return
    order = sorted((r for r in range(len(free)) if free[r] > 0), key=lambda r: (price[r], r))
    assert path[0] == order[0]
    assert path == [r for r in order if r in path]  # a subsequence of the price order
    # GPUs in path order: every region but the last is full
    assert all(alloc[r] == free[r] for r in path[:-1])
    assert sum(alloc.values()) == min(sum(free[r] for r in path), k_star)
    _checks_pass(path, alloc, bw)


@settings(max_examples=300, deadline=None)
@given(inp=rule_inputs())
def test_cr_ldf_properties(inp):
    free, price, bw, k_star = inp
    path, alloc = cr_ldf(free, price, bw, k_star, A, t10)
    if not _well_formed(free, k_star, path, alloc):
        return
    k = len(free)
    start = min((r for r in range(k) if free[r] > 0), key=lambda r: (-free[r], price[r], r))
    assert path[0] == start
    assert all(alloc[r] == free[r] for r in path[:-1])
    g = sum(alloc.values())
    assert g == min(sum(free[r] for r in path), k_star)
    _checks_pass(path, alloc, bw)
    for i, (tail, u) in enumerate(itertools.pairwise(path)):
        rest = [v for v in range(k) if v not in path[: i + 1] and free[v] > 0]
        assert u == max(rest, key=lambda v: (bw[tail][v], -v))  # the widest, lower index
    # it stopped for a reason: K* reached, nobody left, or the widest next link fails
    rest = [v for v in range(k) if v not in path and free[v] > 0]
    if g < k_star and rest:
        tail = path[-1]
        u = max(rest, key=lambda v: (bw[tail][v], -v))
        b_min = min([bw[a][b] for a, b in itertools.pairwise(path)] + [bw[tail][u]])
        assert b_min < min(g + free[u], k_star)


def _water_fill(path, g, free):
    """The largest level L with sum(min(free, L)) <= g, then one more GPU each to the first
    regions in path order that still have room, until g is used up."""
    level = 0
    while sum(min(free[r], level + 1) for r in path) <= g and level < max(free[r] for r in path):
        level += 1
    alloc = {r: min(free[r], level) for r in path}
    left = g - sum(alloc.values())
    for r in path:
        if left and alloc[r] < free[r]:
            alloc[r] += 1
            left -= 1
    assert left == 0
    return alloc


@st.composite
def alloc_inputs(draw: st.DrawFn):
    k = draw(st.integers(1, 6))
    free = draw(st.lists(st.integers(0, 9), min_size=k, max_size=k))
    have = [r for r in range(k) if free[r] > 0]
    if not have:
        free[0] = 1
        have = [0]
    path = draw(st.permutations(have))
    path = path[: draw(st.integers(1, len(path)))]
    g = draw(st.integers(len(path), sum(free[r] for r in path)))
    return path, g, free


@settings(max_examples=300, deadline=None)
@given(inp=alloc_inputs())
def test_allocators_match_their_definitions(inp):
    path, g, free = inp
    assert even_allocate(path, g, free) == _water_fill(path, g, free)
    fill, left = {}, g
    for r in path:
        fill[r] = min(free[r], left)
        left -= fill[r]
    if min(fill.values()) == 0:
        # g ran out before a path region got a GPU: not a pipeline, so an error.
        with pytest.raises(ValidationError):
            fill_in_path_order(path, g, free)
    else:
        assert fill_in_path_order(path, g, free) == fill
