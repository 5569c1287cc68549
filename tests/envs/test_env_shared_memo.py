"""Envs of one process share what is immutable or memoised (issue 14): the sampler of a
built-in scenario with the same knobs, and through its one cluster object the placement
previews' memo, when their placement policies are equal. What an env observes is the same
alone or beside others."""

from __future__ import annotations

import gc

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import GeoPipeEnv, previews
from bacepipe_env.envs.previews import PlacementPreviewer, memo_key
from bacepipe_env.policies.registry import make_placement
from bacepipe_env.scenarios import load_scenario


def _store(env: GeoPipeEnv) -> object:
    return env.previewer._store


def test_envs_of_one_scenario_share_its_sampler_and_preview_memo():
    a, b = GeoPipeEnv("paper"), GeoPipeEnv("paper")
    c = GeoPipeEnv("paper", bandwidth_scale=0.5)  # other knobs: another sampler
    d = GeoPipeEnv("paper", placement="pathfinder+partial")  # another placement: another memo
    assert a.generator is b.generator and a.generator is not c.generator
    for env in (a, b, c, d):
        env.reset(seed=0)
    assert _store(a) is _store(b)
    assert _store(d) is not _store(a)  # the same cluster, answers of another policy
    assert _store(c) is not _store(a)  # another cluster object
    assert len(a.previewer) >= 1
    # b's first decision is a's: its previews were answered from a's memo
    assert len(b.previewer) == len(a.previewer)


def test_knobs_are_told_apart_by_type_and_unhashable_ones_are_not_shared():
    assert GeoPipeEnv("paper", n_jobs=4).generator is GeoPipeEnv("paper", n_jobs=4).generator
    assert GeoPipeEnv("paper", bandwidth_scale=1).generator is not (
        GeoPipeEnv("paper", bandwidth_scale=1.0).generator
    )
    outage = {"outages": [("EU-West", 1.0, 2.0)]}  # a list: cannot be a key
    assert GeoPipeEnv("paper", **outage).generator is not GeoPipeEnv("paper", **outage).generator


def test_memo_keys():
    assert memo_key(make_placement("pathfinder")) == memo_key(make_placement("pathfinder"))
    assert memo_key(make_placement("pathfinder")) != memo_key(make_placement("pathfinder+partial"))
    assert memo_key(make_placement("cr-ldf")) == memo_key(make_placement("cr-ldf"))
    assert memo_key(make_placement("cr-ldf")) != memo_key(make_placement("lcf"))

    class Unhashable:
        pure = True
        name = "u"
        __hash__ = None  # type: ignore[assignment]  # as a dataclass with eq has

    assert memo_key(Unhashable()) is None  # kept to itself


def test_different_memo_sizes_keep_their_own_stores():
    scenario = load_scenario("paper")
    from bacepipe_env.core.simulator import Simulator

    sim = Simulator(scenario, make_placement("pathfinder"))
    big = PlacementPreviewer(make_placement("pathfinder"))
    none = PlacementPreviewer(make_placement("pathfinder"), memo_size=0)
    window = sim.next_decision()
    big(sim, window), none(sim, window)
    assert len(big) >= 1 and len(none) == 0


@pytest.mark.parametrize(
    "env_id",
    ["bacepipe_env/GeoPipe-v2", "bacepipe_env/GeoPipe-Random-v2", "bacepipe_env/GeoPipe-Online-v1"],
)
def test_an_env_observes_the_same_alone_and_in_a_vector_env(env_id):
    """Three envs stepped together through make_vec (sharing memos) against each stepped
    alone in a fresh previewer-free state of its own: every observation equal, bit for bit."""
    kwargs = {"n_jobs": 40} if "Online" in env_id else {}
    n, steps, seeds = 3, 150, [11, 12, 13]
    venv = gym.make_vec(env_id, num_envs=n, vectorization_mode="sync", **kwargs)
    rng = np.random.default_rng(5)
    actions = []
    obs, info = venv.reset(seed=seeds)
    together = [obs]
    for _ in range(steps):
        act = []
        for m in info["action_mask"]:
            legal = np.flatnonzero(m)
            act.append(int(legal[rng.integers(len(legal))]) if len(legal) else 0)
        actions.append(act)
        obs, _, _, _, info = venv.step(np.array(act))
        together.append(obs)
    for i in range(n):
        previews._SHARED.clear()  # nothing remembered from the vector env's run
        env = gym.make(env_id, **kwargs)
        o, _ = env.reset(seed=seeds[i])
        alone = [o]
        autoreset = False
        for act in actions:
            if autoreset:  # make_vec's next-step autoreset: this step only resets
                o, _ = env.reset()
                autoreset = False
            else:
                o, _, terminated, truncated, _ = env.step(act[i])
                autoreset = terminated or truncated
            alone.append(o)
        for t, (o_vec, o_one) in enumerate(zip(together, alone)):
            for key in o_one:
                assert np.array_equal(o_vec[key][i], o_one[key]), (i, t, key)


def test_a_random_env_lets_its_old_clusters_stores_go():
    env = gym.make("bacepipe_env/GeoPipe-Random-v2")
    env.reset(seed=0)
    for _ in range(30):
        env.reset()
    gc.collect()
    assert len(previews._SHARED) <= 3  # the current cluster's, not thirty
