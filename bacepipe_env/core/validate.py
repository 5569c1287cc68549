"""Small validators shared by the core dataclasses and the scenario loader.

Each raises :class:`~bacepipe_env.errors.ScenarioError` naming the field and the value, so
bad input never surfaces as a traceback from deep inside numpy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ScenarioError, ValidationError


def require_int(
    field: str,
    value: Any,
    *,
    minimum: int | None = None,
    exc: type[ValidationError] = ScenarioError,
    maximum: int | None = None,
) -> int:
    """Return ``value`` as an int, or raise if it is not a whole number in [``minimum``,
    ``maximum``]."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and math.isfinite(value) and value == int(value):
            value = int(value)
        else:
            raise exc(field, value, "must be a whole number")
    number = int(value)
    if minimum is not None and number < minimum:
        raise exc(field, number, f"must be >= {minimum}")
    if maximum is not None and number > maximum:
        raise exc(field, number, f"must be <= {maximum:,}")
    return number


def require_float(
    field: str,
    value: Any,
    *,
    minimum: float | None = None,
    positive: bool = False,
    maximum: float | None = None,
    exc: type[ValidationError] = ScenarioError,
) -> float:
    """Return ``value`` as a finite float within bounds, or raise naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise exc(field, value, "must be a number")
    try:
        number = float(value)
    except OverflowError:  # an int of hundreds of digits
        raise exc(field, value, "must be finite (it is beyond float range)") from None
    if not math.isfinite(number):
        raise exc(field, number, "must be finite")
    if positive and number <= 0:
        raise exc(field, number, "must be > 0")
    if minimum is not None and number < minimum:
        raise exc(field, number, f"must be >= {minimum}")
    if maximum is not None and number > maximum:
        raise exc(field, number, f"must be <= {maximum}")
    return number


def require_str(field: str, value: Any, *, exc: type[ValidationError] = ScenarioError) -> str:
    """Return ``value`` if it is a non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise exc(field, value, "must be a non-empty string")
    return value


def require_square_matrix(
    field: str, value: Any, size: int | None = None, *, exc: type[ValidationError] = ScenarioError
) -> np.ndarray:
    """Return a read-only float (size, size) copy of ``value``; off-diagonal entries finite >= 0.

    With ``size=None`` any square shape is accepted.

    The diagonal is ignored (set to 0): inter-region matrices have no meaning there.
    """
    _numbers_only(field, value, exc)
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise exc(field, _short(value), "must be a numeric matrix") from None
    if size is None:
        size = arr.shape[0] if arr.ndim == 2 else -1
    if arr.shape != (size, size) or size < 1:
        want = f"a {size}x{size}" if size >= 1 else "a square, non-empty"
        raise exc(field, f"shape {arr.shape}", f"must be {want} matrix")
    off = ~np.eye(size, dtype=bool)
    bad = off & ~(np.isfinite(arr) & (arr >= 0))
    if bad.any():
        i, j = (int(x) for x in np.argwhere(bad)[0])
        raise exc(f"{field}[{i}][{j}]", float(arr[i, j]), "must be finite and >= 0")
    arr[~off] = 0.0
    arr.setflags(write=False)
    return arr


def _numbers_only(field: str, value: Any, exc: type[ValidationError], depth: int = 0) -> None:
    """Raise naming the first entry of a nested list that is a bool or a string: numpy would
    read ``true`` as 1 and ``"12"`` as 12, and neither is a number here."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "iuf":
            return
        if value.dtype.kind != "O":
            raise exc(field, f"dtype {value.dtype}", "must hold numbers")
        value = value.tolist()
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise exc(field, value, "must be a number, not a bool or a string")
    if isinstance(value, (list, tuple)) and depth < 3:
        for i, item in enumerate(value):
            _numbers_only(f"{field}[{i}]", item, exc, depth + 1)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def require_vector(
    field: str,
    value: Any,
    *,
    length: int | None = None,
    integer: bool = False,
    exc: type[ValidationError] = ScenarioError,
) -> np.ndarray:
    """Return ``value`` as a 1-D float (or int) array of finite entries >= 0."""
    _numbers_only(field, value, exc)
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise exc(field, _short(value), "must be a sequence of numbers") from None
    if arr.ndim != 1:
        raise exc(field, f"shape {arr.shape}", "must be one-dimensional")
    if length is not None and arr.shape[0] != length:
        raise exc(field, f"length {arr.shape[0]}", f"must have length {length}")
    bad = ~(np.isfinite(arr) & (arr >= 0))
    if integer:
        bad |= np.isfinite(arr) & (arr != np.round(arr))
    if bad.any():
        i = int(np.argmax(bad))
        kind = "a whole number >= 0" if integer else "finite and >= 0"
        raise exc(f"{field}[{i}]", arr[i].item(), f"must be {kind}")
    return arr.astype(int) if integer else arr
