"""The documented range of every number a scenario holds: one table, in the units of a
scenario file (hours, Gbit/s, TFLOP/s, GB), read by the scenario loader and, scaled to SI
units, by the core dataclasses; the simulation horizon; and the memory estimate that refuses a
workload the machine cannot hold before it is built.

The ranges are wide enough for any physical cloud and tight enough that no computation
overflows, no loop runs per unit of an unbounded count, and no simulated time grows past
where a second still has meaning in float64. ``docs/scenarios.md`` lists them; a test keeps
that table and this one equal.

Why the upper bounds are where they are:

- ``models.layers`` <= 10,000: Eq. (13)'s K* scans every layer count once (the largest
  published models have about 130 layers);
- ``workload.n_jobs`` <= 10,000,000 (:data:`MAX_JOBS`): the simulator's own limit, for scenario
  files' job lists, workload rules, the ``n_jobs`` knob and the random generator alike. One
  million jobs on 256 regions under heavy load take 13 minutes of CPU and 3.4 GB (``make
  bench-large``), so ten million are hours and about 35 GB: the most one machine is asked to
  hold. The environments' window (``max_queue``, at most 100,000) is a separate, smaller
  limit of ``bacepipe_env.envs``. Within the range, :func:`check_memory` refuses a count the
  machine's free memory cannot hold;
- ``regions.gpus`` <= 1,000,000 after ``gpu_scale``;
- times <= :data:`HORIZON_H` = 1,000,000 h (114 years), the simulation horizon: a float64 clock
  in seconds still resolves a microsecond there (its spacing at 3.6e9 s is 4.8e-7 s), so a
  job's JCT is its finish minus its submit time to within that. No submit, event or finish
  time may pass it: an arrival rule whose arrivals would is refused when the scenario is
  built, naming its rate or load, and a run in which a job would finish later stops with a
  :class:`~bacepipe_env.errors.SimulationError` naming the job;
- the quantities that divide (FLOP rates, MFU, bandwidths, memory) need only be > 0, so
  that hand-worked examples in toy units (1 FLOP/s, 1 byte/s) still build; a combination
  whose run time overflows float64 is rejected where it is computed, naming the job
  (:func:`~bacepipe_env.core.perf.profile_job`).

Why the lower bounds of the arrival rules are where they are:

- ``workload.arrival_rate_per_h`` >= 1e-6 jobs/h, one job per :data:`HORIZON_H`: a slower
  stream expects less than one arrival before the horizon, so it describes no workload at
  all. Physical rates go far below the paper's 0.5-4 jobs/h: the Philly trace's is 31 jobs/h,
  but a single 16-GPU region training the paper's 100-billion-parameter models is fully
  loaded by about one job a month (1e-3 jobs/h), and a lightly loaded one by less, so the
  bound sits at the horizon, not at a typical rate;
- ``workload.load`` >= 0.001 (0.1% of the cluster's GPU-hours): queueing studies sweep
  offered loads of about 0.1 to 1.5, and at a thousandth of the capacity jobs almost never
  meet, so a smaller load changes no decision, only stretches the clock (by 1/load) towards
  the horizon. The 1e-9 it replaces stretched the built-in ``online`` workload to 3e12 h.

Either way the count matters too: ``n_jobs`` arrivals at ``rate`` per hour span about
``(n_jobs - 1) / rate`` hours, so a rate or load inside its range is still refused, by name,
when its arrivals would pass the horizon
(:func:`~bacepipe_env.scenarios.arrivals.check_arrival_span`).

Where the memory check reads the machine (:func:`available_memory`): ``/proc/meminfo`` and
``/proc/self/status`` on Linux; ``os.sysconf``'s free pages, or on macOS (which counts none)
its physical memory; the address-space limit (``ulimit -v``) through the Unix-only
``resource`` module, where the kernel enforces it (not macOS). Each source that is missing is
skipped, so the module imports and runs anywhere; where none is left (Windows) the memory
check is off.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..errors import ScenarioError, ValidationError
from .validate import require_float, require_int

__all__ = [
    "BYTES_PER_JOB",
    "BYTES_PER_MEMO_CELL",
    "BYTES_PER_REGION_PAIR",
    "HORIZON_H",
    "HORIZON_S",
    "LIMITS",
    "MAX_JOBS",
    "MEMORY_MARGIN",
    "MEMO_CELLS",
    "Limit",
    "available_memory",
    "check_limit",
    "check_matrix",
    "check_memory",
    "limit_text",
    "memory_estimate",
]

#: The simulation horizon in hours (114 years): the latest submit, event or finish time of a
#: simulation, and the top of every range of hours in :data:`LIMITS`.
HORIZON_H = 1_000_000.0
#: :data:`HORIZON_H` in seconds, the simulator's unit.
HORIZON_S = HORIZON_H * 3600.0
#: The most jobs one scenario, and so one simulation, holds (``LIMITS["workload.n_jobs"]``).
MAX_JOBS = 10_000_000

#: Where Linux shows the kernel's memory figures; macOS and Windows have no such folder, and a
#: test points this at a missing one.
_PROC = "/proc"


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
        if abs(n) <= 10_000_000:
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


_HOURS = Limit(0.0, HORIZON_H, "h")
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
    "constants.bytes_per_grad": Limit(1, 16, "bytes", integer=True),
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
    "jobs.replicas": Limit(1, 1024, "copies", integer=True),
    "jobs.deadline_h": Limit(0.0, HORIZON_H, "h", open_low=True),
    "jobs.slack": Limit(0.0, 1e6, "x the isolated run time", open_low=True),
    "workload.n_jobs": Limit(1, MAX_JOBS, "jobs", integer=True),
    "workload.submit_h": _HOURS,
    "workload.arrival_rate_per_h": Limit(1.0 / HORIZON_H, 1e6, "jobs/h"),
    "workload.load": Limit(0.001, 1000.0),
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
    "gpu_reserve_gb": Limit(0.0, 1e4, "GB"),
    "max_preemptions": Limit(0, 1000, "per job", integer=True),
    "egress_usd_per_gb": Limit(0.0, 1000.0, "$/GB"),
    "bandwidth_scale": Limit(0.0, 1000.0, open_low=True),
    "gpu_scale": Limit(0.0, 1000.0, open_low=True),
    "seed": Limit(0, 2**63 - 1, integer=True),
}

assert all(math.isfinite(v.high) for v in LIMITS.values())


# ------------------------------------------------------------------------------ memory

#: Peak memory one job adds to building and simulating a scenario, in bytes: the growth of the
#: process's peak RSS (``ru_maxrss``) per job, measured with ``benchmarks/bench_large.py`` on
#: 256 regions, Philly arrivals at load 0.8, BACE-Pipe: 3,350 bytes a job from 100,000 to
#: 300,000 jobs and 2,700 from 300,000 to 1,000,000 (its 1,000,000-job run peaks at 3.4 GB);
#: a file's compact list of 1,000,000 jobs on the paper's 6 regions, parsed JSON included,
#: about 1,700. The job, its profile, record, placement and attempts, the simulator's queues,
#: heaps and events, and the memo of iteration times.
BYTES_PER_JOB = 3_400
#: Peak memory per ordered pair of regions, in bytes: the link matrices (capacity, residual,
#: reserved, latency, their numpy mirrors). Measured: 2,000 jobs on 1,024 regions peak 95 MB
#: above the same on 256, 97 bytes for each of the 983,040 pairs more.
BYTES_PER_REGION_PAIR = 128
#: The most values (free GPUs and residual rows, one per region) the simulator's memo of
#: placements holds in its keys: 65,536 states up to 64 regions, fewer on a larger cluster.
MEMO_CELLS = 4_194_304
#: Bytes per memo value (its share of the key's free-GPU tuple, residual view and changed rows,
#: 40 measured at 256 regions): the memo adds at most ``MEMO_CELLS`` x 48 = 201 MB.
BYTES_PER_MEMO_CELL = 48
#: How much more than :func:`memory_estimate` must be free: the measured peaks lie 20% below to
#: 12% above the estimate, and the process needs room besides the jobs.
MEMORY_MARGIN = 1.5


def memory_estimate(n_jobs: int, n_regions: int) -> int:
    """Bytes a scenario of ``n_jobs`` jobs on ``n_regions`` regions takes to build and simulate,
    at its peak: ``n_jobs * BYTES_PER_JOB + n_regions**2 * BYTES_PER_REGION_PAIR`` plus the
    placement memo, ``min(n_jobs * n_regions, MEMO_CELLS) * BYTES_PER_MEMO_CELL`` (one state
    per decision, at most ``MEMO_CELLS`` values). Measured constants; the interpreter and the
    libraries already loaded are not counted."""
    n, k = int(n_jobs), int(n_regions)
    memo = min(n * k, MEMO_CELLS) * BYTES_PER_MEMO_CELL
    return n * BYTES_PER_JOB + k * k * BYTES_PER_REGION_PAIR + memo


def _meminfo_available() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes, or None where there is none."""
    try:
        with open(f"{_PROC}/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # the kernel writes kB (KiB)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _sysconf_available() -> int | None:
    """Free physical memory from ``os.sysconf`` (free pages times the page size); where the
    system counts no free pages (macOS), all its physical pages, a ceiling that still refuses
    what no amount of freeing could hold; None without ``os.sysconf`` (Windows)."""
    for pages_name in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES"):
        try:
            pages, size = os.sysconf(pages_name), os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            continue
        return pages * size if pages > 0 and size > 0 else None
    return None


def _address_space_left() -> int | None:
    """Bytes the process may still map under its address-space limit (``ulimit -v``, where a
    large allocation fails with MemoryError), or None when it has no limit, the system has no
    ``resource`` module (Windows) or does not enforce the limit (macOS). Without
    ``/proc/self/status`` what is mapped already is not subtracted."""
    if sys.platform == "darwin":  # RLIMIT_AS is accepted there but never enforced
        return None
    try:
        import resource  # Unix only
    except ImportError:
        return None
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (AttributeError, ValueError, OSError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    mapped = 0
    try:
        with open(f"{_PROC}/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    mapped = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return max(0, soft - mapped)


def available_memory() -> int | None:
    """Bytes of memory the process can still use: ``MemAvailable`` from ``/proc/meminfo``
    (falling back to ``os.sysconf``'s free pages, or physical memory on macOS), capped by what
    an address-space limit (``ulimit -v``) leaves; None when no source exists (Windows: the
    memory check is then skipped)."""
    found = [_meminfo_available(), _address_space_left()]
    if found[0] is None:
        found[0] = _sysconf_available()
    known = [x for x in found if x is not None]
    return min(known) if known else None


def _gb(n: float) -> str:
    """Bytes as an error line shows them: ``2.6 GB``, or ``100 MB`` below a gigabyte."""
    return f"{n / 1e9:,.1f} GB" if n >= 1e9 else f"{n / 1e6:,.0f} MB"


def check_memory(
    n_jobs: int,
    n_regions: int,
    *,
    field: str = "n_jobs",
    value: Any = None,
    exc: type[ValidationError] = ScenarioError,
) -> None:
    """Refuse, before anything is built, a scenario of ``n_jobs`` jobs on ``n_regions``
    regions whose :func:`memory_estimate` times :data:`MEMORY_MARGIN` exceeds
    :func:`available_memory`: a one-line error naming ``field`` (and ``value``, default
    ``n_jobs``) with both figures. Nothing is checked when the available memory is unknown."""
    need = memory_estimate(n_jobs, n_regions)
    free = available_memory()
    if free is None or need * MEMORY_MARGIN <= free:
        return
    raise exc(
        field,
        n_jobs if value is None else value,
        f"{n_jobs:,} jobs on {n_regions:,} regions need about {_gb(need)} of memory "
        f"(core.limits.memory_estimate), {_gb(free)} available; simulate fewer jobs",
    )
