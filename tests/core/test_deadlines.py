"""Per-job deadlines (semantics §15): a golden scenario worked out by hand, the one-line
errors of a bad deadline or slack, and the outputs that show the deadline metrics only when
some job has a deadline.

Golden numbers. Constants S = m = 1, peak 1 TFLOP/s, mfu 1. Model M2: N = 3e12, 2 layers,
hidden 5e8, batch 4 -> t_comp(L) = 2 * 3e12 / (L * 1e12) = 6 / L s; activations A = 1e9 bytes
and an 8 Gbps (1e9 B/s) intra-region hop takes 1 s, so t_iter(k) = 2 ((k-1) + k * 6/k +
3 max(6/k, 1)): t_iter(1) = 48, t_iter(2) = 32 -> K* = 2. Dataset D: 900 samples -> 225
iterations, so the isolated run time E* = 225 * 32 = 7200 s and one GPU takes 225 * 48 =
10800 s.

R0 has 2 GPUs, R1 one. J1 (deadline_h 2.5: due at 9000 s) starts at 0 on R0's two GPUs and
finishes at 7200 s: tardiness 0, met. J2 (slack 1.25: due at 0 + 1.25 * 7200 = 9000 s) finds
R0 full and starts at 0 on R1's one GPU, finishing at 10800 s: tardiness 10800 - 9000 = 1800
s, missed. Miss rate 1/2; total tardiness 1800 s = 0.5 h.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bacepipe_env.core import Job
from bacepipe_env.core.job import ModelSpec
from bacepipe_env.envs.reward import episode_info
from bacepipe_env.errors import ScenarioError
from bacepipe_env.experiments.summary import format_run
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import build_scenario, load_scenario

CONSTANTS = {"seq_len": 1, "micro_batch": 1, "peak_tflops": 1.0, "mfu": 1.0, "power_kw": 0.5}


def _spec(*jobs: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "deadlines",
        "ignore_memory": True,  # the paper's literal semantics: M2 fits no 48 GB GPU
        "constants": CONSTANTS,
        "regions": [
            {"name": "R0", "gpus": 2, "price_usd_per_kwh": 0.1, "intra_gbps": 8},
            {"name": "R1", "gpus": 1, "price_usd_per_kwh": 0.1, "intra_gbps": 8},
        ],
        "links": {"pairs": [{"a": "R0", "b": "R1", "gbps": 8}]},
        "models": [{"name": "M2", "params": 3e12, "layers": 2, "hidden": 500_000_000, "batch": 4}],
        "datasets": [{"name": "D", "samples": 900}],
        "jobs": [{"model": "M2", "dataset": "D", **job} for job in jobs],
    }


GOLDEN = _spec({"deadline_h": 2.5}, {"slack": 1.25})


@pytest.mark.parametrize("policy", ["fcfs", "bace-pipe"])
def test_golden_one_job_meets_one_misses_by_1800_s(policy: str) -> None:
    scenario = build_scenario(GOLDEN)
    assert scenario.world_profiles[2].ideal_execution == 7200.0  # 225 * 32
    assert scenario.deadlines == {1: 9000.0, 2: 9000.0}  # 2.5 h; 1.25 * 7200 s
    result = make_policy(policy).simulate(scenario)
    a, b = result.records
    assert (a.finish_time, a.deadline, a.tardiness, a.missed) == (7200.0, 9000.0, 0.0, False)
    assert (b.finish_time, b.deadline, b.tardiness, b.missed) == (10800.0, 9000.0, 1800.0, True)
    assert result.miss_rate == 0.5 and result.total_tardiness == 1800.0


def test_golden_outputs_carry_the_deadline_metrics() -> None:
    scenario = build_scenario(GOLDEN)
    result = make_policy("fcfs").simulate(scenario)
    out = result.to_dict(scenario.cluster.names)
    assert (out["miss_rate"], out["total_tardiness_s"], out["total_tardiness_h"]) == (
        0.5,
        1800.0,
        0.5,
    )
    job = out["jobs"][1]
    assert (job["deadline_s"], job["tardiness_s"], job["missed"]) == (9000.0, 1800.0, True)
    json.dumps(out)  # JSON-ready
    info = episode_info(result)
    assert info["episode_miss_rate"] == 0.5 and info["episode_total_tardiness_h"] == 0.5
    text = format_run(result, scenario.cluster.names)
    assert "  deadline misses          50.0 %" in text
    assert "  total tardiness          0.50 h" in text  # 1800 s = 0.5 h


def test_a_world_without_deadlines_shows_none_of_it() -> None:
    scenario = load_scenario("fig1")
    assert scenario.deadlines == {}
    result = make_policy("bace-pipe").simulate(scenario)
    out = result.to_dict(scenario.cluster.names)
    text = json.dumps(out)
    assert "miss_rate" not in text and "tardiness" not in text and "deadline" not in text
    assert not any("tardiness" in k or "miss" in k for k in episode_info(result))
    summary = format_run(result, scenario.cluster.names)
    assert "deadline" not in summary and "tardiness" not in summary


def test_an_absolute_deadline_is_taken_as_given_and_slack_scales_the_isolated_time() -> None:
    # J1 alone: due 1 h (3600 s) though it needs 7200 s -> late by 3600 s
    result = make_policy("fcfs").simulate(build_scenario(_spec({"deadline_h": 1.0})))
    (rec,) = result.records
    assert (rec.deadline, rec.tardiness, rec.missed) == (3600.0, 3600.0, True)
    # a submit at 0.5 h and slack 2: due at 1800 + 2 * 7200 = 16200 s; finishes 9000 s
    result = make_policy("fcfs").simulate(build_scenario(_spec({"submit_h": 0.5, "slack": 2})))
    (rec,) = result.records
    assert (rec.deadline, rec.tardiness, rec.missed) == (16200.0, 0.0, False)
    assert result.miss_rate == 0.0


BAD = [
    ({"deadline_h": -1}, r"^jobs\[0\]\.deadline_h: must be in \(0, 1,000,000\] h \(got -1\)$"),
    ({"deadline_h": float("nan")}, r"^jobs\[0\]\.deadline_h: .*\(got nan\)$"),
    ({"deadline_h": "soon"}, r"^jobs\[0\]\.deadline_h: .*\(got 'soon'\)$"),
    (
        {"submit_h": 2.0, "deadline_h": 1.0},
        r"^jobs\[0\]\.deadline_h: must be after the submit time \(2 h\) \(got 1(\.0)?\)$",
    ),
    ({"slack": 0}, r"^jobs\[0\]\.slack: must be in \(0, 1,000,000\] .*\(got 0\)$"),
    ({"slack": -2.0}, r"^jobs\[0\]\.slack: .*\(got -2\.0\)$"),
    ({"slack": "x"}, r"^jobs\[0\]\.slack: .*\(got 'x'\)$"),
    (
        {"deadline_h": 3.0, "slack": 2.0},
        r"^jobs\[0\]\.deadline_h: give either a deadline or a slack, not both",
    ),
]


@pytest.mark.parametrize(("row", "message"), BAD)
def test_a_bad_deadline_or_slack_is_one_line(row: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        build_scenario(_spec(row))


def test_a_job_built_in_python_checks_its_deadline() -> None:
    model = ModelSpec("M", 1e9, 8, 2048)
    with pytest.raises(ScenarioError, match=r"^job 1\.deadline: must be after the submit"):
        Job(1, model, "D", 800, 8, submit_time=100.0, deadline=50.0)
    with pytest.raises(ScenarioError, match=r"^job 1\.slack: "):
        Job(1, model, "D", 800, 8, slack=math.nan)
    with pytest.raises(ScenarioError, match=r"^job 1\.deadline: give either"):
        Job(1, model, "D", 800, 8, deadline=100.0, slack=2.0)
    assert Job(1, model, "D", 800, 8, deadline=100.0).deadline == 100.0


def test_the_cli_refuses_a_bad_deadline_with_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_spec({"submit_h": 2.0, "deadline_h": 1.0})))
    proc = subprocess.run(
        [sys.executable, "-m", "bacepipe_env.cli", "simulate", "--scenario", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "jobs[0].deadline_h: must be after the submit time" in lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("uniform:3,1", "the high slack must be at least the low (3)"),
        ("banana", "must be 'none', 'uniform:LOW,HIGH' or 'fixed:X'"),
        ("uniform:-1,2", "must be in (0, 1,000,000]"),
        ("fixed:nan", "must be finite"),
    ],
)
def test_a_bad_deadline_slack_flag_is_one_line_and_exit_2(text: str, reason: str) -> None:
    argv = ["simulate", "--scenario", "fig1", "--deadline-slack", text]
    proc = subprocess.run(
        [sys.executable, "-m", "bacepipe_env.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bacepipe: error: --deadline-slack: ")
    assert reason in lines[0] and "Traceback" not in proc.stderr


def test_a_bad_deadline_slack_in_a_file_or_python_is_a_scenario_error() -> None:
    with pytest.raises(ScenarioError, match=r"^deadline_slack: must be 'none', "):
        build_scenario({**GOLDEN, "deadline_slack": 2.0})
    with pytest.raises(ScenarioError, match=r"^deadline_slack: the high slack"):
        load_scenario("fig1", deadline_slack="uniform:2,1")


def test_the_knob_gives_a_slack_only_to_jobs_without_a_deadline() -> None:
    # J1 keeps its 2.5 h; J2 (no deadline of its own) is due at 0 + 2 * 7200 = 14400 s
    spec = {**_spec({"deadline_h": 2.5}, {}), "deadline_slack": "fixed:2"}
    scenario = build_scenario(spec)
    assert scenario.deadlines == {1: 9000.0, 2: 14400.0}
    assert scenario.params["deadline_slack"] == "fixed:2"
    result = make_policy("fcfs").simulate(scenario)
    assert [r.missed for r in result.records] == [False, False]  # 7200 <= 9000, 10800 <= 14400
