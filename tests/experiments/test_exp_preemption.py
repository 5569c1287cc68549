"""The preemption evidence: reproduction.md's ranking section (its cells are direct simulations)
and ``benchmarks/preemption.py`` (its committed tables are the committed JSON's, and a run's
rows are what the simulator gives)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from bacepipe_env.core.units import hours
from bacepipe_env.experiments.preempt_ranking import POLICIES, RULE, render, run_ranking
from bacepipe_env.experiments.runner import RANDOM, RunSpec, spec_scenario
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import load_scenario

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ranking():
    return run_ranking([0, 1], workers=1, progress=False)


def test_ranking_cells_are_direct_simulations(ranking) -> None:
    for world, scenario in (("paper", "paper"), ("online", "online"), ("random", RANDOM)):
        for rule in ("none", RULE):
            for policy in ("bace-pipe", "sjf+finish-aware"):
                for seed in (0, 1):
                    spec = RunSpec(policy, scenario, seed, (("preemption", rule),))
                    direct = make_policy(policy, seed=seed).simulate(spec_scenario(spec))
                    run = ranking.runs[(world, rule, policy, seed)]
                    assert run.avg_jct_h == hours(direct.avg_jct)
                    assert run.n_preemptions == direct.n_preemptions
                    assert run.preemption == direct.preemption == rule
    # the online world's rule is the scenario's: the same runs as the knob on load_scenario
    plain = load_scenario("online", seed=1, preemption=RULE)
    expected = make_policy("bace-pipe").simulate(plain)
    assert ranking.runs[("online", RULE, "bace-pipe", 1)].avg_jct_h == hours(expected.avg_jct)
    assert sum(ranking.values("online", RULE, "bace-pipe", "n_preemptions")) > 0


def test_the_random_world_is_the_random_generators(ranking) -> None:
    import numpy as np

    from bacepipe_env.scenarios.generators import RandomScenarioGenerator

    scenario = RandomScenarioGenerator()(np.random.default_rng(1))
    direct = make_policy("lcf").simulate(scenario)
    assert ranking.runs[("random", "none", "lcf", 1)].avg_jct_h == hours(direct.avg_jct)


def test_the_section_ranks_every_policy_in_every_world(ranking) -> None:
    text = "\n".join(render(ranking))
    assert text.startswith("## Preemption: BACE-Pipe's ranking")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "| world |" not in line]
    assert len(rows) == 3 * len(POLICIES)
    for world in ("paper", "online", "random"):
        ranks = sorted(int(r.split(" | ")[3]) for r in rows if r.startswith(f"| {world} |"))
        assert ranks[0] == 1 and len(ranks) == len(POLICIES)
        assert f"On `{world}` BACE-Pipe" in text


def test_the_report_carries_the_section() -> None:
    text = " ".join((ROOT / "docs" / "reproduction.md").read_text(encoding="utf-8").split())
    assert "## Preemption: BACE-Pipe's ranking when a job may stop another" in text
    for world in ("paper", "online", "random"):
        assert re.search(rf"On `{world}` BACE-Pipe (keeps|goes from) rank", text)


# ------------------------------------------------------------------- benchmarks/preemption.py
@pytest.fixture(scope="module")
def bench(benchmark_module) -> ModuleType:
    return benchmark_module("preemption")


def test_the_docs_carry_the_tables_of_the_committed_results(bench) -> None:
    data = json.loads(bench.RESULTS.read_text())
    summaries = bench.summarise(data)
    from benchmarks.tables import between  # importable once the script put the root on sys.path

    assert between(bench.DOCS, bench.MARKERS) == "\n" + bench.markdown(summaries, data), (
        "docs/preemption.md: run python benchmarks/preemption.py table"
    )
    # every world, every policy, the episodes each world promises
    for world, (_, _, episodes) in bench.WORLDS.items():
        rows = [r for r in data["rows"] if r["world"] == world]
        assert len(rows) == episodes
        assert {r["seed"] for r in rows} == {bench.HELD_OUT + i for i in range(episodes)}
        assert all(set(bench.POLICIES) <= set(r) for r in rows)


def test_a_benchmark_row_is_the_simulators(bench) -> None:
    row = bench._episode("tiny", "bacepipe_env/GeoPipe-Online-v1", {"n_jobs": 30}, 2_000_000)
    import gymnasium as gym

    env = gym.make("bacepipe_env/GeoPipe-Online-v1", n_jobs=30)
    env.reset(seed=2_000_000)
    scenario = env.unwrapped.scenario
    for name in ("sjf+finish-aware", "sjf+finish-aware+srtf", "bace-pipe+srtf"):
        direct = make_policy(name, seed=2_000_000).simulate(scenario)
        assert row[name]["avg_jct_h"] == direct.avg_jct / 3600
        assert row[name]["preemptions"] == direct.n_preemptions
        assert row[name]["cost_usd"] == direct.total_cost
    # +lose: the same jobs with the work since the last checkpoint lost at a preemption
    lose = load_scenario("online", n_jobs=30, preempt_checkpoint_s="lose-since-checkpoint")
    assert lose.faults is not None and lose.faults.preempt_checkpoint_s is None
    lost = row["sjf+finish-aware+srtf+lose"]
    assert lost["preemptions"] == 0 or lost["wasted_gpu_h"] > 0


# ------------------------------------------------------------- --preemption on every command
def test_evaluate_plays_a_preemptive_policy_with_its_rule() -> None:
    import gymnasium as gym

    from bacepipe_env.experiments.evaluate import evaluate_policies

    for env_id in ("bacepipe_env/GeoPipe-Online-v1", "bacepipe_env/GeoPipe-Online-Preempt-v1"):
        report = evaluate_policies(env_id, ["sjf+finish-aware+srtf"], 1, 2_000_000)
        env = gym.make(env_id)
        env.reset(seed=2_000_000)
        direct = make_policy("sjf+finish-aware+srtf").simulate(env.unwrapped.scenario)
        (episode,) = report.policies[0].episodes
        assert episode.avg_jct_h == direct.avg_jct / 3600 and direct.n_preemptions > 0
    # --preemption: the rule of every policy without its own
    ruled = evaluate_policies(
        "bacepipe_env/GeoPipe-Online-v1", ["sjf+finish-aware"], 1, 2_000_000, preemption="srtf"
    )
    assert ruled.policies[0].episodes[0].avg_jct_h == report.policies[0].episodes[0].avg_jct_h
    with pytest.raises(ValueError, match="make the preemptions themselves"):
        evaluate_policies(PREEMPT_ID, ["sjf"], 1, 0, preemption="srtf")


PREEMPT_ID = "bacepipe_env/GeoPipe-Online-Preempt-v1"


@pytest.mark.parametrize("command", ["online", "faults"])
def test_online_and_faults_take_a_preemption_rule(command: str, tmp_path: Path) -> None:
    from bacepipe_env.cli import main

    args = ["--out", str(tmp_path), "--seeds", "1", "--policies", "bace-pipe"]
    args += ["--loads", "0.8", "--jobs", "40"] if command == "online" else ["--rates", "0"]
    assert main([command, *args, "--preemption", "srtf"]) == 0
    text = (tmp_path / f"{command}.md").read_text(encoding="utf-8")
    assert "--preemption srtf`" in text
    assert "runs under `srtf`" in " ".join(text.split())
    assert main([command, *args, "--preemption", "lifo"]) == 2
