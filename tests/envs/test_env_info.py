"""``info=``: the lean default carries what agents and wrappers read; ``full`` adds the rest, and
changes nothing else about an episode."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import ENV_IDS, GeoPipeEnv
from bacepipe_env.errors import ValidationError

pytestmark = pytest.mark.filterwarnings("ignore:.*maximum value is infinity.*")

LEAN = {"action_mask", "queue", "illegal_action"}
SMALL = {
    "bacepipe_env/GeoPipe-Online-v1": {"n_jobs": 12},
    "bacepipe_env/GeoPipe-Online-Preempt-v1": {"n_jobs": 12},
    "bacepipe_env/GeoPipe-Online-Announced-v0": {"n_jobs": 12},
    "bacepipe_env/GeoPipe-Online-Announced-Preempt-v0": {"n_jobs": 12},
    "bacepipe_env/GeoPipe-Online-Elastic-v0": {"n_jobs": 12},
}


def _lean(env_id: str) -> set[str]:
    """The lean keys of an id: an id with preempt actions adds its window (``preemption``),
    one with replica actions each slot's default action (``slot_actions``)."""
    out = LEAN | ({"preemption"} if ENV_IDS[env_id].get("preempt_window") else set())
    return out | ({"slot_actions"} if ENV_IDS[env_id].get("replica_choices") else set())


def _episode(env, seed):
    """Every (obs, reward, terminated, info) of one episode under the first legal action."""
    obs, info = env.reset(seed=seed)
    steps = [(obs, 0.0, False, info)]
    done = False
    while not done:
        action = int(np.flatnonzero(info["action_mask"])[0])
        obs, reward, terminated, truncated, info = env.step(action)
        steps.append((obs, reward, terminated, info))
        done = terminated or truncated
    return steps


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_lean_is_the_default_and_holds_the_agents_keys(env_id):
    steps = _episode(gym.make(env_id, **SMALL.get(env_id, {})), seed=0)
    *middle, (_, _, terminated, last) = steps
    lean = _lean(env_id)
    for _, _, _, info in middle:
        assert set(info) == lean
        assert info["action_mask"].dtype == bool
    if terminated:  # the terminal step adds the episode's figures, and only them
        extra = set(last) - lean
        assert extra and all(key.startswith("episode_") for key in extra)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_full_adds_keys_and_changes_nothing_else(env_id):
    kwargs = SMALL.get(env_id, {})
    lean = _episode(gym.make(env_id, **kwargs), seed=3)
    full = _episode(gym.make(env_id, info="full", **kwargs), seed=3)
    assert len(lean) == len(full)
    for (obs_l, r_l, t_l, info_l), (obs_f, r_f, t_f, info_f) in zip(lean, full):
        assert obs_l.keys() == obs_f.keys()
        for key in obs_l:
            assert np.array_equal(obs_l[key], obs_f[key]), key
        assert r_l == r_f and t_l == t_f
        assert set(info_l) < set(info_f)  # strictly more keys
        for key in info_l:
            if key in ("queue", "preemption", "slot_actions"):
                assert info_l[key] == info_f[key]
            else:
                assert np.array_equal(info_l[key], info_f[key]), key
    assert {"reward_terms", "reward_vector", "jct_scale_s", "carbon_kg", "regions_down"} <= set(
        full[1][3]
    )


def test_vector_env_infos_are_lean():
    """Through ``gym.make_vec`` the merged infos hold the lean keys (and their ``_`` masks)."""
    venv = gym.make_vec("bacepipe_env/GeoPipe-v2", num_envs=2, vectorization_mode="sync")
    _, infos = venv.reset(seed=0)
    assert {k for k in infos if not k.startswith("_")} == LEAN
    assert infos["action_mask"].shape == (2, venv.single_action_space.n)
    venv.close()


def test_a_bad_level_is_one_line():
    with pytest.raises(ValidationError, match=r"info.*lean.*full") as err:
        GeoPipeEnv("paper", info="verbose")
    assert "\n" not in str(err.value)
