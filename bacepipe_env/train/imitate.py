"""Imitate a teacher: behaviour cloning with DAgger-style relabelling, saved as a MaskablePPO
model that every command plays.

    bacepipe train imitate --teacher rollout:sjf+finish-aware --env-id bacepipe_env/GeoPipe-v2

Round 0 plays ``--episodes`` episodes with the teacher and records, at every decision, the
observation, the mask and the teacher's action. Each later round plays as many new episodes
with a mixture: at each step the teacher acts with probability ``beta ** round``, the student
(the model trained so far) otherwise, and the teacher labels every state the episode visits,
the student's own included (Ross, Gordon and Bagnell's DAgger). After each round the student is
trained on the union of the data by cross-entropy on the masked action distribution.

The teacher is any registered policy or a rollout planner (``rollout:<base>``, which plans on
the env's simulator). The student is MaskablePPO's policy, the MLP (``--policy mlp``) or the
shared per-slot scorer (``--policy slot``), built exactly as ``bacepipe train learn`` builds it,
so the saved ``model.zip`` and ``config.json`` load as ``maskable_ppo:RUN/model.zip`` in
``evaluate``, ``compare`` and ``train compare``, and PPO can go on from it.

Every run writes ``{logdir}/{run_name}/``: ``config.json``, ``imitate.csv`` (a row per round:
the data's size and build time, the training loss, the student's agreement with the teacher on
held-out states, its held-out average JCT and the teacher's; where the episodes have deadlines,
semantics §15, also the student's held-out miss rate and the teacher's) and ``model.zip``.
Held-out states come from ``--held-out`` episodes the teacher plays on reset seeds
``eval_seed ...``, which no round trains on.

The student is played on the id's own world with its layout (what ``evaluate`` and ``compare``
do with a learned agent), so the teacher acts in that same env: a waiting heuristic's admission
rule and a preemptive one's rule are not the env's there, and a planner tries the wait action
instead of its base's admission rule. An ``admission`` in ``--env-kwargs`` is the env's for the
teacher and the student alike, and the saved model brings it into every play (the student then
only orders, as a waiting heuristic does: :data:`~bacepipe_env.learned.LAYOUT_KEYS`).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th

from .. import __version__, outputs
from ..core.limits import Limit, check_limit
from ..core.units import SECONDS_PER_HOUR
from ..envs.agents import evaluate, make_agent
from ..errors import BacepipeError, OneLineParser, ValidationError
from ..learned import LAYOUT_KEYS
from .config import TrainConfig, env_slug
from .learn import _build_model, check_geopipe_id, error_line
from .sb3 import SB3Agent

__all__ = ["Dataset", "ImitateConfig", "agreement", "collect", "fit", "imitate", "main"]

_LIMITS = {
    "episodes": Limit(1, 1_000_000, "episodes", integer=True),
    "rounds": Limit(0, 100, integer=True),
    "beta": Limit(0.0, 1.0),
    "epochs": Limit(1, 10_000, integer=True),
    "batch_size": Limit(1, 1_000_000, integer=True),
    "learning_rate": Limit(0.0, 1.0, open_low=True),
    "held_out": Limit(1, 100_000, "episodes", integer=True),
    "seed": Limit(0, 2**32 - 1, integer=True),
    "eval_seed": Limit(0, 2**32 - 1, integer=True),
    "slot_hidden": Limit(1, 65_536, integer=True),
    "torch_threads": Limit(1, 256, integer=True),
}


@dataclass
class ImitateConfig:
    """Everything an imitation run depends on (see the module docstring)."""

    teacher: str = "rollout:sjf+finish-aware"
    env_id: str = "bacepipe_env/GeoPipe-v2"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    policy: str = "mlp"  # mlp | slot
    net_arch: list[int] = field(default_factory=lambda: [64, 64])
    slot_hidden: int = 64
    episodes: int = 200  # per round
    rounds: int = 2  # DAgger rounds after the teacher's own
    beta: float = 0.5  # the teacher acts with probability beta ** round
    epochs: int = 20  # passes over the data after each round
    batch_size: int = 256
    learning_rate: float = 1e-3
    held_out: int = 20  # episodes of held-out states (and of the JCT evaluation)
    seed: int = 0
    eval_seed: int = 1_000_000
    logdir: str = "runs"
    run_name: str = ""
    torch_threads: int = 1

    def __post_init__(self) -> None:
        for name, limit in _LIMITS.items():
            setattr(
                self, name, check_limit(name, getattr(self, name), limit=limit, exc=ValidationError)
            )
        if self.policy not in ("mlp", "slot"):
            raise ValidationError("policy", self.policy, "choose mlp or slot")
        if not isinstance(self.env_kwargs, dict):
            raise ValidationError("env_kwargs", self.env_kwargs, "must be a JSON object")
        if self.env_kwargs.get("observation", "dict") != "dict":
            raise ValidationError(
                "env_kwargs", self.env_kwargs["observation"], "the student reads observation=dict"
            )

    def train_config(self, env_kwargs: dict[str, Any]) -> TrainConfig:
        """The ``bacepipe train learn`` settings that build the same student network."""
        return TrainConfig(
            algo="maskable_ppo",
            policy=self.policy,
            env_id=self.env_id,
            env_kwargs=env_kwargs,
            net_arch=list(self.net_arch),
            slot_hidden=self.slot_hidden,
            seed=self.seed,
            learning_rate=self.learning_rate,
            n_envs=1,
            batch_size=self.batch_size,
        )


@dataclass
class Dataset:
    """Observations (a dict of stacked arrays), masks and the teacher's actions."""

    obs: dict[str, list[np.ndarray]] = field(default_factory=dict)
    masks: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)

    def add(self, obs: dict[str, np.ndarray], mask: np.ndarray, action: int) -> None:
        """One labelled state."""
        for key, value in obs.items():
            self.obs.setdefault(key, []).append(np.asarray(value, dtype=np.float32))
        self.masks.append(np.asarray(mask, dtype=bool))
        self.actions.append(int(action))

    def __len__(self) -> int:
        return len(self.actions)

    def arrays(self) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """``(obs, masks, actions)`` as stacked arrays."""
        obs = {k: np.stack(v) for k, v in self.obs.items()}
        return obs, np.stack(self.masks), np.asarray(self.actions, dtype=np.int64)


def _teacher_action(teacher: Any, obs: Any) -> int:
    return int(np.asarray(teacher.predict(obs)[0]))


def collect(
    env: Any,
    teacher: Any,
    seeds: Sequence[int],
    data: Dataset,
    *,
    student: Any = None,
    teacher_share: float = 1.0,
    rng: np.random.Generator | None = None,
    misses: list[float] | None = None,
) -> list[float]:
    """Play one episode per seed and add every visited state with the teacher's label;
    returns each episode's average JCT (hours), and appends each one's miss rate to
    ``misses`` when given (NaN for an episode without deadlines, semantics §15).

    At each step the teacher's action is played with probability ``teacher_share``, the
    student's (``student.predict(obs, action_masks=mask, deterministic=True)``) otherwise."""
    rng = np.random.default_rng(0) if rng is None else rng
    teacher.bind(env)
    jcts = []
    for seed in seeds:
        teacher.reset(seed)
        obs, _ = env.reset(seed=seed)
        done, info = False, {}
        while not done:
            mask = np.asarray(env.unwrapped.action_masks(), dtype=bool)
            label = _teacher_action(teacher, obs)
            data.add(obs, mask, label)
            action = label
            if student is not None and rng.random() >= teacher_share:
                action = int(student.predict(obs, action_masks=mask, deterministic=True)[0])
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        jcts.append(float(info.get("episode_avg_jct_s", float("nan"))) / SECONDS_PER_HOUR)
        if misses is not None:
            misses.append(float(info.get("episode_miss_rate", float("nan"))))
    return jcts


def _tensors(obs: dict[str, np.ndarray], index: np.ndarray) -> dict[str, th.Tensor]:
    return {k: th.as_tensor(v[index]) for k, v in obs.items()}


def fit(model: Any, data: Dataset, cfg: ImitateConfig, rng: np.random.Generator) -> float:
    """Train ``model``'s policy on ``data`` by cross-entropy on the masked distribution;
    returns the last epoch's mean loss."""
    obs, masks, actions = data.arrays()
    policy = model.policy
    policy.set_training_mode(True)
    optimizer = th.optim.Adam(policy.parameters(), lr=cfg.learning_rate)
    n, loss_sum, batches = len(actions), 0.0, 0
    for _ in range(cfg.epochs):
        order = rng.permutation(n)
        loss_sum, batches = 0.0, 0
        for start in range(0, n, cfg.batch_size):
            index = order[start : start + cfg.batch_size]
            dist = policy.get_distribution(_tensors(obs, index), action_masks=masks[index])
            loss = -dist.log_prob(th.as_tensor(actions[index])).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum, batches = loss_sum + float(loss.detach()), batches + 1
    policy.set_training_mode(False)
    return loss_sum / max(batches, 1)


def agreement(model: Any, data: Dataset) -> float:
    """The fraction of ``data``'s states where the student's most likely legal action is the
    teacher's."""
    obs, masks, actions = data.arrays()
    with th.no_grad():
        dist = model.policy.get_distribution(_tensors(obs, np.arange(len(actions))), masks)
        chosen = dist.distribution.probs.argmax(dim=-1).numpy()
    return float((chosen == actions).mean())


def _held_out(env: Any, model: Any, seeds: Sequence[int]) -> tuple[float, float]:
    """The student's mean average JCT (hours) and mean miss rate (NaN without deadlines)
    over the held-out seeds, played greedily as every command plays a learned agent
    (:func:`~bacepipe_env.envs.agents.evaluate`)."""
    agent = SB3Agent(model, "maskable_ppo", "student", {})
    results = evaluate(env, agent, seeds)
    return float(np.mean([r.avg_jct_h for r in results])), _mean_misses(
        [r.miss_rate for r in results]
    )


def _mean_misses(rates: Sequence[float]) -> float:
    """The mean of episodes' miss rates; NaN when none had deadlines."""
    finite = [r for r in rates if np.isfinite(r)]
    return float(np.mean(finite)) if finite else float("nan")


def imitate(cfg: ImitateConfig, say: Any = print) -> tuple[Path, list[dict[str, float]]]:
    """Run the rounds (see the module docstring); returns the run folder and a row per round."""
    th.set_num_threads(cfg.torch_threads)
    teacher = make_agent(cfg.teacher, cfg.seed)
    # the student is played (evaluate, compare) on the id's own world with its layout
    # (learned.layout_kwargs): the teacher acts in that same env, so its admission and
    # preemption rules are not the env's; a planner tries the wait action instead
    # (its admission too: one given in env_kwargs is the env's for both)
    layout = {k: v for k, v in teacher.env_kwargs.items() if k in LAYOUT_KEYS and k != "admission"}
    env_kwargs = {**layout, **cfg.env_kwargs, "observation": "dict"}
    check_geopipe_id(cfg.env_id)  # CartPole-v1: one line, not a TypeError about placement
    try:
        env = gym.make(cfg.env_id, **env_kwargs)
    except gym.error.Error as err:
        raise BacepipeError(f"env_id: {err}") from None
    except (BacepipeError, TypeError, ValueError) as err:
        raise BacepipeError(f"env_kwargs: {err}") from None
    name = cfg.run_name or f"{env_slug(cfg.env_id)}__imitate__{cfg.seed}"
    run_dir = Path(cfg.logdir) / name
    run_dir.mkdir(parents=True, exist_ok=True)
    train_cfg = cfg.train_config(env_kwargs)
    with outputs.locked(run_dir, "--run-name"):
        from stable_baselines3.common.vec_env import DummyVecEnv

        venv = DummyVecEnv([lambda: gym.make(cfg.env_id, **env_kwargs)])
        model = _build_model(train_cfg, venv)
        rng = np.random.default_rng(cfg.seed)
        held = Dataset()
        held_seeds = list(range(cfg.eval_seed, cfg.eval_seed + cfg.held_out))
        teacher_rates: list[float] = []
        teacher_jct = float(np.mean(collect(env, teacher, held_seeds, held, misses=teacher_rates)))
        teacher_misses = _mean_misses(teacher_rates)
        due = bool(np.isfinite(teacher_misses))  # the episodes have deadlines: report misses
        say(
            f"teacher {cfg.teacher}: held-out avg JCT {teacher_jct:.2f} h"
            + (f", misses {teacher_misses:.2%}" if due else "")
            + f" over {cfg.held_out} episodes ({len(held):,} held-out states)"
        )
        data, rows = Dataset(), []
        started = time.perf_counter()
        for r in range(cfg.rounds + 1):
            t0 = time.perf_counter()
            first = cfg.seed * 1_000_003 % 2**31 + r * cfg.episodes
            seeds = range(first, first + cfg.episodes)
            share = cfg.beta**r if r else 1.0
            collect(
                env,
                teacher,
                seeds,
                data,
                student=model if r else None,
                teacher_share=share,
                rng=rng,
            )
            built = time.perf_counter() - t0
            t1 = time.perf_counter()
            loss = fit(model, data, cfg, rng)
            jct, missed = _held_out(env, model, held_seeds)
            row = {
                "round": r,
                "teacher_share": share,
                "states": len(data),
                "build_s": built,
                "fit_s": time.perf_counter() - t1,
                "loss": loss,
                "agreement": agreement(model, held),
                "held_out_avg_jct_h": jct,
                "teacher_avg_jct_h": teacher_jct,
            }
            if due:  # only where the episodes have deadlines: other runs' files are as they were
                row |= {"held_out_miss_rate": missed, "teacher_miss_rate": teacher_misses}
            rows.append(row)
            say(
                f"round {r}: {len(data):,} states (+{built:.1f} s to build), loss {loss:.4f}, "
                f"agreement {row['agreement']:.3f} on {len(held):,} held-out states, "
                f"held-out avg JCT {row['held_out_avg_jct_h']:.2f} h"
                + (f", misses {missed:.2%}" if due else "")
            )
        with outputs.target(run_dir / "model.zip") as tmp:
            model.save(str(tmp))
        buffer = io.StringIO(newline="")
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        outputs.write_text(run_dir / "imitate.csv", buffer.getvalue())
        saved = {
            "imitate": asdict(cfg),
            "algo": "maskable_ppo",
            "env_id": cfg.env_id,
            "env_kwargs": env_kwargs,
            "held_out_seeds": held_seeds,
            "wall_time_s": time.perf_counter() - started,
            "versions": {
                "python": platform.python_version(),
                "torch": th.__version__,
                "bacepipe_env": __version__,
            },
        }
        outputs.write_text(run_dir / "config.json", json.dumps(saved, indent=2) + "\n")
    env.close()
    return run_dir, rows


def _parser(prog: str) -> argparse.ArgumentParser:
    p = OneLineParser(prog=prog, description=__doc__.split("\n\n")[0] if __doc__ else None)
    defaults = ImitateConfig()
    p.add_argument(
        "--teacher",
        default=defaults.teacher,
        help=f"a registered policy or rollout:<base> (default {defaults.teacher})",
    )
    p.add_argument("--env-id", default=defaults.env_id, help=f"default {defaults.env_id}")
    p.add_argument("--env-kwargs", default="{}", help="GeoPipeEnv keywords as a JSON object")
    p.add_argument("--policy", default="mlp", help="mlp or slot (default mlp)")
    for name in (
        "episodes",
        "rounds",
        "beta",
        "epochs",
        "batch_size",
        "learning_rate",
        "held_out",
        "seed",
        "eval_seed",
        "slot_hidden",
        "torch_threads",
    ):
        p.add_argument(
            f"--{name.replace('_', '-')}",
            default=getattr(defaults, name),
            help=f"default {getattr(defaults, name)}",
        )
    p.add_argument("--logdir", default=defaults.logdir, help="default runs")
    p.add_argument("--run-name", default="", help="default {env}__imitate__{seed}")
    return p


def _number(name: str, text: Any) -> Any:
    limit = _LIMITS[name]
    try:
        return int(text) if limit.integer else float(text)
    except (TypeError, ValueError):
        raise ValidationError(f"--{name.replace('_', '-')}", text, "must be a number") from None


def main(argv: list[str] | None = None, prog: str = "bacepipe train imitate") -> int:
    """``bacepipe train imitate``: one line for a bad setting, exit 2."""
    args = _parser(prog).parse_args(argv)
    try:
        try:
            env_kwargs = json.loads(args.env_kwargs)
        except json.JSONDecodeError as err:
            raise ValidationError("--env-kwargs", args.env_kwargs, f"not JSON: {err.msg}") from None
        numbers = {name: _number(name, getattr(args, name)) for name in _LIMITS}
        cfg = ImitateConfig(
            teacher=args.teacher,
            env_id=args.env_id,
            env_kwargs=env_kwargs,
            policy=args.policy,
            logdir=args.logdir,
            run_name=args.run_name,
            **numbers,
        )
        run_dir, rows = imitate(cfg)
    except BacepipeError as err:
        print(error_line(prog, err), file=sys.stderr)
        return 2
    print(f"run: {run_dir}")
    print(f"model: {run_dir / 'model.zip'} (play it as maskable_ppo:{run_dir / 'model.zip'})")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
