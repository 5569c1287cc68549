"""Properties of deadlines in random online worlds (semantics §15): for every job, tardiness =
max(0, finish - deadline) and missed exactly when the tardiness is positive; the run's miss rate
and total tardiness are its jobs'; a slack deadline is submit + slack x the isolated run time;
and turning the knob on changes no draw and no dynamics."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import load_scenario

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# rules that never read a deadline, then the issue-45 deadline rules
# (tests/policies/test_deadline_policies.py), which a deadline may steer
BLIND = ["fcfs", "bace-pipe", "sjf+finish-aware", "sjf+srtf", "lcf"]
POLICIES = [
    *BLIND,
    "edf",
    "edf+deadline-aware",
    "lsf+finish-aware",
    "edf-triage+finish-aware",
    "edf-triage+srtf",
    "edf+deadline-plan",
    "edf+deadline-plan+srtf",
]


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    low = draw(st.floats(0.1, 3.0))
    return {
        "seed": draw(st.integers(0, 2**16)),
        "n_jobs": draw(st.integers(2, 30)),
        "load": draw(st.floats(0.2, 1.5)),
        "deadline_slack": f"uniform:{low:g},{low + draw(st.floats(0.0, 3.0)):g}",
        "policy": draw(st.sampled_from(POLICIES)),
    }


@given(worlds())
@SETTINGS
def test_tardiness_misses_and_their_totals(world: dict[str, Any]) -> None:
    policy = world.pop("policy")
    scenario = load_scenario("online", **world)
    result = make_policy(policy).simulate(scenario)
    profiles = scenario.world_profiles
    jobs = {j.job_id: j for j in scenario.jobs}
    for r in result.records:
        job = jobs[r.job_id]
        assert job.slack is not None and job.deadline is None
        assert r.deadline == job.submit_time + job.slack * profiles[r.job_id].ideal_execution
        assert r.deadline == scenario.deadlines[r.job_id]
        assert r.tardiness == max(0.0, r.finish_time - r.deadline)
        assert r.missed == (r.tardiness > 0)
    missed = sum(r.missed for r in result.records)
    assert result.miss_rate == missed / len(result.records)
    assert 0.0 <= result.miss_rate <= 1.0
    assert result.total_tardiness == math.fsum(r.tardiness for r in result.records)


@given(worlds())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_knob_changes_no_draw_and_no_dynamics(world: dict[str, Any]) -> None:
    policy = world.pop("policy")
    assume(policy in BLIND)  # a deadline rule is meant to decide otherwise
    with_ = load_scenario("online", **world)
    world.pop("deadline_slack")
    without = load_scenario("online", **world)
    assert without.deadlines == {}
    shape = [(j.model.name, j.dataset, j.submit_time) for j in without.jobs]
    assert [(j.model.name, j.dataset, j.submit_time) for j in with_.jobs] == shape
    assert with_.world.start_hour == without.world.start_hour
    a, b = (make_policy(policy).simulate(s) for s in (with_, without))
    assert [(r.start_time, r.finish_time, r.cost) for r in a.records] == [
        (r.start_time, r.finish_time, r.cost) for r in b.records
    ]
    assert all(r.deadline is None and not r.missed for r in b.records)
