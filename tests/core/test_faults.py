"""Faults (semantics §11), worked out by hand, and their invariants on random scenarios.

The golden job is test_simulator_golden.py's ``M2``: 3e12 parameters, 2 layers, hidden 5e8,
batch 4, S = m = 1, 1 TFLOP/s, mfu 1: t_comp(2) = 3 s, A = 1e9 bytes, M = 4, 225 iterations.
Every link and intra-region hop runs at 8 Gbps = 1e9 B/s, 1 s per hop, so on 2 GPUs
t_iter = (1 + 2 * 3 + 3 * max(3, 1)) * 2 = 32 s and E = 225 * 32 = 7,200 s. Power 0.5 kW/GPU.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bacepipe_env.core import Placement, RunResult, Scenario, Simulator
from bacepipe_env.errors import ScenarioError
from bacepipe_env.policies import bace_pipe
from bacepipe_env.policies.registry import make_policy, policy_names
from bacepipe_env.scenarios import build_scenario, load_scenario

POWER = 0.5
CONSTANTS = {"seq_len": 1, "micro_batch": 1, "peak_tflops": 1.0, "mfu": 1.0, "power_kw": POWER}
M2 = {"name": "M2", "params": 3e12, "layers": 2, "hidden": 500_000_000, "batch": 4}


def _spec(regions: list[tuple[str, int, float]], jobs: list[dict[str, Any]], **top: Any) -> Any:
    return {
        "name": "faults-golden",
        "ignore_memory": True,  # 3e12 parameters fit in no 48 GB GPU
        "constants": CONSTANTS,
        "regions": [
            {"name": n, "gpus": g, "price_usd_per_kwh": p, "bandwidth_gbps": 8}
            for n, g, p in regions
        ],
        "links": {"rule": "mean"},
        "models": [M2],
        "datasets": [{"name": "D", "samples": 900}],
        "jobs": jobs,
        **top,
    }


JOB = {"name": "j", "model": "M2", "dataset": "D"}


def test_outage_golden_job_resumes_elsewhere_from_its_checkpoint() -> None:
    # R0 (2 GPUs, $0.1) and R1 (2 GPUs, $0.3); R0 is down over [5000 s, 10 h), checkpoints
    # every 1,800 s, restarts take 600 s.
    #  t = 0: BACE-Pipe puts the job on the cheaper R0:2 (t_iter 32 s, E = 7,200 s).
    #  t = 5000: R0 goes down. Checkpoints at 1800 and 3600 (5400 is after the outage), so the
    #    job keeps the 3600 / 32 = 112.5 iterations done by 3600 s; 1,400 s x 2 GPUs are lost.
    #    It returns to the queue; the only free GPUs are R1's: R1:2, restart 600 s, then
    #    112.5 * 32 = 3,600 s of computing: it completes at 5000 + 600 + 3600 = 9,200 s.
    spec = _spec(
        [("R0", 2, 0.1), ("R1", 2, 0.3)],
        [JOB],
        events=[{"type": "outage", "region": "R0", "start_h": 5000 / 3600, "end_h": 10}],
        checkpoint_interval_s=1800,
        restart_s=600,
    )
    res = bace_pipe().simulate(build_scenario(spec))
    (rec,) = res.records
    first, second = rec.attempts
    assert (first.outcome, second.outcome) == ("outage", "completed")
    assert first.placement == Placement((0,), (2,)) and second.placement == Placement((1,), (2,))
    assert (first.start, first.end) == (0.0, pytest.approx(5000.0, rel=1e-12))
    assert second.start == pytest.approx(5000.0, rel=1e-12)
    assert rec.finish_time == pytest.approx(9200.0, rel=1e-12)
    assert rec.jct == pytest.approx(9200.0, rel=1e-12)
    assert rec.execution == pytest.approx(5000.0 + 4200.0, rel=1e-12)
    assert rec.wait == pytest.approx(0.0, abs=1e-9)
    assert rec.restarts == 1 and res.n_restarts == 1
    # wasted: 1,400 s lost on R0 and the 600 s restart on R1, 2 GPUs each: 4,000 GPU-s
    assert rec.wasted_gpu_seconds == pytest.approx(4000.0, rel=1e-12)
    assert res.wasted_gpu_hours == pytest.approx(4000 / 3600, rel=1e-12)
    # cost: 5000/3600 h x (2 x $0.1) x 0.5 kW + 4200/3600 h x (2 x $0.3) x 0.5 kW
    assert rec.cost == pytest.approx(5000 / 3600 * 0.1 + 4200 / 3600 * 0.3, rel=1e-12)
    # wasted cost: 1400/3600 x 0.2 x 0.5 + 600/3600 x 0.6 x 0.5 = 0.038889 + 0.05
    assert rec.wasted_cost == pytest.approx(1400 / 3600 * 0.1 + 600 / 3600 * 0.3, rel=1e-12)
    # GPU-hours held = useful + wasted: 2 x 9200 s = 2 x 7200 s of work + 4000 GPU-s
    assert res.gpu_hours == pytest.approx(2 * 9200 / 3600, rel=1e-12)
    assert res.gpu_hours == pytest.approx(2 * 7200 / 3600 + res.wasted_gpu_hours, rel=1e-12)


def _run_on(sim: Simulator, job: int, placement: Placement) -> RunResult:
    cands = sim.next_decision()
    assert cands is not None and job in cands
    sim.place(job, placement)
    while sim.next_decision() is not None:
        raise AssertionError("nothing else to place")
    return sim.result("explicit")


@pytest.mark.parametrize(("end_h", "finish"), [(100.0, 8700.0), (5400 / 3600, 7800.0)])
def test_a_degraded_link_slows_the_rest_of_the_work_by_eq1s_factor(
    end_h: float, finish: float
) -> None:
    # The job runs R0:1 > R1:1, one cross-region hop (1 s). At 3,200 s (100 iterations done,
    # 125 left) the link R0 -> R1 drops to a quarter: the hop takes 1e9 / 2.5e8 = 4 s and
    # t_iter = (4 + 2 * 3 + 3 * max(3, 4)) * 2 = 44 s, 44 / 32 = 1.375 x slower.
    #  - degraded for good: 125 * 44 = 5,500 s more, finish at 8,700 s;
    #  - restored at 5,400 s: 2,200 / 44 = 50 iterations done, 75 left at 32 s: finish at
    #    5400 + 2400 = 7,800 s.
    spec = _spec(
        [("R0", 1, 0.1), ("R1", 1, 0.3)],
        [JOB],
        events=[
            {
                "type": "link",
                "src": "R0",
                "dst": "R1",
                "factor": 0.25,
                "start_h": 3200 / 3600,
                "end_h": end_h,
            }
        ],
    )
    sim = Simulator(build_scenario(spec), bace_pipe().placement)
    res = _run_on(sim, 1, Placement((0, 1), (1, 1)))
    (rec,) = res.records
    assert rec.finish_time == pytest.approx(finish, rel=1e-12)
    assert rec.attempts[0].outcome == "completed" and rec.restarts == 0
    assert rec.wasted_gpu_seconds == 0.0
    if end_h == 100.0:  # the rest of the work took exactly Eq. (1)'s ratio longer
        assert (rec.finish_time - 3200.0) / (125 * 32.0) == pytest.approx(44 / 32, rel=1e-12)


def test_reservations_shrink_to_a_degraded_links_capacity() -> None:
    # J1 on R0:1 > R1:1 books b(2) = A / t_comp(2) = 1e9 / 3 B/s on R0 -> R1 (capacity 1e9).
    # From 1 h the link carries 0.25 x 1e9 = 2.5e8 < 3.33e8: the reservation is cut to 2.5e8
    # and the residual is 0. J2 arrives at 1.5 h and is offered R2 (the decision we inspect).
    spec = _spec(
        [("R0", 1, 0.1), ("R1", 1, 0.3), ("R2", 2, 0.2)],
        [JOB, {"name": "late", "model": "M2", "dataset": "D", "submit_h": 1.5}],
        events=[
            {"type": "link", "src": "R0", "dst": "R1", "factor": 0.25, "start_h": 1, "end_h": 9}
        ],
    )
    sim = Simulator(build_scenario(spec), bace_pipe().placement)
    assert sim.next_decision() == (1,)
    sim.place(1, Placement((0, 1), (1, 1)))
    assert sim.reserved_bandwidth[0, 1] == pytest.approx(1e9 / 3, rel=1e-12)
    assert sim.next_decision() == (2,)  # t = 1.5 h
    assert sim.time == pytest.approx(5400.0)
    assert sim.reserved_bandwidth[0, 1] == pytest.approx(2.5e8, rel=1e-12)
    assert sim.residual_bandwidth[0, 1] == pytest.approx(0.0, abs=1e-3)


def test_a_price_change_multiplies_the_hours_it_covers() -> None:
    # The job runs on R0:2 for 2 h at $0.1; the price doubles over [0.5 h, 1.5 h):
    # cost = 0.5 kW x 2 GPUs x 0.1 x (2 h + 1 h extra) = $0.30.
    spec = _spec(
        [("R0", 2, 0.1), ("R1", 2, 0.3)],
        [JOB],
        events=[{"type": "price", "region": "R0", "factor": 2.0, "start_h": 0.5, "end_h": 1.5}],
    )
    (rec,) = bace_pipe().simulate(build_scenario(spec)).records
    assert rec.placement == Placement((0,), (2,))
    assert rec.cost == pytest.approx(0.30, rel=1e-12)
    assert rec.restarts == 0


def test_failures_at_rate_zero_and_no_events_are_the_perfect_world() -> None:
    a = load_scenario("paper", seed=3)
    b = load_scenario("paper", seed=3, gpu_failure_rate=0.0)
    assert b.faults is None
    names = a.cluster.names
    assert bace_pipe().simulate(a).to_dict(names) == bace_pipe().simulate(b).to_dict(names)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"outages": [("Mars", 1.0, 2.0)]}, "--outage[0].region"),
        ({"outages": [("EU-West", 5.0, 5.0)]}, "--outage[0].end_h"),
        ({"outages": [("EU-West", 5.0, 1.0)]}, "--outage[0].end_h"),
        ({"gpu_failure_rate": -1e-5}, "gpu_failure_rate"),
        ({"link_changes": [("EU-West", "US-East-2", 1.5, 0.0, 1.0)]}, "--link-degrade[0].factor"),
        ({"link_changes": [("EU-West", "US-East-2", 0.0, 0.0, 1.0)]}, "--link-degrade[0].factor"),
        ({"link_changes": [("EU-West", "EU-West", 0.5, 0.0, 1.0)]}, "--link-degrade[0].dst"),
        ({"checkpoint_interval_s": 0}, "checkpoint_interval_s"),
        ({"restart_s": -1}, "restart_s"),
    ],
)
def test_bad_faults_are_one_line_errors(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ScenarioError) as err:
        load_scenario("paper", **kwargs)
    assert str(err.value).startswith(field) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"type": "quake", "start_h": 0, "end_h": 1}, "events[0].type"),
        ({"type": "outage", "region": "EU-West", "start_h": 2, "end_h": 1}, "events[0].end_h"),
        ({"type": "outage", "region": "Nowhere", "start_h": 0, "end_h": 1}, "events[0].region"),
        (
            {
                "type": "link",
                "src": "EU-West",
                "dst": "OC-East",
                "factor": 2,
                "start_h": 0,
                "end_h": 1,
            },
            "events[0].factor",
        ),
        (
            {"type": "price", "region": "EU-West", "factor": -1, "start_h": 0, "end_h": 1},
            "events[0].factor",
        ),
    ],
)
def test_bad_events_in_a_file_are_one_line_errors(event: dict[str, Any], field: str) -> None:
    from bacepipe_env.scenarios import load_scenario_spec

    spec = dict(load_scenario_spec("paper"), events=[event])
    with pytest.raises(ScenarioError) as err:
        load_scenario(spec)
    assert str(err.value).startswith(field) and "\n" not in str(err.value)


# ---------------------------------------------------------------------------- properties
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = ("EU-West", "US-East-2", "EU-Central", "EA-East", "SEA-South", "OC-East")


@st.composite
def faulty_worlds(draw: st.DrawFn) -> dict[str, Any]:
    outages = []
    for _ in range(draw(st.integers(0, 3))):
        start = draw(st.floats(0.0, 300.0))
        outages.append((draw(st.sampled_from(NAMES)), start, start + draw(st.floats(0.5, 200.0))))
    links = []
    for _ in range(draw(st.integers(0, 3))):
        a, b = draw(st.sampled_from(NAMES)), draw(st.sampled_from(NAMES))
        if a != b:
            start = draw(st.floats(0.0, 300.0))
            end = start + draw(st.floats(0.5, 500.0))
            links.append((a, b, draw(st.floats(0.01, 1.0)), start, end))
    return {
        "seed": draw(st.integers(0, 2**16)),
        "n_jobs": draw(st.integers(1, 12)),
        "policy": draw(st.sampled_from(policy_names())),
        "outages": outages,
        "link_changes": links,
        "gpu_failure_rate": draw(st.sampled_from([0.0, 2e-5, 2e-4, 2e-3])),
        "checkpoint_interval_s": draw(st.sampled_from([600.0, 3600.0, 14400.0])),
        "restart_s": draw(st.sampled_from([0.0, 600.0])),
    }


def _scenario(world: dict[str, Any]) -> Scenario:
    keys = ("n_jobs", "outages", "link_changes", "gpu_failure_rate", "checkpoint_interval_s")
    return load_scenario(
        "paper", seed=world["seed"], restart_s=world["restart_s"], **{k: world[k] for k in keys}
    )


def _drive(scn: Scenario, world: dict[str, Any]) -> tuple[RunResult, Simulator]:
    """Run the policy through the stepping API, checking the capacities at every decision."""
    policy = make_policy(world["policy"], seed=world["seed"])
    sim = Simulator(scn, policy.placement)
    nominal = scn.cluster.bandwidth_rows
    while (cands := sim.next_decision()) is not None:
        reserved = sim.reserved_bandwidth
        for u in range(scn.cluster.n_regions):
            for v in range(scn.cluster.n_regions):
                factor = 1.0
                for c in scn.faults.links if scn.faults else ():
                    if (c.src, c.dst) == (u, v) and c.start <= sim.time < c.end:
                        factor *= c.factor
                # reservations never exceed the (possibly degraded) capacity
                assert reserved[u, v] <= nominal[u][v] * factor * (1 + 1e-9) + 1e-6
        sim.place(policy.ordering.choose(sim, cands), None)
    return sim.result(world["policy"]), sim


@SETTINGS
@given(world=faulty_worlds())
def test_faulty_runs_keep_every_invariant(world: dict[str, Any], useful_iterations) -> None:
    scn = _scenario(world)
    res, sim = _drive(scn, world)
    # every job completes exactly once, its last attempt completed, the others not
    assert [r.job_id for r in res.records] == sorted(j.job_id for j in scn.jobs)
    for rec in res.records:
        *early, last = rec.attempts
        assert last.outcome == "completed" and last.end == rec.finish_time
        assert all(a.outcome in ("failed", "outage") for a in early)
        assert all(a.end <= b.start for a, b in zip(rec.attempts, rec.attempts[1:]))
        assert rec.attempts[0].start >= rec.submit_time
        # no attempt holds a region while it is down
        for a in rec.attempts:
            for o in scn.faults.outages if scn.faults else ():
                if o.region in a.placement.path:  # type: ignore[attr-defined]
                    assert a.end <= o.start or a.start >= o.end, (a, o)
    # GPU-hours held = useful + wasted, and the useful part is each job's work exactly once
    held = math.fsum(r.gpu_seconds for r in res.records) / 3600
    assert res.gpu_hours == pytest.approx(held, rel=1e-12)
    if not (scn.faults and scn.faults.links):  # constant speeds: useful seconds = I x t_iter
        for rec in res.records:
            iterations = scn.profiles[rec.job_id].iterations
            assert useful_iterations(sim, rec) == pytest.approx(iterations, rel=1e-9)
    assert res.n_restarts == sum(len(r.attempts) - 1 for r in res.records)
    event(f"restarts: {'some' if res.n_restarts else 'none'}")
    # same seed, same run
    again, _ = _drive(_scenario(world), world)
    assert again.to_dict(scn.cluster.names) == res.to_dict(scn.cluster.names)


def test_waiting_when_only_stale_events_remain_is_not_offered() -> None:
    # A failure drawn after its attempt completed stays in the heap; it must not count as a
    # future event (the env offers its wait action only while one is to come), and waiting
    # must never strand the pending jobs.
    scn = load_scenario("paper", seed=1, gpu_failure_rate=2e-4)
    policy = bace_pipe()
    sim = Simulator(scn, policy.placement)
    waits = 0
    while (cands := sim.next_decision()) is not None:
        if sim.has_future_events and waits < 50:
            sim.defer()  # wait whenever it is legal, up to 50 times
            waits += 1
            continue
        sim.place(policy.ordering.choose(sim, cands))
    assert waits == 50 or not sim.has_future_events
    assert sim.done and sim.result().n_restarts > 0
