"""Preemption's invariants (semantics §3c) on random worlds, for every preemptive policy and for a
caller that preempts at random, as for faults: every job completes exactly once, its useful
work is its iterations, capacities hold at every instant, wasted work is accounted, no job is
preempted more than ``max_preemptions`` times, and the same world gives the same run."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bacepipe_env.core import Placement, RunResult, Scenario, Simulator
from bacepipe_env.core.simulator import BANDWIDTH_RTOL
from bacepipe_env.policies.registry import make_policy, policy_info, policy_names
from bacepipe_env.scenarios import load_scenario

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PREEMPTIVE = [n for n in policy_names() if policy_info(n).preemption is not None]
RANDOM_CALLER = "random-preemptor"  # fcfs, preempting a random option at every chance
RULES = ["srtf", "srtf:factor=1.2,min_run_h=0.1", "las", "las:threshold_gpu_h=20,min_run_h=0"]


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    return {
        # the first values are the ones that preempt most (hypothesis starts from them)
        "scenario": draw(st.sampled_from(["online", "online", "paper"])),
        "seed": draw(st.integers(0, 2**16)),
        "n_jobs": draw(st.sampled_from([30, 15, 8, 3])),
        "policy": draw(st.sampled_from([RANDOM_CALLER, *PREEMPTIVE])),
        "rule": draw(st.sampled_from([None, *RULES])),  # None: the policy's own
        "preempt_checkpoint_s": draw(st.sampled_from([0.0, 60.0, 900.0, "lose-since-checkpoint"])),
        "restart_s": draw(st.sampled_from([0.0, 600.0])),
        "checkpoint_interval_s": draw(st.sampled_from([600.0, 3600.0])),
        "max_preemptions": draw(st.sampled_from([4, 1, 6, 0])),
        "gpu_failure_rate": draw(st.sampled_from([0.0, 0.0, 2e-4])),
        "load": draw(st.sampled_from([10.0, 3.0, 1.0])),  # online only: queues form
    }


def _scenario(world: dict[str, Any]) -> Scenario:
    keys = (
        "n_jobs",
        "preempt_checkpoint_s",
        "restart_s",
        "checkpoint_interval_s",
        "max_preemptions",
        "gpu_failure_rate",
    )
    knobs = {k: world[k] for k in keys}
    if world["scenario"] == "online":
        knobs["load"] = world["load"]
    return load_scenario(world["scenario"], seed=world["seed"], **knobs)


def _run(scn: Scenario, world: dict[str, Any]) -> tuple[RunResult, Simulator]:
    if world["policy"] == RANDOM_CALLER:
        policy = make_policy("fcfs")
        sim = Simulator(scn, policy.placement, preemption_decisions=True)
        rng = np.random.default_rng(world["seed"])
        while (cands := sim.next_decision()) is not None:
            if cands:
                sim.place(cands[int(rng.integers(len(cands)))])
            elif rng.random() < 0.7:
                options = sim.preemption_view().options()
                sim.preempt(options[int(rng.integers(len(options)))])
            else:
                sim.defer()
        return sim.result(RANDOM_CALLER), sim
    policy = make_policy(world["policy"], seed=world["seed"])
    sim = Simulator(
        scn,
        policy.placement,
        admission=policy.admission,
        preemption=world["rule"] or policy.preemption,
    )
    return sim.run(policy.ordering), sim


def _check_capacities(scn: Scenario, res: RunResult) -> None:
    """Sweep every attempt's interval: GPUs per region and reservations per link never exceed
    capacity (an attempt ending at t frees its GPUs for one starting at t)."""
    events = []
    for rec in res.records:
        prof = scn.profiles[rec.job_id]
        for a in rec.attempts:
            if a.end == a.start:  # started and preempted at one instant: held nothing
                continue
            p: Placement = a.placement  # type: ignore[assignment]
            need = prof.min_bandwidth(p.n_gpus) if len(p.path) > 1 else 0.0
            events.append((a.end, 0, p, need))
            events.append((a.start, 1, p, need))
    events.sort(key=lambda e: (e[0], e[1]))
    k = scn.cluster.n_regions
    used = [0] * k
    booked = np.zeros((k, k))
    capacity = scn.cluster.bandwidth
    for _, kind, p, need in events:
        sign = 1 if kind == 1 else -1
        for r, g in zip(p.path, p.gpus):
            used[r] += sign * g
            assert 0 <= used[r] <= scn.cluster.capacity[r]
        for u, v in p.links:
            booked[u, v] += sign * need
            assert booked[u, v] <= capacity[u, v] * (1 + BANDWIDTH_RTOL) + 1e-6


@SETTINGS
@given(world=worlds())
def test_preemptive_runs_keep_every_invariant(world: dict[str, Any], useful_iterations) -> None:
    scn = _scenario(world)
    res, sim = _run(scn, world)
    cap = world["max_preemptions"]
    # every job completes exactly once, its last attempt completed, the others not
    assert [r.job_id for r in res.records] == sorted(j.job_id for j in scn.jobs)
    for rec in res.records:
        *early, last = rec.attempts
        assert last.outcome == "completed" and last.end == rec.finish_time
        assert all(a.outcome in ("failed", "outage", "preempted") for a in early)
        assert all(a.end <= b.start for a, b in zip(rec.attempts, rec.attempts[1:]))
        assert rec.attempts[0].start >= rec.submit_time
        assert rec.jct == pytest.approx(rec.finish_time - rec.submit_time, rel=1e-12)
        assert rec.wait + rec.execution == pytest.approx(rec.jct, rel=1e-12)
        # bounded: no job is preempted more than max_preemptions times
        assert rec.preemptions <= cap
        # the useful work is the job's iterations exactly once (speeds are constant here)
        iterations = scn.profiles[rec.job_id].iterations
        assert useful_iterations(sim, rec) == pytest.approx(iterations, rel=1e-9)
        # wasted work is accounted, attempt by attempt
        wasted = math.fsum(a.wasted * a.placement.n_gpus for a in rec.attempts)  # type: ignore[attr-defined]
        assert rec.wasted_gpu_seconds == pytest.approx(wasted, rel=1e-12, abs=1e-9)
        assert 0.0 <= rec.wasted_cost <= rec.cost + 1e-9
    _check_capacities(scn, res)
    held = math.fsum(r.gpu_seconds for r in res.records) / 3600
    assert res.gpu_hours == pytest.approx(held, rel=1e-12)
    assert res.n_preemptions == sum(r.preemptions for r in res.records)
    assert res.n_restarts == sum(len(r.attempts) - 1 for r in res.records)
    event(f"preemptions: {'some' if res.n_preemptions else 'none'}")
    event(f"{world['policy']}: {'preempts' if res.n_preemptions else 'none'}")
    # same world, same run
    again, _ = _run(_scenario(world), world)
    assert again.to_dict(scn.cluster.names) == res.to_dict(scn.cluster.names)
