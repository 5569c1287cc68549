"""The heuristics overlaid on a Stable-Baselines3 run of your own script, in TensorBoard.

    model = MaskablePPO("MultiInputPolicy", env, tensorboard_log="runs")
    model.learn(100_000, callback=HeuristicOverlay("bacepipe_env/GeoPipe-v2"))

:class:`HeuristicOverlay` is the SB3 callback that gives a ``model.learn(...)`` what
``bacepipe train learn`` followed by ``bacepipe train compare`` give a command's run: the
model's held-out evaluation (``eval/avg_jct_h``, ``eval/total_cost_usd``, ``eval/carbon_kg``,
``eval/return``, ``eval/illegal_actions``, on the schedule and seeds of
:class:`~.learn.HeldOutEval`) in the model's own TensorBoard run, and each heuristic's means
on the same episodes as a run of its own, ``<the model's run>/heuristics/<policy>``, under the
same tags at the same steps (flat lines across the learning curve), with the custom-scalars
layout of ``train compare`` (:data:`~.compare.LAYOUT`) that draws them on one chart per metric.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stable_baselines3.common.logger import TensorBoardOutputFormat
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from ..core.limits import check_limit
from ..errors import ValidationError
from ..experiments.headroom import env_heuristics
from ..experiments.tensorboard import run_component
from ..outputs import remove
from ..policies.registry import split_policies
from ..policies.rollout import is_rollout
from .compare import HEURISTICS_DIR, best_first, evaluate_heuristic, write_heuristic
from .config import TRAIN_LIMITS, TrainConfig
from .learn import EvalSchedule, check_env_args, make_env
from .sb3 import SB3Agent

__all__ = ["HeuristicOverlay"]


class HeuristicOverlay(EvalSchedule):
    """An SB3 callback (``model.learn(..., callback=HeuristicOverlay(env_id))``) that draws
    the heuristics beside the model in the model's TensorBoard run.

    At construction it plays each of ``heuristics`` (default: every heuristic an agent of
    ``env_id`` can play, :func:`~bacepipe_env.experiments.headroom.env_heuristics`, as
    ``bacepipe train compare`` does) once on the held-out episodes, reset with the seeds
    ``eval_seed .. eval_seed + n_eval - 1``, each in the env its agent needs
    (:func:`~.compare.evaluate_heuristic`); heuristics are deterministic per seed, so once is
    enough. ``env_kwargs`` are the GeoPipeEnv arguments the model's training env was made
    with (the evaluation env must give the model the observation it learned on). A mistake
    in any argument is one line (:class:`~bacepipe_env.errors.BacepipeError`: a bad
    ``env_id`` or ``env_kwargs`` as ``bacepipe train learn`` says it, a heuristic or a number
    as a :class:`~bacepipe_env.errors.ValidationError`), before any training.

    During ``model.learn`` it evaluates the model on those episodes, a MaskablePPO with the
    action mask (PPO and DQN through the env's fallback, counted in ``eval/illegal_actions``),
    on ``train learn``'s schedule (:class:`~.learn.EvalSchedule`: at the start, every
    ``eval_freq`` environment steps and at the end) and logs ``eval/*`` at that step through
    the model's logger. Each heuristic
    is written as a run ``heuristics/<policy>`` inside the model's TensorBoard run folder
    (``tensorboard_log/<name>_<n>``): its means under the same ``eval/*`` tags, an HParams
    session and the custom-scalars layout (:func:`~.compare.write_heuristic`). At the start
    of training its line spans the steps to ``total_timesteps``; at the end it is rewritten
    at exactly the steps where the model was evaluated. The model needs a TensorBoard log
    (``tensorboard_log=`` or a logger with the ``tensorboard`` format): without one
    ``model.learn`` stops with a one-line ValidationError before its first step."""

    def __init__(
        self,
        env_id: str,
        heuristics: str | Sequence[str] | None = None,
        *,
        env_kwargs: Mapping[str, Any] | None = None,
        eval_freq: int = TrainConfig.eval_freq,
        n_eval: int = TrainConfig.n_eval,
        eval_seed: int = TrainConfig.eval_seed,
    ) -> None:
        numbers = {"eval_freq": eval_freq, "n_eval": n_eval, "eval_seed": eval_seed}
        eval_freq, n_eval, eval_seed = (
            check_limit(k, v, limit=TRAIN_LIMITS[k], exc=ValidationError)
            for k, v in numbers.items()
        )
        if eval_seed + n_eval - 1 > TRAIN_LIMITS["eval_seed"].high:
            raise ValidationError("eval_seed", eval_seed, "+ n_eval must stay below 2**32")
        if env_kwargs is None:
            env_kwargs = {}
        if not isinstance(env_kwargs, Mapping) or not all(isinstance(k, str) for k in env_kwargs):
            raise ValidationError("env_kwargs", env_kwargs, "must be a dict of GeoPipeEnv keywords")
        if not isinstance(env_id, str):
            raise ValidationError("env_id", env_id, "must be a registered environment id")
        kwargs = dict(env_kwargs)
        seeds = list(range(eval_seed, eval_seed + n_eval))
        check_env_args(env_id, kwargs, seeds[0])  # one line for a bad id or env_kwargs
        super().__init__(
            make_env(env_id, **kwargs).unwrapped,
            seeds,
            kwargs,
            eval_freq=eval_freq,
            algo="",  # the model's, known when training starts (_init_callback)
            on_policy=True,
        )
        self.env_id = env_id
        self.heuristics = _policy_list(env_id, heuristics)
        #: (policy, placement, each tag's per-episode values on the held-out episodes)
        self.evaluated = [
            (p, *evaluate_heuristic(env_id, p, kwargs, seeds)) for p in self.heuristics
        ]
        self.run_dir: Path | None = None  # the model's TensorBoard run folder
        self._events: dict[str, Path] = {}  # policy -> the event file written last

    def _init_callback(self) -> None:
        """Find the model's TensorBoard run folder, its learner and its spaces (a model of
        another observation layout than ``env_kwargs`` give is one line)."""
        folders = [
            Path(fmt.writer.log_dir)
            for fmt in self.logger.output_formats
            if isinstance(fmt, TensorBoardOutputFormat)
        ]
        if not folders:
            raise ValidationError(
                "tensorboard_log",
                None,
                "the model logs no TensorBoard events; create it with tensorboard_log='runs' "
                "(or set_logger with the tensorboard format)",
            )
        self.run_dir = folders[0]
        predict = inspect.signature(self.model.predict).parameters
        self.algo = "maskable_ppo" if "action_masks" in predict else type(self.model).__name__
        self.on_policy = not isinstance(self.model, OffPolicyAlgorithm)
        SB3Agent(self.model, self.algo, "learned", self.env_kwargs).check_env(self.env)

    def _on_training_start(self) -> None:
        if self.last_eval != self.num_timesteps:
            self.evaluate()
        end = int(self.locals.get("total_timesteps", self.num_timesteps))
        self._write({*self._steps(), end})

    def _on_training_end(self) -> None:
        super()._on_training_end()
        self._write(self._steps())

    def _steps(self) -> set[int]:
        """The steps this callback evaluated the model at."""
        return {int(row["step"]) for row in self.history}

    def _write(self, steps: set[int]) -> None:
        """(Re)write every heuristic's run with its means at ``steps``, best first (lowest
        mean JCT), as ``train compare`` writes them, and remove the run's earlier file."""
        assert self.run_dir is not None  # set by _init_callback
        for policy, placement, values in best_first(self.evaluated):
            folder = self.run_dir / HEURISTICS_DIR / run_component(policy)
            path = write_heuristic(
                folder, policy, placement, self.env_id, self.seeds, values, sorted(steps)
            )
            old = self._events.get(policy)
            if old is not None and old != path:
                remove(old)
            self._events[policy] = path


def _policy_list(env_id: str, heuristics: str | Sequence[str] | None) -> list[str]:
    """The heuristics to draw: the env's own by default, a comma-separated string or a list
    of names otherwise (repeats dropped); none at all, or a rollout planner, is a
    ValidationError."""
    if heuristics is None:
        return env_heuristics(env_id)
    names = split_policies(heuristics) if isinstance(heuristics, str) else list(heuristics)
    if not names or not all(isinstance(n, str) for n in names):
        raise ValidationError("heuristics", heuristics, "must name one heuristic or more")
    for name in names:
        if is_rollout(name):  # it plans on an env's simulator, so it needs one bound
            raise ValidationError("heuristics", name, "is a planner, not a heuristic")
    return list(dict.fromkeys(names))
