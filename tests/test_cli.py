"""The `bacepipe` command: readable output, JSON that matches the Python API, one-line errors."""

from __future__ import annotations

import json
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
    assert proc.stderr.strip() == "bacepipe: error: regions[2].gpus: must be >= 1 (got 0)"


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
