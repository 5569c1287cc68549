"""`python -m train.compare`: each heuristic is evaluated on the learned run's held-out set and
written as a flat TensorBoard run at the learned run's evaluation steps, with hparams, and a
comparison.csv row per policy plus the learned run."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from train_helpers import (
    FIG1_ID,
    TinyRun,
    accumulator,
    f32,
    one_line_error,
    run,
    run_many,
    text_summary,
)

torch = pytest.importorskip("torch")

from bacepipe_env.envs.agents import evaluate, make_agent  # noqa: E402

POLICIES = ("bace-pipe", "lcf")


@pytest.fixture(scope="module")
def compared(tiny: TinyRun, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """train.compare over a copy of the tiny run (twice: a re-run must replace its events),
    side by side with the --env-id form and the two error cases."""
    tmp = tmp_path_factory.mktemp("compare")
    logdir = tmp / "runs"
    shutil.copytree(tiny.run_dir, logdir / "tiny")
    empty, fig1 = tmp / "empty", tmp / "fig1"
    empty.mkdir()
    fig1.mkdir()
    first, env_id, no_runs, bad_policy = run_many(
        ("-m", "train.compare", "--logdir", str(logdir), "--policies", ",".join(POLICIES)),
        ("-m", "train.compare", "--logdir", str(fig1), "--env-id", FIG1_ID, "--policies", "fcfs"),
        ("-m", "train.compare", "--logdir", str(empty), "--policies", "bace-pipe"),
        ("-m", "train.compare", "--logdir", str(logdir), "--policies", "bace-pipe,nope"),
    )
    assert first.returncode == 0, first.stderr
    events_after_first = sorted(p.name for p in logdir.glob("heuristic__*/events.out.tfevents.*"))
    second = run("-m", "train.compare", "--logdir", str(logdir), "--policies", ",".join(POLICIES))
    assert second.returncode == 0, second.stderr
    return {
        "logdir": logdir,
        "first": first,
        "second": second,
        "events_after_first": events_after_first,
        "env_id": env_id,
        "fig1": fig1,
        "no_runs": no_runs,
        "empty": empty,
        "bad_policy": bad_policy,
    }


def _heuristic_means(
    policy: str, env_id: str, env_kwargs: dict[str, Any], seeds: list[int]
) -> dict[str, float]:
    agent = make_agent(policy)
    env = gym.make(env_id, **agent.env_kwargs, **env_kwargs)
    results = evaluate(env, agent, seeds)
    return {
        "avg_jct_h": float(np.mean([r.avg_jct_h for r in results])),
        "total_cost_usd": float(np.mean([r.total_cost_usd for r in results])),
        "return": float(np.mean([r.episode_return for r in results])),
    }


def _tag(env_id: str) -> str:
    return env_id.split("/")[-1].removesuffix("-v1").lower()


def test_one_heuristic_run_per_policy_next_to_the_learned_run(
    tiny: TinyRun, compared: dict[str, Any]
) -> None:
    logdir: Path = compared["logdir"]
    names = sorted(p.name for p in logdir.iterdir() if p.is_dir())
    expected = sorted(
        ["tiny", *(f"heuristic__{p}__{_tag(tiny.config['env_id'])}" for p in POLICIES)]
    )
    assert names == expected
    assert _tag(tiny.config["env_id"]) == "geopipe"
    out = compared["first"].stdout
    assert f"TensorBoard: tensorboard --logdir {logdir}" in out
    assert f"wrote {logdir / 'comparison.csv'}" in out


@pytest.mark.parametrize("policy", POLICIES)
def test_heuristic_is_flat_at_the_learned_eval_steps_with_its_evaluate_value(
    tiny: TinyRun, compared: dict[str, Any], policy: str
) -> None:
    cfg = tiny.config
    learned_steps = [int(r["step"]) for r in tiny.eval_rows]
    assert learned_steps == [0, 128, 256]
    want = _heuristic_means(policy, cfg["env_id"], cfg["env_kwargs"], cfg["eval_seeds"])
    run_dir = compared["logdir"] / f"heuristic__{policy}__geopipe"
    acc = accumulator(run_dir)
    for key, value in want.items():
        events = [(e.step, e.value) for e in acc.Scalars(f"eval/{key}")]
        assert [s for s, _ in events] == learned_steps, (key, events)
        assert {v for _, v in events} == {f32(value)}, (key, events, value)


@pytest.mark.parametrize("policy", POLICIES)
def test_heuristic_runs_carry_hparams(compared: dict[str, Any], policy: str) -> None:
    acc = accumulator(compared["logdir"] / f"heuristic__{policy}__geopipe")
    assert acc.PluginTagToContent("hparams"), "no TensorBoard hparams"
    text_tags = [t for t in acc.Tags()["tensors"] if t.startswith("hparams_text")]
    assert text_tags, acc.Tags()["tensors"]
    text = text_summary(acc, text_tags[0])
    placement = make_agent(policy).placement
    for line in (
        f"| policy | {policy} |",
        "| env_id | bacepipe_env/GeoPipe-v1 |",
        f"| placement | {placement} |",
        "| n_eval | 2 |",
        "| eval_seed | 1000000 |",
    ):
        assert line in text, text


def test_comparison_csv_has_every_policy_and_the_learned_run(
    tiny: TinyRun, compared: dict[str, Any]
) -> None:
    with open(compared["logdir"] / "comparison.csv", newline="") as fh:
        rows = {r["policy"]: r for r in csv.DictReader(fh)}
    assert sorted(rows) == sorted([*POLICIES, "learned:tiny"])
    cfg = tiny.config
    for policy in POLICIES:
        want = _heuristic_means(policy, cfg["env_id"], cfg["env_kwargs"], cfg["eval_seeds"])
        row = rows[policy]
        assert row["env_id"] == cfg["env_id"] and int(row["n_eval"]) == 2
        for key, value in want.items():
            assert float(row[key]) == pytest.approx(value), (policy, key)
    # the learned row evaluates model.zip on the same seeds: eval.csv's last evaluation
    learned, last = rows["learned:tiny"], tiny.eval_rows[-1]
    for key in ("avg_jct_h", "total_cost_usd", "return"):
        assert float(learned[key]) == pytest.approx(last[key]), key
    for line in compared["first"].stdout.splitlines()[:3]:
        assert line.startswith(cfg["env_id"]), line


def test_a_rerun_replaces_the_heuristic_events(compared: dict[str, Any]) -> None:
    logdir = compared["logdir"]
    for policy in POLICIES:
        files = list((logdir / f"heuristic__{policy}__geopipe").glob("events.out.tfevents.*"))
        assert len(files) == 1, files
        events = accumulator(files[0].parent).Scalars("eval/avg_jct_h")
        assert [e.step for e in events] == [0, 128, 256]
    assert compared["second"].stdout == compared["first"].stdout


def test_env_id_without_runs_evaluates_at_step_0(compared: dict[str, Any]) -> None:
    proc = compared["env_id"]
    assert proc.returncode == 0, proc.stderr
    run_dir = compared["fig1"] / "heuristic__fcfs__geopipe-fig1"
    want = _heuristic_means("fcfs", FIG1_ID, {}, list(range(1_000_000, 1_000_010)))
    acc = accumulator(run_dir)
    for key, value in want.items():
        assert [(e.step, e.value) for e in acc.Scalars(f"eval/{key}")] == [(0, f32(value))]
    with open(compared["fig1"] / "comparison.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["policy"] for r in rows] == ["fcfs"] and rows[0]["n_eval"] == "10"


def test_no_runs_and_no_env_id_exit_2_in_one_line(compared: dict[str, Any]) -> None:
    line = one_line_error(compared["no_runs"])
    assert str(compared["empty"]) in line and "--env-id" in line, line
    assert list(compared["empty"].iterdir()) == []


def test_unknown_heuristic_exits_2_in_one_line(compared: dict[str, Any]) -> None:
    line = one_line_error(compared["bad_policy"])
    assert "'nope'" in line and "bace-pipe" in line, line
