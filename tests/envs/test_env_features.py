"""The observation's feature table: the encoder, the spaces, the docs and the column names all
come from ``bacepipe_env.envs.features.FEATURES``."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import ENV_IDS, FEATURES, GeoPipeEnv
from bacepipe_env.envs import geopipe as geopipe_module
from bacepipe_env.envs.features import (
    BANDWIDTH_LAYERS,
    QUEUE_FEATURES,
    REGION_FEATURES,
    SUMMARY_FEATURES,
    feature,
    markdown_table,
    observation_space,
)

pytestmark = pytest.mark.filterwarnings("ignore:.*maximum value is infinity.*")

DOCS = Path(__file__).resolve().parents[2] / "docs" / "environment.md"


def test_the_docs_carry_the_generated_observation_tables():
    text = DOCS.read_text()
    m = re.search(r"<!-- features:begin[^>]*-->\n(.*?)<!-- features:end -->", text, re.DOTALL)
    assert m, "docs/environment.md lost its features markers"
    assert m.group(1) == markdown_table(), (
        "the Observation tables of docs/environment.md are stale: paste "
        "bacepipe_env.envs.features.markdown_table() between the markers"
    )
    for f in FEATURES:
        for c in f.columns:
            assert f"`{c.name}`" in m.group(1)


def test_the_table_is_well_formed():
    assert [f.name for f in FEATURES] == ["regions", "bandwidth", "queue", "summary"]
    for f in FEATURES:
        assert f.description and callable(f.encode)
        names = f.column_names
        assert len(set(names)) == len(names), f.name
        assert all(c.description for c in f.columns)
        axis = 0 if f.name == "bandwidth" else -1  # the axis the columns name
        assert f.shape[axis] == len(f.columns), f.name
    assert feature("queue").resolve(max_queue=7, max_regions=3) == (7, 11)
    assert feature("bandwidth").resolve(max_queue=7, max_regions=3) == (2, 3, 3)
    with pytest.raises(KeyError):
        feature("nope")


def test_column_names_are_the_public_tuples():
    assert feature("regions").column_names == REGION_FEATURES
    assert feature("bandwidth").column_names == BANDWIDTH_LAYERS == ("residual", "capacity")
    assert feature("queue").column_names == QUEUE_FEATURES
    assert feature("summary").column_names == SUMMARY_FEATURES
    # still importable where they always were
    assert geopipe_module.QUEUE_FEATURES is QUEUE_FEATURES
    assert geopipe_module.REGION_FEATURES is REGION_FEATURES
    assert geopipe_module.SUMMARY_FEATURES is SUMMARY_FEATURES


@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_spaces_and_observations_follow_the_table(env_id):
    env = gym.make(env_id, allow_wait=True)
    u = env.unwrapped
    space = env.observation_space
    assert space == observation_space(u.max_queue, u.max_regions, u.n_actions)
    obs, _ = env.reset(seed=0)
    assert list(obs) == [f.name for f in FEATURES] + ["action_mask"]
    for f in FEATURES:
        shape = f.resolve(u.max_queue, u.max_regions)
        assert space[f.name].shape == shape
        assert obs[f.name].shape == shape and obs[f.name].dtype == np.float32
    assert space["action_mask"] == gym.spaces.MultiBinary(u.n_actions)


def test_the_encoder_runs_the_tables_functions():
    """Each array of the observation is what the table's function computes on the decision."""
    from bacepipe_env.envs.features import Decision

    env = GeoPipeEnv("paper")
    obs, _ = env.reset(seed=3)
    obs, *_ = env.step(0)
    d = Decision(env.sim, env.queue_snapshot, env.previewer(env.sim, env.queue_snapshot.job_ids))
    for f in FEATURES:
        np.testing.assert_array_equal(f.encode(env.encoder, d), obs[f.name], err_msg=f.name)


def test_flat_is_the_dict_flattened_in_key_order():
    d = GeoPipeEnv("paper")
    f = GeoPipeEnv("paper", observation="flat")
    od, _ = d.reset(seed=1)
    of, _ = f.reset(seed=1)
    assert np.array_equal(of, gym.spaces.flatten(d.observation_space, od))
    assert list(d.observation_space.spaces) == sorted(od)  # alphabetical, as the docs say
