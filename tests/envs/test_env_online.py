"""GeoPipe-Online-v1: the ``online`` scenario (hourly 2023 prices and carbon, Philly arrivals,
500 jobs, a random start hour) with the ``grid`` observation.

The ``grid`` golden values are computed here from the shipped CSV and the scenario file, read
through ``importlib.resources``, not through the tariff code under test:
``price_r(t) = P_r + (w_r[h] - mean(w_r)) / 1000`` $/kWh and ``carbon_r(t) = c_r[h]``, with
``h = floor(t / 3600 + start_hour) mod 8760``.
"""

from __future__ import annotations

import itertools
import json
import math
from functools import cache
from importlib import resources

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import (
    ENV_IDS,
    MAX_EPISODE_STEPS,
    GeoPipeEnv,
    ObsScales,
    RewardConfig,
    VectorReward,
)
from bacepipe_env.envs.features import GRID_FEATURES

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*maximum value is infinity.*"),
    pytest.mark.filterwarnings("ignore:.*minimum value is -infinity.*"),
    pytest.mark.filterwarnings("ignore:.*image.*"),
    pytest.mark.filterwarnings("ignore:.*unconventional shape.*"),
    pytest.mark.filterwarnings("ignore:.*minimal resolution.*"),
]

ONLINE = "bacepipe_env/GeoPipe-Online-v1"
H = 3600.0
NEGATIVE_HOUR = 4380  # 2023-07-02T12:00Z: DE-LU's day-ahead price is far below zero
PRICE, CARBON = GRID_FEATURES.index("price_now"), GRID_FEATURES.index("carbon_now")


@cache
def _hourly_table() -> tuple[list[str], np.ndarray, np.ndarray]:
    """(region names, price USD/MWh (8760, 6), carbon g/kWh (8760, 6)) from the shipped CSV."""
    text = resources.files("bacepipe_env").joinpath("data/hourly-price-carbon-2023.csv")
    lines = [ln for ln in text.read_text("utf-8").splitlines() if ln and not ln.startswith("#")]
    header = lines[0].split(",")
    rows = [[float(x) for x in ln.split(",")[1:]] for ln in lines[1:]]
    names = [h.removesuffix("_usd_per_mwh") for h in header if h.endswith("_usd_per_mwh")]
    price_cols = [header.index(f"{n}_usd_per_mwh") - 1 for n in names]
    carbon_cols = [header.index(f"{n}_gco2_per_kwh") - 1 for n in names]
    data = np.array(rows)
    return names, data[:, price_cols], data[:, carbon_cols]


def _scenario_regions() -> list[dict]:
    spec = resources.files("bacepipe_env").joinpath("scenarios/data/online.json")
    regions: list[dict] = json.loads(spec.read_text("utf-8"))["regions"]
    return regions


def _expected_grid(t: float, start_hour: float) -> np.ndarray:
    """The grid rows at time ``t`` s, from the CSV and the scenario's Table II prices."""
    names, price, carbon = _hourly_table()
    h = math.floor(t / H + start_hour) % 8760
    out = []
    for region in _scenario_regions():
        z = names.index(region["name"])
        mean = math.fsum(price[:, z]) / len(price)
        p = region["price_usd_per_kwh"] + (price[h, z] - mean) / 1000.0
        out.append((p / 0.35, carbon[h, z] / 600.0))
    return np.array(out)


# --------------------------------------------------------------------------- registration
def test_online_is_registered_with_grid_features_and_a_distant_step_limit():
    assert ENV_IDS[ONLINE] == {
        "scenario": "online",
        "max_queue": None,
        "grid_features": True,
        "fault_features": True,
        "allow_wait": True,
        "running_features": True,
    }
    assert MAX_EPISODE_STEPS[ONLINE] >= 100 * 500  # far beyond the 500-job episode
    env = gym.make(ONLINE, info="full")
    assert env.spec.max_episode_steps == MAX_EPISODE_STEPS[ONLINE]
    u = env.unwrapped
    assert u.grid_features and u.max_queue == 500 and u.max_regions == 6  # the job budget
    assert env.observation_space["grid"].shape == (6, 2)
    for env_id in ENV_IDS:  # the ids with flat-priced scenarios have no grid array
        if ENV_IDS[env_id]["scenario"] != "online":
            assert "grid" not in gym.make(env_id, info="full").observation_space.spaces


def test_a_full_500_job_episode_places_one_job_per_step():
    env = gym.make(ONLINE, allow_wait=False, info="full")  # every step places a job
    _, info = env.reset(seed=11)
    scen = env.unwrapped.scenario
    assert scen.name == "online" and len(scen.jobs) == 500
    assert scen.tariff.model == "hourly"
    rng = np.random.default_rng(11)
    steps = 0
    while True:
        _, _, terminated, truncated, info = env.step(
            rng.choice(np.flatnonzero(info["action_mask"]))
        )
        steps += 1
        if terminated or truncated:
            break
    assert terminated and not truncated and steps == 500
    assert info["episode_jobs_completed"] == 500


# --------------------------------------------------------------------------------- grid
def test_grid_golden_values_at_a_known_start_hour():
    """At start hour 4380 EU-Central's price is negative; every decision's grid is the CSV's
    row of its hour, and the observation space contains it."""
    env = gym.make(ONLINE, n_jobs=60, start_hour=NEGATIVE_HOUR, info="full")
    obs, info = env.reset(seed=0)
    assert env.unwrapped.scenario.tariff.start_hour == NEGATIVE_HOUR
    rng = np.random.default_rng(0)
    hours = set()
    saw_negative = False
    while True:
        t = info["time_s"]
        hours.add(math.floor(t / H + NEGATIVE_HOUR))
        np.testing.assert_allclose(obs["grid"], _expected_grid(t, NEGATIVE_HOUR), rtol=1e-6)
        assert obs["grid"].dtype == np.float32
        assert env.observation_space.contains(obs)
        saw_negative |= bool(obs["grid"][:, PRICE].min() < 0)
        if not info["action_mask"].any():
            break
        obs, _, terminated, truncated, info = env.step(
            rng.choice(np.flatnonzero(info["action_mask"]))
        )
        if terminated or truncated:
            break
    assert saw_negative  # EU-Central at -0.30 $/kWh: -0.85 of scales.price
    assert len(hours) > 10  # the decisions span many hours of the series


def test_grid_at_the_first_decision_by_hand():
    """One row written out: EU-Central (index 2) at 2023-07-02T12:00Z."""
    env = GeoPipeEnv("online", grid_features=True, n_jobs=5, start_hour=NEGATIVE_HOUR, info="full")
    obs, info = env.reset(seed=3)
    assert info["time_s"] == 0.0  # the first arrival opens the episode
    names, price, carbon = _hourly_table()
    z = names.index("EU-Central")
    mean = math.fsum(price[:, z]) / 8760
    expected_price = (0.288 + (price[NEGATIVE_HOUR, z] - mean) / 1000.0) / 0.35
    assert expected_price < -0.5
    assert obs["grid"][2, PRICE] == pytest.approx(expected_price, rel=1e-6)
    assert obs["grid"][2, CARBON] == pytest.approx(carbon[NEGATIVE_HOUR, z] / 600.0, rel=1e-6)


def test_grid_under_flat_prices_is_table_ii_and_constant():
    env = GeoPipeEnv("paper", grid_features=True, info="full")
    obs, info = env.reset(seed=0)
    regions = _scenario_regions()  # online's regions are paper's Table II, flat carbon alike
    expected = np.array(
        [(r["price_usd_per_kwh"] / 0.35, r["carbon_g_per_kwh"] / 600.0) for r in regions]
    )
    first = obs["grid"].copy()
    np.testing.assert_allclose(first, expected, rtol=1e-6)
    np.testing.assert_array_equal(first[:, PRICE], obs["regions"][:, 3])  # the static price
    while True:
        obs, _, terminated, _, info = env.step(int(np.argmax(info["action_mask"])))
        np.testing.assert_array_equal(obs["grid"], first)
        if terminated:
            break


def test_grid_pads_rows_and_follows_the_carbon_scale():
    env = GeoPipeEnv(
        "online", grid_features=True, n_jobs=5, max_regions=8, scales={"carbon": 300.0}, info="full"
    )
    obs, info = env.reset(seed=1)
    start = env.scenario.tariff.start_hour
    expected = _expected_grid(info["time_s"], start) * [1.0, 2.0]
    assert obs["grid"].shape == (8, 2)
    np.testing.assert_allclose(obs["grid"][:6], expected, rtol=1e-6)
    assert not obs["grid"][6:].any()
    assert ObsScales().carbon == 600.0
    with pytest.raises(ValueError, match="carbon"):
        ObsScales(carbon=0.0)


def test_grid_arrays_are_fresh_copies():
    """The per-hour cache never leaks: mutating one observation changes no later one."""
    env = GeoPipeEnv("online", grid_features=True, n_jobs=20, info="full")
    obs, info = env.reset(seed=2)
    keep = obs["grid"].copy()
    obs["grid"][:] = 99.0
    obs2, *_ = env.step(int(np.argmax(info["action_mask"])))
    assert not np.any(obs2["grid"] == 99.0)
    env.reset(seed=2)
    obs3, _ = env.reset(seed=2)
    np.testing.assert_array_equal(obs3["grid"], keep)


def test_grid_features_is_a_bool():
    with pytest.raises(ValueError, match="grid_features"):
        GeoPipeEnv("paper", grid_features=1, info="full")


def test_flat_observation_carries_the_grid_with_its_bounds():
    env = gym.make(ONLINE, observation="flat", n_jobs=10, start_hour=NEGATIVE_HOUR, info="full")
    flat, _ = env.reset(seed=0)
    d = gym.make(ONLINE, n_jobs=10, start_hour=NEGATIVE_HOUR, info="full")
    obs, _ = d.reset(seed=0)
    np.testing.assert_array_equal(flat, gym.spaces.flatten(d.observation_space, obs))
    assert flat.min() < 0  # the negative price, inside the space
    assert env.observation_space.contains(flat)
    assert int(np.sum(env.observation_space.low == -np.inf)) == 6


# ------------------------------------------------------------------------------ reward
def _play(env, seed):
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    rewards, infos = [], [info]
    while True:
        _, r, terminated, truncated, info = env.step(
            rng.choice(np.flatnonzero(info["action_mask"]))
        )
        rewards.append(r)
        infos.append(info)
        if terminated or truncated:
            assert terminated
            return rewards, infos


def test_carbon_norm_is_ideal_gpu_hours_at_the_mean_flat_intensity():
    env = GeoPipeEnv("online", grid_features=True, n_jobs=30, info="full")
    env.reset(seed=4)
    profiles = env.scenario.profiles.values()
    gpu_hours = math.fsum(p.k_star * p.ideal_execution for p in profiles) / H
    mean_carbon = sum(r["carbon_g_per_kwh"] for r in _scenario_regions()) / 6
    expected = gpu_hours * mean_carbon * 0.3 / 1000.0  # kg; 0.3 kW per GPU
    assert env.reward_scales.carbon_norm == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_carbon_terms_sum_to_total_carbon_over_carbon_norm(seed):
    env = gym.make(ONLINE, n_jobs=60, reward=RewardConfig(0.0, 0.0, carbon_weight=1.0), info="full")
    rewards, infos = _play(env, seed)
    result = env.unwrapped.sim.result()
    norm = env.unwrapped.reward_scales.carbon_norm
    last = infos[-1]
    assert last["carbon_scale_kg"] == norm
    terms = math.fsum(i["reward_terms"].carbon for i in infos[1:])
    assert terms == pytest.approx(result.total_carbon / norm, rel=1e-9)
    # jct and cost weigh 0: the return is the emissions alone
    assert math.fsum(rewards) == pytest.approx(-result.total_carbon / norm, rel=1e-9)
    assert math.fsum(i["reward_carbon"] for i in infos) == pytest.approx(math.fsum(rewards))
    # carbon_kg is the running total, non-decreasing, ending at the episode's emissions
    accrued = [i["carbon_kg"] for i in infos]
    assert accrued[0] == 0.0 and all(a <= b for a, b in itertools.pairwise(accrued))
    assert accrued[-1] == pytest.approx(result.total_carbon, rel=1e-9)


def test_the_default_reward_ignores_carbon_and_the_vector_carries_it():
    scalar = gym.make(ONLINE, n_jobs=40, info="full")
    vector = gym.make(
        ONLINE, n_jobs=40, reward=VectorReward(), disable_env_checker=True, info="full"
    )
    r_scalar, i_scalar = _play(scalar, 5)
    r_vector, i_vector = _play(vector, 5)
    assert len(r_scalar) == len(r_vector)
    for r, v, info in zip(r_scalar, r_vector, i_scalar[1:]):
        assert v.shape == (3,) and np.array_equal(v, info["reward_vector"])
        assert r == pytest.approx(-(-v[0] + 0.25 * -v[1]), abs=1e-15)
        assert info["reward_carbon"] == 0.0  # weighed by the default carbon_weight, 0
    total = np.sum(r_vector, axis=0)
    last = i_vector[-1]
    assert total[2] == pytest.approx(-last["episode_carbon_kg"] / last["carbon_scale_kg"])
    assert total[2] < 0


# -------------------------------------------------------------------------- terminal info
EPISODE_KEYS = {
    "episode_avg_jct_s": float,
    "episode_avg_jct_h": float,
    "episode_total_cost_usd": float,
    "episode_makespan_s": float,
    "episode_jobs_completed": int,
    "episode_carbon_kg": float,
    "episode_jct_p50_s": float,
    "episode_jct_p95_s": float,
    "episode_jct_p99_s": float,
    "episode_mean_slowdown": float,
    "episode_egress_usd": float,
    "episode_restarts": int,  # semantics §11: 0, 0.0 and 0.0 in a world without faults
    "episode_wasted_gpu_hours": float,
    "episode_wasted_cost_usd": float,
    "episode_resizes": int,  # semantics §3f: 0 without an elasticity rule
}


def test_terminal_info_keys_types_and_values():
    env = gym.make(ONLINE, n_jobs=60, info="full")
    _, infos = _play(env, 7)
    last = infos[-1]
    for key, kind in EPISODE_KEYS.items():
        assert type(last[key]) is kind, (key, type(last[key]))
        for info in infos[:-1]:
            assert key not in info
    result = env.unwrapped.sim.result()
    assert last["episode_jobs_completed"] == 60 == len(result.records)
    assert last["episode_carbon_kg"] == result.total_carbon > 0
    assert last["episode_jct_p50_s"] == result.jct_p50
    assert last["episode_jct_p95_s"] == result.jct_p95
    assert last["episode_jct_p99_s"] == result.jct_p99
    assert 0 < result.jct_p50 <= result.jct_p95 <= result.jct_p99
    assert last["episode_mean_slowdown"] == result.mean_slowdown >= 1.0
    assert last["episode_egress_usd"] == 0.0  # the online scenario charges no egress
    assert last["episode_resizes"] == result.n_resizes == 0


def test_egress_reaches_the_terminal_info_and_the_cost_term():
    env = gym.make(ONLINE, n_jobs=40, egress_usd_per_gb=0.02, info="full")
    _, infos = _play(env, 3)
    last = infos[-1]
    assert last["episode_egress_usd"] > 0
    cost_terms = math.fsum(i["reward_terms"].cost for i in infos[1:])
    total = last["episode_total_cost_usd"] + last["episode_egress_usd"]
    assert cost_terms == pytest.approx(total / last["cost_scale_usd"], rel=1e-9)


# ---------------------------------------------------------------------------- determinism
def test_the_same_seed_gives_the_same_episode_and_another_seed_another_hour():
    def run(seed):
        env = gym.make(ONLINE, n_jobs=40, info="full")
        rng = np.random.default_rng(0)
        obs, info = env.reset(seed=seed)
        out = [(obs, 0.0, info["time_s"])]
        while True:
            obs, r, terminated, truncated, info = env.step(
                rng.choice(np.flatnonzero(info["action_mask"]))
            )
            out.append((obs, r, info["time_s"]))
            if terminated or truncated:
                return out, env.unwrapped.scenario.tariff.start_hour, info

    a, hour_a, last_a = run(8)
    b, hour_b, last_b = run(8)
    assert hour_a == hour_b and len(a) == len(b)
    for (oa, ra, ta), (ob, rb, tb) in zip(a, b):
        assert ra == rb and ta == tb
        for key in oa:
            np.testing.assert_array_equal(oa[key], ob[key])
    for key in EPISODE_KEYS:
        assert last_a[key] == last_b[key]
    hours = {run(s)[1] for s in (9, 10, 11)} | {hour_a}
    assert len(hours) > 1  # the start hour is drawn from the seed


# ------------------------------------------------------------------------------ checkers
@pytest.mark.parametrize("observation", ["dict", "flat"])
def test_checkers_accept_online_with_negative_prices(observation):
    """Gymnasium's and SB3's check_env at the start hour whose observations hold a negative
    price (the -inf bound is what both accept, with Gymnasium's warning)."""
    import torch
    from gymnasium.utils.env_checker import check_env as gym_check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    torch.set_num_threads(1)
    kwargs = {"observation": observation, "n_jobs": 60, "start_hour": NEGATIVE_HOUR}
    gym_check_env(gym.make(ONLINE, **kwargs, info="full").unwrapped, skip_render_check=True)
    sb3_check_env(gym.make(ONLINE, **kwargs, info="full"), warn=True, skip_render_check=True)
