"""Preemption in the environment (semantics §3c): a rule applied by the env's simulator
(``preemption=``), and the preempt actions of ``GeoPipe-Online-Preempt-v1``, which every
heuristic plays as an agent bit for bit with its simulator run."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import ENV_IDS, GeoPipeEnv
from bacepipe_env.envs.agents import agent_env_kwargs, make_agent, run_episode
from bacepipe_env.envs.features import RUNNING_JOB_FEATURES
from bacepipe_env.errors import ValidationError
from bacepipe_env.policies.registry import make_policy, policy_info, policy_names

PREEMPT = "bacepipe_env/GeoPipe-Online-Preempt-v1"
PREEMPTIVE = [n for n in policy_names() if policy_info(n).preemption is not None]


def test_the_id_adds_a_preempt_action_per_window_slot() -> None:
    kwargs = ENV_IDS[PREEMPT]
    online = ENV_IDS["bacepipe_env/GeoPipe-Online-v1"]
    assert {k: v for k, v in kwargs.items() if k != "preempt_window"} == online
    env = gym.make(PREEMPT, n_jobs=40)
    u = env.unwrapped
    assert u.preempt_window == 16
    assert env.action_space == gym.spaces.Discrete(40 + 1 + 16)
    obs, info = env.reset(seed=0)
    assert obs["running_jobs"].shape == (16, len(RUNNING_JOB_FEATURES))
    assert info["preemption"].first_action == 41


def _play(name: str, seed: int, **kwargs: object) -> tuple[object, object, object]:
    env = gym.make(PREEMPT, **agent_env_kwargs(name, preempt_actions=True), **kwargs)
    episode = run_episode(env, make_agent(name), seed)
    assert episode.illegal_actions == 0
    expected = make_policy(name, seed=seed).simulate(env.unwrapped.scenario)
    return env, episode, expected


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("name", [*PREEMPTIVE, "sjf+finish-aware", "bace-pipe"])
def test_every_heuristic_plays_the_preempt_actions_as_its_simulator_run(name, seed):
    env, episode, expected = _play(name, seed, n_jobs=60)
    got = env.unwrapped.sim.result(name)
    assert got.records == expected.records  # every attempt of every job, exactly
    assert episode.avg_jct_h == expected.avg_jct / 3600
    assert episode.total_cost_usd == expected.total_cost
    assert got.n_preemptions == expected.n_preemptions
    if policy_info(name).preemption is None:
        assert got.n_preemptions == 0  # a non-preemptive agent always declines


def test_the_preempt_actions_are_not_vacuous() -> None:
    counts = [_play("sjf+finish-aware+srtf", s, n_jobs=60)[2].n_preemptions for s in range(2)]
    assert sum(counts) > 0


@pytest.mark.slow  # a 500-job episode per rule (about 10 s in all)
@pytest.mark.parametrize("name", ["sjf+finish-aware+srtf", "sjf+las"])
def test_a_full_preemptive_episode_equals_the_simulator_run(name):
    env, _, expected = _play(name, 1)
    assert len(expected.records) == 500 and expected.n_preemptions > 0
    assert env.unwrapped.sim.result(name).records == expected.records


def test_the_mask_offers_only_preemptions_that_let_a_job_start() -> None:
    env = gym.make(PREEMPT, n_jobs=60)
    obs, info = env.reset(seed=1)
    rng = np.random.default_rng(0)
    decisions = preempted = 0
    u = env.unwrapped
    while True:
        mask = info["action_mask"]
        window = info["preemption"]
        slots = np.flatnonzero(mask[window.first_action :])
        if window.view is None:  # a decision to place: no preempt action
            assert not len(slots)
        else:  # a decision to preempt: no job slot, the wait, and >= 1 preempt action
            decisions += 1
            assert not mask[: u.max_queue].any() and mask[u.max_queue]
            assert len(slots)
            for i in slots:
                job = window.job_ids[i]
                assert window.view.beneficiaries(job)
                assert window.view.row(job).preemptible
                assert obs["running_jobs"][i, RUNNING_JOB_FEATURES.index("beneficiaries")] > 0
            for i, job in enumerate(window.job_ids):
                if i not in slots:
                    assert not window.view.beneficiaries(job)
        legal = np.flatnonzero(mask)
        action = int(rng.choice(legal))
        preempted += action > u.max_queue
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert decisions > 0 and preempted > 0
    assert u.sim.result().n_preemptions == preempted


def test_running_jobs_rows_read_the_simulator() -> None:
    env = gym.make(PREEMPT, n_jobs=60)
    obs, info = env.reset(seed=2)
    u = env.unwrapped
    for _ in range(40):
        obs, _, terminated, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        if terminated:
            break
        rows = obs["running_jobs"]
        running = u.sim.running[: u.preempt_window]
        assert rows[: len(running), 0].tolist() == [1.0] * len(running)
        assert not rows[len(running) :].any()
        view = u.sim.preemption_view()
        gpus = [view.row(j).gpus / u.scales.gpus for j in running]
        np.testing.assert_allclose(rows[: len(running), 1], gpus, rtol=1e-6)
        remaining = [np.log10(1 + view.row(j).remaining / 3600) / 4 for j in running]
        np.testing.assert_allclose(rows[: len(running), 2], remaining, rtol=1e-5, atol=1e-7)


def test_a_rule_in_the_envs_simulator_equals_the_preemptive_policy() -> None:
    # Online-v1 with preemption="srtf": the sjf+finish-aware agent only orders; the env's
    # simulator preempts. That is the policy sjf+finish-aware+srtf.
    env = gym.make(
        "bacepipe_env/GeoPipe-Online-v1",
        n_jobs=60,
        preemption="srtf",
        **agent_env_kwargs("sjf+finish-aware"),
    )
    run_episode(env, make_agent("sjf+finish-aware"), 0)
    expected = make_policy("sjf+finish-aware+srtf").simulate(env.unwrapped.scenario)
    assert env.unwrapped.sim.result().records == expected.records
    assert expected.n_preemptions > 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"preempt_window": 4, "allow_wait": True, "preemption": "srtf"}, "preemption"),
        ({"preempt_window": -1}, "preempt_window"),
        ({"preempt_window": 2.5}, "preempt_window"),
        ({"preemption": "lifo"}, "preemption"),
        ({"preempt_wake_h": -1.0, "preempt_window": 2, "allow_wait": True}, "preempt_wake_h"),
    ],
)
def test_bad_preemption_arguments_are_one_line_errors(kwargs, field) -> None:
    with pytest.raises(ValidationError) as err:
        GeoPipeEnv("paper", **kwargs)
    assert str(err.value).startswith(field) and "\n" not in str(err.value)


def test_without_allow_wait_the_wait_only_declines_preemptions() -> None:
    env = gym.make(PREEMPT, n_jobs=60, allow_wait=False)
    u = env.unwrapped
    assert env.action_space.n == u.max_queue + 1 + u.preempt_window
    _, info = env.reset(seed=1)
    declined = 0
    while True:
        mask = info["action_mask"]
        if mask[: u.max_queue].any():
            assert not mask[u.max_queue]  # no waiting at a decision to place
            action = int(np.flatnonzero(mask)[0])
        else:
            assert mask[u.max_queue] and info["preemption"].view is not None
            action, declined = u.max_queue, declined + 1
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert declined > 0 and u.sim.result().n_preemptions == 0


def test_the_view_in_info_survives_a_deep_copy_and_a_vector_env() -> None:
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: gym.make(PREEMPT, n_jobs=30) for _ in range(2)])
    venv.seed(3)
    venv.reset()
    agent = make_agent("sjf+finish-aware+srtf").bind(venv)
    for _ in range(60):
        actions, _ = agent.predict(None)
        venv.step(actions)  # DummyVecEnv deep-copies every info
