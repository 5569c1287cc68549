"""The calendar of announced jobs in the environment: the ``announced`` array
(``announce_window``), the scenario knob ``announce_h``, and the ids
``GeoPipe-Online-Announced-v0`` and ``GeoPipe-Online-Announced-Preempt-v0``. The env only reads
``Simulator.announced()``: the calendar changes no dynamics."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.core import Scenario
from bacepipe_env.envs import ENV_IDS, MAX_EPISODE_STEPS, GeoPipeEnv
from bacepipe_env.envs.agents import agent_env_kwargs, make_agent, run_episode
from bacepipe_env.envs.features import ANNOUNCED_FEATURES
from bacepipe_env.errors import ValidationError
from bacepipe_env.policies.registry import make_policy

ANNOUNCED = "bacepipe_env/GeoPipe-Online-Announced-v0"
ANNOUNCED_PREEMPT = "bacepipe_env/GeoPipe-Online-Announced-Preempt-v0"
ONLINE = "bacepipe_env/GeoPipe-Online-v1"
PREEMPT = "bacepipe_env/GeoPipe-Online-Preempt-v1"
CALENDAR = {"announce_h": 24.0, "announce_window": 16}


def _log_h(seconds: float) -> float:
    return math.log10(1.0 + seconds / 3600.0) / 4.0


def _with_calendar(scenario: Scenario, announce_h: float) -> Scenario:
    """The ``tiny_scenario`` fixture (tests/envs/conftest.py: A and B at 0, C at 1 h) with a
    calendar."""
    return dataclasses.replace(
        scenario, world=dataclasses.replace(scenario.world, announce_h=announce_h)
    )


# --------------------------------------------------------------------------------- golden
def test_the_announced_array_on_the_tiny_scenario(tiny_scenario: Scenario) -> None:
    # announce_h = 2 h: at the first decision (t = 0, A and B pending) C, submitted at 1 h,
    # is announced. C = tiny-2L for 1800 iterations: E(1) = 8 h, b(K*) = 5e8 B/s = 4 Gbps,
    # K* = 2, memory ignored (floor 1). Its row:
    #   present 1, log_e1_hours log10(1 + 8) / 4 = 0.238560627, log_bkstar_gbps
    #   log10(1 + 4) / 2 = 0.349485002, k_star 2 / 128 = 0.015625, memory_floor 1 / 128 =
    #   0.0078125, log_until_submit_hours log10(1 + 1) / 4 = 0.075257499;
    # the second slot is empty (zeros).
    env = GeoPipeEnv(_with_calendar(tiny_scenario, 2.0), announce_window=2, max_queue=4)
    obs, _ = env.reset(seed=0)
    assert env.sim is not None and env.sim.time == 0.0 and env.sim.announced() == (3,)
    expected = np.zeros((2, len(ANNOUNCED_FEATURES)), dtype=np.float32)
    expected[0] = [
        1.0,
        math.log10(9.0) / 4.0,
        math.log10(5.0) / 2.0,
        2.0 / 128.0,
        1.0 / 128.0,
        math.log10(2.0) / 4.0,
    ]
    np.testing.assert_allclose(obs["announced"], expected, rtol=1e-6)
    assert obs["announced"].dtype == np.float32 and obs["announced"][0, 0] == 1.0
    assert ANNOUNCED_FEATURES == (
        "present",
        "log_e1_hours",
        "log_bkstar_gbps",
        "k_star",
        "memory_floor",
        "log_until_submit_hours",
    )
    # the static columns are the queue's columns 3-5 of the same job, once it is queued (A and
    # B hold the GPUs at 1 h: C is first offered at B's finish, 2 h)
    while 3 not in env.queue_snapshot.job_ids:
        obs, _, done, _, _ = env.step(0)
        assert not done
        assert not obs["announced"].any() or env.sim.time < 3600.0
    assert env.sim.time >= 3600.0 and 3 in env.sim.pending
    assert not obs["announced"].any()  # C is submitted: in the queue, no longer announced
    slot = env.queue_snapshot.job_ids.index(3)
    np.testing.assert_array_equal(obs["queue"][slot, 3:6], expected[0, 1:4])


def test_beyond_the_calendar_or_without_one_the_rows_are_zero(tiny_scenario: Scenario) -> None:
    for hours in (0.5, 0.0):  # C comes 1 h after the first decision
        env = GeoPipeEnv(_with_calendar(tiny_scenario, hours), announce_window=3, max_queue=4)
        obs, _ = env.reset(seed=0)
        assert obs["announced"].shape == (3, 6) and not obs["announced"].any()


def test_the_rows_are_the_simulators_announced_jobs_at_every_step() -> None:
    env = gym.make(ANNOUNCED, n_jobs=40, load=2.0)
    u = env.unwrapped
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=4)
    seen = 0
    while True:
        sim = u.sim
        ids = sim.announced()[:16]
        rows = obs["announced"]
        assert int(rows[:, 0].sum()) == len(ids)
        assert not rows[len(ids) :].any()
        for row, job in zip(rows, ids):
            wait = sim.scenario.submit_times[job] - sim.time
            assert 0.0 < wait <= 24 * 3600.0
            assert row[5] == pytest.approx(_log_h(wait), rel=1e-5)
            assert row[3] == pytest.approx(sim.profile(job).k_star / 128.0, rel=1e-6)
            assert row[4] == pytest.approx(min(sim.memory_floor(job)) / 128.0, rel=1e-6)
        seen += len(ids)
        assert env.observation_space.contains(obs)
        obs, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if term or trunc:
            break
    assert seen > 0


# ------------------------------------------------------------------------- registration
def test_the_ids_are_online_plus_a_calendar() -> None:
    assert ENV_IDS[ANNOUNCED] == {**ENV_IDS[ONLINE], **CALENDAR}
    assert ENV_IDS[ANNOUNCED_PREEMPT] == {**ENV_IDS[PREEMPT], **CALENDAR}
    for env_id in (ANNOUNCED, ANNOUNCED_PREEMPT):
        assert MAX_EPISODE_STEPS[env_id] == 100_000
        env = gym.make(env_id, n_jobs=30)
        obs, _ = env.reset(seed=0)
        assert env.unwrapped.scenario.announce_h == 24.0
        assert obs["announced"].shape == (16, len(ANNOUNCED_FEATURES))
        assert env.observation_space["announced"].shape == (16, 6)


def test_the_calendar_changes_no_dynamics() -> None:
    """The same actions on Online-v1 and on the announced id give the same episode."""
    for plain, calendar in ((ONLINE, ANNOUNCED), (PREEMPT, ANNOUNCED_PREEMPT)):
        episodes = []
        for env_id in (plain, calendar):
            env = gym.make(env_id, n_jobs=30, load=2.0)
            rng = np.random.default_rng(1)
            _, info = env.reset(seed=2)
            rewards = []
            while True:
                a = int(rng.choice(np.flatnonzero(info["action_mask"])))
                _, r, term, trunc, info = env.step(a)
                rewards.append(r)
                if term or trunc:
                    break
            episodes.append((rewards, env.unwrapped.sim.result().records))
        assert episodes[0] == episodes[1]


@pytest.mark.parametrize("name", ["sjf+announce", "sjf+announce+srtf"])
def test_the_announce_agents_play_the_id_as_their_simulator_run(name: str) -> None:
    """With the calendar on, the agent's env (its admission rule in the env's simulator) is
    its simulator run, bit for bit."""
    env_id = ANNOUNCED_PREEMPT if name.endswith("srtf") else ANNOUNCED
    preempt = env_id == ANNOUNCED_PREEMPT
    env = gym.make(env_id, **agent_env_kwargs(name, preempt_actions=preempt), n_jobs=40, load=2.0)
    episode = run_episode(env, make_agent(name), 2)
    assert episode.illegal_actions == 0
    scen = env.unwrapped.scenario
    assert scen.announce_h == 24.0
    expected = make_policy(name).simulate(scen)
    assert env.unwrapped.sim.result(name).records == expected.records
    # and the calendar matters on this episode: finish-aware runs it differently
    other = make_policy("sjf+finish-aware" + ("+srtf" if preempt else "")).simulate(scen)
    assert other.records != expected.records


# ------------------------------------------------------------------------------ errors
@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, None, 100_001])
def test_a_bad_announce_window_is_one_line(bad: Any) -> None:
    with pytest.raises(ValidationError) as err:
        GeoPipeEnv("fig1", announce_window=bad)
    assert err.value.field == "announce_window" and "\n" not in str(err.value)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), 1e7, "24"])
@pytest.mark.parametrize("scenario", ["online", "random"])
def test_a_bad_announce_h_knob_is_one_line(bad: Any, scenario: str) -> None:
    with pytest.raises(ValidationError) as err:
        GeoPipeEnv(scenario, announce_h=bad, max_queue=16)
    assert err.value.field == "announce_h" and "\n" not in str(err.value)


def test_off_by_default_the_spaces_are_unchanged() -> None:
    plain = GeoPipeEnv("paper")
    off = GeoPipeEnv("paper", announce_window=0, announce_h=0.0)
    assert plain.observation_space == off.observation_space
    assert "announced" not in off.observation_space.spaces
    on = GeoPipeEnv("paper", announce_window=5)
    assert on.observation_space["announced"].shape == (5, 6)
    assert set(on.observation_space.spaces) - set(plain.observation_space.spaces) == {"announced"}
