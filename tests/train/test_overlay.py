"""``bacepipe_env.train.HeuristicOverlay`` (issue 39, item 3): the SB3 callback a script of
one's own adds to ``model.learn`` so that TensorBoard draws the heuristics beside the model.
A real MaskablePPO trains on GeoPipe-Fig1-v2 (100 steps, rollouts of 32) with
``tensorboard_log``; its event files are read back with TensorBoard's EventAccumulator and its
custom-scalars plugin, and every number is checked against an evaluation made here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from train_helpers import EVAL_TAGS, FIG1_ID, accumulator, f32

torch = pytest.importorskip("torch")

from sb3_contrib import MaskablePPO  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback, CallbackList  # noqa: E402

from bacepipe_env.envs.agents import evaluate, make_agent  # noqa: E402
from bacepipe_env.errors import BacepipeError, ValidationError  # noqa: E402
from bacepipe_env.train import HeuristicOverlay, evaluate_model  # noqa: E402

POLICIES = ("sjf", "bace-pipe")
SEEDS = [1_000_000, 1_000_001, 1_000_002]  # the default eval_seed, n_eval=3
#: 100 steps in rollouts of 32 end at 128; evaluations at 0, 64 (eval_freq) and the end
TOTAL, STEPS = 100, [0, 64, 128]


def _model(tensorboard_log: Path | None, **env_kwargs: Any) -> MaskablePPO:
    env = gym.make(FIG1_ID, **env_kwargs)
    log = None if tensorboard_log is None else str(tensorboard_log)
    policy = "MlpPolicy" if env_kwargs.get("observation") == "flat" else "MultiInputPolicy"
    return MaskablePPO(
        policy,
        env,
        n_steps=32,
        batch_size=32,
        seed=0,
        device="cpu",
        tensorboard_log=log,
    )


class _Probe(BaseCallback):
    """Reads each heuristic's line back when training starts, after the overlay's start."""

    def __init__(self, overlay: HeuristicOverlay) -> None:
        super().__init__()
        self.overlay = overlay
        self.at_start: dict[str, list[int]] = {}

    def _on_training_start(self) -> None:
        assert self.overlay.run_dir is not None
        for policy in POLICIES:
            acc = accumulator(self.overlay.run_dir / "heuristics" / policy)
            self.at_start[policy] = [e.step for e in acc.Scalars("eval/avg_jct_h")]

    def _on_step(self) -> bool:
        return True


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    logdir = tmp_path_factory.mktemp("overlay")
    model = _model(logdir)
    overlay = HeuristicOverlay(FIG1_ID, heuristics=list(POLICIES), eval_freq=64, n_eval=3)
    probe = _Probe(overlay)
    model.learn(TOTAL, callback=CallbackList([overlay, probe]))
    return {"logdir": logdir, "run": logdir / "MaskablePPO_1", "model": model, "probe": probe}


def _independent_means(policy: str) -> dict[str, float]:
    """The heuristic's held-out means, played here: its agent in the env its agent needs."""
    agent = make_agent(policy)
    results = evaluate(gym.make(FIG1_ID, **agent.env_kwargs), agent, SEEDS)
    return {
        "eval/avg_jct_h": float(np.mean([r.avg_jct_h for r in results])),
        "eval/total_cost_usd": float(np.mean([r.total_cost_usd for r in results])),
        "eval/carbon_kg": float(np.mean([r.carbon_kg for r in results])),
        "eval/return": float(np.mean([r.episode_return for r in results])),
    }


def test_lines_land_in_the_models_own_run_folder(trained: dict[str, Any]) -> None:
    runs = sorted(
        p.parent.relative_to(trained["logdir"]).as_posix()
        for p in trained["logdir"].rglob("events.out.tfevents.*")
    )
    assert runs == [
        "MaskablePPO_1",
        "MaskablePPO_1/heuristics/bace-pipe",
        "MaskablePPO_1/heuristics/sjf",
    ]


def test_the_model_is_evaluated_with_the_mask_at_start_eval_freq_and_end(
    trained: dict[str, Any],
) -> None:
    acc = accumulator(trained["run"])
    for tag in (*EVAL_TAGS, "eval/illegal_actions"):
        assert [e.step for e in acc.Scalars(tag)] == STEPS, tag
    # the last point is the trained model on the held-out seeds, the mask applied
    results = evaluate_model(trained["model"], gym.make(FIG1_ID), 3, first_seed=SEEDS[0])
    last = acc.Scalars("eval/avg_jct_h")[-1].value
    assert last == f32(float(np.mean([r.avg_jct_h for r in results])))
    assert acc.Scalars("eval/illegal_actions")[-1].value == 0.0


@pytest.mark.parametrize("policy", POLICIES)
def test_each_heuristic_is_flat_at_the_models_eval_steps_at_its_own_value(
    trained: dict[str, Any], policy: str
) -> None:
    folder = trained["run"] / "heuristics" / policy
    assert len(list(folder.glob("events.out.tfevents.*"))) == 1  # the start's line replaced
    acc = accumulator(folder)
    for tag, want in _independent_means(policy).items():
        points = [(e.step, e.value) for e in acc.Scalars(tag)]
        assert points == [(s, f32(want)) for s in STEPS], tag


def test_the_heuristic_lines_span_the_run_from_its_start(trained: dict[str, Any]) -> None:
    """While training, before the model's second evaluation: from step 0 to total_timesteps."""
    assert trained["probe"].at_start == {p: [0, TOTAL] for p in POLICIES}


def test_the_layout_charts_the_model_and_the_heuristics_together(
    trained: dict[str, Any], tensorboard_plugin: Any
) -> None:
    """The layout TensorBoard's custom-scalars plugin serves: one chart per metric whose
    regexes match the model's tag and every heuristic's."""
    logdir: Path = trained["logdir"]
    layout = tensorboard_plugin(logdir, "custom_scalars", "/layout").get("/").get_json()
    charts = {c["title"]: c["multiline"]["tag"] for cat in layout["category"] for c in cat["chart"]}
    assert set(charts) == {
        "average JCT (h)",
        "electricity cost ($)",
        "carbon (kg CO2e)",
        "episode return",
    }
    runs = [trained["run"], *(trained["run"] / "heuristics" / p for p in POLICIES)]
    for title, regexes in charts.items():
        for run in runs:
            tags = accumulator(run).Tags()["scalars"]
            assert any(re.search(rx, t) for rx in regexes for t in tags), (run, title)
    assert any(re.search(rx, "eval/avg_jct_h") for rx in charts["average JCT (h)"])


@pytest.mark.parametrize("env_id", ["bacepipe_env/GeoPipe-Nope-v2", "CartPole-v1", None])
def test_a_bad_env_id_is_one_line_at_construction(env_id: str) -> None:
    with pytest.raises(BacepipeError) as err:
        HeuristicOverlay(env_id)
    assert str(err.value).startswith("env_id: ")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"heuristics": ["sjf", "nope"]}, "policy: "),
        ({"heuristics": []}, "heuristics: "),
        ({"heuristics": "rollout:sjf"}, "heuristics: "),
        ({"eval_freq": 0}, "eval_freq: "),
        ({"env_kwargs": {"max_queue": "x"}}, "env_kwargs: "),
    ],
)
def test_a_bad_argument_is_one_line_at_construction(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(BacepipeError) as err:
        HeuristicOverlay(FIG1_ID, **kwargs)
    assert str(err.value).startswith(field), str(err.value)
    assert "\n" not in str(err.value)


def test_a_bad_heuristic_name_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="unknown policy"):
        HeuristicOverlay(FIG1_ID, heuristics="sjf,nope")


def test_without_tensorboard_log_learn_stops_in_one_line_before_training() -> None:
    model = _model(None)
    overlay = HeuristicOverlay(FIG1_ID, heuristics=["sjf"], n_eval=1)
    with pytest.raises(ValidationError) as err:
        model.learn(64, callback=overlay)
    assert "tensorboard_log=" in str(err.value)
    assert "\n" not in str(err.value)
    assert model.num_timesteps == 0


def test_a_model_of_another_observation_is_one_line(tmp_path: Path) -> None:
    """The overlay plays the model on the env its env_kwargs make: a model trained on the
    flat observation needs ``env_kwargs={"observation": "flat"}``."""
    model = _model(tmp_path, observation="flat")
    overlay = HeuristicOverlay(FIG1_ID, heuristics=["sjf"], n_eval=1)
    with pytest.raises(BacepipeError, match="observation_space does not match") as err:
        model.learn(64, callback=overlay)
    assert "\n" not in str(err.value)
    assert model.num_timesteps == 0
