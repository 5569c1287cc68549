"""Bad model files and bad training settings fail in one line: `agents.AgentLoadError` from
`load_agent`, exit status 2 and a single stderr line from `bacepipe compare` and
`python -m train.learn`. A good model goes through `bacepipe compare` like any policy."""

from __future__ import annotations

import csv
import json
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from train_helpers import (
    TinyRun,
    one_line_error,
    run_many,
)

torch = pytest.importorskip("torch")

from agents import AgentLoadError, load_agent  # noqa: E402


def _bad_files(folder: Path) -> dict[str, Path]:
    """Models that are not models, in a folder without config.json."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "random bytes": folder / "random.zip",
        "empty file": folder / "empty.zip",
        "zip without SB3 content": folder / "other.zip",
        "zip with a broken data entry": folder / "broken_data.zip",
    }
    files["random bytes"].write_bytes(os.urandom(4096))
    files["empty file"].write_bytes(b"")
    with zipfile.ZipFile(files["zip without SB3 content"], "w") as zf:
        zf.writestr("readme.txt", "not a model")
    with zipfile.ZipFile(files["zip with a broken data entry"], "w") as zf:
        zf.writestr("data", "{not json")
    return files


def _assert_one_line(err: AgentLoadError, *needles: str) -> str:
    msg = str(err)
    assert msg and "\n" not in msg, repr(msg)
    assert "Traceback" not in msg
    for needle in needles:
        assert needle in msg, (needle, msg)
    return msg


# ------------------------------------------------------------------------------ load_agent


@pytest.mark.parametrize(
    "kind",
    ["random bytes", "empty file", "zip without SB3 content", "zip with a broken data entry"],
)
@pytest.mark.parametrize("algo", ["maskable_ppo", "ppo", "dqn"])
def test_corrupt_model_file_is_one_agent_load_error(tmp_path: Path, kind: str, algo: str) -> None:
    path = _bad_files(tmp_path)[kind]
    with pytest.raises(AgentLoadError) as info:
        load_agent(f"{algo}:{path}")
    _assert_one_line(info.value, str(path), algo)
    assert info.value.__cause__ is None and info.value.__suppress_context__  # `from None`


def test_missing_model_file(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "model.zip"
    with pytest.raises(AgentLoadError) as info:
        load_agent(f"maskable_ppo:{path}")
    _assert_one_line(info.value, "no model file", str(path))


def test_maskable_model_loaded_as_ppo_names_the_right_algo(tiny: TinyRun) -> None:
    model = tiny.run_dir / "model.zip"
    assert json.loads((tiny.run_dir / "config.json").read_text())["algo"] == "maskable_ppo"
    for wrong in ("ppo", "dqn"):
        with pytest.raises(AgentLoadError) as info:
            load_agent(f"{wrong}:{model}")
        _assert_one_line(info.value, "trained with maskable_ppo", f"maskable_ppo:{model}")


def test_maskable_model_without_its_config_loaded_as_ppo(tiny: TinyRun, tmp_path: Path) -> None:
    """Without config.json nothing says which algorithm saved the file: SB3's own load error
    must still come out as one AgentLoadError line."""
    lone = tmp_path / "lone.zip"
    shutil.copy(tiny.run_dir / "model.zip", lone)
    for wrong in ("ppo", "dqn"):
        with pytest.raises(AgentLoadError) as info:
            load_agent(f"{wrong}:{lone}")
        _assert_one_line(info.value, f"cannot load {lone} as {wrong}")
    assert load_agent(f"maskable_ppo:{lone}").env_kwargs == {}  # the right algo still loads


def test_unknown_algo_and_malformed_spec(tiny: TinyRun) -> None:
    model = tiny.run_dir / "model.zip"
    with pytest.raises(AgentLoadError) as info:
        load_agent(f"a2c:{model}")
    _assert_one_line(info.value, "'a2c'", "maskable_ppo", "ppo", "dqn")
    with pytest.raises(AgentLoadError) as info:
        load_agent(str(model))
    _assert_one_line(info.value, "algo:path")


def test_agent_load_error_is_a_bacepipe_error() -> None:
    import bacepipe_env

    assert issubclass(AgentLoadError, bacepipe_env.BacepipeError)


# ---------------------------------------------------------------------- bacepipe compare CLI


def test_bacepipe_compare_with_corrupt_and_good_models(tiny: TinyRun, tmp_path: Path) -> None:
    corrupt = _bad_files(tmp_path / "bad")["random bytes"]
    model = tiny.run_dir / "model.zip"
    out = tmp_path / "out"
    bad, good = run_many(
        (
            "-m",
            "bacepipe_env.cli",
            "compare",
            "--seeds",
            "2",
            "--policies",
            f"bace-pipe,maskable_ppo:{corrupt}",
            "--out",
            str(tmp_path / "bad_out"),
        ),
        (
            "-m",
            "bacepipe_env.cli",
            "compare",
            "--seeds",
            "2",
            "--policies",
            f"bace-pipe,maskable_ppo:{model}",
            "--out",
            str(out),
        ),
    )
    line = one_line_error(bad)
    assert str(corrupt) in line and line.startswith("bacepipe: error:"), line

    assert good.returncode == 0, good.stderr
    assert "Traceback" not in good.stderr
    spec = f"maskable_ppo:{model}"
    table = [line for line in good.stdout.splitlines() if line.startswith(spec)]
    assert len(table) == 1, good.stdout
    assert any(line.startswith("bace-pipe ") for line in good.stdout.splitlines())
    with open(out / "compare-runs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted({r["policy"] for r in rows}) == ["bace-pipe", spec]
    assert sorted(int(r["seed"]) for r in rows if r["policy"] == spec) == [0, 1]
    for r in rows:
        assert float(r["avg_jct_h"]) > 0 and float(r["total_cost_usd"]) > 0


# ------------------------------------------------------------------------- train.learn CLI


@pytest.fixture(scope="module")
def bad_settings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``python -m train.learn`` with four bad settings, run side by side."""
    tmp = tmp_path_factory.mktemp("bad_settings")
    logdir = str(tmp / "runs")
    algo, n_envs, config, resume, env_kwargs, env_id = run_many(
        ("-m", "train.learn", "--algo", "nope", "--logdir", logdir),
        ("-m", "train.learn", "--n-envs", "0", "--logdir", logdir),
        ("-m", "train.learn", "--config", str(tmp / "missing.json"), "--logdir", logdir),
        ("-m", "train.learn", "--resume", str(tmp / "nowhere")),
        ("-m", "train.learn", "--env-kwargs", '{"max_queue": "x"}', "--logdir", logdir),
        ("-m", "train.learn", "--env-id", "bacepipe_env/Nope-v9", "--logdir", logdir),
    )
    return {
        "algo": algo,
        "n_envs": n_envs,
        "config": config,
        "resume": resume,
        "env_kwargs": env_kwargs,
        "env_id": env_id,
        "logdir": tmp / "runs",
    }


def test_train_learn_unknown_algo_exits_2_in_one_line(bad_settings: dict[str, Any]) -> None:
    line = one_line_error(bad_settings["algo"])
    assert "error" in line and "'nope'" in line and "maskable_ppo" in line, line
    assert not bad_settings["logdir"].exists()  # nothing was trained or written


def test_train_learn_zero_envs_exits_2_in_one_line(bad_settings: dict[str, Any]) -> None:
    line = one_line_error(bad_settings["n_envs"])
    assert "error" in line and "n_envs" in line, line


def test_train_learn_missing_config_file_exits_2_in_one_line(
    bad_settings: dict[str, Any],
) -> None:
    # Reported: exits 1 (SystemExit with a message) instead of argparse's 2.
    line = one_line_error(bad_settings["config"])
    assert "error" in line and "--config" in line and "missing.json" in line, line


def test_train_learn_resume_without_a_run_is_one_line(bad_settings: dict[str, Any]) -> None:
    line = one_line_error(bad_settings["resume"])
    assert "--resume" in line and "config.json" in line, line


def test_train_learn_bad_env_settings_fail_before_any_worker_starts(
    bad_settings: dict[str, Any],
) -> None:
    """A bad env keyword used to surface as a ConnectionResetError traceback from a
    SubprocVecEnv worker; the env is now built once in the parent first."""
    line = one_line_error(bad_settings["env_kwargs"])
    assert "env_kwargs: max_queue: must be a whole number (got 'x')" in line, line
    line = one_line_error(bad_settings["env_id"])
    assert "env_id:" in line and "Nope" in line, line
    assert not bad_settings["logdir"].exists()  # nothing was trained or written
