"""Scenario files: parse, validate and materialise them into :class:`Scenario` objects.

A scenario file (JSON, or TOML on Python >= 3.11) describes regions, links, models, datasets
and either an explicit job list or a workload rule. The schema is documented in
``docs/scenarios.md``; every mistake raises :class:`ScenarioError` naming the field and value.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..core.cluster import Cluster
from ..core.deadlines import draw_slacks, with_slacks
from ..core.faults import FaultModel
from ..core.job import Job, ModelSpec, TrainingConstants
from ..core.job_fields import job_values
from ..core.limits import check_limit, check_memory
from ..core.perf import ProfileCache, profile_job
from ..core.scenario import Scenario
from ..core.tariff import HOURS_PER_YEAR, Tariff
from ..core.units import SECONDS_PER_HOUR
from ..core.validate import require_str
from ..core.world import KNOBS, World, check_knob_names
from ..errors import ScenarioError
from .arrivals import arrival_times, check_arrival_span
from .sections import (
    _DATASET_KEYS,
    _MODEL_KEYS,
    Draw,
    JobRow,
    WorkloadRule,
    _check_batch,
    _constants,
    _dataset,
    _explicit_jobs,
    _faults,
    _latency,
    _links,
    _list,
    _model,
    _named_table,
    _no_unknown_keys,
    _pick,
    _regions,
    _text,
    _weights,
    _workload,
    scale_gpus,
)

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


@dataclass(frozen=True, eq=False, kw_only=True)
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
        the start hour when it is ``random``); the slacks of ``deadline_slack`` from their own
        stream (:func:`~bacepipe_env.core.deadlines.draw_slacks`)."""
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
        if w.deadline_slack != "none":  # their own stream: every other draw stays as it was
            jobs = with_slacks(jobs, draw_slacks(w.deadline_slack, seed, len(jobs)))
        params = {
            "seed": seed,
            "bandwidth_scale": w.bandwidth_scale,
            "gpu_scale": w.gpu_scale,
            "n_jobs": len(jobs),
            "ignore_memory": w.ignore_memory,
            # the world's rules, which a policy with its own replaces: a run's record names
            # the rules it used ``admission`` and ``preemption``, so these say ``world_``
            "world_admission": w.admission,
            "world_preemption": w.preemption,
            "announce_h": w.announce_h,
            "prices": w.prices,
            "start_hour": world.start_hour,
            "egress": w.egress_usd_per_gb is not None,
            "source": self.source,
        }
        if w.pue != 1.0:  # a setting beyond the paper, recorded when used
            params["pue"] = w.pue
        if w.deadline_slack != "none":
            params["deadline_slack"] = w.deadline_slack
        future = None
        if self.workload is not None and self.workload.arrivals != "batch":
            params["arrivals"] = self.workload.arrivals
            params["arrival_rate_per_h"] = self.workload.rate
            future = self.future_jobs
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
            future=future,
        )

    def future_jobs(
        self, rng: np.random.Generator, after: float, ids: Sequence[int]
    ) -> tuple[Job, ...]:
        """Jobs ``ids`` (ascending) drawn afresh from the workload rule with ``rng``: what a
        rollout planner's ``sampled`` fork puts in place of the jobs it cannot know yet
        (:data:`~bacepipe_env.core.scenario.FutureJobs`). Models and datasets by the rule
        (``cycle`` by each id's place, as the episode's own draw gives it), submit times from
        a fresh stream of the rule's arrival process started at ``after`` (s): the k-th job
        at ``after`` plus the stream's first k gaps, at least one ulp after ``after`` (exact
        for Poisson arrivals, which are memoryless; for ``philly`` the stream restarts at
        ``after``), not cut at a horizon; slacks from the world's ``deadline_slack``. Draws
        in that order."""
        w = self.workload
        assert w is not None and w.rate is not None and w.arrivals != "batch"
        m = len(ids)
        models = _pick_at(w.models, list(self.models), ids, rng)
        data = _pick_at(w.datasets, list(self.datasets), ids, rng)
        stream = arrival_times(w.arrivals, m + 1, w.rate, rng, source=w.rate_source)
        gaps = np.diff(stream) * SECONDS_PER_HOUR  # the first arrival's gap is drawn too
        first = float(np.nextafter(after, np.inf))
        times = np.maximum(after + np.cumsum(gaps), first).tolist()
        rows = [JobRow(mo, d) for mo, d in zip(models, data)]
        jobs = [_submitted(job, t) for job, t in zip(self._jobs(rows, ids), times)]
        if self.world.deadline_slack != "none":
            slacks = draw_slacks(self.world.deadline_slack, 0, m, rng=rng)
            return with_slacks(jobs, slacks)
        return tuple(jobs)

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

    def _jobs(self, rows: Sequence[JobRow], ids: Sequence[int] | None = None) -> tuple[Job, ...]:
        """The jobs of ``rows``, numbered from 1 in order (or ``ids``)."""
        jobs = []
        for i, row in enumerate(rows):
            model, batch = self.models[row.model]
            jobs.append(
                Job.trusted(  # every value was validated by compile_scenario
                    job_id=i + 1 if ids is None else ids[i],
                    model=model,
                    dataset=row.dataset,
                    samples=self.datasets[row.dataset],
                    batch=batch if row.batch is None else row.batch,
                    constants=self.constants,
                    # the scenario's epochs, unless the row gives its own
                    **{"epochs": self.epochs, **job_values(row.fields)},
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
        return [
            JobRow(m, d, fields=(("submit_time", t),))
            for m, d, t in zip(chosen_models, chosen_data, submits)
        ]

    def mean_gpu_hours(self) -> float:
        """The expected GPU-hours of one job of the workload on its own: K* GPUs for its ideal
        execution (Eq. 13's optimum), averaged over the workload's model and dataset draws,
        by the model the world runs by (``world.model``: a ``load`` is the share of the GPUs
        the arrivals keep busy in that world)."""
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
                prof = profile_job(job, ref, self.world.model, self.world.recompute)
                total += pm * pd * prof.k_star * prof.ideal_execution / SECONDS_PER_HOUR
        return total

    def offered_load(self) -> float:
        """``rate * mean_gpu_hours / total GPUs``: the fraction of the cluster the arrivals
        would keep busy if every job ran alone on K* GPUs (0 for batch arrivals)."""
        w = self.workload
        if w is None or w.rate is None or w.arrivals == "batch":
            return 0.0
        return w.rate * self.mean_gpu_hours() / self.cluster.total_gpus


def _pick_at(
    how: Draw, names: list[str], ids: Sequence[int], rng: np.random.Generator
) -> list[str]:
    """:func:`_pick` for the jobs ``ids`` of a drawn workload: ``cycle`` by each job's place
    (id - 1), as the episode's own draw gives it; any other rule draws ``len(ids)`` afresh."""
    if how == "cycle":
        return [names[(i - 1) % len(names)] for i in ids]
    return _pick(how, names, len(ids), rng)


def _submitted(job: Job, t: float) -> Job:
    """``job`` submitted at ``t`` seconds (a copy: jobs are immutable and may be shared)."""
    job = copy.copy(job)
    object.__setattr__(job, "submit_time", t)
    return job


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
        name=name,
        description=description,
        source=source,
        cluster=cluster,
        models=models,
        datasets=datasets,
        constants=constants,
        epochs=epochs,
        world=w,
        rows=rows,
        workload=workload,
        zones=tuple(zones) if hourly else (),
        faults=_faults(spec, names, w),
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
