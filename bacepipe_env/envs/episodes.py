"""How a :class:`~bacepipe_env.envs.geopipe.GeoPipeEnv` is built from its keywords and how
its ``reset(seed=S)`` draws its scenario: the one home of both, which the env and
:mod:`bacepipe_env.envs.replay` (the same episode outside Gymnasium) call.

``gym.make(ID, **kwargs).reset(seed=S)`` seeds the env's ``np_random`` as Gymnasium does
(:func:`reset_rng`), and the env's generator draws the scenario from it: a named scenario's
sampler draws one integer in ``[0, 2**31 - 1)``, the scenario's own seed (``scenario.params
["seed"]``); ``"random"`` draws the whole cluster and workload. :func:`played_scenario` writes
the rules the env's simulator plays by into the scenario's world.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.scenario import Scenario
from ..core.validate import require_int
from ..errors import ValidationError
from . import config as cfg
from .config import ScenarioSource
from .settings import SETTINGS, EnvSettings, env_settings

__all__ = [
    "ARGUMENTS",
    "Generator",
    "draw_scenario",
    "episode_source",
    "played_scenario",
    "reset_rng",
]

#: The keyword arguments of :class:`~bacepipe_env.envs.geopipe.GeoPipeEnv` itself
#: (``scenario`` first, then :data:`~.settings.SETTINGS`); any other keyword must be a knob of
#: the scenario.
ARGUMENTS: tuple[str, ...] = ("scenario", *SETTINGS)

#: An env's episode generator: a random generator in, a scenario out.
Generator = Callable[[np.random.Generator], Scenario]

#: The simulator rules an env's settings may set over its scenario's world.
_RULES = ("admission", "preemption", "elasticity")


def episode_source(
    scenario: ScenarioSource = "paper", **settings: Any
) -> tuple[Generator, EnvSettings]:
    """The episode generator and the validated settings of ``GeoPipeEnv(scenario,
    **settings)``: ``settings`` holds the env's own keywords (:data:`~.settings.SETTINGS`)
    and the scenario's knobs (``n_jobs=80``); a keyword that is neither is a one-line
    ValidationError naming it. The env's constructor calls this."""
    own = {k: v for k, v in settings.items() if k in SETTINGS}
    knobs = {k: v for k, v in settings.items() if k not in SETTINGS}
    cfg.check_keywords(scenario, knobs, ARGUMENTS)  # a typo: one line, not TypeError
    generator = cfg.make_generator(scenario, **knobs)
    return generator, env_settings(generator, **own)


def reset_rng(seed: int) -> np.random.Generator:
    """The random generator ``reset(seed=seed)`` gives an env (its ``np_random``):
    Gymnasium's own seeding of it. ``seed`` must be a whole number >= 0 (else a one-line
    ValidationError naming ``seed``)."""
    from gymnasium.utils import seeding

    seed = require_int("seed", seed, minimum=0, exc=ValidationError)
    return seeding.np_random(seed)[0]


def draw_scenario(generator: Generator, rng: np.random.Generator, max_regions: int) -> Scenario:
    """The scenario ``generator`` draws from ``rng``, checked to be a Scenario with at most
    ``max_regions`` regions: what an env's reset plays (it calls this with its
    ``np_random``)."""
    return cfg.checked_scenario(generator(rng), max_regions)


def played_scenario(scenario: Scenario, settings: EnvSettings) -> Scenario:
    """``scenario`` with the rules an env of ``settings`` plays by written into its world:
    each of admission, preemption and elasticity the settings set (by keyword or by
    ``policy``) replaces the world's, so that ``make_policy(P).simulate(...)`` of the result
    plays by them (a policy's own rules still come first, as in the env made with
    ``policy=P``). ``scenario`` itself when the settings set none that differs.

    A rule given as an object rather than by name must carry a registered rule's name (its
    ``name``), else a one-line ValidationError naming the rule."""
    changes = {}
    for part in _RULES:
        rule = getattr(settings, part)
        if rule is not None and rule.name != getattr(scenario.world, part):
            changes[part] = rule.name
    if not changes:
        return scenario
    try:
        world = scenario.world.with_knobs(changes)
    except ValidationError as err:
        raise ValidationError(
            err.field, err.value, f"{err.reason}; a rule object replays only by a rule's name"
        ) from None
    return dataclasses.replace(scenario, world=world)
