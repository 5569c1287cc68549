"""The vector reward under MO-Gymnasium's own wrappers (the ``mo`` extra).

``LinearReward`` scalarises ``[-jct, -cost, -carbon]`` with a weight vector and
``MORecordEpisodeStatistics`` sums it over an episode; both read ``env.unwrapped.reward_space``.
Every check compares the wrappers' numbers with ones computed here from the environment's
``info``: the step's ``reward_vector`` and the terminal objectives (the per-step terms telescope
to ``avg_JCT / jct_scale``, ``total_cost / cost_scale`` and ``total_carbon / carbon_scale``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import GeoPipeEnv, VectorReward

mo_gym = pytest.importorskip("mo_gymnasium")
from mo_gymnasium.wrappers import LinearReward, MORecordEpisodeStatistics  # noqa: E402

WEIGHTS = np.array([1.0, 0.25, 0.0])
DOC = Path(__file__).resolve().parents[2] / "docs" / "environment.md"


def _mo_env(weights: np.ndarray = WEIGHTS) -> gym.Env:
    """GeoPipe-v2 with the vector reward, its episodes recorded, then scalarised by ``weights``.

    The statistics wrapper sits under ``LinearReward``, so it records the vector returns; the
    env checker is off because Gymnasium's checker expects a scalar reward (it only warns).
    """
    env = gym.make(
        "bacepipe_env/GeoPipe-v2", reward="vector", disable_env_checker=True, info="full"
    )
    return LinearReward(MORecordEpisodeStatistics(env), weight=weights)


def _play(env: gym.Env, seed: int) -> tuple[list[float], list[dict], dict]:
    """One full episode of random legal actions (drawn from ``action_masks()``).

    Returns the scalar rewards, the step infos and the terminal info.
    """
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    scalars, infos = [], []
    while True:
        legal = np.flatnonzero(env.unwrapped.action_masks())
        _, reward, terminated, truncated, info = env.step(int(rng.choice(legal)))
        scalars.append(reward)
        infos.append(info)
        if terminated or truncated:
            assert terminated and not truncated  # the step limit is far away
            return scalars, infos, info


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_linear_reward_is_the_weighted_vector(seed):
    """Each step's scalar is ``weights . info["reward_vector"]``, the vector the env returned."""
    env = _mo_env()
    scalars, infos, _ = _play(env, seed)
    assert len(scalars) >= 8  # the paper's eight jobs: at least one placement each
    for scalar, info in zip(scalars, infos):
        vec = info["reward_vector"]
        assert vec.dtype == np.float64 and vec.shape == (3,)
        np.testing.assert_array_equal(info["vector_reward"], vec)  # LinearReward's copy
        expected = math.fsum(w * v for w, v in zip(WEIGHTS, vec))
        assert float(scalar) == pytest.approx(expected, rel=1e-9, abs=1e-15)
        # and the vector is the typed terms, negated
        terms = info["reward_terms"]
        np.testing.assert_array_equal(vec, [-terms.jct, -terms.cost, -terms.carbon])


@pytest.mark.parametrize("seed", [0, 3])
def test_episode_statistics_sum_the_step_vectors(seed):
    """``info["episode"]["r"]`` is the sum of the step vectors, and each of its terms is the
    episode's objective over its scale (the identity of ``RewardTerms``)."""
    env = _mo_env()
    _, infos, last = _play(env, seed)
    vectors = np.array([info["reward_vector"] for info in infos])
    total = np.array([math.fsum(col) for col in vectors.T])  # float64, independent of order

    stats = last["episode"]
    assert stats["l"] == len(infos)
    # MO-Gymnasium accumulates in float32: equal to the float64 sum up to its rounding
    assert stats["r"].shape == (3,)
    np.testing.assert_allclose(stats["r"], total, rtol=1e-5, atol=1e-9)

    # the summed terms telescope to the terminal objectives, exactly up to float rounding
    assert last["episode_egress_usd"] == 0.0  # paper's tariff has none
    assert total[0] == pytest.approx(-last["episode_avg_jct_s"] / last["jct_scale_s"], rel=1e-9)
    assert total[1] == pytest.approx(
        -last["episode_total_cost_usd"] / last["cost_scale_usd"], rel=1e-9
    )
    assert total[2] == pytest.approx(-last["episode_carbon_kg"] / last["carbon_scale_kg"], rel=1e-9)
    # the scalar return is the weighted objective
    assert np.dot(WEIGHTS, total) == pytest.approx(
        -(
            WEIGHTS[0] * last["episode_avg_jct_s"] / last["jct_scale_s"]
            + WEIGHTS[1] * last["episode_total_cost_usd"] / last["cost_scale_usd"]
        ),
        rel=1e-9,
    )


def test_statistics_reset_between_episodes():
    """A second episode's statistics start from zero (not the first episode's total)."""
    env = _mo_env()
    _, _first, _ = _play(env, 0)
    _, second, last = _play(env, 1)
    total = np.sum([info["reward_vector"] for info in second], axis=0)
    np.testing.assert_allclose(last["episode"]["r"], total, rtol=1e-5, atol=1e-9)
    assert last["episode"]["l"] == len(second)


def test_reward_space():
    """The vector reward's space: three costs, each <= 0, float64; what the wrappers read."""
    env = gym.make(
        "bacepipe_env/GeoPipe-v2", reward="vector", disable_env_checker=True, info="full"
    )
    space = env.unwrapped.reward_space
    assert isinstance(space, gym.spaces.Box)
    assert space.shape == (3,) and space.dtype == np.float64
    assert np.all(space.low == -np.inf) and np.all(space.high == 0.0)
    env.reset(seed=0)
    _, reward, *_ = env.step(int(np.flatnonzero(env.unwrapped.action_masks())[0]))
    assert space.contains(reward)
    # a subset of the terms gives a shorter vector
    two = GeoPipeEnv("paper", reward=VectorReward(terms=("jct", "cost")), info="full")
    assert two.reward_space.shape == (2,)


def test_scalar_reward_has_no_reward_space():
    """Only a vector reward sets ``reward_space``: MO-Gymnasium's wrappers refuse scalar envs."""
    env = gym.make("bacepipe_env/GeoPipe-v2", info="full")
    assert not hasattr(env.unwrapped, "reward_space")
    assert not hasattr(GeoPipeEnv("paper", info="full"), "reward_space")
    with pytest.raises(AttributeError):
        LinearReward(env, weight=WEIGHTS)


def test_linear_reward_with_the_default_weights_is_the_default_reward():
    """``[1, 0.25, 0]`` scalarises the vector into the default ``JctCostReward``: the same
    seed and actions give the same rewards, step by step, up to rounding."""
    mo = _mo_env(WEIGHTS)
    scalar = gym.make("bacepipe_env/GeoPipe-v2", info="full")
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        mo.reset(seed=seed)
        scalar.reset(seed=seed)
        done = False
        while not done:
            legal = scalar.unwrapped.action_masks()
            np.testing.assert_array_equal(mo.unwrapped.action_masks(), legal)
            a = int(rng.choice(np.flatnonzero(legal)))
            _, r_mo, term, trunc, _ = mo.step(a)
            _, r, term_s, trunc_s, _ = scalar.step(a)
            assert (term, trunc) == (term_s, trunc_s)
            assert float(r_mo) == pytest.approx(r, rel=1e-12, abs=1e-15)
            done = term or trunc


def test_the_docs_block_runs():
    """docs/environment.md's MO-Gymnasium block runs as written and prints the vector return."""
    md = DOC.read_text(encoding="utf-8")
    section = md.split("## Multi-objective (MO-Gymnasium)", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    ns: dict = {}
    exec(block, ns)
    info = ns["info"]
    assert ns["terminated"] and info["episode"]["r"].shape == (3,)
    scales = ns["env"].unwrapped.reward_scales  # the default lean info has no scales
    expected = -info["episode_avg_jct_s"] / scales.jct_scale
    assert info["episode"]["r"][0] == pytest.approx(expected, rel=1e-5)
