"""``Simulator.clone()``: continuing a clone is continuing the original, bit for bit, and
neither sees the other's steps; on random worlds with faults, preemption (a rule's, or a caller
preempting at random) and hourly prices."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bacepipe_env.core import RunResult, Simulator
from bacepipe_env.core.simulator import lookahead_horizon
from bacepipe_env.errors import ValidationError
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import load_scenario

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "scenario": draw(st.sampled_from(["online", "paper"])),
        "seed": draw(st.integers(0, 2**16)),
        "n_jobs": draw(st.sampled_from([25, 8])),
        "load": draw(st.sampled_from([3.0, 0.8])),
        "gpu_failure_rate": draw(st.sampled_from([0.0, 2e-4])),
        "outages": draw(st.sampled_from([(), (("EU-West", 2.0, 9.0),)])),
        "policy": draw(
            st.sampled_from(["sjf+finish-aware+srtf", "sjf+las", "bace-pipe", "caller", "lcf"])
        ),
        "at": draw(st.integers(0, 60)),  # the decision to clone at
    }


def _scenario(world: dict[str, Any]) -> Any:
    knobs = {k: world[k] for k in ("n_jobs", "gpu_failure_rate", "outages")}
    if world["scenario"] == "online":
        knobs["load"] = world["load"]
    return load_scenario(world["scenario"], seed=world["seed"], **knobs)


def _simulator(scenario: Any, world: dict[str, Any]) -> Simulator:
    if world["policy"] == "caller":  # the caller preempts: decisions to preempt come out
        return Simulator(scenario, make_policy("fcfs").placement, preemption_decisions=True)
    policy = make_policy(world["policy"])
    return Simulator(
        scenario, policy.placement, admission=policy.admission, preemption=policy.preemption
    )


def _step(sim: Simulator, world: dict[str, Any], rng: np.random.Generator) -> bool:
    """One decision, chosen from ``rng`` and the policy; False at the end."""
    cands = sim.next_decision()
    if cands is None:
        return False
    if not cands:  # a decision to preempt
        options = sim.preemption_view().options()
        if rng.random() < 0.5:
            sim.preempt(options[int(rng.integers(len(options)))])
        else:
            sim.defer()
        return True
    if world["policy"] == "caller":
        sim.place(cands[int(rng.integers(len(cands)))])
    else:
        sim.place(make_policy(world["policy"]).ordering.choose(sim, cands))
    return True


def _finish(sim: Simulator, world: dict[str, Any], rng: np.random.Generator) -> RunResult:
    while _step(sim, world, rng):
        pass
    return sim.result("run")


@SETTINGS
@given(world=worlds())
def test_a_clone_continues_as_the_original_would(world: dict[str, Any]) -> None:
    scenario = _scenario(world)
    names = scenario.cluster.names
    # the reference: one simulator, never cloned
    expected = _finish(_simulator(scenario, world), world, np.random.default_rng(7))
    # the same steps up to decision `at`, then a clone
    sim, rng = _simulator(scenario, world), np.random.default_rng(7)
    for _ in range(world["at"]):
        if not _step(sim, world, rng):
            break
    twin, twin_rng = sim.clone(), np.random.default_rng(0)
    twin_rng.bit_generator.state = rng.bit_generator.state
    # the clone runs to the end first (the original must not see it), then the original
    assert _finish(twin, world, twin_rng).to_dict(names) == expected.to_dict(names)
    assert _finish(sim, world, rng).to_dict(names) == expected.to_dict(names)


def test_a_clone_shares_what_never_changes_and_copies_the_rest() -> None:
    scenario = load_scenario("online", seed=4, n_jobs=60, gpu_failure_rate=2e-4)
    policy = make_policy("sjf+finish-aware+srtf")
    sim = Simulator(scenario, policy.placement, admission=policy.admission, preemption="srtf")
    for _ in range(20):
        sim.place(policy.ordering.choose(sim, sim.next_decision()))
    twin = sim.clone()
    assert twin.scenario is sim.scenario and twin.tariff is sim.tariff
    assert twin.profile(1) is sim.profile(1)
    assert twin.time == sim.time and twin.pending == sim.pending and twin.running == sim.running
    assert twin.free_gpus == sim.free_gpus and twin.residual_rows == sim.residual_rows
    # a step of the clone changes nothing of the original
    before = (sim.time, sim.pending, sim.running, sim.free_gpus, sim.job_seconds)
    cands = twin.next_decision()
    twin.place(policy.ordering.choose(twin, cands))
    twin.next_decision()
    assert (sim.time, sim.pending, sim.running, sim.free_gpus, sim.job_seconds) == before


def _midway(**knobs: Any) -> tuple[Simulator, Any]:
    scenario = load_scenario("online", seed=1, n_jobs=60, **knobs)
    policy = make_policy("sjf+finish-aware")
    sim = Simulator(scenario, policy.placement, admission="finish-aware")
    for _ in range(15):
        sim.place(policy.ordering.choose(sim, sim.next_decision()))
    return sim, policy


@pytest.mark.parametrize(("lookahead", "hours"), [("submitted", 0.0), ("announced:24", 24.0)])
def test_a_clone_knows_only_the_jobs_its_lookahead_allows(lookahead: str, hours: float) -> None:
    sim, policy = _midway()
    now = sim.time
    known = {j.job_id for j in sim.scenario.jobs if j.submit_time <= now + hours * 3600}
    assert 0 < len(known) < 60
    result = sim.clone(lookahead).run(policy.ordering)
    assert {r.job_id for r in result.records} == known
    # the jobs it knows of get exactly the start the original would give them, until the
    # first job it does not know arrives
    full = sim.clone().run(policy.ordering)
    first_unknown = min(j.submit_time for j in sim.scenario.jobs if j.job_id not in known)
    starts = {r.job_id: r.start_time for r in full.records}
    for r in result.records:
        if r.start_time < first_unknown:
            assert r.start_time == starts[r.job_id]
    assert not sim.done and len(sim.pending) + len(sim.running) > 0  # the original is intact


def test_a_seed_draws_the_failures_to_come_afresh() -> None:
    sim, policy = _midway(gpu_failure_rate=2e-4)
    names = sim.cluster.names
    same = sim.clone().run(policy.ordering).to_dict(names)
    assert sim.clone(seed=None).run(policy.ordering).to_dict(names) == same
    fresh = [sim.clone(seed=s).run(policy.ordering).to_dict(names) for s in (3, 3, 4)]
    assert fresh[0] == fresh[1]  # a seed fixes the draws
    assert fresh[0] != same and fresh[0] != fresh[2]  # the original's are not known
    # without failures a seed changes nothing
    calm, _ = _midway()
    assert calm.clone(seed=3).run(policy.ordering).to_dict(names) == calm.clone().run(
        policy.ordering
    ).to_dict(names)


@pytest.mark.parametrize("bad", ["nope", "announced:x", "announced:-1", "announced:inf"])
def test_a_bad_lookahead_is_a_one_line_error(bad: str) -> None:
    sim, _ = _midway()
    with pytest.raises(ValidationError) as err:
        sim.clone(bad)
    assert str(err.value).startswith("lookahead") and "\n" not in str(err.value)
    assert lookahead_horizon("clairvoyant") == math.inf
    assert lookahead_horizon("announced:1.5") == 5400.0 and lookahead_horizon("submitted") == 0.0
