"""Invariants of the simulator under BACE-Pipe on random scenarios (semantics §3-§5)."""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from typing import NoReturn

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, reject, settings
from hypothesis import strategies as st

from bacepipe_env.core import Placement, RunResult, Scenario, Simulator
from bacepipe_env.errors import ScenarioError, SimulationError
from bacepipe_env.policies import FCFSOrdering, PathfinderPlacement, PriorityOrdering, bace_pipe
from bacepipe_env.scenarios import build_scenario, load_scenario, synthetic_scenario

REL = 1e-9
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def synthetic_args(draw: st.DrawFn) -> dict[str, object]:
    return {
        "n_regions": draw(st.integers(1, 6)),
        "n_jobs": draw(st.integers(1, 12)),
        "seed": draw(st.integers(0, 2**16)),
        "arrival_rate_per_h": draw(
            st.one_of(st.none(), st.floats(0.5, 5.0, allow_nan=False, allow_infinity=False))
        ),
    }


@st.composite
def paper_args(draw: st.DrawFn) -> dict[str, object]:
    return {
        "seed": draw(st.integers(0, 2**16)),
        "gpu_scale": draw(st.floats(0.02, 2.0, allow_nan=False)),
        "bandwidth_scale": draw(st.floats(0.01, 3.0, allow_nan=False)),
        "n_jobs": draw(st.integers(1, 12)),
    }


def _feasible(build: Callable[[], Scenario]) -> Scenario:
    """The scenario ``build`` makes; a draw whose job can never fit in GPU memory (rejected at
    load time, semantics §3a) is not a valid example."""
    try:
        return build()
    except ScenarioError as exc:
        assert "ignore_memory" in str(exc)
        reject()


def _stuck(sim: Simulator, scn: Scenario, exc: SimulationError) -> NoReturn:
    """A run that ended with jobs that can never start. Legitimate only when memory is checked
    and, on the idle cluster, the placement policy's answer for each of them is below its
    memory floor (the load-time check ignores bandwidth); such a draw is not a valid example."""
    assert "never start" in str(exc)
    assert not scn.ignore_memory
    assert sim.running == ()
    assert sim.free_gpus == scn.cluster.capacity
    assert sim.pending
    for j in sim.pending:
        raw = sim.placement_policy.place(sim, j)
        floors = scn.memory_floors[j]
        assert raw is None or any(raw.n_gpus < floors[r] for r in raw.path), (j, raw)
    reject()


def _run(sim: Simulator, scn: Scenario, ordering: object) -> RunResult:
    """``sim.run(ordering)``, with :func:`_stuck` for a run that can never finish."""
    try:
        return sim.run(ordering)  # type: ignore[arg-type]
    except SimulationError as exc:
        _stuck(sim, scn, exc)


def _check_state(sim: Simulator, scn: Scenario, placements: dict[int, Placement]) -> None:
    cap = scn.cluster.capacity
    free = sim.free_gpus
    assert len(free) == len(cap)
    for f, c in zip(free, cap):
        assert 0 <= f <= c
    reserved = sim.reserved_bandwidth
    bw = np.asarray(scn.cluster.bandwidth)
    assert np.all(reserved >= 0.0)
    assert np.all(reserved <= bw * (1.0 + REL)), (reserved, bw)
    assert np.all(np.diag(reserved) == 0.0)
    np.testing.assert_allclose(sim.residual_bandwidth, bw - reserved, rtol=0, atol=1e-6)
    assert 0.0 <= sim.network_utilization <= 1.0 + REL
    # GPU conservation: free + held by running jobs = capacity
    used = [0] * len(cap)
    for j in sim.running:
        for r, n in zip(placements[j].path, placements[j].gpus):
            used[r] += n
    assert [f + u for f, u in zip(free, used)] == list(cap)
    assert set(sim.pending).isdisjoint(sim.running)


def _drive(scn: Scenario, partial_take: bool) -> RunResult:
    """Run BACE-Pipe through the stepping API, checking the state at every step."""
    sim = Simulator(scn, PathfinderPlacement(partial_take))
    ordering = PriorityOrdering()
    last_time = 0.0
    starts: dict[int, float] = {}
    placements: dict[int, Placement] = {}
    _check_state(sim, scn, placements)
    while True:
        try:
            cands = sim.next_decision()
        except SimulationError as exc:
            _stuck(sim, scn, exc)
        if cands is None:
            break
        assert sim.time >= last_time
        last_time = sim.time
        assert cands, "an empty candidate tuple"
        assert set(cands) <= set(sim.pending)
        assert sum(sim.free_gpus) > 0
        # a job whose memory floor exceeds all the free GPUs together is not offered
        assert all(min(scn.memory_floors[j]) <= sum(sim.free_gpus) for j in cands)
        _check_state(sim, scn, placements)
        job_id = ordering.choose(sim, cands)
        assert job_id in cands
        free_before = sim.free_gpus
        raw = PathfinderPlacement(partial_take).place(sim, job_id)
        placement = sim.place(job_id)
        # Pathfinder always finds something while a GPU is free
        assert raw is not None
        floors = scn.memory_floors[job_id]
        if any(raw.n_gpus < floors[r] for r in raw.path):
            # semantics §3a: Pathfinder's answer below the memory floor is no placement
            assert not scn.ignore_memory
            assert placement is None
            assert job_id in sim.pending
            continue
        assert placement == raw
        assert placement.n_gpus <= sim.profile(job_id).k_star
        for r, n in zip(placement.path, placement.gpus):
            assert 1 <= n <= free_before[r]
        assert len(set(placement.path)) == len(placement.path)
        starts[job_id] = sim.time
        placements[job_id] = placement
        _check_state(sim, scn, placements)
    assert sim.done
    np.testing.assert_array_equal(sim.reserved_bandwidth, 0.0)
    assert sim.free_gpus == scn.cluster.capacity
    res = sim.result("bace-pipe")
    for rec in res.records:
        assert rec.start_time == starts[rec.job_id]
        assert rec.placement == placements[rec.job_id]
    return res


def _comm_times(scn: Scenario, rec: object, activation: float) -> list[float]:
    c = scn.cluster
    p = rec.placement  # type: ignore[attr-defined]
    out: list[float] = []
    for i, (r, n) in enumerate(zip(p.path, p.gpus)):
        if i:
            u = p.path[i - 1]
            out.append(activation / float(c.bandwidth[u, r]) + float(c.latency[u, r]))
        out += [activation / c.regions[r].intra_bandwidth] * (n - 1)
    return out


def _check_result(scn: Scenario, res: RunResult) -> None:
    jobs = {j.job_id: j for j in scn.jobs}
    assert [r.job_id for r in res.records] == sorted(jobs)
    prices = scn.cluster.prices
    for rec in res.records:
        job = jobs[rec.job_id]
        prof = scn.profiles[rec.job_id]
        assert rec.submit_time == job.submit_time
        assert rec.wait >= 0.0
        assert rec.start_time >= rec.submit_time
        assert rec.execution > 0.0
        assert math.isclose(rec.jct, rec.wait + rec.execution, rel_tol=REL)
        assert math.isclose(rec.finish_time - rec.submit_time, rec.jct, rel_tol=REL)
        assert 1 <= rec.n_gpus <= prof.k_star == rec.k_star
        # semantics §3a: every stage fits in its GPU's memory (floors are all ones if ignored)
        floors = scn.memory_floors[rec.job_id]
        assert rec.memory_floor == min(floors)
        assert all(rec.n_gpus >= floors[r] for r in rec.placement.path)
        # Eq. (4) from the placement and the cluster's prices and power
        price_sum = sum(n * prices[r] for r, n in zip(rec.placement.path, rec.placement.gpus))
        cost = rec.execution / 3600.0 * price_sum * scn.cluster.power_kw
        assert math.isclose(rec.cost, cost, rel_tol=REL)
        # Eqs. (1)-(2) recomputed from the placement
        c = job.constants
        L = rec.n_gpus
        t_comp = (
            2 * job.model.params * c.micro_batch * c.seq_len / (L * c.peak_flops * c.mfu)
            + c.stage_overhead
        )
        a = c.micro_batch * c.seq_len * job.model.hidden * c.bytes_per_value
        comm = _comm_times(scn, rec, a)
        assert len(comm) == L - 1
        delta = max([t_comp, *comm])
        t_iter = (sum(comm) + L * t_comp + (job.batch // c.micro_batch - 1) * delta) * 2
        iters = math.ceil(job.samples / job.batch) * job.epochs
        assert math.isclose(rec.execution, iters * t_iter, rel_tol=REL)
        # b(L) reserved only on cross-region paths
        if len(rec.placement.path) > 1:
            assert math.isclose(rec.reserved_bandwidth, a / t_comp, rel_tol=REL)
        else:
            assert rec.reserved_bandwidth == 0.0
    assert res.ignore_memory == scn.ignore_memory
    n = len(res.records)
    assert math.isclose(res.avg_jct, sum(r.jct for r in res.records) / n, rel_tol=REL)
    assert math.isclose(res.total_cost, sum(r.cost for r in res.records), rel_tol=REL)
    first = min(r.submit_time for r in res.records)
    assert math.isclose(res.makespan, max(r.finish_time for r in res.records) - first, rel_tol=REL)
    assert 0.0 < res.gpu_utilization <= 1.0 + REL


@SETTINGS
@given(args=synthetic_args(), partial_take=st.booleans())
def test_bace_pipe_invariants_synthetic(args: dict[str, object], partial_take: bool) -> None:
    scn = _feasible(lambda: synthetic_scenario(**args))  # type: ignore[arg-type]
    assert len(scn.jobs) == args["n_jobs"]
    assert scn.cluster.n_regions == args["n_regions"]
    res = _drive(scn, partial_take)
    _check_result(scn, res)
    # deterministic: the same scenario object again, and a fresh load with the same seed
    assert _drive(scn, partial_take) == res
    again = synthetic_scenario(**args)  # type: ignore[arg-type]
    assert again.jobs == scn.jobs
    assert bace_pipe(partial_take).simulate(again).records == res.records


@SETTINGS
@given(args=paper_args(), partial_take=st.booleans(), ignore_memory=st.booleans())
# thin links: Pathfinder's answers often fall below the memory floor (semantics §3a)
@example(
    args={"seed": 0, "gpu_scale": 0.5, "bandwidth_scale": 0.01, "n_jobs": 12},
    partial_take=False,
    ignore_memory=False,
)
# no region holds FLM-101B's floor of 40 and no link is wide enough: it can never start
@example(
    args={"seed": 0, "gpu_scale": 0.3, "bandwidth_scale": 0.01, "n_jobs": 8},
    partial_take=False,
    ignore_memory=False,
)
def test_bace_pipe_invariants_paper_sweeps(
    args: dict[str, object], partial_take: bool, ignore_memory: bool
) -> None:
    # both worlds: memory checked (the default) and the paper's literal semantics
    scn = _feasible(lambda: load_scenario("paper", ignore_memory=ignore_memory, **args))  # type: ignore[arg-type]
    assert scn.ignore_memory == ignore_memory
    res = _drive(scn, partial_take)
    _check_result(scn, res)
    assert _drive(scn, partial_take) == res
    reloaded = load_scenario("paper", ignore_memory=ignore_memory, **args)  # type: ignore[arg-type]
    assert bace_pipe(partial_take).simulate(reloaded).records == res.records


@settings(max_examples=25, deadline=None)
@given(args=synthetic_args())
def test_fcfs_completes_every_job(args: dict[str, object]) -> None:
    scn = _feasible(lambda: synthetic_scenario(**args))  # type: ignore[arg-type]
    res = _run(Simulator(scn, PathfinderPlacement()), scn, FCFSOrdering())
    assert len(res.records) == len(scn.jobs)
    _check_result(scn, res)


@pytest.mark.parametrize("partial_take", [False, True])
def test_policy_simulate_matches_stepping(partial_take: bool) -> None:
    scn = load_scenario("paper", seed=3)
    res = bace_pipe(partial_take).simulate(scn)
    stepped = _drive(scn, partial_take)
    assert res.records == stepped.records
    assert res.avg_jct == stepped.avg_jct
    assert res.total_cost == stepped.total_cost


# ---------------------------------------------------------------------------------------------
# A straightforward reference implementation of semantics §3-§5, written from the text, and
# random small custom scenarios (asymmetric and missing links, latency, stage overhead, equal
# prices, micro-batches, epochs, staggered arrivals) to compare the simulator against.
# ---------------------------------------------------------------------------------------------


def _ref_alg2(path: list[int], g: int, free: list[int], price: list[float]) -> dict[int, int]:
    alloc = dict.fromkeys(path, 1)
    rest = g - len(path)
    for r in sorted(path, key=lambda r: price[r]):  # stable: ties keep path order
        add = min(free[r] - 1, rest)
        alloc[r] += add
        rest -= add
    assert rest == 0
    return alloc


def _ref_alg1(
    free: list[int],
    price: list[float],
    res: list[list[float]],
    k_star: int,
    a: float,
    t_comp: object,
    partial: bool,
) -> tuple[list[int], dict[int, int]]:
    k = len(free)
    fits = [r for r in range(k) if free[r] >= k_star]
    if fits:
        r = min(fits, key=lambda r: (price[r], r))
        return [r], {r: k_star}
    best: tuple[list[int], dict[int, int]] = ([], {})
    g_max, c_min = 0, math.inf
    for start in range(k):
        if free[start] <= 0:
            continue
        path, g, b_min = [start], min(free[start], k_star), math.inf
        while g < k_star:
            options = [u for u in range(k) if u not in path and free[u] > 0]
            if not options:
                break
            u = max(options, key=lambda u, row=res[path[-1]]: (row[u], -u))
            b_tmp = min(b_min, res[path[-1]][u])
            hi = min(g + free[u], k_star)
            tries = range(hi, g, -1) if partial else [hi]
            ok = [c for c in tries if b_tmp > 0 and a / b_tmp <= t_comp(c)]  # type: ignore[operator]
            if not ok:
                break
            path.append(u)
            g, b_min = ok[0], b_tmp
        alloc = _ref_alg2(path, g, free, price)
        c_avg = math.fsum(alloc[r] * price[r] for r in path) / g
        if g > g_max or (
            g == g_max and c_avg < c_min and not math.isclose(c_avg, c_min, rel_tol=1e-12)
        ):
            best, g_max, c_min = (path, alloc), g, c_avg
    return best


def _ref_simulate(scn: Scenario, partial: bool, fcfs: bool) -> list[tuple[object, ...]]:
    """(job id, path, gpus, start, execution) per job, by hand from docs/semantics.md."""
    cl = scn.cluster
    k = cl.n_regions
    cap_bw = cl.bandwidth.tolist()
    price = list(cl.prices)
    free = list(cl.capacity)
    holders: dict[tuple[int, int], dict[int, float]] = {}
    cap_total = math.fsum(cap_bw[u][v] for u in range(k) for v in range(k) if u != v)

    def reserved(u: int, v: int) -> float:
        return math.fsum(holders.get((u, v), {}).values())

    jobs = {j.job_id: j for j in scn.jobs}
    prof = scn.profiles
    heap: list[tuple[float, int, int, int]] = []
    seq = 0
    for j in sorted(scn.jobs, key=lambda j: (j.submit_time, j.job_id)):
        heap.append((j.submit_time, 1, seq, j.job_id))
        seq += 1
    heapq.heapify(heap)
    pending: list[int] = []
    running: dict[int, tuple[list[int], dict[int, int], float]] = {}
    out = []
    while heap:
        t = heap[0][0]
        while heap and heap[0][0] == t:
            _, kind, _, jid = heapq.heappop(heap)
            if kind == 0:
                path, alloc, _ = running.pop(jid)
                for r in path:
                    free[r] += alloc[r]
                for u, v in itertools.pairwise(path):
                    del holders[(u, v)][jid]
            else:
                pending.append(jid)
        tried: set[int] = set()
        while sum(free) > 0 and (cands := [j for j in pending if j not in tried]):
            if fcfs:
                jid = cands[0]
            else:
                res_sum = math.fsum(reserved(u, v) for u in range(k) for v in range(k) if u != v)
                alpha = res_sum / cap_total if cap_total > 0 else 0.0
                e = [prof[j].single_gpu_exec for j in pending]
                b = [prof[j].min_bandwidth_kstar for j in pending]
                score = {
                    j: (1 - alpha) * (1 - e[i] / max(e)) + alpha * (1 - b[i] / max(b))
                    for i, j in enumerate(pending)
                }
                jid = max(cands, key=lambda j: (score[j], -cands.index(j)))
            job, p = jobs[jid], prof[jid]
            c = job.constants
            coeff = 2 * job.model.params * c.micro_batch * c.seq_len / (c.peak_flops * c.mfu)

            def t_comp(n: int, coeff: float = coeff, c0: float = c.stage_overhead) -> float:
                return coeff / n + c0

            a = float(c.micro_batch * c.seq_len * job.model.hidden * c.bytes_per_value)
            res = [[cap_bw[u][v] - reserved(u, v) for v in range(k)] for u in range(k)]
            path, alloc = _ref_alg1(free, price, res, p.k_star, a, t_comp, partial)
            n = sum(alloc.values())
            # semantics §3a: a path below the memory floor of one of its regions is no placement
            # (the floors are all ones when the scenario ignores memory)
            floors = scn.memory_floors[jid]
            if not path or any(n < floors[r] for r in path):
                tried.add(jid)
                continue
            comm: list[float] = []
            for i, r in enumerate(path):
                if i:
                    u = path[i - 1]
                    comm.append(a / cap_bw[u][r] + float(cl.latency[u, r]))
                comm += [a / cl.regions[r].intra_bandwidth] * (alloc[r] - 1)
            tc = t_comp(n)
            t_iter = (
                math.fsum(comm) + n * tc + (job.batch // c.micro_batch - 1) * max([tc, *comm])
            ) * 2
            ex = math.ceil(job.samples / job.batch) * job.epochs * t_iter
            for r in path:
                free[r] -= alloc[r]
            for u, v in itertools.pairwise(path):
                holders.setdefault((u, v), {})[jid] = a / tc
            pending.remove(jid)
            running[jid] = (path, alloc, t + ex)
            heapq.heappush(heap, (t + ex, 0, seq, jid))
            seq += 1
            out.append((jid, tuple(path), tuple(alloc[r] for r in path), t, ex))
    assert not pending
    return sorted(out)


@st.composite
def custom_specs(draw: st.DrawFn) -> dict[str, object]:
    # both worlds: memory checked (the default) and the paper's literal semantics
    ignore_memory = draw(st.booleans())
    k = draw(st.integers(1, 4))
    names = [f"R{i}" for i in range(k)]
    regions = [
        {
            "name": names[i],
            "gpus": draw(st.integers(1, 8)),
            "price_usd_per_kwh": draw(st.sampled_from([0.1, 0.15, 0.2, 0.3])),
            "intra_gbps": draw(st.sampled_from([10, 50, 100, 400])),
        }
        for i in range(k)
    ]
    gbps = st.one_of(st.just(0.0), st.floats(0.05, 100.0, allow_nan=False))
    matrix = [[0.0 if i == j else draw(gbps) for j in range(k)] for i in range(k)]
    latency = [
        [0.0 if i == j else draw(st.sampled_from([0.0, 5.0, 80.0])) for j in range(k)]
        for i in range(k)
    ]
    micro = draw(st.sampled_from([1, 2]))
    models = [
        {
            "name": f"m{i}",
            "params": draw(st.sampled_from([1e9, 7e9, 14e9, 70e9])),
            "layers": draw(st.integers(1, 24)),
            "hidden": draw(st.sampled_from([1024, 4096, 8192])),
            "batch": micro * draw(st.sampled_from([1, 8, 64])),
        }
        for i in range(draw(st.integers(1, 3)))
    ]
    n_jobs = draw(st.integers(1, 8))
    jobs = [
        {
            "model": draw(st.sampled_from([m["name"] for m in models])),
            "dataset": draw(st.sampled_from(["small", "big"])),
            "submit_h": draw(st.sampled_from([0.0, 0.0, 0.25, 1.0, 3.0])),
            "epochs": draw(st.integers(1, 2)),
        }
        for _ in range(n_jobs)
    ]
    return {
        "name": "random-custom",
        "ignore_memory": ignore_memory,
        "constants": {
            "seq_len": draw(st.sampled_from([512, 2048])),
            "micro_batch": micro,
            "stage_overhead_s": draw(st.sampled_from([0.0, 0.01])),
            "power_kw": 0.3,
        },
        "regions": regions,
        "links": {"matrix_gbps": matrix},
        "latency_ms": latency,
        "models": models,
        "datasets": [{"name": "small", "samples": 1000}, {"name": "big", "samples": 200_000}],
        "jobs": jobs,
    }


def _as_tuples(res: RunResult) -> list[tuple[object, ...]]:
    return [
        (r.job_id, r.placement.path, r.placement.gpus, r.start_time, r.execution)
        for r in res.records
    ]


def _same(ref: list[tuple[object, ...]], got: list[tuple[object, ...]]) -> None:
    assert len(ref) == len(got)
    for a, b in zip(ref, got):
        assert a[:3] == b[:3], (a, b)
        assert math.isclose(a[3], b[3], rel_tol=REL, abs_tol=1e-9), (a, b)  # type: ignore[arg-type]
        assert math.isclose(a[4], b[4], rel_tol=REL), (a, b)  # type: ignore[arg-type]


@SETTINGS
@given(spec=custom_specs(), partial_take=st.booleans())
def test_bace_pipe_matches_reference_on_custom_scenarios(
    spec: dict[str, object], partial_take: bool
) -> None:
    scn = _feasible(lambda: build_scenario(spec))
    res = _drive(scn, partial_take)
    _check_result(scn, res)
    _same(_ref_simulate(scn, partial_take, fcfs=False), _as_tuples(res))
    fcfs = _run(Simulator(scn, PathfinderPlacement(partial_take)), scn, FCFSOrdering())
    _check_result(scn, fcfs)
    _same(_ref_simulate(scn, partial_take, fcfs=True), _as_tuples(fcfs))


@settings(max_examples=20, deadline=None)
@given(args=synthetic_args(), partial_take=st.booleans())
def test_bace_pipe_matches_reference_on_synthetic(
    args: dict[str, object], partial_take: bool
) -> None:
    scn = _feasible(lambda: synthetic_scenario(**args))  # type: ignore[arg-type]
    res = _run(Simulator(scn, PathfinderPlacement(partial_take)), scn, PriorityOrdering())
    _same(_ref_simulate(scn, partial_take, fcfs=False), _as_tuples(res))
