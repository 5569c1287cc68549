"""The documented range of every number a scenario holds: one table, in the units of a
scenario file (hours, Gbit/s, TFLOP/s, GB), read by the scenario loader and, scaled to SI
units, by the core dataclasses.

The ranges are wide enough for any physical cloud and tight enough that no computation
overflows, no loop runs per unit of an unbounded count, and no simulated time grows past
where a second still has meaning in float64. ``docs/scenarios.md`` lists them; a test keeps
that table and this one equal.

Why the upper bounds are where they are:

- ``models.layers`` <= 10,000: Eq. (13)'s K* scans every layer count once (the largest
  published models have about 130 layers);
- ``workload.n_jobs`` <= 100,000: the environments' widest window (``max_queue``);
- ``regions.gpus`` <= 1,000,000 after ``gpu_scale``;
- times <= 1,000,000 h (114 years): a simulated clock still resolves a millisecond there;
- the quantities that divide (FLOP rates, MFU, bandwidths, memory) need only be > 0, so
  that hand-worked examples in toy units (1 FLOP/s, 1 byte/s) still build; a combination
  whose run time overflows float64 is rejected where it is computed, naming the job
  (:func:`~bacepipe_env.core.perf.profile_job`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..errors import ScenarioError, ValidationError
from .validate import require_float, require_int

__all__ = ["LIMITS", "Limit", "check_limit", "check_matrix", "limit_text"]


@dataclass(frozen=True)
class Limit:
    """A closed range ``[low, high]`` of one quantity (``low`` excluded when ``open_low``), in
    ``unit``; ``integer`` ranges take whole numbers only."""

    low: float
    high: float
    unit: str = ""
    integer: bool = False
    open_low: bool = False

    def scaled(self, factor: float, unit: str) -> Limit:
        """The same range in another unit: ``factor`` of the new unit per old unit."""
        return replace(self, low=self.low * factor, high=self.high * factor, unit=unit)

    def text(self) -> str:
        """The range as docs and errors write it: ``[1, 10,000]`` or ``(0, 1]``."""
        return f"{'(' if self.open_low else '['}{_num(self.low)}, {_num(self.high)}]"


def _num(x: float) -> str:
    """``10,000``, ``1e9``, ``2**63 - 1``, ``0.001``: how a range's end reads best."""
    if x == int(x):
        n = int(x)
        if n >= 2**31 and (n + 1) & n == 0:  # one below a power of two: a seed's range
            return f"2**{(n + 1).bit_length() - 1} - 1"
        if abs(n) < 10_000_000:
            return f"{n:,}"
    return f"{x:g}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def check_limit(
    key: str,
    value: Any,
    *,
    field: str | None = None,
    limit: Limit | None = None,
    exc: type[ValidationError] = ScenarioError,
) -> Any:
    """``value`` as an int or a finite float inside ``LIMITS[key]`` (or ``limit``), else a
    one-line error naming ``field`` (default ``key``) and the range."""
    lim = LIMITS[key] if limit is None else limit
    where = key if field is None else field
    number: float
    if lim.integer:
        number = require_int(where, value, exc=exc)
    else:
        number = require_float(where, value, exc=exc)
    below = number <= lim.low if lim.open_low else number < lim.low
    if below or number > lim.high:
        unit = f" {lim.unit}" if lim.unit else ""
        raise exc(where, value, f"must be in {lim.text()}{unit}")
    return number


def check_matrix(
    field: str, matrix: np.ndarray, limit: Limit, *, exc: type[ValidationError] = ScenarioError
) -> np.ndarray:
    """``matrix`` (finite, >= 0, its diagonal unused) if every off-diagonal entry is inside
    ``limit``, else a one-line error naming the first entry outside it."""
    off = ~np.eye(matrix.shape[0], dtype=bool)
    low = matrix <= limit.low if limit.open_low else matrix < limit.low
    bad = off & (low | (matrix > limit.high))
    if bad.any():
        i, j = (int(x) for x in np.argwhere(bad)[0])
        unit = f" {limit.unit}" if limit.unit else ""
        raise exc(f"{field}[{i}][{j}]", float(matrix[i, j]), f"must be in {limit.text()}{unit}")
    return matrix


def limit_text(key: str) -> str:
    """``LIMITS[key]``'s range with its unit, as the docs' table shows it."""
    lim = LIMITS[key]
    return f"{lim.text()} {lim.unit}".strip()


_HOURS = Limit(0.0, 1e6, "h")
_GBPS = Limit(0.0, 1e6, "Gbit/s", open_low=True)
_MEMORY = Limit(0.0, 1e4, "GB", open_low=True)
_BATCH = Limit(1, 100_000_000, integer=True)
_EPOCHS = Limit(1, 10_000, integer=True)

#: The range of every number in a scenario file, keyed by its field with list indices left
#: out (``regions[2].gpus`` is ``regions.gpus``); ``bandwidth_scale`` and ``gpu_scale`` are
#: the sweep knobs, ``seed`` a scenario's draw. (``start_hour`` is an hour of 2023, in
#: [0, 8760), or ``"random"``.)
LIMITS: Mapping[str, Limit] = {
    "constants.seq_len": Limit(1, 1_048_576, "tokens", integer=True),
    "constants.micro_batch": Limit(1, 65_536, "samples", integer=True),
    "constants.peak_tflops": Limit(0.0, 1e5, "TFLOP/s", open_low=True),
    "constants.mfu": Limit(0.0, 1.0, open_low=True),
    "constants.stage_overhead_s": Limit(0.0, 3600.0, "s"),
    "constants.power_kw": Limit(0.0, 100.0, "kW", open_low=True),
    "constants.bytes_per_value": Limit(1, 16, "bytes", integer=True),
    "constants.bytes_per_param": Limit(0.0, 64.0, "bytes", open_low=True),
    "constants.layer_activation_factor": Limit(0.0, 10_000.0, "bytes"),
    "constants.epochs": _EPOCHS,
    "constants.gpu_memory_gb": _MEMORY,
    "regions.gpus": Limit(1, 1_000_000, integer=True),
    "regions.price_usd_per_kwh": Limit(0.0, 1000.0, "$/kWh"),
    "regions.bandwidth_gbps": _GBPS,
    "regions.intra_gbps": _GBPS,
    "regions.gpu_memory_gb": _MEMORY,
    "regions.carbon_g_per_kwh": Limit(0.0, 10_000.0, "gCO2e/kWh"),
    "links.gbps": Limit(0.0, 1e6, "Gbit/s"),
    "links.mbps": Limit(0.0, 1e9, "Mbit/s"),
    "links.matrix_gbps": Limit(0.0, 1e6, "Gbit/s"),
    "latency_ms": Limit(0.0, 100_000.0, "ms"),
    "models.params": Limit(0.0, 1e15, open_low=True),
    "models.layers": Limit(1, 10_000, integer=True),
    "models.hidden": Limit(1, 1_000_000_000, integer=True),
    "models.batch": _BATCH,
    "datasets.samples": Limit(1, 1e15, "samples", integer=True),
    "jobs.submit_h": _HOURS,
    "jobs.batch": _BATCH,
    "jobs.epochs": _EPOCHS,
    "workload.n_jobs": Limit(1, 100_000, "jobs", integer=True),
    "workload.submit_h": _HOURS,
    "workload.arrival_rate_per_h": Limit(0.0, 1e6, "jobs/h", open_low=True),
    "workload.load": Limit(0.0, 1000.0, open_low=True),
    "workload.weight": Limit(0.0, 1e9),
    "workload.horizon_h": replace(_HOURS, open_low=True),
    "events.start_h": _HOURS,
    "events.end_h": _HOURS,
    "events.factor (price)": Limit(0.0, 1000.0),
    "events.factor (link)": Limit(0.0, 1.0, open_low=True),
    "gpu_failure_rate": Limit(0.0, 1.0, "per GPU-hour"),
    "checkpoint_interval_s": Limit(0.0, 1e9, "s", open_low=True),
    "restart_s": Limit(0.0, 1e7, "s"),
    "preempt_checkpoint_s": Limit(0.0, 1e7, "s"),
    "max_preemptions": Limit(0, 1000, "per job", integer=True),
    "egress_usd_per_gb": Limit(0.0, 1000.0, "$/GB"),
    "bandwidth_scale": Limit(0.0, 1000.0, open_low=True),
    "gpu_scale": Limit(0.0, 1000.0, open_low=True),
    "seed": Limit(0, 2**63 - 1, integer=True),
}

assert all(math.isfinite(v.high) for v in LIMITS.values())
