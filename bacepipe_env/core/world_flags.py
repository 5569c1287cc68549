"""The command-line flags of the world settings: each parser takes a flag's text and returns
the value, or raises a one-line ValidationError naming the flag; the value is then checked by
its :data:`~bacepipe_env.core.world.KNOBS` row like any other (:meth:`Knob.from_flag`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ValidationError
from .elasticity import check_elasticity
from .faults import LOSE_SINCE_CHECKPOINT
from .limits import LIMITS, Limit, check_limit
from .preemption import check_preemption
from .tariff import HOURS_PER_YEAR

__all__ = [
    "LinkChange",
    "Outage",
    "choice_flag",
    "each",
    "elasticity_flag",
    "flag_number",
    "number_flag",
    "number_text",
    "parse_link_degrade",
    "parse_outage",
    "preempt_checkpoint_flag",
    "preemption_flag",
    "start_hour_flag",
]

Outage = tuple[str, float, float]  # (region, start_h, end_h)
LinkChange = tuple[str, str, float, float, float]  # (src, dst, factor, start_h, end_h)


def number_text(limit: Limit) -> str:
    """``must be a number in [a, b] unit``: what a flag of ``limit``'s range must be."""
    unit = f" {limit.unit}" if limit.unit else ""
    kind = "a whole number" if limit.integer else "a number"
    return f"must be {kind} in {limit.text()}{unit}"


def flag_number(flag: str, text: Any, key: str | Limit) -> Any:
    """A flag's text as a number inside ``LIMITS[key]`` (or the Limit ``key``), the one range
    the scenario file's field of that meaning has; else a one-line ValidationError naming the
    flag and the range."""
    limit = LIMITS[key] if isinstance(key, str) else key
    try:
        number: float = int(text) if limit.integer else float(text)
    except (TypeError, ValueError, OverflowError):
        try:  # "1e3" for a count
            number = float(text)
        except (TypeError, ValueError):
            raise ValidationError(flag, text, number_text(limit)) from None
    try:
        return check_limit(flag, number, limit=limit, exc=ValidationError)
    except ValidationError:
        raise ValidationError(flag, text, number_text(limit)) from None


def number_flag(key: str | Limit) -> Callable[[str, Any], Any]:
    """The parser of a number flag whose range is ``LIMITS[key]`` (:func:`flag_number`)."""
    return lambda flag, text: flag_number(flag, text, key)


def choice_flag(names: Sequence[str]) -> Callable[[str, Any], Any]:
    """The parser of a flag that names one of ``names``."""

    def parse(flag: str, text: Any) -> Any:
        if text not in names:
            raise ValidationError(flag, text, f"choose from: {', '.join(names)}")
        return text

    return parse


def start_hour_flag(flag: str, text: Any) -> float | str:
    """``--start-hour``: an hour of 2023 or ``random``."""
    if str(text).strip() == "random":
        return "random"
    reason = f"must be an hour of 2023, 0 <= H < {HOURS_PER_YEAR}, or 'random'"
    try:
        hour = float(text)
    except ValueError:
        raise ValidationError(flag, text, reason) from None
    if not 0 <= hour < HOURS_PER_YEAR:  # also NaN
        raise ValidationError(flag, text, reason)
    return hour


def preemption_flag(flag: str, text: Any) -> str:
    """``--preemption``: a rule with its settings, in canonical form."""
    try:
        return check_preemption(text, field=flag)
    except ValidationError as err:
        raise ValidationError(flag, text, err.reason) from None


def elasticity_flag(flag: str, text: Any) -> str:
    """``--elasticity``: a rule with its settings, in canonical form."""
    try:
        return check_elasticity(text, field=flag)
    except ValidationError as err:
        raise ValidationError(flag, text, err.reason) from None


def preempt_checkpoint_flag(flag: str, text: Any) -> float | str:
    """``--preempt-checkpoint``: seconds, or the lose-since-checkpoint rule's name."""
    if text == LOSE_SINCE_CHECKPOINT:
        return LOSE_SINCE_CHECKPOINT
    try:
        return flag_number(flag, text, "preempt_checkpoint_s")  # type: ignore[no-any-return]
    except ValidationError:
        raise ValidationError(
            flag, text, f"must be seconds in [0, 10,000,000] or {LOSE_SINCE_CHECKPOINT}"
        ) from None


def _windowed(flag: str, spec: str, start: str, end: str) -> tuple[float, float]:
    t0 = flag_number(f"{flag} START_H", start, "events.start_h")
    t1 = flag_number(f"{flag} END_H", end, "events.end_h")
    if t1 <= t0:
        raise ValidationError(flag, spec, "END_H must be after START_H")
    return t0, t1


def parse_outage(spec: str, flag: str = "--outage") -> Outage:
    """``--outage EU-West:5:8`` -> ``("EU-West", 5.0, 8.0)``; the region is checked when the
    scenario loads."""
    fields = spec.split(":")
    if len(fields) != 3 or not fields[0].strip():
        raise ValidationError(flag, spec, "expected REGION:START_H:END_H, e.g. EU-West:5:8")
    region, start, end = (f.strip() for f in fields)
    return (region, *_windowed(flag, spec, start, end))


def parse_link_degrade(spec: str, flag: str = "--link-degrade") -> LinkChange:
    """``--link-degrade EU-West:US-East-2:0.5:2:6`` -> ``("EU-West", "US-East-2", 0.5, 2.0,
    6.0)``; the regions are checked when the scenario loads."""
    fields = spec.split(":")
    if len(fields) != 5 or not fields[0].strip() or not fields[1].strip():
        raise ValidationError(
            flag, spec, "expected SRC:DST:FACTOR:START_H:END_H, e.g. EU-West:US-East-2:0.5:2:6"
        )
    src, dst, factor, start, end = (f.strip() for f in fields)
    if src == dst:
        raise ValidationError(flag, spec, "a link joins two different regions")
    f = flag_number(f"{flag} FACTOR", factor, "events.factor (link)")
    return (src, dst, f, *_windowed(flag, spec, start, end))


def each(parse: Callable[[str, str], Any]) -> Callable[[str, Any], Any]:
    """The parser of a repeatable flag: ``parse(text, flag)`` for each of its texts."""
    return lambda flag, texts: tuple(parse(text, flag) for text in texts)
