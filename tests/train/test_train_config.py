"""`train.config.parse_config`: flags > --config file (JSON or TOML) > defaults > dataclass;
repeating a run from its config.json gives the same numbers; --resume continues a run."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from train_helpers import (
    ENV_ID,
    TinyRun,
    accumulator,
    read_eval_csv,
    run_many,
)

torch = pytest.importorskip("torch")

from train.config import TrainConfig, parse_config  # noqa: E402


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# ------------------------------------------------------------------------------ precedence


def test_no_flags_give_the_dataclass_defaults() -> None:
    cfg, resume = parse_config([])
    assert cfg == TrainConfig() and resume == ""
    assert cfg.algo == "maskable_ppo" and cfg.env_id == ENV_ID and cfg.net_arch == [64, 64]


def test_defaults_override_the_dataclass_and_flags_override_defaults() -> None:
    cfg, _ = parse_config([], defaults={"algo": "dqn"}, prog="train.dqn")
    assert cfg.algo == "dqn" and cfg.observation == "flat"
    cfg, _ = parse_config(["--algo", "ppo"], defaults={"algo": "dqn"}, prog="train.dqn")
    assert cfg.algo == "ppo"


@pytest.mark.parametrize("fmt", ["json", "toml"])
def test_flag_beats_config_file_beats_defaults(tmp_path: Path, fmt: str) -> None:
    if fmt == "json":
        body = json.dumps(
            {
                "algo": "ppo",
                "seed": 7,
                "net_arch": [16, 8],
                "env_kwargs": {"max_queue": 8},
                "progress": False,
                "learning_rate": 0.001,
            }
        )
    else:
        body = (
            'algo = "ppo"\nseed = 7\nnet_arch = [16, 8]\nprogress = false\n'
            "learning_rate = 0.001\n\n[env_kwargs]\nmax_queue = 8\n"
        )
    path = _write(tmp_path / f"cfg.{fmt}", body)
    defaults = {"algo": "dqn", "seed": 1, "n_eval": 3}

    cfg, _ = parse_config(["--config", str(path)], defaults=defaults)
    assert cfg.algo == "ppo" and cfg.seed == 7  # file > defaults
    assert cfg.n_eval == 3  # defaults > dataclass
    assert cfg.total_timesteps == TrainConfig().total_timesteps  # dataclass
    assert cfg.net_arch == [16, 8] and cfg.env_kwargs == {"max_queue": 8}
    assert cfg.progress is False and cfg.learning_rate == 0.001

    argv = ["--config", str(path), "--seed", "9", "--net-arch", "32,32", "--progress"]
    cfg, _ = parse_config(argv, defaults=defaults)
    assert cfg.seed == 9 and cfg.net_arch == [32, 32] and cfg.progress is True  # flags > file
    assert cfg.algo == "ppo" and cfg.env_kwargs == {"max_queue": 8}
    # flag order does not matter: --config after the flags still loses to them
    cfg2, _ = parse_config(argv[2:] + argv[:2], defaults=defaults)
    assert cfg2 == cfg


def test_list_dict_and_bool_flags() -> None:
    cfg, _ = parse_config(
        ["--net-arch", "32,32", "--env-kwargs", '{"max_queue": 4}', "--no-progress"]
    )
    assert cfg.net_arch == [32, 32]
    assert cfg.env_kwargs == {"max_queue": 4}
    assert cfg.progress is False
    assert cfg.resolved_env_kwargs() == {"max_queue": 4, "observation": "dict"}
    cfg, _ = parse_config(["--net-arch", "128", "--progress", "--algo", "ppo"])
    assert cfg.net_arch == [128] and cfg.progress is True
    assert cfg.resolved_env_kwargs() == {"observation": "flat"}
    cfg, _ = parse_config(["--algo", "dqn", "--env-kwargs", '{"observation": "dict"}'])
    assert cfg.observation == "dict"  # an explicit observation is kept
    assert parse_config(["--torch-threads", "2", "--gamma", "0.99"])[0].gamma == 0.99


def test_bad_values_exit_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, needle in (
        (["--algo", "a2c"], "'a2c'"),
        (["--n-eval", "0"], "n_eval"),
        (["--gamma", "1.5"], "gamma"),
        (["--seed", "-1"], "seed: must be in [0, 2**32 - 1]"),
        (["--learning-rate", "nan"], "learning_rate: must be finite"),
        (["--learning-rate", "1e308"], "learning_rate: must be in (0, 1]"),
        (["--n-envs", "1000000000"], "n_envs: must be in [1, 256] processes"),
        (["--net-arch", "0"], "net_arch[0]: must be in [1, 65,536]"),
    ):
        with pytest.raises(SystemExit) as info:
            parse_config(argv)
        assert info.value.code == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0] and "error" in err[0], (argv, err)


def test_unknown_settings_in_a_config_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "cfg.json", json.dumps({"algo": "ppo", "bogus": 1, "zz": 2}))
    with pytest.raises(SystemExit) as info:
        parse_config(["--config", str(path)])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown settings: bogus, zz" in err[0], err


def test_unreadable_config_files_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Like every other settings error: exit status 2 and one ``prog: error:`` line on stderr.
    Reported: these raise ``SystemExit("train: error: ...")``, i.e. exit status 1, and the
    message is printed by the interpreter, not by the parser (so nothing on stderr in-process).
    """
    cases = {
        "missing": tmp_path / "missing.json",
        "bad json": _write(tmp_path / "bad.json", "{not json"),
        "bad toml": _write(tmp_path / "bad.toml", "algo = = 1\n"),
        "not a table": _write(tmp_path / "list.json", "[1, 2]"),
    }
    problems = []
    for what, path in cases.items():
        with pytest.raises(SystemExit) as info:
            parse_config(["--config", str(path)])
        err = capsys.readouterr().err.strip().splitlines()
        if info.value.code != 2:
            problems.append(f"{what}: exit code {info.value.code!r}")
        elif len(err) != 1 or str(path) not in err[0]:
            problems.append(f"{what}: stderr {err!r}")
    assert not problems, problems


# ----------------------------------------------------------------- a run's own config.json


def test_a_runs_config_json_is_accepted_by_config(tiny: TinyRun) -> None:
    saved = tiny.config["train"]
    cfg, resume = parse_config(["--config", str(tiny.run_dir / "config.json")])
    assert resume == ""
    expected = {**saved, "run_name": ""}  # a fresh folder unless --run-name says otherwise
    assert cfg.to_json() == expected
    cfg, _ = parse_config(["--config", str(tiny.run_dir / "config.json"), "--seed", "5"])
    assert cfg.seed == 5 and cfg.total_timesteps == saved["total_timesteps"]


def test_resume_reads_the_saved_settings_and_flags_win(tiny: TinyRun) -> None:
    cfg, resume = parse_config(["--resume", str(tiny.run_dir), "--total-timesteps", "512"])
    assert resume == str(tiny.run_dir)
    assert cfg.to_json() == {**tiny.config["train"], "total_timesteps": 512}


# ------------------------------------------------------- repeating and resuming (subprocess)


@pytest.fixture(scope="module")
def repeated_and_resumed(tiny: TinyRun, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Side by side: the tiny run repeated from its config.json into a new logdir, and a copy
    of the tiny run resumed to 512 steps. The copy's wall_time_s is set to a sentinel so that
    the test can tell whether the resumed run adds to it."""
    tmp = tmp_path_factory.mktemp("repeat_resume")
    repeat_logdir = tmp / "repeat"
    resumed = tmp / "resume" / "tiny"
    shutil.copytree(tiny.run_dir, resumed)
    before = {
        "eval": read_eval_csv(resumed),
        "progress": _progress_rows(resumed),
        "events": sorted(p.name for p in resumed.glob("events.out.tfevents.*")),
    }
    cfg = json.loads((resumed / "config.json").read_text())
    cfg["wall_time_s"] = 1000.0
    (resumed / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    rep, res = run_many(
        (
            "-m",
            "train.learn",
            "--config",
            str(tiny.run_dir / "config.json"),
            "--logdir",
            str(repeat_logdir),
        ),
        ("-m", "train.learn", "--resume", str(resumed), "--total-timesteps", "512"),
    )
    assert rep.returncode == 0, rep.stderr
    assert res.returncode == 0, res.stderr
    return {
        "repeat_logdir": repeat_logdir,
        "repeat": rep,
        "resumed": resumed,
        "resume": res,
        "before": before,
    }


def _progress_rows(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / "progress.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_repeating_a_run_from_its_config_json_gives_the_same_numbers(
    tiny: TinyRun, repeated_and_resumed: dict[str, Any]
) -> None:
    logdir = repeated_and_resumed["repeat_logdir"]
    (run_dir,) = [p.parent for p in logdir.glob("*/config.json")]
    assert run_dir.name.startswith("geopipe__maskable_ppo__0__"), run_dir.name  # a new name
    assert f"run: {run_dir}" in repeated_and_resumed["repeat"].stdout
    saved = json.loads((run_dir / "config.json").read_text())
    original = tiny.config
    for key in ("algo", "env_id", "env_kwargs", "eval_seeds"):
        assert saved[key] == original[key], key
    only_where = {"logdir", "run_name"}
    assert {k: v for k, v in saved["train"].items() if k not in only_where} == {
        k: v for k, v in original["train"].items() if k not in only_where
    }
    # same seed, n_envs 1, same machine: identical held-out evaluations ...
    assert read_eval_csv(run_dir) == tiny.eval_rows
    # ... and identical training statistics (the time/ columns are wall-clock)
    mine, theirs = _progress_rows(run_dir), _progress_rows(tiny.run_dir)
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs):
        for col in ("train/loss", "train/value_loss", "rollout/ep_rew_mean", "eval/return"):
            assert a.get(col) == b.get(col), (col, a, b)


def test_resume_continues_from_the_latest_checkpoint(
    repeated_and_resumed: dict[str, Any],
) -> None:
    run_dir: Path = repeated_and_resumed["resumed"]
    out = repeated_and_resumed["resume"].stdout.splitlines()
    assert out[0] == f"resuming {run_dir} from model_256_steps.zip at step 256", out
    assert f"run: {run_dir}" in out
    assert "held-out eval at step 512:" in repeated_and_resumed["resume"].stdout

    rows = read_eval_csv(run_dir)
    before = repeated_and_resumed["before"]["eval"]
    assert rows[: len(before)] == before  # appended, not rewritten
    new_steps = [r["step"] for r in rows[len(before) :]]
    assert new_steps and all(s > 256 for s in new_steps) and new_steps[-1] == 512, new_steps
    assert new_steps == sorted(new_steps)
    assert all(math.isfinite(v) for r in rows for v in r.values())

    ckpts = {p.name for p in (run_dir / "checkpoints").glob("model_*_steps.zip")}
    assert {"model_384_steps.zip", "model_512_steps.zip"} <= ckpts, ckpts
    assert json.loads((run_dir / "config.json").read_text())["train"]["total_timesteps"] == 512

    # TensorBoard: a second events file in the same folder; the steps keep increasing
    events = sorted(p.name for p in run_dir.glob("events.out.tfevents.*"))
    assert len(events) == len(repeated_and_resumed["before"]["events"]) + 1, events
    acc = accumulator(run_dir)
    for tag in ("eval/avg_jct_h", "eval/total_cost_usd", "eval/return", "rollout/ep_rew_mean"):
        steps = [e.step for e in acc.Scalars(tag)]
        assert steps == sorted(steps) and len(set(steps)) == len(steps), (tag, steps)
        assert steps[-1] == 512 and any(s <= 256 for s in steps), (tag, steps)
    assert [e.step for e in acc.Scalars("eval/avg_jct_h")] == [int(r["step"]) for r in rows]

    from agents import load_agent

    assert load_agent(f"maskable_ppo:{run_dir / 'model.zip'}").model.num_timesteps == 512


def test_resumed_run_evaluates_on_the_same_schedule_as_an_uninterrupted_one(
    repeated_and_resumed: dict[str, Any],
) -> None:
    """An uninterrupted 512-step run evaluates at 0, 128, 256, 384 and 512.
    Reported: the resumed run evaluates at 257 (same weights as 256), 385 and 512, because
    HeldOutEval starts with last_eval = -1 and measures eval_freq from step 0."""
    steps = [int(r["step"]) for r in read_eval_csv(repeated_and_resumed["resumed"])]
    assert steps == [0, 128, 256, 384, 512], steps


def test_resume_keeps_the_earlier_progress_csv_rows(
    repeated_and_resumed: dict[str, Any],
) -> None:
    """Reported: SB3's CSV logger opens progress.csv with "w", so a resumed run replaces the
    first part of the run's rows instead of appending to them."""
    before = repeated_and_resumed["before"]["progress"]
    after = _progress_rows(repeated_and_resumed["resumed"])
    steps = [r.get("time/total_timesteps") for r in after if r.get("time/total_timesteps")]
    old_steps = [r["time/total_timesteps"] for r in before if r.get("time/total_timesteps")]
    assert steps[: len(old_steps)] == old_steps, (old_steps, steps)
    assert len(after) > len(before)


def test_resume_adds_to_the_saved_wall_time(repeated_and_resumed: dict[str, Any]) -> None:
    """train() ends with ``saved.get("wall_time_s", 0.0) + wall``, i.e. it means to add up;
    reported: it rewrote config.json at the start of the resumed run, which drops the earlier
    wall_time_s (set to 1000 s in the copy here), so only the resumed part is kept."""
    saved = json.loads((repeated_and_resumed["resumed"] / "config.json").read_text())
    assert saved["wall_time_s"] > 1000.0, saved["wall_time_s"]
