"""`bacepipe evaluate`: heuristics and learned models on the same held-out episodes; the numbers
equal the simulator's, the paired ratios and wins/ties/losses recomputed here, strict JSON rows,
one-line errors."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.cli import main
from bacepipe_env.core.units import hours
from bacepipe_env.envs.registration import ENV_IDS
from bacepipe_env.experiments.evaluate import evaluate_policies, learned_display_name
from bacepipe_env.experiments.stats import estimate
from bacepipe_env.policies.registry import make_policy

ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "bacepipe_env/GeoPipe-v2"
POLICIES = ["bace-pipe", "sjf", "fcfs", "random", "sjf+full"]
FIRST, N = 1_000_000, 3
ROW_KEYS = {
    "env_id",
    "policy",
    "train_seed",
    "episode_seed",
    "avg_jct_h",
    "episode_return",
    "total_cost_usd",
    "carbon_kg",
    "steps",
    "illegal_actions",
    "replay",
}


def _simulated(name: str, seed: int) -> tuple[float, float, float]:
    """The simulator's run of policy ``name`` on the scenario the env resets to with ``seed``."""
    env = gym.make(ENV_ID)
    env.reset(seed=seed)
    scenario = env.unwrapped.scenario  # type: ignore[attr-defined]
    result = make_policy(name, seed=seed).simulate(scenario)
    env.close()
    return hours(result.avg_jct), result.total_cost, result.total_carbon


@pytest.fixture(scope="module")
def payload(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("evaluate") / "ev.json"
    argv = ["evaluate", "--env-id", ENV_ID, "--policies", ",".join(POLICIES)]
    argv += ["--episodes", str(N), "--first-seed", str(FIRST), "--json", str(out)]
    assert main(argv) == 0
    text = out.read_text()
    assert "NaN" not in text and "Infinity" not in text
    data: dict[str, Any] = json.loads(text)
    return data


def test_episodes_equal_the_simulator_bit_for_bit(payload: dict[str, Any]) -> None:
    rows = payload["rows"]
    assert len(rows) == len(POLICIES) * N
    for name in POLICIES:
        mine = [r for r in rows if r["policy"] == name]
        assert [r["episode_seed"] for r in mine] == list(range(FIRST, FIRST + N))
        for row in mine:
            jct, cost, carbon = _simulated(name, row["episode_seed"])
            assert row["avg_jct_h"] == jct, (name, row)
            assert row["total_cost_usd"] == cost, (name, row)
            assert row["carbon_kg"] == carbon, (name, row)
            assert row["illegal_actions"] == 0


def test_rows_schema_and_summary(payload: dict[str, Any]) -> None:
    for row in payload["rows"]:
        assert set(row) == ROW_KEYS
        assert row["env_id"] == ENV_ID and row["train_seed"] is None
        assert isinstance(row["steps"], int) and row["steps"] >= 1
    summary = payload["summary"]
    assert summary["env_id"] == ENV_ID and summary["reference"] == POLICIES[0]
    assert summary["first_seed"] == FIRST and summary["episodes"] == N
    assert [p["policy"] for p in summary["policies"]] == POLICIES
    for p in summary["policies"]:
        jcts = [r["avg_jct_h"] for r in payload["rows"] if r["policy"] == p["policy"]]
        assert p["avg_jct_h"]["mean"] == estimate(jcts).mean
        assert p["avg_jct_h"]["ci95"] == estimate(jcts).ci95


def test_paired_ratio_and_win_tie_loss_recomputed(payload: dict[str, Any]) -> None:
    rows = payload["rows"]
    ref = [r["avg_jct_h"] for r in rows if r["policy"] == POLICIES[0]]
    for p in payload["summary"]["policies"]:
        mine = [r["avg_jct_h"] for r in rows if r["policy"] == p["policy"]]
        ratios = [a / b for a, b in zip(mine, ref)]
        assert p["jct_ratio"]["mean"] == pytest.approx(sum(ratios) / N, rel=1e-12)
        assert p["jct_ratio"]["ci95"] == pytest.approx(estimate(ratios).ci95, rel=1e-9, abs=1e-15)
        wins = sum(a < b and not math.isclose(a, b, rel_tol=1e-9) for a, b in zip(mine, ref))
        ties = sum(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(mine, ref))
        assert (p["wins"], p["ties"], p["losses"]) == (wins, ties, N - wins - ties)
    reference = payload["summary"]["policies"][0]
    assert (reference["wins"], reference["ties"], reference["losses"]) == (0, N, 0)


def test_reference_flag_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["evaluate", "--env-id", ENV_ID, "--policies", "bace-pipe,fcfs", "--episodes", "2"]
    assert main([*argv, "--first-seed", "7", "--reference", "fcfs"]) == 0
    out = capsys.readouterr().out
    assert "JCT / fcfs" in out and "reset seeds 7..8" in out
    fcfs_line = next(line for line in out.splitlines() if line.startswith("fcfs "))
    assert "1.000 ± 0.000" in fcfs_line and "0/2/0" in fcfs_line
    report = evaluate_policies(ENV_ID, ["bace-pipe", "fcfs"], 2, 7, reference="fcfs")
    assert report.reference == "fcfs"
    assert report.format_table() in out


def test_json_to_stdout_is_the_only_output(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["evaluate", "--env-id", "bacepipe_env/GeoPipe-Fig1-v2", "--policies", "sjf"]
    assert main([*argv, "--episodes", "1", "--first-seed", "0", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rows"][0]["policy"] == "sjf"
    # one episode: no CI, written as null
    assert data["summary"]["policies"][0]["avg_jct_h"]["ci95"] is None


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bacepipe_env.cli", "evaluate", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--env-id", "nope", "--policies", "sjf"], "bacepipe_env/GeoPipe- + v2, Fig1-v2"),
        (["--env-id", ENV_ID, "--policies", "no-such-policy"], "no-such-policy"),
        (["--env-id", ENV_ID, "--policies", "sjf", "--episodes", "0"], "--episodes"),
        (["--env-id", ENV_ID, "--policies", "sjf", "--first-seed", "-1"], "--first-seed"),
        (["--env-id", ENV_ID, "--policies", "sjf,maskable_ppo:/no/such/model.zip"], "model file"),
        (["--env-id", ENV_ID, "--policies", "sjf", "--reference", "fcfs"], "--reference"),
        (["--env-id", ENV_ID, "--policies", ","], "--policies"),
        (["--env-id", ENV_ID, "--policies", "sjf,sjf"], "twice"),
        (["--env-id", ENV_ID, "--policies", "oracle"], "oracle"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], needle: str) -> None:
    defaults = {"--episodes": "1", "--first-seed": "0"}
    argv = list(args)
    for flag, value in defaults.items():
        if flag not in argv:
            argv += [flag, value]
    proc = _cli(*argv)
    assert proc.returncode == 2, proc
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0]
    assert proc.stdout == ""


def test_unknown_env_id_lists_every_id() -> None:
    proc = _cli("--env-id", "x", "--policies", "sjf", "--episodes", "1", "--first-seed", "0")
    assert proc.stderr.count("\n") == 1
    # the ids' shared start written once, then every id's rest, in registration order
    listed = re.search(
        r"unknown id; (\S+) \+ (.*) \(got 'x'\)$",
        proc.stderr.strip(),
    )
    assert listed, proc.stderr
    start, text = listed.group(1), listed.group(2)
    assert start == "bacepipe_env/GeoPipe-"

    # a family that shares a first word is written once, its tails grouped in turn:
    # Online-{v1, Preempt-v1, Announced-{v0, Preempt-v0}, ...}
    def expand(text: str) -> list[str]:
        names, depth, item = [], 0, ""
        for ch in text + ",":
            depth += (ch == "{") - (ch == "}")
            if ch == "," and depth == 0:
                family, _, tails = item.strip().partition("{")
                names += [family + t for t in expand(tails[:-1])] if tails else [family]
                item = ""
            else:
                item += ch
        return names

    assert [start + rest for rest in expand(text)] == list(ENV_IDS)


def test_learned_display_names() -> None:
    assert learned_display_name("maskable_ppo:runs/tiny/model.zip") == "learned:tiny"
    assert learned_display_name("ppo:runs/x/checkpoints/ckpt_128.zip") == "learned:ckpt_128"
    assert learned_display_name("dqn:model.zip") == "learned:model"


def test_learned_model_round_trip(tmp_path: Path) -> None:
    """A tiny MaskablePPO trained here, evaluated next to a heuristic on the same episodes:
    its rows equal its own play of the env it was trained with (~6 s, so not marked slow)."""
    pytest.importorskip("torch")
    pytest.importorskip("sb3_contrib")
    sys.path.insert(0, str(ROOT / "tests" / "train"))
    try:
        from train_helpers import TINY, run
    finally:
        sys.path.remove(str(ROOT / "tests" / "train"))
    from bacepipe_env.envs.agents import evaluate
    from bacepipe_env.learned import layout_kwargs, load_learned

    proc = run("-m", "train.learn", *TINY, "--logdir", str(tmp_path), "--run-name", "tiny")
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "tiny"
    spec = f"maskable_ppo:{run_dir / 'model.zip'}"
    out = tmp_path / "ev.json"
    argv = ["evaluate", "--env-id", ENV_ID, "--policies", f"sjf,{spec}", "--episodes", "2"]
    assert main([*argv, "--first-seed", "5", "--json", str(out), "--reference", spec]) == 0
    data = json.loads(out.read_text())
    learned = [r for r in data["rows"] if r["policy"] == "learned:tiny"]
    config = json.loads((run_dir / "config.json").read_text())
    assert [r["train_seed"] for r in learned] == [config["train"]["seed"]] * 2
    assert data["summary"]["reference"] == "learned:tiny"
    agent = load_learned(spec)
    env = gym.make(ENV_ID, **layout_kwargs(agent.env_kwargs)).unwrapped
    expected = evaluate(env, agent, [5, 6])
    assert [r["avg_jct_h"] for r in learned] == [e.avg_jct_h for e in expected]
    assert [r["total_cost_usd"] for r in learned] == [e.total_cost_usd for e in expected]
    assert [r["steps"] for r in learned] == [e.steps for e in expected]


def test_world_settings_change_every_policys_episodes_alike() -> None:
    """``env_kwargs={"n_jobs": 3}``: each policy plays the 3-job scenario the env resets to
    with that setting, equal to the simulator's run of that scenario."""
    report = evaluate_policies(ENV_ID, ["sjf", "fcfs"], 2, FIRST, env_kwargs={"n_jobs": 3})
    for row in report.rows():
        env = gym.make(ENV_ID, n_jobs=3)
        env.reset(seed=row["episode_seed"])
        scenario = env.unwrapped.scenario  # type: ignore[attr-defined]
        env.close()
        assert len(scenario.jobs) == 3
        result = make_policy(row["policy"], seed=row["episode_seed"]).simulate(scenario)
        assert row["avg_jct_h"] == hours(result.avg_jct)
    full = evaluate_policies(ENV_ID, ["sjf"], 1, FIRST).rows()[0]
    assert full["avg_jct_h"] != report.rows()[0]["avg_jct_h"]  # the 8-job episode differs


def test_one_reward_scores_every_policy() -> None:
    """The reward changes the return, never the schedule: the same JCT and cost, and the
    return of a cost-blind reward differs from the default's."""
    plain = evaluate_policies(ENV_ID, ["sjf"], 2, FIRST, env_kwargs={"reward": None}).rows()
    blind = evaluate_policies(
        ENV_ID, ["sjf"], 2, FIRST, env_kwargs={"reward": {"cost_weight": 0.0}}
    ).rows()
    for a, b in zip(plain, blind):
        assert (a["avg_jct_h"], a["total_cost_usd"]) == (b["avg_jct_h"], b["total_cost_usd"])
        assert a["episode_return"] < b["episode_return"] < 0  # cost no longer charged


def test_an_unknown_env_keyword_is_one_line() -> None:
    from bacepipe_env.errors import BacepipeError

    with pytest.raises(BacepipeError, match="n_jbos") as err:
        evaluate_policies(ENV_ID, ["sjf"], 1, FIRST, env_kwargs={"n_jbos": 3})
    assert "\n" not in str(err.value)
