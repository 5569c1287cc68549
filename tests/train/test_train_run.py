"""A tiny `python -m train.learn` run (256 steps of MaskablePPO on GeoPipe-v1) and what it
leaves behind: config.json, TensorBoard events with the eval/ tags, CSVs, checkpoints and a
model that loads through `agents` and plays a whole episode with only legal actions.

This module also holds the helpers the other tests/train modules import: the subprocess
runner and the shared tiny run (trained once per test session, see `tiny_run_dir`).
"""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

import bacepipe_env  # noqa: E402, F401  (registers the ids)
from bacepipe_env.envs.agents import evaluate, run_episode  # noqa: E402

ENV_ID = "bacepipe_env/GeoPipe-v1"
FIG1_ID = "bacepipe_env/GeoPipe-Fig1-v1"
EVAL_TAGS = ("eval/avg_jct_h", "eval/total_cost_usd", "eval/return")
#: The tiny budget: 4 rollouts of 64 steps, evaluations at 0, 128 and 256, two checkpoints.
TINY = (
    "--env-id",
    ENV_ID,
    "--total-timesteps",
    "256",
    "--n-steps",
    "64",
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
TIMEOUT = 180  # seconds for any one subprocess; a tiny run takes a few seconds


def sub_env() -> dict[str, str]:
    """The environment of every subprocess: one OpenMP/MKL thread."""
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def start(*args: str) -> subprocess.Popen[str]:
    """Start ``python *args`` from the checkout (so ``-m train.learn`` resolves)."""
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env=sub_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    """Wait (bounded) for a started process; kill it on timeout."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=10)
        pytest.fail(f"{proc.args} did not finish in {timeout} s:\n{err}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run(*args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    """Run ``python *args`` to completion."""
    return finish(start(*args), timeout)


def run_many(
    *argvs: tuple[str, ...], timeout: float = TIMEOUT
) -> list[subprocess.CompletedProcess]:
    """Run several ``python`` commands at once (both cores) and wait for all of them."""
    procs = [start(*argv) for argv in argvs]
    return [finish(p, timeout) for p in procs]


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    """Assert exit status 2 and exactly one stderr line without a traceback; return it."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@dataclass(frozen=True)
class TinyRun:
    logdir: Path
    run_dir: Path
    stdout: str
    stderr: str

    @property
    def config(self) -> dict[str, Any]:
        return json.loads((self.run_dir / "config.json").read_text())

    @property
    def eval_rows(self) -> list[dict[str, float]]:
        return read_eval_csv(self.run_dir)


_CACHE: dict[str, TinyRun] = {}


def tiny_run_dir(factory: pytest.TempPathFactory) -> TinyRun:
    """Train the shared tiny run once per session (every module asks through here)."""
    if "tiny" not in _CACHE:
        logdir = factory.mktemp("tiny_logs")
        proc = run("-m", "train.learn", *TINY, "--logdir", str(logdir), "--run-name", "tiny")
        assert proc.returncode == 0, proc.stderr
        _CACHE["tiny"] = TinyRun(logdir, logdir / "tiny", proc.stdout, proc.stderr)
    return _CACHE["tiny"]


def read_eval_csv(run_dir: Path) -> list[dict[str, float]]:
    with open(run_dir / "eval.csv", newline="") as fh:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def accumulator(run_dir: Path) -> EventAccumulator:
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def scalars(run_dir: Path, tag: str) -> list[tuple[int, float]]:
    return [(e.step, e.value) for e in accumulator(run_dir).Scalars(tag)]


def f32(x: float) -> float:
    """What a TensorBoard scalar stores for ``x``."""
    return float(np.float32(x))


def text_summary(acc: EventAccumulator, tag: str) -> str:
    (event,) = acc.Tensors(tag)[:1]
    value = tensor_util.make_ndarray(event.tensor_proto)
    raw = value.item() if value.shape == () else value.reshape(-1)[0]
    return raw.decode() if isinstance(raw, bytes) else str(raw)


# --------------------------------------------------------------------------- the run folder


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
        assert set(r) == {"step", "avg_jct_h", "total_cost_usd", "return", "illegal_actions"}
        assert all(math.isfinite(v) for v in r.values()), r
        assert r["illegal_actions"] == 0.0  # MaskablePPO sees the mask
        assert r["avg_jct_h"] > 0 and r["total_cost_usd"] > 0 and r["return"] < 0


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
