"""Rule specs: a plug-point rule written as its name and settings, ``srtf:factor=3,min_run_h=0.5``
or ``greedy:min_gain=0.1`` (semantics §3c, §3f). One parser and one canonical form for the
preemption and the elasticity rules: a setting is written in its spec unit (hours) and kept in
the rule's field unit (seconds)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ValidationError

__all__ = ["Setting", "canonical_spec", "make_rule", "spec_name"]


@dataclass(frozen=True)
class Setting:
    """A rule setting as written in a spec (``min_run_h``) and its field (``min_run_s``)."""

    key: str
    field: str
    scale: float  # field units per spec unit
    low: float
    high: float
    open_low: bool = False
    integer: bool = False  # a count: a whole number, kept as an int


def spec_name(name: str, rule: object, settings: tuple[Setting, ...]) -> str:
    """``name`` with the rule's settings that differ from its class's defaults, as
    :func:`make_rule` reads them (``srtf:factor=3``)."""
    default = type(rule)()
    parts = [
        f"{s.key}={getattr(rule, s.field) / s.scale:g}"
        for s in settings
        if getattr(rule, s.field) != getattr(default, s.field)
    ]
    return name + (":" + ",".join(parts) if parts else "")


def make_rule(
    rule: Any,
    rules: Mapping[str, tuple[type[Any], tuple[Setting, ...]]],
    none: Any,
    field: str,
) -> Any:
    """A rule by spec (a name of ``rules``, with settings after a colon), or a rule object
    itself (a ``name`` and a ``choose(view)`` method); None and ``"none"`` are ``none``. A
    one-line ValidationError names ``field`` for anything else."""
    if rule is None or rule == "none":
        return none
    if not isinstance(rule, str):
        if not callable(getattr(rule, "choose", None)) or not isinstance(
            getattr(rule, "name", None), str
        ):
            raise ValidationError(field, rule, "must have a name and a choose(view) method")
        return rule
    name, _, given = rule.strip().partition(":")
    if name not in rules:
        raise ValidationError(field, rule, f"unknown rule; choose from: {', '.join(rules)}")
    cls, settings = rules[name]
    by_key = {s.key: s for s in settings}
    values: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in given.split(","))):
        key, eq, raw = part.partition("=")
        setting = by_key.get(key.strip())
        if setting is None or not eq:
            known = ", ".join(by_key) if by_key else "none"
            raise ValidationError(field, rule, f"{name} takes key=value settings from: {known}")
        try:
            value = float(raw)
        except ValueError:
            raise ValidationError(field, rule, f"{setting.key} must be a number") from None
        if not (math.isfinite(value) and setting.low <= value <= setting.high):
            raise ValidationError(
                field, rule, f"{setting.key} must be in [{setting.low:g}, {setting.high:g}]"
            )
        if setting.integer:
            if value != int(value):
                raise ValidationError(field, rule, f"{setting.key} must be a whole number")
            values[setting.field] = int(value)
            continue
        values[setting.field] = value * setting.scale
    return none if cls is type(none) and not values else cls(**values)


def canonical_spec(
    rule: Any,
    rules: Mapping[str, tuple[type[Any], tuple[Setting, ...]]],
    none: Any,
    field: str,
) -> str:
    """The canonical spec of a rule spec string (validated by :func:`make_rule`), e.g.
    ``srtf:factor=3``; a one-line ValidationError naming ``field`` for anything but a string."""
    if not isinstance(rule, str):
        names = list(rules)
        listed = ", ".join(f"'{n}'" for n in names[:-1]) + f" or '{names[-1]}'"
        raise ValidationError(field, rule, f"must be a rule name such as {listed}")
    name: str = make_rule(rule, rules, none, field).name
    return name
