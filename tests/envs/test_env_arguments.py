"""Issue 25: a bad argument of the environment is one short line naming it, raised by
``gym.make`` itself (Gymnasium re-raises a TypeError with every kwarg appended, 300 characters;
a ValidationError, a ValueError, passes through unchanged).

- the fault knobs ``outages`` and ``link_changes``, lists of tuples: a string instead of the
  list, an entry of the wrong length, an entry that is not a sequence, a wrong type inside;
- an unknown keyword, for every id: the keyword, the closest valid name, a few of the valid
  ones;
- an action that is not one integer (``Discrete.contains``'s types): ``[[0]]`` was action 0;
- ``scenario=`` as any ``os.PathLike``.
"""

from __future__ import annotations

import enum
import os
import pathlib

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # registers the ids
from bacepipe_env.envs import ENV_IDS, GeoPipeEnv
from bacepipe_env.errors import ScenarioError, ValidationError

pytestmark = pytest.mark.filterwarnings("ignore:.*maximum value is infinity.*")

PAPER = "bacepipe_env/GeoPipe-v2"
FIG1 = "bacepipe_env/GeoPipe-Fig1-v2"
RANDOM = "bacepipe_env/GeoPipe-Random-v2"
ONLINE = "bacepipe_env/GeoPipe-Online-v1"
#: The longest line the issue allows for these errors.
SHORT = 160


def _make_error(env_id, **kwargs):
    """The exception ``gym.make(env_id, **kwargs)`` raises, checked to be a ValidationError
    line of its own: not wrapped by Gymnasium, one line, shorter than :data:`SHORT`."""
    with pytest.raises(ValidationError) as info:
        gym.make(env_id, **kwargs)
    err = info.value
    assert isinstance(err, ValueError) and not isinstance(err, TypeError)
    assert err.__cause__ is None
    line = str(err)
    assert "\n" not in line and len(line) < SHORT, line
    assert "raised from the environment creator" not in line, line
    return err


# ------------------------------------------------------------------- the fault knobs
def test_outages_as_a_string_names_the_knob():
    """The user's case: ``"EU-West:0:1"`` was a bare 'not enough values to unpack'."""
    err = _make_error(ONLINE, outages="EU-West:0:1")
    assert str(err) == (
        "outages: must be a list of (region, start_h, end_h) tuples (got 'EU-West:0:1')"
    )
    assert err.field == "outages" and err.value == "EU-West:0:1"


def test_a_link_change_of_two_values_names_the_entry():
    """The user's second case: a two-element entry."""
    err = _make_error(ONLINE, link_changes=[("EU-West", "US-East-2")])
    assert str(err) == (
        "link_changes[0]: has 2 values; give 5: (src, dst, factor, start_h, end_h) "
        "(got ('EU-West', 'US-East-2'))"
    )


@pytest.mark.parametrize(
    ("kwargs", "line"),
    [
        (
            {"outages": 5},
            "outages: must be a list of (region, start_h, end_h) tuples (got 5)",
        ),
        (
            {"outages": {"EU-West": (0, 1)}},
            "outages: must be a list of (region, start_h, end_h) tuples (got {'EU-West': (0, 1)})",
        ),
        (
            {"link_changes": "EU-West,US-East-2,0.5,0,1"},
            "link_changes: must be a list of (src, dst, factor, start_h, end_h) tuples "
            "(got 'EU-West,US-East-2,0.5,0,1')",
        ),
        (  # one entry given bare, not in a list: its first value is not a tuple
            {"outages": ("EU-West", 0, 1)},
            "outages[0]: must be a (region, start_h, end_h) tuple (got 'EU-West')",
        ),
        (
            {"outages": [5]},
            "outages[0]: must be a (region, start_h, end_h) tuple (got 5)",
        ),
        (
            {"outages": [("EU-West", 0, 1), "US-East-2:0:1"]},
            "outages[1]: must be a (region, start_h, end_h) tuple (got 'US-East-2:0:1')",
        ),
        (
            {"outages": [("EU-West", 0, 1, 2)]},
            "outages[0]: has 4 values; give 3: (region, start_h, end_h) (got ('EU-West', 0, 1, 2))",
        ),
        (
            {"link_changes": [None]},
            "link_changes[0]: must be a (src, dst, factor, start_h, end_h) tuple (got None)",
        ),
    ],
    ids=[
        "int",
        "dict",
        "link-string",
        "bare-entry",
        "int-entry",
        "string-entry",
        "4-values",
        "none",
    ],
)
def test_a_fault_knob_of_the_wrong_shape_is_one_line(kwargs, line):
    assert str(_make_error(PAPER, **kwargs)) == line


@pytest.mark.parametrize(
    ("kwargs", "line"),
    [
        ({"outages": [(0, 0, 1)]}, "outages[0].region: must be a region name (got 0)"),
        ({"outages": [("EU-West", "0", 1)]}, "outages[0].start_h: must be a number (got '0')"),
        ({"outages": [("EU-West", 0, None)]}, "outages[0].end_h: must be a number (got None)"),
        ({"outages": [("EU-West", True, 2)]}, "outages[0].start_h: must be a number (got True)"),
        (
            {"link_changes": [("EU-West", 3, 0.5, 0, 1)]},
            "link_changes[0].dst: must be a region name (got 3)",
        ),
        (
            {"link_changes": [("EU-West", "EA-East", "half", 0, 1)]},
            "link_changes[0].factor: must be a number (got 'half')",
        ),
    ],
    ids=["region-int", "start-str", "end-none", "start-bool", "dst-int", "factor-str"],
)
def test_a_wrong_type_inside_an_entry_names_the_field(kwargs, line):
    assert str(_make_error(PAPER, **kwargs)) == line


@pytest.mark.parametrize(
    ("kwargs", "line"),
    [
        (
            {"outages": [("Mars", 0, 1)]},
            "outages[0].region: unknown region; known: EU-West, US-East-2, EU-Central, "
            "EA-East, SEA-South, OC-East (got 'Mars')",
        ),
        (
            {"outages": [("EU-West", 5, 2)]},
            "outages[0].end_h: must be after start_h (5) (got 2)",
        ),
        (
            {"link_changes": [("EU-West", "EU-West", 0.5, 0, 1)]},
            "link_changes[0].dst: a link joins two different regions (got 'EU-West')",
        ),
    ],
    ids=["unknown-region", "end-before-start", "same-region"],
)
def test_the_loaders_checks_name_the_env_knob_not_the_cli_flag(kwargs, line):
    """The loader names a fault entry after the command line's flag (``--outage[0]``); through
    the env it is the knob's name."""
    err = _make_error(PAPER, **kwargs)
    assert isinstance(err, ScenarioError)
    assert str(err) == line


def test_every_documented_form_of_the_fault_knobs_is_accepted():
    """Tuples or lists, numpy numbers: the same outage and link change in every form."""
    forms = [
        {"outages": [("EU-West", 10, 50)], "link_changes": [("US-East-2", "EA-East", 0.5, 5, 30)]},
        {
            "outages": [["EU-West", 10.0, 50.0]],
            "link_changes": [["US-East-2", "EA-East", 0.5, 5, 30]],
        },
        {
            "outages": (("EU-West", np.int64(10), np.float64(50)),),
            "link_changes": (("US-East-2", "EA-East", np.float32(0.5), 5, 30),),
        },
    ]
    faults = []
    for kwargs in forms:
        env = gym.make(PAPER, **kwargs)
        env.reset(seed=0)
        faults.append(env.unwrapped.scenario.faults)
    assert faults[0].outages[0].region == 0  # EU-West
    assert (faults[0].outages[0].start, faults[0].outages[0].end) == (36_000.0, 180_000.0)
    assert faults[0].links[0].factor == 0.5
    assert faults[1] == faults[0] and faults[2] == faults[0]


@pytest.mark.parametrize(
    ("kwargs", "line"),
    [
        ({"gpu_choices": 5}, "gpu_choices: must be a list of numbers (got 5)"),
        ({"gpu_choices": "16,32"}, "gpu_choices: must be a list of numbers (got '16,32')"),
        ({"intra_gbps_choices": 25.0}, "intra_gbps_choices: must be a list of numbers (got 25.0)"),
        ({"n_regions": "4-8"}, "n_regions: must be a (low, high) pair (got '4-8')"),
    ],
    ids=["gpus-int", "gpus-str", "intra-float", "pair-str"],
)
def test_the_random_envs_list_knobs_are_one_line(kwargs, line):
    """``gpu_choices=5`` was "'int' object is not iterable", 239 characters through gym.make."""
    assert str(_make_error(RANDOM, **kwargs)) == line


# ------------------------------------------------------------------- unknown keywords
@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_an_unknown_keyword_is_one_line_for_every_id(env_id):
    """Was a 282-character TypeError on Random-v2 (Gymnasium appends every kwarg)."""
    err = _make_error(env_id, bogus=1)
    assert err.field == "bogus" and err.value == 1
    line = str(err)
    assert line.startswith("bogus: unknown keyword; env arguments: scenario, policy, placement, ")
    knobs = "'random': n_regions, n_jobs" if env_id == RANDOM else "the scenario: bandwidth_scale"
    assert f"; knobs of {knobs}" in line, line
    assert line.endswith("more) (got 1)"), line


def test_the_unknown_keyword_line_of_the_random_id():
    err = _make_error(RANDOM, bogus=1)
    assert str(err) == (
        "bogus: unknown keyword; env arguments: scenario, policy, placement, ... (22 more); "
        "knobs of 'random': n_regions, n_jobs, ... (14 more) (got 1)"
    )
    assert len(str(err)) == 142


@pytest.mark.parametrize(
    ("env_id", "keyword", "closest"),
    [(FIG1, "max_qeue", "max_queue"), (RANDOM, "n_job", "n_jobs"), (PAPER, "outage", "outages")],
)
def test_a_typo_names_the_closest_keyword(env_id, keyword, closest):
    line = str(_make_error(env_id, **{keyword: 3}))
    assert line.startswith(f"{keyword}: unknown keyword (did you mean {closest}?); "), line


def test_a_knob_of_another_scenario_is_an_unknown_keyword():
    """``outages`` is a knob of the named scenarios, not of the random generator."""
    line = str(_make_error(RANDOM, outages=[("R0", 0, 1)]))
    assert line.startswith("outages: unknown keyword; env arguments: "), line
    assert "knobs of 'random': n_regions" in line


def test_a_huge_keyword_and_value_keep_the_line_short():
    err = _make_error(PAPER, **{"x" * 500: "y" * 10_000})
    line = str(err)
    assert line.startswith("xxxxxxxxxxxxxxxxxxxx... (480 more chars): unknown keyword; ")
    assert "env arguments: scenario, policy, placement" in line
    assert line.endswith("(got 'yyyyyy... (9,995 more chars))")


def test_a_scenario_knob_with_a_scenario_object_says_so(tiny_scenario):
    with pytest.raises(ValidationError) as err:
        GeoPipeEnv(tiny_scenario, max_queue=3, n_jobs=2)
    assert str(err.value) == "n_jobs: a scenario knob: give a named scenario for it (got 2)"
    with pytest.raises(ValidationError) as err:
        GeoPipeEnv(tiny_scenario, max_queue=3, bogus=2)
    line = str(err.value)
    assert line.startswith("bogus: unknown keyword; env arguments: scenario, policy, placement, ")
    assert "knobs of" not in line and "\n" not in line and len(line) < SHORT


def test_every_argument_and_knob_is_still_accepted():
    """The check lets every valid keyword through: an env argument and a knob, named and random."""
    env = gym.make(FIG1, max_queue=3, info="full", n_jobs=2)
    env.reset(seed=0)
    assert env.unwrapped.max_queue == 3 and len(env.unwrapped.scenario.jobs) == 2
    env = gym.make(RANDOM, n_jobs=(2, 3), gpu_choices=[16], max_queue=4)
    env.reset(seed=0)
    cluster = env.unwrapped.scenario.cluster
    assert env.unwrapped.max_queue == 4 and cluster.capacity == (16,) * cluster.n_regions
    assert len(env.unwrapped.scenario.jobs) in (2, 3)


# ---------------------------------------------------------------------------- actions
BAD_ACTIONS = {
    "2-d array": (np.array([[0]]), "not an array of shape (1, 1) (got array([[0]]))"),
    "1-element array": (np.array([0]), "not an array of shape (1,) (got array([0]))"),
    "vector": (np.array([1, 2]), "not an array of shape (2,) (got array([1, 2]))"),
    "float": (1.5, "not float (got 1.5)"),
    "whole float": (0.0, "not float (got 0.0)"),
    "numpy float": (np.float32(2.7), "not float32 (got np.float32(2.7))"),
    "0-d float array": (np.array(1.0), "not a 0-d float64 array (got array(1.))"),
    "bool": (True, "not bool (got True)"),
    "numpy bool": (np.bool_(False), "not bool (got np.False_)"),
    "string": ("0", "not str (got '0')"),
    "none": (None, "not None (got None)"),
}
ACTION_START = "action: must be one integer (an int, a numpy integer or a 0-d integer array), "


@pytest.mark.parametrize("mode", ["fallback", "raise"])
@pytest.mark.parametrize("which", list(BAD_ACTIONS))
def test_an_action_that_is_not_one_integer_is_one_line(which, mode):
    """``np.array([[0]])`` was played as action 0; now, under either ``illegal_action`` mode,
    a ValidationError naming ``action`` and nothing happens."""
    action, tail = BAD_ACTIONS[which]
    env = gym.make(FIG1, illegal_action=mode)
    twin = gym.make(FIG1, illegal_action=mode)
    env.reset(seed=0)
    twin.reset(seed=0)
    with pytest.raises(ValidationError) as err:
        env.step(action)
    line = str(err.value)
    assert line == ACTION_START + tail
    assert err.value.field == "action"
    assert "\n" not in line and len(line) < SHORT
    # nothing was played: the env goes on exactly as its twin
    o1, r1, *_ = env.step(1)
    o2, r2, *_ = twin.step(1)
    assert all(np.array_equal(o1[k], o2[k]) for k in o1) and r1 == r2


class Slot(enum.IntEnum):
    SECOND = 1


@pytest.mark.parametrize(
    "action",
    [
        1,
        np.int64(1),
        np.int32(1),
        np.uint8(1),
        np.array(1),
        np.array(1, dtype=np.int16),
        Slot.SECOND,
    ],
    ids=repr,
)
def test_the_integer_types_of_discrete_contains_are_played(action):
    env = gym.make(FIG1, info="full")
    twin = gym.make(FIG1, info="full")
    env.reset(seed=0)
    twin.reset(seed=0)
    assert env.action_space.contains(action)
    o1, r1, _, _, info = env.step(action)
    o2, r2, *_ = twin.step(1)
    assert info["illegal_action"] is False
    assert all(np.array_equal(o1[k], o2[k]) for k in o1) and r1 == r2


@pytest.mark.parametrize("action", [99, -1, 2**70, np.int64(7)], ids=repr)
def test_an_illegal_integer_still_falls_back(action):
    """Out of range or an empty slot: the documented fallback to the first legal action."""
    env = gym.make(FIG1)
    env.reset(seed=0)
    *_, info = env.step(action)
    assert info["illegal_action"] is True


def test_vector_envs_pass_numpy_integers():
    """Gymnasium's SyncVectorEnv and SB3's DummyVecEnv hand each env a numpy integer."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    sync = gym.make_vec(FIG1, num_envs=2, vectorization_mode="sync")
    sync.reset(seed=0)
    _, _, _, _, info = sync.step(np.array([1, 0]))
    assert info["illegal_action"].tolist() == [False, False]
    dummy = DummyVecEnv([lambda: gym.make(FIG1), lambda: gym.make(FIG1)])
    dummy.seed(0)
    dummy.reset()
    *_, infos = dummy.step(np.array([1, 0]))
    assert [i["illegal_action"] for i in infos] == [False, False]


def test_maskable_ppo_predictions_are_played():
    """MaskablePPO's ``predict`` on one observation gives a 0-d integer array."""
    from sb3_contrib import MaskablePPO

    env = gym.make(FIG1)
    model = MaskablePPO("MultiInputPolicy", env, n_steps=8, batch_size=8, seed=0, device="cpu")
    obs, info = env.reset(seed=0)
    action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=True)
    assert isinstance(action, np.ndarray) and action.ndim == 0
    *_, info = env.step(action)
    assert info["illegal_action"] is False


# ------------------------------------------------------------------ scenario= as a path
class _PathLike:
    """An ``os.PathLike`` that is not a ``pathlib.Path``."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __fspath__(self) -> str:
        return self.path


@pytest.mark.parametrize("wrap", [pathlib.Path, _PathLike], ids=["Path", "PathLike"])
def test_a_scenario_file_as_a_pathlike_is_the_string_form(wrap):
    """The env passes the path on unchanged; the loader reads it as it reads the string."""
    path = str(pathlib.Path(bacepipe_env.__file__).parent / "scenarios" / "data" / "fig1.json")
    given = wrap(path)
    assert isinstance(given, os.PathLike)
    by_str = gym.make(FIG1, scenario=path, bandwidth_scale=0.5)
    by_path = gym.make(FIG1, scenario=given, bandwidth_scale=0.5)
    assert by_path.unwrapped.generator.source is given  # passed on unchanged
    for seed in (0, 1):
        o1, _ = by_str.reset(seed=seed)
        o2, _ = by_path.reset(seed=seed)
        assert all(np.array_equal(o1[k], o2[k]) for k in o1)
        for action in (1, 0, 0, 0):
            if by_str.unwrapped.sim.done:
                break
            o1, r1, t1, *_ = by_str.step(action)
            o2, r2, t2, *_ = by_path.step(action)
            assert all(np.array_equal(o1[k], o2[k]) for k in o1) and (r1, t1) == (r2, t2)


def test_a_missing_scenario_path_is_one_line(tmp_path):
    err = _make_error(FIG1, scenario=tmp_path / "nowhere.json")
    assert err.field == "scenario"
    assert "no built-in scenario or file by that name" in str(err)
