"""Misuse of the environment is one clear error naming the argument or the missing call."""

from __future__ import annotations

import pytest

from bacepipe_env.envs.geopipe import GeoPipeEnv
from bacepipe_env.errors import ValidationError


@pytest.mark.parametrize("call", ["action_masks", "render_snapshot", "queue_snapshot", "step"])
def test_a_method_before_reset_says_so(call):
    env = GeoPipeEnv("fig1", max_queue=4)
    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
        attr = getattr(env, call)
        attr(0) if call == "step" else attr() if callable(attr) else None


@pytest.mark.parametrize("options", ["x", 3, ["scenario"], {"scenario_": None}, {1: 2}])
def test_reset_options_must_be_a_dict_of_known_keys(options):
    env = GeoPipeEnv("fig1", max_queue=4)
    with pytest.raises(ValidationError, match="options") as err:
        env.reset(seed=0, options=options)
    assert "\n" not in str(err.value) and len(str(err.value)) <= 200


def test_reset_options_none_and_empty_are_fine():
    env = GeoPipeEnv("fig1", max_queue=4)
    env.reset(seed=0, options=None)
    env.reset(seed=0, options={})


@pytest.mark.parametrize("value", ["no", 1, 0, None])
def test_preview_is_a_bool(value):
    with pytest.raises(ValidationError, match="preview"):
        GeoPipeEnv("fig1", max_queue=4, preview=value)


# ------------------------------------------------------------------------ short errors
def test_an_error_line_stays_short_whatever_the_input():
    from bacepipe_env.errors import shorten

    names = ", ".join(f"dataset-{i}" for i in range(100_000))  # a 95 MB file's worth, scaled
    err = ValidationError("workload.dataset", "x" * 1_000_000, f"unknown; choose from: {names}")
    line = str(err)
    assert "\n" not in line and len(line) <= 235
    assert line.startswith("workload.dataset: unknown; choose from: dataset-0, dataset-1")
    # what was cut is counted: 50 characters kept as 11 + the tail, 39 more
    assert shorten("abcdefghij" * 5, 30) == "abcdefghija... (39 more chars)"
    assert shorten("short", 30) == "short"


# ------------------------------------------------------------- the random env's ranges
@pytest.mark.parametrize(
    ("knob", "value", "needle"),
    [
        ("n_regions", 7, "n_regions: must be a (low, high) pair"),
        ("n_jobs", (1,), "n_jobs: must be a (low, high) pair"),
        ("price_range", (0.1, 0.2, 0.3), "price_range: must be a (low, high) pair"),
        ("arrival_rate_per_h", (0, 0), "arrival_rate_per_h[0]"),
    ],
)
def test_random_env_ranges_are_pairs_with_a_positive_rate(knob, value, needle):
    with pytest.raises(ValidationError) as err:
        GeoPipeEnv("random", max_queue=16, **{knob: value})
    assert needle in str(err.value), str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"max_queue": 10**23}, "max_queue: must be <= 100,000"),
        ({"max_regions": 10**9}, "max_regions: must be <= 1,024"),
    ],
)
def test_the_window_and_the_padding_are_bounded(kwargs, needle):
    """1e23 slots overflowed and 1e9 regions tried to allocate 4.7 GiB: now one line."""
    with pytest.raises(ValidationError, match=needle):
        GeoPipeEnv("paper", **kwargs)
