"""The `bacepipe` command's world flags (--prices, --start-hour, --egress, --load) on every
command, and `bacepipe online`: knobs reach every run, bad input is one line and exit 2."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from bacepipe_env import cli, load_scenario
from bacepipe_env.cli import main
from bacepipe_env.cli_args import ONLINE_LOADS
from bacepipe_env.core.units import hours
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import load_scenario_spec

COMMANDS = ["simulate", "compare", "sweep", "ablation"]


def _argv(command: str, out: Path, *extra: str) -> list[str]:
    if command == "simulate":
        return ["simulate", "--scenario", "paper", *extra]
    argv = [command, "--seeds", "1", "--workers", "1", "--out", str(out), *extra]
    if command == "sweep":
        argv += ["--kind", "jobs", "--values", "8"]
    if command == "compare":
        argv += ["--policies", "bace-pipe,lcf"]
    return argv


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    assert captured.out == ""
    return lines[0]


HOUR = "must be an hour of 2023, 0 <= H < 8760, or 'random'"
BAD_FLAGS = {
    # flags: the one error line
    ("--start-hour", "8760"): f"--start-hour: {HOUR} (got '8760')",
    ("--start-hour", "-1"): f"--start-hour: {HOUR} (got '-1')",
    ("--start-hour", "noon"): f"--start-hour: {HOUR} (got 'noon')",
    ("--start-hour", "nan"): f"--start-hour: {HOUR} (got 'nan')",
    ("--prices", "monthly"): "--prices: choose from: flat, hourly (got 'monthly')",
    ("--load", "-1"): "--load: must be a number in [0.001, 1,000] (got '-1')",
    ("--load", "0"): "--load: must be a number in [0.001, 1,000] (got '0')",
    ("--load", "nan"): "--load: must be a number in [0.001, 1,000] (got 'nan')",
    ("--load", "inf"): "--load: must be a number in [0.001, 1,000] (got 'inf')",
    ("--load", "high"): "--load: must be a number in [0.001, 1,000] (got 'high')",
    ("--egress", "-0.1"): "--egress: must be a number in (0, 1,000] $/GB (got '-0.1')",
    ("--egress", "0"): "--egress: must be a number in (0, 1,000] $/GB (got '0')",
    ("--egress", "nan"): "--egress: must be a number in (0, 1,000] $/GB (got 'nan')",
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("flags", list(BAD_FLAGS), ids="=".join)
def test_bad_world_flag_is_one_line_and_exit_2(
    command: str, flags: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_argv(command, tmp_path / "out", *flags)) == 2
    assert _one_error_line(capsys) == f"bacepipe: error: {BAD_FLAGS[flags]}"
    assert not (tmp_path / "out").exists()


def test_load_on_a_batch_scenario_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--scenario", "paper", "--load", "0.8"]) == 2
    line = _one_error_line(capsys)
    assert "load" in line and "poisson or philly" in line


def test_bad_flags_through_a_subprocess_are_one_line() -> None:
    import subprocess

    for flags in (("--start-hour", "8760"), ("--prices", "monthly"), ("--egress", "-0.1")):
        proc = subprocess.run(
            [sys.executable, "-m", "bacepipe_env.cli", "simulate", "--scenario", "paper", *flags],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2
        assert proc.stderr == f"bacepipe: error: {BAD_FLAGS[flags]}\n"
        assert proc.stdout == ""


# ---------------------------------------------------------------------------------------------
# The knobs reach every run
# ---------------------------------------------------------------------------------------------


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


WORLD = ["--prices", "hourly", "--start-hour", "4000", "--egress", "0.05"]
KNOBS: dict[str, Any] = {"prices": "hourly", "start_hour": 4000.0, "egress_usd_per_gb": 0.05}


def test_compare_world_flags_reach_every_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", "--seeds", "2", "--workers", "1", "--out", str(tmp_path)]
    assert main([*argv, "--policies", "bace-pipe,cr-ldf", *WORLD]) == 0
    out = capsys.readouterr().out
    head = [c.strip() for c in out.splitlines()[0].split("  ") if c.strip()]
    assert head[1:5] == ["avg JCT h", "total cost $", "carbon kg", "egress $"]
    data = json.loads((tmp_path / "compare.json").read_text())
    assert data["knobs"] == KNOBS
    for row in _rows(tmp_path / "compare-runs.csv"):
        seed = int(row["seed"])
        assert (row["prices"], float(row["start_hour"])) == ("hourly", 4000.0)
        assert float(row["egress_usd_per_gb"]) == 0.05
        res = make_policy(row["policy"], seed=seed).simulate(
            load_scenario("paper", seed=seed, **KNOBS)
        )
        assert float(row["avg_jct_h"]) == pytest.approx(hours(res.avg_jct), rel=1e-12)
        assert float(row["total_cost_usd"]) == pytest.approx(res.total_cost, rel=1e-12)
        assert float(row["carbon_kg"]) == pytest.approx(res.total_carbon, rel=1e-12)
        assert float(row["egress_usd"]) == pytest.approx(res.total_egress_cost, rel=1e-12)
    summary = _rows(tmp_path / "compare-summary.csv")
    assert all("egress_usd_mean" in r and "carbon_norm_mean" in r for r in summary)


def test_sweep_and_ablation_take_the_world_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", "--kind", "bandwidth", "--values", "0.3", "--seeds", "1", "--workers", "1"]
    assert main([*argv, "--out", str(tmp_path / "s"), "--policies", "bace-pipe,lcf", *WORLD]) == 0
    assert "egress $" in capsys.readouterr().out
    data = json.loads((tmp_path / "s" / "sweep-bandwidth.json").read_text())
    assert data["knobs"] == KNOBS
    for run in data["runs"]:
        res = make_policy(run["policy"], seed=0).simulate(
            load_scenario("paper", seed=0, bandwidth_scale=0.3, **KNOBS)
        )
        assert run["total_cost_usd"] == pytest.approx(res.total_cost, rel=1e-12)
        assert run["egress_usd"] == pytest.approx(res.total_egress_cost, rel=1e-12)
    argv = ["ablation", "--seeds", "1", "--workers", "1", "--out", str(tmp_path / "a")]
    assert main([*argv, "--prices", "hourly", "--start-hour", "random"]) == 0
    out = capsys.readouterr().out
    assert "egress $" not in out and "carbon kg" in out
    data = json.loads((tmp_path / "a" / "ablation.json").read_text())
    assert data["knobs"] == {"prices": "hourly", "start_hour": "random"}


def test_load_flag_sets_the_online_arrival_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["simulate", "--scenario", "online", "--jobs", "40", "--seed", "3"]
    rates = []
    for load in ("0.4", "1.2"):
        assert main([*argv, "--load", load, "--json", "-"]) == 0
        data = json.loads(capsys.readouterr().out)
        expected = load_scenario("online", seed=3, n_jobs=40, load=float(load))
        assert data["params"]["arrival_rate_per_h"] == expected.params["arrival_rate_per_h"]
        assert [j["submit_s"] for j in data["jobs"]] == [j.submit_time for j in expected.jobs]
        rates.append(data["params"]["arrival_rate_per_h"])
    assert rates[1] == pytest.approx(3 * rates[0], rel=1e-12)
    compare = ["compare", "--scenario", "online", "--seeds", "1", "--workers", "1"]
    assert main([*compare, "--policies", "bace-pipe", "--load", "0.5", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert json.loads((tmp_path / "compare.json").read_text())["knobs"] == {"load": 0.5}


# ---------------------------------------------------------------------------------------------
# bacepipe online
# ---------------------------------------------------------------------------------------------


def _fake_online(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Stand in a recorder for the online experiment's entry point; returns its calls."""
    calls: list[dict[str, Any]] = []

    def run_online(out: Path, **kwargs: Any) -> Path:
        calls.append({"out": out, **kwargs})
        return out / "online.md"

    monkeypatch.setattr(cli, "run_online", run_online)
    return calls


def test_online_passes_its_arguments(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _fake_online(monkeypatch)
    assert main(["online"]) == 0
    assert capsys.readouterr().out == f"wrote {Path('out/online/online.md')}\n"
    (call,) = calls
    assert call["out"] == Path("out/online")
    assert call["seeds"] == [0, 1, 2, 3, 4]
    assert call["loads"] == [0.4, 0.6, 0.8, 1.0, 1.2]
    assert call["n_jobs"] == 500
    assert call.get("policies") is None  # the experiment's own default set
    assert call["preemption"] == "none"  # every policy's own rule, none for the others
    assert call["workers"] >= 1
    argv = ["online", "--out", "o", "--seeds", "2-3", "--loads", "0.5, 1.5", "--jobs", "20"]
    assert main([*argv, "--policies", "bace-pipe,lcf", "--workers", "1"]) == 0
    assert capsys.readouterr().out == f"wrote {Path('o/online.md')}\n"
    call = calls[-1]
    assert (call["out"], call["seeds"], call["loads"]) == (Path("o"), [2, 3], [0.5, 1.5])
    assert (call["n_jobs"], call["policies"], call["workers"]) == (20, ["bace-pipe", "lcf"], 1)
    assert main([*argv, "--preemption", "srtf:factor=3"]) == 0
    assert calls[-1]["preemption"] == "srtf:factor=3"


@pytest.mark.parametrize(
    "args,line",
    [
        (["--loads", "0.4,-1"], "--loads: must be a number in [0.001, 1,000] (got '-1')"),
        (["--loads", "0"], "--loads: must be a number in [0.001, 1,000] (got '0')"),
        (["--loads", "nan"], "--loads: must be a number in [0.001, 1,000] (got 'nan')"),
        (["--loads", "0.4,x"], "--loads: must be a number in [0.001, 1,000] (got 'x')"),
        (["--loads", ","], "--loads: give at least one offered load, e.g. 0.4,0.8 (got ',')"),
        (["--loads", "0.8,0.8"], "--loads: a load is listed twice (got '0.8,0.8')"),
        (["--seeds", "abc"], "--seeds: must be a count (10), a list (0,3,7) or a range (0-9) "),
        (
            ["--policies", "nope"],
            "policy: unknown policy; choose from: bace-pipe, ",
        ),
        (["--out", " "], "--out: give an output directory (got ' ')"),
    ],
)
def test_online_bad_arguments(
    args: list[str],
    line: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    calls = _fake_online(monkeypatch)
    assert main(["online", *args]) == 2
    assert _one_error_line(capsys).startswith(f"bacepipe: error: {line}")
    assert calls == []


@pytest.mark.parametrize("args", [["--jobs", "0"], ["--workers", "0"], ["--kind", "x"]])
def test_online_argparse_errors_are_one_line(args: list[str]) -> None:
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "bacepipe_env.cli", "online", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_online_runs_the_experiment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bacepipe_env.experiments import online

    assert tuple(online.DEFAULT_LOADS) == ONLINE_LOADS  # the CLI's default is the module's
    out = tmp_path / "online"
    argv = ["online", "--out", str(out), "--seeds", "2", "--loads", "0.5,1", "--jobs", "30"]
    assert main([*argv, "--policies", "bace-pipe,lcf", "--workers", "1"]) == 0
    path = out / "online.md"
    assert capsys.readouterr().out == f"wrote {path}\n"
    text = path.read_text(encoding="utf-8")
    assert "bace-pipe" in text and "lcf" in text
    assert list((out / "img").glob("online-*.png"))


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        (
            {"arrivals": "philly", "arrival_rate_per_h": -2.0},
            "bacepipe: error: workload.arrival_rate_per_h: must be in [1e-6, 1,000,000] jobs/h "
            "(got -2.0)",
        ),
        (
            {"arrivals": "poisson", "arrival_rate_per_h": 0},
            "bacepipe: error: workload.arrival_rate_per_h: must be in [1e-6, 1,000,000] jobs/h "
            "(got 0)",
        ),
        (
            {"arrivals": "gamma", "arrival_rate_per_h": 1.0},
            "bacepipe: error: workload.arrivals: must be one of: batch, poisson, philly "
            "(got 'gamma')",
        ),
    ],
)
def test_bad_arrivals_in_a_scenario_file_are_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    workload: dict[str, Any],
    expected: str,
) -> None:
    spec = dict(load_scenario_spec("online"))
    spec["workload"] = {"n_jobs": 20, **workload}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    assert main(["simulate", "--scenario", str(path)]) == 2
    assert _one_error_line(capsys) == expected
