"""The deadline ids (issue 45, semantics §15): GeoPipe-Online-Deadline-v0 and
GeoPipe-Online-Announced-Deadline-v0 pass both checkers, are deterministic, show each job's
time to its deadline and slack in the ``queue`` and ``announced`` rows (golden values on the
tiny hand-made scenario), leave every other id's observation as it was, pay the ``misses`` and
``tardiness`` rewards that sum to the terminal info's figures, and let the deadline heuristics
play them bit for bit as the simulator does."""

from __future__ import annotations

import dataclasses
import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.core import Scenario
from bacepipe_env.core.deadlines import DEFAULT_SLACK
from bacepipe_env.core.world import World
from bacepipe_env.envs import AGENT_ENV, ENV_IDS, MAX_EPISODE_STEPS, GeoPipeEnv, make_agent
from bacepipe_env.envs.features import (
    ANNOUNCED_FEATURES,
    DEADLINE_FEATURES,
    OPTIONAL_FEATURES,
    QUEUE_FEATURES,
)
from bacepipe_env.envs.registration import WORLD_IDS
from bacepipe_env.envs.reward import REWARDS, DeadlineReward, RewardTerms
from bacepipe_env.errors import ValidationError
from bacepipe_env.policies.registry import make_policy

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*maximum value is infinity.*"),
    pytest.mark.filterwarnings("ignore:.*minimum value is -infinity.*"),
    pytest.mark.filterwarnings("ignore:.*image.*"),
    pytest.mark.filterwarnings("ignore:.*unconventional shape.*"),
    pytest.mark.filterwarnings("ignore:.*minimal resolution.*"),
    pytest.mark.filterwarnings("ignore:.*illegal action was replaced.*"),
]

DEADLINE = "bacepipe_env/GeoPipe-Online-Deadline-v0"
ANNOUNCED = "bacepipe_env/GeoPipe-Online-Announced-Deadline-v0"
IDS = (DEADLINE, ANNOUNCED)
ONLINE = "bacepipe_env/GeoPipe-Online-v1"
PARENTS = {DEADLINE: ONLINE, ANNOUNCED: "bacepipe_env/GeoPipe-Online-Announced-v0"}
BASE = len(QUEUE_FEATURES)  # the queue columns every id has: the deadline ones follow
HOURS = 3600.0


def _log(hours: float) -> float:
    """The columns' signed hours scale: sign(h) * log10(1 + |h|) / 4."""
    return math.copysign(math.log10(1.0 + abs(hours)) / 4.0, hours)


def _play(env, seed, actions_seed=0, max_steps=None):
    """A seeded play with random legal actions: the rewards, the observations and the last
    info."""
    rng = np.random.default_rng(actions_seed)
    obs, info = env.reset(seed=seed)
    rewards, observations = [], [obs]
    while True:
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        observations.append(obs)
        if terminated or truncated or (max_steps and len(rewards) >= max_steps):
            return rewards, observations, info


# ------------------------------------------------------------------------- registration
def test_the_ids_are_their_parents_with_deadlines():
    for env_id, parent in PARENTS.items():
        extra = {"deadline_slack": DEFAULT_SLACK, "deadline_features": True, "reward": "misses"}
        assert ENV_IDS[env_id] == {**ENV_IDS[parent], **extra}
        assert MAX_EPISODE_STEPS[env_id] == MAX_EPISODE_STEPS[parent]
        assert env_id not in WORLD_IDS
    assert DEFAULT_SLACK == "uniform:1.2,3.0"
    assert OPTIONAL_FEATURES[-1] == "deadline_features"
    assert DEADLINE_FEATURES == ("has_deadline", "log_to_deadline_hours", "log_slack_hours")


@pytest.mark.parametrize("env_id", IDS)
def test_both_checkers_pass(env_id):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gym.make(env_id, n_jobs=12)
    gym_check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(gym.make(env_id, n_jobs=12).unwrapped, warn=True, skip_render_check=True)
    space = env.observation_space
    assert space["queue"].shape == (12, BASE + 3)
    # the time to the deadline and the slack go below 0; the flag and the base columns do not
    assert np.all(space["queue"].low[:, BASE + 1 :] == -np.inf)
    assert np.all(space["queue"].low[:, : BASE + 1] == 0.0)
    if env_id == ANNOUNCED:
        assert space["announced"].shape == (16, len(ANNOUNCED_FEATURES) + 3)
    else:
        assert "announced" not in space.spaces


@pytest.mark.parametrize("env_id", IDS)
def test_a_seed_gives_the_same_episode(env_id):
    one = _play(gym.make(env_id, n_jobs=30), seed=5)
    two = _play(gym.make(env_id, n_jobs=30), seed=5)
    assert one[0] == two[0]  # every reward
    for a, b in zip(one[1], two[1], strict=True):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    assert one[2]["episode_total_tardiness_s"] == two[2]["episode_total_tardiness_s"]


# ------------------------------------------------------------------ the observation columns
def _tiny(tiny, a=None, b=None, c=None, **world):
    """conftest's tiny scenario (A: job 1, E* = 10 h; B: job 2, E* = 2 h; both submitted at 0;
    C: job 3, E* = 5.5 h, submitted at 1 h) with the jobs' deadline fields given as dicts and
    the world's settings."""
    jobs = tuple(
        dataclasses.replace(job, **(given or {})) for job, given in zip(tiny.jobs, (a, b, c))
    )
    return Scenario("tiny", tiny.cluster, jobs, World(ignore_memory=True, **world))


def _tiny_with_deadlines(tiny):
    """A due at 12 h, B given a slack of 1.5 (due at 0 + 1.5 * 2 h = 3 h), C none."""
    return _tiny(tiny, a={"deadline": 12 * HOURS}, b={"slack": 1.5})


def test_golden_deadline_columns_on_the_tiny_scenario(tiny_scenario):
    scen = _tiny_with_deadlines(tiny_scenario)
    assert scen.deadlines == {1: 12 * HOURS, 2: 3 * HOURS}
    env = GeoPipeEnv(scen, deadline_features=True, allow_wait=True, running_features=True)
    obs, info = env.reset(seed=0)
    q = info["queue"]
    assert q.time == 0.0 and q.job_ids == (1, 2)
    assert q.ideal_execution == (10 * HOURS, 2 * HOURS)
    cols = obs["queue"][:, BASE:]
    # A: due at 12 h, now 0: 12 h to go, slack 12 - 10 = 2 h
    np.testing.assert_array_equal(cols[0], np.float32([1.0, _log(12.0), _log(2.0)]))
    # B: due at 3 h: 3 h to go, slack 3 - 2 = 1 h
    np.testing.assert_array_equal(cols[1], np.float32([1.0, _log(3.0), _log(1.0)]))
    np.testing.assert_array_equal(cols[2:], 0.0)  # empty slots
    assert _log(12.0) == pytest.approx(math.log10(13) / 4)  # 0.2785
    # The base columns are those of the same env without deadline columns, bit for bit.
    plain = GeoPipeEnv(scen, allow_wait=True, running_features=True)
    plain_obs, _ = plain.reset(seed=0)
    np.testing.assert_array_equal(obs["queue"][:, :BASE], plain_obs["queue"])
    # The wait action: nothing runs, so the next event is C's arrival at 1 h.
    obs, *_ = env.step(env.n_place)
    q = env.queue_snapshot
    assert q.time == HOURS and q.job_ids == (1, 2, 3)
    cols = obs["queue"][:, BASE:]
    # A: 12 - 1 = 11 h to go, slack 11 - 10 = 1 h; B: 3 - 1 = 2 h, slack 2 - 2 = 0
    np.testing.assert_array_equal(cols[0], np.float32([1.0, _log(11.0), _log(1.0)]))
    np.testing.assert_array_equal(cols[1], np.float32([1.0, _log(2.0), 0.0]))
    np.testing.assert_array_equal(cols[2], 0.0)  # C: no deadline, the flag and both times 0


def test_an_overdue_job_shows_negative_times(tiny_scenario):
    """B due at 1.5 h with E* = 2 h: its slack is below 0 from the start (1.5 - 2 = -0.5 h),
    and once its deadline has passed the time to it is below 0 too."""
    scen = _tiny(tiny_scenario, b={"deadline": 1.5 * HOURS})
    env = GeoPipeEnv(scen, deadline_features=True, allow_wait=True, running_features=True)
    obs, info = env.reset(seed=0)
    slot = info["queue"].job_ids.index(2)
    np.testing.assert_array_equal(
        obs["queue"][slot, BASE:], np.float32([1.0, _log(1.5), _log(-0.5)])
    )
    assert obs["queue"][slot, BASE + 2] == pytest.approx(-math.log10(1.5) / 4)  # -0.0440
    # wait for C's arrival at 1 h (nothing runs), then place C and wait past 1.5 h
    obs, *_ = env.step(env.n_place)
    assert env.queue_snapshot.time == HOURS
    while env.queue_snapshot.time <= 1.5 * HOURS:
        q = env.queue_snapshot
        obs, *_ = env.step(q.job_ids.index(3) if 3 in q.job_ids else env.n_place)
    q = env.queue_snapshot
    assert 2 in q.job_ids
    hours = (1.5 * HOURS - q.time) / HOURS  # < 0: past due
    row = obs["queue"][q.job_ids.index(2), BASE:]
    assert row[1] == np.float32(_log(hours)) < 0
    assert row[2] == np.float32(_log(hours - 2.0)) < row[1]


def test_the_announced_rows_show_the_deadlines_of_jobs_to_come(tiny_scenario):
    """C (job 3, submitted at 1 h, E* = 5.5 h) with a slack of 2: due at 1 + 2 * 5.5 = 12 h,
    announced 2 h ahead; at time 0 its row shows 12 h to go and a slack of 12 - 5.5 = 6.5 h."""
    scen = _tiny(tiny_scenario, c={"slack": 2.0}, announce_h=2.0)
    assert scen.deadlines == {3: 12 * HOURS}
    env = GeoPipeEnv(
        scen, deadline_features=True, announce_window=2, allow_wait=True, running_features=True
    )
    obs, _ = env.reset(seed=0)
    assert env.sim.announced() == (3,)
    base = len(ANNOUNCED_FEATURES)
    assert obs["announced"].shape == (2, base + 3)
    np.testing.assert_array_equal(
        obs["announced"][0, base:], np.float32([1.0, _log(12.0), _log(6.5)])
    )
    plain = GeoPipeEnv(scen, announce_window=2, allow_wait=True, running_features=True)
    np.testing.assert_array_equal(obs["announced"][:, :base], plain.reset(seed=0)[0]["announced"])


def test_a_wide_window_fills_the_deadline_columns_as_a_narrow_one():
    """From 48 visible jobs the queue array is filled column by column: the deadline columns
    are the snapshot's either way."""
    env = gym.make(DEADLINE, n_jobs=120)
    obs, info = env.reset(seed=2)
    steps = 0
    while len(info["queue"]) < 48 and steps < 400:
        obs, _, term, _, info = env.step(env.unwrapped.n_place)  # wait: the queue grows
        steps += 1
        assert not term
    q = info["queue"]
    assert len(q) >= 48
    for i in (0, len(q) - 1):
        due, e_star = q.due[i], q.ideal_execution[i]
        hours = (due - q.time) / HOURS
        expected = np.float32([1.0, _log(hours), _log(hours - e_star / HOURS)])
        np.testing.assert_array_equal(obs["queue"][i, BASE:], expected)


def test_the_other_ids_observations_are_unchanged():
    """Online-v1 keeps its 11 queue columns, and the deadline id's base columns are
    Online-v1's, bit for bit (the slacks come from their own random stream): the same seed and
    actions give the same arrays but for the deadline columns."""
    online = gym.make(ONLINE, n_jobs=40)
    deadline = gym.make(DEADLINE, n_jobs=40, reward=None)
    assert online.observation_space["queue"].shape == (40, BASE)
    assert "deadline_features" not in online.unwrapped.settings.enabled
    _, obs_a, _ = _play(online, seed=3)
    _, obs_b, _ = _play(deadline, seed=3)
    assert len(obs_a) == len(obs_b)
    for a, b in zip(obs_a, obs_b):
        assert a.keys() == b.keys()
        for key in a:
            want = b[key][:, :BASE] if key == "queue" else b[key]
            np.testing.assert_array_equal(a[key], want)
    assert any(np.any(o["queue"][:, BASE]) for o in obs_b)  # the jobs have deadlines


# ------------------------------------------------------------------------------ rewards
@pytest.mark.parametrize("env_id", IDS)
def test_the_misses_reward_sums_to_minus_the_misses(env_id):
    env = gym.make(env_id, n_jobs=100)
    assert env.unwrapped.settings.reward_fn.term == "misses"  # the ids' default
    rewards, _, info = _play(env, seed=1)
    n_due = len(env.unwrapped.scenario.deadlines)
    assert n_due == 100  # deadline_slack gives every job a deadline
    misses = sum(r.missed for r in env.unwrapped.sim.result().records)
    assert misses > 0
    assert info["episode_miss_rate"] == misses / n_due
    assert all(r == int(r) <= 0 for r in rewards)  # whole misses
    assert sum(rewards) == -misses


@pytest.mark.parametrize("env_id", IDS)
def test_the_tardiness_reward_sums_to_minus_the_total_tardiness_scaled(env_id):
    env = gym.make(env_id, n_jobs=100, reward="tardiness")
    rewards, _, info = _play(env, seed=1)
    n_due = len(env.unwrapped.scenario.deadlines)
    assert env.unwrapped.reward_scales.tardiness_norm == HOURS * n_due
    assert all(r <= 0.0 for r in rewards)
    assert sum(r < 0 for r in rewards) > 1  # accrued over many steps, not at the end alone
    # the scale: an hour per job with a deadline, so the return is the mean tardiness in hours
    expected = -info["episode_total_tardiness_h"] / n_due
    assert expected < 0
    assert math.fsum(rewards) == pytest.approx(expected, rel=1e-9)


def test_the_rewards_on_the_tiny_scenario_by_hand(tiny_scenario):
    """A (E* 10 h) due at 12 h, B (E* 2 h) due at 3 h, C without a deadline. The agent waits
    for C's arrival at 1 h, then places the first legal job at each decision:

    - 1 h: A, which Cost-Min puts on 1 GPU of X and 2 of the cheaper Y: hops X->Y 0.5 s and
      Y->Y 1 s, t_comp = 2/3 s, so ``t_iter = (1.5 + 3 * 2/3 + 3 * 1) * 2 = 13`` s and its
      3,600 iterations take 13 h: it finishes at 14 h, 2 h after its deadline (a miss);
    - 1 h: B, on X's last GPU, 900 * 8 s = 2 h: it finishes at 3 h, exactly when due (no miss);
    - 3 h: C on the GPU B frees, 1,800 * 16 s = 8 h: it finishes at 11 h.

    The steps' intervals are [0, 1 h], [1 h, 1 h], [1 h, 3 h] and [3 h, 14 h]: A's deadline
    (12 h) passes in the last, unmet, so it pays -1 (misses), and A's 2 h of tardiness accrue
    there too: -2 h / (1 h * 2 jobs with a deadline) = -1 (tardiness)."""
    scen = _tiny_with_deadlines(tiny_scenario)
    for reward in ("misses", "tardiness"):
        env = GeoPipeEnv(scen, reward=reward, allow_wait=True, running_features=True)
        env.reset(seed=0)
        rewards, times, placed = [], [], []
        action = env.n_place  # the wait
        while True:
            q = env.queue_snapshot
            placed.append(q.job_ids[action] if action < env.n_place else None)
            _, r, terminated, _, _ = env.step(action)
            rewards.append(r)
            times.append(env.queue_snapshot.time / HOURS)
            if terminated:
                break
            action = int(np.flatnonzero(env.action_masks())[0])
        assert placed == [None, 1, 2, 3]
        assert times == [1.0, 1.0, 3.0, 14.0]
        assert rewards == [0.0, 0.0, 0.0, -1.0]
        records = {r.job_id: r for r in env.sim.result().records}
        assert records[1].finish_time == 14 * HOURS and records[1].tardiness == 2 * HOURS
        assert records[2].finish_time == 3 * HOURS and not records[2].missed
        assert records[3].finish_time == 11 * HOURS and records[3].deadline is None


def test_reward_names_and_errors():
    assert set(REWARDS) == {"vector", "misses", "tardiness"}
    assert isinstance(GeoPipeEnv("paper", reward="tardiness").settings.reward_fn, DeadlineReward)
    with pytest.raises(ValidationError) as err:
        GeoPipeEnv("paper", reward="late")
    assert "\n" not in str(err.value)
    assert "'vector', 'misses', 'tardiness'" in str(err.value)
    with pytest.raises(ValidationError, match=r"reward\.term"):
        DeadlineReward("lateness")
    terms = RewardTerms(0.5, 0.25, misses=2.0, tardiness=0.125)
    assert DeadlineReward("misses")(terms) == -2.0
    assert DeadlineReward("tardiness")(terms) == -0.125
    assert DeadlineReward("tardiness").components(terms)["reward_tardiness"] == -0.125
    assert RewardTerms.names() == ("jct", "cost", "carbon", "misses", "tardiness")
    # without deadlines the deadline terms are 0 at every step
    rewards, _, _ = _play(GeoPipeEnv("paper", reward="misses"), seed=0)
    assert set(rewards) == {0.0}
    with pytest.raises(ValidationError, match="deadline_features"):
        GeoPipeEnv("paper", deadline_features="yes")


# --------------------------------------------------------------------------- final info
@pytest.mark.parametrize("env_id", IDS)
def test_the_final_info_carries_the_miss_rate_and_the_tardiness(env_id):
    _, _, info = _play(gym.make(env_id, n_jobs=12), seed=0)
    for key in ("episode_miss_rate", "episode_total_tardiness_s", "episode_total_tardiness_h"):
        assert key in info
    assert 0.0 <= info["episode_miss_rate"] <= 1.0
    assert info["episode_total_tardiness_h"] == info["episode_total_tardiness_s"] / HOURS
    _, _, plain = _play(gym.make(ONLINE, n_jobs=12), seed=0)
    assert "episode_miss_rate" not in plain  # a world without deadlines shows none


# ----------------------------------------------------------------------- heuristic agents
@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("name", ["edf", "lsf", "edf-triage+finish-aware", "edf+deadline-aware"])
def test_deadline_heuristics_play_the_ids_as_the_simulator(env_id, name):
    env = gym.make(env_id, **AGENT_ENV[name], n_jobs=60)
    agent = make_agent(name)
    agent.reset(1)
    obs, info = env.reset(seed=1)
    while True:
        action, _ = agent.predict(obs, info=info)
        obs, _, terminated, truncated, info = env.step(action)
        assert not info["illegal_action"]
        if terminated or truncated:
            assert terminated
            break
    scen = env.unwrapped.scenario
    expected = make_policy(name, seed=1).simulate(scen)
    got = env.unwrapped.sim.result()
    assert got.records == expected.records  # every field of every job, deadlines included
    assert info["episode_miss_rate"] == expected.miss_rate
    assert info["episode_total_tardiness_s"] == expected.total_tardiness
