"""``bacepipe_env.train.evaluate_model``: the one evaluation of an SB3 model that always applies
the action mask (issue 28), equal to playing the model with its masks by hand."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.errors import ValidationError
from bacepipe_env.train import evaluate_model

ENV_ID = "bacepipe_env/GeoPipe-v2"


@pytest.fixture(scope="module")
def model() -> MaskablePPO:
    """A tiny MaskablePPO: two rollouts of 64 steps (about a second)."""
    import torch

    torch.set_num_threads(1)
    model = MaskablePPO("MultiInputPolicy", gym.make(ENV_ID), n_steps=64, batch_size=32, seed=0)
    return model.learn(128)


def _by_hand(model, env, seed):
    """(return, avg JCT h, cost, steps) of one episode, the mask given at every step."""
    obs, info = env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        action, _ = model.predict(
            obs, action_masks=env.unwrapped.action_masks(), deterministic=True
        )
        obs, reward, terminated, truncated, info = env.step(action)
        total, steps = total + float(reward), steps + 1
        assert not info["illegal_action"]
        if terminated or truncated:
            break
    return total, info["episode_avg_jct_h"], info["episode_total_cost_usd"], steps


def test_it_equals_playing_the_model_with_its_masks(model):
    env = gym.make(ENV_ID)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = evaluate_model(model, env, 3, first_seed=7)
    assert [r.seed for r in results] == [7, 8, 9]
    for r in results:
        ret, jct_h, cost, steps = _by_hand(model, gym.make(ENV_ID), r.seed)
        assert r.episode_return == ret and r.steps == steps and r.illegal_actions == 0
        assert math.isclose(r.avg_jct_h, jct_h) and r.total_cost_usd == cost
    assert not [w for w in caught if "illegal action" in str(w.message)]


def test_the_env_may_be_unwrapped_and_the_default_is_ten_episodes(model):
    results = evaluate_model(model, gym.make(ENV_ID).unwrapped)
    assert [r.seed for r in results] == list(range(10))
    assert all(r.illegal_actions == 0 and np.isfinite(r.avg_jct_h) for r in results)


def test_what_it_cannot_mask_is_one_line(model):
    env = gym.make(ENV_ID, observation="flat")
    cases = [
        (PPO("MlpPolicy", env, n_steps=64, seed=0), env, "cannot take the action mask"),
        (model, DummyVecEnv([lambda: gym.make(ENV_ID)]), "not a vector env"),
    ]
    for bad_model, bad_env, needle in cases:
        with pytest.raises(ValidationError, match=needle) as err:
            evaluate_model(bad_model, bad_env)
        assert "\n" not in str(err.value)
    for episodes in (0, 1.5, True):
        with pytest.raises(ValidationError, match="episodes"):
            evaluate_model(model, gym.make(ENV_ID), episodes)
    with pytest.raises(ValidationError, match="first_seed"):
        evaluate_model(model, gym.make(ENV_ID), first_seed=-1)
