"""An env's episodes outside Gymnasium: the simulator (and ``bacepipe simulate --env-id ID
--seed S``) replays the very episode an env plays, from the env's own construction and draw
(:mod:`bacepipe_env.envs.episodes`).

``gym.make(ID, **kwargs).reset(seed=S)`` seeds the env's ``np_random`` as Gymnasium does
(:func:`reset_rng`), and the env's generator draws the scenario from it: a named scenario's
sampler draws one integer in ``[0, 2**31 - 1)``, the scenario's own seed (``scenario.params
["seed"]``, what ``bacepipe simulate --scenario NAME --seed`` takes); ``"random"`` draws the
whole cluster and workload. :func:`scenario_for` does the same without an env, and writes the
rules the env's simulator plays by (admission, preemption, elasticity: the env's keywords, or
its ``policy``'s) into the scenario's world, so that any simulator run of it plays them.
docs/environment.md, "Seeds and replay", says it for users.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from ..core.scenario import Scenario
from ..core.world import KNOBS
from .episodes import draw_scenario, episode_source, played_scenario, reset_rng

__all__ = ["replay_command", "scenario_for"]

#: The env keywords that change only what an agent observes or is told (the observation, its
#: optional arrays, the reward, the info dict, the frames): no heuristic's episode.
_UNSEEN = frozenset(
    (
        "observation",
        "scales",
        "grid_features",
        "fault_features",
        "running_features",
        "announce_window",
        "reward",
        "info",
        "render_mode",
    )
)


def scenario_for(env_id: str, seed: int, **env_kwargs: Any) -> Scenario:
    """The scenario ``gym.make(env_id, **env_kwargs).reset(seed=seed)`` plays, built without
    Gymnasium stepping: the same generator draws it from the same random generator, and the
    env's admission, preemption and elasticity rules are written into its world
    (:func:`played_scenario`). So, for a policy P that can play as an agent,
    ``make_policy(P, seed=seed).simulate(scenario_for(env_id, seed))`` is the episode
    ``gym.make(env_id, policy=P)`` plays from ``reset(seed=seed)`` with ``make_agent(P)``,
    bit for bit; ``bacepipe simulate --env-id ID --seed S --policy P`` runs it.

    ``env_id`` is a GeoPipeEnv id (this package's, or one a user or plugin registered with a
    GeoPipeEnv entry point); ``env_kwargs`` go over its registered keywords as in
    ``gym.make``. A bad id, seed or keyword is a one-line ValidationError."""
    from .registration import check_env_id, geopipe_spec

    check_env_id("env_id", env_id)
    spec = geopipe_spec(env_id)
    assert spec is not None  # checked above
    generator, settings = episode_source(**{**spec[1], **env_kwargs})
    scenario = draw_scenario(generator, reset_rng(seed), settings.max_regions)
    return played_scenario(scenario, settings)


def replay_command(
    env_id: str, seed: int, policy: str, env_kwargs: Mapping[str, Any] | None = None
) -> str | None:
    """``bacepipe simulate --env-id ID --seed S --policy P`` (quoted for a POSIX shell), with
    a world flag per keyword of ``env_kwargs`` (``n_jobs=80`` -> ``--jobs 80``): the command
    that replays the episode a heuristic P played on ``gym.make(env_id, policy=P,
    **env_kwargs)`` reset with ``seed``, when the env's window held the pending queue (the
    agent then decides as the simulator's run; at each id's default job count it does).
    Keywords that only change what an agent observes (``reward``, ``observation``, the
    optional arrays) need no flag. None when another keyword has no flag that takes its value
    as text (``max_queue``, a list of outages): the episode then replays only in Python
    (:func:`scenario_for`)."""
    words = ["bacepipe", "simulate", "--env-id", env_id, "--seed", str(seed), "--policy", policy]
    for name, value in (env_kwargs or {}).items():
        if name in _UNSEEN:
            continue
        knob = KNOBS.get(name)
        if knob is None or not knob.flag or knob.repeat:
            return None
        if knob.const is True:  # a bare flag: on, or left out
            if value is not True:
                return None
            words.append(knob.flag)
        elif isinstance(value, str) or (
            isinstance(value, (int, float)) and not isinstance(value, bool)
        ):
            words += [knob.flag, str(value)]
        else:
            return None
    return shlex.join(words)
