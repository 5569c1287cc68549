"""The training tricks of issue 27 (`bacepipe_env.train.tricks`): a return relative to a
heuristic on the same episode, and arrival sequences played several times in a row."""

from __future__ import annotations

import csv

import gymnasium as gym
import numpy as np
import pytest
from train_helpers import ENV_ID

from bacepipe_env.envs.agents import make_agent
from bacepipe_env.errors import BacepipeError
from bacepipe_env.train.config import TrainConfig
from bacepipe_env.train.tricks import Curriculum, RelativeReward, RepeatArrivals


def _play(env, agent, seed):
    agent.reset(seed)
    obs, info = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, r, terminated, truncated, info = env.step(int(agent.predict(obs, info=info)[0]))
        total += float(r)
        done = terminated or truncated
    return total, info


@pytest.mark.parametrize("seed", [0, 7, 11])
def test_the_heuristic_playing_itself_earns_zero(seed) -> None:
    """SJF's agent on GeoPipe-v2 is SJF's simulation (the env-equivalence tests), so its
    relative return is 0 up to float rounding, and the plain return is the heuristic's."""
    plain = gym.make(ENV_ID).unwrapped
    relative = RelativeReward(gym.make(ENV_ID).unwrapped, "sjf")
    raw, _ = _play(plain, make_agent("sjf").bind(plain), seed)
    rel, info = _play(relative, make_agent("sjf").bind(relative), seed)
    assert rel == pytest.approx(0.0, abs=1e-12)
    assert info["baseline_return"] == pytest.approx(raw, rel=1e-12)


def test_another_agent_earns_its_return_minus_the_heuristics() -> None:
    plain = gym.make(ENV_ID).unwrapped
    relative = RelativeReward(gym.make(ENV_ID).unwrapped, "sjf")
    fcfs_raw, _ = _play(plain, make_agent("fcfs").bind(plain), 3)
    sjf_raw, _ = _play(plain, make_agent("sjf").bind(plain), 3)
    fcfs_rel, _ = _play(relative, make_agent("fcfs").bind(relative), 3)
    assert fcfs_rel == pytest.approx(fcfs_raw - sjf_raw, rel=1e-9)
    assert fcfs_raw != pytest.approx(sjf_raw)  # the two orders differ on this episode


def test_each_arrival_sequence_is_played_the_given_times() -> None:
    env = RepeatArrivals(gym.make("bacepipe_env/GeoPipe-Online-v1", n_jobs=20).unwrapped, 3, 5)
    submits = []
    for _ in range(7):
        env.reset()
        submits.append(tuple(j.submit_time for j in env.unwrapped.scenario.jobs))
    assert submits[0] == submits[1] == submits[2]
    assert submits[3] == submits[4] == submits[5] != submits[0]
    assert submits[6] != submits[3]
    # an explicit seed starts the stream again: the same sequences, in the same order
    env.reset(seed=5)
    assert tuple(j.submit_time for j in env.unwrapped.scenario.jobs) == submits[0]


def test_the_settings_are_checked_in_one_line() -> None:
    with pytest.raises(BacepipeError, match=r"^relative_to: unknown policy"):
        TrainConfig(relative_to="nope")
    with pytest.raises(BacepipeError, match="repeat_arrivals"):
        TrainConfig(repeat_arrivals=0)


def test_a_training_run_uses_them_and_evaluates_the_plain_return(tmp_path) -> None:
    from bacepipe_env.train.learn import main as learn

    args = [
        "--env-id", ENV_ID, "--n-envs", "1", "--total-timesteps", "64", "--n-steps", "32",
        "--batch-size", "32", "--n-epochs", "1", "--eval-freq", "1000000", "--n-eval", "3",
        "--no-progress", "--relative-to", "sjf", "--repeat-arrivals", "2", "--curriculum", "4,8",
        "--logdir", str(tmp_path), "--run-name", "tricks",
    ]  # fmt: skip
    assert learn(args) == 0
    rows = list(csv.DictReader((tmp_path / "tricks" / "eval.csv").open()))
    # the held-out return is the plain one: minus the scaled JCT, never near 0
    assert all(float(r["return"]) < -0.5 for r in rows)
    # SB3's Monitor sits inside the tricks: the logged episode reward is the plain return
    progress = list(csv.DictReader((tmp_path / "tricks" / "progress.csv").open()))
    rewards = [float(r["rollout/ep_rew_mean"]) for r in progress if r.get("rollout/ep_rew_mean")]
    assert rewards and all(x < -0.5 for x in rewards)


def test_the_training_envs_wear_the_tricks_in_order() -> None:
    from bacepipe_env.train.learn import _in_worker

    env = _in_worker(
        gym.make(ENV_ID), worker=False, relative_to="sjf", repeat=2, seed=1, curriculum=([4, 8], 5)
    )
    assert isinstance(env, RelativeReward) and isinstance(env.env, RepeatArrivals)
    assert isinstance(env.env.env, Curriculum) and env.env.env.stages == [4, 8]
    assert env.env.times == 2
    plain = _in_worker(gym.make(ENV_ID), worker=False)
    assert not isinstance(plain, (RelativeReward, RepeatArrivals))
    assert np.isfinite(env.reset(seed=0)[0]["queue"]).all()


@pytest.mark.parametrize(
    "env_id", ["bacepipe_env/GeoPipe-Online-v1", "bacepipe_env/GeoPipe-Random-v2"]
)
def test_the_curriculum_lengthens_the_episodes_by_stage(env_id) -> None:
    """Stages of 6 then 12 jobs, 10 steps each: episodes hold 6 jobs until the env has taken
    10 steps, then 12; the spaces stay those the env was built with."""
    base = gym.make(env_id).unwrapped
    space = base.observation_space
    env = Curriculum(base, [6, 12], stage_steps=10)
    counts = []
    for seed in range(6):
        env.reset(seed=seed)
        counts.append((env.steps, len(base.scenario.jobs)))
        done = False
        while not done:
            mask = base.action_masks()
            *_, terminated, truncated, _ = env.step(int(np.flatnonzero(mask)[0]))
            done = terminated or truncated
    assert counts[0] == (0, 6)
    assert all(n == (6 if steps < 10 else 12) for steps, n in counts), counts
    assert counts[-1][1] == 12
    assert base.observation_space == space


def test_a_curriculum_must_grow_and_fit_the_job_limit() -> None:
    with pytest.raises(BacepipeError, match=r"^curriculum: must grow"):
        TrainConfig(curriculum=[40, 20])
    with pytest.raises(BacepipeError, match=r"^curriculum\[0\]: must be in \[1, "):
        TrainConfig(curriculum=[0, 20])
    assert TrainConfig(curriculum=[20, 40]).curriculum == [20, 40]


def test_under_the_misses_reward_the_heuristic_is_paid_in_its_misses() -> None:
    """On the deadline calendar (30 jobs, seed 3), edf+finish-aware misses 3 deadlines and
    lsf+deadline-plan none (measured by each rule's own play below): relative to itself
    edf+finish-aware earns 0, relative to lsf+deadline-plan -3 - 0 = -3."""
    env_id = "bacepipe_env/GeoPipe-Online-Announced-Deadline-v0"  # reward="misses"
    world = {"n_jobs": 30, "policy": "edf+finish-aware"}
    plain = gym.make(env_id, **world).unwrapped
    raw, info = _play(plain, make_agent("edf+finish-aware").bind(plain), 3)
    assert raw == -3.0 and info["episode_miss_rate"] == pytest.approx(3 / 30)
    planned = gym.make(env_id, n_jobs=30, policy="lsf+deadline-plan").unwrapped
    best, _ = _play(planned, make_agent("lsf+deadline-plan").bind(planned), 3)
    assert best == 0.0
    itself = RelativeReward(gym.make(env_id, **world).unwrapped, "edf+finish-aware")
    rel, info = _play(itself, make_agent("edf+finish-aware").bind(itself), 3)
    assert rel == 0.0 and info["baseline_return"] == -3.0
    other = RelativeReward(gym.make(env_id, **world).unwrapped, "lsf+deadline-plan")
    rel, info = _play(other, make_agent("edf+finish-aware").bind(other), 3)
    assert rel == -3.0 and info["baseline_return"] == 0.0
