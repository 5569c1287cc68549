"""The `bacepipe` command's fault flags (--outage, --link-degrade, --gpu-failure-rate,
--checkpoint-interval-s, --restart-s): bad input is one line and exit 2, the flags reach
simulate's JSON and every experiment's runs, and without them the output does not change."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from bacepipe_env.cli import main
from bacepipe_env.core.world import parse_link_degrade, parse_outage
from bacepipe_env.errors import ValidationError


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    assert captured.out == ""
    return lines[0]


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--outage", "Mars:1:2"], "unknown region"),
        (["--outage", "EU-West:5:5"], "after START_H"),
        (["--outage", "EU-West:x:2"], "START_H"),
        (["--outage", "EU-West:1"], "REGION:START_H:END_H"),
        (["--outage", "EU-West:1:2:3"], "REGION:START_H:END_H"),
        (["--gpu-failure-rate", "-1"], "--gpu-failure-rate"),
        (["--gpu-failure-rate", "nan"], "--gpu-failure-rate"),
        (["--link-degrade", "EU-West:US-East-2:1.5:0:1"], "(0, 1]"),
        (["--link-degrade", "EU-West:US-East-2:0:0:1"], "(0, 1]"),
        (["--link-degrade", "EU-West:US-East-2:0.5:3:1"], "after START_H"),
        (["--link-degrade", "EU-West:US-East-2:0.5:1"], "SRC:DST:FACTOR:START_H:END_H"),
        (["--link-degrade", "EU-West:Mars:0.5:0:1"], "unknown region"),
        (["--checkpoint-interval-s", "0"], "--checkpoint-interval-s"),
        (["--restart-s", "-5"], "--restart-s"),
    ],
)
def test_bad_fault_flags_are_one_line_and_exit_2(
    flags: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--scenario", "paper", *flags]) == 2
    line = _one_error_line(capsys)
    assert line.startswith("bacepipe: error:")
    assert needle in line


@pytest.mark.parametrize("command", ["compare", "sweep", "ablation"])
def test_experiments_reject_bad_fault_flags_before_running(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, "--seeds", "1", "--workers", "1", "--out", str(tmp_path / "x")]
    assert main([*argv, "--outage", "Mars:1:2"]) == 2
    assert "unknown region" in _one_error_line(capsys)
    assert not (tmp_path / "x").exists()


def test_parsers_give_hashable_tuples() -> None:
    assert parse_outage("EU-West:5:8") == ("EU-West", 5.0, 8.0)
    assert parse_link_degrade("EU-West:US-East-2:0.5:2:6") == (
        "EU-West",
        "US-East-2",
        0.5,
        2.0,
        6.0,
    )
    with pytest.raises(ValidationError):
        parse_link_degrade("EU-West:EU-West:0.5:2:6")


def test_simulate_json_lists_the_outage_then_the_completion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["simulate", "--scenario", "paper", "--outage", "EU-West:1:3", "--json", "-"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    outcomes = [[a["outcome"] for a in job["attempts"]] for job in data["jobs"]]
    assert ["outage", "completed"] in outcomes
    assert all(o[-1] == "completed" for o in outcomes)
    hit = next(j for j in data["jobs"] if len(j["attempts"]) == 2)
    assert hit["attempts"][0]["end_s"] == pytest.approx(3600.0)
    assert any(p["region"] == "EU-West" for p in hit["attempts"][0]["path"])
    assert hit["restarts"] == 1
    assert data["n_restarts"] >= 1
    assert data["wasted_gpu_hours"] > 0


def test_simulate_default_output_has_no_fault_columns(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["simulate", "--scenario", "paper"]) == 0
    plain = capsys.readouterr().out
    assert "restarts" not in plain and "wasted" not in plain
    # a rate of 0 configures nothing: the same bytes
    assert main(["simulate", "--scenario", "paper", "--gpu-failure-rate", "0"]) == 0
    assert capsys.readouterr().out == plain


def test_simulate_with_faults_shows_restarts_and_waste(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["simulate", "--scenario", "paper", "--gpu-failure-rate", "2e-4"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    head = out.splitlines()[0].split()
    assert head[-1] == "restarts"
    assert "  restarts " in out
    assert "  wasted GPU-hours " in out
    assert "  wasted cost " in out
    # an outage alone (no rate) also counts as configured faults
    argv = ["simulate", "--scenario", "paper", "--outage", "OC-East:100:101"]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[-1] == "restarts"


def test_compare_reports_restarts_and_wasted_cost_only_with_faults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["compare", "--seeds", "2", "--workers", "1", "--policies", "bace-pipe,lcf"]
    assert main([*base, "--out", str(tmp_path / "plain")]) == 0
    plain = capsys.readouterr().out
    assert "restarts" not in plain.splitlines()[0]
    with open(tmp_path / "plain" / "compare-runs.csv", encoding="utf-8") as fh:
        assert "n_restarts" not in next(csv.reader(fh))
    out = tmp_path / "faults"
    argv = [*base, "--out", str(out), "--gpu-failure-rate", "2e-4", "--restart-s", "300"]
    assert main(argv) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "restarts" in head and "wasted $" in head
    with open(out / "compare-runs.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["gpu_failure_rate"] for r in rows} == {"0.0002"}
    assert {r["restart_s"] for r in rows} == {"300.0"}
    assert sum(int(r["n_restarts"]) for r in rows) > 0
    with open(out / "compare-summary.csv", encoding="utf-8") as fh:
        summary = list(csv.DictReader(fh))
    assert "n_restarts_mean" in summary[0] and "wasted_cost_usd_mean" in summary[0]
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert data["knobs"]["gpu_failure_rate"] == 2e-4
    assert "wasted_cost_usd" in data["runs"][0]


def test_sweep_carries_outages_and_link_changes_to_every_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "sweep",
        "--seeds",
        "1",
        "--workers",
        "1",
        "--out",
        str(tmp_path),
        "--kind",
        "jobs",
        "--values",
        "8,12",
        "--policies",
        "bace-pipe",
        "--outage",
        "EU-West:1:3",
        "--outage",
        "EA-East:2:4",
        "--link-degrade",
        "EU-West:US-East-2:0.5:0:10",
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert all("restarts" in t for t in printed.split("sweep, n_jobs")[1:])
    data = json.loads((tmp_path / "sweep-jobs.json").read_text(encoding="utf-8"))
    assert data["knobs"]["outages"] == [["EU-West", 1.0, 3.0], ["EA-East", 2.0, 4.0]]
    assert data["knobs"]["link_changes"] == [["EU-West", "US-East-2", 0.5, 0.0, 10.0]]
    assert all(r["n_restarts"] >= 1 for r in data["runs"])
