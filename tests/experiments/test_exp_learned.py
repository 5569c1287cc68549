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
