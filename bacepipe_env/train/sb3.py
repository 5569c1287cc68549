"""Load a saved SB3 model as an ordering agent for :class:`GeoPipeEnv`.

Importing this module needs only numpy; Stable-Baselines3, sb3-contrib and torch (the
``train`` extra) are imported when a model is loaded. :func:`register` is the
``bacepipe_env.agents`` entry point: it makes ``bacepipe compare --policies ppo:...`` and the
experiments load ``algo:path`` names through :func:`load_agent`.
"""

from __future__ import annotations

import inspect
import json
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.validate import require_int
from ..errors import BacepipeError, ValidationError
from ..learned import (
    INSTALL_HINT,
    LAYOUT_KEYS,
    PRETRAINED,
    layout_kwargs,
    pretrained_dir,
    pretrained_names,
    register_learned_loader,
)

if TYPE_CHECKING:
    from ..envs.agents import EpisodeResult

__all__ = [
    "ALGOS",
    "LAYOUT_KEYS",
    "AgentLoadError",
    "SB3Agent",
    "algo_class",
    "evaluate_model",
    "is_learned_spec",
    "layout_kwargs",
    "load_agent",
    "load_pretrained",
    "register",
]

#: Spec prefix -> (module, class). ``maskable_ppo`` reads the action mask; the others rely on
#: the environment's illegal-action fallback (see docs/training.md).
ALGOS: dict[str, tuple[str, str]] = {
    "maskable_ppo": ("sb3_contrib", "MaskablePPO"),
    "ppo": ("stable_baselines3", "PPO"),
    "dqn": ("stable_baselines3", "DQN"),
}


class AgentLoadError(BacepipeError):
    """A model file is missing, corrupt or does not fit the environment."""


def is_learned_spec(name: str) -> bool:
    """True for ``algo:path`` policy names such as ``ppo:runs/x/model.zip`` and for
    ``pretrained:<slug>``."""
    return ":" in name and name.split(":", 1)[0] in (*ALGOS, PRETRAINED)


def algo_class(algo: str) -> Any:
    """The SB3 model class of ``algo`` (``MaskablePPO`` for ``maskable_ppo``), imported now."""
    if algo not in ALGOS:
        raise AgentLoadError(f"unknown algorithm {algo!r}; choose from: {', '.join(ALGOS)}")
    module, cls = ALGOS[algo]
    try:
        mod = __import__(module, fromlist=[cls])
    except ImportError:
        raise AgentLoadError(
            f"learned agents need the train extra: {INSTALL_HINT} ({module})"
        ) from None
    return getattr(mod, cls)


class SB3Agent:
    """A trained model as an orderer. ``env_kwargs`` are the environment's constructor
    arguments the model was trained with (read from the run's ``config.json``); the
    evaluation environment must use the same observation layout and placement.
    ``deterministic`` is how :meth:`predict` plays when not told (the evaluation loop does not
    tell it)."""

    def __init__(
        self,
        model: Any,
        algo: str,
        name: str,
        env_kwargs: Mapping[str, Any],
        *,
        deterministic: bool = True,
    ) -> None:
        self.model = model
        self.algo = algo
        self.name = name
        self.env_kwargs = dict(env_kwargs)
        self.placement = str(self.env_kwargs.get("placement", "pathfinder"))
        self.maskable = algo == "maskable_ppo"
        self.deterministic = deterministic

    def reset(self, seed: int | None = None) -> None:
        """Learned policies keep no per-episode state."""

    def predict(
        self,
        observation: Any,
        info: Mapping[str, Any] | None = None,
        *,
        deterministic: bool | None = None,
    ) -> int:
        """The model's action; MaskablePPO gets the action mask from ``info``. ``deterministic``
        None: the agent's own setting."""
        if deterministic is None:
            deterministic = self.deterministic
        if self.maskable:
            if info is None:
                raise BacepipeError(f"{self.name}: MaskablePPO needs info['action_mask']")
            mask = np.asarray(info["action_mask"], dtype=bool)
            action, _ = self.model.predict(
                observation, action_masks=mask, deterministic=deterministic
            )
        else:
            action, _ = self.model.predict(observation, deterministic=deterministic)
        return int(np.asarray(action).reshape(-1)[0])

    def check_env(self, env: Any) -> None:
        """Raise AgentLoadError unless the model's spaces match ``env``'s."""
        for what in ("observation_space", "action_space"):
            mine, theirs = getattr(self.model, what), getattr(env, what)
            if mine != theirs:
                raise AgentLoadError(
                    f"{self.name}: the model's {what} does not match the environment's "
                    f"(trained with {self.env_kwargs or 'unknown settings'})"
                )


def evaluate_model(
    model: Any,
    env: Any,
    episodes: int = 10,
    *,
    first_seed: int = 0,
    deterministic: bool = True,
) -> list[EpisodeResult]:
    """Play ``model`` on ``env`` for ``episodes`` episodes, reset with the seeds ``first_seed,
    first_seed + 1, ...``, with the action mask applied at every step; one
    :class:`~bacepipe_env.envs.agents.EpisodeResult` per episode (return, average JCT, cost,
    carbon, steps, ``illegal_actions``: 0).

    The entry point for a model trained with SB3 directly: it is the loop every command plays a
    learned agent with (:class:`SB3Agent` and :func:`~bacepipe_env.envs.agents.evaluate`).
    SB3's own ``stable_baselines3.common.evaluation.evaluate_policy`` ignores the mask, so the
    env's fallback silently replaces the illegal actions and the score is not the model's.

    ``model`` must take the mask (``predict(..., action_masks=...)``, sb3-contrib's
    MaskablePPO); a model without it (PPO, DQN) is a one-line ValidationError. ``env`` is one
    :class:`~bacepipe_env.envs.GeoPipeEnv`, wrapped or not (not a vector env), with the
    observation layout the model was trained on; the id's ``TimeLimit`` can cut an episode short
    (``env.unwrapped`` plays to the end). ``deterministic=False`` samples from torch's
    generator: seed it (``torch.manual_seed``) to repeat the numbers."""
    from ..envs.agents import evaluate  # gymnasium: only when a model is played

    episodes = require_int("episodes", episodes, minimum=1, exc=ValidationError)
    first_seed = require_int(
        "first_seed", first_seed, minimum=0, maximum=2**32 - episodes, exc=ValidationError
    )
    if hasattr(env, "num_envs"):  # SB3's and Gymnasium's vector envs
        raise ValidationError("env", type(env).__name__, "must be one env, not a vector env")
    predict = getattr(model, "predict", None)
    if predict is None or "action_masks" not in inspect.signature(predict).parameters:
        raise ValidationError(
            "model",
            type(model).__name__,
            "cannot take the action mask; train with MaskablePPO (sb3-contrib), or play it "
            "with the env's fallback through bacepipe_env.envs.agents.evaluate",
        )
    name = type(model).__name__
    agent = SB3Agent(model, "maskable_ppo", name, {}, deterministic=deterministic)
    agent.check_env(env)
    return evaluate(env, agent, range(first_seed, first_seed + episodes))


def load_agent(spec: str, env_kwargs: Mapping[str, Any] | None = None) -> SB3Agent:
    """``algo:path`` -> SB3Agent. ``env_kwargs`` default to the ``config.json`` saved next to
    the model by ``bacepipe train learn`` (``python -m train.learn``). Every failure is one
    AgentLoadError line."""
    if ":" not in spec:
        raise AgentLoadError(f"a learned policy is written algo:path, got {spec!r}")
    algo, raw_path = spec.split(":", 1)
    cls = algo_class(algo)
    path = Path(raw_path)
    if not path.is_file():
        raise AgentLoadError(f"no model file at {path}")
    if env_kwargs is None:
        trained_with, env_kwargs = _run_settings_near(path)
        if trained_with and trained_with != algo:
            raise AgentLoadError(
                f"{path} was trained with {trained_with}; load it as {trained_with}:{path}"
            )
    import torch

    torch.set_num_threads(1)  # inference on one small MLP: threads only add overhead
    try:
        model = cls.load(str(path), device="cpu")
    except Exception as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        if isinstance(err, zipfile.BadZipFile):
            reason = "not a zip file"
        raise AgentLoadError(f"cannot load {path} as {algo}: {reason}") from None
    return SB3Agent(model, algo, spec, env_kwargs)


def _run_settings_near(path: Path) -> tuple[str, dict[str, Any]]:
    """(algorithm, environment settings) from the train.learn ``config.json`` next to a model
    (or one folder up, for checkpoints); ('', {}) when there is none."""
    for folder in (path.parent, path.parent.parent):
        cfg = folder / "config.json"
        if cfg.is_file():
            try:
                data = json.loads(cfg.read_text())
            except (OSError, json.JSONDecodeError) as err:
                raise AgentLoadError(f"cannot read {cfg}: {err}") from None
            kwargs = dict(data.get("env_kwargs", {}))
            if data.get("env_id"):
                kwargs = {"env_id": data["env_id"], **kwargs}
            return str(data.get("algo", "")), kwargs
    return "", {}


def load_pretrained(spec: str) -> SB3Agent:
    """``pretrained:<env slug>`` -> the agent shipped in the package for that env (its
    ``<slug>.json`` says how it was trained, the environment settings included)."""
    slug = spec.split(":", 1)[1]
    if slug not in pretrained_names():
        shipped = ", ".join(pretrained_names()) or "none"
        raise AgentLoadError(f"no pretrained agent {slug!r}; shipped: {shipped}")
    folder = pretrained_dir()
    try:
        meta = json.loads((folder / f"{slug}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise AgentLoadError(f"cannot read the pretrained agent {slug}'s settings: {err}") from None
    kwargs = {"env_id": meta["env_id"], **meta.get("env_kwargs", {})}
    agent = load_agent(f"{meta['algo']}:{folder / f'{slug}.zip'}", kwargs)
    agent.name = spec
    return agent


def register() -> None:
    """Load every ``algo:path`` of :data:`ALGOS` with :func:`load_agent`, and
    ``pretrained:<slug>`` with :func:`load_pretrained` (entry point of the
    ``bacepipe_env.agents`` group; idempotent)."""
    for algo in ALGOS:
        register_learned_loader(algo, load_agent)
    register_learned_loader(PRETRAINED, load_pretrained)
