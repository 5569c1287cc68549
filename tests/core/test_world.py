"""The world's one home: the typed ``World`` and its ``KNOBS`` table (issue 26).

Checked here: the table and the dataclass agree; each value is validated by its row, with a
one-line error naming the field (or the file key, or the flag); the docs' table and the CLI's
flags are made from the table; a scenario's ``world`` loads it again in the same world."""

from __future__ import annotations

import csv
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bacepipe_env import load_scenario
from bacepipe_env.cli import main
from bacepipe_env.core.admission import ADMISSION_RULES
from bacepipe_env.core.world import KNOBS, World, knob_table
from bacepipe_env.errors import ScenarioError, ValidationError
from bacepipe_env.policies import bace_pipe
from bacepipe_env.policies.registry import make_policy

DOCS = Path(__file__).parents[2] / "docs" / "scenarios.md"


def test_the_docs_table_is_the_one_made_from_knobs() -> None:
    text = DOCS.read_text()
    block = re.search(r"<!-- knobs:begin -->\n(.*?)<!-- knobs:end -->", text, re.S)
    assert block is not None, "docs/scenarios.md lost its knobs block"
    assert block.group(1) == knob_table()
    # one row per knob, in the table's order
    names = re.findall(r"^\| `(\w+)` \|", block.group(1), re.M)
    assert names == list(KNOBS)


def test_world_fields_are_the_table_rows_with_the_same_defaults() -> None:
    fields = dataclasses.fields(World)
    assert [f.name for f in fields] == list(KNOBS)
    world = World()
    for name, knob in KNOBS.items():
        assert getattr(world, name) == knob.default, name
    assert world.changed() == {}


def test_a_world_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        World().admission = "full"  # type: ignore[misc]


@pytest.mark.parametrize(
    "knobs,line",
    [
        ({"admission": "eager"}, "admission: unknown rule; choose from: "),
        ({"prices": "monthly"}, "prices: unknown price model; choose from: flat, hourly"),
        ({"ignore_memory": 1}, "ignore_memory: must be true or false"),
        ({"start_hour": 8760}, "start_hour: must be in [0, 8760) (an hour of 2023) or 'random'"),
        ({"gpu_failure_rate": -1.0}, "gpu_failure_rate: must be in [0, 1] per GPU-hour"),
        ({"max_preemptions": 2.5}, "max_preemptions: must be a whole number"),
        ({"preempt_checkpoint_s": "later"}, "preempt_checkpoint_s: must be seconds or "),
        ({"announce_h": float("nan")}, "announce_h: "),
        ({"outages": [("EU-West", 5.0, 2.0)]}, "--outage[0].end_h: must be after start_h (5)"),
        ({"link_changes": [("A", "B", 2.0, 0, 1)]}, "--link-degrade[0].factor: must be in (0, 1]"),
    ],
)
def test_each_value_is_checked_by_its_row_in_one_line(knobs: dict[str, Any], line: str) -> None:
    with pytest.raises(ScenarioError) as err:
        World(**knobs)
    assert str(err.value).startswith(line), str(err.value)
    assert "\n" not in str(err.value)


def test_a_file_value_is_named_by_its_key_and_a_flag_by_its_flag() -> None:
    with pytest.raises(ScenarioError, match=r"^admission: unknown rule"):
        World.from_file({"admission": "eager", "name": "x"})
    with pytest.raises(ValidationError, match=r"^--admission: choose from: greedy"):
        KNOBS["admission"].from_flag("eager")
    # a flag's text that parses but fails the row's check is still named by the flag
    with pytest.raises(ValidationError, match=r"^--gpu-failure-rate: must be a number in \[0, 1\]"):
        KNOBS["gpu_failure_rate"].from_flag("2")


def test_an_unknown_knob_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(ValidationError) as err:
        World().with_knobs({"admision": "full"})
    assert str(err.value).startswith("admision: unknown knob; known: bandwidth_scale, ")


def test_knobs_override_the_file_and_fault_lists_add_to_it() -> None:
    base = World.from_file({"admission": "full", "gpu_failure_rate": 1e-4})
    assert base.changed() == {"admission": "full", "gpu_failure_rate": 1e-4}
    world = base.with_knobs(
        {"admission": None, "prices": "hourly", "outages": [("EU-West", 1, 2)]}
    ).with_knobs({"outages": [("OC-East", 3, 4)]})
    assert world.admission == "full"  # None leaves the file's value
    assert world.prices == "hourly"
    assert world.outages == (("EU-West", 1.0, 2.0), ("OC-East", 3.0, 4.0))


def test_the_egress_file_forms_become_one_type() -> None:
    # true is AWS's inter-region rate, false no charge (semantics §10)
    assert World.from_file({"egress_usd_per_gb": True}).egress_usd_per_gb == 0.02
    assert World.from_file({"egress_usd_per_gb": False}).egress_usd_per_gb is None
    assert World(egress_usd_per_gb=[[0, 1], [2, 0]]).egress_usd_per_gb == ((0, 1), (2, 0))


@pytest.mark.parametrize("command", ["simulate", "compare", "sweep", "ablation"])
def test_the_cli_has_a_flag_for_every_world_knob(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    for knob in KNOBS.values():
        if not knob.flag or (knob.scope == "simulate" and command != "simulate"):
            continue
        assert re.search(rf"^\s+{re.escape(knob.flag)}\b", text, re.M), knob.flag


def test_a_scenarios_world_loads_it_again_in_the_same_world() -> None:
    first = load_scenario(
        "online", seed=3, n_jobs=30, prices="hourly", start_hour="random", admission="full"
    )
    assert first.world.admission == "full" and first.world.start_hour != "random"
    again = load_scenario("online", seed=3, world=first.world)
    assert again.world == first.world
    a, b = bace_pipe().simulate(first), bace_pipe().simulate(again)
    assert [r.to_dict(first.cluster.names) for r in a.records] == [
        r.to_dict(again.cluster.names) for r in b.records
    ]
    assert a.total_cost == b.total_cost


_VALUES = {
    "admission": st.sampled_from(list(ADMISSION_RULES)),
    "prices": st.sampled_from(["flat", "hourly"]),
    "ignore_memory": st.booleans(),
    "gpu_failure_rate": st.floats(0.0, 1.0),
    "restart_s": st.floats(0.0, 1e7),
    "max_preemptions": st.integers(0, 1000),
    "announce_h": st.floats(0.0, 1e6),
    "start_hour": st.one_of(st.just("random"), st.floats(0.0, 8759.99)),
    "preempt_checkpoint_s": st.one_of(st.just("lose-since-checkpoint"), st.floats(0.0, 1e7)),
}


@settings(max_examples=60, deadline=None)
@given(st.fixed_dictionaries({}, optional=_VALUES))
def test_a_world_is_its_changed_settings(knobs: dict[str, Any]) -> None:
    world = World(**knobs)
    assert World(**world.changed()) == world
    assert World().with_knobs(knobs) == world
    assert set(world.changed()) <= set(knobs)


# ------------------------------------------------------------------ the knob added in issue 26
@pytest.mark.parametrize("scenario", ["paper", "online"])
def test_pue_scales_the_bill_and_the_carbon_and_changes_no_schedule(scenario: str) -> None:
    """PUE 1.5: each GPU draws 1.5x its power at the facility's meter. Every price is
    multiplied alike, so the schedule (start, finish, placement) is the same and the bill and
    the carbon are 1.5x: on `paper` 0.3 kW x 1.5 = 0.45 kW per GPU."""
    base = load_scenario(scenario, seed=2, n_jobs=40)
    heavy = load_scenario(scenario, seed=2, n_jobs=40, pue=1.5)
    assert base.cluster.power_kw == 0.3 and heavy.cluster.power_kw == pytest.approx(0.45)
    assert heavy.params["pue"] == 1.5 and "pue" not in base.params
    a, b = bace_pipe().simulate(base), bace_pipe().simulate(heavy)
    assert [(r.job_id, r.start_time, r.finish_time, r.placement) for r in a.records] == [
        (r.job_id, r.start_time, r.finish_time, r.placement) for r in b.records
    ]
    assert b.total_cost == pytest.approx(1.5 * a.total_cost, rel=1e-12)
    assert b.total_carbon == pytest.approx(1.5 * a.total_carbon, rel=1e-12)


def test_pue_below_one_or_from_a_file_and_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ScenarioError, match=r"^pue: must be in \[1, 10\] \(got 0.9\)"):
        World(pue=0.9)
    assert World.from_file({"pue": 1.2}).pue == 1.2
    assert main(["simulate", "--scenario", "paper", "--pue", "0.5"]) == 2
    assert capsys.readouterr().err.strip() == (
        "bacepipe: error: --pue: must be a number in [1, 10] (got '0.5')"
    )


def test_the_env_takes_a_world_and_a_scenario_file_world_is_replaced_as_a_whole() -> None:
    gym = pytest.importorskip("gymnasium")
    import bacepipe_env  # noqa: F401  (registers the ids)

    world = World(admission="full", pue=1.3)
    env = gym.make("bacepipe_env/GeoPipe-Online-v1", world=world, n_jobs=30)
    env.reset(seed=1)
    scenario = env.unwrapped.scenario
    # the online file's own hourly prices and random start hour are replaced by the World's
    assert scenario.world == dataclasses.replace(world, n_jobs=30)
    assert scenario.cluster.power_kw == pytest.approx(0.3 * 1.3)
    with pytest.raises(ScenarioError, match=r"^world: must be a World"):
        gym.make("bacepipe_env/GeoPipe-v2", world={"admission": "full"})


def test_a_world_reads_as_its_changes_and_a_run_spec_carries_it(tmp_path: Path) -> None:
    world = World(admission="full", pue=1.2)
    assert repr(world) == "World(admission='full', pue=1.2)" and repr(World()) == "World()"
    assert eval(repr(world), {"World": World}) == world
    from bacepipe_env.experiments import run_compare

    run_compare(
        "paper",
        ["fcfs"],
        [0],
        tmp_path,
        knobs={"world": world},
        progress=False,
        tensorboard=False,
    )
    rows = list(csv.DictReader((tmp_path / "compare-runs.csv").open()))
    assert rows[0]["world"] == "World(admission='full', pue=1.2)"
    # the run is the one the World gives when simulated directly
    alone = make_policy("fcfs").simulate(load_scenario("paper", seed=0, world=world))
    assert float(rows[0]["total_cost_usd"]) == alone.total_cost
