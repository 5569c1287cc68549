"""The `bacepipe` command: readable output, JSON that matches the Python API, one-line errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from bacepipe_env import bace_pipe, load_scenario
from bacepipe_env.cli import main


def test_simulate_paper_prints_every_job_and_totals(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--scenario", "paper", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    scenario = load_scenario("paper", seed=0)
    for job in scenario.jobs:
        assert f"\n{job.name} " in out
        assert job.model.name in out
    for label in ("average JCT", "total cost", "makespan", "GPU utilisation"):
        assert label in out
    # Paths are printed as region:GPUs; every job of `paper` runs somewhere in Table II.
    assert any(f"{name}:" in out for name in scenario.cluster.names)


def test_json_output_matches_the_python_api(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    argv = ["simulate", "--scenario", "paper", "--seed", "3", "--gpu-scale", "0.5"]
    assert main([*argv, "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    expected = bace_pipe().simulate(load_scenario("paper", seed=3, gpu_scale=0.5))
    assert data["avg_jct_s"] == expected.avg_jct
    assert data["total_cost_usd"] == expected.total_cost
    assert data["params"]["gpu_scale"] == 0.5
    assert [j["job_id"] for j in data["jobs"]] == [r.job_id for r in expected.records]
    for row, rec in zip(data["jobs"], expected.records):
        assert sum(p["gpus"] for p in row["path"]) == rec.n_gpus
        assert row["jct_s"] == rec.jct


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bacepipe_env.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_unknown_scenario_is_one_line_and_exit_2() -> None:
    proc = _run("simulate", "--scenario", "no-such-scenario")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "no-such-scenario" in lines[0] and "paper" in lines[0]
    assert "Traceback" not in proc.stderr


def test_invalid_scenario_file_names_the_field(tmp_path: Path) -> None:
    spec = json.loads(
        (Path(__file__).parents[1] / "bacepipe_env/scenarios/data/fig1.json").read_text()
    )
    spec["regions"][2]["gpus"] = 0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec))
    proc = _run("simulate", "--scenario", str(path))
    assert proc.returncode == 2
    assert (
        proc.stderr.strip() == "bacepipe: error: regions[2].gpus: must be in [1, 1,000,000] (got 0)"
    )


@pytest.mark.parametrize(
    "flag,value", [("--gpu-scale", "0"), ("--bandwidth-scale", "-1"), ("--jobs", "0")]
)
def test_out_of_range_knobs_exit_2(flag: str, value: str) -> None:
    proc = _run("simulate", "--scenario", "paper", flag, value)
    assert proc.returncode == 2
    assert flag in proc.stderr
    assert "Traceback" not in proc.stderr


def test_package_imports_neither_torch_nor_sb3() -> None:
    code = (
        "import sys, bacepipe_env, bacepipe_env.cli, bacepipe_env.envs; "
        "bad = [m for m in ('torch', 'stable_baselines3', 'sb3_contrib') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_core_has_no_gymnasium_or_torch_import() -> None:
    # The simulator core stays free of the Gym adapter's and the learners' libraries; only
    # bacepipe_env/envs (and the registration call in __init__) may use gymnasium.
    root = Path(__file__).parents[1] / "bacepipe_env"
    core_dirs = ["core", "scheduling", "policies", "scenarios", "experiments"]
    offenders = []
    for d in core_dirs:
        for path in (root / d).rglob("*.py"):
            for line in path.read_text().splitlines():
                words = line.strip().split()
                if words[:1] in (["import"], ["from"]) and len(words) > 1:
                    top = words[1].split(".")[0]
                    if top in {"gymnasium", "gym", "torch", "stable_baselines3", "sb3_contrib"}:
                        offenders.append(f"{path.relative_to(root)}: {line.strip()}")
    assert offenders == []


def test_scenarios_lists_online_with_its_description(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenarios"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = {line.split()[0]: line.split(None, 1)[1] for line in lines}
    assert list(listed) == ["fig1", "paper", "paper-aws", "online"]
    assert listed["online"] == load_scenario("online").description
    assert "Philly" in listed["online"] and "hourly" in listed["online"]


# `bacepipe simulate --scenario paper --seed 0` as the README's quick start printed it before
# carbon, egress and the JCT percentiles were reported (commit b99cc20). Under the default flat
# prices every one of these lines is still printed, to the character: a job row gains a
# `carbon kg` cell at its end, the totals gain lines of their own.
PREVIOUS_SIMULATE_HEAD = (
    "job  model            dataset       K*  floor  GPUs  path                                "
    "       wait h  exec h   JCT h    cost $"
)
PREVIOUS_SIMULATE_ROWS = [
    "J1   FLM-101B         OpenWebText   80     40    40  US-East-2:40                        "
    "         0.73  974.81  975.54  1,824.85",
    "J8   Qwen2.5-14B      Alpaca-52k    48      7    48  EA-East:48                          "
    "         0.00    0.62    0.62      1.70",
]
PREVIOUS_SIMULATE_TOTALS = [
    "  average JCT            160.63 h",
    "  total cost           2,950.15 $",
    "  makespan               975.54 h",
    "  GPU utilisation          16.9 %",
]
PAPER = json.loads(
    (Path(__file__).parents[1] / "bacepipe_env/scenarios/data/paper.json").read_text()
)


def _cells(line: str) -> list[str]:
    return [c for c in line.strip().split("  ") if c.strip()]


def test_simulate_flat_default_prints_the_previous_numbers_and_carbon(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["simulate", "--scenario", "paper", "--seed", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(PREVIOUS_SIMULATE_HEAD)
    assert _cells(lines[0][len(PREVIOUS_SIMULATE_HEAD) :]) == ["carbon kg"]  # no egress column
    for old in PREVIOUS_SIMULATE_ROWS:
        (row,) = [line for line in lines if line.startswith(old[:4])]
        assert row.startswith(old), (row, old)
    for previous in PREVIOUS_SIMULATE_TOTALS:
        assert previous in lines
    assert lines[11] == (
        "scenario paper, policy bace-pipe, 8 jobs, greedy admission, memory checked, flat prices"
    )
    assert not any("egress" in line for line in lines)
    # Each job's carbon: its GPUs per region x execution hours x the file's kW per GPU x the
    # region's gCO2e/kWh, in kg.
    power = PAPER["constants"]["power_kw"]
    intensity = [r["carbon_g_per_kwh"] for r in PAPER["regions"]]
    result = bace_pipe().simulate(load_scenario("paper", seed=0))
    total = 0.0
    for rec, line in zip(result.records, lines[2:10], strict=True):
        kg = sum(
            n * rec.execution / 3600 * power * intensity[r] / 1000
            for r, n in zip(rec.placement.path, rec.placement.gpus, strict=True)
        )
        total += kg
        assert float(_cells(line)[-1].replace(",", "")) == pytest.approx(kg, abs=0.005 + 1e-9)
    carbon = next(line for line in lines if line.startswith("  total carbon"))
    assert carbon.endswith(" kg CO2e")
    assert float(carbon.split()[2].replace(",", "")) == pytest.approx(total, abs=0.005 + 1e-9)
    for label in ("JCT p50", "JCT p95", "JCT p99", "mean slowdown"):
        assert any(line.startswith(f"  {label} ") for line in lines), label


def test_a_scenario_without_carbon_data_prints_no_carbon_total(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """fig1's regions carry no carbon intensity (0 gCO2e/kWh under flat prices): its total is
    not 0.00 kg, it is unknown."""
    scenario = load_scenario("fig1")
    assert all(c == 0 for c in scenario.cluster.carbon)
    assert main(["simulate", "--scenario", "fig1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (carbon,) = [line for line in lines if line.startswith("  total carbon")]
    assert carbon.split()[2:] == ["n/a", "(the", "scenario", "has", "no", "carbon", "data)"]


def test_simulate_hourly_json_carries_the_start_hour_and_per_job_costs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["simulate", "--scenario", "paper", "--prices", "hourly", "--start-hour", "100"]
    assert main([*argv, "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["start_hour"] == 100
    assert data["prices"] == "hourly"
    assert data["params"]["start_hour"] == 100 and data["params"]["prices"] == "hourly"
    assert data["egress"] is False and data["total_egress_usd"] == 0.0
    jobs = data["jobs"]
    assert len(jobs) == 8
    assert math.fsum(j["cost_usd"] for j in jobs) == pytest.approx(data["total_cost_usd"], 1e-12)
    assert math.fsum(j["carbon_kg"] for j in jobs) == pytest.approx(
        data["total_carbon_kg"], rel=1e-12
    )
    assert all(j["egress_usd"] == 0.0 for j in jobs)
    # The schedule is the flat one (BACE-Pipe does not look at prices over time), the bill
    # is not.
    flat = bace_pipe().simulate(load_scenario("paper", seed=0))
    assert [j["jct_s"] for j in jobs] == [r.jct for r in flat.records]
    assert data["total_cost_usd"] != flat.total_cost
    assert data["total_carbon_kg"] != flat.total_carbon
    # and it is what the Python API computes with the same keywords
    hourly = bace_pipe().simulate(load_scenario("paper", seed=0, prices="hourly", start_hour=100))
    assert data["total_cost_usd"] == hourly.total_cost
    assert data["total_carbon_kg"] == hourly.total_carbon


def test_simulate_random_start_hour_is_drawn_from_the_seed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    hours_drawn = []
    for seed in ("0", "1"):
        argv = ["simulate", "--scenario", "paper", "--seed", seed, "--start-hour", "random"]
        assert main([*argv, "--prices", "hourly", "--json", "-"]) == 0
        data = json.loads(capsys.readouterr().out)
        expected = load_scenario("paper", seed=int(seed), start_hour="random")
        assert data["start_hour"] == expected.params["start_hour"]
        assert 0 <= data["start_hour"] < 8760
        hours_drawn.append(data["start_hour"])
    assert hours_drawn[0] != hours_drawn[1]


def test_egress_changes_only_the_egress_figures(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--scenario", "paper", "--seed", "0"]
    assert main(argv) == 0
    plain = capsys.readouterr().out.splitlines()
    assert main([*argv, "--egress"]) == 0
    charged = capsys.readouterr().out.splitlines()
    # The table: the same lines plus an `egress $` column (and a total line), the header line
    # says so.
    head = charged[0]
    cut = head.index("  egress $")
    assert head[:cut] == plain[0]
    for old, new in zip(plain[1:10], charged[1:10], strict=True):
        assert new[:cut].rstrip() == old
    assert charged[11] == plain[11] + ", egress charged"
    assert [x for x in charged[12:] if not x.startswith("  egress cost")] == plain[12:]
    # The JSON: only the egress fields differ; the charge is the per-job sum, 0 on a job that
    # stays in one region, and linear in the rate.
    results = {}
    for flag in ([], ["--egress"], ["--egress", "0.05"]):
        assert main([*argv, *flag, "--json", "-"]) == 0
        results[" ".join(flag)] = json.loads(capsys.readouterr().out)
    off, on, dear = results[""], results["--egress"], results["--egress 0.05"]
    egress_keys = {"egress", "total_egress_usd"}
    assert {k: v for k, v in on.items() if k not in egress_keys | {"jobs", "params"}} == {
        k: v for k, v in off.items() if k not in egress_keys | {"jobs", "params"}
    }
    assert on["params"] == {**off["params"], "egress": True}
    for a, b in zip(off["jobs"], on["jobs"], strict=True):
        assert {k: v for k, v in a.items() if k != "egress_usd"} == {
            k: v for k, v in b.items() if k != "egress_usd"
        }
        assert (b["egress_usd"] > 0) == (len(b["path"]) > 1)
    assert on["egress"] is True and off["egress"] is False
    assert on["total_egress_usd"] > 0
    assert math.fsum(j["egress_usd"] for j in on["jobs"]) == pytest.approx(
        on["total_egress_usd"], rel=1e-12
    )
    assert dear["total_egress_usd"] == pytest.approx(2.5 * on["total_egress_usd"], rel=1e-12)
    egress_line = next(x for x in charged if x.startswith("  egress cost"))
    assert egress_line == f"  egress cost      {on['total_egress_usd']:12,.2f} $"


@pytest.mark.parametrize(
    ("flag", "value", "needle"),
    [
        ("--preemption", "lifo", "unknown rule"),
        ("--preemption", "srtf:factor=0.5", "factor must be in"),
        ("--preempt-checkpoint", "lose", "lose-since-checkpoint"),
        ("--preempt-checkpoint", "-5", "lose-since-checkpoint"),
        ("--max-preemptions", "2.5", "whole number"),
        ("--max-preemptions", "-1", "[0, 1,000]"),
    ],
)
def test_bad_preemption_flags_are_one_line_and_exit_2(flag: str, value: str, needle: str) -> None:
    proc = _run("simulate", "--scenario", "paper", flag, value)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"bacepipe: error: {flag}")
    assert needle in lines[0] and "Traceback" not in proc.stderr


def test_preemption_flags_reach_the_run() -> None:
    proc = _run(
        "simulate", "--scenario", "online", "--jobs", "40", "--seed", "1",
        "--policy", "sjf+finish-aware", "--preemption", "srtf",
        "--preempt-checkpoint", "lose-since-checkpoint", "--max-preemptions", "2",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "srtf preemption" in proc.stdout and "preemptions" in proc.stdout
