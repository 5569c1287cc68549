"""Small scenarios worked out by hand (semantics §3-§5), and misbehaving placement policies.

Common numbers. Constants S = m = 1, peak 1 TFLOP/s, mfu 1, power 0.5 kW per GPU.
Models (hidden 5e8, batch 4, so M = 4 micro-batches and A = 1 * 1 * 5e8 * 2 = 1e9 bytes):

- ``M4``: N = 6e12, 4 layers -> t_comp(L) = 2 * 6e12 / (L * 1e12) = 12 / L s.
- ``M3``: N = 6e12, 3 layers -> t_comp(L) = 12 / L s.
- ``M2``: N = 3e12, 2 layers -> t_comp(L) = 6 / L s.

Every region's intra bandwidth is 8 Gbps = 1e9 B/s: an intra hop takes A / 1e9 = 1 s, and so
does the Eq. (13) reference hop. Then (t_iter(k) = 2 ((k-1) + k t_comp(k) + 3 max(t_comp(k), 1))):

- M4: t_iter(1..4) = 96, 62, 52, 48 -> K* = 4;
- M3: t_iter(1..3) = 96, 62, 52 -> K* = 3;
- M2: t_iter(1..2) = 48, 32 -> K* = 2.

Dataset ``D``: 900 samples -> I = ceil(900 / 4) = 225 iterations, so E(1) = 225 * 96 = 21600 s
for M4/M3 and 225 * 48 = 10800 s for M2.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from bacepipe_env.core import Placement, Simulator
from bacepipe_env.errors import PlacementError, SimulationError
from bacepipe_env.policies import FCFSOrdering, PathfinderPlacement, PriorityOrdering, bace_pipe
from bacepipe_env.policies.base import Policy
from bacepipe_env.scenarios import build_scenario, load_scenario

REL = 1e-12

MODELS = [
    {"name": "M4", "params": 6e12, "layers": 4, "hidden": 500_000_000, "batch": 4},
    {"name": "M3", "params": 6e12, "layers": 3, "hidden": 500_000_000, "batch": 4},
    {"name": "M2", "params": 3e12, "layers": 2, "hidden": 500_000_000, "batch": 4},
]
CONSTANTS = {"seq_len": 1, "micro_batch": 1, "peak_tflops": 1.0, "mfu": 1.0, "power_kw": 0.5}


def _region(name: str, gpus: int, price: float) -> dict[str, Any]:
    return {"name": name, "gpus": gpus, "price_usd_per_kwh": price, "intra_gbps": 8}


# ---------------------------------------------------------------------------------------------
# Scenario A: two regions, a job that waits for a completion after arriving later.
#
#   R0: 2 GPUs at $0.1/kWh, R1: 2 GPUs at $0.3/kWh; link R0 <-> R1 8 Gbps (1e9 B/s, hop 1 s).
#   J1: M4 at t = 0; J2: M2 at t = 0; J3: M2 at t = 1 h = 3600 s.
# ---------------------------------------------------------------------------------------------
SCENARIO_A: dict[str, Any] = {
    "name": "golden-a",
    # the paper's literal semantics: a 6e12-parameter M4 cannot fit in any 48 GB GPU
    "ignore_memory": True,
    "constants": CONSTANTS,
    "regions": [_region("R0", 2, 0.1), _region("R1", 2, 0.3)],
    "links": {"pairs": [{"a": "R0", "b": "R1", "gbps": 8}]},
    "models": MODELS,
    "datasets": [{"name": "D", "samples": 900}],
    "jobs": [
        {"name": "big", "model": "M4", "dataset": "D"},
        {"name": "small", "model": "M2", "dataset": "D"},
        {"name": "late", "model": "M2", "dataset": "D", "submit_h": 1.0},
    ],
}


def test_scenario_a_profiles() -> None:
    scn = build_scenario(SCENARIO_A)
    p = scn.profiles
    assert [p[j].k_star for j in (1, 2, 3)] == [4, 2, 2]
    assert [p[j].iterations for j in (1, 2, 3)] == [225, 225, 225]
    assert p[1].single_gpu_exec == pytest.approx(21600.0, rel=REL)
    assert p[2].single_gpu_exec == pytest.approx(10800.0, rel=REL)
    assert p[1].activation_bytes == 1e9
    assert p[1].t_comp(4) == 3.0
    assert scn.jobs[2].submit_time == 3600.0


def test_scenario_a_bace_pipe() -> None:
    # t = 0: pending [J1, J2], alpha = 0 (nothing reserved), so score = 1 - E(1)/max E(1):
    #   J1: 1 - 21600/21600 = 0;  J2: 1 - 10800/21600 = 0.5  -> J2 first.
    #   J2 (K* = 2), Alg. 1 phase 1: cheapest region with >= 2 free is R0 -> R0:2.
    #     L = 2, t_comp = 3, hops [1] -> t_iter = (1 + 6 + 3*3) * 2 = 32; E = 225 * 32 = 7200.
    #   J1 (K* = 4): no region has 4 free; phase 2 can only start in R1 (R0 is full), no
    #     unvisited region has free GPUs -> R1:2 (fewer than K*).
    #     L = 2, t_comp = 6, hops [1] -> t_iter = (1 + 12 + 3*6) * 2 = 62; E = 225 * 62 = 13950.
    # t = 3600: J3 arrives, no GPU free -> waits.
    # t = 7200: J2 completes, R0 free -> J3 (K* = 2) phase 1 -> R0:2, E = 7200, ends 14400.
    # t = 13950: J1 completes.  t = 14400: J3 completes.
    res = bace_pipe().simulate(build_scenario(SCENARIO_A))
    r1, r2, r3 = res.records
    assert [r.job_id for r in res.records] == [1, 2, 3]
    assert [r.name for r in res.records] == ["big", "small", "late"]

    assert r1.placement == Placement((1,), (2,))
    assert r2.placement == Placement((0,), (2,))
    assert r3.placement == Placement((0,), (2,))

    expect = {
        # job: (submit, start, execution, finish, wait, jct, cost)
        # cost = E/3600 * sum(n_r P_r) * 0.5
        1: (0.0, 0.0, 13950.0, 13950.0, 0.0, 13950.0, 13950 / 3600 * 0.6 * 0.5),  # 1.1625
        2: (0.0, 0.0, 7200.0, 7200.0, 0.0, 7200.0, 7200 / 3600 * 0.2 * 0.5),  # 0.2
        3: (3600.0, 7200.0, 7200.0, 14400.0, 3600.0, 10800.0, 7200 / 3600 * 0.2 * 0.5),  # 0.2
    }
    for r in res.records:
        sub, start, ex, fin, wait, jct, cost = expect[r.job_id]
        assert r.submit_time == pytest.approx(sub, rel=REL)
        assert r.start_time == pytest.approx(start, rel=REL)
        assert r.execution == pytest.approx(ex, rel=REL)
        assert r.finish_time == pytest.approx(fin, rel=REL)
        assert r.wait == pytest.approx(wait, rel=REL, abs=1e-9)
        assert r.jct == pytest.approx(jct, rel=REL)
        assert r.cost == pytest.approx(cost, rel=REL)
        assert r.reserved_bandwidth == 0.0  # all single-region
    assert r1.k_star == 4 and r1.n_gpus == 2

    # average JCT = (13950 + 7200 + 10800) / 3 = 10650; cost = 1.1625 + 0.2 + 0.2 = 1.5625
    assert res.avg_jct == pytest.approx(10650.0, rel=REL)
    assert res.total_cost == pytest.approx(1.5625, rel=REL)
    assert res.makespan == pytest.approx(14400.0, rel=REL)
    # busy GPU-seconds 2*13950 + 2*7200 + 2*7200 = 56700 over 4 GPUs * 14400 s = 0.984375
    assert res.gpu_utilization == pytest.approx(0.984375, rel=REL)
    assert res.n_decisions == 3
    assert res.policy == "bace-pipe"
    assert res.scenario == "golden-a"


def test_scenario_a_fcfs() -> None:
    # FCFS at t = 0: J1 (K* = 4) first. Phase 1: nothing has 4 free. Phase 2:
    #   start R0: g = 2, widest link to R1 (1e9), g' = min(2 + 2, 4) = 4,
    #     check A / 1e9 = 1 <= t_comp(4) = 3 -> path [R0, R1]; Alg. 2: 1 + 1, then the surplus
    #     by price: R0 +1, R1 +1 -> (2, 2), average price (0.2 + 0.6) / 4 = 0.2.
    #   start R1: [R1, R0] with the same allocation and price: a tie keeps [R0, R1].
    #   L = 4, t_comp 3, hops [1, 1, 1] -> t_iter = (3 + 12 + 9) * 2 = 48, E = 10800.
    #   b(4) = 1e9 / 3 reserved on R0 -> R1. The cluster is full: J2 and (at 3600) J3 wait.
    # t = 10800: J1 done. J2 -> phase 1 R0:2 (cheapest), E = 7200; J3 -> R1:2
    #   (t_comp 3, hop 1: t_iter 32), E = 7200. Both end at 18000.
    scn = build_scenario(SCENARIO_A)
    sim = Simulator(scn, PathfinderPlacement())
    assert sim.next_decision() == (1, 2)
    assert sim.time == 0.0
    assert sim.place(1) == Placement((0, 1), (2, 2))
    assert sim.free_gpus == (0, 0)
    reserved = sim.reserved_bandwidth
    assert reserved[0, 1] == pytest.approx(1e9 / 3, rel=REL)
    assert reserved[1, 0] == 0.0
    assert sim.residual_bandwidth[0, 1] == pytest.approx(1e9 - 1e9 / 3, rel=REL)
    assert sim.network_utilization == pytest.approx((1e9 / 3) / 2e9, rel=REL)
    assert sim.pending == (2,)
    assert sim.running == (1,)

    # no GPU is free: the next decision is after J1's completion, with J2 and J3 pending
    assert sim.next_decision() == (2, 3)
    assert sim.time == pytest.approx(10800.0, rel=REL)
    np.testing.assert_array_equal(sim.reserved_bandwidth, 0.0)
    assert sim.free_gpus == (2, 2)
    assert sim.place(2) == Placement((0,), (2,))
    assert sim.next_decision() == (3,)
    assert sim.place(3) == Placement((1,), (2,))
    assert sim.next_decision() is None
    res = sim.result("fcfs")

    r1, r2, r3 = res.records
    assert (r1.start_time, r1.execution, r1.wait) == pytest.approx((0.0, 10800.0, 0.0), rel=REL)
    assert (r2.start_time, r2.execution, r2.wait) == pytest.approx(
        (10800.0, 7200.0, 10800.0), rel=REL
    )
    assert (r3.start_time, r3.execution, r3.wait) == pytest.approx(
        (10800.0, 7200.0, 7200.0), rel=REL
    )
    assert [r.jct for r in res.records] == pytest.approx([10800.0, 18000.0, 14400.0], rel=REL)
    # costs: 3 h * (2*0.1 + 2*0.3) * 0.5 = 1.2; 2 h * 0.2 * 0.5 = 0.2; 2 h * 0.6 * 0.5 = 0.6
    assert [r.cost for r in res.records] == pytest.approx([1.2, 0.2, 0.6], rel=REL)
    assert r1.reserved_bandwidth == pytest.approx(1e9 / 3, rel=REL)
    assert res.avg_jct == pytest.approx(14400.0, rel=REL)  # (10800 + 18000 + 14400) / 3
    assert res.total_cost == pytest.approx(2.0, rel=REL)
    assert res.makespan == pytest.approx(18000.0, rel=REL)
    # (4 * 10800 + 2 * 7200 + 2 * 7200) / (4 * 18000) = 1
    assert res.gpu_utilization == pytest.approx(1.0, rel=REL)
    assert res.n_decisions == 3

    # the same through Policy.simulate
    again = Policy("fcfs", FCFSOrdering(), PathfinderPlacement()).simulate(scn)
    assert again.records == res.records


# ---------------------------------------------------------------------------------------------
# Scenario B: three jobs, a cross-region pipeline and a later job steered by the residual
# bandwidth of a directed link.
#
#   R0: 4 GPUs at $0.1, R1: 3 GPUs at $0.3; link R0 <-> R1 4 Gbps (5e8 B/s, hop 2 s).
#   J1: M4 at t = 0; J2: M2 at t = 0; J3: M3 at t = 2.5 h = 9000 s.
# ---------------------------------------------------------------------------------------------
SCENARIO_B: dict[str, Any] = {
    "name": "golden-b",
    # the paper's literal semantics: 6e12-parameter models cannot fit in any 48 GB GPU
    "ignore_memory": True,
    "constants": CONSTANTS,
    "regions": [_region("R0", 4, 0.1), _region("R1", 3, 0.3)],
    "links": {"pairs": [{"a": "R0", "b": "R1", "gbps": 4}]},
    "models": MODELS,
    "datasets": [{"name": "D", "samples": 900}],
    "jobs": [
        {"model": "M4", "dataset": "D"},
        {"model": "M2", "dataset": "D"},
        {"model": "M3", "dataset": "D", "submit_h": 2.5},
    ],
}


def test_scenario_b_bace_pipe_step_by_step() -> None:
    scn = build_scenario(SCENARIO_B)
    # Eq. 13 reference: the largest region R0 (8 Gbps, hop 1 s)
    assert [scn.profiles[j].k_star for j in (1, 2, 3)] == [4, 2, 3]
    sim = Simulator(scn, PathfinderPlacement())
    order = PriorityOrdering()

    # t = 0: alpha = 0; scores J1 = 0, J2 = 0.5 -> J2 first.
    cands = sim.next_decision()
    assert cands == (1, 2)
    assert sim.network_utilization == 0.0
    assert order.choose(sim, cands) == 2
    # J2 (K* = 2): phase 1, the cheapest region with >= 2 free is R0 -> R0:2.
    #   t_iter = (1 + 2*3 + 3*3) * 2 = 32, E = 7200.
    assert sim.place(2) == Placement((0,), (2,))
    assert sim.free_gpus == (2, 3)

    # J1 (K* = 4): phase 1 fails (2 and 3 free). Phase 2:
    #   start R0: g = 2, widest link R0 -> R1 (5e8), g' = min(2 + 3, 4) = 4,
    #     check A / 5e8 = 2 <= t_comp(4) = 3 -> [R0, R1], g = 4. Alg. 2: 1 + 1, surplus
    #     R0 +1 (cheaper, 2 free), R1 +1 -> (2, 2), average price (0.2 + 0.6) / 4 = 0.2.
    #   start R1: g = 3, R1 -> R0 passes too -> [R1, R0] with the same GPUs: a tie keeps R0 first.
    #   L = 4, t_comp = 3, hops [1 (R0), 2 (R0->R1), 1 (R1)] -> Delta = 3,
    #   t_iter = (4 + 12 + 9) * 2 = 50, E = 225 * 50 = 11250 s.
    #   Reserve b(4) = A / t_comp(4) = 1e9 / 3 on R0 -> R1 only.
    assert sim.next_decision() == (1,)
    assert sim.place(1) == Placement((0, 1), (2, 2))
    assert sim.free_gpus == (0, 1)
    res_bw = sim.reserved_bandwidth
    assert res_bw[0, 1] == pytest.approx(1e9 / 3, rel=REL)
    assert res_bw[1, 0] == 0.0
    # alpha = (1e9 / 3) / (5e8 + 5e8) = 1/3
    assert sim.network_utilization == pytest.approx(1 / 3, rel=REL)

    # Next decision: J2 completes at 7200 (nothing pending), J3 arrives at 9000.
    assert sim.next_decision() == (3,)
    assert sim.time == pytest.approx(9000.0, rel=REL)
    assert sim.free_gpus == (2, 1)
    assert sim.residual_bandwidth[0, 1] == pytest.approx(5e8 - 1e9 / 3, rel=REL)
    assert sim.residual_bandwidth[1, 0] == pytest.approx(5e8, rel=REL)
    # J3 (K* = 3): phase 1 fails (2 and 1 free). Phase 2:
    #   start R0: g = 2, to R1 on the residual 5e8 - 1e9/3 = 1.67e8 B/s: g' = 3,
    #     A / 1.67e8 = 6 > t_comp(3) = 4 -> the expansion stops: [R0:2], g = 2.
    #   start R1: g = 1, to R0 on R1 -> R0 (nothing reserved, 5e8): A / 5e8 = 2 <= 4,
    #     g' = min(1 + 2, 3) = 3 -> [R1, R0]; Alg. 2: 1 + 1, surplus to R0 -> (1, 2). g = 3 wins.
    #   L = 3, t_comp = 4, hops [2 (R1->R0), 1 (R0)] -> Delta = 4,
    #   t_iter = (3 + 12 + 12) * 2 = 54, E = 225 * 54 = 12150 s; reserve b(3) = 2.5e8 on R1 -> R0.
    assert sim.place(3) == Placement((1, 0), (1, 2))
    assert sim.free_gpus == (0, 0)
    assert sim.reserved_bandwidth[1, 0] == pytest.approx(2.5e8, rel=REL)
    assert sim.reserved_bandwidth[0, 1] == pytest.approx(1e9 / 3, rel=REL)
    assert sim.network_utilization == pytest.approx((1e9 / 3 + 2.5e8) / 1e9, rel=REL)

    # J1 finishes at 11250, J3 at 9000 + 12150 = 21150.
    assert sim.next_decision() is None
    assert sim.time == pytest.approx(21150.0, rel=REL)
    np.testing.assert_array_equal(sim.reserved_bandwidth, 0.0)
    assert sim.free_gpus == (4, 3)
    res = sim.result()
    _check_scenario_b_result(res)


def test_scenario_b_bace_pipe_run() -> None:
    res = bace_pipe().simulate(build_scenario(SCENARIO_B))
    _check_scenario_b_result(res)
    assert res.policy == "bace-pipe"


def _check_scenario_b_result(res: Any) -> None:
    r1, r2, r3 = res.records
    assert r1.placement == Placement((0, 1), (2, 2))
    assert r2.placement == Placement((0,), (2,))
    assert r3.placement == Placement((1, 0), (1, 2))
    expect = {
        # job: (submit, start, execution, finish, wait, jct, cost, reserved)
        # costs: 3.125 h * (0.2 + 0.6) * 0.5 = 1.25; 2 h * 0.2 * 0.5 = 0.2;
        #        3.375 h * (0.3 + 0.2) * 0.5 = 0.84375
        1: (0.0, 0.0, 11250.0, 11250.0, 0.0, 11250.0, 1.25, 1e9 / 3),
        2: (0.0, 0.0, 7200.0, 7200.0, 0.0, 7200.0, 0.2, 0.0),
        3: (9000.0, 9000.0, 12150.0, 21150.0, 0.0, 12150.0, 0.84375, 2.5e8),
    }
    for r in res.records:
        sub, start, ex, fin, wait, jct, cost, bw = expect[r.job_id]
        got = (
            r.submit_time,
            r.start_time,
            r.execution,
            r.finish_time,
            r.wait,
            r.jct,
            r.cost,
            r.reserved_bandwidth,
        )
        assert got == pytest.approx((sub, start, ex, fin, wait, jct, cost, bw), rel=REL), r.job_id
    # avg JCT (11250 + 7200 + 12150) / 3 = 10200; cost 1.25 + 0.2 + 0.84375 = 2.29375
    assert res.avg_jct == pytest.approx(10200.0, rel=REL)
    assert res.total_cost == pytest.approx(2.29375, rel=REL)
    assert res.makespan == pytest.approx(21150.0, rel=REL)
    # busy 4 * 11250 + 2 * 7200 + 3 * 12150 = 95850 GPU-s over 7 GPUs * 21150 s
    assert res.gpu_utilization == pytest.approx(95850 / (7 * 21150), rel=REL)
    assert res.n_decisions == 3


def test_scenario_b_fcfs_takes_a_whole_region() -> None:
    # FCFS offers J1 first: phase 1 finds R0 with 4 >= K* free -> R0:4 (t_iter 48, E 10800);
    # J2 -> R1:2 (phase 1, E 7200). At 9000 J3 (K* = 3) finds R1 with 3 free -> R1:3
    # (t_comp 4, hops [1, 1]: t_iter (2 + 12 + 12) * 2 = 52, E 11700).
    res = Policy("fcfs", FCFSOrdering(), PathfinderPlacement()).simulate(build_scenario(SCENARIO_B))
    assert [r.placement for r in res.records] == [
        Placement((0,), (4,)),
        Placement((1,), (2,)),
        Placement((1,), (3,)),
    ]
    assert [r.execution for r in res.records] == pytest.approx([10800.0, 7200.0, 11700.0])
    assert res.avg_jct == pytest.approx((10800 + 7200 + 11700) / 3, rel=REL)


def test_simultaneous_completion_and_arrival() -> None:
    # J3 of scenario A submitted exactly when J2 completes (t = 2 h = 7200): completions are
    # processed before arrivals at the same instant, so J3 starts at once on R0 with no wait.
    spec = {
        **SCENARIO_A,
        "jobs": [*SCENARIO_A["jobs"][:2], {"model": "M2", "dataset": "D", "submit_h": 2.0}],
    }
    res = bace_pipe().simulate(build_scenario(spec))
    r3 = res.records[2]
    assert r3.start_time == pytest.approx(7200.0, rel=REL)
    assert r3.wait == 0.0
    assert r3.placement == Placement((0,), (2,))


# ---------------------------------------------------------------------------------------------
# Misbehaving placement policies
# ---------------------------------------------------------------------------------------------


class _Scripted:
    """Returns whatever ``make(view, job_id)`` gives."""

    pure = False

    def __init__(self, make: Any, name: str = "scripted") -> None:
        self.make = make
        self.name = name

    def place(self, view: Any, job_id: int) -> Placement | None:
        return self.make(view, job_id)


@pytest.fixture
def alarm() -> Iterator[None]:
    """Fail instead of hanging forever."""

    def boom(signum: int, frame: Any) -> None:
        raise TimeoutError("the simulator hung")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(20)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_over_allocating_gpus_raises() -> None:
    scn = build_scenario(SCENARIO_B)
    greedy = _Scripted(lambda v, j: Placement((0,), (v.free_gpus[0] + 1,)), "greedy")
    with pytest.raises(PlacementError, match="constraint 5"):
        Simulator(scn, greedy).run(FCFSOrdering())


def test_over_allocating_across_regions_raises() -> None:
    # K* of J1 is 4 and 2 + 4 = 6 GPUs do not exist in R1 (3 GPUs)
    scn = build_scenario(SCENARIO_B)
    sim = Simulator(scn, _Scripted(lambda v, j: Placement((0, 1), (1, 4))))
    sim.next_decision()
    with pytest.raises(PlacementError):
        sim.place(1)


def test_over_allocation_after_others_started_raises() -> None:
    # J2 takes R0:2 legally, then J1 asks for 3 in R0 where 2 are left.
    plan = {2: Placement((0,), (2,)), 1: Placement((0,), (3,))}
    sim = Simulator(build_scenario(SCENARIO_B), _Scripted(lambda v, j: plan[j]))
    sim.next_decision()
    sim.place(2)
    sim.next_decision()
    with pytest.raises(PlacementError, match="constraint 5"):
        sim.place(1)


def test_more_than_k_star_raises() -> None:
    # J2's K* is 2: three GPUs are free but too many
    sim = Simulator(build_scenario(SCENARIO_B), _Scripted(lambda v, j: Placement((0,), (3,))))
    sim.next_decision()
    with pytest.raises(PlacementError, match="K\\*"):
        sim.place(2)


def test_bandwidth_overbooking_raises() -> None:
    # J1 on R0 -> R1 with 2 + 2 reserves 1e9/3 of 5e8; J3 later on R0 -> R1 with 2 + 1 needs
    # b(3) = 2.5e8 > 5e8 - 1e9/3: constraint (6).
    plan = {
        1: Placement((0, 1), (2, 2)),
        2: Placement((0,), (2,)),
        3: Placement((0, 1), (2, 1)),
    }
    sim = Simulator(build_scenario(SCENARIO_B), _Scripted(lambda v, j: plan[j]))
    sim.next_decision()
    sim.place(1)
    sim.next_decision()
    sim.place(2)
    assert sim.next_decision() == (3,)
    with pytest.raises(PlacementError, match="constraint 6"):
        sim.place(3)


def test_malformed_placements_raise() -> None:
    scn = build_scenario(SCENARIO_B)
    for bad in (
        Placement((0, 0), (1, 1)),
        Placement((2,), (1,)),
        Placement((0,), (0,)),
        Placement((0, 1), (1,)),
    ):
        sim = Simulator(scn, _Scripted(lambda v, j, bad=bad: bad))
        sim.next_decision()
        with pytest.raises(PlacementError):
            sim.place(1)


def test_validation_can_be_switched_off() -> None:
    # with validate=False the simulator trusts the policy
    sim = Simulator(
        build_scenario(SCENARIO_B), _Scripted(lambda v, j: Placement((0,), (1,))), validate=False
    )
    sim.next_decision()
    assert sim.place(1) == Placement((0,), (1,))


def test_never_placing_raises_instead_of_hanging(alarm: None) -> None:
    lazy = _Scripted(lambda v, j: None, "lazy")
    with pytest.raises(SimulationError, match="never start"):
        Simulator(build_scenario(SCENARIO_A), lazy).run(PriorityOrdering())
    # the empty placement counts as "nothing" too
    empty = _Scripted(lambda v, j: Placement((), ()), "empty")
    with pytest.raises(SimulationError):
        Simulator(build_scenario(SCENARIO_B), empty).run(FCFSOrdering())


def test_placing_only_some_jobs_raises_after_the_others_finish(alarm: None) -> None:
    # J1 is placed, J2 and J3 never are: once J1 is done, the cluster is idle forever.
    picky = _Scripted(lambda v, j: Placement((0,), (2,)) if j == 1 else None, "picky")
    sim = Simulator(build_scenario(SCENARIO_A), picky)
    with pytest.raises(SimulationError):
        sim.run(FCFSOrdering())
    assert sim.running == ()
    assert set(sim.pending) == {2, 3}


def test_result_before_the_end_raises() -> None:
    sim = Simulator(build_scenario(SCENARIO_A), PathfinderPlacement())
    sim.next_decision()
    with pytest.raises(SimulationError):
        sim.result()


def test_ordering_choosing_a_non_candidate_raises() -> None:
    class Rogue:
        name = "rogue"

        def choose(self, view: Any, candidates: Any) -> int:
            return 99

    with pytest.raises(SimulationError):
        Simulator(build_scenario(SCENARIO_A), PathfinderPlacement()).run(Rogue())


def test_placing_a_non_candidate_raises() -> None:
    sim = Simulator(build_scenario(SCENARIO_A), PathfinderPlacement())
    assert sim.next_decision() == (1, 2)
    with pytest.raises(SimulationError):
        sim.place(3)  # not yet submitted
    sim.place(2)
    with pytest.raises(SimulationError):
        sim.place(2)  # already running


def test_defer_ends_the_pass() -> None:
    # Deferring at t = 0 leaves both jobs pending until the next event (J3's arrival at 3600).
    sim = Simulator(build_scenario(SCENARIO_A), PathfinderPlacement())
    assert sim.next_decision() == (1, 2)
    sim.defer()
    assert sim.next_decision() == (1, 2, 3)
    assert sim.time == pytest.approx(3600.0)
    assert sim.free_gpus == (2, 2)


def test_fig1_priority_at_alpha_zero_puts_p_first() -> None:
    # semantics §8: at alpha = 0, Eq. (12) ranks the job with the smaller E(1) first. P
    # (Qwen2.5-14B) has E(1) = 102 * 2 * 512 * t1(14B), Q (Llama-3.1-70B) 407 * 2 * 128 * t1(70B)
    # with t1 proportional to N: P ~ 104448 * 14 < Q ~ 104192 * 70.
    scn = load_scenario("fig1")
    p, q = scn.profiles[1], scn.profiles[2]
    assert (p.iterations, q.iterations) == (102, 407)
    assert p.single_gpu_exec < q.single_gpu_exec
    sim = Simulator(scn, PathfinderPlacement())
    cands = sim.next_decision()
    assert cands == (1, 2)
    assert PriorityOrdering().choose(sim, cands) == 1
    res = bace_pipe().simulate(scn)
    assert res.records[0].start_time == 0.0
    assert all(r.n_gpus <= r.k_star for r in res.records)
