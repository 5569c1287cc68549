"""Configuration of the Gymnasium environment: observation scales, reward weights, and the
resolution of its arguments (scenario source, placement policy, config mappings, actions)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ..core.scenario import Scenario
from ..core.units import SECONDS_PER_HOUR
from ..core.validate import require_float, require_int
from ..errors import ValidationError
from ..policies.registry import make_placement  # the one registry of placements
from ..scenarios.generators import RandomScenarioGenerator, ScenarioSampler
from ..scenarios.loader import list_scenarios

__all__ = [
    "RESET_OPTIONS",
    "FixedScenario",
    "ObsScales",
    "RewardConfig",
    "ScenarioSource",
    "as_action_index",
    "checked_scenario",
    "coerce_config",
    "make_generator",
    "make_placement",
    "require_choice",
    "reset_options",
    "resolve_action",
    "resolve_max_queue",
    "resolve_max_regions",
]

#: What ``GeoPipeEnv(scenario)`` takes: a name or file path, ``"random"``, a Scenario, or a
#: generator ``(np.random.Generator) -> Scenario``.
ScenarioSource = str | Scenario | Callable[[np.random.Generator], Scenario]

C = TypeVar("C")


@dataclass(frozen=True)
class ObsScales:
    """Constants that bring observation features to O(1) for any scenario.

    GPU counts are divided by ``gpus``, prices by ``price`` ($/kWh), grid carbon intensities
    by ``carbon`` (gCO2e/kWh; the optional ``grid`` array); bandwidth enters as
    ``log10(1 + Gbps) / log_gbps`` and durations as ``log10(1 + hours) / log_hours``, so that
    1 Gbps to 100 Gbps and one hour to 10,000 hours both land in [0, 1]-ish ranges.
    """

    gpus: float = 128.0
    price: float = 0.35
    log_gbps: float = 2.0
    log_hours: float = 4.0
    carbon: float = 600.0

    def __post_init__(self) -> None:
        for name in ("gpus", "price", "log_gbps", "log_hours", "carbon"):
            value = require_float(
                f"scales.{name}", getattr(self, name), positive=True, exc=ValidationError
            )
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the default per-step reward (:class:`~bacepipe_env.envs.reward.JctCostReward`).

    ``r_t = -(jct_weight * dJ_t / (N * jct_scale) + cost_weight * dC_t / cost_scale +``
    ``carbon_weight * dG_t / carbon_scale) - illegal_penalty * [action was illegal]``, where
    ``dJ_t`` is the job-seconds spent in the system, ``dC_t`` the cost ($, electricity plus
    egress when the tariff charges it) and ``dG_t`` the emissions (kg CO2e) incurred since the
    previous decision. The episode's return is therefore ``-(jct_weight * avg_JCT / jct_scale +
    cost_weight * total_cost / cost_scale + carbon_weight * total_carbon / carbon_scale) -
    penalties``. The scales are set per episode from its jobs (see the docs). ``carbon_weight``
    defaults to 0: the default reward is the paper's two objectives alone.
    """

    jct_weight: float = 1.0
    cost_weight: float = 0.25
    illegal_penalty: float = 0.0
    carbon_weight: float = 0.0

    def __post_init__(self) -> None:
        for name in ("jct_weight", "cost_weight", "illegal_penalty", "carbon_weight"):
            value = require_float(
                f"reward.{name}", getattr(self, name), minimum=0.0, exc=ValidationError
            )
            object.__setattr__(self, name, value)


def coerce_config(cls: type[C], value: Any, field: str) -> C:
    """``cls()`` for None, ``cls(**value)`` for a mapping (a JSON config), else ``value``."""
    if value is None:
        return cls()
    if isinstance(value, Mapping):
        try:
            return cls(**value)
        except TypeError as err:
            raise ValidationError(field, dict(value), str(err)) from None
    if not isinstance(value, cls):
        raise ValidationError(field, value, f"must be a {cls.__name__} or a mapping")
    return value


class FixedScenario:
    """A generator that always returns the same scenario."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.max_regions = scenario.cluster.n_regions
        self.max_jobs = len(scenario.jobs)

    def __call__(self, rng: np.random.Generator) -> Scenario:
        return self.scenario


def make_generator(
    scenario: ScenarioSource, **scenario_knobs: Any
) -> Callable[[np.random.Generator], Scenario]:
    """The episode generator of a scenario source (see :data:`ScenarioSource`).

    ``scenario_knobs`` are :class:`ScenarioSampler`'s for a named scenario (``bandwidth_scale``,
    ``gpu_scale``, ``n_jobs``, ``ignore_memory``, ``admission``, ``prices``, ``start_hour``,
    ``egress_usd_per_gb``, ``load``), the :class:`RandomScenarioGenerator` fields for
    ``"random"``.
    """
    if scenario_knobs and not isinstance(scenario, str):
        raise ValidationError(
            "scenario_knobs", sorted(scenario_knobs), "only apply to a named scenario"
        )
    if scenario == "random":
        return RandomScenarioGenerator(**scenario_knobs)
    if isinstance(scenario, str):
        key = _knobs_key(scenario_knobs) if scenario in list_scenarios() else None
        if key is not None:
            return _shared_sampler(scenario, key)
        return ScenarioSampler(scenario, **scenario_knobs)  # a file (it may change) or lists
    if isinstance(scenario, Scenario):
        return FixedScenario(scenario)
    if callable(scenario):
        return scenario
    raise ValidationError("scenario", scenario, "must be a name, a Scenario or a generator")


def _knobs_key(knobs: Mapping[str, Any]) -> tuple[tuple[str, type, Any], ...] | None:
    """The knobs as a hashable key, each value with its type (``1``, ``1.0`` and ``True`` are
    different knobs); None when a value cannot be hashed (a list: a matrix or a fault list)."""
    key = tuple(sorted((name, type(value), value) for name, value in knobs.items()))
    try:
        hash(key)
    except TypeError:
        return None
    return key


@functools.lru_cache(maxsize=32)
def _shared_sampler(source: str, key: tuple[tuple[str, type, Any], ...]) -> ScenarioSampler:
    """One sampler per built-in scenario and knobs in a process, shared by every env made with
    them: a sampler is immutable (its draws come from the caller's generator), and one cluster
    object lets the envs of a vector env share their memoised placement previews."""
    return ScenarioSampler(source, **{name: value for name, _, value in key})


#: The largest window and region padding an env takes: its arrays are ``max_queue`` rows and
#: ``max_regions`` squared cells, allocated at construction.
MAX_QUEUE, MAX_REGIONS = 100_000, 1_024


def resolve_max_regions(max_regions: int | None, generator: object) -> int:
    """``max_regions``, or the generator's ``max_regions`` attribute when it is None."""
    return _from_generator("max_regions", max_regions, generator, "max_regions", MAX_REGIONS)


def resolve_max_queue(max_queue: int | None, generator: object) -> int:
    """``max_queue``, or the generator's ``max_jobs`` attribute when it is None: a window that
    holds every job an episode can have, so that no candidate is ever out of sight."""
    return _from_generator("max_queue", max_queue, generator, "max_jobs", MAX_QUEUE)


def _from_generator(
    field: str, value: int | None, generator: object, attribute: str, maximum: int
) -> int:
    k = value if value is not None else getattr(generator, attribute, None)
    if k is None:
        raise ValidationError(field, None, f"give it for a generator without {attribute}")
    return require_int(field, k, minimum=1, exc=ValidationError, maximum=maximum)


def resolve_action(action: Any, mask: np.ndarray, strict: bool) -> tuple[int, bool]:
    """``(slot, illegal)``: the action as an index if ``mask`` allows it, else (``strict``:
    raise ValueError listing the legal actions) the first legal action, flagged illegal."""
    a = as_action_index(action)
    if 0 <= a < len(mask) and mask[a]:
        return a, False
    if strict:
        legal = np.flatnonzero(mask).tolist()
        raise ValueError(f"illegal action {action!r}; legal actions now: {legal}")
    return int(np.argmax(mask)), True


def as_action_index(action: Any) -> int:
    """An integer action (Python or numpy int, or a one-element integer array); -1 (illegal)
    for anything else, floats included: 1.5 is not a slot."""
    if type(action) is int or isinstance(action, np.integer):  # the common case, fast
        return int(action)
    arr = np.asarray(action)
    if arr.size != 1 or not np.issubdtype(arr.dtype, np.integer):
        return -1
    return int(arr.reshape(-1)[0])


def hours_setting(field: str, value: Any, maximum: float = 1e6) -> float:
    """``value`` hours (a number in [0, ``maximum``]) as seconds, else a one-line error."""
    hours = require_float(field, value, minimum=0.0, maximum=maximum, exc=ValidationError)
    return float(hours) * SECONDS_PER_HOUR


def require_choice(field: str, value: Any, choices: tuple[Any, ...]) -> Any:
    """``value`` if it is one of ``choices`` (of the same type: 1 is not True), else raise."""
    if not any(isinstance(value, type(c)) and value == c for c in choices):
        raise ValidationError(field, value, f"must be one of {', '.join(map(repr, choices))}")
    return value


#: The keys ``GeoPipeEnv.reset(options=...)`` reads.
RESET_OPTIONS = ("scenario",)


def reset_options(options: Any) -> Mapping[str, Any]:
    """``options`` of ``reset`` checked: None or a mapping of :data:`RESET_OPTIONS` keys."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValidationError(
            "options", options, f"must be None or a dict with the keys {list(RESET_OPTIONS)}"
        )
    unknown = sorted(str(k) for k in options if k not in RESET_OPTIONS)
    if unknown:
        raise ValidationError("options", unknown, f"unknown keys; known: {list(RESET_OPTIONS)}")
    return options


def checked_scenario(scenario: Any, max_regions: int) -> Scenario:
    """``scenario`` if it is a Scenario with at most ``max_regions`` regions, else raise."""
    if not isinstance(scenario, Scenario):
        raise ValidationError("scenario", scenario, "the generator must return a Scenario")
    if scenario.cluster.n_regions > max_regions:
        raise ValidationError(
            "scenario",
            scenario.cluster.n_regions,
            f"has more regions than max_regions = {max_regions}",
        )
    return scenario
