"""A tiny `python -m train.learn` run (256 steps of MaskablePPO on GeoPipe-v2) and what it
leaves behind: config.json, TensorBoard events with the eval/ tags, CSVs, checkpoints and a
model that loads through `agents` and plays a whole episode with only legal actions. The
helpers the tests/train modules share are in `train_helpers`.
"""

from __future__ import annotations

import csv
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `train` is run from a checkout, not installed
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("OMP_NUM_THREADS", "1")
torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")
pytest.importorskip("tensorboard")

import gymnasium as gym  # noqa: E402
from train_helpers import (  # noqa: E402
    ENV_ID,
    EVAL_TAGS,
    TinyRun,
    accumulator,
    f32,
    text_summary,
)

import bacepipe_env  # noqa: E402, F401  (registers the ids)
from bacepipe_env.envs.agents import evaluate, run_episode  # noqa: E402


def test_run_folder_has_every_artefact(tiny: TinyRun) -> None:
    run_dir = tiny.run_dir
    assert run_dir.is_dir()
    for name in ("config.json", "progress.csv", "eval.csv", "model.zip"):
        assert (run_dir / name).is_file(), name
    assert list(run_dir.glob("events.out.tfevents.*")), sorted(os.listdir(run_dir))
    ckpts = sorted(p.name for p in (run_dir / "checkpoints").glob("model_*_steps.zip"))
    assert ckpts == ["model_128_steps.zip", "model_256_steps.zip"]
    with open(run_dir / "progress.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and "eval/avg_jct_h" in rows[0]


def test_config_json_records_the_run(tiny: TinyRun) -> None:
    cfg = tiny.config
    assert cfg["algo"] == "maskable_ppo"
    assert cfg["env_id"] == ENV_ID
    assert cfg["env_kwargs"] == {"observation": "dict"}  # resolved: MaskablePPO's Dict obs
    train = cfg["train"]
    assert train["algo"] == "maskable_ppo" and train["env_id"] == ENV_ID
    assert train["total_timesteps"] == 256 and train["n_envs"] == 1
    assert train["n_steps"] == 64 and train["batch_size"] == 32
    assert train["progress"] is False and train["run_name"] == "tiny"
    first = train["eval_seed"]
    assert cfg["eval_seeds"] == list(range(first, first + train["n_eval"]))
    assert cfg["eval_seeds"] == [1_000_000, 1_000_001]
    assert set(cfg["versions"]) >= {"python", "torch", "bacepipe_env"}
    assert math.isfinite(cfg["wall_time_s"]) and cfg["wall_time_s"] > 0


def test_eval_csv_has_the_evaluations_at_start_freq_and_end(tiny: TinyRun) -> None:
    rows = tiny.eval_rows
    assert [r["step"] for r in rows] == [0.0, 128.0, 256.0]
    for r in rows:
        assert set(r) == {
            "step",
            "avg_jct_h",
            "total_cost_usd",
            "carbon_kg",
            "return",
            "illegal_actions",
        }
        assert all(math.isfinite(v) for v in r.values()), r
        assert r["illegal_actions"] == 0.0  # MaskablePPO sees the mask
        assert r["avg_jct_h"] > 0 and r["total_cost_usd"] > 0 and r["return"] < 0
        assert float(r["carbon_kg"]) > 0  # the paper's regions carry their grids' intensity


# ----------------------------------------------------------------------------- TensorBoard


def test_event_accumulator_reads_the_eval_tags_back(tiny: TinyRun) -> None:
    acc = accumulator(tiny.run_dir)
    tags = acc.Tags()["scalars"]
    for tag in (*EVAL_TAGS, "eval/illegal_actions"):
        assert tag in tags, tags
    assert any(t.startswith("train/") for t in tags) and any(t.startswith("rollout/") for t in tags)
    rows = tiny.eval_rows
    for tag in (*EVAL_TAGS, "eval/illegal_actions"):
        events = [(e.step, e.value) for e in acc.Scalars(tag)]
        steps = [s for s, _ in events]
        assert steps[0] == 0 and len(steps) > 1 and all(s > 0 for s in steps[1:]), events
        assert steps == sorted(steps)
        assert all(math.isfinite(v) for _, v in events), events
        key = tag.removeprefix("eval/")
        assert steps == [int(r["step"]) for r in rows]
        assert [v for _, v in events] == [f32(r[key]) for r in rows], (tag, events, rows)


def test_hyperparameters_are_logged_as_text_and_hparams(tiny: TinyRun) -> None:
    acc = accumulator(tiny.run_dir)
    text_tags = [t for t in acc.Tags()["tensors"] if t.startswith("hparams_text")]
    assert text_tags, acc.Tags()["tensors"]
    text = text_summary(acc, text_tags[0])
    assert text.startswith("| parameter | value |")
    for line in (
        "| algo | maskable_ppo |",
        f"| env_id | {ENV_ID} |",
        "| total_timesteps | 256 |",
        "| n_eval | 2 |",
        "| net_arch | [64, 64] |",
    ):
        assert line in text, text
    hparams = acc.PluginTagToContent("hparams")
    assert "_hparams_/session_start_info" in hparams, list(hparams)


def test_stdout_names_the_run_and_the_tensorboard_command(tiny: TinyRun) -> None:
    lines = tiny.stdout.strip().splitlines()
    assert f"run: {tiny.run_dir}" in lines, lines
    assert f"model: {tiny.run_dir / 'model.zip'}" in lines, lines
    assert lines[-1] == f"TensorBoard: tensorboard --logdir {tiny.logdir}", lines
    held_out = [line for line in lines if line.startswith("held-out eval at step 256:")]
    assert len(held_out) == 1 and "illegal actions 0.00/episode" in held_out[0], lines
    assert "Traceback" not in tiny.stderr


# ---------------------------------------------------------------- the model through agents/


def test_saved_model_plays_a_whole_episode_with_only_legal_actions(tiny: TinyRun) -> None:
    from agents import SB3Agent, load_agent

    cfg = tiny.config
    agent = load_agent(f"maskable_ppo:{tiny.run_dir / 'model.zip'}")
    assert isinstance(agent, SB3Agent) and agent.maskable
    assert agent.model.num_timesteps == 256
    # the settings come from the config.json next to the model
    assert agent.env_kwargs == {"env_id": ENV_ID, **cfg["env_kwargs"]}
    assert agent.placement == "pathfinder"
    env = gym.make(cfg["env_id"], **cfg["env_kwargs"])
    agent.check_env(env.unwrapped)
    for seed in (0, cfg["eval_seeds"][0]):
        result = run_episode(env, agent, seed)
        assert result.illegal_actions == 0, result
        assert 0 < result.steps < env.spec.max_episode_steps, result  # terminated, not cut
        assert math.isfinite(result.avg_jct_h) and result.avg_jct_h > 0, result
        assert math.isfinite(result.total_cost_usd) and result.total_cost_usd > 0, result


def test_saved_model_reproduces_the_last_held_out_evaluation(tiny: TinyRun) -> None:
    """model.zip is saved right after the final evaluation: loading it and evaluating on the
    saved held-out seeds gives eval.csv's last row exactly (deterministic policy)."""
    from agents import load_agent

    cfg = tiny.config
    agent = load_agent(f"maskable_ppo:{tiny.run_dir / 'model.zip'}")
    env = gym.make(cfg["env_id"], **cfg["env_kwargs"]).unwrapped
    results = evaluate(env, agent, cfg["eval_seeds"])
    last = tiny.eval_rows[-1]
    assert float(np.mean([r.avg_jct_h for r in results])) == pytest.approx(last["avg_jct_h"])
    assert float(np.mean([r.total_cost_usd for r in results])) == pytest.approx(
        last["total_cost_usd"]
    )
    assert float(np.mean([r.episode_return for r in results])) == pytest.approx(last["return"])


def test_a_checkpoint_loads_with_the_run_settings_one_folder_up(tiny: TinyRun) -> None:
    from agents import load_agent

    ckpt = tiny.run_dir / "checkpoints" / "model_128_steps.zip"
    agent = load_agent(f"maskable_ppo:{ckpt}")
    assert agent.model.num_timesteps == 128
    assert agent.env_kwargs["observation"] == "dict"
    env = gym.make(ENV_ID, **tiny.config["env_kwargs"])
    assert run_episode(env, agent, 3).illegal_actions == 0
