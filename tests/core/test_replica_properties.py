"""Invariants of data-parallel copies and their elasticity (semantics §3e, §3f) on random
worlds, with preemption, GPU failures and outages mixed in: at every decision no copy is
below its memory floor, no link is booked over its capacity in either direction, every GPU
is free or held by exactly one running copy, every running job's copies are in its range and
alike; at the end every job has finished exactly once."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

from bacepipe_env.core import Scenario, Simulator
from bacepipe_env.core.elasticity import make_elasticity
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


def _run(name: str, scn: Scenario):
    """``name``'s run on ``scn``; a world that cannot finish is rejected, not failed."""
    try:
        return make_policy(name).simulate(scn)
    except SimulationError as exc:
        if "never start" in str(exc) or "past the simulation horizon" in str(exc):
            reject()
        raise


@SETTINGS
@given(worlds(), st.sampled_from(["sjf", "sjf+finish-aware", "bace-pipe+finish-aware"]))
def test_the_greedy_rule_never_thrashes(args, name) -> None:
    """Read from the records alone (issue 44): every shrink is met at its instant by another
    job's start (the admission rule started a waiting job on what it freed), no resize undoes
    the job's previous one within min_run_h of it, and a job's resizes are at most
    2 max_grows + max_replicas - 1 (a shrink follows a grow or the start count)."""
    args = {**args, "elasticity": "greedy:min_gain=0", "preemption": "none"}
    scn = _scenario(args)
    rule = make_elasticity(scn.elasticity)
    result = _run(name, scn)
    starts = {
        a.start
        for r in result.records
        for i, a in enumerate(r.attempts)
        if i == 0 or r.attempts[i - 1].outcome != "resized"
    }
    event(f"resizes: {'some' if result.n_resizes else 'none'}")
    for rec in result.records:
        steps: list[tuple[float, int]] = []
        for a, b in zip(rec.attempts, rec.attempts[1:]):
            if a.outcome != "resized":
                continue
            step = 1 if b.placement.n_replicas > a.placement.n_replicas else -1
            if step < 0:
                assert a.end in starts, (rec.job_id, a.end)
            if steps and steps[-1][1] == -step:
                assert a.end - steps[-1][0] > rule.min_run_s, (rec.job_id, steps, a.end)
            steps.append((a.end, step))
        low, high = 1, int(args["max_replicas"])  # type: ignore[call-overload]
        assert len(steps) <= 2 * rule.max_grows + high - low


@SETTINGS
@given(worlds(), st.sampled_from(["sjf+finish-aware", "bace-pipe"]))
def test_the_json_alone_shows_gpu_and_link_capacity_held_at_every_instant(args, name) -> None:
    """Issue 44: an outside checker needs only the run's JSON (and the cluster's nominal
    capacities). Every attempt lists every copy's regions and GPUs and the rate it booked on
    each directed link; sweeping the attempts' intervals, no region ever holds more GPUs than
    it has and no directed link carries more than its capacity (the smaller of its two
    directions under the physical model, which books a pair both ways)."""
    scn = _scenario(args)
    result = _run(name, scn)
    names = scn.cluster.names
    data = json.loads(json.dumps(result.to_dict(names)))
    index = {n: i for i, n in enumerate(names)}
    gpus_cap = scn.cluster.capacity
    rows = np.asarray(scn.cluster.bandwidth_rows, dtype=float)
    link_cap = np.minimum(rows, rows.T)  # physical: a pair is booked both ways
    events: list[tuple[float, int, dict]] = []
    for rec in data["jobs"]:
        for a in rec["attempts"]:
            held = sum(c["gpus"] for copy in a["copies"] for c in copy)
            assert held == a["gpus"]
            assert a["path"] == a["copies"][0]
            events += [(a["end_s"], 0, a), (a["start_s"], 1, a)]  # ends before starts
    event(f"copies in a JSON attempt: {max(len(e[2]['copies']) for e in events)} at most")
    used = np.zeros(len(names))
    booked = np.zeros_like(rows)
    for _, kind, a in sorted(events, key=lambda e: (e[0], e[1])):
        sign = 1.0 if kind else -1.0
        for copy in a["copies"]:
            for c in copy:
                used[index[c["region"]]] += sign * c["gpus"]
        for link in a["links"]:
            booked[index[link["from"]], index[link["to"]]] += sign * link["booked_Bps"]
        assert np.all(used <= np.asarray(gpus_cap) + 1e-9), used
        assert np.all(booked <= link_cap * (1.0 + 1e-6) + 1e-6), (booked, link_cap)
    assert np.allclose(used, 0.0) and np.allclose(booked, 0.0, atol=1e-3)
