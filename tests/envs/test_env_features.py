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
from bacepipe_env.envs.copies import copy_options
from bacepipe_env.envs.features import (
    BANDWIDTH_LAYERS,
    GRID_FEATURES,
    OPTIONAL_FEATURES,
    QUEUE_FEATURES,
    REGION_FEATURES,
    SUMMARY_FEATURES,
    active_features,
    feature,
    flat_space,
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
        for c in f.columns + f.extra:
            assert f"`{c.name}`" in m.group(1)
    # an optional array's row names the keyword that turns it on
    assert "| `grid` | (max_regions, 2) |" in m.group(1)
    assert "(optional: `grid_features=True`)" in m.group(1)
    assert "| `region_faults` | (max_regions, 1) |" in m.group(1)
    assert "| `link_faults` | (1, max_regions, max_regions) |" in m.group(1)
    assert m.group(1).count("(optional: `fault_features=True`)") == 2
    assert "| `running_jobs` | (preempt_window, 10) |" in m.group(1)
    assert "(optional: `preempt_window > 0`)" in m.group(1)
    assert "| `announced` | (announce_window, 6) |" in m.group(1)
    assert "(optional: `announce_window > 0`)" in m.group(1)
    assert "| `replicas` | (max_queue, replica_choices, 3) |" in m.group(1)
    assert "(optional: `replica_choices > 0`)" in m.group(1)
    # the optional columns follow their array's own, numbered on, and name their keyword
    assert m.group(1).count("; 3 more columns with `deadline_features=True`") == 2
    assert "| `queue` | 11 | `has_deadline` |" in m.group(1)
    assert "| `announced` | 8 | `log_slack_hours` |" in m.group(1)


def test_the_table_is_well_formed():
    assert [f.name for f in FEATURES] == [
        "regions",
        "bandwidth",
        "queue",
        "summary",
        "grid",
        "region_faults",
        "link_faults",
        "running",
        "release",
        "wait_preview",
        "running_jobs",
        "announced",
        "replicas",
    ]
    for f in FEATURES:
        assert f.description and callable(f.encode)
        names = f.column_names
        assert len(set(names)) == len(names), f.name
        assert all(c.description for c in f.columns)
        axis = 0 if f.name in ("bandwidth", "link_faults") else -1  # the axis the columns name
        assert f.column_axis == axis
        assert f.shape[axis] == len(f.columns), f.name
    assert feature("queue").resolve(max_queue=7, max_regions=3) == (7, 11)
    assert feature("bandwidth").resolve(max_queue=7, max_regions=3) == (2, 3, 3)
    assert feature("grid").resolve(max_queue=7, max_regions=3) == (3, 2)
    assert feature("running_jobs").resolve(7, 3, preempt_window=5) == (5, 10)
    assert feature("announced").resolve(7, 3, announce_window=4) == (4, 6)
    assert feature("replicas").resolve(7, 3, replica_choices=4) == (7, 4, 3)
    with pytest.raises(KeyError):
        feature("nope")


def test_grid_is_the_first_optional_array_and_the_one_bounded_below_by_minus_inf():
    assert OPTIONAL_FEATURES == (
        "grid_features",
        "fault_features",
        "running_features",
        "preempt_window",
        "announce_window",
        "replica_choices",
        "deadline_features",  # optional columns, not an array
    )
    assert [(f.name, f.enabled_by) for f in FEATURES if f.enabled_by] == [
        ("grid", "grid_features"),
        ("region_faults", "fault_features"),
        ("link_faults", "fault_features"),
        ("running", "running_features"),
        ("release", "running_features"),
        ("wait_preview", "running_features"),
        ("running_jobs", "preempt_window"),
        ("announced", "announce_window"),
        ("replicas", "replica_choices"),
    ]
    assert feature("grid").column_names == GRID_FEATURES == ("price_now", "carbon_now")
    lows = {(f.name, c.name): c.low for f in FEATURES for c in f.columns + f.extra}
    assert lows.pop(("grid", "price_now")) == -np.inf  # negative hourly prices are real
    for name in ("queue", "announced"):  # an overdue job's time to its deadline, its slack
        assert lows.pop((name, "log_to_deadline_hours")) == -np.inf
        assert lows.pop((name, "log_slack_hours")) == -np.inf
    assert set(lows.values()) == {0.0}
    assert [f.name for f in active_features()] == ["regions", "bandwidth", "queue", "summary"]
    assert [f.name for f in active_features({"grid_features"})][-1] == "grid"
    with pytest.raises(KeyError):
        active_features({"nope"})


def test_the_grid_space_bounds_only_price_now_below():
    box = observation_space(4, 3, 4, {"grid_features"})["grid"]
    assert box.shape == (3, 2) and box.dtype == np.float32
    assert np.all(box.low[:, 0] == -np.inf) and np.all(box.low[:, 1] == 0.0)
    assert np.all(box.high == np.inf)
    assert box.contains(np.array([[-0.9, 0.5]] * 3, dtype=np.float32))
    assert not box.contains(np.array([[0.5, -0.1]] * 3, dtype=np.float32))
    flat = flat_space(observation_space(4, 3, 4, {"grid_features"}))
    assert flat.shape == (gym.spaces.flatdim(observation_space(4, 3, 4, {"grid_features"})),)
    assert int(np.sum(flat.low == -np.inf)) == 3  # the three regions' price_now


def test_without_grid_the_v1_spaces_are_unchanged():
    """Pretrained models depend on them: scalar bounds [0, inf), the same keys and shapes."""
    for space in (observation_space(16, 6, 16), flat_space(observation_space(16, 6, 16))):
        boxes = space.spaces.values() if isinstance(space, gym.spaces.Dict) else [space]
        for box in boxes:
            if isinstance(box, gym.spaces.Box):
                assert np.all(box.low == 0.0) and np.all(box.high == np.inf)
    assert set(observation_space(16, 6, 16).spaces) == {
        "regions",
        "bandwidth",
        "queue",
        "summary",
        "action_mask",
    }
    assert flat_space(observation_space(16, 6, 16)).shape == (16 + 72 + 176 + 30 + 6,)


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
    enabled = [k for k in OPTIONAL_FEATURES if ENV_IDS[env_id].get(k)]
    active = active_features(enabled)
    w, a, r = u.preempt_window, u.announce_window, u.replica_choices
    assert space == observation_space(u.max_queue, u.max_regions, u.n_actions, enabled, w, a, r)
    assert u.encoder.features == active
    obs, _ = env.reset(seed=0)
    assert list(obs) == [f.name for f in active] + ["action_mask"]
    for f in active:
        shape = f.resolve(u.max_queue, u.max_regions, w, a, r, enabled)
        assert space[f.name].shape == shape
        assert obs[f.name].shape == shape and obs[f.name].dtype == np.float32
    assert space["action_mask"] == gym.spaces.MultiBinary(u.n_actions)


def test_the_encoder_runs_the_tables_functions():
    """Each array of the observation is what the table's function computes on the decision."""
    from bacepipe_env.envs.features import Decision

    env = GeoPipeEnv(
        "paper",
        grid_features=True,
        fault_features=True,
        running_features=True,
        preempt_window=4,
        announce_window=4,
        announce_h=24.0,
        allow_wait=True,
        replica_choices=2,
        model="physical",
        max_replicas=2,
    )
    obs, _ = env.reset(seed=3)
    obs, *_ = env.step(0)
    window = env.queue_snapshot.job_ids
    previews = env.previewer(env.sim, window)
    copies = copy_options(env.sim, window, previews, 2)
    assert any(row[1] is not None for row in copies)  # the replicas array is not all zeros
    d = Decision(env.sim, env.queue_snapshot, previews, None, env.preemption_window, copies)
    assert list(obs) == [f.name for f in FEATURES] + ["action_mask"]
    for f in FEATURES:
        np.testing.assert_array_equal(f.encode(env.encoder, d), obs[f.name], err_msg=f.name)


@pytest.mark.parametrize("grid", [False, True, "faults"], ids=["v1", "grid", "faults"])
def test_flat_is_the_dict_flattened_in_key_order(grid):
    kw = {"fault_features": True, "grid_features": True} if grid == "faults" else {}
    kw.setdefault("grid_features", bool(grid))
    d = GeoPipeEnv("paper", **kw)
    f = GeoPipeEnv("paper", observation="flat", **kw)
    od, _ = d.reset(seed=1)
    of, _ = f.reset(seed=1)
    assert np.array_equal(of, gym.spaces.flatten(d.observation_space, od))
    assert list(d.observation_space.spaces) == sorted(od)  # alphabetical, as the docs say
    # the flat Box's bounds are the Dict's, flattened alike
    low = gym.spaces.flatten_space(d.observation_space).low
    assert np.array_equal(f.observation_space.low, low)
    assert f.observation_space.contains(of)
