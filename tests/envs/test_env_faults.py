"""Faults (semantics §11) through the environment: scenario knobs of ``gym.make``, the optional
``region_faults`` / ``link_faults`` arrays (``fault_features=True``), ``info["regions_down"]``,
the terminal info's restart and waste figures, and agents that still reproduce the simulator
bit for bit when GPUs fail and regions go down.

The golden values come from the scenario's own events: at a decision at time ``t`` a region is
down iff one of its outages has ``start <= t < end``, and a link carries the product of the
factors of its changes with ``start <= t < end`` (the simulator applies every event of an
instant before the decision there).
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import (
    AGENT_ENV,
    AGENT_PLACEMENTS,
    ENV_IDS,
    GeoPipeEnv,
    make_agent,
    run_episode,
)
from bacepipe_env.envs.features import (
    LINK_FAULT_LAYERS,
    OPTIONAL_FEATURES,
    REGION_FAULT_FEATURES,
    active_features,
    feature,
    observation_space,
)
from bacepipe_env.policies.registry import make_policy

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*maximum value is infinity.*"),
    pytest.mark.filterwarnings("ignore:.*minimum value is -infinity.*"),
    pytest.mark.filterwarnings("ignore:.*image.*"),
    pytest.mark.filterwarnings("ignore:.*unconventional shape.*"),
    pytest.mark.filterwarnings("ignore:.*minimal resolution.*"),
]

V1 = "bacepipe_env/GeoPipe-v2"
ONLINE = "bacepipe_env/GeoPipe-Online-v1"
OUTAGE = ("EU-West", 10.0, 50.0)  # region 0 of both scenarios, hours
LINK = ("US-East-2", "EA-East", 0.5, 5.0, 30.0)  # link 1 -> 3 at half capacity, hours
FAULTS = {"outages": [OUTAGE], "link_changes": [LINK]}
FAILURES = {"gpu_failure_rate": 2e-4, "outages": [OUTAGE]}
CASES = {V1: {}, ONLINE: {"n_jobs": 60}}


def _expected(env, t):
    """(down per region, link factor matrix) at time ``t`` from the scenario's events."""
    scen = env.unwrapped.scenario
    k = scen.cluster.n_regions
    down = np.zeros(k, dtype=bool)
    factor = np.ones((k, k))
    for o in scen.faults.outages:
        if o.start <= t < o.end:
            down[o.region] = True
    for c in scen.faults.links:
        if c.start <= t < c.end:
            factor[c.src, c.dst] *= c.factor
    np.fill_diagonal(factor, 0.0)
    return down, factor


def _first_legal(obs):
    return int(np.flatnonzero(obs["action_mask"])[0])


def _play(env, seed, policy=_first_legal):
    """Every (obs, info) of an episode, the terminal pair included."""
    obs, info = env.reset(seed=seed)
    seen = [(obs, info)]
    while True:
        obs, _, terminated, truncated, info = env.step(policy(obs))
        seen.append((obs, info))
        if terminated or truncated:
            return seen


# --------------------------------------------------------------------------- the table
def test_fault_features_add_two_arrays_to_the_table():
    assert OPTIONAL_FEATURES[:3] == ("grid_features", "fault_features", "running_features")
    assert feature("region_faults").enabled_by == feature("link_faults").enabled_by
    assert feature("region_faults").column_names == REGION_FAULT_FEATURES == ("down",)
    assert feature("link_faults").column_names == LINK_FAULT_LAYERS == ("capacity_factor",)
    assert feature("region_faults").resolve(max_queue=7, max_regions=3) == (3, 1)
    assert feature("link_faults").resolve(max_queue=7, max_regions=3) == (1, 3, 3)
    names = [f.name for f in active_features({"fault_features"})]
    assert names == ["regions", "bandwidth", "queue", "summary", "region_faults", "link_faults"]
    space = observation_space(4, 3, 4, {"fault_features"})
    for key in ("region_faults", "link_faults"):
        assert np.all(space[key].low == 0.0) and np.all(space[key].high == np.inf)


@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_only_online_shows_faults_by_default(env_id):
    """Off by default on the ids with a fault-free scenario, on for the online ids;
    ``fault_features=True`` turns the arrays on anywhere."""
    online = ENV_IDS[env_id]["scenario"] == "online"
    assert ENV_IDS[env_id].get("fault_features", False) is online
    env = gym.make(env_id, info="full")
    assert env.unwrapped.fault_features is online
    shown = {"region_faults", "link_faults"} & set(env.observation_space.spaces)
    assert shown == ({"region_faults", "link_faults"} if online else set())
    env = gym.make(env_id, fault_features=True, info="full")
    assert {"region_faults", "link_faults"} <= set(env.observation_space.spaces)


def test_fault_features_is_a_bool():
    with pytest.raises(ValueError, match="fault_features"):
        GeoPipeEnv("paper", fault_features=1, info="full")


# ------------------------------------------------------------------ faults via gym.make
@pytest.mark.parametrize("env_id", list(CASES))
def test_gym_make_passes_the_faults_to_the_scenario(env_id):
    env = gym.make(env_id, gpu_failure_rate=2e-4, **FAULTS, **CASES[env_id], info="full")
    env.reset(seed=0)
    faults = env.unwrapped.scenario.faults
    assert faults.gpu_failure_rate == 2e-4
    assert [(o.region, o.start, o.end) for o in faults.outages] == [(0, 36000.0, 180000.0)]
    assert [(c.src, c.dst, c.factor, c.start, c.end) for c in faults.links] == [
        (1, 3, 0.5, 18000.0, 108000.0)
    ]
    assert env.unwrapped.sim.faults is faults


@pytest.mark.parametrize("env_id", list(CASES))
def test_the_observation_follows_the_events(env_id):
    env = gym.make(env_id, fault_features=True, **FAULTS, **CASES[env_id], info="full")
    kk = env.unwrapped.max_regions
    seen = _play(env, 0)
    k = env.unwrapped.scenario.cluster.n_regions
    in_outage = in_link = outside = 0
    for obs, info in seen:
        t = info["time_s"]
        down, factor = _expected(env, t)
        assert obs["region_faults"].shape == (kk, 1)
        assert obs["link_faults"].shape == (1, kk, kk)
        assert obs["region_faults"].dtype == obs["link_faults"].dtype == np.float32
        np.testing.assert_array_equal(obs["region_faults"][:k, 0], down.astype(np.float32))
        np.testing.assert_allclose(obs["link_faults"][0, :k, :k], factor, rtol=1e-6)
        assert not obs["region_faults"][k:].any() and not obs["link_faults"][0, k:].any()
        assert not obs["link_faults"][0, :, k:].any()
        assert info["regions_down"] == tuple(bool(x) for x in down)
        assert all(type(x) is bool for x in info["regions_down"])
        assert env.observation_space.contains(obs)
        in_outage += int(down.any())
        in_link += int(factor[1, 3] == 0.5)
        outside += int(not down.any() and factor[1, 3] == 1.0)
    assert in_outage and in_link and outside  # decisions inside and outside both windows


def test_the_flat_observation_carries_the_same_arrays():
    from bacepipe_env.envs.features import flatten

    kwargs = {"fault_features": True, "n_jobs": 60, **FAULTS}
    dict_env = gym.make(ONLINE, **kwargs, info="full")
    flat_env = gym.make(ONLINE, observation="flat", **kwargs, info="full")
    seen = _play(dict_env, 3)
    obs, _ = flat_env.reset(seed=3)
    for i, (dobs, _) in enumerate(seen):
        expected = flatten(dobs, dict_env.unwrapped._dict_space)
        np.testing.assert_array_equal(obs, expected)
        assert flat_env.observation_space.contains(obs)
        if i + 1 < len(seen):
            obs, *_ = flat_env.step(_first_legal(dobs))


def test_without_faults_the_arrays_show_a_healthy_cluster():
    env = GeoPipeEnv("paper", fault_features=True, max_regions=8, info="full")
    obs, info = env.reset(seed=0)
    assert env.sim.faults is None
    assert not obs["region_faults"].any()
    k = env.scenario.cluster.n_regions
    expected = np.zeros((8, 8), dtype=np.float32)
    expected[:k, :k] = 1.0 - np.eye(k)
    np.testing.assert_array_equal(obs["link_faults"][0], expected)
    assert info["regions_down"] == (False,) * k
    assert env.sim.link_capacity_rows == env.scenario.cluster.bandwidth_rows


def test_the_arrays_are_fresh_copies():
    env = GeoPipeEnv("paper", fault_features=True, **FAULTS, info="full")
    obs, _ = env.reset(seed=0)
    keep = obs["link_faults"].copy(), obs["region_faults"].copy()
    obs["link_faults"][:] = 99.0
    obs["region_faults"][:] = 99.0
    obs2 = env._observe(env.sim)
    np.testing.assert_array_equal(obs2["link_faults"], keep[0])
    np.testing.assert_array_equal(obs2["region_faults"], keep[1])


def test_the_simulator_accessors():
    env = GeoPipeEnv("paper", **FAULTS, info="full")
    env.reset(seed=0)
    sim = env.sim
    assert sim.down_regions == (False,) * 6
    assert sim.link_capacity_rows == env.scenario.cluster.bandwidth_rows
    assert isinstance(sim.link_capacity_rows, tuple)
    while sim.time < 10 * 3600 and not sim.done:
        env.step(_first_legal({"action_mask": env._mask}))
    assert sim.down_regions[0] and not any(sim.down_regions[1:])
    rows = sim.link_capacity_rows
    assert rows[1][3] == env.scenario.cluster.bandwidth_rows[1][3] * 0.5
    assert rows[3][1] == env.scenario.cluster.bandwidth_rows[3][1]


# ---------------------------------------------------------------------------- checkers
@pytest.mark.parametrize("observation", ["dict", "flat"])
@pytest.mark.parametrize("env_id", list(CASES))
def test_gymnasium_and_sb3_checkers_pass_with_fault_features(env_id, observation):
    import torch
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    torch.set_num_threads(1)
    kwargs = {"fault_features": True, "observation": observation, **FAILURES, **FAULTS}
    env = gym.make(env_id, **kwargs, **CASES[env_id], info="full")
    gym_check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(
        gym.make(env_id, **kwargs, **CASES[env_id], info="full"), warn=True, skip_render_check=True
    )


# ------------------------------------------------------------------------- equivalence
def _same_run(env, info, expected):
    got = env.unwrapped.sim.result()
    assert got.records == expected.records  # every field, every attempt, exactly
    assert info["episode_avg_jct_s"] == expected.avg_jct
    assert info["episode_total_cost_usd"] == expected.total_cost
    assert info["episode_restarts"] == expected.n_restarts
    assert info["episode_wasted_gpu_hours"] == expected.wasted_gpu_hours
    assert info["episode_wasted_cost_usd"] == expected.wasted_cost


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", list(AGENT_PLACEMENTS))
def test_agents_equal_the_simulator_under_faults(name, seed):
    """GeoPipe-v2 (8 jobs in a 16-slot window: it covers the queue, restarts included) with
    GPU failures and an outage."""
    env = gym.make(V1, **AGENT_ENV[name], fault_features=True, **FAILURES, info="full")
    agent = make_agent(name)
    res = run_episode(env, agent, seed)
    assert res.illegal_actions == 0
    scen = env.unwrapped.scenario
    assert env.unwrapped.max_queue >= len(scen.jobs)
    expected = make_policy(name, seed=seed).simulate(scen)
    got = env.unwrapped.sim.result()
    assert got.records == expected.records
    assert got.n_restarts == expected.n_restarts
    assert res.avg_jct_h * 3600 == pytest.approx(expected.avg_jct, rel=1e-15)
    assert res.total_cost_usd == expected.total_cost
    if agent.admission is None:  # greedy: one placement per attempt
        assert res.steps == len(scen.jobs) + expected.n_restarts
    else:  # a waiting heuristic's declined choices are steps too
        assert res.steps >= len(scen.jobs) + expected.n_restarts


def test_the_equivalence_runs_do_restart():
    """Not vacuous: failures and the outage interrupt jobs in those episodes."""
    restarts = []
    for name in ("bace-pipe", "fcfs"):
        for seed in range(3):
            env = gym.make(V1, **AGENT_ENV[name], **FAILURES, info="full")
            run_episode(env, make_agent(name), seed)
            restarts.append(env.unwrapped.sim.result().n_restarts)
    assert sum(restarts) > 0, restarts
    assert sum(r > 0 for r in restarts) >= 3, restarts


@pytest.mark.parametrize("name", ["bace-pipe", "fcfs", "sjf", "random"])
def test_terminal_info_equals_the_simulator_under_faults(name):
    env = gym.make(V1, **AGENT_ENV[name], **FAILURES, info="full")
    agent = make_agent(name)
    agent.reset(1)
    obs, info = env.reset(seed=1)
    while True:
        action, _ = agent.predict(obs, info=info)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    _same_run(env, info, make_policy(name, seed=1).simulate(env.unwrapped.scenario))


# ------------------------------------------------------------------------- determinism
def test_episodes_are_deterministic_under_a_seed_with_failures():
    def trajectory(seed):
        env = gym.make(V1, fault_features=True, **FAILURES, info="full")
        seen = _play(env, seed)
        return seen, env.unwrapped.sim.result()

    (a, ra), (b, rb) = trajectory(4), trajectory(4)
    assert len(a) == len(b)
    for (oa, ia), (ob, ib) in zip(a, b):
        for key in oa:
            np.testing.assert_array_equal(oa[key], ob[key])
        assert ia["time_s"] == ib["time_s"] and ia["regions_down"] == ib["regions_down"]
    assert ra.records == rb.records
    assert a[-1][1]["episode_restarts"] == b[-1][1]["episode_restarts"]
    restarts = {trajectory(s)[1].n_restarts for s in range(4)}
    assert max(restarts) > 0  # failures happen


# ------------------------------------------------------------------------ terminal info
FAULT_KEYS = {
    "episode_restarts": int,
    "episode_wasted_gpu_hours": float,
    "episode_wasted_cost_usd": float,
}


@pytest.mark.parametrize("faults", [{}, FAILURES], ids=["none", "failures"])
def test_terminal_info_fault_keys_and_types(faults):
    env = gym.make(V1, **faults, info="full")
    seen = _play(env, 2)
    last = seen[-1][1]
    for key, kind in FAULT_KEYS.items():
        assert type(last[key]) is kind, (key, type(last[key]))
        for _, info in seen[:-1]:
            assert key not in info
    result = env.unwrapped.sim.result()
    assert last["episode_restarts"] == result.n_restarts
    assert last["episode_wasted_gpu_hours"] == result.wasted_gpu_hours
    assert last["episode_wasted_cost_usd"] == result.wasted_cost
    if not faults:
        assert last["episode_restarts"] == 0
        assert last["episode_wasted_gpu_hours"] == last["episode_wasted_cost_usd"] == 0.0
    else:
        assert last["episode_wasted_gpu_hours"] >= 0.0 and last["episode_wasted_cost_usd"] >= 0
        assert math.isfinite(last["episode_wasted_cost_usd"])
    for _, info in seen:
        assert isinstance(info["regions_down"], tuple) and len(info["regions_down"]) == 6


def test_the_grid_shows_a_price_change_from_its_first_instant() -> None:
    # Under flat prices with a scheduled price change the grid must follow the change when it
    # starts (at 0.25 h, mid-hour), not at the next hour of the series.
    from bacepipe_env.scenarios import load_scenario, load_scenario_spec

    spec = dict(load_scenario_spec("paper"))
    spec["events"] = [
        {"type": "price", "region": "EU-West", "factor": 3.0, "start_h": 0.25, "end_h": 2.5}
    ]
    spec["workload"] = dict(spec["workload"], arrivals="poisson", arrival_rate_per_h=8.0)
    env = GeoPipeEnv(load_scenario(spec, seed=0), grid_features=True, max_queue=16, info="full")
    obs, _ = env.reset(seed=0)
    seen, done = set(), False
    while not done:
        t = env.sim.time
        inside = 0.25 * 3600 <= t < 2.5 * 3600
        expected = 0.251 * (3.0 if inside else 1.0) / env.scales.price  # EU-West's Table II rate
        assert obs["grid"][0, 0] == pytest.approx(expected, rel=1e-6), t
        seen.add((inside, t < 3600))
        obs, _, done, _, _ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert (True, True) in seen  # a decision inside the change and before the next hour
    assert (False, True) in seen  # and one before it started
