"""``Simulator.announced()``: the jobs known ahead of their submission (the scenario's
``announce_h`` calendar), on random small worlds, at every decision of a run and in clones
that know less."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bacepipe_env.core import (
    Cluster,
    Job,
    ModelSpec,
    Region,
    Scenario,
    Simulator,
    TrainingConstants,
)
from bacepipe_env.core.units import SECONDS_PER_HOUR
from bacepipe_env.core.world import World
from bacepipe_env.errors import ScenarioError
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import load_scenario

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CONST = TrainingConstants(seq_len=1, micro_batch=1, peak_flops=1.0, mfu=1.0)
MODELS = (ModelSpec("M4", 6.0, 4, 1), ModelSpec("M3", 6.0, 3, 1), ModelSpec("M1", 6.0, 1, 1))
CLUSTER = Cluster((Region("R0", 4, 1.0, 2.0),), np.zeros((1, 1)), power_kw=3.6)


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 8))
    jobs = tuple(
        Job(
            i,
            draw(st.sampled_from(MODELS)),
            "d",
            4 * draw(st.integers(1, 30)),
            4,
            50.0 * draw(st.integers(0, 60)),  # ties on purpose
            constants=CONST,
            name=f"J{i}",
        )
        for i in draw(st.permutations(range(1, n + 1)))  # ids out of submission order
    )
    return {
        "jobs": jobs,
        "announce_h": draw(st.sampled_from([0.0, 0.01, 0.1, 0.5, 1.0, 1e6])),
        "admission": draw(st.sampled_from(["greedy", "finish-aware", "announce-aware"])),
        "clone_h": draw(st.sampled_from([0.0, 0.05, 0.3, 2.0])),
        "clone_at": draw(st.integers(0, 10)),
    }


def _expected(scn: Scenario, now: float, hours: float) -> tuple[int, ...]:
    """By a scan: the jobs with now < submit <= now + hours, by (submit, id)."""
    horizon = now + hours * SECONDS_PER_HOUR
    ahead = [j for j in scn.jobs if now < j.submit_time <= horizon]
    return tuple(j.job_id for j in sorted(ahead, key=lambda j: (j.submit_time, j.job_id)))


@SETTINGS
@given(world=worlds())
def test_announced_is_the_unsubmitted_jobs_within_the_calendar(world: dict[str, Any]) -> None:
    scn = Scenario("calendar", CLUSTER, world["jobs"], World(announce_h=world["announce_h"]))
    sim = Simulator(scn, make_policy("sjf").placement, admission=world["admission"])
    hours = world["announce_h"]
    assert sim.announced() == (_expected(scn, 0.0, hours) if hours else ())
    decisions = 0
    while (cands := sim.next_decision()) is not None:
        now, got = sim.time, sim.announced()
        assert got == _expected(scn, now, hours)
        if hours == 0.0:
            assert got == ()
        for j in got:  # not yet arrived: neither pending, nor running, nor started
            assert j not in sim.pending and j not in sim.running
            assert math.isnan(sim.job_state(j)[0])
        for j in scn.jobs:  # every job submitted by now has arrived
            if j.submit_time <= now:
                assert j.job_id not in got
        if decisions == world["clone_at"]:
            lookahead = world["clone_h"]
            fork = sim.clone(f"announced:{lookahead}")
            known = now + lookahead * SECONDS_PER_HOUR
            assert fork.announced() == tuple(
                j for j in got if scn.submit_times[j] <= known
            )  # the clone never announces a job it does not know
            assert sim.clone("submitted").announced() == ()
            assert sim.clone().announced() == got
        sim.place(cands[0])
        decisions += 1
    assert sim.announced() == ()  # the end: every job has arrived


def test_announced_on_a_500_job_episode() -> None:
    """Two bisections, not a scan: 500 jobs, a 24 h calendar, every decision."""
    scn = load_scenario("online", seed=1, announce_h=24)
    sim = Simulator(scn, make_policy("sjf").placement)
    order = sorted(scn.jobs, key=lambda j: (j.submit_time, j.job_id))
    seen = 0
    while (cands := sim.next_decision()) is not None:
        got = sim.announced()
        now = sim.time
        assert all(now < scn.submit_times[j] <= now + 24 * 3600.0 for j in got)
        first = next((j for j in order if j.submit_time > now), None)
        if first is not None and first.submit_time <= now + 24 * 3600.0:
            assert got[0] == first.job_id
        seen += len(got)
        sim.place(cands[0])
    assert seen > 0


@pytest.mark.parametrize("bad", [-0.5, math.nan, math.inf, 1e6 + 1, "1", None])
def test_a_bad_calendar_is_one_line(bad: Any) -> None:
    jobs = (Job(1, MODELS[0], "d", 4, 4, constants=CONST),)
    with pytest.raises(ScenarioError) as err:
        Scenario("calendar", CLUSTER, jobs, World(announce_h=bad))
    assert err.value.field == "announce_h" and "\n" not in str(err.value)
    ok = Scenario("calendar", CLUSTER, jobs, World(announce_h=1))
    assert ok.announce_h == 1.0 and isinstance(ok.announce_h, float)
