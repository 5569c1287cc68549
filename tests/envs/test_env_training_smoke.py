"""A few hundred steps of MaskablePPO (dict observation) and PPO (flat observation) on
GeoPipe-Fig1-v2 run without error, and the trained masked policy only plays legal actions."""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import make_agent, run_episode

os.environ.setdefault("OMP_NUM_THREADS", "1")
torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.slow,  # training runs: `pytest -m "not slow"` skips them, the default runs them
    pytest.mark.filterwarnings("ignore:.*maximum value is infinity.*"),
]

FIG1 = "bacepipe_env/GeoPipe-Fig1-v2"


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


class _ModelAgent:
    """A trained MaskablePPO behind the agents' predict/reset protocol."""

    name = "maskable-ppo"
    placement = "pathfinder"

    def __init__(self, model, env):
        self.model = model
        self.env = env

    def reset(self, seed=None):
        pass

    def predict(self, observation, info=None, *, deterministic=True):
        mask = self.env.unwrapped.action_masks()
        assert np.array_equal(mask, info["action_mask"])
        action, _ = self.model.predict(observation, action_masks=mask, deterministic=deterministic)
        return int(action)


def test_maskable_ppo_learns_and_predicts_legal_actions():
    from sb3_contrib import MaskablePPO

    env = gym.make(FIG1, allow_wait=False)  # every step places a job: 2 per episode
    model = MaskablePPO("MultiInputPolicy", env, n_steps=64, batch_size=32, seed=0, verbose=0)
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256

    play = gym.make(FIG1, allow_wait=False)
    for seed in range(3):
        obs, info = play.reset(seed=seed)
        steps = 0
        while True:
            mask = play.unwrapped.action_masks()
            for deterministic in (True, False):
                action, _ = model.predict(obs, action_masks=mask, deterministic=deterministic)
                assert mask[int(action)], (mask, action)
            obs, _, term, trunc, info = play.step(int(action))
            steps += 1
            assert info["illegal_action"] is False
            if term or trunc:
                break
        assert term and steps == 2  # fig1: P and Q
        assert np.isfinite(info["episode_avg_jct_s"])

    # the same model through the shared evaluation loop
    res = run_episode(play, _ModelAgent(model, play), seed=0)
    assert res.illegal_actions == 0 and res.steps == 2
    assert res.episode_return < 0


def test_ppo_on_the_flat_observation():
    from stable_baselines3 import PPO

    env = gym.make(FIG1, observation="flat")
    assert isinstance(env.observation_space, gym.spaces.Box)
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=32, seed=0, verbose=0)
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256
    obs, _ = env.reset(seed=0)
    while True:
        action, _ = model.predict(obs, deterministic=True)
        assert env.action_space.contains(int(action))
        obs, _, term, trunc, _ = env.step(int(action))  # an illegal pick falls back
        if term or trunc:
            break
    assert term


def test_heuristic_agent_and_learned_agent_share_the_loop():
    env = gym.make(FIG1)
    res = run_episode(env, make_agent("bace-pipe"), seed=0)
    assert res.steps == 2 and res.illegal_actions == 0
