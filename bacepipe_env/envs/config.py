"""Configuration of the Gymnasium environment: observation scales, reward weights, and the
resolution of its arguments (scenario source, placement policy, config mappings, actions)."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ..core.scenario import Scenario
from ..core.units import SECONDS_PER_HOUR
from ..core.validate import require_float, require_int
from ..core.world import KNOBS
from ..errors import MAX_FIELD_CHARS, MAX_VALUE_CHARS, ValidationError, choices, shorten
from ..policies.registry import make_placement  # the one registry of placements
from ..scenarios.generators import RandomScenarioGenerator, ScenarioSampler
from ..scenarios.loader import list_scenarios

__all__ = [
    "ENTRY_KNOBS",
    "MAX_REPLICA_CHOICES",
    "RESET_OPTIONS",
    "FixedScenario",
    "ObsScales",
    "RewardConfig",
    "ScenarioSource",
    "as_action_index",
    "check_entries",
    "check_keywords",
    "checked_scenario",
    "coerce_config",
    "generator_model",
    "make_generator",
    "make_placement",
    "require_choice",
    "reset_options",
    "resolve_action",
    "resolve_max_queue",
    "resolve_max_regions",
    "resolve_replica_choices",
    "scenario_knob_names",
]

#: What ``GeoPipeEnv(scenario)`` takes: a name or file path (a string or any ``os.PathLike``),
#: ``"random"``, a Scenario, or a generator ``(np.random.Generator) -> Scenario``.
ScenarioSource = str | os.PathLike[str] | Scenario | Callable[[np.random.Generator], Scenario]

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

    ``scenario_knobs`` are :class:`ScenarioSampler`'s for a named scenario or a file
    (``bandwidth_scale``, ``gpu_scale``, ``n_jobs``, ``ignore_memory``, ``admission``,
    ``prices``, ``start_hour``, ``egress_usd_per_gb``, ``load``, ``outages``, ...), the
    :class:`RandomScenarioGenerator` fields for ``"random"``. A file path may be any
    ``os.PathLike``; it reaches the sampler unchanged. A list knob of the wrong shape or
    types is a one-line error naming the knob and the entry.
    """
    if scenario_knobs and not isinstance(scenario, (str, os.PathLike)):
        raise ValidationError(
            "scenario_knobs", sorted(scenario_knobs), "only apply to a named scenario"
        )
    if scenario == "random":
        for name in _RANDOM_LISTS:
            if name in scenario_knobs:
                _check_list(name, scenario_knobs[name])
        return RandomScenarioGenerator(**scenario_knobs)
    if isinstance(scenario, (str, os.PathLike)):
        for name, fields in ENTRY_KNOBS.items():
            if name in scenario_knobs:
                check_entries(name, scenario_knobs[name], fields)
        try:
            if isinstance(scenario, str) and scenario in list_scenarios():
                key = _knobs_key(scenario_knobs)
                if key is not None:
                    return _shared_sampler(scenario, key)
            # a file (it may change), or knobs holding lists; a path goes on as given
            source: Any = scenario  # the loader reads a str or any os.PathLike
            return ScenarioSampler(source, **scenario_knobs)
        except ValidationError as err:
            raise _as_env_field(err) from None
    if isinstance(scenario, Scenario):
        return FixedScenario(scenario)
    if callable(scenario):
        return scenario
    raise ValidationError("scenario", scenario, "must be a name, a Scenario or a generator")


#: The scenario knobs that take a list of entries (the faults, semantics §11) -> the fields
#: of an entry, each a region name (``str``) or a number of hours or a factor (``float``).
ENTRY_KNOBS: dict[str, tuple[tuple[str, type], ...]] = {
    "outages": (("region", str), ("start_h", float), ("end_h", float)),
    "link_changes": (
        ("src", str),
        ("dst", str),
        ("factor", float),
        ("start_h", float),
        ("end_h", float),
    ),
}
#: How the loader names an entry of a fault knob (the command line's flags) -> the knob's name.
_LOADER_FIELDS = {"--outage[": "outages[", "--link-degrade[": "link_changes["}
#: The random generator's knobs that take a list of values (its pairs check themselves).
_RANDOM_LISTS = ("gpu_choices", "intra_gbps_choices")


def _is_list(value: Any) -> bool:
    """A list or tuple-like sequence, not a string (``"EU-West:0:1"`` is not a list)."""
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def _is_number(value: Any) -> bool:
    """A real number as :func:`~bacepipe_env.core.validate.require_float` takes it."""
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))


def _check_list(field: str, value: Any) -> None:
    """A one-line error unless ``value`` is a list (or tuple) of numbers."""
    if not _is_list(value):
        raise ValidationError(field, value, "must be a list of numbers")


def check_entries(field: str, value: Any, fields: tuple[tuple[str, type], ...]) -> None:
    """A one-line error naming ``field`` (and the entry, ``outages[2].start_h``) unless
    ``value`` is a list of tuples (or lists) with one value per ``fields`` entry, each a
    string for a ``str`` field and a number for a ``float`` one.

    Only the shape and the types are checked here; the scenario loader checks the rest (known
    regions, ranges, end after start)."""
    names = ", ".join(name for name, _ in fields)
    if not _is_list(value):
        raise ValidationError(field, value, f"must be a list of ({names}) tuples")
    for i, entry in enumerate(value):
        where = f"{field}[{i}]"
        if not _is_list(entry):
            raise ValidationError(where, entry, f"must be a ({names}) tuple")
        if len(entry) != len(fields):
            raise ValidationError(
                where, entry, f"has {len(entry)} values; give {len(fields)}: ({names})"
            )
        for (name, kind), item in zip(fields, entry):
            if kind is str and not isinstance(item, str):
                raise ValidationError(f"{where}.{name}", item, "must be a region name")
            if kind is float and not _is_number(item):
                raise ValidationError(f"{where}.{name}", item, "must be a number")


def _as_env_field(err: ValidationError) -> ValidationError:
    """``err`` with a fault entry named as the env's knob (``outages[0].end_h``) rather than
    the command line's flag (``--outage[0].end_h``), which the loader writes."""
    for flag, knob in _LOADER_FIELDS.items():
        if err.field.startswith(flag):
            return type(err)(knob + err.field.removeprefix(flag), err.value, err.reason)
    return err


def scenario_knob_names(scenario: object) -> list[str]:
    """The knobs a scenario source takes as keyword arguments: :class:`RandomScenarioGenerator`'s
    fields for ``"random"``, ``world`` (a :class:`~bacepipe_env.core.world.World`) and the
    world's settings (:data:`~bacepipe_env.core.world.KNOBS`) for a name or a file, none for a
    Scenario object or a generator."""
    if scenario == "random":
        return [
            f.name
            for f in dataclasses.fields(RandomScenarioGenerator)
            if f.init and not f.name.startswith("_")
        ]
    if isinstance(scenario, (str, os.PathLike)):
        return [*KNOBS, "world"]
    return []


#: The longest an unknown-keyword line may be (``bogus: unknown keyword; ... (got 1)``).
_KEYWORD_LINE = 155


def check_keywords(scenario: object, knobs: Mapping[str, Any], arguments: Sequence[str]) -> None:
    """A one-line ValidationError naming the first keyword of ``knobs`` that is neither one of
    the env's ``arguments`` nor a knob of ``scenario`` (:func:`scenario_knob_names`), with the
    valid ones (a few of each, and the closest name when one is close); what ``gym.make(id,
    bogus=1)`` raises instead of a 300-character TypeError."""
    if not knobs:
        return
    known = scenario_knob_names(scenario)
    for name, value in knobs.items():
        if name in known:
            continue
        groups = [("env arguments: ", list(arguments))]
        if known:
            source = "'random'" if scenario == "random" else "the scenario"
            groups.append((f"; knobs of {source}: ", known))
        elif name in scenario_knob_names("random") + scenario_knob_names("paper"):
            raise ValidationError(name, value, "a scenario knob: give a named scenario for it")
        close = difflib.get_close_matches(name, [*arguments, *known], n=1)
        start = f"unknown keyword{f' (did you mean {close[0]}?)' if close else ''}; "
        used = len(shorten(name, MAX_FIELD_CHARS)) + len(shorten(repr(value), MAX_VALUE_CHARS))
        room = _KEYWORD_LINE - used - len(start) - len(": (got )")
        while groups and (room - sum(len(label) for label, _ in groups)) // len(groups) < 24:
            groups.pop()  # a long keyword or value: fewer lists, the line stays short
        if not groups:
            raise ValidationError(name, value, start + "see help(GeoPipeEnv)")
        limit = (room - sum(len(label) for label, _ in groups)) // len(groups)
        parts = [label + choices(names, limit=limit) for label, names in groups]
        raise ValidationError(name, value, start + "".join(parts))


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
#: The most counts of data-parallel copies an env's actions may offer per job (``replica_choices``).
MAX_REPLICA_CHOICES = 64


def generator_model(generator: object) -> str | None:
    """The performance model (``"paper"`` or ``"physical"``) every scenario of ``generator``
    runs by, where it is known before an episode: a scenario file's or name's (with its
    knobs), ``"random"``'s ``model``, a fixed Scenario's; None for a user's own generator."""
    if isinstance(generator, ScenarioSampler):
        return generator.template.world.model
    if isinstance(generator, RandomScenarioGenerator):
        return generator.model
    if isinstance(generator, FixedScenario):
        return generator.scenario.world.model
    return None


def resolve_replica_choices(replica_choices: int, generator: object) -> int:
    """``replica_choices`` (0 .. :data:`MAX_REPLICA_CHOICES`), refused above 0 where the
    generator's scenarios run the paper's model: it has no data-parallel copies (semantics
    §3e), so every count above one would be an action that is never legal."""
    r = require_int(
        "replica_choices",
        replica_choices,
        minimum=0,
        maximum=MAX_REPLICA_CHOICES,
        exc=ValidationError,
    )
    if r and generator_model(generator) == "paper":
        raise ValidationError(
            "replica_choices",
            r,
            "the paper's model has no data-parallel copies; give model='physical' or 0",
        )
    return r


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
    raise ValueError listing the legal actions) the first legal action, flagged illegal. An
    action that is not one integer is a ValidationError either way (:func:`as_action_index`)."""
    a = as_action_index(action)
    if 0 <= a < len(mask) and mask[a]:
        return a, False
    if strict:
        legal = np.flatnonzero(mask).tolist()
        raise ValueError(f"illegal action {action!r}; legal actions now: {legal}")
    return int(np.argmax(mask)), True


#: What an action must be, as ``gymnasium.spaces.Discrete.contains`` takes it.
_ACTION_TYPES = "an int, a numpy integer or a 0-d integer array"


def as_action_index(action: Any) -> int:
    """An integer action as an int: a Python int, a numpy integer scalar or a 0-d integer array
    (what ``Discrete.contains`` accepts, and what SB3's vector envs, MaskablePPO and RLlib
    pass). Anything else is a one-line ValidationError naming ``action``: a float (1.5 is not a
    slot, nor is 1.0), a string, None, an array with a dimension (``[[0]]``, a batch of
    actions given to one env), or a bool (which ``Discrete.contains`` would take as 0 or 1:
    ``True`` for a slot is a bug, as for every count argument of the env). Whether the
    integer is a legal slot is :func:`resolve_action`'s question."""
    if type(action) is int or isinstance(action, np.integer):  # the common case, fast
        return int(action)
    if isinstance(action, int) and not isinstance(action, bool):  # an IntEnum member
        return int(action)
    if isinstance(action, np.ndarray):
        if action.ndim == 0 and np.issubdtype(action.dtype, np.integer):
            return int(action)
        what = f"an array of shape {action.shape}" if action.ndim else f"a 0-d {action.dtype} array"
    else:
        what = "None" if action is None else type(action).__name__
    raise ValidationError("action", action, f"must be one integer ({_ACTION_TYPES}), not {what}")


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
