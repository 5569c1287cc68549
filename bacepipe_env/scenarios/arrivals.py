"""Job arrival streams for online workloads: all at once, Poisson, or a replayed real trace.

:func:`arrival_times` draws the submission times, in hours, of up to ``n`` jobs from one of
:data:`ARRIVAL_PROCESSES`:

``batch``
    every job at ``start_h`` (the paper's offline setting); the rate is ignored and the
    generator is not used.
``poisson``
    independent exponential gaps with mean ``1 / rate_per_h`` hours, the first gap 0. It
    consumes the generator exactly as the scenario loader's ``arrival_rate_per_h`` workloads do
    (``ScenarioTemplate._draw``), so the same seed gives bit-identical times.
``philly``
    the job inter-arrival gaps of Microsoft's Philly GPU cluster trace (Jeon et al., "Analysis
    of Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads", USENIX ATC 2019;
    82,247 jobs, September to December 2017), replayed in order and cyclically from an offset
    drawn with the generator, and the window of ``n - 1`` gaps stretched (or squeezed) by one
    factor so that its ``n`` arrivals span exactly ``(n - 1) / rate_per_h`` hours: every
    stream has the target mean rate. The shape of the stream is the trace's: its same-second
    bursts (8% of the gaps are 0 and stay 0), its quiet nights and weekends and its drift
    over weeks; the inter-arrival coefficient of variation of the whole trace is about 15,
    against 1 for Poisson arrivals, and that of a 500-job window typically 2 to 5. Without
    the per-window factor a 5,000-job window's rate would range over 0.2x to 5x the target,
    because the trace's own rate drifts; normalising each window makes ``rate_per_h`` (and
    an offered load) mean what it says for every episode. A window of only zero gaps (possible
    for tiny ``n``) is scaled by the trace's mean rate instead.

No arrival may come after the simulation horizon
(:data:`~bacepipe_env.core.limits.HORIZON_H`, 1,000,000 h): :func:`check_arrival_span` refuses a
count and rate whose stream would span past it, before anything is drawn, and
:func:`arrival_times` refuses a drawn stream that does (a Poisson draw can run longer than its
mean), naming the input the rate came from.

The gaps ship with the package as ``bacepipe_env/data/philly-interarrivals.csv``, a table
derived from petuum/adaptdl's ``simulator/traces/philly.csv`` (itself derived from
msr-fiddle/philly-traces; CC-BY-4.0) by sorting all submission timestamps and differencing
them in whole seconds; ``benchmarks/derive_philly_interarrivals.py`` regenerates it.
"""

from __future__ import annotations

import functools
import math
from importlib import resources
from typing import Any

import numpy as np

from ..core.limits import HORIZON_H
from ..core.validate import require_float, require_int
from ..errors import ScenarioError

__all__ = [
    "ARRIVAL_PROCESSES",
    "arrival_times",
    "check_arrival_span",
    "interarrival_cv",
    "philly_gaps",
    "philly_rate_per_h",
]

ARRIVAL_PROCESSES = ("batch", "poisson", "philly")

_SECONDS_PER_HOUR = 3600.0
_PHILLY_TABLE = "data/philly-interarrivals.csv"
_PHILLY_COLUMN = "gap_s"


@functools.lru_cache(maxsize=1)
def philly_gaps() -> np.ndarray:
    """Return the Philly trace's job inter-arrival gaps in seconds (float64, read-only).

    Read once from the table shipped in the package (``bacepipe_env/data``) and cached; the
    same array object is returned on every call.
    """
    text = resources.files("bacepipe_env").joinpath(_PHILLY_TABLE).read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines()]
    rows = [line for line in lines if line and not line.startswith("#")]
    if not rows or rows[0] != _PHILLY_COLUMN:
        raise RuntimeError(f"{_PHILLY_TABLE}: expected a {_PHILLY_COLUMN!r} column header")
    gaps = np.array([int(row) for row in rows[1:]], dtype=np.float64)
    if gaps.size < 2 or not (gaps >= 0).all() or gaps.sum() <= 0:
        raise RuntimeError(f"{_PHILLY_TABLE}: gaps must be >= 0 with a positive total")
    gaps.setflags(write=False)
    return gaps


@functools.lru_cache(maxsize=1)
def philly_rate_per_h() -> float:
    """Return the Philly trace's mean job arrival rate per hour (gaps / total span * 3600)."""
    gaps = philly_gaps()
    return float(gaps.size / gaps.sum() * _SECONDS_PER_HOUR)


def _hours(h: float) -> str:
    """Hours for an error line: ``2,000,000 h``, ``1.5e+301 h``, or beyond float range."""
    if not math.isfinite(h):
        return "beyond float range"
    return f"{h:,.0f} h" if h < 1e12 else f"{h:.3g} h"


def check_arrival_span(
    n: int,
    rate_per_h: float,
    *,
    start_h: float = 0.0,
    horizon_h: float | None = None,
    source: tuple[str, Any] | None = None,
) -> None:
    """Refuse ``n`` arrivals at ``rate_per_h`` per hour from ``start_h`` whose stream would
    pass the simulation horizon (:data:`~bacepipe_env.core.limits.HORIZON_H`): they span
    ``(n - 1) / rate_per_h`` hours on average (exactly, for ``philly``), cut at
    ``start_h + horizon_h`` when a horizon is given. The one-line ScenarioError names
    ``source``, the ``(field, value)`` the rate came from (default ``("rate_per_h", rate)``),
    so that a rate set from an offered load names the load."""
    end = start_h + (n - 1) / rate_per_h if n > 1 else start_h
    if horizon_h is not None:
        end = min(end, start_h + horizon_h)
    if end > HORIZON_H:
        field, value = ("rate_per_h", rate_per_h) if source is None else source
        since = f" from {start_h:,.0f} h" if start_h else ""
        raise ScenarioError(
            field,
            value,
            f"{n:,} arrivals at {rate_per_h:.4g} jobs/h{since} would end at {_hours(end)}, "
            f"past the simulation horizon ({HORIZON_H:,.0f} h): raise the rate or load",
        )


def arrival_times(
    process: str,
    n: int,
    rate_per_h: float | None,
    rng: np.random.Generator,
    *,
    start_h: float = 0.0,
    horizon_h: float | None = None,
    source: tuple[str, Any] | None = None,
) -> np.ndarray:
    """Return up to ``n`` nondecreasing job submission times in hours, the first at ``start_h``.

    ``process`` is one of :data:`ARRIVAL_PROCESSES` (see the module docstring); ``rate_per_h``
    is the mean arrival rate per hour, required (finite, > 0) for ``poisson`` and ``philly``
    and ignored for ``batch``. With ``horizon_h`` only the times before
    ``start_h + horizon_h`` are kept, so fewer than ``n`` may come back, but never fewer than
    one: the first arrival is always at ``start_h``. ``rng`` is consumed the same way whatever
    the horizon, so cutting a stream keeps a prefix of the uncut one.

    No time passes the simulation horizon (:data:`~bacepipe_env.core.limits.HORIZON_H`):
    ``start_h`` is at most that, a count and rate whose stream would pass it on average are
    refused before drawing (:func:`check_arrival_span`), and so is a drawn stream that does;
    the one-line ScenarioError names ``source`` (``(field, value)``: where the rate came from,
    a scenario's ``workload.arrival_rate_per_h`` or ``workload.load``), else ``rate_per_h``.
    """
    if not isinstance(process, str) or process not in ARRIVAL_PROCESSES:
        raise ScenarioError("process", process, f"must be one of {', '.join(ARRIVAL_PROCESSES)}")
    n = require_int("n", n, minimum=1)
    start_h = require_float("start_h", start_h, minimum=0.0, maximum=HORIZON_H)
    if horizon_h is not None:
        horizon_h = require_float("horizon_h", horizon_h, positive=True)
    if not isinstance(rng, np.random.Generator):
        raise ScenarioError("rng", type(rng).__name__, "must be a numpy.random.Generator")

    if process == "batch":
        times = np.full(n, start_h, dtype=np.float64)
    else:
        if rate_per_h is None:
            raise ScenarioError("rate_per_h", None, f"is required for {process} arrivals")
        rate = require_float("rate_per_h", rate_per_h, positive=True)
        check_arrival_span(n, rate, start_h=start_h, horizon_h=horizon_h, source=source)
        if process == "poisson":
            # exactly ScenarioTemplate._draw's draw, for bit-identical streams
            gaps = rng.exponential(1.0 / rate, size=n)
            gaps[0] = 0.0
            times = start_h + np.cumsum(gaps)
        else:
            trace = philly_gaps()
            offset = int(rng.integers(len(trace)))
            idx = (offset + np.arange(n - 1)) % len(trace)
            window = trace[idx]
            span = float(window.sum())  # seconds the n - 1 trace gaps cover
            # Stretch the window to exactly (n - 1) / rate hours, so every episode has the
            # target mean rate; a window of only same-second submissions takes the trace's.
            factor = (n - 1) * _SECONDS_PER_HOUR / rate / span if span > 0 else 0.0
            scaled = window * (factor if span > 0 else philly_rate_per_h() / rate)
            seconds = np.cumsum(np.concatenate(([0.0], scaled)))
            times = start_h + seconds / _SECONDS_PER_HOUR

    if horizon_h is not None:
        keep = int(np.searchsorted(times, start_h + horizon_h, side="left"))
        times = times[: max(keep, 1)]
    if times[-1] > HORIZON_H:  # a draw longer than its mean (the mean was checked above)
        field, value = ("rate_per_h", rate_per_h) if source is None else source
        raise ScenarioError(
            field,
            value,
            f"the {len(times):,} arrivals drawn end at {_hours(float(times[-1]))}, past the "
            f"simulation horizon ({HORIZON_H:,.0f} h): raise the rate or load",
        )
    return times


def interarrival_cv(times: np.ndarray) -> float:
    """Return the coefficient of variation (population std / mean) of the gaps of ``times``.

    ``times`` is a sorted, finite 1-D array of at least 3 arrival times (so at least 2 gaps)
    whose mean gap is > 0; anything else raises :class:`~bacepipe_env.errors.ScenarioError`
    rather than returning NaN. A Poisson stream's CV is about 1; burstier streams score higher.
    """
    arr = np.asarray(times, dtype=np.float64)
    if arr.ndim != 1 or arr.size < 3:
        raise ScenarioError("times", f"shape {arr.shape}", "need at least 3 arrival times")
    if not np.isfinite(arr).all():
        raise ScenarioError("times", "non-finite entry", "must be finite")
    gaps = np.diff(arr)
    if (gaps < 0).any():
        i = int(np.argmax(gaps < 0))
        raise ScenarioError(f"times[{i + 1}]", float(arr[i + 1]), "must be sorted (nondecreasing)")
    mean = float(gaps.mean())
    if not mean > 0 or not math.isfinite(mean):
        raise ScenarioError("times", "mean gap 0", "need a positive mean inter-arrival gap")
    return float(gaps.std() / mean)
