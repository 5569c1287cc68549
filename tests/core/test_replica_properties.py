"""Invariants of data-parallel copies and their elasticity (semantics §3e, §3f) on random
worlds, with preemption, GPU failures and outages mixed in: at every decision no copy is
below its memory floor, no link is booked over its capacity in either direction, every GPU
is free or held by exactly one running copy, every running job's copies are in its range and
alike; at the end every job has finished exactly once."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

from bacepipe_env.core import Scenario, Simulator
from bacepipe_env.errors import ScenarioError, SimulationError
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import load_scenario

REL = 1e-9
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, object]:
    return {
        "name": draw(st.sampled_from(["online", "paper-aws"])),
        "seed": draw(st.integers(0, 2**16)),
        "n_jobs": draw(st.integers(1, 20)),
        "gpu_scale": draw(st.floats(0.1, 1.0, allow_nan=False)),
        "bandwidth_scale": draw(st.floats(0.02, 2.0, allow_nan=False)),
        "max_replicas": draw(st.integers(1, 6)),
        "elasticity": draw(
            st.sampled_from(
                ["none", "greedy", "greedy:min_run_h=0,min_gain=0", "greedy:min_gain=0"]
            )
        ),
        "preemption": draw(st.sampled_from(["none", "srtf:min_run_h=0.1"])),
        "gpu_failure_rate": draw(st.sampled_from([0.0, 2e-3])),
        "outage": draw(st.booleans()),
    }


def _scenario(args: dict[str, object]) -> Scenario:
    args = dict(args)
    name = args.pop("name")
    outage = args.pop("outage")
    if outage:
        args["outages"] = [("US-East-2", 1.0, 6.0)]
    try:
        return load_scenario(str(name), model="physical", scheduler_model="world", **args)
    except ScenarioError as exc:
        assert "memory" in str(exc) or "fit" in str(exc), exc
        reject()


def _check(sim: Simulator, scn: Scenario) -> None:
    cap = scn.cluster.capacity
    used = [0] * len(cap)
    for job_id, (p, _) in zip(sim.running, sim.running_placements()):
        low, high = sim.replica_range(job_id)
        assert low <= p.n_replicas <= high, (job_id, p)
        assert all(q.stages == p.stages and not q.replicas for q in p.pipelines)
        assert p.n_gpus == p.stages * p.n_replicas
        floors = sim.memory_floor(job_id)
        assert all(p.stages >= floors[r] for r in p.regions), (job_id, p, floors)
        assert p.stages <= sim.profile(job_id).k_star
        for r, g in p.cells:
            used[r] += g
    down = sim.down_regions
    for r, (f, u, c) in enumerate(zip(sim.free_gpus, used, cap)):
        # a region down offers nothing and holds nothing (its attempts were interrupted)
        assert (f, u) == (0, 0) if down[r] else f + u == c, (r, f, u, c, down[r])
    reserved = sim.reserved_bandwidth
    capacity = np.asarray(sim.link_capacity_rows, dtype=float)
    assert np.all(reserved >= 0.0)
    assert np.all(reserved <= capacity * (1.0 + REL)), (reserved, capacity)
    assert np.all(reserved <= capacity.T * (1.0 + REL))  # the backward and ring traffic
    assert set(sim.pending).isdisjoint(sim.running)


@SETTINGS
@given(worlds(), st.randoms(use_true_random=False))
def test_copies_hold_memory_links_gpus_and_every_job_finishes_once(args, rnd) -> None:
    scn = _scenario(args)
    policy = make_policy("sjf")
    sim = Simulator(
        scn,
        policy.placement,
        elasticity=scn.elasticity,
        preemption=scn.preemption,
    )
    try:
        while (candidates := sim.next_decision()) is not None:
            _check(sim, scn)
            job = rnd.choice(candidates)
            low, high = sim.replica_range(job)
            feasible = [d for d in range(low, high + 1) if sim.offer(job, d) is not None]
            sim.place(job, replicas=rnd.choice(feasible) if feasible else None)
            _check(sim, scn)
    except SimulationError as exc:
        if "never start" in str(exc) or "past the simulation horizon" in str(exc):
            reject()
        raise
    result = sim.result()
    event(f"resizes: {'some' if result.n_resizes else 'none'}")
    event(f"copies: {max(r.placement.n_replicas for r in result.records)} at most")
    event(f"preemptions: {'some' if result.n_preemptions else 'none'}")
    event(f"restarts after faults: {'some' if result.n_restarts > result.n_resizes else 'none'}")
    assert sorted(r.job_id for r in result.records) == sorted(j.job_id for j in scn.jobs)
    for rec in result.records:
        assert rec.finish_time >= rec.start_time >= rec.submit_time
        assert rec.attempts[-1].outcome == "completed"
        assert sum(a.outcome == "completed" for a in rec.attempts) == 1
    assert sim.free_gpus == tuple(
        0 if d else c for d, c in zip(sim.down_regions, scn.cluster.capacity)
    )
    assert float(sim.reserved_bandwidth.max(initial=0.0)) == pytest.approx(0.0, abs=1e-6)
