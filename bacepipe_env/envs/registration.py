"""Registration of the environment ids, done when ``bacepipe_env`` is imported (idempotent).

Each id registers its constructor kwargs and a step limit, ``max_episode_steps``, that
Gymnasium's ``TimeLimit`` wrapper enforces (``truncated`` comes from it, as for Gymnasium's own
environments). The limit only guards against runaway episodes: each step places a job or waits
for an event (or, under a non-greedy admission rule, is a choice the rule declined), so an
episode needs about one step per job plus one per wait.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..core.deadlines import DEFAULT_SLACK
from ..errors import ValidationError
from ..plugins import after_each_plugin, load_plugins

if TYPE_CHECKING:
    from .geopipe import GeoPipeEnv

__all__ = [
    "ENTRY_POINT",
    "ENV_IDS",
    "MAX_EPISODE_STEPS",
    "WORLD_IDS",
    "check_env_id",
    "check_env_ids",
    "config_table",
    "env_slug",
    "geopipe_kwargs",
    "geopipe_spec",
    "register_envs",
]

ENTRY_POINT = "bacepipe_env.envs.geopipe:GeoPipeEnv"

#: id -> the kwargs ``gym.make(id)`` passes to :class:`~bacepipe_env.envs.geopipe.GeoPipeEnv`.
#: Every id lets the agent wait (``allow_wait``: the last action places nothing until the next
#: event, offered whenever one is still to come) and sees the running jobs
#: (``running_features``): a waiting decision needs the time to the next GPU release.
_DECIDE = {"allow_wait": True, "running_features": True}
ENV_IDS: dict[str, dict[str, Any]] = {
    "bacepipe_env/GeoPipe-v2": {"scenario": "paper", "max_queue": 16, **_DECIDE},
    "bacepipe_env/GeoPipe-Fig1-v2": {"scenario": "fig1", "max_queue": 4, **_DECIDE},
    "bacepipe_env/GeoPipe-Random-v2": {
        "scenario": "random",
        "max_queue": 16,
        "max_regions": 8,
        **_DECIDE,
    },
    # The window holds the whole job budget (max_queue None: 500 by default, n_jobs when given):
    # the pending queue reaches 200+ jobs, and an ordering must be able to pick any of them.
    "bacepipe_env/GeoPipe-Online-v1": {
        "scenario": "online",
        "max_queue": None,
        "grid_features": True,
        "fault_features": True,  # outages and degraded links show (healthy: 0 down, factor 1)
        **_DECIDE,
    },
    # Online-v1 where the agent also preempts (semantics §3c): one action per running job of a
    # window of 16 (at most 14 jobs ran at once over seeds 0-4 under five policies), offered
    # at the end of a scheduling pass where a preemption lets a pending job start; an attempt
    # that has run 1 h (the built-in rules' min_run_h) makes a decision point.
    "bacepipe_env/GeoPipe-Online-Preempt-v1": {
        "scenario": "online",
        "max_queue": None,
        "grid_features": True,
        "fault_features": True,
        "preempt_window": 16,
        **_DECIDE,
    },
    # Online-v1 where every job is due (semantics §15): the scenario knob deadline_slack gives
    # each a slack drawn from U[1.2, 3.0] times its isolated run time (core.deadlines'
    # DEFAULT_SLACK), the queue rows show the time to each deadline and the slack
    # (deadline_features), and the reward is -1 per job certain to miss its deadline.
    "bacepipe_env/GeoPipe-Online-Deadline-v0": {
        "scenario": "online",
        "max_queue": None,
        "grid_features": True,
        "fault_features": True,
        "deadline_slack": DEFAULT_SLACK,
        "deadline_features": True,
        "reward": "misses",
        **_DECIDE,
    },
    # Online-v1 with a calendar: every job is announced 24 h before it is submitted (the
    # scenario knob announce_h), and the observation shows the first 16 announced jobs.
    "bacepipe_env/GeoPipe-Online-Announced-v0": {
        "scenario": "online",
        "max_queue": None,
        "grid_features": True,
        "fault_features": True,
        "announce_window": 16,
        "announce_h": 24.0,
        **_DECIDE,
    },
    # The same where the agent also preempts, as in Online-Preempt-v1.
    "bacepipe_env/GeoPipe-Online-Announced-Preempt-v0": {
        "scenario": "online",
        "max_queue": None,
        "grid_features": True,
        "fault_features": True,
        "preempt_window": 16,
        "announce_window": 16,
        "announce_h": 24.0,
        **_DECIDE,
    },
    # Online-Deadline-v0 with Online-Announced-v0's calendar, whose rows show deadlines too.
    "bacepipe_env/GeoPipe-Online-Announced-Deadline-v0": {
        "scenario": "online",
        "max_queue": None,
        "grid_features": True,
        "fault_features": True,
        "announce_window": 16,
        "announce_h": 24.0,
        "deadline_slack": DEFAULT_SLACK,
        "deadline_features": True,
        "reward": "misses",
        **_DECIDE,
    },
    # Online-v1 in the physical world, where every job may run 1 to 4 data-parallel copies of
    # its pipeline (semantics §3e): the agent picks how many as it starts a job (4 actions per
    # slot, the replicas array shows what each gives), the schedulers estimate with the world's
    # model, and an elastic heuristic (+elastic) brings its resize rule (semantics §3f).
    "bacepipe_env/GeoPipe-Online-Elastic-v0": {
        "scenario": "online",
        "max_queue": None,
        "grid_features": True,
        "fault_features": True,
        "model": "physical",
        "scheduler_model": "world",
        "max_replicas": 4,
        "replica_choices": 4,
        **_DECIDE,
    },
}

#: The ids kept as worlds, out of the learning claims: they came after the 3% gate of
#: docs/headroom.md and their submitted planner finds less than that, so no learned agent is
#: trained or shipped for them (``pretrained`` there is a one-line error).
WORLD_IDS: tuple[str, ...] = ("bacepipe_env/GeoPipe-Online-Elastic-v0",)

#: id -> Gymnasium's ``max_episode_steps`` (the ``TimeLimit`` of ``gym.make(id)``).
MAX_EPISODE_STEPS: dict[str, int] = {
    "bacepipe_env/GeoPipe-v2": 1000,
    "bacepipe_env/GeoPipe-Fig1-v2": 100,
    "bacepipe_env/GeoPipe-Random-v2": 1000,
    # Online-v1 (500 jobs; greedy admission, the scenario's): one step per job, plus at most
    # one wait per event instant (2 per job) with allow_wait, so at most 1,500 steps. Measured
    # over seeds 0-19, random legal actions and the bace-pipe, sjf and fcfs agents: 500 steps
    # (724 with allow_wait). The other admission rules add a step per declined choice: up to
    # 8,370 steps under "finish-aware" and 33,466 under "full" (random actions), so the limit
    # sits well above every rule, and 66 x the greedy bound; a 1,000-job episode takes 1,000.
    "bacepipe_env/GeoPipe-Online-v1": 100_000,
    # Online-v1's bound, plus a decision per preemption and per wake-up (at most one per
    # start); measured over seeds 0-4 with random legal actions: PREEMPT_STEPS_MEASURED
    "bacepipe_env/GeoPipe-Online-Preempt-v1": 100_000,
    # The calendar changes no dynamics: the bounds of Online-v1 and Online-Preempt-v1.
    "bacepipe_env/GeoPipe-Online-Announced-v0": 100_000,
    "bacepipe_env/GeoPipe-Online-Announced-Preempt-v0": 100_000,
    # Deadlines change no dynamics: the bounds of Online-v1 and Online-Announced-v0.
    "bacepipe_env/GeoPipe-Online-Deadline-v0": 100_000,
    "bacepipe_env/GeoPipe-Online-Announced-Deadline-v0": 100_000,
    # Online-v1's bound: the count of copies is part of the placing step, and an elastic
    # heuristic's resizes happen inside the simulator's passes
    "bacepipe_env/GeoPipe-Online-Elastic-v0": 100_000,
}


def geopipe_spec(env_id: str) -> tuple[type[GeoPipeEnv], dict[str, Any]] | None:
    """The class and keywords ``gym.make(env_id)`` builds, for a GeoPipeEnv id: this
    package's ids (:data:`ENV_IDS`) and any other id registered with Gymnasium whose entry
    point is :class:`~bacepipe_env.envs.geopipe.GeoPipeEnv` or a subclass (a user's own world,
    e.g. ``register(id="my/World-v0", entry_point="bacepipe_env.envs.geopipe:GeoPipeEnv",
    kwargs={...})``); None for every other id."""
    from .geopipe import GeoPipeEnv

    if env_id in ENV_IDS:
        return GeoPipeEnv, dict(ENV_IDS[env_id])
    from gymnasium.envs import registration as gym_registration

    registry = gym_registration.registry
    spec = registry.get(env_id)
    if spec is None and load_plugins():  # an installed or named plugin may register it
        return geopipe_spec(env_id)
    if spec is None or spec.entry_point is None:
        return None
    creator: Any
    try:
        # load_env_creator in gymnasium 1.x; load_env, its older name, where a pin has that
        load: Any = getattr(gym_registration, "load_env_creator", None) or getattr(
            gym_registration, "load_env", None
        )
        creator = load(spec.entry_point) if isinstance(spec.entry_point, str) else spec.entry_point
    except (ImportError, AttributeError, TypeError, ValueError):
        return None  # an entry point that does not load is no GeoPipeEnv
    if isinstance(creator, type) and issubclass(creator, GeoPipeEnv):
        return creator, dict(spec.kwargs)
    return None


def geopipe_kwargs(env_id: str) -> dict[str, Any]:
    """The GeoPipeEnv keywords ``gym.make(env_id)`` passes (:func:`geopipe_spec`); ``{}`` for
    an id that is not a GeoPipeEnv's."""
    spec = geopipe_spec(env_id)
    return {} if spec is None else spec[1]


def check_env_id(field: str, env_id: object) -> str:
    """``env_id`` if it is a GeoPipeEnv id (:func:`geopipe_spec`: registered here or by a
    user with Gymnasium), else a one-line ValidationError naming ``field`` and every id of
    this package (the start they share written once, ``bacepipe_env/GeoPipe- + v2, Fig1-v2,
    ...``, and the families grouped, :func:`_grouped`, so that the line stays short)."""
    from ..errors import ValidationError

    if not isinstance(env_id, str) or geopipe_spec(env_id) is None:
        common = next(iter(ENV_IDS))
        for e in ENV_IDS:
            while not e.startswith(common):
                common = common[:-1]
        start = common[: max(common.rfind("/"), common.rfind("-")) + 1]  # a whole word
        raise ValidationError(
            field,
            env_id,
            f"unknown id; {start} + {_grouped(e.removeprefix(start) for e in ENV_IDS)}",
        )
    return env_id


def config_table() -> str:
    """docs/environment.md's table of every registered id's full configuration: one row per
    env setting (:data:`~bacepipe_env.envs.settings.SETTINGS`, at its default unless the id
    sets it) and per scenario knob an id sets, one column per id; the step limit last."""
    import inspect

    from .settings import env_settings

    defaults = {
        name: p.default
        for name, p in inspect.signature(env_settings).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    knobs = [k for kw in ENV_IDS.values() for k in kw if k not in defaults and k != "scenario"]
    short = [e.removeprefix("bacepipe_env/GeoPipe-") for e in ENV_IDS]
    lines = ["| setting | " + " | ".join(short) + " |", "|---|" + "---|" * len(short)]
    for name in ["scenario", *defaults, *dict.fromkeys(knobs)]:
        default = defaults.get(name, "-")
        cells = []
        for kwargs in ENV_IDS.values():
            value = kwargs.get(name, default)
            cells.append(f"`{value!r}`" if value != "-" else "-")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    steps = " | ".join(f"{MAX_EPISODE_STEPS[e]:,}" for e in ENV_IDS)
    lines.append(f"| `max_episode_steps` | {steps} |")
    return "\n".join(lines) + "\n"


def _grouped(rests: Iterable[str]) -> str:
    """``v2, Fig1-v2, Online-{v1, Preempt-v1, Announced-{v0, Preempt-v0}}``: names that share
    a first word (before a ``-``) written once with their tails in braces, grouped the same
    way in turn, in order of first appearance (a family's names are listed together, so
    :data:`ENV_IDS` keeps each family's ids next to each other for its order to show)."""
    families: dict[str, list[str]] = {}
    for rest in rests:
        word, dash, tail = rest.partition("-")
        families.setdefault(word + dash, []).append(tail)
    parts = []
    for key, tails in families.items():
        if len(tails) > 1 and all(tails):
            parts.append(key + "{" + _grouped(tails) + "}")
        else:
            parts += [key + t for t in tails]
    return ", ".join(parts)


def env_slug(env_id: str) -> str:
    """An id's short lower-case name, for run folders and pretrained agents:
    ``bacepipe_env/GeoPipe-Random-v2`` -> ``geopipe-random`` (no namespace, no version)."""
    return re.sub(r"-v\d+$", "", env_id.split("/")[-1]).lower()


def register_envs() -> None:
    """Register every id of :data:`ENV_IDS` with Gymnasium, unless already registered."""
    from gymnasium.envs.registration import register, registry

    for env_id, kwargs in ENV_IDS.items():
        if env_id not in registry:
            register(
                id=env_id,
                entry_point=ENTRY_POINT,
                kwargs=dict(kwargs),
                max_episode_steps=MAX_EPISODE_STEPS[env_id],
            )


def check_env_ids() -> None:
    """After a plugin ran: every id of :data:`ENV_IDS` is still this package's (when Gymnasium
    is loaded at all). One that was registered again is put back, and is one ValidationError
    line (:func:`~bacepipe_env.plugins.after_each_plugin`)."""
    gym_registration = sys.modules.get("gymnasium.envs.registration")
    if gym_registration is None:
        return
    registry = gym_registration.registry
    replaced = [
        env_id
        for env_id, kwargs in ENV_IDS.items()
        if env_id in registry
        and (registry[env_id].entry_point != ENTRY_POINT or registry[env_id].kwargs != kwargs)
    ]
    for env_id in replaced:
        del registry[env_id]
    if replaced:
        register_envs()
        raise ValidationError(
            "environment id",
            replaced[0],
            "names a built-in environment; a plugin cannot replace it",
        )


after_each_plugin(check_env_ids)
