"""The ``announce_h`` setting (hours before its submit time a job is announced): a scenario
field, a knob of the loader, the samplers and the random generator, validated in one line; it
changes no draw and no dynamics."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bacepipe_env.errors import ScenarioError, ValidationError
from bacepipe_env.scenarios import (
    RandomScenarioGenerator,
    ScenarioSampler,
    build_scenario,
    load_scenario,
    load_scenario_spec,
)
from bacepipe_env.scenarios.loader import check_knobs


def test_the_default_is_no_calendar() -> None:
    for name in ("paper", "online", "fig1"):
        scn = load_scenario(name, seed=0)
        assert scn.announce_h == 0.0 and scn.params["announce_h"] == 0.0


def test_the_file_field_and_the_knob(tmp_path: Path) -> None:
    spec = load_scenario_spec("online")
    spec["announce_h"] = 12
    path = tmp_path / "calendar.json"
    path.write_text(json.dumps(spec))
    scn = load_scenario(path, seed=3)
    assert scn.announce_h == 12.0 and scn.params["announce_h"] == 12.0
    assert load_scenario(path, seed=3, announce_h=2.5).announce_h == 2.5  # the knob wins
    assert load_scenario(path, seed=3, announce_h=0).announce_h == 0.0
    assert check_knobs({"announce_h": 24}) == {"announce_h": 24}


def test_the_calendar_changes_no_draw() -> None:
    for seed in range(3):
        plain = load_scenario("online", seed=seed, n_jobs=50)
        ahead = load_scenario("online", seed=seed, n_jobs=50, announce_h=24)
        assert ahead.jobs == plain.jobs
        assert ahead.params == {**plain.params, "announce_h": 24.0}


def test_the_samplers_and_the_random_generator_carry_it() -> None:
    sampler = ScenarioSampler("online", announce_h=24, n_jobs=20)
    assert sampler.load(0).announce_h == 24.0
    gen = RandomScenarioGenerator(announce_h=6)
    rng = np.random.default_rng(0)
    scn = gen(rng)
    assert scn.announce_h == 6.0
    # the same episode stream as without it (the calendar is no draw)
    plain = RandomScenarioGenerator()(np.random.default_rng(0))
    assert scn.jobs == plain.jobs


BAD = [-1, -1e-9, math.inf, math.nan, 1e6 + 1, "24", True, [24]]


@pytest.mark.parametrize("bad", BAD)
def test_a_bad_field_or_knob_is_one_line(bad: Any) -> None:
    spec = load_scenario_spec("paper")
    spec["announce_h"] = bad
    for make in (
        lambda: build_scenario(spec),
        lambda: load_scenario("paper", announce_h=bad),
        lambda: RandomScenarioGenerator(announce_h=bad),
        lambda: ScenarioSampler("paper", announce_h=bad),
    ):
        with pytest.raises(ValidationError) as err:
            make()
        assert isinstance(err.value, ScenarioError)
        assert err.value.field == "announce_h" and "\n" not in str(err.value)


def test_the_largest_calendar() -> None:
    assert load_scenario("paper", announce_h=1e6).announce_h == 1e6
