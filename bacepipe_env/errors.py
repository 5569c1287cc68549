"""Exceptions raised by bacepipe_env.

Every error a user can cause by bad input derives from :class:`BacepipeError`, so a
command-line front end can catch one type and print one line.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BacepipeError",
    "PlacementError",
    "ScenarioError",
    "SimulationError",
    "ValidationError",
]


class BacepipeError(Exception):
    """Base class of every error this package raises on purpose."""


class ValidationError(BacepipeError, ValueError):
    """An argument or a value inside one is invalid.

    ``field`` is a dotted path to the offending entry (``regions[2].gpus``, ``free[3]``) and
    ``value`` the value found there, so the message can say exactly what to fix.
    """

    def __init__(self, field: str, value: Any, reason: str) -> None:
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(f"{field}: {reason} (got {value!r})")


class ScenarioError(ValidationError):
    """A scenario, or a value inside one (a region, a model, a job), is invalid."""


class PlacementError(BacepipeError, ValueError):
    """A placement policy returned a placement that breaks constraint (5) or (6) or the K* cap."""


class SimulationError(BacepipeError, RuntimeError):
    """The simulation cannot go on (for example a job no policy will ever place)."""
