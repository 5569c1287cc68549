"""benchmarks/learned.py: docs/learned.md carries the table of the committed results."""

from __future__ import annotations

import json


def test_the_docs_carry_the_table_of_the_committed_results(benchmark_module) -> None:
    bench = benchmark_module("learned")
    data = json.loads(bench.LEARNED_JSON.read_text())
    from benchmarks.tables import between  # importable once the script put the root on sys.path

    assert between(bench.DOCS, "learned-table") == "\n" + bench.markdown(data["summary"]), (
        "docs/learned.md: run python benchmarks/learned.py table"
    )


def test_the_gain_captured_is_the_share_of_the_planners_gain(benchmark_module) -> None:
    bench = benchmark_module("learned")
    # the planner is 2% below the best heuristic (0.98), the agent 1% (0.99): half of it
    assert abs(bench.captured(0.99, 0.98) - 0.5) < 1e-12
    assert abs(bench.captured(0.98, 0.98) - 1.0) < 1e-12  # all of it
    assert abs(bench.captured(1.01, 0.98) - (-0.5)) < 1e-12  # 1% worse: -0.01 / 0.02
    assert bench.captured(0.99, 1.0) is None  # the planner gains nothing: no share to take
    assert bench.captured(0.99, 1.003) is None


def test_every_recipe_trains_after_the_one_it_starts_from(benchmark_module) -> None:
    bench = benchmark_module("learned")
    order = list(bench.RECIPES)
    for recipe, envs in bench.RECIPES.items():
        for env_id, spec in envs.items():
            assert spec.command in bench.COMMON
            folder = bench.RESULTS / "slug" / f"{recipe}-1"
            cmd = bench._command(recipe, env_id, 1, folder)
            assert cmd[:2] == ["train", spec.command]
            assert cmd[cmd.index("--seed") + 1] == "1"
            assert json.loads(cmd[cmd.index("--env-kwargs") + 1]) == {
                **bench.ENV_KWARGS,
                **spec.env_kwargs,
            }
            if spec.init_from is None:
                assert "--init-from" not in cmd
                continue
            # PPO starts from the same seed's model of the recipe that trains before it
            assert order.index(spec.init_from) < order.index(recipe)
            assert env_id in bench.RECIPES[spec.init_from]
            start = cmd[cmd.index("--init-from") + 1]
            assert start == f"benchmarks/results/learned/slug/{spec.init_from}-1/model.zip"


def test_every_env_with_a_recipe_has_a_planner(benchmark_module) -> None:
    bench = benchmark_module("learned")
    from bacepipe_env.policies.registry import policy_info

    for envs in bench.RECIPES.values():
        for env_id in envs:
            name = bench.PLANNERS[env_id]
            assert name.startswith("rollout:")
            policy_info(name)  # a registered planner, or a one-line error


def _row(policy: str, seed: int, jct: float, miss: float, train_seed: int | None = None) -> dict:
    return {
        "policy": policy,
        "train_seed": train_seed,
        "episode_seed": seed,
        "avg_jct_h": jct,
        "total_cost_usd": 100.0,
        "episode_return": -80 * miss,
        "miss_rate": miss,
    }


def test_a_deadline_id_is_judged_by_its_misses(benchmark_module) -> None:
    bench = benchmark_module("learned")
    env_id = bench.ANNOUNCED_DEADLINE
    assert bench.due(env_id) and not bench.due(bench.ANNOUNCED)
    # sjf+announce is the faster rule, lsf+deadline-plan the one that misses fewer deadlines
    rows = [
        _row("sjf+announce", 0, 40.0, 0.06),
        _row("sjf+announce", 1, 40.0, 0.06),
        _row("lsf+deadline-plan", 0, 50.0, 0.02),
        _row("lsf+deadline-plan", 1, 50.0, 0.04),
        _row(bench.PLANNERS[env_id], 0, 52.0, 0.01),
        _row(bench.PLANNERS[env_id], 1, 52.0, 0.02),
        _row("learned:imitate", 0, 55.0, 0.02, train_seed=0),
        _row("learned:imitate", 1, 45.0, 0.03, train_seed=0),
    ]
    summary = {s["policy"]: s for s in bench.summarise(env_id, rows)}
    learned = summary["learned:imitate"]
    assert learned["best_heuristic"] == "lsf+deadline-plan"
    # misses: (0.02 + 0.03) / 2 = 0.025 against (0.02 + 0.04) / 2 = 0.03: 5/6; the planner's
    # 0.015 / 0.03 = 0.5, so the room taken is (1 - 5/6) / (1 - 0.5) = 1/3
    assert abs(learned["miss_ratio"][0] - 5 / 6) < 1e-12
    assert abs(learned["planner_miss_ratio"][0] - 0.5) < 1e-12
    assert abs(learned["captured"] - 1 / 3) < 1e-12
    assert abs(learned["mean_miss_rate"][0] - 0.025) < 1e-12
    assert abs(learned["jct_ratio"][0] - 1.0) < 1e-12  # (55 + 45) / 2 against 50
    assert abs(summary["sjf+announce"]["miss_ratio"][0] - 2.0) < 1e-12  # 0.06 / 0.03
    # its table is the deadline table, after (and apart from) the JCT ids' one
    text = bench.markdown(list(summary.values()))
    assert text.count("| misses / best heuristic [95% CI] |") == 1
    assert "| geopipe-online-announced-deadline | learned:imitate, 1 seeds | 2.50 [" in text
    assert "| 0.500 [0.500, 0.500] | 0.33 |" in text
    assert "| IQM JCT h [95% CI] |" not in text  # no JCT id among these summaries


def test_ship_chooses_a_deadline_run_by_its_misses_first(benchmark_module, tmp_path) -> None:
    bench = benchmark_module("learned")
    fast, punctual, plain = tmp_path / "fast", tmp_path / "punctual", tmp_path / "plain"
    for folder in (fast, punctual, plain):
        folder.mkdir()
    head = "round,teacher_share,states,held_out_avg_jct_h,teacher_avg_jct_h"
    (fast / "imitate.csv").write_text(f"{head},held_out_miss_rate\n0,1.0,9,40.0,41.0,0.05\n")
    (punctual / "eval.csv").write_text("step,avg_jct_h,miss_rate\n0,50,0.03\n4000,55.0,0.02\n")
    (plain / "eval.csv").write_text("step,avg_jct_h,total_cost_usd\n0,50,1\n4000,45.5,2\n")
    assert bench.last_eval(fast) == (0.05, 40.0)
    assert bench.last_eval(punctual) == (0.02, 55.0)  # the last row: model.zip's
    assert min((fast, punctual), key=bench.last_eval) == punctual
    assert bench.last_eval(plain) == (45.5,)  # no deadlines: by JCT, as before
