"""Learned policies as injected plug-ins: the library names them, the ``train`` extra loads them.

A learned policy is written ``algo:path`` (``maskable_ppo:runs/x/model.zip``). The library
never imports the packages that load such models (they sit above it and need torch); instead
they register a loader per ``algo`` prefix, either by calling :func:`register_learned_loader`
or, for installed packages, through an entry point in the group ``bacepipe_env.agents`` whose
object is a function of no arguments that registers its loaders. Entry points are read the
first time an unknown prefix is asked for, so a worker process finds the loaders on its own.

The ``bacepipe train ...`` commands come the same way, from the group ``bacepipe_env.train``:
each entry point's name is the command and its object a ``main(argv, prog=...) -> int``.

With nothing registered, a learned policy name is one :class:`~bacepipe_env.errors.BacepipeError`
line that says which extra to install.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .errors import BacepipeError, shorten
from .plugins import entry_points
from .policies.rollout import PREFIX as ROLLOUT_PREFIX

__all__ = [
    "AGENT_ENTRY_POINTS",
    "INSTALL_HINT",
    "LAYOUT_KEYS",
    "PRETRAINED",
    "TRAIN_ENTRY_POINTS",
    "LearnedAgent",
    "LearnedLoader",
    "LearnedPolicyError",
    "TrainCommand",
    "check_model_file",
    "is_learned",
    "layout_kwargs",
    "learned_prefixes",
    "load_learned",
    "pretrained_dir",
    "pretrained_names",
    "register_learned_loader",
    "resolve_pretrained",
    "scenario_env_id",
    "train_command",
    "train_commands",
]

#: Entry-point group of the packages that register learned-policy loaders.
AGENT_ENTRY_POINTS = "bacepipe_env.agents"
#: Entry-point group of the ``bacepipe train <name>`` commands.
TRAIN_ENTRY_POINTS = "bacepipe_env.train"
#: What to do when no loader (or no training command) is installed.
INSTALL_HINT = "pip install 'bacepipe-env[train]'"


@runtime_checkable
class LearnedAgent(Protocol):
    """A loaded model as an orderer: the heuristic agents' ``predict``/``reset`` protocol plus
    the environment settings it was trained with."""

    name: str
    placement: str  # the placement policy the env must use for this agent
    env_kwargs: dict[str, Any]  # the GeoPipeEnv arguments it was trained with

    def predict(
        self, observation: Any, info: Mapping[str, Any] | None = None, *, deterministic: bool = True
    ) -> int:
        """The action (window slot) to play; ``info`` is the env's last info dict."""
        ...

    def reset(self, seed: int | None = None) -> None:
        """Called at the start of every episode."""
        ...

    def check_env(self, env: Any) -> None:
        """Raise a BacepipeError unless the model's spaces match ``env``'s."""
        ...


#: ``algo:path`` -> agent; raises a one-line BacepipeError for a bad file.
LearnedLoader = Callable[[str], LearnedAgent]
#: ``main(argv, prog=...)`` of a ``bacepipe train`` command; returns the exit status.
TrainCommand = Callable[..., int]

_loaders: dict[str, LearnedLoader] = {}
_discovered = False


def register_learned_loader(prefix: str, loader: LearnedLoader) -> None:
    """Load ``{prefix}:path`` policy names with ``loader`` (registering again replaces it; an
    installed entry point does not replace a loader registered here)."""
    if not prefix or ":" in prefix:
        raise ValueError(f"a learned-policy prefix is a non-empty name without ':', got {prefix!r}")
    _loaders[prefix] = loader


def _discover() -> None:
    """Let every installed ``bacepipe_env.agents`` entry point register its loaders (once);
    loaders registered in-process before keep their prefixes."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    explicit = dict(_loaders)
    for ep in entry_points(AGENT_ENTRY_POINTS):
        try:
            register = ep.load()
        except ImportError:
            continue  # its package is broken or half-installed: as if it were not there
        register()
    _loaders.update(explicit)


#: The prefix of the agents shipped in the package: ``pretrained:<env slug>``.
PRETRAINED = "pretrained"


def pretrained_dir() -> Path:
    """The package folder of the shipped agents: ``<slug>.zip`` (the model) and
    ``<slug>.json`` (how it was trained) per registered env (see ``docs/learned.md``)."""
    return Path(__file__).parent / "pretrained"


def pretrained_names() -> list[str]:
    """The env slugs a pretrained agent ships for (``geopipe``, ``geopipe-random``, ...)."""
    folder = pretrained_dir()
    return sorted(p.stem for p in folder.glob("*.zip")) if folder.is_dir() else []


def resolve_pretrained(policies: Sequence[str], env_id: str) -> list[str]:
    """``policies`` with each bare ``pretrained`` spelled out for ``env_id``:
    ``pretrained:<env slug>`` (a one-line error when none ships for that env)."""
    from .envs.registration import env_slug

    if PRETRAINED not in policies:
        return list(policies)
    slug = env_slug(env_id)
    if slug not in pretrained_names():
        shipped = ", ".join(pretrained_names()) or "none"
        raise BacepipeError(f"no pretrained agent ships for {env_id} (shipped: {shipped})")
    return [f"{PRETRAINED}:{slug}" if p == PRETRAINED else p for p in policies]


def scenario_env_id(scenario: str) -> str | None:
    """The registered id whose episodes come from the named ``scenario`` (``paper`` ->
    ``bacepipe_env/GeoPipe-v2``), None when no id uses it."""
    from .envs.registration import ENV_IDS

    for env_id, kwargs in ENV_IDS.items():
        if kwargs.get("scenario") == scenario:
            return env_id
    return None


def is_learned(policy: str | os.PathLike[str]) -> bool:
    """``algo:path`` names a saved model (``ppo:runs/x/model.zip``), not a registered policy
    (nor a rollout planner, ``rollout:<base>``)."""
    policy = os.fspath(policy)
    return ":" in policy and not policy.startswith(ROLLOUT_PREFIX)


def learned_prefixes() -> list[str]:
    """The ``algo`` prefixes a loader is registered for (installed entry points included)."""
    _discover()
    return sorted(_loaders)


#: How much of a policy name (``algo:path``) an error line shows: a temporary folder's path
#: whole, a longer one cut to its start and how many characters more.
_POLICY_CHARS = 120


class LearnedPolicyError(BacepipeError):
    """A learned policy ``algo:path`` that cannot be used: one line, ``algo:path: reason``
    (a long path cut to its start); ``reason`` alone, for a caller that names the policy
    itself (the CLI's ``--policies``)."""

    def __init__(self, policy: str, reason: str) -> None:
        super().__init__(f"{shorten(policy, _POLICY_CHARS)}: {reason}")
        self.reason = reason


def _named(policy: str, reason: str) -> BacepipeError:
    """:class:`LearnedPolicyError` of ``policy`` for ``reason``."""
    return LearnedPolicyError(policy, reason)


def _unreadable(policy: str, err: OSError) -> BacepipeError:
    """``algo:path: cannot read: <the OS's reason>``: one line, the path written once."""
    return _named(policy, f"cannot read: {err.strerror or type(err).__name__}")


def check_model_file(policy: str | os.PathLike[str]) -> Path:
    """The model file of a learned policy ``algo:path``, if it is a file; else one
    BacepipeError line naming the policy: no file there, or the path the OS cannot read
    (``ppo:PATH: cannot read: File name too long``) instead of an OSError traceback."""
    policy = os.fspath(policy)
    path = Path(policy.split(":", 1)[-1])
    try:
        found = path.is_file()
    except OSError as err:  # ENAMETOOLONG, EACCES on a folder on the way, ...
        raise _unreadable(policy, err) from None
    if not found:
        raise _named(policy, "no model file there")
    return path


def load_learned(policy: str | os.PathLike[str]) -> LearnedAgent:
    """``algo:path`` -> the agent its registered loader makes. Every failure is one
    BacepipeError line: no loader at all names the ``train`` extra, and an OSError of reading
    the model (a path too long for the OS, a folder that cannot be listed) names the policy,
    ``ppo:PATH: cannot read: File name too long``."""
    policy = os.fspath(policy)
    prefix = policy.split(":", 1)[0]
    if prefix not in _loaders:
        _discover()
    if not _loaders:
        raise _named(policy, f"learned policies need the train extra: {INSTALL_HINT}")
    if prefix not in _loaders:
        raise _named(
            policy,
            f"unknown algorithm {shorten(repr(prefix), 30)}; a learned policy is written "
            f"algo:path with algo one of: {', '.join(sorted(_loaders))}",
        )
    try:
        return _loaders[prefix](policy)
    except OSError as err:
        raise _unreadable(policy, err) from None


def train_commands() -> list[str]:
    """The installed ``bacepipe train`` command names."""
    return sorted({ep.name for ep in entry_points(TRAIN_ENTRY_POINTS)})


def train_command(name: str) -> TrainCommand:
    """The ``main`` of ``bacepipe train <name>``; a one-line BacepipeError when the command (or
    what it needs, torch and Stable-Baselines3) is not installed."""
    names = train_commands()
    if not names:
        raise BacepipeError(f"bacepipe train needs the train extra: {INSTALL_HINT}")
    if name not in names:
        raise BacepipeError(
            f"bacepipe train: unknown command {name!r}; choose from: {', '.join(names)}"
        )
    missing = ""
    for ep in entry_points(TRAIN_ENTRY_POINTS):
        if ep.name != name:
            continue
        try:
            command: TrainCommand = ep.load()
        except ImportError as err:
            missing = missing or (f" ({err.name})" if err.name else "")
            continue
        return command
    raise BacepipeError(f"bacepipe train {name} needs the train extra: {INSTALL_HINT}{missing}")


#: GeoPipeEnv arguments that fix the observation/action layout, the placement and the
#: admission rule; a learned agent must be evaluated with the same ones. A model trained with
#: ``admission`` (``"deadline-plan"`` on the calendar's deadline id) only orders, as a waiting
#: heuristic does: it brings its rule into every play, and the env holds what the rule holds.
#: Scenario arguments are not among them.
LAYOUT_KEYS = (
    "placement",
    "admission",
    "max_queue",
    "max_regions",
    "allow_wait",
    "observation",
    "illegal_action",
    "reward",
    "scales",
    "preview",
    "grid_features",
    "fault_features",
    "running_features",
)


def layout_kwargs(env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The layout part of a run's environment settings, registry defaults included."""
    from .envs.registration import ENV_IDS

    merged: dict[str, Any] = {}
    env_id = env_kwargs.get("env_id")
    if env_id in ENV_IDS:
        merged.update(ENV_IDS[env_id])
    merged.update({k: v for k, v in env_kwargs.items() if k != "env_id"})
    return {k: v for k, v in merged.items() if k in LAYOUT_KEYS}
