"""Seeding, pickling and vectorisation: the same seed and actions reproduce an episode bit for
bit, a pickled env continues like the original, and vector envs see the masks."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import ENV_IDS, GeoPipeEnv

pytestmark = pytest.mark.filterwarnings("ignore:.*maximum value is infinity.*")

VARIANTS = {"dict": {}, "flat": {"observation": "flat"}, "wait": {"allow_wait": True}}


def _legal(info, rng):
    return int(rng.choice(np.flatnonzero(info["action_mask"])))


def _assert_obs_equal(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key].dtype == b[key].dtype, key
            assert np.array_equal(a[key], b[key]), key
    else:
        assert a.dtype == b.dtype
        assert np.array_equal(a, b)


def _numeric_info(info):
    out = {}
    for key, value in info.items():
        if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
            out[key] = float(value)
        elif isinstance(value, np.ndarray):
            out[key] = value
    return out


def _assert_info_equal(a, b):
    na, nb = _numeric_info(a), _numeric_info(b)
    assert na.keys() == nb.keys()
    assert set(a) == set(b)
    assert a["queue"] == b["queue"]  # typed QueueSnapshot, field by field
    assert a["reward_terms"] == b["reward_terms"]
    for key in na:
        if isinstance(na[key], np.ndarray):
            assert np.array_equal(na[key], nb[key]), key
        else:
            assert na[key] == nb[key], key


def _rollout(env, seed, actions=None, rng_seed=0):
    """Play one episode; with ``actions`` replay them, else random legal ones (returned)."""
    rng = np.random.default_rng(rng_seed)
    obs, info = env.reset(seed=seed)
    trace = [(obs, None, info)]
    played = []
    t = 0
    while True:
        a = actions[t] if actions is not None else _legal(info, rng)
        played.append(a)
        obs, reward, term, trunc, info = env.step(a)
        trace.append((obs, reward, info, term, trunc))
        t += 1
        if term or trunc:
            return played, trace


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_same_seed_same_actions_same_episode(sized, env_id, variant):
    for seed in (0, 7):
        actions, first = _rollout(
            gym.make(env_id, **VARIANTS[variant], info="full", **sized(env_id)), seed, rng_seed=seed
        )
        _, second = _rollout(
            gym.make(env_id, **VARIANTS[variant], info="full", **sized(env_id)),
            seed,
            actions=actions,
        )
        assert len(first) == len(second)
        for x, y in zip(first, second):
            _assert_obs_equal(x[0], y[0])
            assert x[1] == y[1]  # reward, exactly
            _assert_info_equal(x[2], y[2])
            assert x[3:] == y[3:]


def test_reusing_one_env_with_the_same_seed_repeats_the_episode():
    env = gym.make("bacepipe_env/GeoPipe-Random-v2", allow_wait=True, info="full")
    actions, first = _rollout(env, 5, rng_seed=1)
    _rollout(env, 6, rng_seed=2)  # something else in between
    _, again = _rollout(env, 5, actions=actions)
    for x, y in zip(first, again):
        _assert_obs_equal(x[0], y[0])
        assert x[1] == y[1]
        _assert_info_equal(x[2], y[2])


def _signature(scenario):
    return tuple(
        (j.model.name, j.dataset, j.submit_time, j.samples, j.batch) for j in scenario.jobs
    )


def test_different_seeds_give_different_paper_scenarios():
    env = gym.make("bacepipe_env/GeoPipe-v2", info="full")
    signatures = set()
    for seed in range(5):
        env.reset(seed=seed)
        signatures.add(_signature(env.unwrapped.scenario))
    assert len(signatures) > 1


def test_different_seeds_give_different_random_scenarios():
    env = gym.make("bacepipe_env/GeoPipe-Random-v2", info="full")
    clusters = set()
    for seed in range(5):
        env.reset(seed=seed)
        cl = env.unwrapped.scenario.cluster
        clusters.add((cl.capacity, tuple(cl.prices), _signature(env.unwrapped.scenario)))
    assert len(clusters) == 5


def test_unseeded_resets_follow_the_first_seed():
    a = gym.make("bacepipe_env/GeoPipe-v2", info="full")
    b = gym.make("bacepipe_env/GeoPipe-v2", info="full")
    a.reset(seed=11)
    b.reset(seed=11)
    for _ in range(4):
        a.reset()
        b.reset()
        assert _signature(a.unwrapped.scenario) == _signature(b.unwrapped.scenario)


@pytest.mark.parametrize("env_id", ["bacepipe_env/GeoPipe-v2", "bacepipe_env/GeoPipe-Random-v2"])
@pytest.mark.parametrize("wrapped", [False, True], ids=["unwrapped", "gym.make"])
def test_pickled_env_continues_like_the_original(sized, env_id, wrapped):
    env = gym.make(env_id, allow_wait=True, info="full", **sized(env_id))
    if not wrapped:
        env = env.unwrapped
    rng = np.random.default_rng(3)
    _, info = env.reset(seed=3)
    for _ in range(3):
        _, _, term, trunc, info = env.step(_legal(info, rng))
        assert not (term or trunc)
    clone = pickle.loads(pickle.dumps(env))
    assert clone is not env
    assert clone.unwrapped.sim is not env.unwrapped.sim
    assert np.array_equal(clone.unwrapped.action_masks(), env.unwrapped.action_masks())
    n = 0
    while True:
        a = _legal(info, rng)
        o1, r1, t1, u1, i1 = env.step(a)
        o2, r2, t2, u2, i2 = clone.step(a)
        _assert_obs_equal(o1, o2)
        assert r1 == r2 and t1 == t2 and u1 == u2
        _assert_info_equal(i1, i2)
        info = i1
        n += 1
        if t1 or u1:
            break
    assert n >= 1
    assert i1["episode_avg_jct_s"] == i2["episode_avg_jct_s"]
    # the np_random state travelled too: the next unseeded episodes are the same
    o1, _ = env.reset()
    o2, _ = clone.reset()
    _assert_obs_equal(o1, o2)
    assert _signature(env.unwrapped.scenario) == _signature(clone.unwrapped.scenario)


def test_pickled_env_does_not_share_state_with_the_original():
    env = GeoPipeEnv("paper", info="full")
    env.reset(seed=0)
    clone = pickle.loads(pickle.dumps(env))
    env.step(0)
    assert clone.sim.time == 0.0 and len(clone.sim.running) == 0
    assert len(env.sim.running) == 1


def _pick_actions(masks, rng):
    return np.array([int(rng.choice(np.flatnonzero(m))) if m.any() else 0 for m in masks])


def test_gymnasium_sync_vector_env():
    env_id = "bacepipe_env/GeoPipe-Random-v2"
    venv = gym.vector.SyncVectorEnv([lambda: gym.make(env_id, info="full") for _ in range(2)])
    singles = [gym.make(env_id, info="full") for _ in range(2)]
    obs, infos = venv.reset(seed=[4, 5])
    single = [s.reset(seed=sd) for s, sd in zip(singles, (4, 5))]
    for i in range(2):
        assert np.array_equal(obs["queue"][i], single[i][0]["queue"])
        assert np.array_equal(infos["action_mask"][i], single[i][1]["action_mask"])
    rng = np.random.default_rng(0)
    live = [True, True]  # sub-env still in its first episode: compare with the single env
    finished = 0
    for _ in range(60):
        actions = _pick_actions(infos["action_mask"], rng)
        obs, rewards, term, trunc, infos = venv.step(actions)
        assert not np.any(infos["illegal_action"] & infos["_illegal_action"])
        for i in range(2):
            if live[i]:
                o, r, t, u, inf = singles[i].step(actions[i])
                assert rewards[i] == r
                assert np.array_equal(obs["action_mask"][i], o["action_mask"])
                assert np.array_equal(obs["queue"][i], o["queue"])
                assert np.array_equal(infos["action_mask"][i], inf["action_mask"])
                if t or u:
                    live[i] = False
        finished += int(np.sum(term | trunc))
    assert finished >= 2 and not any(live)


@pytest.mark.slow  # forks two worker processes
def test_sb3_subproc_vec_env_masks():
    import torch
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import SubprocVecEnv

    torch.set_num_threads(1)

    def make():
        return gym.make("bacepipe_env/GeoPipe-Random-v2", allow_wait=True, info="full")

    venv = SubprocVecEnv([make, make], start_method="fork")
    try:
        venv.seed(0)
        obs = venv.reset()
        rng = np.random.default_rng(0)
        dones_seen = 0
        for _ in range(60):
            listed = venv.env_method("action_masks")
            masks = get_action_masks(venv)
            assert len(listed) == 2
            assert masks.shape == (2, 17) and masks.dtype == bool
            assert np.array_equal(np.stack(listed), masks)
            # the observation carries the same mask (after an auto-reset too)
            assert np.array_equal(obs["action_mask"].astype(bool), masks)
            assert masks.any(axis=1).all()
            obs, _, dones, infos = venv.step(_pick_actions(masks, rng))
            for info in infos:
                assert info["illegal_action"] is False
            dones_seen += int(dones.sum())
        assert dones_seen >= 2
    finally:
        venv.close()
