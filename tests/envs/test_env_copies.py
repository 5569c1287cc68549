"""``GeoPipe-Online-Elastic-v0``: the agent picks how many data-parallel copies of its
pipeline a job starts with (semantics §3e), masked to the counts that get a placement now;
a heuristic's agent (elastic or not) and the planner play it as the simulator runs them."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.core.units import SECONDS_PER_HOUR
from bacepipe_env.envs import GeoPipeEnv, make_agent, run_episode
from bacepipe_env.errors import ValidationError
from bacepipe_env.experiments.headroom import env_heuristics
from bacepipe_env.policies.registry import make_policy

ELASTIC = "bacepipe_env/GeoPipe-Online-Elastic-v0"
R = 4  # the id's replica_choices


def test_the_id_offers_one_action_per_slot_and_count_then_the_wait() -> None:
    env = gym.make(ELASTIC, n_jobs=30)
    obs, info = env.reset(seed=3)
    base = env.unwrapped
    assert base.replica_choices == R and base.n_place == 30 * R
    assert env.action_space.n == 30 * R + 1
    assert obs["replicas"].shape == (30, R, 3)
    mask = info["action_mask"]
    # the replicas array's legal column is the place actions' mask, slot by slot
    np.testing.assert_array_equal(obs["replicas"][:, :, 0].ravel() == 1.0, mask[: 30 * R])
    assert info["slot_actions"] == base.slot_actions
    assert all(a % R == 0 for a in base.slot_actions)  # every job starts with 1 by default


def test_placing_with_d_copies_starts_d_copies() -> None:
    env = gym.make(ELASTIC, n_jobs=30)
    _, info = env.reset(seed=3)
    base = env.unwrapped
    mask = info["action_mask"]
    counts = [a % R + 1 for a in np.flatnonzero(mask[: base.n_place])]
    d = max(counts)
    assert d > 1, counts  # an idle cluster gives the first job more than one copy
    action = int(np.flatnonzero(mask[: base.n_place])[counts.index(d)])
    job = base.queue_snapshot.job_ids[action // R]
    env.step(action)
    _, placement, _ = base.sim.job_state(job)
    assert placement is not None and placement.n_replicas == d
    assert placement.n_gpus == d * placement.stages


@pytest.mark.parametrize("name", ["sjf", "sjf+finish-aware+elastic", "bace-pipe+elastic"])
def test_a_heuristic_agent_on_the_id_equals_the_simulator(name: str) -> None:
    agent = make_agent(name)
    env = gym.make(ELASTIC, n_jobs=40, **agent.env_kwargs)
    res = run_episode(env, agent, 5)
    assert res.illegal_actions == 0
    scen = env.unwrapped.scenario
    expected = make_policy(name, seed=5).simulate(scen)
    got = env.unwrapped.sim.result()
    assert res.avg_jct_h == pytest.approx(expected.avg_jct / SECONDS_PER_HOUR, rel=1e-12)
    assert [r.placement for r in got.records] == [r.placement for r in expected.records]
    assert got.n_resizes == expected.n_resizes
    assert (expected.n_resizes > 0) == name.endswith("+elastic")


@pytest.mark.parametrize("name", ["sjf", "sjf+finish-aware+elastic"])
def test_the_terminal_info_counts_the_resizes(name: str) -> None:
    """``info["episode_resizes"]`` is the RunResult's ``n_resizes``: the resizes an elastic
    heuristic's rule made (more than 0 on these 40 jobs), 0 for a plain one (issue 44)."""
    agent = make_agent(name)
    env = gym.make(ELASTIC, n_jobs=40, **agent.env_kwargs)
    obs, info = env.reset(seed=5)
    agent.reset(5)
    infos = [info]
    done = False
    while not done:
        action, _ = agent.predict(obs, info=info)  # SB3's (action, state)
        obs, _, terminated, truncated, info = env.step(action)
        infos.append(info)
        done = terminated or truncated
    assert terminated and all("episode_resizes" not in i for i in infos[:-1])
    resizes = info["episode_resizes"]
    assert type(resizes) is int
    assert resizes == env.unwrapped.sim.result().n_resizes
    assert resizes == make_policy(name, seed=5).simulate(env.unwrapped.scenario).n_resizes
    assert (resizes > 0) == name.endswith("+elastic")


def test_the_planner_as_an_agent_equals_its_simulator_run() -> None:
    name = "rollout:sjf+elastic,k=2"
    agent = make_agent(name)
    env = gym.make(ELASTIC, n_jobs=14, **agent.env_kwargs)
    res = run_episode(env, agent.bind(env), 2)
    assert res.illegal_actions == 0
    expected = make_policy(name, seed=2).simulate(env.unwrapped.scenario)
    assert res.avg_jct_h == pytest.approx(expected.avg_jct / SECONDS_PER_HOUR, rel=1e-12)
    chosen = [r.attempts[0].placement.n_replicas for r in env.unwrapped.sim.result().records]
    assert max(chosen) > 1  # the planner started some job with more than one copy


def test_the_id_s_heuristics_include_every_elastic_variant() -> None:
    names = env_heuristics(ELASTIC)
    plain = [n for n in names if not n.endswith("+elastic")]
    assert [n for n in names if n.endswith("+elastic")] == [f"{n}+elastic" for n in plain]
    assert "sjf+finish-aware+elastic" in names


def test_replica_choices_without_copies_is_one_pipeline_per_job() -> None:
    """A world of one pipeline (physical, ``max_replicas`` 1): only the first count of each
    slot is ever legal. (The paper's model refuses ``replica_choices``:
    test_env_replica_choices.py.)"""
    env = GeoPipeEnv("paper", replica_choices=3, max_queue=16, model="physical")
    _, info = env.reset(seed=0)
    mask = info["action_mask"][: env.n_place].reshape(16, 3)
    assert mask[:, 1:].sum() == 0 and mask[:, 0].sum() > 0
    with pytest.raises(ValidationError, match="replica_choices"):
        GeoPipeEnv("paper", replica_choices=-1)


def test_without_previews_every_count_in_range_is_legal_and_places_that_many() -> None:
    """``preview=False`` (the fast mode) tests nothing ahead: every visible job's counts in its
    range (1 .. 4 on this id) are legal, the ``replicas`` array is zeros like the preview
    features, and a place action asks the simulator for the job with that many copies."""
    env = gym.make(ELASTIC, n_jobs=30, preview=False)
    obs, info = env.reset(seed=3)
    base = env.unwrapped
    n_visible = len(base.queue_snapshot.job_ids)
    mask = info["action_mask"][: base.n_place].reshape(30, R)
    assert mask[:n_visible].all() and not mask[n_visible:].any()
    assert not obs["replicas"].any()
    job = base.queue_snapshot.job_ids[0]
    env.step(base.place_action(0, 3))  # slot 0 with 3 copies, on an idle cluster
    _, placement, _ = base.sim.job_state(job)
    assert placement is not None and placement.n_replicas == 3
    rng = np.random.default_rng(0)  # and a whole episode of random legal actions ends
    terminated = truncated = False
    while not (terminated or truncated):
        legal = np.flatnonzero(info["action_mask"])
        _, _, terminated, truncated, info = env.step(int(rng.choice(legal)))
    assert terminated and info["episode_jobs_completed"] == 30
