"""The training run's typed arguments: one dataclass, exposed as command-line flags and as a
JSON/TOML ``--config`` file, saved in the run directory so a run can be repeated exactly."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

from ..core.limits import LIMITS, Limit, check_limit
from ..envs.registration import env_slug  # re-exported: the run folders' env names
from ..errors import OneLineParser, ValidationError
from ..policies.registry import policy_info

__all__ = ["TRAIN_LIMITS", "TrainConfig", "env_slug", "parse_config"]

_STEPS = Limit(1, 10_000_000_000, "steps", integer=True)  # ten billion: months on 2 cores
_WIDTH = Limit(1, 65_536, integer=True)
_SEED = Limit(0, 2**32 - 1, integer=True)  # numpy's legacy seeding, which SB3 uses, stops there

#: The range of every numeric training setting (checked like a scenario's fields): beyond
#: these a run hangs (a billion worker processes), overflows, or trains on NaN (a learning
#: rate of 1e308 diverges at the first step).
TRAIN_LIMITS: dict[str, Limit] = {
    "total_timesteps": _STEPS,
    "n_envs": Limit(1, 256, "processes", integer=True),
    "seed": _SEED,
    "learning_rate": Limit(0.0, 1.0, open_low=True),
    "n_steps": Limit(1, 1_000_000, "steps", integer=True),
    "batch_size": Limit(1, 1_000_000, integer=True),
    "n_epochs": Limit(1, 1_000, integer=True),
    "gamma": Limit(0.0, 1.0, open_low=True),
    "gae_lambda": Limit(0.0, 1.0),
    "ent_coef": Limit(0.0, 10.0),
    "slot_hidden": _WIDTH,
    "buffer_size": Limit(1, 100_000_000, integer=True),
    "learning_starts": Limit(0, 10_000_000_000, "steps", integer=True),
    "exploration_fraction": Limit(0.0, 1.0),
    "target_update_interval": _STEPS,
    "eval_freq": _STEPS,
    "n_eval": Limit(1, 100_000, "episodes", integer=True),
    "eval_seed": _SEED,
    "checkpoint_freq": _STEPS,
    "torch_threads": Limit(1, 256, integer=True),
    "repeat_arrivals": Limit(1, 1000, "episodes", integer=True),
}
_TEXT = ("algo", "policy", "env_id", "logdir", "run_name", "init_from", "relative_to")


@dataclass
class TrainConfig:
    """Everything a training run depends on. Defaults suit a few-minute MaskablePPO run on
    GeoPipe-v2 on two CPU cores."""

    algo: str = "maskable_ppo"  # maskable_ppo | ppo | dqn
    policy: str = "mlp"  # mlp (net_arch) | slot (a shared per-slot scorer, MaskablePPO only)
    env_id: str = "bacepipe_env/GeoPipe-v2"
    env_kwargs: dict[str, Any] = field(default_factory=dict)  # GeoPipeEnv overrides
    total_timesteps: int = 20_000
    n_envs: int = 2  # SubprocVecEnv workers (1: in-process)
    seed: int = 0
    learning_rate: float = 3e-4
    n_steps: int = 256  # PPO rollout length per env
    batch_size: int = 64
    n_epochs: int = 10
    gamma: float = 1.0  # episodes are short and the return is the objective: no discount
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    net_arch: list[int] = field(default_factory=lambda: [64, 64])
    slot_hidden: int = 64  # the slot policy's layer width
    buffer_size: int = 50_000  # DQN
    learning_starts: int = 1_000  # DQN
    exploration_fraction: float = 0.3  # DQN
    target_update_interval: int = 1_000  # DQN
    eval_freq: int = 2_000  # environment steps between evaluations
    n_eval: int = 10  # held-out episodes per evaluation
    eval_seed: int = 1_000_000  # held-out reset seeds: eval_seed .. eval_seed + n_eval - 1
    checkpoint_freq: int = 10_000  # environment steps between checkpoints
    logdir: str = "runs"
    run_name: str = ""  # default {scenario}__{algo}__{seed}__{time}
    torch_threads: int = 1
    progress: bool = True
    init_from: str = ""  # a saved model of the same network to start from (an imitation run's)
    relative_to: str = ""  # a heuristic whose return on the same episode is subtracted
    repeat_arrivals: int = 1  # each training arrival sequence played this many times in a row
    curriculum: list[int] = field(default_factory=list)  # job counts by stage, shortest first

    def __post_init__(self) -> None:
        for name in _TEXT:
            if not isinstance(getattr(self, name), str):
                raise ValidationError(name, getattr(self, name), "must be a string")
        for name, limit in TRAIN_LIMITS.items():
            setattr(
                self, name, check_limit(name, getattr(self, name), limit=limit, exc=ValidationError)
            )
        if not isinstance(self.env_kwargs, dict) or not all(
            isinstance(k, str) for k in self.env_kwargs
        ):
            raise ValidationError(
                "env_kwargs", self.env_kwargs, "must be a JSON object of GeoPipeEnv keywords"
            )
        if not isinstance(self.progress, bool):
            raise ValidationError("progress", self.progress, "must be true or false")
        if not isinstance(self.net_arch, list) or not 1 <= len(self.net_arch) <= 16:
            raise ValidationError("net_arch", self.net_arch, "must be 1 to 16 layer widths")
        self.net_arch = [
            check_limit(f"net_arch[{i}]", w, limit=_WIDTH, exc=ValidationError)
            for i, w in enumerate(self.net_arch)
        ]
        if self.eval_seed + self.n_eval - 1 > _SEED.high:
            raise ValidationError("eval_seed", self.eval_seed, "+ n_eval must stay below 2**32")
        if self.algo not in ("maskable_ppo", "ppo", "dqn"):
            raise ValueError(f"algo must be maskable_ppo, ppo or dqn, got {self.algo!r}")
        if self.policy not in ("mlp", "slot"):
            raise ValueError(f"policy must be mlp or slot, got {self.policy!r}")
        if self.policy == "slot" and (self.algo != "maskable_ppo" or self.observation != "dict"):
            raise ValueError("policy slot needs algo maskable_ppo on the dict observation")
        if not isinstance(self.curriculum, list) or len(self.curriculum) > 64:
            raise ValidationError("curriculum", self.curriculum, "must be up to 64 job counts")
        self.curriculum = [
            check_limit(f"curriculum[{i}]", n, limit=LIMITS["workload.n_jobs"], exc=ValidationError)
            for i, n in enumerate(self.curriculum)
        ]
        if self.curriculum != sorted(self.curriculum):
            raise ValidationError("curriculum", self.curriculum, "must grow: shortest first")
        if self.relative_to:
            try:
                policy_info(self.relative_to)
            except ValidationError as err:  # named by the setting, in one line
                raise ValidationError("relative_to", self.relative_to, err.reason) from None

    @property
    def observation(self) -> str:
        """Dict observations for MaskablePPO, the flat Box for PPO and DQN (unless set)."""
        default = "dict" if self.algo == "maskable_ppo" else "flat"
        return str(self.env_kwargs.get("observation", default))

    def resolved_env_kwargs(self) -> dict[str, Any]:
        """The GeoPipeEnv overrides actually used (observation filled in)."""
        return {**self.env_kwargs, "observation": self.observation}

    def default_run_name(self) -> str:
        """``{scenario}__{algo}__{seed}__{time}`` (CleanRL style)."""
        slug, stamp = env_slug(self.env_id), time.strftime("%Y%m%d-%H%M%S")
        return f"{slug}__{self.algo}__{self.seed}__{stamp}"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return dataclasses.asdict(self)


_HELP = {
    "algo": "maskable_ppo (Dict observation, masks), ppo or dqn (flat observation)",
    "env_id": "registered environment id",
    "env_kwargs": "GeoPipeEnv overrides as JSON, e.g. '{\"max_queue\": 8}'",
    "total_timesteps": "environment steps to train for",
    "n_envs": "SubprocVecEnv worker processes (1: in-process)",
    "seed": "seed of the learner and of the training environments (seed + rank)",
    "learning_rate": "optimizer step size",
    "n_steps": "PPO rollout length per environment",
    "batch_size": "minibatch size",
    "n_epochs": "PPO epochs per rollout",
    "gamma": "discount; 1.0 makes the return exactly the objective",
    "gae_lambda": "PPO GAE lambda",
    "ent_coef": "PPO entropy bonus",
    "net_arch": "hidden layer sizes of the mlp policy, comma-separated",
    "policy": "mlp (a flat MLP over the observation) or slot (one shared scorer per queue "
    "slot, permutation-equivariant; maskable_ppo)",
    "slot_hidden": "width of the slot policy's layers",
    "buffer_size": "DQN replay buffer size",
    "learning_starts": "DQN steps before learning starts",
    "exploration_fraction": "DQN share of training with decaying epsilon",
    "target_update_interval": "DQN target network update interval (steps)",
    "eval_freq": "environment steps between held-out evaluations",
    "n_eval": "held-out episodes per evaluation",
    "eval_seed": "first held-out reset seed",
    "checkpoint_freq": "environment steps between checkpoints",
    "logdir": "parent folder of the run",
    "run_name": "run folder name (default {scenario}__{algo}__{seed}__{time})",
    "torch_threads": "torch.set_num_threads",
    "progress": "draw a progress bar on a terminal",
    "relative_to": "train on the return minus this heuristic's on the same episode "
    "(a registered policy; the held-out evaluation keeps the plain return)",
    "repeat_arrivals": "play each training arrival sequence this many times in a row",
    "curriculum": "training episodes' job counts by stage, ascending, over equal shares of "
    "the steps, e.g. 20,40,80 (default: the env's own)",
    "init_from": "start from the weights of a saved model of the same algo and network, e.g. "
    "an imitation run's model.zip (bacepipe train imitate)",
}


def _read_toml(text: str) -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib.loads(text)
    raise ValueError("TOML settings need Python 3.11 or newer; give them as JSON")


def _load_file(path: str) -> dict[str, Any]:
    """Settings from a JSON/TOML file (or a run's config.json); ValueError says why not."""
    p = Path(path)
    if not p.is_file():
        raise ValueError("no such file")
    try:
        text = p.read_text()
        data = _read_toml(text) if p.suffix == ".toml" else json.loads(text)
    except Exception as err:
        raise ValueError(str(err).splitlines()[0] if str(err) else type(err).__name__) from None
    if not isinstance(data, dict):
        raise ValueError("the top level must be a table")
    if isinstance(data.get("train"), dict):  # a run's own config.json: repeat that run
        data = dict(data["train"])
        data.pop("run_name", None)  # a fresh folder, unless --run-name says otherwise
    return data


def _flag_type(tp: Any) -> tuple[Any, dict[str, Any]]:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        tp = next(a for a in get_args(tp) if a is not type(None))
        origin = get_origin(tp)
    if tp is bool:
        return None, {"action": argparse.BooleanOptionalAction}
    if origin is list:
        return (lambda s: [int(x) for x in s.split(",") if x.strip()]), {"metavar": "N,N"}
    if origin is dict:
        return json.loads, {"metavar": "JSON"}
    return tp, {}


def parse_config(
    argv: list[str] | None = None,
    defaults: dict[str, Any] | None = None,
    prog: str = "python -m train.learn",
) -> tuple[TrainConfig, str]:
    """Flags override ``--config`` which overrides ``defaults`` which override the dataclass.

    Returns the config and the ``--resume`` run directory ('' when not resuming). ``prog``
    names the command in usage and error lines (``bacepipe train learn`` when installed).
    """
    parser = OneLineParser(prog=prog, description=TrainConfig.__doc__)
    parser.add_argument(
        "--config",
        help="JSON or TOML file of TrainConfig fields, or a run's config.json to repeat that run",
    )
    parser.add_argument(
        "--resume", default="", metavar="RUN_DIR", help="continue a run from its latest checkpoint"
    )
    hints = get_type_hints(TrainConfig)
    for f in dataclasses.fields(TrainConfig):
        conv, extra = _flag_type(hints[f.name])
        if f.default is not dataclasses.MISSING:
            default: Any = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:  # pragma: no cover - every TrainConfig field has a default
            default = None
        kwargs: dict[str, Any] = {
            "default": argparse.SUPPRESS,
            "dest": f.name,
            "help": f"{_HELP.get(f.name, '')} (default: {default!r})",
            **extra,
        }
        if conv is not None:
            kwargs["type"] = conv
        parser.add_argument(f"--{f.name.replace('_', '-')}", **kwargs)
    args = vars(parser.parse_args(argv))
    resume = args.pop("resume")
    values: dict[str, Any] = dict(defaults or {})
    if resume:
        saved = Path(resume) / "config.json"
        if not saved.is_file():
            parser.exit(2, f"{parser.prog}: error: --resume {resume}: no config.json there\n")
        values.update(json.loads(saved.read_text())["train"])
    config_path = args.pop("config", None)
    if config_path:
        try:
            values.update(_load_file(config_path))
        except ValueError as err:
            parser.exit(2, f"{parser.prog}: error: --config {config_path}: {err}\n")
    values.update(args)
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        parser.exit(2, f"{parser.prog}: error: unknown settings: {', '.join(unknown)}\n")
    try:
        return TrainConfig(**values), resume
    except (TypeError, ValueError) as err:
        parser.exit(2, f"{parser.prog}: error: {err}\n")
    raise AssertionError  # unreachable: parser.exit raises


if __name__ == "__main__":  # pragma: no cover
    cfg, _ = parse_config(sys.argv[1:])
    print(json.dumps(cfg.to_json(), indent=2))
