"""The rollout planner (``rollout:<base>``, policies/rollout.py): its names, its guarantee
against its base, its determinism, and the same decisions in the simulator and as an env agent.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, reject, settings
from hypothesis import strategies as st

from bacepipe_env.core import Simulator
from bacepipe_env.core.preemption import make_preemption
from bacepipe_env.errors import ScenarioError, SimulationError, ValidationError
from bacepipe_env.learned import is_learned
from bacepipe_env.policies.registry import make_planner, make_policy, policy_info, split_policies
from bacepipe_env.policies.rollout import RolloutPolicy, parse_rollout
from bacepipe_env.scenarios import load_scenario, synthetic_scenario

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BASES = ["sjf", "sjf+finish-aware", "bace-pipe", "fcfs", "sjf+srtf", "sjf+finish-aware+srtf"]


def _scenario(n_regions: int, n_jobs: int, seed: int, rate: float, preemption: str = "none"):
    try:
        scn = synthetic_scenario(n_regions, n_jobs, seed=seed, arrival_rate_per_h=rate)
    except ScenarioError:  # a job no set of regions holds in GPU memory
        reject()
    return scn


# ------------------------------------------------------------------ names and settings
def test_names_parse_to_settings_and_back():
    s = parse_rollout("rollout:sjf+finish-aware,k=2,lookahead=announced:24")
    assert (s.base, s.k, s.lookahead, s.objective) == ("sjf+finish-aware", 2, "announced:24", "jct")
    assert s.name == "rollout:sjf+finish-aware,k=2,lookahead=announced:24"
    assert parse_rollout("rollout:sjf,k=4,lookahead=submitted").name == "rollout:sjf"  # defaults
    assert parse_rollout("rollout:sjf,lookahead=clairvoyant").clairvoyant


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("rollout:nope", "policy"),
        ("rollout:oracle", "rollout base"),
        ("rollout:rollout:sjf", "rollout base"),
        ("rollout:sjf,k=0", "rollout k"),
        ("rollout:sjf,k=x", "rollout k"),
        ("rollout:sjf,k=2,k=3", "rollout setting"),
        ("rollout:sjf,lookahead=soon", "lookahead"),
        ("rollout:sjf,objective=speed", "rollout objective"),
        ("rollout:sjf,depth=2", "rollout setting"),
        ("rollout:sjf,k", "rollout setting"),
    ],
)
def test_bad_names_are_one_line_errors(name, field):
    with pytest.raises(ValidationError) as err:
        make_policy(name)
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_the_env_reward_objective_needs_the_env():
    with pytest.raises(ValidationError, match="env agent"):
        make_policy("rollout:sjf,objective=reward").simulate(load_scenario("fig1"))


def test_a_planner_is_a_policy_not_a_learned_model():
    assert not is_learned("rollout:sjf,lookahead=announced:24")
    assert is_learned("ppo:runs/x/model.zip")
    info = policy_info("rollout:sjf+srtf,k=2")
    assert (info.admission, info.preemption) == (None, "srtf")  # the base's rules
    assert isinstance(make_policy("rollout:sjf+srtf,k=2"), RolloutPolicy)


def test_lists_of_names_keep_a_planners_settings_together():
    text = "sjf, rollout:sjf,k=2,lookahead=announced:24 ,bace-pipe,rollout:fcfs"
    assert split_policies(text) == [
        "sjf",
        "rollout:sjf,k=2,lookahead=announced:24",
        "bace-pipe",
        "rollout:fcfs",
    ]


# ------------------------------------------------------------------ the guarantee
@SETTINGS
@given(
    n_regions=st.integers(1, 4),
    n_jobs=st.integers(2, 9),
    seed=st.integers(0, 2**16),
    rate=st.floats(0.2, 4.0),
    base=st.sampled_from(BASES),
    k=st.integers(1, 4),
)
def test_a_clairvoyant_planner_is_never_worse_than_its_base(n_regions, n_jobs, seed, rate, base, k):
    """The fork of the base's own choice continues the fork chosen before, so the chosen
    fork's job-seconds only fall: the planner's episode ends at or below the base's."""
    scn = _scenario(n_regions, n_jobs, seed, rate)
    try:
        ref = make_policy(base).simulate(scn)
    except SimulationError:  # a job the placement can never start: nothing to compare
        assume(False)
    got = make_policy(f"rollout:{base},k={k},lookahead=clairvoyant").simulate(scn)
    assert len(got.records) == len(ref.records)
    assert got.avg_jct <= ref.avg_jct * (1 + 1e-9)


@SETTINGS
@given(
    n_regions=st.integers(1, 4),
    n_jobs=st.integers(2, 8),
    seed=st.integers(0, 2**16),
    rate=st.floats(0.2, 4.0),
    base=st.sampled_from(BASES),
    lookahead=st.sampled_from(["submitted", "announced:2", "clairvoyant"]),
)
def test_the_planner_is_deterministic(n_regions, n_jobs, seed, rate, base, lookahead):
    scn = _scenario(n_regions, n_jobs, seed, rate)
    name = f"rollout:{base},k=3,lookahead={lookahead}"
    try:
        first = make_policy(name).simulate(scn)
    except SimulationError:
        assume(False)
    again = make_policy(name).simulate(scn)
    assert first.records == again.records
    assert first.n_decisions == again.n_decisions


def test_each_choice_is_the_best_fork_built_by_hand():
    """At every planned decision of an episode, the action taken is the one whose fork (made
    here with the public clone/place/defer/run) ends with the fewest job-seconds."""
    scn = load_scenario("paper", seed=3)
    planner = make_planner("rollout:sjf,k=3,lookahead=clairvoyant")
    sim = Simulator(scn, make_policy("sjf").placement)
    rule = make_preemption("none")
    checked = 0
    while (candidates := sim.next_decision()) is not None:
        actions = planner.placement_actions(sim, candidates, sim.has_future_events)
        chosen = planner.best(sim, actions, rule)
        if len(actions) > 1:
            totals = {}
            for kind, job in actions:
                fork = sim.clone("clairvoyant")
                if kind == "place":
                    fork.place(job)
                else:
                    fork.defer()
                fork.run(make_policy("sjf").ordering)
                totals[(kind, job)] = fork.job_seconds
            assert totals[chosen] == min(totals.values())
            checked += 1
        if chosen[0] == "place":
            sim.place(chosen[1])
        else:
            sim.defer()
    assert checked >= 5  # the paper's world has real choices


def test_clone_hands_preemption_to_a_rule():
    """A simulator whose caller decides preemptions forks into one that plays a rule."""
    scn = load_scenario("online", seed=1, n_jobs=30)
    sim = Simulator(scn, make_policy("sjf").placement, preemption_decisions=True)
    fork = sim.clone(preemption="srtf")
    assert fork.preemption.name == "srtf"
    fork.play(make_policy("sjf").ordering)  # never stops for a caller's decision
    assert fork.done
    plain = Simulator(scn, make_policy("sjf").placement)
    with pytest.raises(ValidationError, match="preempts"):
        plain.clone(preemption="srtf")


# ------------------------------------------------------------------ as an env agent
@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"scenario": "paper", "max_queue": 16, "allow_wait": True}, "rollout:sjf+finish-aware"),
        (
            {"scenario": "online", "n_jobs": 25, "max_queue": 32, "preempt_window": 16},
            "rollout:sjf+srtf,k=2",
        ),
    ],
)
def test_the_env_agent_decides_as_the_simulator_policy(kwargs, name):
    from bacepipe_env.envs.agents import agent_env_kwargs, make_agent, run_episode
    from bacepipe_env.envs.geopipe import GeoPipeEnv

    preempt = bool(kwargs.get("preempt_window"))
    env = GeoPipeEnv(**kwargs, **agent_env_kwargs(name, preempt_actions=preempt))
    agent = make_agent(name).bind(env)
    for seed in (0, 1):
        ep = run_episode(env, agent, seed)
        want = make_policy(name).simulate(env.scenario)
        assert ep.avg_jct_h * 3600 == pytest.approx(want.avg_jct, rel=1e-12)
        assert env.sim.result().n_preemptions == want.n_preemptions


def test_an_unbound_env_agent_says_so():
    from bacepipe_env.envs.agents import make_agent

    agent = make_agent("rollout:sjf")
    with pytest.raises(ValidationError, match="bind it first"):
        agent.predict(None, info={})
