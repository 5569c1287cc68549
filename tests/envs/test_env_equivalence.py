"""An env episode played by a registered policy's agent reproduces the simulator run of that
policy on the same scenario: same average JCT, same total cost, same placements (and, on
GeoPipe-Online-v1's hourly tariff, the same emissions and every job record, bit for bit).

``run_episode(env, agent, seed)`` calls ``agent.reset(seed)``, which re-seeds the random
ordering with ``numpy.random.default_rng(seed)`` whatever seed the agent was made with;
``make_policy("random", seed=s)`` builds ``RandomOrdering(s)`` = ``default_rng(s)``. Both then
draw one ``integers(n)`` per decision over the same candidates (the window covers the queue and
the Pathfinder placement always succeeds while a GPU is free), so the random policy is compared
with ``seed=`` the episode's seed.
"""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.core.units import SECONDS_PER_HOUR
from bacepipe_env.envs import (
    AGENT_ENV,
    AGENT_PLACEMENTS,
    GeoPipeEnv,
    evaluate,
    make_agent,
    run_episode,
)
from bacepipe_env.policies.base import FCFSOrdering
from bacepipe_env.policies.registry import make_policy, policy_names

CASES = [
    *[("paper", s, {}) for s in range(5)],
    *[("paper-aws", s, {}) for s in range(3)],
    ("fig1", 0, {}),
    ("paper", 0, {"gpu_scale": 0.5}),
    ("paper", 3, {"gpu_scale": 0.5}),
    ("paper", 0, {"n_jobs": 16}),
    ("paper", 2, {"n_jobs": 16}),
    # the physical world (semantics §3d), the schedulers blind to it and then told
    ("paper", 0, {"model": "physical"}),
    ("paper", 1, {"model": "physical", "scheduler_model": "world"}),
]
CASE_IDS = [f"{sc}-s{seed}" + "".join(f"-{k}{v}" for k, v in kn.items()) for sc, seed, kn in CASES]
MAX_QUEUE = 16


def _close(a, b):
    return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


def _assert_same_run(env, res, expected):
    """``res`` (EpisodeResult of ``env``'s finished episode) equals ``expected`` (RunResult)."""
    assert res.illegal_actions == 0
    assert _close(res.avg_jct_h, expected.avg_jct / SECONDS_PER_HOUR), (res, expected.avg_jct)
    assert _close(res.total_cost_usd, expected.total_cost), (res, expected.total_cost)
    got = env.unwrapped.sim.result()
    assert len(got.records) == len(expected.records)
    for r_env, r_sim in zip(got.records, expected.records):
        assert r_env.job_id == r_sim.job_id
        assert r_env.placement == r_sim.placement
        assert _close(r_env.start_time, r_sim.start_time)
        assert _close(r_env.jct, r_sim.jct)
        assert _close(r_env.cost, r_sim.cost)


def test_every_registered_policy_has_an_agent():
    assert set(AGENT_PLACEMENTS) == set(policy_names())


@pytest.mark.parametrize(("scenario", "seed", "knobs"), CASES, ids=CASE_IDS)
@pytest.mark.parametrize("name", list(AGENT_PLACEMENTS))
def test_agent_episode_equals_simulator_run(name, scenario, seed, knobs):
    agent = make_agent(name)
    assert agent.placement == AGENT_PLACEMENTS[name]
    env = GeoPipeEnv(scenario, **agent.env_kwargs, max_queue=MAX_QUEUE, **knobs)
    res = run_episode(env, agent, seed)
    scen = env.unwrapped.scenario
    assert env.max_queue >= len(scen.jobs)  # the window covers the whole queue
    if "n_jobs" in knobs:
        assert len(scen.jobs) == knobs["n_jobs"]
    expected = make_policy(name, seed=seed).simulate(scen)
    _assert_same_run(env, res, expected)
    if agent.admission is None:  # greedy: one placement per start, no waits (a preempted
        assert res.steps == len(scen.jobs) + expected.n_restarts  # job starts again)
    else:  # a waiting heuristic's rule declines some choices, each a step
        assert res.steps >= len(scen.jobs)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", list(AGENT_PLACEMENTS))
def test_agent_on_random_env_equals_simulator_run(name, seed):
    env = gym.make("bacepipe_env/GeoPipe-Random-v2", **AGENT_ENV[name])
    res = run_episode(env, make_agent(name), seed)
    scen = env.unwrapped.scenario
    assert scen.name == "random"
    assert env.unwrapped.max_queue >= len(scen.jobs)
    _assert_same_run(env, res, make_policy(name, seed=seed).simulate(scen))


@pytest.mark.parametrize("name", ["bace-pipe", "sjf+finish-aware", "cr-ldf", "lcf"])
def test_agent_on_the_physical_random_env_equals_simulator_run(name):
    """Random clusters whose links differ each way, in the physical world: the env's previews
    refuse what the world cannot carry, as the simulator's pass does."""
    for seed in range(3):
        env = gym.make("bacepipe_env/GeoPipe-Random-v2", **AGENT_ENV[name], model="physical")
        res = run_episode(env, make_agent(name), seed)
        scen = env.unwrapped.scenario
        assert scen.world.model == "physical"
        _assert_same_run(env, res, make_policy(name, seed=seed).simulate(scen))


@pytest.mark.parametrize("name", ["bace-pipe", "fcfs", "random", "cr-ldf", "no-pathfinder"])
def test_equivalence_without_previews(name):
    """``preview=False``: every visible job is offered and a failed placement is retried at the
    next decision, as in the simulator's pass."""
    for seed in range(3):
        env = gym.make("bacepipe_env/GeoPipe-Random-v2", **AGENT_ENV[name], preview=False)
        res = run_episode(env, make_agent(name), seed)
        _assert_same_run(env, res, make_policy(name, seed=seed).simulate(env.unwrapped.scenario))


def test_random_comparison_is_sensitive_to_the_seed():
    """The random agent matches the policy seeded alike, and a differently seeded policy gives
    another run on at least one scenario (so the match above is not vacuous)."""
    differs = 0
    for seed in range(5):
        env = GeoPipeEnv("paper", max_queue=MAX_QUEUE, n_jobs=12)
        res = run_episode(env, make_agent("random", seed=1000), seed)  # reset(seed) wins
        scen = env.scenario
        _assert_same_run(env, res, make_policy("random", seed=seed).simulate(scen))
        other = make_policy("random", seed=seed + 100).simulate(scen)
        differs += int(not _close(res.avg_jct_h, other.avg_jct / SECONDS_PER_HOUR))
    assert differs >= 1


def test_orderings_differ_somewhere():
    """bace-pipe, fcfs and sjf are not the same ordering on every scenario (guards against an
    agent that ignores its ordering and still matches by accident)."""
    runs = {}
    for name in ("bace-pipe", "fcfs", "sjf"):
        env = GeoPipeEnv("paper", **AGENT_ENV[name], max_queue=MAX_QUEUE)
        runs[name] = [run_episode(env, make_agent(name), s).avg_jct_h for s in range(5)]
    assert runs["bace-pipe"] != runs["fcfs"]
    assert runs["sjf"] != runs["fcfs"]


def test_evaluate_is_run_episode_per_seed():
    env = GeoPipeEnv("paper", max_queue=MAX_QUEUE)
    agent = make_agent("bace-pipe")
    results = evaluate(env, agent, [0, 1, 2])
    assert [r.seed for r in results] == [0, 1, 2]
    for r in results:
        again = run_episode(GeoPipeEnv("paper", max_queue=MAX_QUEUE), agent, r.seed)
        assert again == r
        assert r.agent == "bace-pipe"
        assert r.illegal_actions == 0
        assert r.episode_return < 0


@pytest.mark.parametrize("admission", ["finish-aware", "full"])
@pytest.mark.parametrize("name", ["bace-pipe", "ldf", "cr-lcf", "sjf", "random"])
def test_agent_equals_simulator_under_each_admission_rule(name, admission):
    """The env applies the same admission rule as the simulator: its mask offers only the jobs
    the rule would start, and the agent's ordering picks among them."""
    for scenario, seed in (("paper", 0), ("paper", 1), ("paper-aws", 2)):
        env = GeoPipeEnv(
            scenario, placement=AGENT_PLACEMENTS[name], admission=admission, max_queue=MAX_QUEUE
        )
        res = run_episode(env, make_agent(name), seed)
        expected = make_policy(name, seed=seed).simulate(env.scenario, admission=admission)
        assert expected.admission == admission
        _assert_same_run(env, res, expected)


def test_the_agent_is_the_simulators_ordering_object():
    """One home per ordering: the agent holds the registry's ordering, not a second copy."""
    for name in AGENT_PLACEMENTS:
        agent = make_agent(name)
        assert type(agent.ordering) is type(make_policy(name).ordering)


def test_sb3_evaluate_policy_takes_a_bound_heuristic_agent():
    """SB3's PolicyPredictor protocol: ``evaluate_policy`` plays a heuristic bound to its env,
    and the episode returns equal those of our own loop on the same reset seeds."""
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import DummyVecEnv

    def play(seed: int, episodes: int) -> list[float]:  # reset(seed) once, then plain resets
        env = GeoPipeEnv("paper", max_queue=MAX_QUEUE)
        agent = make_agent("bace-pipe")
        returns = []
        obs, info = env.reset(seed=seed)
        for _ in range(episodes):
            total, done = 0.0, False
            while not done:
                action, _ = agent.predict(obs, info=info)
                obs, reward, terminated, truncated, info = env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
            obs, info = env.reset()
        return returns

    vec = DummyVecEnv([lambda: GeoPipeEnv("paper", max_queue=MAX_QUEUE)])
    vec.seed(7)
    agent = make_agent("bace-pipe").bind(vec)
    rewards, lengths = evaluate_policy(
        agent, vec, n_eval_episodes=3, return_episode_rewards=True, warn=False
    )
    assert len(rewards) == 3 and all(n == 8 for n in lengths)
    # DummyVecEnv keeps each step's reward in a float32 buffer: equal to float32 precision
    assert rewards == pytest.approx(play(7, 3), rel=1e-6)


def test_an_unbound_agent_without_info_says_how_to_bind_it():
    from bacepipe_env.errors import ValidationError

    env = GeoPipeEnv("paper", max_queue=MAX_QUEUE)
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValidationError, match="bind"):
        make_agent("fcfs").predict(obs)
    action, state = make_agent("fcfs").bind(env).predict(obs)
    assert state is None and int(action) == 0


# ------------------------------------------------------------------- GeoPipe-Online-v1
ONLINE = "bacepipe_env/GeoPipe-Online-v1"
# Orderings that always take the earliest candidate: a 16-slot window shows it, so they
# reproduce the simulator however long the queue grows (the others need the window to cover it,
# which the id's own window, the whole job budget, does).
FIRST_COME = [n for n in AGENT_PLACEMENTS if isinstance(make_agent(n).ordering, FCFSOrdering)]


def _assert_online_run(env, info, expected):
    """The terminal ``info`` and the env's own RunResult equal the simulator's ``expected``, bit
    for bit: the objectives, the emissions, the percentiles and every job record."""
    got = env.unwrapped.sim.result()
    assert got.records == expected.records  # every field of every job, exactly
    assert got.total_carbon == expected.total_carbon
    assert got.start_hour == expected.start_hour and got.prices == "hourly"
    assert info["episode_avg_jct_s"] == expected.avg_jct
    assert info["episode_total_cost_usd"] == expected.total_cost
    assert info["episode_carbon_kg"] == expected.total_carbon > 0
    assert info["episode_makespan_s"] == expected.makespan
    assert info["episode_jobs_completed"] == len(expected.records)
    assert info["episode_jct_p50_s"] == expected.jct_p50
    assert info["episode_jct_p95_s"] == expected.jct_p95
    assert info["episode_jct_p99_s"] == expected.jct_p99
    assert info["episode_mean_slowdown"] == expected.mean_slowdown
    assert info["episode_egress_usd"] == expected.total_egress_cost == 0.0


def _play_online(name, seed, **kwargs):
    env = gym.make(ONLINE, **AGENT_ENV[name], **kwargs)
    agent = make_agent(name)
    agent.reset(seed)
    obs, info = env.reset(seed=seed)
    steps, illegal = 0, 0
    while True:
        action, _ = agent.predict(obs, info=info)
        obs, _, terminated, truncated, info = env.step(action)
        steps += 1
        illegal += int(info["illegal_action"])
        if terminated or truncated:
            assert terminated and not truncated
            break
    assert illegal == 0
    scen = env.unwrapped.scenario
    expected = make_policy(name, seed=seed).simulate(scen)
    if agent.admission is None:  # greedy admission: one placement per step, one per restart
        assert steps == len(scen.jobs) + expected.n_restarts
    return env, info, expected


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", list(AGENT_PLACEMENTS))
def test_agent_on_online_env_equals_simulator_run(name, seed):
    """60 jobs through the id's own window, which holds the whole budget."""
    env, info, expected = _play_online(name, seed, n_jobs=60)
    assert len(env.unwrapped.scenario.jobs) == 60 == env.unwrapped.max_queue
    _assert_online_run(env, info, expected)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", FIRST_COME)
def test_first_come_agents_equal_the_simulator_through_a_small_window(name, seed):
    env, info, expected = _play_online(name, seed, n_jobs=60, max_queue=16)
    assert env.unwrapped.max_queue == 16
    _assert_online_run(env, info, expected)


def test_first_come_agents_are_the_fcfs_ordering():
    assert set(FIRST_COME) >= {"fcfs", "lcf", "ldf", "cr-lcf", "cr-ldf", "no-priority"}
    assert not {"bace-pipe", "sjf", "random"} & set(FIRST_COME)


@pytest.mark.slow  # 500-job episodes, one per agent (about 3 s in all)
@pytest.mark.parametrize("name", list(AGENT_PLACEMENTS))
def test_agent_on_a_full_online_episode_equals_simulator_run(name):
    """The registered 500-job episode as gym.make gives it: the pending queue reaches hundreds
    of jobs and the window (max_queue = 500) holds them all."""
    env, info, expected = _play_online(name, 1)
    assert env.unwrapped.max_queue == 500
    assert len(expected.records) == 500
    assert max(r.start_time - r.submit_time for r in expected.records) > 0  # jobs queued
    _assert_online_run(env, info, expected)
