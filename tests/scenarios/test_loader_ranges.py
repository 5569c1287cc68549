"""Every number of a scenario file has a range (core.limits.LIMITS), and every range is
enforced by name; types are strict; a JSON file is strict JSON (issue 13)."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bacepipe_env.core.limits import LIMITS, Limit
from bacepipe_env.errors import ScenarioError
from bacepipe_env.scenarios import load_scenario
from bacepipe_env.scenarios.loader import (
    MAX_SCENARIO_BYTES,
    compile_scenario,
    load_scenario_spec,
)

ROOT = Path(__file__).resolve().parents[2]
PAPER = load_scenario_spec("paper")
ONLINE = load_scenario_spec("online")
FIG1 = load_scenario_spec("fig1")
R0, R1 = PAPER["regions"][0]["name"], PAPER["regions"][1]["name"]

Setter = Callable[[Any], tuple[dict[str, Any], dict[str, Any], str]]


def _at(base: dict[str, Any], path: tuple[Any, ...], field: str, **extra: Any) -> Setter:
    """A setter that writes the value at ``path`` of a copy of ``base`` (after ``extra``'s
    top-level keys), expecting errors to name ``field``."""

    def put(value: Any) -> tuple[dict[str, Any], dict[str, Any], str]:
        spec = copy.deepcopy(base)
        spec.update(copy.deepcopy(extra))
        node = spec
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        return spec, {}, field

    return put


def _knob(name: str) -> Setter:
    return lambda value: (copy.deepcopy(PAPER), {name: value}, name)


def _matrix(key: str, field: str, *, links: bool) -> Setter:
    k = len(PAPER["regions"])

    def put(value: Any) -> tuple[dict[str, Any], dict[str, Any], str]:
        spec = copy.deepcopy(PAPER)
        m = [[10.0] * k for _ in range(k)]
        m[0][1] = value
        if links:
            spec["links"] = {key: m}
        else:
            spec[key] = m
        return spec, {}, field

    return put


_PAIR = {"links": {"pairs": [{"a": R0, "b": R1, "gbps": 10.0}]}}
_EVENTS = [{"type": "outage", "region": R0, "start_h": 1.0, "end_h": 2.0}]
_PRICE = [{"type": "price", "region": R0, "factor": 2.0, "start_h": 1.0, "end_h": 2.0}]
_LINK = [{"type": "link", "src": R0, "dst": R1, "factor": 0.5, "start_h": 1.0, "end_h": 2.0}]
_POISSON = {k: v for k, v in ONLINE["workload"].items() if k != "load"}
_POISSON.update(arrivals="poisson", arrival_rate_per_h=1.0)
_WEIGHTS = dict(ONLINE["workload"], datasets={ONLINE["datasets"][0]["name"]: 1.0})

#: Each LIMITS key: how to put a value there, and the field its error must name.
SETTERS: dict[str, Setter] = {
    **{
        key: _at(PAPER, ("constants", key.split(".")[1]), key)
        for key in LIMITS
        if key.startswith("constants.")
    },
    **{
        key: _at(PAPER, ("regions", 2, key.split(".")[1]), f"regions[2].{key.split('.')[1]}")
        for key in LIMITS
        if key.startswith("regions.")
    },
    "links.gbps": _at(PAPER, ("links", "pairs", 0, "gbps"), "links.pairs[0].gbps", **_PAIR),
    "links.mbps": _at(
        PAPER,
        ("links", "pairs", 0, "mbps"),
        "links.pairs[0].mbps",
        links={"pairs": [{"a": R0, "b": R1}]},
    ),
    "links.matrix_gbps": _matrix("matrix_gbps", "links.matrix_gbps[0][1]", links=True),
    "latency_ms": _matrix("latency_ms", "latency_ms[0][1]", links=False),
    **{
        f"models.{m}": _at(PAPER, ("models", 1, m), f"models[1].{m}")
        for m in ("params", "layers", "hidden", "batch")
    },
    "datasets.samples": _at(PAPER, ("datasets", 0, "samples"), "datasets[0].samples"),
    **{
        f"jobs.{j}": _at(FIG1, ("jobs", 1, j), f"jobs[1].{j}")
        for j in ("submit_h", "batch", "epochs", "deadline_h", "slack")
    },
    "jobs.replicas": _at(FIG1, ("jobs", 1, "max_replicas"), "jobs[1].max_replicas"),
    "workload.n_jobs": _at(PAPER, ("workload", "n_jobs"), "workload.n_jobs"),
    "workload.submit_h": _at(PAPER, ("workload", "submit_h"), "workload.submit_h"),
    "workload.arrival_rate_per_h": _at(
        ONLINE,
        ("workload", "arrival_rate_per_h"),
        "workload.arrival_rate_per_h",
        workload=_POISSON,
    ),
    "workload.load": _at(ONLINE, ("workload", "load"), "workload.load"),
    "workload.weight": _at(
        ONLINE,
        ("workload", "datasets", ONLINE["datasets"][0]["name"]),
        f"workload.datasets.{ONLINE['datasets'][0]['name']}",
        workload=_WEIGHTS,
    ),
    "workload.horizon_h": _at(ONLINE, ("workload", "horizon_h"), "workload.horizon_h"),
    "events.start_h": _at(PAPER, ("events", 0, "start_h"), "events[0].start_h", events=_EVENTS),
    "events.end_h": _at(PAPER, ("events", 0, "end_h"), "events[0].end_h", events=_EVENTS),
    "events.factor (price)": _at(PAPER, ("events", 0, "factor"), "events[0].factor", events=_PRICE),
    "events.factor (link)": _at(PAPER, ("events", 0, "factor"), "events[0].factor", events=_LINK),
    **{
        key: _at(PAPER, (key,), key)
        for key in (
            "gpu_failure_rate",
            "checkpoint_interval_s",
            "restart_s",
            "preempt_checkpoint_s",
            "max_preemptions",
            "egress_usd_per_gb",
            "gpu_reserve_gb",
        )
    },
    "bandwidth_scale": _knob("bandwidth_scale"),
    "gpu_scale": _knob("gpu_scale"),
    "seed": lambda value: (copy.deepcopy(PAPER), {"seed": value}, "seed"),
}


def _outside(limit: Limit) -> list[float]:
    """A value just above the range and one just below it (the low end itself when open)."""
    step = 1 if limit.integer else max(abs(limit.high), 1.0) * 1e-6
    above = limit.high + step
    if limit.open_low:
        below = limit.low
    else:
        below = limit.low - (1 if limit.integer else max(abs(limit.low), 1.0) * 1e-6)
    return [above, below]


def _load(spec: dict[str, Any], knobs: dict[str, Any]) -> None:
    seed = knobs.pop("seed", None)
    template = compile_scenario(spec, **knobs)
    if seed is not None:
        template.materialize(seed)


def test_every_range_has_a_setter() -> None:
    assert sorted(SETTERS) == sorted(LIMITS)


@pytest.mark.parametrize("key", sorted(LIMITS))
def test_a_value_outside_its_range_is_refused_by_name(key: str) -> None:
    limit = LIMITS[key]
    for value in _outside(limit):
        spec, knobs, field = SETTERS[key](value)
        with pytest.raises(ScenarioError) as err:
            _load(spec, knobs)
        # e.g. "regions[2].gpus: must be in [1, 1,000,000] (got 0)"
        assert err.value.field == field, str(err.value)
        msg = str(err.value)
        # a negative matrix entry is refused by the matrix check, before the range
        assert f"must be in {limit.text()}" in msg or (value < 0 and ">= 0" in msg), msg


@pytest.mark.parametrize("key", sorted(LIMITS))
def test_the_ends_of_a_range_pass_its_own_check(key: str) -> None:
    """At the top (and the bottom, when it is closed) of its range a value passes its own
    check; another rule may still refuse it (an end_h at 0 is not after its start_h), but not
    this range."""
    limit = LIMITS[key]
    ends = [limit.high] + ([] if limit.open_low else [limit.low])
    for value in ends:
        spec, knobs, field = SETTERS[key](int(value) if limit.integer else value)
        try:
            _load(spec, knobs)
        except ScenarioError as err:
            assert not (err.field == field and "must be in" in str(err)), str(err)


def test_gpu_scale_may_not_give_a_region_more_than_a_million_gpus() -> None:
    spec = copy.deepcopy(PAPER)
    spec["regions"][0]["gpus"] = 2000
    # 2,000 x 1,000 (the largest scale) = 2,000,000 GPUs, over the 1,000,000 of regions.gpus
    with pytest.raises(ScenarioError, match=r"^gpu_scale: gives regions\[0\] 2,000,000 GPUs"):
        compile_scenario(spec, gpu_scale=1000)
    compile_scenario(spec, gpu_scale=500)  # 1,000,000 GPUs: the top of the range


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # numpy would read true as 1 and "12" as 12
        (("links",), {"matrix_gbps": [[0, True], [1, 0]]}, "links.matrix_gbps[0][1]: must be a"),
        (("latency_ms",), [["0", "12"], ["1", "0"]], "latency_ms[0][0]: must be a number, not"),
        (("regions", 0, "gpus"), True, "regions[0].gpus: must be a whole number"),
        (("regions", 0, "gpus"), "12", "regions[0].gpus: must be a whole number"),
        (("regions", 0, "bandwidth_gbps"), True, "regions[0].bandwidth_gbps: must be a number"),
        (("constants", "mfu"), "0.4", "constants.mfu: must be a number"),
        (("models", 0, "layers"), 2.5, "models[0].layers: must be a whole number"),
        (("description",), 5, "description: must be a string (got 5)"),
        (("source",), ["a"], "source: must be a string"),
        (("name",), 3, "name: must be a non-empty string"),
        (("regions", 0, "price_zone"), None, "regions[0].price_zone: must be a non-empty"),
    ],
)
def test_types_are_strict(path: tuple[Any, ...], value: Any, message: str) -> None:
    spec = copy.deepcopy(PAPER)
    if path == ("links",) or path == ("latency_ms",):
        spec["regions"] = spec["regions"][:2]
    node = spec
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ScenarioError) as err:
        compile_scenario(spec)
    assert str(err.value).startswith(message), str(err.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"name": NaN}', "NaN is not a number in a scenario"),
        ('{"name": "x", "restart_s": Infinity}', "Infinity is not a number in a scenario"),
        ('{"restart_s": -Infinity}', "-Infinity is not a number in a scenario"),
        ("[" * 100_000 + "]" * 100_000, "is nested too deeply"),
        ('{"restart_s": ' + "1" * 5000 + "}", "invalid JSON: Exceeds the limit"),
        ('{"name": "x",}', "invalid JSON at line 1 column 14"),
    ],
)
def test_a_json_file_is_strict_json(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "s.json"
    f.write_text(text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(f)
    assert message in str(err.value), str(err.value)
    assert len(str(err.value)) <= 180


def test_toml_inf_reads_but_is_refused_by_name(tmp_path: Path) -> None:
    """TOML has nan and inf literals; the loader reads them and the field check refuses them."""
    f = tmp_path / "s.toml"
    f.write_text('name = "x"\nrestart_s = inf\n')
    spec = load_scenario_spec(f)
    assert spec["restart_s"] == math.inf
    with pytest.raises(ScenarioError, match=r"^restart_s: must be finite"):
        compile_scenario({**PAPER, "restart_s": spec["restart_s"]})
    with pytest.raises(ScenarioError, match=r"^constants.mfu: must be finite"):
        compile_scenario({**PAPER, "constants": {"mfu": math.nan}})


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    f = tmp_path / "big.json"
    with f.open("wb") as fh:  # a sparse file: no 64 MB written
        fh.truncate(MAX_SCENARIO_BYTES + 1)
    with pytest.raises(ScenarioError, match=r"is 64\.0 MB; a scenario file is at most 64 MB"):
        load_scenario(f)


def test_the_docs_list_every_range_as_the_table_has_it() -> None:
    """docs/scenarios.md's Ranges table is LIMITS, field by field (a doc that drifted from the
    code would fail here)."""
    text = (ROOT / "docs" / "scenarios.md").read_text()
    section = text.split("## Ranges", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `([^`]+)` \| ([^|]+) \|$", section, flags=re.M))
    for key, limit in LIMITS.items():
        unit = f" {limit.unit}" if limit.unit else ""
        assert rows.get(key, "").strip() == f"{limit.text()}{unit}", key


def test_an_egress_matrix_row_that_is_not_a_row_is_one_line() -> None:
    """The fuzzer's case: a number where a row of the K x K matrix belongs was a TypeError."""
    k = len(PAPER["regions"])
    rows: list[Any] = [[0.02] * k for _ in range(k)]
    rows[3] = -1
    with pytest.raises(ScenarioError, match=r"^egress_usd_per_gb\[3\]: must be a row of the K x K"):
        compile_scenario({**PAPER, "egress_usd_per_gb": rows})


def test_an_egress_matrix_diagonal_is_unused_whatever_it_holds() -> None:
    """The diagonal of a K x K egress matrix is a region to itself: ignored, like a
    bandwidth matrix's (it was converted anyway, so null there was a TypeError)."""
    k = len(PAPER["regions"])
    rows = [[None if i == j else 0.02 for j in range(k)] for i in range(k)]
    template = compile_scenario({**PAPER, "egress_usd_per_gb": rows})
    assert template.world.egress_usd_per_gb == tuple(
        tuple(0.0 if i == j else 0.02 for j in range(k)) for i in range(k)
    )
    rows[0][1] = "0.02"  # off the diagonal a string is still refused
    with pytest.raises(ScenarioError, match=r"^egress_usd_per_gb\[0\]\[1\]: must be a number"):
        compile_scenario({**PAPER, "egress_usd_per_gb": rows})
