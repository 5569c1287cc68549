"""The running-job arrays (``running``, ``release``), the RLlib ``masked`` layout and the
vector reward's ``reward_space``."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs.features import RELEASE_FEATURES, RUNNING_FEATURES, flatten
from bacepipe_env.envs.geopipe import GeoPipeEnv
from bacepipe_env.envs.registration import ENV_IDS


def _log_h(seconds: float) -> float:
    return math.log10(1.0 + seconds / 3600.0) / 4.0


def test_the_columns():
    assert RUNNING_FEATURES == (
        "log_jobs",
        "held_frac",
        "log_next_release_hours",
        "next_release_frac",
        "log_mean_remaining_hours",
    )
    assert RELEASE_FEATURES == (
        "log_next_release_hours",
        "next_release_gpu_frac",
        "hour_release_gpu_frac",
        "log_mean_remaining_hours",
    )


def test_fig1_golden_after_the_first_placement():
    """Fig. 1: regions of 4, 3, 2 and 2 GPUs (11 in all), jobs P and Q at t = 0. Placing
    slot 0 (P) first gives it region 0's 4 GPUs; it is the only running job."""
    env = GeoPipeEnv("fig1", max_queue=4, running_features=True, allow_wait=True)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs["running"], 0.0)  # nothing runs yet
    np.testing.assert_array_equal(obs["release"], 0.0)
    obs, *_ = env.step(0)
    sim = env.sim
    assert sim.running == (1,)
    start, placement, finish = sim.job_state(1)
    assert (start, placement.path, placement.gpus) == (0.0, (0,), (4,))
    assert finish == pytest.approx(24_325.0, abs=1.0)  # 6.757 h on 4 GPUs in one region
    left = finish - sim.time  # the decision is at t = 0: the whole execution remains
    row = obs["running"][0]
    # one job: log10(1 + 1) / 2 = 0.1505; it holds 4 of region 0's 4 GPUs; its finish frees
    # all 4; log10(1 + 6.757) / 4 = 0.2224 for both the next release and the mean remaining
    expected = [math.log10(2.0) / 2.0, 1.0, _log_h(left), 1.0, _log_h(left)]
    np.testing.assert_allclose(row, expected, rtol=1e-6)
    np.testing.assert_array_equal(obs["running"][1:], 0.0)  # regions 1-3 hold nothing
    # cluster-wide: the next release is P's, 4 / 11 GPUs; none within the hour (6.8 h away)
    np.testing.assert_allclose(
        obs["release"], [_log_h(left), 4.0 / 11.0, 0.0, _log_h(left)], rtol=1e-6
    )


def _play(env: GeoPipeEnv, seed: int, steps: int = 400):
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    yield obs, info
    for _ in range(steps):
        obs, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        yield obs, info
        if term or trunc:
            return


@pytest.mark.parametrize("seed", range(6))
def test_the_arrays_agree_with_the_cluster_at_every_decision(seed):
    """Held GPUs are capacity minus free GPUs (no outages here); a release is shown exactly
    when something runs; every value is finite, >= 0 and inside the space."""
    env = GeoPipeEnv("random", max_queue=16, max_regions=8, running_features=True, allow_wait=True)
    for obs, _ in _play(env, seed):
        sim = env.sim
        k = sim.cluster.n_regions
        cap = np.array(sim.cluster.capacity, dtype=float)
        held = obs["running"][:k, 1] * cap
        np.testing.assert_allclose(held, cap - np.array(sim.free_gpus), atol=1e-4)
        assert (obs["release"][1] > 0) == bool(sim.running)
        assert np.all(np.isfinite(obs["running"])) and np.all(obs["running"] >= 0)
        assert obs["release"][2] <= sum(held) / sum(cap) + 1e-6  # within the hour <= all held
        assert env.observation_space.contains(obs)
        if sim.running:  # the soonest finish among the running jobs, by hand
            soonest = min(sim.job_state(j)[2] for j in sim.running) - sim.time
            assert obs["release"][0] == pytest.approx(_log_h(soonest), rel=1e-5, abs=1e-7)


def test_every_id_waits_and_sees_the_running_jobs():
    for env_id, kwargs in ENV_IDS.items():
        assert kwargs["allow_wait"] is True and kwargs["running_features"] is True
        env = gym.make(env_id)
        preempt = kwargs.get("preempt_window", 0)  # then one action per running job's slot
        assert env.action_space.n == env.unwrapped.n_place + 1 + preempt
        assert {"running", "release"} <= set(env.observation_space.spaces)


def test_running_features_is_a_bool():
    with pytest.raises(ValueError, match="running_features"):
        GeoPipeEnv("paper", running_features="yes")


# ------------------------------------------------------------------------ wait_preview
@pytest.mark.parametrize("seed", range(6))
def test_wait_preview_says_what_finish_aware_decides(seed):
    """``finish_share < 1/2`` (waiting for the next release finishes sooner) exactly when
    the ``finish-aware`` rule would decline the job's placement now."""
    from bacepipe_env.core.admission import FinishAwareAdmission

    rule = FinishAwareAdmission()
    env = GeoPipeEnv("random", max_queue=16, max_regions=8, running_features=True, allow_wait=True)
    checked = 0
    for obs, _ in _play(env, seed):
        sim, wp = env.sim, obs["wait_preview"]
        if not sim.running:
            np.testing.assert_array_equal(wp, 0.0)  # waiting frees nothing
            continue
        for slot, (job, pv) in enumerate(zip(env.queue_snapshot.job_ids, env._previews)):
            share = float(wp[slot, 2])
            if pv is None or share == 0.0 or abs(share - 0.5) < 1e-6:
                continue  # unknown either way, or a float32 tie
            assert 0.0 < share < 1.0
            assert (share < 0.5) == (not rule.admit(sim, job, pv.placement)), (seed, slot)
            assert 0.0 < wp[slot, 0] <= 1.0 + 1e-6  # at most K* GPUs then
            checked += 1
    assert checked > 0


# ------------------------------------------------------------------- the masked layout
def test_masked_layout_is_the_flat_features_and_a_float_mask():
    dict_env = GeoPipeEnv("paper", allow_wait=True, running_features=True)
    env = GeoPipeEnv("paper", allow_wait=True, running_features=True, observation="masked")
    assert set(env.observation_space.spaces) == {"observations", "action_mask"}
    mask_space = env.observation_space["action_mask"]
    assert mask_space.shape == (17,) and mask_space.dtype == np.float32
    assert float(mask_space.low.min()) == 0.0 and float(mask_space.high.max()) == 1.0
    d, _ = dict_env.reset(seed=4)
    m, _ = env.reset(seed=4)
    for _ in range(3):
        assert env.observation_space.contains(m)
        np.testing.assert_array_equal(m["action_mask"], d["action_mask"].astype(np.float32))
        no_mask = {k: v for k, v in d.items() if k != "action_mask"}
        space = gym.spaces.Dict({k: dict_env.observation_space[k] for k in no_mask})
        np.testing.assert_array_equal(m["observations"], flatten(no_mask, space))
        a = int(np.flatnonzero(d["action_mask"])[0])
        d, *_ = dict_env.step(a)
        m, *_ = env.step(a)


# ------------------------------------------------------------------------ reward_space
def test_a_vector_reward_has_a_reward_space_and_a_scalar_one_none():
    env = GeoPipeEnv("paper", reward="vector")
    assert env.reward_space == gym.spaces.Box(-np.inf, 0.0, shape=(3,), dtype=np.float64)
    _, info = env.reset(seed=0)
    _, r, *_ = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert r.shape == (3,) and env.reward_space.contains(r)
    assert not hasattr(GeoPipeEnv("paper"), "reward_space")
    with pytest.raises(ValueError, match="reward"):
        GeoPipeEnv("paper", reward="scalar")
