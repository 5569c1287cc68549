"""Exceptions raised by bacepipe_env.

Every error a user can cause by bad input derives from :class:`BacepipeError`, so a
command-line front end can catch one type and print one line.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable
from typing import Any, NoReturn

__all__ = [
    "MAX_FIELD_CHARS",
    "MAX_LINE_CHARS",
    "MAX_VALUE_CHARS",
    "BacepipeError",
    "OneLineParser",
    "PlacementError",
    "ScenarioError",
    "SimulationError",
    "ValidationError",
    "choices",
    "shorten",
]


class BacepipeError(Exception):
    """Base class of every error this package raises on purpose."""


#: How much of an error line each part may take: the field and the value found, and the whole
#: message, which the reason fills; with the command line's ``bacepipe: error: `` in front
#: the line stays under 200 characters.
MAX_FIELD_CHARS, MAX_VALUE_CHARS, MAX_LINE_CHARS = 40, 30, 180


def choices(names: Iterable[str], limit: int = 70) -> str:
    """``a, b, c`` if that fits in ``limit`` characters, else as many names as fit and how
    many more: ``a, b, ... (21 more)``."""
    names = list(names)
    shown: list[str] = []
    for i, name in enumerate(names):
        rest = len(names) - i
        tail = f", ... ({rest - 1:,} more)" if rest > 1 else ""
        if shown and len(", ".join([*shown, name])) + len(tail) > limit:
            return ", ".join(shown) + f", ... ({rest:,} more)"
        shown.append(name)
    return ", ".join(shown)


def shorten(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its start and how many more."""
    n = len(text)
    if n <= limit:
        return text
    keep = max(1, limit - len(f"... ({n:,} more chars)"))
    return f"{text[:keep]}... ({n - keep:,} more chars)"


class ValidationError(BacepipeError, ValueError):
    """An argument or a value inside one is invalid.

    ``field`` is a dotted path to the offending entry (``regions[2].gpus``, ``free[3]``) and
    ``value`` the value found there, so the message can say exactly what to fix.
    """

    def __init__(self, field: str, value: Any, reason: str) -> None:
        self.field = field
        self.value = value
        self.reason = reason
        # one short line whatever the input: a huge value (a 95 MB file's worth of names, a
        # 10,000-element list) or a long list of valid choices is cut, with how much was left
        where = shorten(field, MAX_FIELD_CHARS)
        got = f" (got {shorten(repr(value), MAX_VALUE_CHARS)})"
        room = max(40, MAX_LINE_CHARS - len(where) - 2 - len(got))
        super().__init__(f"{where}: {shorten(reason, room)}{got}")


class ScenarioError(ValidationError):
    """A scenario, or a value inside one (a region, a model, a job), is invalid."""


class PlacementError(BacepipeError, ValueError):
    """A placement policy returned a placement that breaks constraint (5) or (6) or the K* cap."""


class SimulationError(BacepipeError, RuntimeError):
    """The simulation cannot go on (for example a job no policy will ever place)."""


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line, ``PROG: error: ... (see PROG
    --help)``, with exit status 2, like every other error of the commands (argparse prints
    the whole usage first, twenty lines for ``bacepipe train learn``)."""

    def error(self, message: str) -> NoReturn:
        """Print the one line and exit with status 2 (a list of choices is cut to what fits:
        ``unknown command 'bogus'; choose from simulate, scenarios, ... (8 more)``)."""
        found = re.fullmatch(r"argument (\S+): invalid choice: (.*) \(choose from (.*)\)", message)
        if found:
            what, got, options = found.groups()
            names = [o.strip().strip("'") for o in options.split(",")]
            noun = "command" if what == "COMMAND" else f"{what} value"
            message = f"unknown {noun} {got}; choose from {choices(names, 60)}"
        self.exit(2, f"{self.prog}: error: {shorten(message, 150)} (see {self.prog} --help)\n")
