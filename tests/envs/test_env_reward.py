"""The per-step reward telescopes to the episode objective: ``return = -(w_j * avg_JCT /
jct_scale + w_c * total_cost / cost_scale + w_g * total_carbon / carbon_scale) - penalties``
(``total_cost`` with egress, when the tariff charges it)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import ENV_IDS, GeoPipeEnv, RewardConfig

WEIGHTS = [(1.0, 0.25, 0.0), (0.3, 2.0, 0.5), (0.0, 1.0, 1.0)]


def _episode(env, seed, *, rng_seed=0, illegal_every=0):
    """Random legal actions; every ``illegal_every``-th step an illegal one (out of range).
    Returns the rewards, the step infos and the actions played."""
    rng = np.random.default_rng(rng_seed)
    _, info = env.reset(seed=seed)
    rewards, infos, actions = [], [], []
    t = 0
    while True:
        t += 1
        if illegal_every and t % illegal_every == 0:
            a = env.action_space.n + 3
        else:
            a = int(rng.choice(np.flatnonzero(info["action_mask"])))
        _, reward, term, trunc, info = env.step(a)
        rewards.append(reward)
        infos.append(info)
        actions.append(a)
        if term or trunc:
            assert term and not trunc  # the registered step limits are far away
            return rewards, infos, actions


def _objective(info, w_j, w_c, w_g=0.0):
    cost = info["episode_total_cost_usd"] + info["episode_egress_usd"]
    return -(
        w_j * info["episode_avg_jct_s"] / info["jct_scale_s"]
        + w_c * cost / info["cost_scale_usd"]
        + w_g * info["episode_carbon_kg"] / info["carbon_scale_kg"]
    )


@pytest.mark.parametrize("allow_wait", [False, True], ids=["nowait", "wait"])
@pytest.mark.parametrize("weights", WEIGHTS, ids=[f"wj{a}-wc{b}-wg{c}" for a, b, c in WEIGHTS])
@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_return_equals_the_episode_objective(sized, env_id, weights, allow_wait):
    w_j, w_c, w_g = weights
    reward = RewardConfig(jct_weight=w_j, cost_weight=w_c, carbon_weight=w_g)
    env = gym.make(env_id, reward=reward, allow_wait=allow_wait, info="full", **sized(env_id))
    waits = 0
    for seed in range(4):
        rewards, infos, actions = _episode(env, seed, rng_seed=seed)
        waits += actions.count(env.unwrapped.n_place)
        last = infos[-1]
        expected = _objective(last, w_j, w_c, w_g)
        assert math.isclose(math.fsum(rewards), expected, rel_tol=1e-9, abs_tol=1e-12)
        # the components add up to the reward, step by step and in total
        for r, info in zip(rewards, infos):
            parts = info["reward_jct"] + info["reward_cost"] + info["reward_carbon"]
            assert math.isclose(parts, r, rel_tol=1e-12, abs_tol=1e-15)
            assert r <= 0.0  # time, electricity and emissions only ever accrue
            assert info["illegal_action"] is False
            assert info["jct_scale_s"] == last["jct_scale_s"] > 0  # fixed per episode
            assert info["cost_scale_usd"] == last["cost_scale_usd"] > 0
            assert info["carbon_scale_kg"] == last["carbon_scale_kg"] > 0
        total_jct = math.fsum(i["reward_jct"] for i in infos)
        total_cost = math.fsum(i["reward_cost"] for i in infos)
        total_carbon = math.fsum(i["reward_carbon"] for i in infos)
        assert math.isclose(total_jct + total_cost + total_carbon, math.fsum(rewards), rel_tol=1e-9)
        # the unweighted vector sums to the unweighted terms
        vec = np.sum([i["reward_vector"] for i in infos], axis=0)
        assert vec.shape == (3,)
        assert math.isclose(vec[0], -last["episode_avg_jct_s"] / last["jct_scale_s"], rel_tol=1e-9)
        assert math.isclose(vec[1], _objective(last, 0.0, 1.0), rel_tol=1e-9)
        assert math.isclose(
            vec[2], -last["episode_carbon_kg"] / last["carbon_scale_kg"], rel_tol=1e-9
        )
        assert math.isclose(total_jct, w_j * vec[0], rel_tol=1e-9, abs_tol=1e-15)
        assert math.isclose(total_cost, w_c * vec[1], rel_tol=1e-9, abs_tol=1e-15)
        assert math.isclose(total_carbon, w_g * vec[2], rel_tol=1e-9, abs_tol=1e-15)
        assert math.isclose(last["carbon_kg"], last["episode_carbon_kg"], rel_tol=1e-9)
        assert last["episode_avg_jct_s"] > 0 and last["episode_total_cost_usd"] > 0
        assert math.isclose(last["episode_avg_jct_h"] * 3600.0, last["episode_avg_jct_s"])
    if allow_wait:
        assert waits >= 1  # the wait action was exercised
    elif not env.unwrapped.preempt_window:  # (with preempt actions it declines preemptions)
        assert waits == 0


def test_episode_metrics_are_the_simulator_result():
    env = GeoPipeEnv("paper", info="full")
    _, infos, _ = _episode(env, 2)
    result = env.sim.result()
    assert infos[-1]["episode_avg_jct_s"] == result.avg_jct
    assert infos[-1]["episode_total_cost_usd"] == result.total_cost
    assert infos[-1]["episode_makespan_s"] == result.makespan
    for info in infos[:-1]:
        assert "episode_avg_jct_s" not in info


def test_reset_info_has_zero_reward_terms():
    env = GeoPipeEnv("paper", info="full")
    _, info = env.reset(seed=0)
    assert info["reward_jct"] == 0.0 and info["reward_cost"] == 0.0
    assert info["reward_carbon"] == 0.0 and info["carbon_kg"] == 0.0
    assert np.array_equal(info["reward_vector"], [0.0, 0.0, 0.0])
    assert info["illegal_action"] is False


def test_waiting_costs_time():
    """With allow_wait, waiting while jobs are queued accrues job-seconds: a negative reward."""
    env = gym.make("bacepipe_env/GeoPipe-Random-v2", allow_wait=True, info="full")
    found = False
    for seed in range(20):
        _, info = env.reset(seed=seed)
        wait = env.unwrapped.max_queue
        if info["action_mask"][wait]:
            t0 = info["time_s"]
            _, reward, _, _, info = env.step(wait)
            assert info["illegal_action"] is False
            assert info["time_s"] > t0
            assert reward < 0.0 and info["reward_jct"] < 0.0
            found = True
            break
    assert found


@pytest.mark.parametrize("env_id", list(ENV_IDS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_illegal_penalty_is_subtracted_per_illegal_step(sized, env_id, seed):
    """Two envs in lockstep: one plays an out-of-range action every other step, the other the
    fallback it is replaced by (the first legal action). Same trajectory, and the first's return
    is lower by exactly ``illegal_penalty`` per illegal step."""
    cfg = RewardConfig(jct_weight=1.0, cost_weight=0.25, illegal_penalty=1.0)
    bad = gym.make(env_id, reward=cfg, info="full", **sized(env_id))
    good = gym.make(env_id, reward=cfg, info="full", **sized(env_id))
    _, ib = bad.reset(seed=seed)
    _, ig = good.reset(seed=seed)
    rng = np.random.default_rng(seed)
    r_bad, r_good, n_illegal, t = [], [], 0, 0
    while True:
        t += 1
        legal = np.flatnonzero(ig["action_mask"])
        if t % 2 == 1:
            a_bad, a_good = bad.action_space.n + 1, int(legal[0])
        else:
            a_bad = a_good = int(rng.choice(legal))
        ob, rb, tb, ub, ib = bad.step(a_bad)
        og, rg, tg, ug, ig = good.step(a_good)
        assert ib["illegal_action"] is (t % 2 == 1)
        assert ig["illegal_action"] is False
        n_illegal += int(ib["illegal_action"])
        for key in og:
            assert np.array_equal(ob[key], og[key])
        assert (tb, ub) == (tg, ug)
        penalty = 1.0 if ib["illegal_action"] else 0.0
        assert rb == pytest.approx(rg - penalty, rel=0, abs=1e-12)
        # the components carry no penalty
        assert ib["reward_jct"] == ig["reward_jct"] and ib["reward_cost"] == ig["reward_cost"]
        r_bad.append(rb)
        r_good.append(rg)
        if tb or ub:
            break
    assert n_illegal >= 1
    assert math.fsum(r_bad) == pytest.approx(math.fsum(r_good) - n_illegal, rel=1e-12, abs=1e-9)
    expected = _objective(ib, 1.0, 0.25) - n_illegal
    assert math.fsum(r_bad) == pytest.approx(expected, rel=1e-9)


def test_illegal_without_penalty_rewards_like_the_fallback():
    a = GeoPipeEnv("paper", info="full")
    b = GeoPipeEnv("paper", info="full")
    a.reset(seed=1)
    b.reset(seed=1)
    _, ra, _, _, ia = a.step(99)
    _, rb, _, _, ib = b.step(0)
    assert ia["illegal_action"] is True and ib["illegal_action"] is False
    assert ra == rb


@pytest.mark.parametrize(
    "kwargs",
    [{"jct_weight": -1.0}, {"cost_weight": float("nan")}, {"illegal_penalty": -0.5}],
)
def test_reward_config_rejects_bad_weights(kwargs):
    with pytest.raises(ValueError):
        RewardConfig(**kwargs)
