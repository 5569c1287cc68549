"""The sections of a scenario file, each parsed and validated into the objects a scenario is
built from: constants, regions, links, latency, models, datasets, an explicit job list or a
workload rule, and the fault events. Every mistake is a one-line :class:`ScenarioError`
naming the field and the value. :mod:`.loader` ties them together."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.cluster import DEFAULT_GPU_MEMORY_BYTES, Region
from ..core.faults import LOSE_SINCE_CHECKPOINT, FaultModel, LinkChange, Outage, PriceChange
from ..core.job import ModelSpec, TrainingConstants
from ..core.job_fields import job_keys, job_row_fields
from ..core.limits import LIMITS, check_limit, check_matrix
from ..core.units import SECONDS_PER_HOUR, gbps_to_bytes_per_s, mbps_to_bytes_per_s
from ..core.validate import require_square_matrix, require_str
from ..core.world import World
from ..errors import ScenarioError, choices
from .arrivals import ARRIVAL_PROCESSES

__all__ = ["Draw", "JobRow", "WorkloadRule", "scale_gpus"]

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
    "bytes_per_grad",
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
_MODEL_KEYS = {"name", "params", "layers", "hidden", "batch", "active_params", "source"}
_DATASET_KEYS = {"name", "samples"}
#: A job row's own keys; the rest are the keys of JOB_FIELDS (:func:`job_keys`).
_JOB_KEYS = {"model", "dataset", "batch"}
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


@dataclass(frozen=True)
class JobRow:
    """One validated job of a scenario: names from the model and dataset tables, ``batch``
    (None: the model's) and the :data:`~bacepipe_env.core.job_fields.JOB_FIELDS` values the
    row gives, ``(attribute, value)`` in the file's units (a field it does not give takes the
    scenario's default, ``epochs``, or the table's)."""

    model: str
    dataset: str
    batch: int | None = None
    fields: tuple[tuple[str, Any], ...] = ()

    def get(self, attr: str, default: Any = None) -> Any:
        """The row's value of the job field ``attr``, or ``default``."""
        return dict(self.fields).get(attr, default)


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


def _check_batch(field: str, batch: int, micro_batch: int) -> None:
    if batch % micro_batch:
        raise ScenarioError(
            field, batch, f"must be a multiple of constants.micro_batch = {micro_batch}"
        )


def scale_gpus(gpus: int, scale: float) -> int:
    """A region's GPU count under ``gpu_scale``: rounded half up, never below 1."""
    return max(1, math.floor(gpus * scale + 0.5))


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
        "bytes_per_value": d.bytes_per_value,
        "bytes_per_grad": d.bytes_per_grad,
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
        bytes_per_grad=v["bytes_per_grad"],
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
    active = row.get("active_params")  # a mixture of experts: the parameters a token uses
    if active is not None:
        active = check_limit("models.params", active, field=f"{f}.active_params")
        if active > v["params"]:  # named by the file's field, as every other check here
            raise ScenarioError(
                f"{f}.active_params", active, f"must be at most params ({v['params']:g})"
            )
    model = ModelSpec(row["name"], v["params"], v["layers"], v["hidden"], active)
    return model, v["batch"]


def _dataset(f: str, row: Mapping[str, Any]) -> int:
    return check_limit("datasets.samples", _get(f, row, "samples"), field=f"{f}.samples")  # type: ignore[no-any-return]


def _explicit_jobs(
    rows: list[Any], models: Mapping[str, Any], datasets: Mapping[str, Any], n_jobs: int | None
) -> list[JobRow]:
    out = []
    keys = _JOB_KEYS | job_keys()
    for i, raw in enumerate(rows):
        f = f"jobs[{i}]"
        row = _table(f, raw, keys)
        out.append(
            JobRow(
                model=_choice(f"{f}.model", _get(f, row, "model"), models, "model"),
                dataset=_choice(f"{f}.dataset", _get(f, row, "dataset"), datasets, "dataset"),
                batch=None
                if "batch" not in row
                else check_limit("jobs.batch", row["batch"], field=f"{f}.batch"),
                fields=tuple(job_row_fields(f, row).items()),
            )
        )
    if n_jobs is not None:  # cut or cycle the list to the requested length
        cycled: list[JobRow] = []
        for i in range(n_jobs):
            job = out[i % len(out)]
            name = job.get("name")
            if i >= len(out) and name:
                given = {**dict(job.fields), "name": f"{name}#{i // len(out) + 1}"}
                job = dataclasses.replace(job, fields=tuple(given.items()))
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
