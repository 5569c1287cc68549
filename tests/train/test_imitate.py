"""`bacepipe train imitate`: behaviour cloning with DAgger relabelling (issue 27).

A heuristic teacher whose rule the slot policy can represent exactly (SJF: the smallest job
first) is learned to full agreement, and the saved model then plays SJF's episodes, checked
against SJF's own play on the same held-out seeds; every DAgger state carries the teacher's
label for that state; the run's files load like any training run's."""

from __future__ import annotations

import csv
import json

import gymnasium as gym
import numpy as np
import pytest
from train_helpers import ENV_ID

from bacepipe_env.envs.agents import evaluate, make_agent
from bacepipe_env.train.imitate import Dataset, ImitateConfig, collect, imitate, main
from bacepipe_env.train.sb3 import load_agent


@pytest.fixture(scope="module")
def sjf_run(tmp_path_factory: pytest.TempPathFactory):
    cfg = ImitateConfig(
        teacher="sjf",
        env_id=ENV_ID,
        policy="slot",
        episodes=60,
        rounds=1,
        epochs=30,
        held_out=10,
        logdir=str(tmp_path_factory.mktemp("imitate")),
        run_name="sjf",
    )
    lines: list[str] = []
    run_dir, rows = imitate(cfg, say=lines.append)
    return cfg, run_dir, rows, lines


def test_the_student_learns_sjf_and_plays_its_episodes(sjf_run) -> None:
    _, run_dir, rows, lines = sjf_run
    assert [r["round"] for r in rows] == [0, 1]
    assert rows[-1]["agreement"] >= 0.95, rows
    # the student, loaded as any learned policy, against SJF itself on 10 fresh seeds
    agent = load_agent(f"maskable_ppo:{run_dir / 'model.zip'}")
    env = gym.make(ENV_ID, **{k: v for k, v in agent.env_kwargs.items() if k != "env_id"})
    seeds = list(range(3_000_000, 3_000_010))
    student = [r.avg_jct_h for r in evaluate(env.unwrapped, agent, seeds)]
    teacher = make_agent("sjf").bind(env)
    sjf = [r.avg_jct_h for r in evaluate(env.unwrapped, teacher, seeds)]
    assert np.mean(student) == pytest.approx(np.mean(sjf), rel=0.01)
    assert any("agreement" in line for line in lines)


def test_the_run_leaves_its_settings_rounds_and_model(sjf_run) -> None:
    cfg, run_dir, _, _ = sjf_run
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["algo"] == "maskable_ppo" and saved["env_id"] == ENV_ID
    assert saved["env_kwargs"]["observation"] == "dict"
    assert saved["held_out_seeds"] == list(range(cfg.eval_seed, cfg.eval_seed + cfg.held_out))
    table = list(csv.DictReader((run_dir / "imitate.csv").open()))
    assert [int(r["round"]) for r in table] == [0, 1]
    # round 1 adds the student's own episodes to round 0's: more states, never fewer
    assert int(table[1]["states"]) > int(table[0]["states"]) > 0
    assert float(table[0]["teacher_share"]) == 1.0 and float(table[1]["teacher_share"]) == 0.5
    # no deadlines on GeoPipe-v2: the file has the columns it always had
    assert "held_out_miss_rate" not in table[0] and "teacher_miss_rate" not in table[0]
    assert "admission" not in saved["env_kwargs"]


DEADLINE_ID = "bacepipe_env/GeoPipe-Online-Announced-Deadline-v0"


@pytest.fixture(scope="module")
def deadline_run(tmp_path_factory: pytest.TempPathFactory):
    """A short imitation of lsf+deadline-plan on the deadline calendar (30-job episodes),
    the student bringing the rule's admission; held-out seeds 12-15, where the rule misses
    1, 1, 0 and 5 of 30 deadlines (its own play, checked below)."""
    cfg = ImitateConfig(
        teacher="lsf+deadline-plan",
        env_id=DEADLINE_ID,
        env_kwargs={"n_jobs": 30, "max_queue": 32, "admission": "deadline-plan"},
        policy="slot",
        episodes=4,
        rounds=1,
        epochs=5,
        held_out=4,
        eval_seed=12,
        logdir=str(tmp_path_factory.mktemp("imitate-deadline")),
        run_name="lsf",
    )
    lines: list[str] = []
    run_dir, rows = imitate(cfg, say=lines.append)
    return cfg, run_dir, rows, lines


def test_a_deadline_run_reports_misses_and_its_student_brings_the_admission(deadline_run):
    from bacepipe_env.experiments.evaluate import evaluate_policies
    from bacepipe_env.learned import layout_kwargs

    _, run_dir, rows, lines = deadline_run
    seeds = list(range(12, 16))
    rule = gym.make(DEADLINE_ID, n_jobs=30, max_queue=32, policy="lsf+deadline-plan")
    own = evaluate(rule.unwrapped, make_agent("lsf+deadline-plan").bind(rule), seeds)
    assert [round(r.miss_rate * 30) for r in own] == [1, 1, 0, 5]
    table = list(csv.DictReader((run_dir / "imitate.csv").open()))
    # the teacher's held-out misses are the rule's own: (1 + 1 + 0 + 5) / (4 * 30)
    assert float(table[0]["teacher_miss_rate"]) == pytest.approx(7 / 120, rel=1e-12)
    assert all(0.0 <= float(r["held_out_miss_rate"]) <= 1.0 for r in table)
    assert "misses 5.83%" in lines[0] and all("misses" in line for line in lines[1:])
    agent = load_agent(f"maskable_ppo:{run_dir / 'model.zip'}")
    assert layout_kwargs(agent.env_kwargs)["admission"] == "deadline-plan"
    # evaluate plays the model in the env of its admission rule: the run's own numbers
    model = f"maskable_ppo:{run_dir / 'model.zip'}"
    report = evaluate_policies(DEADLINE_ID, [model], 4, 12, env_kwargs={"n_jobs": 30})
    played = report.policies[0].episodes
    assert np.mean([r.miss_rate for r in played]) == pytest.approx(
        rows[-1]["held_out_miss_rate"], rel=1e-12
    )
    assert np.mean([r.avg_jct_h for r in played]) == pytest.approx(
        rows[-1]["held_out_avg_jct_h"], rel=1e-12
    )


def test_ppo_from_a_deadline_student_evaluates_by_misses_too(deadline_run, tmp_path) -> None:
    """eval.csv gains the miss rate where the episodes have deadlines; at step 0 it is the
    imitation student's held-out miss rate, to the last digit."""
    from bacepipe_env.train.learn import main as learn

    cfg, run_dir, rows, _ = deadline_run
    args = [
        "--env-id", DEADLINE_ID, "--policy", "slot", "--n-envs", "1", "--total-timesteps", "32",
        "--n-steps", "32", "--batch-size", "32", "--n-epochs", "1", "--eval-freq", "1000000",
        "--n-eval", str(cfg.held_out), "--eval-seed", str(cfg.eval_seed), "--no-progress",
        "--env-kwargs", json.dumps(cfg.env_kwargs), "--relative-to", "lsf+deadline-plan",
        "--logdir", str(tmp_path), "--run-name", "ft", "--init-from", str(run_dir / "model.zip"),
    ]  # fmt: skip
    assert learn(args) == 0
    first = next(csv.DictReader((tmp_path / "ft" / "eval.csv").open()))
    assert float(first["step"]) == 0
    assert float(first["miss_rate"]) == pytest.approx(rows[-1]["held_out_miss_rate"], rel=1e-12)


class _LastLegal:
    """A student that always plays the last legal action (far from SJF)."""

    def predict(self, obs, action_masks=None, deterministic=True):
        return np.asarray(int(np.flatnonzero(action_masks)[-1])), None


def test_dagger_labels_the_students_own_states_with_the_teachers_action() -> None:
    env = gym.make(ENV_ID, observation="dict")
    teacher = make_agent("sjf")
    data = Dataset()
    collect(env, teacher, [5], data, student=_LastLegal(), teacher_share=0.0)
    obs, masks, actions = data.arrays()
    assert len(actions) > 1
    # every label is legal, and is SJF's pick at that state: a second env replays the
    # student's actions, and a fresh SJF agent is asked at each state the episode visited
    assert all(masks[i, a] for i, a in enumerate(actions))
    replay = gym.make(ENV_ID, observation="dict")
    replay_teacher = make_agent("sjf").bind(replay)
    replay_teacher.reset(5)
    o, _ = replay.reset(seed=5)
    for i in range(len(actions)):
        assert np.array_equal(o["queue"], obs["queue"][i])
        assert int(replay_teacher.predict(o)[0]) == actions[i]
        mask = replay.unwrapped.action_masks()
        o, *_ = replay.step(int(np.flatnonzero(mask)[-1]))  # the student's action


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--teacher", "nope"], "bacepipe train imitate: error: "),
        (["--episodes", "0"], "bacepipe train imitate: error: episodes: must be in [1, "),
        (["--env-kwargs", "{"], "bacepipe train imitate: error: --env-kwargs: not JSON"),
        (["--policy", "cnn"], "bacepipe train imitate: error: policy: choose mlp or slot"),
        (
            ["--env-kwargs", '{"observation": "flat"}'],
            "bacepipe train imitate: error: env_kwargs: the student reads observation=dict",
        ),
    ],
)
def test_a_bad_setting_is_one_line(args, start, tmp_path, capsys) -> None:
    assert main([*args, "--logdir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(start) and "\n" not in err, err
    assert not any(tmp_path.iterdir())


def test_ppo_goes_on_from_the_cloned_policy(sjf_run, tmp_path) -> None:
    """``train learn --init-from``: the evaluation at step 0, before any PPO update, is the
    imitation student's own held-out result, to the last digit (same seeds, greedy play)."""
    from bacepipe_env.train.learn import main as learn

    cfg, run_dir, rows, _ = sjf_run
    args = [
        "--env-id", ENV_ID, "--policy", "slot", "--n-envs", "1", "--total-timesteps", "32",
        "--n-steps", "32", "--batch-size", "32", "--n-epochs", "1", "--eval-freq", "1000000",
        "--n-eval", str(cfg.held_out), "--eval-seed", str(cfg.eval_seed), "--no-progress",
        "--logdir", str(tmp_path), "--run-name", "ft", "--init-from", str(run_dir / "model.zip"),
    ]  # fmt: skip
    assert learn(args) == 0
    first = next(csv.DictReader((tmp_path / "ft" / "eval.csv").open()))
    assert float(first["step"]) == 0
    assert float(first["avg_jct_h"]) == pytest.approx(rows[-1]["held_out_avg_jct_h"], rel=1e-12)
    assert "miss_rate" not in first  # no deadlines: eval.csv's columns as they always were


def test_init_from_a_model_of_another_network_is_one_line(sjf_run, tmp_path, capsys) -> None:
    from bacepipe_env.train.learn import main as learn

    _, run_dir, _, _ = sjf_run
    args = ["--env-id", ENV_ID, "--policy", "mlp", "--n-envs", "1", "--total-timesteps", "32",
            "--logdir", str(tmp_path), "--run-name", "bad", "--no-progress",
            "--init-from", str(run_dir / "model.zip")]  # fmt: skip
    assert learn(args, prog="bacepipe train learn") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bacepipe train learn: error: init_from: ") and "\n" not in err, err
    assert "is not a model of this network" in err
    assert not (tmp_path / "bad").exists()  # refused before the run folder is made
