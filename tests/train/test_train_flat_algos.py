"""Tiny PPO and DQN runs (`python -m train.ppo`, `python -m train.dqn`) on the flat
observation finish and write the eval/ tags. These learners cannot see the action mask: an
illegal action is replaced by the env's fallback and counted in eval/illegal_actions."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from train_helpers import (
    EVAL_TAGS,
    FIG1_ID,
    accumulator,
    f32,
    read_eval_csv,
    run_many,
)

torch = pytest.importorskip("torch")

from bacepipe_env.envs.agents import run_episode  # noqa: E402

COMMON = (
    "--env-id",
    FIG1_ID,
    "--total-timesteps",
    "256",
    "--batch-size",
    "32",
    "--n-envs",
    "1",
    "--eval-freq",
    "128",
    "--n-eval",
    "2",
    "--checkpoint-freq",
    "128",
    "--no-progress",
)
ILLEGAL_NOTE = (
    "PPO and DQN on the flat observation cannot see the action mask, so illegal actions are "
    "possible; the env replaces them with the first legal action and HeldOutEval counts them "
    "in eval/illegal_actions, which must be a finite, non-negative mean per episode"
)


@pytest.fixture(scope="module")
def flat_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    logdir = tmp_path_factory.mktemp("flat_runs")
    ppo, dqn = run_many(
        (
            "-m",
            "train.ppo",
            *COMMON,
            "--n-steps",
            "64",
            "--logdir",
            str(logdir),
            "--run-name",
            "ppo",
        ),
        (
            "-m",
            "train.dqn",
            *COMMON,
            "--learning-starts",
            "64",
            "--logdir",
            str(logdir),
            "--run-name",
            "dqn",
        ),
    )
    return {"logdir": logdir, "ppo": ppo, "dqn": dqn}


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_flat_run_finishes_and_writes_the_eval_tags(flat_runs: dict[str, Any], algo: str) -> None:
    proc = flat_runs[algo]
    assert proc.returncode == 0, proc.stderr
    run_dir: Path = flat_runs["logdir"] / algo
    assert f"run: {run_dir}" in proc.stdout
    for name in ("config.json", "eval.csv", "progress.csv", "model.zip"):
        assert (run_dir / name).is_file(), name
    cfg = json.loads((run_dir / "config.json").read_text())
    assert cfg["algo"] == algo and cfg["train"]["algo"] == algo  # the alias's default
    assert cfg["env_kwargs"] == {"observation": "flat"}

    acc = accumulator(run_dir)
    tags = acc.Tags()["scalars"]
    rows = read_eval_csv(run_dir)
    assert [r["step"] for r in rows] == [0.0, 128.0, 256.0]
    for tag in (*EVAL_TAGS, "eval/illegal_actions"):
        assert tag in tags, tags
        events = [(e.step, e.value) for e in acc.Scalars(tag)]
        assert [s for s, _ in events] == [0, 128, 256], (tag, events)
        assert all(math.isfinite(v) for _, v in events), (tag, events)
        key = tag.removeprefix("eval/")
        assert [v for _, v in events] == [f32(r[key]) for r in rows], (tag, events)
    illegal = [e.value for e in acc.Scalars("eval/illegal_actions")]
    assert all(math.isfinite(v) and v >= 0 for v in illegal), (ILLEGAL_NOTE, illegal)


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_flat_model_plays_an_episode_through_agents(flat_runs: dict[str, Any], algo: str) -> None:
    from agents import load_agent

    assert flat_runs[algo].returncode == 0, flat_runs[algo].stderr
    run_dir: Path = flat_runs["logdir"] / algo
    agent = load_agent(f"{algo}:{run_dir / 'model.zip'}")
    assert not agent.maskable
    env = gym.make(FIG1_ID, observation="flat")
    agent.check_env(env.unwrapped)
    result = run_episode(env, agent, 1_000_000)
    assert result.steps == 2 and math.isfinite(result.avg_jct_h)  # fig1: two jobs
    # illegal actions may happen here; they are counted, never fatal
    assert 0 <= result.illegal_actions <= result.steps, (ILLEGAL_NOTE, result)
    last = read_eval_csv(run_dir)[-1]
    assert math.isfinite(last["illegal_actions"]) and last["illegal_actions"] >= 0, ILLEGAL_NOTE
