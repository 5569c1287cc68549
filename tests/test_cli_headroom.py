"""`bacepipe headroom`: the rollout planner against an env id's best heuristic. The numbers are
recomputed here from the simulator and the env's own episodes; the clairvoyant row is labelled
a bound; bad input is one line."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # registers the ids; its errors module is used below
from bacepipe_env.cli import main
from bacepipe_env.experiments.headroom import env_heuristics, run_headroom
from bacepipe_env.policies.registry import make_policy, policy_info

ENV_ID = "bacepipe_env/GeoPipe-v2"
FIRST, N = 1_000_000, 3


def test_the_report_is_the_simulators_numbers(tmp_path):
    out = tmp_path / "h.json"
    argv = ["headroom", "--env-id", ENV_ID, "--episodes", str(N), "--first-seed", str(FIRST)]
    assert main([*argv, "--lookahead", "clairvoyant", "--k", "2", "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["bound"] is True and got["lookahead"] == "clairvoyant"
    # the env's own episodes, every heuristic on each, the best by mean JCT
    scenarios = []
    env = gym.make(ENV_ID)
    for seed in range(FIRST, FIRST + N):
        env.reset(seed=seed)
        scenarios.append(env.unwrapped.scenario)
    seeds = range(FIRST, FIRST + N)  # each policy seeded by the episode, as an agent is
    means = {
        n: np.mean([make_policy(n, seed=e).simulate(s).avg_jct for e, s in zip(seeds, scenarios)])
        / 3600
        for n in env_heuristics(ENV_ID)
    }
    best = min(means, key=means.__getitem__)
    assert got["best"] == best
    assert got["heuristics"][best] == pytest.approx(means[best], rel=1e-12)
    name = f"rollout:{best},k=2,lookahead=clairvoyant"
    mine = [make_policy(name, seed=e).simulate(s).avg_jct / 3600 for e, s in zip(seeds, scenarios)]
    assert got["planner_jct_h"] == pytest.approx(mine, rel=1e-12)
    assert got["ratio"][0] == pytest.approx(np.mean(mine) / means[best], rel=1e-12)
    assert got["ratio"][1] <= got["ratio"][0] <= got["ratio"][2]
    assert got["ratio"][0] <= 1 + 1e-9  # clairvoyant: never worse than its base, the best
    assert got["ms_per_decision"] > 0


def test_preemptive_heuristics_count_only_where_the_agent_preempts():
    plain = env_heuristics("bacepipe_env/GeoPipe-Online-v1")
    preempt = env_heuristics("bacepipe_env/GeoPipe-Online-Preempt-v1")
    assert all(policy_info(n).preemption is None for n in plain)
    assert "sjf+finish-aware+srtf" in preempt and "sjf+finish-aware+srtf" not in plain
    assert set(plain) < set(preempt)


def test_the_text_labels_a_clairvoyant_row_a_bound(capsys):
    argv = ["headroom", "--env-id", "bacepipe_env/GeoPipe-Fig1-v2", "--episodes", "2"]
    assert main([*argv, "--lookahead", "clairvoyant"]) == 0
    text = capsys.readouterr().out
    assert "a bound, not a scheduler" in text and "JCT ratio" in text
    assert main([*argv, "--base", "fcfs"]) == 0
    text = capsys.readouterr().out
    assert "rollout:fcfs,k=4,lookahead=submitted" in text and "a bound" not in text


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--env-id", "nope"], "--env-id"),
        (["--env-id", ENV_ID, "--lookahead", "soon"], "--lookahead"),
        (["--env-id", ENV_ID, "--base", "sjf+srtf"], "not a heuristic of"),
        (["--env-id", ENV_ID, "--base", "nope"], "not a heuristic of"),
        (["--env-id", ENV_ID, "--k", "0"], "--k"),
    ],
)
def test_bad_input_is_one_line(extra, needle, capsys):
    try:
        status = main(["headroom", "--episodes", "1", *extra])
    except SystemExit as exc:  # argparse's own checks exit
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err and "Traceback" not in err


def test_the_function_checks_its_arguments():
    with pytest.raises(bacepipe_env.errors.ValidationError, match="episodes"):
        run_headroom(ENV_ID, 0)


def test_policies_lists_the_planner_family(capsys):
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("rollout:<base>") and "docs/headroom.md" in lines[-1]
    names = [line.split()[0] for line in lines[:-1] if not line.startswith("<base>+")]
    assert "sjf+finish-aware" in names and "sjf+announce" in names
    for name in names:  # every listed heuristic is a base the planner takes
        if not policy_info(name).oracle:
            policy_info(f"rollout:{name},k=1")
