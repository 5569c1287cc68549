"""Train a learned job orderer on GeoPipe with Stable-Baselines3.

    bacepipe train learn --algo maskable_ppo --total-timesteps 20000
    bacepipe train learn --config runs/x/config.json      # repeat a run exactly
    bacepipe train learn --resume runs/x --total-timesteps 40000

(from a checkout also ``python -m train.learn ...``, the same command).

MaskablePPO (sb3-contrib) is the default learner on the Dict observation. PPO and DQN use the
flat observation and cannot see the mask: an illegal action falls back to the first legal one
(the env's ``illegal_action="fallback"``) and is counted in ``eval/illegal_actions``; give
``--env-kwargs '{"reward": {"illegal_penalty": 0.1}}'`` to teach them legality.

Every run writes to ``{logdir}/{run_name}/``: ``config.json``, TensorBoard events with
``train/``, ``rollout/`` and ``eval/`` tags, ``progress.csv``, ``eval.csv``,
``checkpoints/`` and the final ``model.zip``.
"""

from __future__ import annotations

import csv
import functools
import json
import platform
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback, CallbackList, CheckpointCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import HParam, configure
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from .. import __version__, outputs
from ..envs.agents import evaluate
from ..errors import BacepipeError, shorten
from ..experiments.progress import Progress
from ..experiments.summary import write_csv
from ..plugins import load_plugins
from ..signals import stop_forkserver, stop_processes, worker_init
from .config import TrainConfig, parse_config
from .sb3 import ALGOS, SB3Agent, algo_class
from .tricks import Curriculum, RelativeReward, RepeatArrivals

__all__ = [
    "EVAL_KEYS",
    "MISS_KEY",
    "EvalSchedule",
    "HeldOutEval",
    "check_env_args",
    "check_geopipe_id",
    "error_line",
    "eval_seeds",
    "main",
    "make_env",
    "make_eval_env",
    "train",
]

#: A command's error line stays under this many characters, whatever the error holds.
MAX_ERROR_LINE = 199


def eval_seeds(cfg: TrainConfig) -> list[int]:
    """The held-out reset seeds. Training environments are seeded with ``seed + rank`` once
    and never reset with an explicit seed again, so their episodes come from other streams."""
    return list(range(cfg.eval_seed, cfg.eval_seed + cfg.n_eval))


def error_line(prog: str, err: BaseException) -> str:
    """``err`` as the command's one error line, ``PROG: error: ...``, cut to
    :data:`MAX_ERROR_LINE` characters whatever it holds."""
    head = f"{prog}: error: "
    text = " ".join(str(err).split("\n"))
    return head + shorten(text, max(40, MAX_ERROR_LINE - len(head)))


def check_geopipe_id(env_id: str) -> None:
    """One BacepipeError line when ``env_id`` is registered with Gymnasium but is no
    GeoPipeEnv's (``CartPole-v1``): its env takes none of GeoPipe's settings (``placement``,
    ``observation``) and has no simulator for a teacher or planner to play. An id nobody
    registered is left to ``gym.make``'s own error."""
    from ..envs.registration import geopipe_spec

    if geopipe_spec(env_id) is None and env_id in gym.registry:
        raise BacepipeError(
            f"env_id: {shorten(env_id, 50)} is not a GeoPipe environment (no GeoPipeEnv entry "
            "point); give a bacepipe_env/GeoPipe-* id or one registered with GeoPipeEnv"
        )


def check_env_settings(cfg: TrainConfig) -> None:
    """Build and reset the run's environment once; a mistake in ``env_id`` or ``env_kwargs``
    becomes a one-line BacepipeError naming the setting."""
    check_env_args(cfg.env_id, cfg.resolved_env_kwargs(), cfg.seed)


def check_env_args(env_id: str, env_kwargs: dict[str, Any], seed: int = 0) -> None:
    """Build ``env_id`` with ``env_kwargs`` and reset it with ``seed`` once; a mistake in
    either becomes a one-line BacepipeError naming the setting (``env_id: ...``,
    ``env_kwargs: ...``): :func:`check_env_settings`' check, for any caller."""
    check_geopipe_id(env_id)
    try:
        env = make_env(env_id, **env_kwargs)
    except BacepipeError as err:
        raise BacepipeError(f"env_kwargs: {err}") from None
    except (gym.error.Error, TypeError, ValueError) as err:
        setting = "env_id" if isinstance(err, gym.error.Error) else "env_kwargs"
        raise BacepipeError(f"{setting}: {err}") from None
    try:
        env.reset(seed=seed)
    except (BacepipeError, TypeError, ValueError) as err:
        raise BacepipeError(f"env_kwargs: {err}") from None
    finally:
        env.close()


def make_eval_env(cfg: TrainConfig) -> gym.Env[Any, Any]:
    """The evaluation environment: the training settings, no truncation wrapper."""
    return make_env(cfg.env_id, **cfg.resolved_env_kwargs()).unwrapped


def make_env(env_id: str, **kwargs: Any) -> gym.Env[Any, Any]:
    """``gym.make(env_id, **kwargs)``, as a vector env's worker makes its env: an id the
    process does not know yet is looked up among the plugins first (the worker inherits
    ``BACEPIPE_PLUGINS`` from the command, and finds installed plugins itself)."""
    if env_id not in gym.registry:
        load_plugins()
    return gym.make(env_id, **kwargs)


#: The held-out means logged at each evaluation (``eval/<key>``), in this order.
EVAL_KEYS = ("avg_jct_h", "total_cost_usd", "carbon_kg", "return", "illegal_actions")
#: Logged after :data:`EVAL_KEYS` only where the held-out episodes have deadlines (semantics
#: §15): the mean miss rate (a run without deadlines logs and writes what it did before).
MISS_KEY = "miss_rate"


class EvalSchedule(BaseCallback):
    """Plays the current model on the held-out ``seeds`` of ``env`` (unwrapped: no
    truncation) at the schedule of ``bacepipe train learn`` and logs the means
    ``eval/<key>`` of :data:`EVAL_KEYS` (and :data:`MISS_KEY` where the episodes have
    deadlines) at that step through the model's logger.

    The schedule: every ``eval_freq`` environment steps, and once more at the end of training
    unless the last evaluation was at that step. ``on_policy`` learners (PPO-style, updating
    between rollouts) are evaluated at the start of a rollout, right after an update, so every
    evaluation is of a model as it was (or could have been) saved; others (DQN, updating as it
    steps) at the step. Subclasses decide when the first evaluation is
    (:meth:`_on_training_start`). ``algo`` names the model's learner for
    :class:`~.sb3.SB3Agent` (``maskable_ppo`` plays with the action mask)."""

    def __init__(
        self,
        env: gym.Env[Any, Any],
        seeds: list[int],
        env_kwargs: dict[str, Any],
        *,
        eval_freq: int,
        algo: str,
        on_policy: bool,
    ) -> None:
        super().__init__()
        self.env = env
        self.seeds = seeds
        self.env_kwargs = env_kwargs
        self.eval_freq = eval_freq
        self.algo = algo
        self.on_policy = on_policy
        self.last_eval = -1
        self.history: list[dict[str, float]] = []

    def _on_step(self) -> bool:
        if not self.on_policy and self.num_timesteps - max(self.last_eval, 0) >= self.eval_freq:
            self.evaluate()  # DQN updates as it steps: any step is between updates
        return True

    def _on_rollout_start(self) -> None:
        # PPO updates after each rollout: evaluate here, on the model an update just made, so
        # that every row of eval.csv is a model that was (or could have been) saved
        if self.on_policy and self.num_timesteps - max(self.last_eval, 0) >= self.eval_freq:
            self.evaluate()

    def _on_training_end(self) -> None:
        # the model saved as model.zip: PPO's last evaluation was at a rollout start, before
        # the last update; DQN's may have been at this very step
        if self.last_eval != self.num_timesteps:
            self.evaluate()

    def evaluate(self) -> dict[str, float]:
        """Run the held-out episodes now and log the means at the current step; returns the
        row (``step``, each key of :data:`EVAL_KEYS`, and :data:`MISS_KEY` where the episodes
        have deadlines), also kept in :attr:`history`."""
        agent = SB3Agent(self.model, self.algo, "learned", self.env_kwargs)
        results = evaluate(self.env, agent, self.seeds)
        row = {
            "step": float(self.num_timesteps),
            "avg_jct_h": float(np.mean([r.avg_jct_h for r in results])),
            "total_cost_usd": float(np.mean([r.total_cost_usd for r in results])),
            "carbon_kg": float(np.mean([r.carbon_kg for r in results])),
            "return": float(np.mean([r.episode_return for r in results])),
            "illegal_actions": float(np.mean([r.illegal_actions for r in results])),
        }
        rates = [r.miss_rate for r in results if np.isfinite(r.miss_rate)]
        if rates:
            row[MISS_KEY] = float(np.mean(rates))
        for key in (*EVAL_KEYS, MISS_KEY) if rates else EVAL_KEYS:
            self.logger.record(f"eval/{key}", row[key])
        self.logger.dump(self.num_timesteps)
        self.history.append(row)
        self.last_eval = self.num_timesteps
        return row


class HeldOutEval(EvalSchedule):
    """Evaluates the current model on the held-out seeds every ``cfg.eval_freq`` steps and
    logs ``eval/avg_jct_h``, ``eval/total_cost_usd``, ``eval/carbon_kg``, ``eval/return`` and
    ``eval/illegal_actions`` (means over the episodes), plus the hyperparameters once; each
    evaluation is also a row of ``run_dir/eval.csv``."""

    def __init__(self, cfg: TrainConfig, run_dir: Path) -> None:
        super().__init__(
            make_eval_env(cfg),
            eval_seeds(cfg),
            cfg.resolved_env_kwargs(),
            eval_freq=cfg.eval_freq,
            algo=cfg.algo,
            on_policy=cfg.algo != "dqn",  # PPO-style: updates between rollouts
        )
        self.cfg = cfg
        self.run_dir = run_dir

    def _on_training_start(self) -> None:
        hp = {
            k: (v if isinstance(v, (int, float, str, bool)) else json.dumps(v))
            for k, v in self.cfg.to_json().items()
        }
        metrics = {
            "eval/avg_jct_h": 0.0,
            "eval/total_cost_usd": 0.0,
            "eval/carbon_kg": 0.0,
            "eval/return": 0.0,
        }
        self.logger.record("hparams", HParam(hp, metrics), exclude=("stdout", "log", "json", "csv"))
        table = "\n".join(f"| {k} | {v} |" for k, v in hp.items())
        self.logger.record(
            "hparams_text",
            "| parameter | value |\n|---|---|\n" + table,
            exclude=("stdout", "log", "json", "csv"),
        )
        if self.num_timesteps == 0:
            self.evaluate()
        else:  # resumed: keep the schedule of an uninterrupted run
            self.last_eval = _last_eval_step(self.run_dir / "eval.csv", self.num_timesteps)

    def evaluate(self) -> dict[str, float]:
        """Run the held-out episodes now, log the means at the current step and append them
        to ``eval.csv``."""
        row = super().evaluate()
        path = self.run_dir / "eval.csv"
        new = not path.exists()
        fields = list(row) if new else _csv_header(path)  # a resumed run keeps its columns
        with open(path, "a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerow(row)
        return row


def _csv_header(path: Path) -> list[str]:
    """The column names of an existing CSV file."""
    with open(path, newline="") as fh:
        return next(csv.reader(fh), [])


def _last_eval_step(path: Path, default: int) -> int:
    """The step of the last row of an eval.csv (``default`` without one)."""
    if not path.is_file():
        return default
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    return int(float(rows[-1]["step"])) if rows else default


class ProgressBar(BaseCallback):
    """A progress bar over the run's timesteps on stderr (when it is a terminal)."""

    def __init__(self, total: int, start: int) -> None:
        super().__init__()
        self.bar = Progress(total, "steps", "train")
        self.bar.done = start

    def _on_step(self) -> bool:
        delta = self.num_timesteps - self.bar.done
        if delta >= max(1, self.bar.total // 200):
            self.bar.update(delta)
        return True

    def _on_training_end(self) -> None:
        self.bar.update(self.num_timesteps - self.bar.done)
        self.bar.close()


def _build_model(cfg: TrainConfig, venv: Any) -> Any:
    cls = algo_class(cfg.algo)
    policy: Any = "MultiInputPolicy" if cfg.observation == "dict" else "MlpPolicy"
    policy_kwargs: dict[str, Any] = {"net_arch": list(cfg.net_arch)}
    if cfg.policy == "slot":
        from .slot import SlotPolicy

        policy = SlotPolicy
        policy_kwargs = {"features_extractor_kwargs": {"hidden": cfg.slot_hidden}}
    common: dict[str, Any] = {
        "learning_rate": cfg.learning_rate,
        "gamma": cfg.gamma,
        "seed": cfg.seed,
        "device": "cpu",
        "verbose": 0,
        "policy_kwargs": policy_kwargs,
    }
    if cfg.algo == "dqn":
        return cls(
            policy,
            venv,
            buffer_size=cfg.buffer_size,
            learning_starts=cfg.learning_starts,
            batch_size=cfg.batch_size,
            exploration_fraction=cfg.exploration_fraction,
            target_update_interval=cfg.target_update_interval,
            **common,
        )
    return cls(
        policy,
        venv,
        n_steps=cfg.n_steps,
        batch_size=cfg.batch_size,
        n_epochs=cfg.n_epochs,
        gae_lambda=cfg.gae_lambda,
        ent_coef=cfg.ent_coef,
        **common,
    )


def _tail(path: str, limit: int = 60) -> str:
    """``path`` if it has at most ``limit`` characters, else ``...`` and its end (the file's
    name is what tells two paths apart)."""
    return path if len(path) <= limit else "..." + path[-(limit - 3) :]


def _check_model_zip(path: str) -> None:
    """One BacepipeError line, naming ``init_from`` and the file, unless ``path`` is an SB3
    model file: a zip with the ``data`` (JSON) and ``policy.pth`` entries SB3 saves."""
    shown = _tail(path)
    try:
        if not Path(path).is_file():
            raise BacepipeError(f"init_from: no model file at {shown}")
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            missing = [n for n in ("data", "policy.pth") if n not in names]
            problem = f"no {' or '.join(missing)} in the zip" if missing else ""
            if not problem:
                try:
                    json.loads(zf.read("data"))
                except ValueError:
                    problem = "its data entry is not JSON"
    except zipfile.BadZipFile:
        problem = "not a zip file"
    except OSError as err:  # a path too long for the OS, a file it may not read, ...
        raise BacepipeError(f"init_from: {shown}: cannot read: {err.strerror or err}") from None
    if problem:
        raise BacepipeError(f"init_from: {shown} is not an SB3 model zip ({problem})")


def _start_from(model: Any, path: str) -> None:
    """Load the weights of the saved model at ``path`` into ``model`` (the same network:
    the imitation run's student, for PPO to go on from); one line, under 200 characters with
    the command's name, naming the file when it is missing, not an SB3 model zip, or a model
    of another network."""
    _check_model_zip(path)
    try:
        model.set_parameters(path, exact_match=True, device="cpu")
    except (RuntimeError, ValueError, KeyError, OSError, zipfile.BadZipFile) as err:
        # torch's first line only says "Error(s) in loading state_dict for <policy>:"; the
        # next says what: "size mismatch for mlp_extractor.policy_net.0.weight: ...shapes"
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        if len(lines) > 1 and lines[0].startswith("Error(s) in loading state_dict"):
            lines = lines[1:]
        reason = lines[0].partition(":")[0].strip() if lines else type(err).__name__
        head = f"init_from: {_tail(path)} is not a model of this network"
        hint = "; give its --policy, --net-arch, --slot-hidden and env settings"
        room = 165 - len(head) - len(hint) - len(" ()")
        detail = f" ({shorten(reason, room)})" if room >= 30 else ""
        raise BacepipeError(head + detail + hint) from None


def _saved_steps(path: Path) -> int:
    """The timestep count stored in an SB3 model file (-1 if unreadable)."""
    try:
        with zipfile.ZipFile(path) as zf:
            return int(json.loads(zf.read("data")).get("num_timesteps", -1))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return -1


def _latest_checkpoint(run_dir: Path) -> Path | None:
    """The saved model with the most timesteps: a checkpoint, or the final model when it is
    further along (ties go to the checkpoint)."""
    candidates = [*(run_dir / "checkpoints").glob("model_*_steps.zip"), run_dir / "model.zip"]
    existing = [p for p in candidates if p.is_file()]
    if not existing:
        return None
    return max(existing, key=lambda p: (_saved_steps(p), p.name != "model.zip"))


def _merge_progress(path: Path, earlier: list[dict[str, str]]) -> None:
    """SB3's CSV logger starts progress.csv afresh; put a resumed run's earlier rows back."""
    if not earlier:
        return
    later: list[dict[str, str]] = []
    if path.is_file():
        with open(path, newline="") as fh:
            later = list(csv.DictReader(fh))
    write_csv(path, [*earlier, *later])


def train(cfg: TrainConfig, resume: str = "") -> tuple[Path, list[dict[str, float]]]:
    """Run (or resume) one training run; returns its directory and the evaluation history.

    The environment is built once here first, so that a bad ``env_id`` or ``env_kwargs`` is
    one :class:`~bacepipe_env.errors.BacepipeError` naming the setting, not a traceback from
    inside a worker process."""
    check_env_settings(cfg)
    if cfg.init_from and not resume:  # before the run folder exists: a refusal leaves none
        probe = DummyVecEnv([lambda: gym.make(cfg.env_id, **cfg.resolved_env_kwargs())])
        _start_from(_build_model(cfg, probe), cfg.init_from)
        probe.close()
    torch.set_num_threads(cfg.torch_threads)
    set_random_seed(cfg.seed)
    run_dir = (
        Path(resume) if resume else Path(cfg.logdir) / (cfg.run_name or cfg.default_run_name())
    )
    # one run per folder at a time: a second `train learn` on it is refused with one line
    with outputs.locked(run_dir, "--resume" if resume else "--run-name"):
        return _train_in(cfg, run_dir, resume)


def _in_worker(
    env: gym.Env,
    worker: bool = True,
    relative_to: str = "",
    repeat: int = 1,
    seed: int = 0,
    curriculum: tuple[list[int], int] | None = None,
) -> gym.Env:
    """Each training env's wrapper: in a SubprocVecEnv worker it sets the process up to stop
    with its leader (:func:`~bacepipe_env.signals.worker_init`); ``relative_to`` and
    ``repeat`` add the training tricks of :mod:`.tricks` (the held-out evaluation plays the
    plain env)."""
    if worker:
        worker_init()
    if curriculum:
        env = Curriculum(env, *curriculum)
    if repeat > 1:
        env = RepeatArrivals(env, repeat, seed)
    if relative_to:
        env = RelativeReward(env, relative_to)
    return env


def _stages(cfg: TrainConfig) -> tuple[list[int], int] | None:
    """The curriculum's job counts and each stage's steps per env (equal shares)."""
    if not cfg.curriculum:
        return None
    return list(cfg.curriculum), max(1, cfg.total_timesteps // (cfg.n_envs * len(cfg.curriculum)))


def _train_in(cfg: TrainConfig, run_dir: Path, resume: str) -> tuple[Path, list[dict[str, float]]]:
    """:func:`train`'s body, with ``run_dir`` locked."""
    wall_before, earlier_progress = 0.0, []
    if resume:
        if (run_dir / "config.json").is_file():
            wall_before = json.loads((run_dir / "config.json").read_text()).get("wall_time_s", 0.0)
        if (run_dir / "progress.csv").is_file():
            with open(run_dir / "progress.csv", newline="") as fh:
                earlier_progress = list(csv.DictReader(fh))
    outputs.write_text(
        run_dir / "config.json",
        json.dumps(
            {
                "train": cfg.to_json(),
                "algo": cfg.algo,
                "env_id": cfg.env_id,
                "env_kwargs": cfg.resolved_env_kwargs(),
                "eval_seeds": eval_seeds(cfg),
                "versions": {
                    "python": platform.python_version(),
                    "torch": torch.__version__,
                    "bacepipe_env": __version__,
                },
            },
            indent=2,
        )
        + "\n",
    )

    vec_cls = SubprocVecEnv if cfg.n_envs > 1 else DummyVecEnv
    venv = make_vec_env(
        # a function, not the id: a worker imports this module (so the package, whatever the
        # start method) and loads plugins for an id it does not know; nor does make_vec_env
        # then ask for rgb_array frames, which training never draws
        functools.partial(make_env, cfg.env_id),
        n_envs=cfg.n_envs,
        seed=cfg.seed,
        vec_env_cls=vec_cls,
        env_kwargs=cfg.resolved_env_kwargs(),
        wrapper_class=_in_worker,
        wrapper_kwargs={
            "worker": cfg.n_envs > 1,
            "relative_to": cfg.relative_to,
            "repeat": cfg.repeat_arrivals,
            "seed": cfg.seed,
            "curriculum": _stages(cfg),
        },
    )
    cls = algo_class(cfg.algo)
    ckpt = _latest_checkpoint(run_dir) if resume else None
    if ckpt is not None:
        model = cls.load(str(ckpt), env=venv, device="cpu")
        print(f"resuming {run_dir} from {ckpt.name} at step {model.num_timesteps}")
    else:
        model = _build_model(cfg, venv)
        if cfg.init_from:
            _start_from(model, cfg.init_from)
    model.set_logger(configure(str(run_dir), ["tensorboard", "csv"]))
    evaluator = HeldOutEval(cfg, run_dir)
    callbacks: list[BaseCallback] = [
        evaluator,
        CheckpointCallback(
            save_freq=max(1, cfg.checkpoint_freq // cfg.n_envs),
            save_path=str(run_dir / "checkpoints"),
            name_prefix="model",
        ),
    ]
    if cfg.progress:
        callbacks.append(ProgressBar(cfg.total_timesteps, model.num_timesteps))
    remaining = max(0, cfg.total_timesteps - model.num_timesteps)
    start = time.perf_counter()
    try:
        model.learn(
            total_timesteps=remaining,
            callback=CallbackList(callbacks),
            reset_num_timesteps=ckpt is None,
        )
    except BaseException:  # Ctrl-C, SIGTERM, an error: the env workers stop now, not at exit
        model.logger.close()  # what TensorBoard and progress.csv have not flushed yet
        stop_processes(getattr(venv, "processes", ()))
        stop_forkserver()
        raise
    wall = time.perf_counter() - start
    with outputs.target(run_dir / "model.zip") as tmp:
        model.save(str(tmp))
    venv.close()
    model.logger.close()
    _merge_progress(run_dir / "progress.csv", earlier_progress)
    with open(run_dir / "config.json") as fh:
        saved = json.load(fh)
    saved["wall_time_s"] = wall_before + wall
    outputs.write_text(run_dir / "config.json", json.dumps(saved, indent=2) + "\n")
    return run_dir, evaluator.history


def main(
    argv: list[str] | None = None,
    defaults: dict[str, Any] | None = None,
    prog: str = "python -m train.learn",
) -> int:
    """Command-line entry point (``bacepipe train learn``, ``python -m train.learn``)."""
    cfg, resume = parse_config(argv, defaults, prog)
    try:
        run_dir, history = train(cfg, resume)
    except BacepipeError as err:  # one line, like a settings error
        print(error_line(prog, err), file=sys.stderr)
        return 2
    last = history[-1] if history else {}
    print(f"run: {run_dir}")
    if last:
        print(
            f"held-out eval at step {int(last['step'])}: avg JCT {last['avg_jct_h']:.2f} h, "
            f"total cost ${last['total_cost_usd']:,.2f}, return {last['return']:.4f}, "
            f"illegal actions {last['illegal_actions']:.2f}/episode"
            + (f", misses {last[MISS_KEY]:.2%}" if MISS_KEY in last else "")
        )
    print(f"model: {run_dir / 'model.zip'}")
    print(f"TensorBoard: tensorboard --logdir {run_dir.parent}")
    return 0


assert set(ALGOS) == {"maskable_ppo", "ppo", "dqn"}

if __name__ == "__main__":
    sys.exit(main())
