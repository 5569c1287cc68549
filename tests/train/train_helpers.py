"""Helpers the tests/train modules share (not a test module): the subprocess runner, the
shared tiny training run (trained once per test session, see `tiny_run_dir`) and readers for
what a run leaves behind."""

from __future__ import annotations

import csv
import json
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

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

import bacepipe_env  # noqa: E402, F401  (registers the ids)

ENV_ID = "bacepipe_env/GeoPipe-v2"
FIG1_ID = "bacepipe_env/GeoPipe-Fig1-v2"
EVAL_TAGS = ("eval/avg_jct_h", "eval/total_cost_usd", "eval/carbon_kg", "eval/return")
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
