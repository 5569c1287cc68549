"""One honest way to play a heuristic on an env (issue 39): ``gym.make(id, policy=name)``
carries every rule the policy plays by (placement, admission, preemption, elasticity), and an
env that lacks one is refused in one line before the agent plays it as its plain ordering."""

from __future__ import annotations

import gymnasium as gym
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.core.units import SECONDS_PER_HOUR
from bacepipe_env.envs import AGENT_PLACEMENTS, GeoPipeEnv, make_agent, run_episode
from bacepipe_env.errors import ValidationError
from bacepipe_env.policies.registry import make_policy, policy_info

V2 = "bacepipe_env/GeoPipe-v2"


@pytest.mark.parametrize("name", list(AGENT_PLACEMENTS))
def test_policy_alone_plays_the_simulators_run(name: str) -> None:
    env = gym.make(V2, policy=name)
    settings = env.unwrapped.settings
    info = policy_info(name)
    assert settings.placement.name == AGENT_PLACEMENTS[name]
    assert (settings.admission.name if settings.admission else None) == info.admission
    assert (settings.preemption.name if settings.preemption else None) == info.preemption
    for seed in (0, 1):
        res = run_episode(env, make_agent(name), seed)
        expected = make_policy(name, seed=seed).simulate(env.unwrapped.scenario)
        assert res.avg_jct_h == expected.avg_jct / SECONDS_PER_HOUR
        assert res.total_cost_usd == expected.total_cost


def test_the_placement_alone_no_longer_plays_a_waiting_heuristic_as_plain_sjf() -> None:
    """The issue's case: placement=agent.placement dropped sjf+finish-aware's admission rule,
    and the episode played as plain SJF."""
    agent = make_agent("sjf+finish-aware")
    partial = gym.make(V2, placement=agent.placement)
    with pytest.raises(ValidationError) as err:
        run_episode(partial, agent, 0)
    line = str(err.value)
    assert line == (
        "env: sjf+finish-aware plays with admission 'finish-aware': make the env with "
        "policy='sjf+finish-aware' (got 'admission=greedy')"
    )
    # bound to the env, predict refuses the same way
    partial.reset(seed=0)
    with pytest.raises(ValidationError, match="policy='sjf\\+finish-aware'"):
        agent.bind(partial).predict(None)
    whole = gym.make(V2, policy="sjf+finish-aware")
    waits = run_episode(whole, agent, 0)
    plain = run_episode(gym.make(V2, policy="sjf"), make_agent("sjf"), 0)
    assert waits.avg_jct_h != plain.avg_jct_h  # the admission rule changes the episode


def test_a_part_given_apart_must_agree_with_the_policy() -> None:
    with pytest.raises(ValidationError) as err:
        GeoPipeEnv("paper", policy="sjf+finish-aware", admission="full")
    assert str(err.value) == (
        "admission: sjf+finish-aware plays with admission 'finish-aware': give policy alone "
        "(got 'full')"
    )
    with pytest.raises(ValidationError, match="lcf plays with placement 'lcf'"):
        GeoPipeEnv("paper", policy="lcf", placement="pathfinder")
    # the same value, or a rule the policy leaves open, is fine
    assert GeoPipeEnv("paper", policy="lcf", placement="lcf").settings.placement.name == "lcf"
    composed = GeoPipeEnv("paper", policy="sjf", admission="finish-aware")
    assert composed.settings.admission is not None
    assert composed.settings.admission.name == "finish-aware"
    with pytest.raises(ValidationError, match="unknown policy"):
        GeoPipeEnv("paper", policy="nope")


def test_with_preempt_actions_the_agent_keeps_its_rule() -> None:
    env = GeoPipeEnv("paper", policy="sjf+finish-aware+srtf", preempt_window=4)
    assert env.settings.preemption is None and env.settings.admission is not None
    assert GeoPipeEnv("paper", policy="sjf+srtf").settings.preemption is not None


def test_an_elastic_policy_brings_its_rule() -> None:
    env = gym.make("bacepipe_env/GeoPipe-Online-Elastic-v0", policy="sjf+elastic", n_jobs=10)
    assert env.unwrapped.settings.elasticity is not None
    assert env.unwrapped.settings.elasticity.name == "greedy"
    plain = gym.make("bacepipe_env/GeoPipe-Online-Elastic-v0", policy="sjf", n_jobs=10)
    with pytest.raises(ValidationError, match="plays with elasticity 'greedy'"):
        run_episode(plain, make_agent("sjf+elastic"), 0)
