"""The `bacepipe` command with GPU memory (semantics §3a) and admission rules (semantics §3b): the
previous release's numbers under --ignore-memory --admission greedy, the knobs on every
command, and one-line errors for bad input."""

from __future__ import annotations

import copy
import csv
import json
import math
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from bacepipe_env import load_scenario
from bacepipe_env.cli import main
from bacepipe_env.core.units import hours
from bacepipe_env.policies.registry import make_policy

DATA = Path(__file__).parents[1] / "bacepipe_env/scenarios/data"
RULES = ["greedy", "finish-aware", "full"]

# Printed by the previous release (commit 690f023, before GPU memory and admission rules
# existed) for `bacepipe compare --scenario paper --seeds 10`. It was produced by that release,
# not by the code under test: --ignore-memory --admission greedy must reproduce it to the last
# printed digit.
PREVIOUS_RELEASE_COMPARE = """\
policy           avg JCT h         total cost $  JCT / bace-pipe  cost / bace-pipe
---------  ---------------  -------------------  ---------------  ----------------
bace-pipe  682.61 ± 537.16  4,512.95 ± 1,591.08    1.000 ± 0.000     1.000 ± 0.000
lcf         209.69 ± 60.51  4,731.50 ± 1,375.98    0.744 ± 0.338     1.095 ± 0.124
ldf         203.02 ± 57.72  5,135.86 ± 1,371.07    0.713 ± 0.322     1.210 ± 0.178
cr-lcf     282.50 ± 103.37  5,081.96 ± 1,419.04    1.036 ± 0.576     1.185 ± 0.148
cr-ldf     282.70 ± 103.41  5,280.64 ± 1,406.66    1.036 ± 0.577     1.244 ± 0.179
mean ± 95% CI half-width over 10 seeds (Student t); ratios are per seed"""


def _experiment_argv(command: str, out: Path, *extra: str) -> list[str]:
    return [command, "--seeds", "1", "--workers", "1", "--out", str(out), *extra]


def _cells(table: str) -> tuple[list[str], list[list[str]], str]:
    """A printed experiment table as (header cells, body rows' cells, footnote); cells are
    separated by two or more spaces (a cell such as ``682.61 ± 537.16`` has single ones)."""
    lines = table.splitlines()
    assert set(lines[1].replace(" ", "")) == {"-"}, lines[1]
    split = [re.split(r" {2,}", line.strip()) for line in lines]
    return split[0], split[2:-1], lines[-1]


def _number_pm(cell: str) -> tuple[float, float]:
    mean, ci = cell.split(" ± ")
    return float(mean.replace(",", "")), float(ci.replace(",", ""))


def _carbon_kg(policy: str, seed: int) -> float:
    """A run's emissions straight from the scenario file's figures: every job's GPUs per region
    x its execution hours x the file's power per GPU (kW) x the region's carbon intensity
    (g/kWh), in kg; flat prices, the paper's literal semantics."""
    spec = json.loads((DATA / "paper.json").read_text())
    power_kw = spec["constants"]["power_kw"]
    intensity = [r["carbon_g_per_kwh"] for r in spec["regions"]]
    scenario = load_scenario("paper", seed=seed, ignore_memory=True, admission="greedy")
    result = make_policy(policy, seed=seed).simulate(scenario)
    grams = 0.0
    for rec in result.records:
        exec_h = rec.execution / 3600.0
        for region, n in zip(rec.placement.path, rec.placement.gpus, strict=True):
            grams += n * exec_h * power_kw * intensity[region]
    return grams / 1000.0


def test_ignore_memory_greedy_reproduces_the_previous_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", "--scenario", "paper", "--seeds", "10", "--ignore-memory"]
    argv += ["--admission", "greedy", "--workers", "1", "--out", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    table = out.split("\n\nwrote ")[0]
    # The table gained carbon columns; every column the previous release printed is still
    # there, cell for cell, with its header, and so is the footnote.
    old_head, old_rows, old_foot = _cells(PREVIOUS_RELEASE_COMPARE)
    head, rows, foot = _cells(table)
    assert head == [*old_head[:3], "carbon kg", *old_head[3:], "carbon / bace-pipe"]
    assert foot == old_foot
    assert len(rows) == len(old_rows) == 5
    for row, old in zip(rows, old_rows, strict=True):
        assert len(row) == len(head), row
        assert [row[head.index(h)] for h in old_head] == old
    # The carbon columns, from the scenario file's power and intensities (mean and Student-t
    # 95% half-width over the 10 seeds, t_{0.975, 9} = 2.262157).
    seeds = range(10)
    carbon = {p: [_carbon_kg(p, s) for s in seeds] for p in [r[0] for r in old_rows]}
    for row in rows:
        for col, values in (
            ("carbon kg", carbon[row[0]]),
            ("carbon / bace-pipe", [a / b for a, b in zip(carbon[row[0]], carbon["bace-pipe"])]),
        ):
            mean, ci = _number_pm(row[head.index(col)])
            digits = 0.005 if col == "carbon kg" else 0.0005  # half the last printed digit
            assert mean == pytest.approx(statistics.fmean(values), abs=digits + 1e-9), (row, col)
            half = 2.262157 * statistics.stdev(values) / math.sqrt(10)
            assert ci == pytest.approx(half, rel=1e-4, abs=digits + 1e-9), (row, col)
    assert rows[0][head.index("carbon / bace-pipe")] == "1.000 ± 0.000"
    data = json.loads((tmp_path / "compare.json").read_text())
    assert data["knobs"] == {"admission": "greedy", "ignore_memory": True}
    assert {run["admission"] for run in data["runs"]} == {"greedy"}
    assert len(data["runs"]) == 50
    for run in data["runs"]:
        assert run["carbon_kg"] == pytest.approx(_carbon_kg(run["policy"], run["seed"]), rel=1e-9)
        assert run["egress_usd"] == 0.0


# ---------------------------------------------------------------------------------------------
# simulate
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["lcf", "cr-ldf", "sjf", "no-costmin"])
def test_simulate_policy(policy: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--scenario", "paper", "--policy", policy]) == 0
    out = capsys.readouterr().out
    assert f"scenario paper, policy {policy}, 8 jobs, greedy admission, memory checked" in out
    assert out.splitlines()[0].split()[:6] == ["job", "model", "dataset", "K*", "floor", "GPUs"]
    # the table and the Python API agree
    expected = make_policy(policy).simulate(load_scenario("paper", seed=0))
    line = next(x for x in out.splitlines() if x.strip().startswith("average JCT"))
    assert line.split()[2] == f"{hours(expected.avg_jct):.2f}"


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("policy", ["bace-pipe", "ldf"])
def test_simulate_json_records_admission_and_memory(
    rule: str, policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["simulate", "--scenario", "paper", "--seed", "2", "--policy", policy]
    assert main([*argv, "--admission", rule, "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["admission"] == rule
    assert data["ignore_memory"] is False
    assert data["params"]["world_admission"] == rule
    assert data["params"]["ignore_memory"] is False
    expected = make_policy(policy, seed=2).simulate(load_scenario("paper", seed=2), admission=rule)
    assert data["avg_jct_s"] == expected.avg_jct
    assert data["total_cost_usd"] == expected.total_cost
    for row, rec in zip(data["jobs"], expected.records, strict=True):
        assert row["memory_floor"] == rec.memory_floor
        assert row["gpus"] == rec.n_gpus >= rec.memory_floor


def test_simulate_json_names_the_worlds_rules_apart_from_the_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A policy with its own rules replaces the world's: ``sjf+finish-aware`` on a world of
    ``full`` admission, ``sjf+srtf`` on one without preemption. The record's ``admission`` and
    ``preemption`` are the rules the run used; ``params`` keeps the world's under other names,
    so one JSON no longer gives two different ``admission`` values (issue 44)."""
    argv = ["simulate", "--scenario", "online", "--jobs", "20", "--admission", "full"]
    assert main([*argv, "--policy", "sjf+finish-aware", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["admission"] == "finish-aware" and data["params"]["world_admission"] == "full"
    assert main([*argv, "--policy", "sjf+srtf", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["preemption"] == "srtf" and data["params"]["world_preemption"] == "none"
    assert data["admission"] == data["params"]["world_admission"] == "full"  # sjf has none
    # each name now has one value: no key of params repeats a record key with another value
    for key in data["params"].keys() & data.keys():
        assert data["params"][key] == data[key], key


def test_simulate_json_ignore_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.json"
    argv = ["simulate", "--scenario", "paper", "--ignore-memory", "--admission", "full"]
    assert main([*argv, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "full admission, memory ignored" in text
    data = json.loads(out.read_text())
    assert data["admission"] == "full"
    assert data["ignore_memory"] is True
    assert data["params"]["ignore_memory"] is True
    assert {row["memory_floor"] for row in data["jobs"]} == {1}


def test_simulate_file_fields_and_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a file's own admission and ignore_memory apply unless the flags override them
    spec = json.loads((DATA / "fig1.json").read_text())  # ignore_memory: true
    spec["admission"] = "finish-aware"
    path = tmp_path / "fig1-fa.json"
    path.write_text(json.dumps(spec))
    assert main(["simulate", "--scenario", str(path), "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["admission"], data["ignore_memory"]) == ("finish-aware", True)
    assert main(["simulate", "--scenario", str(path), "--admission", "greedy", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["admission"], data["ignore_memory"]) == ("greedy", True)


# ---------------------------------------------------------------------------------------------
# compare, sweep, ablation with --admission
# ---------------------------------------------------------------------------------------------


def _runs(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("rule", RULES)
def test_compare_admission(rule: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _experiment_argv("compare", tmp_path, "--seeds", "2", "--admission", rule)
    argv += ["--policies", "bace-pipe,lcf"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("policy ")
    data = json.loads((tmp_path / "compare.json").read_text())
    assert data["knobs"] == {"admission": rule}
    runs = _runs(tmp_path / "compare-runs.csv")
    assert {r["admission"] for r in runs} == {rule}
    assert len(runs) == 4
    # every run is the Python API's
    for row in runs:
        seed = int(row["seed"])
        res = make_policy(row["policy"], seed=seed).simulate(
            load_scenario("paper", seed=seed), admission=rule
        )
        assert float(row["avg_jct_h"]) == pytest.approx(hours(res.avg_jct), rel=1e-12)
        assert float(row["total_cost_usd"]) == pytest.approx(res.total_cost, rel=1e-12)


def test_sweep_admission(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["sweep", "--kind", "jobs", "--values", "8", "--seeds", "2", "--workers", "1"]
    argv += ["--out", str(tmp_path), "--admission", "full"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "jobs sweep, n_jobs = 8" in out
    data = json.loads((tmp_path / "sweep-jobs.json").read_text())
    assert data["knobs"] == {"admission": "full"}
    runs = _runs(tmp_path / "sweep-jobs-runs.csv")
    assert runs and {r["admission"] for r in runs} == {"full"}
    row = next(r for r in runs if r["policy"] == "bace-pipe" and r["seed"] == "1")
    res = make_policy("bace-pipe").simulate(
        load_scenario("paper", seed=1, n_jobs=8), admission="full"
    )
    assert float(row["avg_jct_h"]) == pytest.approx(hours(res.avg_jct), rel=1e-12)


def test_ablation_admission(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _experiment_argv("ablation", tmp_path, "--admission", "finish-aware")
    assert main(argv) == 0
    out = capsys.readouterr().out
    for name in ("bace-pipe", "no-priority", "no-pathfinder", "no-costmin"):
        assert f"\n{name} " in out
    files = [f for f in tmp_path.glob("ablation*.json") if not f.name.endswith(".manifest.json")]
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    assert data["knobs"] == {"admission": "finish-aware"}
    assert {r["admission"] for r in data["runs"]} == {"finish-aware"}


# ---------------------------------------------------------------------------------------------
# Bad input: exactly one line on stderr, exit status 2, naming the field
# ---------------------------------------------------------------------------------------------

COMMANDS = ["simulate", "compare", "sweep", "ablation"]


def _argv(command: str, scenario: str, out: Path) -> list[str]:
    if command == "simulate":
        return ["simulate", "--scenario", scenario]
    argv = _experiment_argv(command, out, "--scenario", scenario)
    if command == "sweep":
        argv += ["--kind", "jobs", "--values", "8"]
    return argv


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    assert captured.out == ""
    return lines[0]


@pytest.mark.parametrize("command", COMMANDS)
def test_unknown_admission_flag(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*_argv(command, "paper", tmp_path / "out"), "--admission", "eager"]) == 2
    line = _one_error_line(capsys)
    assert line == "bacepipe: error: --admission: choose from: greedy, finish-aware, full, " + (
        "announce-aware, deadline-aware, deadline-plan (got 'eager')"
    )
    assert not (tmp_path / "out").exists()


def _paper(**top: Any) -> dict[str, Any]:
    spec = json.loads((DATA / "paper.json").read_text())
    spec.update(top)
    return spec


def _bad_region_memory(value: Any) -> dict[str, Any]:
    spec = _paper()
    spec["regions"][2]["gpu_memory_gb"] = value
    return spec


def _bad_constants_memory(value: Any) -> dict[str, Any]:
    spec = _paper()
    spec["constants"]["gpu_memory_gb"] = value
    return spec


def _never_fits() -> dict[str, Any]:
    spec = json.loads((DATA / "fig1.json").read_text())
    spec["ignore_memory"] = False
    return spec


BAD_FILES = {
    # name: (spec, the start of the one error line after "bacepipe: error: ")
    "region-memory-zero": (
        _bad_region_memory(0),
        "regions[2].gpu_memory_gb: must be in (0, 10,000] GB",
    ),
    "region-memory-negative": (
        _bad_region_memory(-48),
        "regions[2].gpu_memory_gb: must be in (0, 10,000] GB",
    ),
    "region-memory-string": (
        _bad_region_memory("48"),
        "regions[2].gpu_memory_gb: must be a number",
    ),
    "constants-memory-zero": (
        _bad_constants_memory(0),
        "constants.gpu_memory_gb: must be in (0, 10,000] GB",
    ),
    "constants-memory-negative": (
        _bad_constants_memory(-1.5),
        "constants.gpu_memory_gb: must be in (0, 10,000] GB",
    ),
    "unknown-admission": (
        _paper(admission="eager"),
        "admission: unknown rule; choose from: greedy, finish-aware, full, announce-aware, "
        "deadline-aware, deadline-plan (got 'eager')",
    ),
    "ignore-memory-string": (
        _paper(ignore_memory="yes"),
        "ignore_memory: must be true or false (got 'yes')",
    ),
    "ignore-memory-int": (
        _paper(ignore_memory=1),
        "ignore_memory: must be true or false (got 1)",
    ),
    "ignore-memory-null": (
        _paper(ignore_memory=None),
        "ignore_memory: must be true or false (got None)",
    ),
    "never-fits": (
        _never_fits(),
        "job Q: needs 27 GPUs to fit in GPU memory (3 of 80 layers per 48 GB GPU) but the "
        "largest placement possible is 11 GPUs",
    ),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_scenario_file(
    case: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, start = BAD_FILES[case]
    path = tmp_path / f"{case}.json"
    path.write_text(json.dumps(copy.deepcopy(spec)))
    assert main(_argv(command, str(path), tmp_path / "out")) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"bacepipe: error: {start}"), line
    assert not (tmp_path / "out").exists()


def test_ignore_memory_flag_runs_a_scenario_that_never_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "fig1-memory.json"
    path.write_text(json.dumps(_never_fits()))
    assert main(["simulate", "--scenario", str(path)]) == 2
    assert "job Q" in _one_error_line(capsys)
    assert main(["simulate", "--scenario", str(path), "--ignore-memory", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ignore_memory"] is True
    assert [row["name"] for row in data["jobs"]] == ["P", "Q"]
