"""Scenario files: parse, validate and materialise them into :class:`Scenario` objects.

A scenario file (JSON, or TOML on Python >= 3.11) describes regions, links, models, datasets
and either an explicit job list or a workload rule. The schema is documented in
``docs/scenarios.md``; every mistake raises :class:`ScenarioError` naming the field and value.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..core.cluster import DEFAULT_GPU_MEMORY_BYTES, Cluster, Region
from ..core.faults import LOSE_SINCE_CHECKPOINT, FaultModel, LinkChange, Outage, PriceChange
from ..core.job import Job, ModelSpec, TrainingConstants
from ..core.limits import LIMITS, check_limit, check_matrix, check_memory
from ..core.perf import ProfileCache, profile_job
from ..core.scenario import Scenario
from ..core.tariff import HOURS_PER_YEAR, Tariff
from ..core.units import SECONDS_PER_HOUR, gbps_to_bytes_per_s, mbps_to_bytes_per_s
from ..core.validate import require_square_matrix, require_str
from ..core.world import KNOBS, World, check_knob_names
from ..errors import ScenarioError, choices
from .arrivals import ARRIVAL_PROCESSES, arrival_times, check_arrival_span

__all__ = [
    "BUILTIN_SCENARIOS",
    "JobRow",
    "ScenarioTemplate",
    "WorkloadRule",
    "build_scenario",
    "check_knobs",
    "compile_scenario",
    "list_scenarios",
    "load_scenario",
    "load_scenario_spec",
    "scale_gpus",
]

BUILTIN_SCENARIOS = ("fig1", "paper", "paper-aws", "online")
#: The largest scenario file read: 64 MB holds an explicit list of about 1.3 million jobs
#: written compactly (``{"model":"Qwen2.5-14B","dataset":"Alpaca-52k"}``, 48 bytes a job); a
#: longer workload is a workload rule, or a job list given as a mapping from Python.
MAX_SCENARIO_BYTES = 64_000_000

_TOP_KEYS = {
    "name",
    "description",
    "source",
    "constants",
    "regions",
    "links",
    "latency_ms",
    "models",
    "datasets",
    "jobs",
    "workload",
    "events",
    # the world's settings: every KNOBS row with a top-level file key
    *(k.key for k in KNOBS.values() if k.key and "." not in k.key),
}
_EVENT_KEYS = {
    "outage": {"type", "region", "start_h", "end_h"},
    "link": {"type", "src", "dst", "factor", "start_h", "end_h", "symmetric"},
    "price": {"type", "region", "factor", "start_h", "end_h"},
}
_CONSTANT_KEYS = {
    "seq_len",
    "micro_batch",
    "peak_tflops",
    "mfu",
    "stage_overhead_s",
    "power_kw",
    "bytes_per_value",
    "epochs",
    "gpu_memory_gb",
    "bytes_per_param",
    "layer_activation_factor",
}
_REGION_KEYS = {
    "name",
    "gpus",
    "price_usd_per_kwh",
    "bandwidth_gbps",
    "intra_gbps",
    "gpu_memory_gb",
    "carbon_g_per_kwh",
    "price_zone",
}
_MODEL_KEYS = {"name", "params", "layers", "hidden", "batch"}
_DATASET_KEYS = {"name", "samples"}
_JOB_KEYS = {"name", "model", "dataset", "submit_h", "epochs", "batch"}
_WORKLOAD_KEYS = {
    "n_jobs",
    "models",
    "datasets",
    "submit_h",
    "arrivals",
    "arrival_rate_per_h",
    "load",
    "horizon_h",
}
_LINK_KEYS = {"rule", "matrix_gbps", "pairs", "symmetric"}
_PAIR_KEYS = {"a", "b", "gbps", "mbps"}


def list_scenarios() -> list[str]:
    """Names of the scenarios shipped with the package."""
    return list(BUILTIN_SCENARIOS)


def _source_text(source: Any) -> str:
    """A scenario source as text: a name or a path (a str or any ``os.PathLike``, bytes paths
    decoded as the OS does), else a one-line ScenarioError naming ``scenario``."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if isinstance(source, bytes):
        source = os.fsdecode(source)
    if not isinstance(source, str):
        raise ScenarioError(
            "scenario", source, "must be a built-in name, a file path or a parsed mapping"
        )
    return source


def _cannot_read(path: str, err: OSError | UnicodeDecodeError) -> ScenarioError:
    """The one-line error for a scenario file the OS cannot read (its name too long, a
    folder, no permission, not UTF-8), naming ``scenario`` and the path."""
    if isinstance(err, UnicodeDecodeError):
        why = f"not UTF-8 text ({err.reason} at byte {err.start:,})"
    else:
        why = err.strerror or type(err).__name__
    return ScenarioError("scenario", path, f"cannot read: {why}")


def load_scenario_spec(source: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a built-in scenario by name, or a ``.json`` / ``.toml`` file by path (a string or
    any ``os.PathLike``), unvalidated. A file the OS cannot read is a one-line ScenarioError
    naming ``scenario`` (``scenario: cannot read: File name too long (got '/aaa...')``)."""
    text: str
    origin: str
    name = _source_text(source)
    if name in BUILTIN_SCENARIOS and not isinstance(source, os.PathLike):
        origin = f"built-in scenario {name!r}"
        text = resources.files(__package__).joinpath(f"data/{name}.json").read_text("utf-8")
        suffix = ".json"
    else:
        path = Path(name)
        origin = name
        try:
            found = path.is_file()
        except OSError as err:  # a name too long, a loop of links, ...: the OS refuses it
            raise _cannot_read(origin, err) from None
        if not found:
            raise ScenarioError(
                "scenario",
                name,
                f"no built-in scenario or file by that name; built-ins: "
                f"{', '.join(BUILTIN_SCENARIOS)}",
            )
        suffix = path.suffix.lower()
        try:
            size = path.stat().st_size
            if size > MAX_SCENARIO_BYTES:
                raise ScenarioError(
                    "scenario",
                    origin,
                    f"is {size / 1e6:,.1f} MB; a scenario file is at most "
                    f"{MAX_SCENARIO_BYTES / 1e6:g} MB (give a workload rule, not a job list)",
                )
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise _cannot_read(origin, err) from None
    try:
        spec = _parse_toml(text, origin) if suffix == ".toml" else _parse_json(text, origin)
    except RecursionError:
        raise ScenarioError("scenario", origin, "is nested too deeply") from None
    if not isinstance(spec, dict):
        raise ScenarioError("scenario", origin, "the top level must be a table/object")
    return spec


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number in a scenario (JSON has no NaN or Infinity)")


def _parse_json(text: str, origin: str) -> Any:
    """Strict JSON: no ``NaN``/``Infinity`` (Python's json reads them), no integer longer than
    Python converts, no nesting deeper than the interpreter's stack."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as err:
        raise ScenarioError(
            "scenario",
            origin,
            f"invalid JSON at line {err.lineno} column {err.colno}: {err.msg}",
        ) from None
    except ValueError as err:  # NaN, Infinity, or an integer of thousands of digits
        raise ScenarioError("scenario", origin, f"invalid JSON: {err}") from None


def _parse_toml(text: str, origin: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the optional 'tomli' package
        try:
            import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
        except ModuleNotFoundError:
            raise ScenarioError(
                "scenario",
                origin,
                "TOML needs Python >= 3.11 or the 'tomli' package; or write the scenario as JSON",
            ) from None
    try:
        parsed: dict[str, Any] = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as err:
        raise ScenarioError("scenario", origin, f"invalid TOML: {err}") from None
    return parsed


def load_scenario(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    seed: int = 0,
    world: World | None = None,
    **knobs: Any,
) -> Scenario:
    """Load a scenario by built-in name, file path (a string or any ``os.PathLike``) or
    already-parsed mapping, in the file's world with ``knobs`` set.

    ``seed`` drives the random parts of a workload rule (dataset and model draws, arrivals,
    a random start hour). The world's settings are :class:`~bacepipe_env.core.world.World`'s
    fields, one row each in :data:`~bacepipe_env.core.world.KNOBS` (``docs/scenarios.md``
    shows the table): ``bandwidth_scale``, ``gpu_scale``, ``n_jobs``, ``ignore_memory``,
    ``admission``, ``prices``, ``start_hour``, ``egress_usd_per_gb``, ``load``, ``horizon_h``,
    ``outages``, ``link_changes``, ``gpu_failure_rate``, ``checkpoint_interval_s``,
    ``restart_s``, ``preemption``, ``preempt_checkpoint_s``, ``max_preemptions``,
    ``announce_h`` and ``pue``. A knob given overrides the file's field of that name (None
    leaves it); ``outages`` and ``link_changes`` add to the file's ``events``. ``world``, when
    given, replaces the file's world settings as a whole (the knobs then apply on top): a
    scenario's ``world`` loads it again in the same world."""
    spec = source if isinstance(source, Mapping) else load_scenario_spec(source)
    return build_scenario(spec, seed=seed, world=world, **knobs)


def scale_gpus(gpus: int, scale: float) -> int:
    """A region's GPU count under ``gpu_scale``: rounded half up, never below 1."""
    return max(1, math.floor(gpus * scale + 0.5))


def check_knobs(knobs: Mapping[str, Any]) -> dict[str, Any]:
    """``knobs`` if every name is a world setting (a row of
    :data:`~bacepipe_env.core.world.KNOBS`), else a one-line ValidationError naming the first
    unknown one and the known ones."""
    check_knob_names(knobs)
    return dict(knobs)


def build_scenario(
    spec: Mapping[str, Any],
    *,
    seed: int = 0,
    profile_cache: ProfileCache | None = None,
    world: World | None = None,
    **knobs: Any,
) -> Scenario:
    """Validate a parsed scenario mapping and materialise it (see :func:`load_scenario`).

    ``profile_cache`` lets a caller that builds many scenarios profile each job shape once."""
    template = compile_scenario(spec, world=world, **knobs)
    return template.materialize(seed, profile_cache=profile_cache)


@dataclass(frozen=True)
class JobRow:
    """One validated job of a scenario: names from the model and dataset tables; ``batch``
    and ``epochs`` None take the model's and the scenario's defaults."""

    model: str
    dataset: str
    submit_h: float  # hours
    batch: int | None = None
    epochs: int | None = None
    name: str = ""


#: How a workload draws its models or datasets: ``cycle``, ``random`` (uniform), one name, or
#: ``(names, probabilities)`` from a ``{name: weight}`` table.
Draw = str | tuple[tuple[str, ...], tuple[float, ...]]


@dataclass(frozen=True)
class WorkloadRule:
    """A validated ``workload`` section: how many jobs (at most), how models and datasets are
    drawn (see :data:`Draw`), and the arrivals from ``submit_h``: ``batch`` (all at once),
    ``poisson`` or ``philly`` (the trace's pattern) at ``rate`` per hour, only those before
    ``submit_h + horizon_h`` when a horizon is given (semantics §12). ``rate_source`` is
    the ``(field, value)`` the rate came from (``workload.arrival_rate_per_h``, or a load),
    what an error about the arrivals names."""

    n_jobs: int
    models: Draw
    datasets: Draw
    submit_h: float
    rate: float | None = None
    arrivals: str = "batch"
    horizon_h: float | None = None
    rate_source: tuple[str, Any] | None = None


@dataclass(frozen=True, eq=False)
class ScenarioTemplate:
    """A validated scenario file with its cluster built; :meth:`materialize` draws the jobs
    for a seed. Validating once and drawing many times is what makes resets cheap."""

    name: str
    description: str
    source: str
    cluster: Cluster
    models: Mapping[str, tuple[ModelSpec, int]]  # name -> (model, default batch)
    datasets: Mapping[str, int]  # name -> samples
    constants: TrainingConstants
    epochs: int
    world: World  # the file's world settings with the knobs set
    rows: tuple[JobRow, ...] | None = None  # an explicit job list
    workload: WorkloadRule | None = None  # a validated workload rule
    zones: tuple[str, ...] = ()  # per region, its hourly series (hourly prices)
    faults: FaultModel | None = None  # outages, link and price changes, GPU failures

    def materialize(self, seed: int = 0, *, profile_cache: ProfileCache | None = None) -> Scenario:
        """The scenario for ``seed``: the workload rule's draws come from
        ``numpy.random.default_rng(seed)`` in a fixed order (models, datasets, arrivals, then
        the start hour when it is ``random``)."""
        seed = check_limit("seed", seed)
        w = self.world
        if self.rows is not None and not w.random_start:  # nothing to draw
            jobs, world, tariff = self._listed_jobs, w, self._start_tariff
        else:
            rng = np.random.default_rng(seed)
            jobs = self._listed_jobs if self.rows is not None else self._jobs(self._draw(rng))
            if w.random_start:
                hour = float(rng.integers(HOURS_PER_YEAR))
                world, tariff = dataclasses.replace(w, start_hour=hour), self._tariff(hour)
            else:
                world, tariff = w, self._start_tariff
        params = {
            "seed": seed,
            "bandwidth_scale": w.bandwidth_scale,
            "gpu_scale": w.gpu_scale,
            "n_jobs": len(jobs),
            "ignore_memory": w.ignore_memory,
            "admission": w.admission,
            "preemption": w.preemption,
            "announce_h": w.announce_h,
            "prices": w.prices,
            "start_hour": world.start_hour,
            "egress": w.egress_usd_per_gb is not None,
            "source": self.source,
        }
        if w.pue != 1.0:  # a setting beyond the paper, recorded when used
            params["pue"] = w.pue
        if self.workload is not None and self.workload.arrivals != "batch":
            params["arrivals"] = self.workload.arrivals
            params["arrival_rate_per_h"] = self.workload.rate
        return Scenario(
            self.name,
            self.cluster,
            tuple(jobs),
            world,
            self.description,
            params,
            profile_cache,
            tariff=tariff,
            faults=self.faults,
        )

    @cached_property
    def _listed_jobs(self) -> tuple[Job, ...]:
        """The jobs of an explicit job list, built once: jobs are immutable, so every seed's
        scenario shares them (a named scenario's reset then skips rebuilding them)."""
        assert self.rows is not None
        return self._jobs(self.rows)

    @cached_property
    def _start_tariff(self) -> Tariff:
        """The tariff at the template's fixed start hour, built once (tariffs are immutable)."""
        assert not self.world.random_start
        return self._tariff(float(self.world.start_hour))

    def _tariff(self, start_hour: float) -> Tariff:
        return Tariff(
            self.cluster.prices,
            self.cluster.carbon,
            model=self.world.prices,
            start_hour=start_hour,
            zones=self.zones or None,
            egress_usd_per_gb=self.world.egress_usd_per_gb,
            price_changes=self.faults.prices if self.faults is not None else (),
        )

    def _jobs(self, rows: Sequence[JobRow]) -> tuple[Job, ...]:
        jobs = []
        for i, row in enumerate(rows):
            model, batch = self.models[row.model]
            jobs.append(
                Job.trusted(  # every value was validated by compile_scenario
                    job_id=i + 1,
                    model=model,
                    dataset=row.dataset,
                    samples=self.datasets[row.dataset],
                    batch=batch if row.batch is None else row.batch,
                    submit_time=float(row.submit_h) * SECONDS_PER_HOUR,
                    epochs=self.epochs if row.epochs is None else row.epochs,
                    constants=self.constants,
                    name=row.name,
                )
            )
        return tuple(jobs)

    def _draw(self, rng: np.random.Generator) -> list[JobRow]:
        w = self.workload
        assert w is not None
        n = w.n_jobs
        chosen_models = _pick(w.models, list(self.models), n, rng)
        chosen_data = _pick(w.datasets, list(self.datasets), n, rng)
        submits = arrival_times(
            w.arrivals,
            n,
            w.rate,
            rng,
            start_h=w.submit_h,
            horizon_h=w.horizon_h,
            source=w.rate_source,
        ).tolist()
        return [JobRow(m, d, t) for m, d, t in zip(chosen_models, chosen_data, submits)]

    def mean_gpu_hours(self) -> float:
        """The expected GPU-hours of one job of the workload on its own: K* GPUs for its ideal
        execution (Eq. 13's optimum), averaged over the workload's model and dataset draws."""
        w = self.workload
        if w is None:
            raise ScenarioError("load", None, "needs a workload rule, not a job list")
        ref = self.cluster.regions[self.cluster.largest_region].intra_bandwidth
        total = 0.0
        for m, pm in _weights(w.models, list(self.models)):
            model, batch = self.models[m]
            for d, pd in _weights(w.datasets, list(self.datasets)):
                job = Job(
                    0,
                    model,
                    d,
                    self.datasets[d],
                    batch,
                    epochs=self.epochs,
                    constants=self.constants,
                )
                prof = profile_job(job, ref)
                total += pm * pd * prof.k_star * prof.ideal_execution / SECONDS_PER_HOUR
        return total

    def offered_load(self) -> float:
        """``rate * mean_gpu_hours / total GPUs``: the fraction of the cluster the arrivals
        would keep busy if every job ran alone on K* GPUs (0 for batch arrivals)."""
        w = self.workload
        if w is None or w.rate is None or w.arrivals == "batch":
            return 0.0
        return w.rate * self.mean_gpu_hours() / self.cluster.total_gpus


def compile_scenario(
    spec: Mapping[str, Any], *, world: World | None = None, **knobs: Any
) -> ScenarioTemplate:
    """Validate a parsed scenario mapping and build everything but the seeded draws, in the
    file's world (or ``world``) with ``knobs`` set (see :func:`load_scenario`)."""
    if not isinstance(spec, Mapping):
        raise ScenarioError("scenario", type(spec).__name__, "must be a mapping")
    _no_unknown_keys("scenario", spec, _TOP_KEYS)
    w = (World.from_file(spec) if world is None else world).with_knobs(knobs)
    name = require_str("name", spec.get("name", "custom"))
    description, source = (_text(key, spec.get(key, "")) for key in ("description", "source"))
    constants, power_kw, epochs, gpu_memory = _constants(spec.get("constants", {}))
    regions, region_bw, zones = _regions(_list(spec, "regions"), w.gpu_scale, gpu_memory)
    names = [r.name for r in regions]
    bandwidth = _links(spec.get("links"), names, region_bw) * w.bandwidth_scale
    latency = _latency(spec.get("latency_ms"), len(names))
    # the facility's power per GPU: the GPU's own times the PUE (semantics §10)
    cluster = Cluster(tuple(regions), bandwidth, latency, power_kw * w.pue)
    # Validate the tariff's fields now, so that a bad zone or egress matrix fails at load.
    hourly = w.prices == "hourly"
    checked = Tariff(
        cluster.prices,
        cluster.carbon,
        model=w.prices,
        start_hour=0.0 if w.random_start else float(w.start_hour),
        zones=zones if hourly else None,
        egress_usd_per_gb=w.egress_usd_per_gb,
    )
    if w.egress_usd_per_gb is not None and not isinstance(w.egress_usd_per_gb, (int, float)):
        # the validated matrix (its unused diagonal set to 0)
        assert checked.egress is not None
        matrix = tuple(tuple(float(x) for x in row) for row in checked.egress)
        w = dataclasses.replace(w, egress_usd_per_gb=matrix)

    models = _named_table(_list(spec, "models"), "models", _MODEL_KEYS, _model)
    datasets = _named_table(_list(spec, "datasets"), "datasets", _DATASET_KEYS, _dataset)
    if "jobs" in spec and "workload" in spec:
        raise ScenarioError("jobs", "jobs and workload", "give either a job list or a workload")
    rows: tuple[JobRow, ...] | None = None
    workload: WorkloadRule | None = None
    m = constants.micro_batch
    if "jobs" in spec:
        listed = _list(spec, "jobs")
        # the count before a row is read: a list of 10 million rows fails in a microsecond
        count = check_limit("workload.n_jobs", len(listed), field="jobs")
        if w.n_jobs is not None:
            count = w.n_jobs
        check_memory(count, len(regions), field="jobs" if w.n_jobs is None else "n_jobs")
        rows = tuple(_explicit_jobs(listed, models, datasets, w.n_jobs))
        model_index = {name: i for i, name in enumerate(models)}
        for i, row in enumerate(rows):
            if row.batch is not None:
                _check_batch(f"jobs[{i % len(listed)}].batch", row.batch, m)
            else:
                _check_batch(f"models[{model_index[row.model]}].batch", models[row.model][1], m)
    elif "workload" in spec:
        workload = _workload(spec["workload"], list(models), list(datasets), w.n_jobs)
        field = "workload.n_jobs" if w.n_jobs is None else "n_jobs"
        check_memory(workload.n_jobs, len(regions), field=field)
        for i, (_, batch) in enumerate(models.values()):
            _check_batch(f"models[{i}].batch", batch, m)
    else:
        raise ScenarioError("jobs", None, "a scenario needs a 'jobs' list or a 'workload' rule")
    template = ScenarioTemplate(
        name,
        description,
        source,
        cluster,
        models,
        datasets,
        constants,
        epochs,
        w,
        rows,
        workload,
        tuple(zones) if hourly else (),
        _faults(spec, names, w),
    )
    if w.horizon_h is not None:
        if template.workload is None:
            raise ScenarioError("horizon_h", w.horizon_h, "needs a workload rule, not a job list")
        template = dataclasses.replace(
            template, workload=dataclasses.replace(template.workload, horizon_h=w.horizon_h)
        )
    target = w.load if w.load is not None else _raw_load(spec)
    if target is not None:
        field = "load" if w.load is not None else "workload.load"
        template = _with_load(template, target, field)
    rule = template.workload
    if rule is not None and rule.arrivals != "batch" and rule.rate is not None:
        # before any draw: arrivals that would pass the horizon, named by their rate or load
        check_arrival_span(
            rule.n_jobs,
            rule.rate,
            start_h=rule.submit_h,
            horizon_h=rule.horizon_h,
            source=rule.rate_source,
        )
    return template


def _faults(spec: Mapping[str, Any], names: list[str], world: World) -> FaultModel | None:
    """The scenario's fault model (semantics §11): the file's events and the world's, with
    the world's recovery settings (semantics §3c); None for the perfect world at the default
    settings."""
    h = SECONDS_PER_HOUR
    raw = spec.get("events", [])
    if not isinstance(raw, list):
        raise ScenarioError("events", raw, "must be a list")
    downs: list[Outage] = []
    links: list[LinkChange] = []
    prices: list[PriceChange] = []
    for i, ev in enumerate(raw):
        f = f"events[{i}]"
        if not isinstance(ev, Mapping) or ev.get("type") not in _EVENT_KEYS:
            kinds = ", ".join(_EVENT_KEYS)
            raise ScenarioError(f"{f}.type", ev, f"an event is a table with type one of: {kinds}")
        _no_unknown_keys(f, ev, _EVENT_KEYS[ev["type"]])
        start = check_limit("events.start_h", _get(f, ev, "start_h"), field=f"{f}.start_h")
        end = check_limit("events.end_h", _get(f, ev, "end_h"), field=f"{f}.end_h")
        if end <= start:
            raise ScenarioError(f"{f}.end_h", end, f"must be after start_h ({start:g})")
        if ev["type"] == "outage":
            r = _region_index(f"{f}.region", _get(f, ev, "region"), names)
            downs.append(Outage(r, start * h, end * h))
        elif ev["type"] == "price":
            r = _region_index(f"{f}.region", _get(f, ev, "region"), names)
            factor = check_limit(
                "events.factor (price)", _get(f, ev, "factor"), field=f"{f}.factor"
            )
            prices.append(PriceChange(r, factor, start * h, end * h))
        else:
            a = _region_index(f"{f}.src", _get(f, ev, "src"), names)
            b = _region_index(f"{f}.dst", _get(f, ev, "dst"), names)
            if a == b:
                raise ScenarioError(f"{f}.dst", names[b], "a link joins two different regions")
            factor = check_limit("events.factor (link)", _get(f, ev, "factor"), field=f"{f}.factor")
            symmetric = ev.get("symmetric", False)
            if not isinstance(symmetric, bool):
                raise ScenarioError(f"{f}.symmetric", symmetric, "must be true or false")
            links.append(LinkChange(a, b, factor, start * h, end * h))
            if symmetric:
                links.append(LinkChange(b, a, factor, start * h, end * h))
    # the world's outages and link changes: their times and factors are checked, their
    # regions named here, where the cluster is known
    for i, (region, t0, t1) in enumerate(world.outages):
        r = _region_index(f"--outage[{i}].region", region, names)
        downs.append(Outage(r, t0 * h, t1 * h))
    for i, (src, dst, x, t0, t1) in enumerate(world.link_changes):
        f = f"--link-degrade[{i}]"
        a = _region_index(f"{f}.src", src, names)
        b = _region_index(f"{f}.dst", dst, names)
        links.append(LinkChange(a, b, x, t0 * h, t1 * h))
    saved = world.preempt_checkpoint_s
    model = FaultModel(
        tuple(downs),
        tuple(links),
        tuple(prices),
        world.gpu_failure_rate,
        world.checkpoint_interval_s,
        world.restart_s,
        None if saved == LOSE_SINCE_CHECKPOINT else float(saved),
        world.max_preemptions,
    )
    return model if model.active or not model.recovery_default else None


def _raw_load(spec: Mapping[str, Any]) -> Any:
    workload = spec.get("workload")
    return workload.get("load") if isinstance(workload, Mapping) else None


def _with_load(template: ScenarioTemplate, load: Any, field: str) -> ScenarioTemplate:
    """The template with its arrival rate set so that its offered load is ``load``."""
    w = template.workload
    if w is None or w.arrivals == "batch":
        raise ScenarioError(field, load, "needs a workload with poisson or philly arrivals")
    target = check_limit("workload.load", load, field=field)
    rate = target * template.cluster.total_gpus / template.mean_gpu_hours()
    workload = dataclasses.replace(w, rate=rate, rate_source=(field, load))
    return dataclasses.replace(template, workload=workload)


def _check_batch(field: str, batch: int, micro_batch: int) -> None:
    if batch % micro_batch:
        raise ScenarioError(
            field, batch, f"must be a multiple of constants.micro_batch = {micro_batch}"
        )


# ------------------------------------------------------------------------------ sections


def _text(key: str, value: Any) -> str:
    """A free-text field: any string, empty included, and nothing else."""
    if not isinstance(value, str):
        raise ScenarioError(key, value, "must be a string")
    return value


def _list(spec: Mapping[str, Any], key: str) -> list[Any]:
    if key not in spec:
        raise ScenarioError(key, None, "is missing")
    value = spec[key]
    if not isinstance(value, list) or not value:
        raise ScenarioError(key, value, "must be a non-empty list")
    return value


def _table(field: str, value: Any, allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ScenarioError(field, value, "must be a table/object")
    _no_unknown_keys(field, value, allowed)
    return value


def _no_unknown_keys(field: str, value: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ScenarioError(
            f"{field}.{unknown[0]}",
            value[unknown[0]],
            f"unknown key; allowed: {choices(sorted(allowed))}",
        )


def _get(field: str, row: Mapping[str, Any], key: str) -> Any:
    if key not in row:
        raise ScenarioError(f"{field}.{key}", None, "is missing")
    return row[key]


def _constants(raw: Any) -> tuple[TrainingConstants, float, int, float]:
    c = _table("constants", raw, _CONSTANT_KEYS)
    d = TrainingConstants()
    defaults = {
        "seq_len": d.seq_len,
        "micro_batch": d.micro_batch,
        "peak_tflops": d.peak_flops / 1e12,
        "mfu": d.mfu,
        "stage_overhead_s": 0.0,
        "bytes_per_value": 2,
        "bytes_per_param": d.bytes_per_param,
        "layer_activation_factor": d.layer_activation_factor,
        "power_kw": 0.3,
        "epochs": 1,
        "gpu_memory_gb": DEFAULT_GPU_MEMORY_BYTES / 1e9,
    }
    v = {key: check_limit(f"constants.{key}", c.get(key, value)) for key, value in defaults.items()}
    constants = TrainingConstants(
        seq_len=v["seq_len"],
        micro_batch=v["micro_batch"],
        peak_flops=v["peak_tflops"] * 1e12,
        mfu=v["mfu"],
        stage_overhead=v["stage_overhead_s"],
        bytes_per_value=v["bytes_per_value"],
        bytes_per_param=v["bytes_per_param"],
        layer_activation_factor=v["layer_activation_factor"],
    )
    return constants, v["power_kw"], v["epochs"], v["gpu_memory_gb"] * 1e9


def _regions(
    rows: list[Any], gpu_scale: float, gpu_memory: float
) -> tuple[list[Region], list[float | None], list[str]]:
    regions: list[Region] = []
    region_bw: list[float | None] = []
    zones: list[str] = []
    for i, raw in enumerate(rows):
        f = f"regions[{i}]"
        row = _table(f, raw, _REGION_KEYS)
        name = require_str(f"{f}.name", _get(f, row, "name"))
        if any(r.name == name for r in regions):
            raise ScenarioError(f"{f}.name", name, "duplicate region name")

        def num(key: str, value: Any, f: str = f) -> Any:  # the row's field, in its range
            return check_limit(f"regions.{key}", value, field=f"{f}.{key}")

        gpus = num("gpus", _get(f, row, "gpus"))
        scaled = scale_gpus(gpus, gpu_scale)
        top = LIMITS["regions.gpus"].high
        if scaled > top:
            raise ScenarioError("gpu_scale", gpu_scale, f"gives {f} {scaled:,} GPUs (> {top:,})")
        price = num("price_usd_per_kwh", _get(f, row, "price_usd_per_kwh"))
        bw = row.get("bandwidth_gbps")
        if bw is not None:
            bw = num("bandwidth_gbps", bw)
        intra = row.get("intra_gbps", bw)
        if intra is None:
            raise ScenarioError(
                f"{f}.intra_gbps", None, "is missing (give intra_gbps or bandwidth_gbps)"
            )
        intra = num("intra_gbps", intra)
        memory = gpu_memory
        if "gpu_memory_gb" in row:
            memory = num("gpu_memory_gb", row["gpu_memory_gb"]) * 1e9
        carbon = num("carbon_g_per_kwh", row.get("carbon_g_per_kwh", 0.0))
        zones.append(require_str(f"{f}.price_zone", row.get("price_zone", name)))
        regions.append(
            Region(
                name,
                scaled,
                price,
                gbps_to_bytes_per_s(intra),
                memory,
                carbon,
            )
        )
        region_bw.append(bw)
    return regions, region_bw, zones


def _links(raw: Any, names: list[str], region_bw: list[float | None]) -> np.ndarray:
    k = len(names)
    if raw is None:
        raise ScenarioError("links", None, "is missing")
    links = _table("links", raw, _LINK_KEYS)
    kinds = [key for key in ("rule", "matrix_gbps", "pairs") if key in links]
    if len(kinds) != 1:
        raise ScenarioError("links", sorted(links), "give exactly one of rule, matrix_gbps, pairs")
    if "rule" in links:
        if links["rule"] != "mean":
            raise ScenarioError("links.rule", links["rule"], "the only rule is 'mean'")
        for i, bw in enumerate(region_bw):
            if bw is None:
                raise ScenarioError(
                    f"regions[{i}].bandwidth_gbps", None, "is needed by links.rule = 'mean'"
                )
        gbps = np.array([[(a + b) / 2.0 for b in region_bw] for a in region_bw])  # type: ignore[operator]
        return require_square_matrix("links", gbps_to_bytes_per_s(1.0) * gbps, k)
    if "matrix_gbps" in links:
        m = require_square_matrix("links.matrix_gbps", links["matrix_gbps"], k)
        return check_matrix(
            "links.matrix_gbps", m, LIMITS["links.matrix_gbps"]
        ) * gbps_to_bytes_per_s(1.0)
    pairs = links["pairs"]
    if not isinstance(pairs, list):
        raise ScenarioError("links.pairs", pairs, "must be a list")
    symmetric = links.get("symmetric", True)
    if not isinstance(symmetric, bool):
        raise ScenarioError("links.symmetric", symmetric, "must be true or false")
    out = np.zeros((k, k))
    for i, raw_pair in enumerate(pairs):
        f = f"links.pairs[{i}]"
        pair = _table(f, raw_pair, _PAIR_KEYS)
        a, b = (_region_index(f"{f}.{key}", _get(f, pair, key), names) for key in ("a", "b"))
        if a == b:
            raise ScenarioError(f"{f}.b", names[b], "a link joins two different regions")
        if ("gbps" in pair) == ("mbps" in pair):
            raise ScenarioError(f, dict(pair), "give exactly one of gbps, mbps")
        if "gbps" in pair:
            bps = gbps_to_bytes_per_s(check_limit("links.gbps", pair["gbps"], field=f"{f}.gbps"))
        else:
            bps = mbps_to_bytes_per_s(check_limit("links.mbps", pair["mbps"], field=f"{f}.mbps"))
        out[a, b] = bps
        if symmetric:
            out[b, a] = bps
    return out


def _latency(raw: Any, k: int) -> np.ndarray:
    if raw is None:
        return np.zeros((k, k))
    matrix = require_square_matrix("latency_ms", raw, k)
    return check_matrix("latency_ms", matrix, LIMITS["latency_ms"]) / 1000.0


def _region_index(field: str, name: Any, names: list[str]) -> int:
    if name not in names:
        raise ScenarioError(field, name, f"unknown region; known: {choices(names)}")
    return names.index(name)


def _named_table(rows: list[Any], field: str, keys: set[str], parse: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, raw in enumerate(rows):
        f = f"{field}[{i}]"
        row = _table(f, raw, keys)
        name = require_str(f"{f}.name", _get(f, row, "name"))
        if name in out:
            raise ScenarioError(f"{f}.name", name, f"duplicate {field[:-1]} name")
        out[name] = parse(f, row)
    return out


def _model(f: str, row: Mapping[str, Any]) -> tuple[ModelSpec, int]:
    v = {
        key: check_limit(f"models.{key}", _get(f, row, key), field=f"{f}.{key}")
        for key in ("params", "layers", "hidden", "batch")
    }
    model = ModelSpec(row["name"], v["params"], v["layers"], v["hidden"])
    return model, v["batch"]


def _dataset(f: str, row: Mapping[str, Any]) -> int:
    return check_limit("datasets.samples", _get(f, row, "samples"), field=f"{f}.samples")  # type: ignore[no-any-return]


def _explicit_jobs(
    rows: list[Any], models: Mapping[str, Any], datasets: Mapping[str, Any], n_jobs: int | None
) -> list[JobRow]:
    out = []
    for i, raw in enumerate(rows):
        f = f"jobs[{i}]"
        row = _table(f, raw, _JOB_KEYS)
        out.append(
            JobRow(
                model=_choice(f"{f}.model", _get(f, row, "model"), models, "model"),
                dataset=_choice(f"{f}.dataset", _get(f, row, "dataset"), datasets, "dataset"),
                submit_h=check_limit(
                    "jobs.submit_h", row.get("submit_h", 0.0), field=f"{f}.submit_h"
                ),
                batch=None
                if "batch" not in row
                else check_limit("jobs.batch", row["batch"], field=f"{f}.batch"),
                epochs=None
                if "epochs" not in row
                else check_limit("jobs.epochs", row["epochs"], field=f"{f}.epochs"),
                name=require_str(f"{f}.name", row["name"]) if "name" in row else "",
            )
        )
    if n_jobs is not None:  # cut or cycle the list to the requested length
        cycled: list[JobRow] = []
        for i in range(n_jobs):
            job = out[i % len(out)]
            if i >= len(out) and job.name:
                job = dataclasses.replace(job, name=f"{job.name}#{i // len(out) + 1}")
            cycled.append(job)
        out = cycled
    return out


def _workload(
    raw: Any, model_names: list[str], dataset_names: list[str], n_jobs: int | None
) -> WorkloadRule:
    w = _table("workload", raw, _WORKLOAD_KEYS)
    n = (
        n_jobs
        if n_jobs is not None
        else check_limit("workload.n_jobs", _get("workload", w, "n_jobs"))
    )
    rate = None
    if "arrival_rate_per_h" in w:
        rate = check_limit("workload.arrival_rate_per_h", w["arrival_rate_per_h"])
    arrivals = w.get("arrivals", "batch" if rate is None else "poisson")
    if arrivals not in ARRIVAL_PROCESSES:
        raise ScenarioError(
            "workload.arrivals", arrivals, f"must be one of: {', '.join(ARRIVAL_PROCESSES)}"
        )
    if arrivals != "batch" and rate is None and "load" not in w:
        raise ScenarioError(
            "workload.arrival_rate_per_h", None, f"{arrivals} arrivals need a rate or a load"
        )
    if arrivals == "batch" and (rate is not None or "load" in w):
        raise ScenarioError(
            "workload.arrivals", arrivals, "batch arrivals take no arrival_rate_per_h or load"
        )
    if "load" in w and rate is not None:
        raise ScenarioError("workload.load", w["load"], "give a load or a rate, not both")
    horizon = None
    if "horizon_h" in w:
        horizon = check_limit("workload.horizon_h", w["horizon_h"])
    return WorkloadRule(
        n_jobs=n,
        models=_how("workload.models", w.get("models", "cycle"), model_names),
        datasets=_how("workload.datasets", w.get("datasets", "random"), dataset_names),
        submit_h=check_limit("workload.submit_h", w.get("submit_h", 0.0)),
        rate=rate,
        arrivals=str(arrivals),
        horizon_h=horizon,
        rate_source=None if rate is None else ("workload.arrival_rate_per_h", rate),
    )


def _how(field: str, how: Any, names: list[str]) -> Draw:
    if how in ("cycle", "random") or (isinstance(how, str) and how in names):
        return str(how)
    if isinstance(how, Mapping) and how:
        for name in how:
            _choice(f"{field}.{name}", name, dict.fromkeys(names), field.split(".")[-1][:-1])
        weights = [check_limit("workload.weight", v, field=f"{field}.{k}") for k, v in how.items()]
        total = math.fsum(weights)
        if total <= 0:
            raise ScenarioError(field, dict(how), "needs a positive weight")
        return tuple(how), tuple(x / total for x in weights)
    raise ScenarioError(
        field,
        how,
        f"must be 'cycle', 'random', a {{name: weight}} table or one of: {choices(names)}",
    )


def _weights(how: Draw, names: list[str]) -> list[tuple[str, float]]:
    """The probability of each name under a draw rule (``cycle`` counts as uniform)."""
    if isinstance(how, tuple):
        return [(n, p) for n, p in zip(*how) if p > 0]
    if how in ("cycle", "random"):
        return [(n, 1.0 / len(names)) for n in names]
    return [(how, 1.0)]


def _pick(how: Draw, names: list[str], n: int, rng: np.random.Generator) -> list[str]:
    if isinstance(how, tuple):
        chosen, probs = how
        return [chosen[i] for i in rng.choice(len(chosen), size=n, p=probs).tolist()]
    if how == "cycle":
        return [names[i % len(names)] for i in range(n)]
    if how == "random":
        return [names[i] for i in rng.integers(len(names), size=n).tolist()]
    return [how] * n


def _choice(field: str, name: Any, table: Mapping[str, Any], what: str) -> str:
    if not isinstance(name, str) or name not in table:
        raise ScenarioError(field, name, f"unknown {what}; known: {choices(table)}")
    return name
