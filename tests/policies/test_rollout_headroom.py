"""``bacepipe headroom`` under a deadline objective (experiments/headroom.py, issue 45 part 4):
the best heuristic is the one with the fewest misses, the ratio is the paired ratio of misses,
recomputed here from the simulator; a JCT report keeps its fields; the CLI takes the flag."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bacepipe_env.cli import main
from bacepipe_env.experiments import headroom
from bacepipe_env.experiments.headroom import env_heuristics, run_headroom
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import load_scenario

ENV_ID = "bacepipe_env/GeoPipe-Online-v1"
SEEDS = (0, 1)


@pytest.fixture
def deadline_episodes(monkeypatch):
    """The id's episodes replaced by 24-job Online ones with tight deadlines (the deadline
    ids are registered on another branch), where the best heuristic misses some."""
    scenarios = [
        load_scenario("online", seed=s, n_jobs=24, deadline_slack="uniform:1.0,1.5") for s in SEEDS
    ]
    monkeypatch.setattr(headroom, "env_scenarios", lambda env_id, seeds, n_jobs: scenarios)
    return scenarios


def test_a_misses_report_judges_by_misses(deadline_episodes):
    report = run_headroom(ENV_ID, len(SEEDS), SEEDS[0], objective="misses", k=2)
    rates = {
        n: np.mean(
            [make_policy(n, seed=e).simulate(s).miss_rate for e, s in zip(SEEDS, deadline_episodes)]
        )
        for n in env_heuristics(ENV_ID)
    }
    best = min(rates, key=rates.__getitem__)
    assert report.best == best and report.scores[best] == pytest.approx(rates[best], rel=1e-12)
    assert report.planner == f"rollout:{best},k=2,lookahead=submitted,objective=misses"
    mine = [
        make_policy(report.planner, seed=e).simulate(s).miss_rate
        for e, s in zip(SEEDS, deadline_episodes)
    ]
    assert rates[best] > 0
    assert report.ratio[0] == pytest.approx(np.mean(mine) / rates[best], rel=1e-12)
    assert report.jct_ratio is not None and report.jct_ratio[0] > 0
    assert "misses ratio" in report.format() and "mean miss rate" in report.format()
    assert json.loads(report.to_json())["objective"] == "misses"


def test_without_misses_there_is_no_ratio(monkeypatch):
    """A best heuristic that never misses leaves no ratio to form: NaN, not a division."""
    scn = [load_scenario("online", seed=0, n_jobs=8, deadline_slack="fixed:50")]
    monkeypatch.setattr(headroom, "env_scenarios", lambda env_id, seeds, n_jobs: scn)
    report = run_headroom(ENV_ID, 1, 0, objective="misses", k=2)
    assert report.scores[report.best] == 0.0 and math.isnan(report.ratio[0])
    assert report.best == env_heuristics(ENV_ID)[0]  # every one ties: the registry's first


def test_a_jct_report_keeps_its_fields():
    report = run_headroom("bacepipe_env/GeoPipe-Fig1-v2", 2, k=2)
    got = json.loads(report.to_json())
    assert not {"objective", "scores", "jct_ratio"} & set(got)
    assert report.ratio[0] > 0 and "JCT ratio" in report.format()


def test_the_cli_takes_an_objective_and_a_sampled_lookahead(capsys):
    argv = ["headroom", "--env-id", "bacepipe_env/GeoPipe-Fig1-v2", "--episodes", "1"]
    assert main([*argv, "--objective", "tardiness", "--lookahead", "sampled:2", "--k", "2"]) == 0
    text = capsys.readouterr().out
    assert "lookahead=sampled:2,objective=tardiness" in text and "tardiness ratio" in text
    assert main([*argv, "--lookahead", "sampled:0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--lookahead" in err and "sampled:N" in err and "\n" not in err
