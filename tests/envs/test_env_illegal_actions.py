"""The illegal-action fallback is no silent trap (issue 28): the terminal info counts the
episode's illegal actions, and each env warns once, the first time it replaces one."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)

ENV_ID = "bacepipe_env/GeoPipe-v2"
#: The steps of a scripted episode that play an illegal action (when the mask has one).
ILLEGAL_STEPS = (0, 2, 3, 5)


def _play(env, seed, *, illegal_steps=ILLEGAL_STEPS):
    """One episode: at ``illegal_steps`` the first illegal slot, else the first legal one.
    Returns (observations, rewards, infos, illegal actions played)."""
    obs, info = env.reset(seed=seed)
    observations, rewards, infos, played = [obs], [], [info], 0
    t, done = 0, False
    while not done:
        mask = info["action_mask"]
        illegal = np.flatnonzero(~mask)
        if t in illegal_steps and len(illegal):
            action, played = int(illegal[0]), played + 1
        else:
            action = int(np.flatnonzero(mask)[0])
        obs, reward, terminated, truncated, info = env.step(action)
        observations.append(obs)
        rewards.append(reward)
        infos.append(info)
        done, t = terminated or truncated, t + 1
    assert terminated  # the id's TimeLimit is far beyond a paper episode
    return observations, rewards, infos, played


def _fallback_warnings(caught):
    return [w for w in caught if "illegal action was replaced" in str(w.message)]


@pytest.mark.parametrize("level", ["lean", "full"])
def test_the_terminal_info_counts_the_illegal_actions_and_warns_once(level):
    env = gym.make(ENV_ID, info=level)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # count every warning the env emits
        _, _, infos, played = _play(env, seed=0)
        assert played >= 3
        assert infos[-1]["episode_illegal_actions"] == played
        assert type(infos[-1]["episode_illegal_actions"]) is int
        assert sum(i["illegal_action"] for i in infos[1:]) == played
        assert all("episode_illegal_actions" not in i for i in infos[:-1])
        (warning,) = _fallback_warnings(caught)
        line = str(warning.message)
        assert "\n" not in line and "illegal_action='raise'" in line and "mask" in line
        # the next episode counts from 0 again, and the same env does not warn again
        _, _, infos, played = _play(env, seed=1, illegal_steps=(1,))
        assert infos[-1]["episode_illegal_actions"] == played == 1
        _, _, infos, _ = _play(env, seed=2, illegal_steps=())
        assert infos[-1]["episode_illegal_actions"] == 0
        assert len(_fallback_warnings(caught)) == 1
        # another env instance warns once of its own
        other = gym.make(ENV_ID, info=level)
        _play(other, seed=0)
        _play(other, seed=1)
        assert len(_fallback_warnings(caught)) == 2


def test_the_fallback_plays_what_the_first_legal_action_plays():
    """Counting and warning change nothing else: the episode equals the one that plays the
    first legal action itself, observation for observation and reward for reward."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        obs_a, rew_a, infos_a, played = _play(gym.make(ENV_ID), seed=4)
    obs_b, rew_b, infos_b, _ = _play(gym.make(ENV_ID), seed=4, illegal_steps=())
    assert played and rew_a == rew_b and len(obs_a) == len(obs_b)
    for a, b in zip(obs_a, obs_b):
        assert all(np.array_equal(a[key], b[key]) for key in a)
    last_a, last_b = infos_a[-1], infos_b[-1]
    assert last_a.keys() == last_b.keys()
    assert last_a["episode_illegal_actions"] == played and last_b["episode_illegal_actions"] == 0
    for key in last_a.keys() - {
        "episode_illegal_actions",
        "illegal_action",
        "queue",
        "action_mask",
    }:
        assert last_a[key] == last_b[key], key


def test_raise_is_unchanged_and_never_warns():
    env = gym.make(ENV_ID, illegal_action="raise")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, info = env.reset(seed=0)
        illegal = int(np.flatnonzero(~info["action_mask"])[0])
        with pytest.raises(ValueError, match=r"illegal action .*legal actions now"):
            env.step(illegal)
        _, _, infos, played = _play(env, seed=0, illegal_steps=())
    assert played == 0 and infos[-1]["episode_illegal_actions"] == 0
    assert _fallback_warnings(caught) == []
