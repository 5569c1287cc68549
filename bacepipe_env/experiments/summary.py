"""Per-policy statistics over seeds, absolute and normalised to a reference policy, and
:func:`format_run`, the text ``bacepipe simulate`` prints for one run."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..core.records import RunResult
from ..core.units import hours
from ..core.world import World
from ..outputs import write_text
from .runner import RunSummary
from .stats import Estimate, estimate

__all__ = [
    "PolicyStats",
    "egress_charged",
    "faults_configured",
    "format_run",
    "format_table",
    "preemption_configured",
    "summarise",
    "write_csv",
    "write_json",
]


@dataclass(frozen=True)
class PolicyStats:
    """A policy's average JCT (h), total cost ($, electricity) and carbon (kg CO2e) over
    seeds: means with 95% CIs, and the same normalised seed by seed to the reference policy
    (``x_policy / x_reference``). ``egress_usd`` (the cross-region traffic's charge) is there
    only when the runs charged egress, None otherwise; ``restarts``, ``wasted_gpu_hours`` and
    ``wasted_cost_usd`` (attempts after a failure, an outage or a preemption, and the GPU-hours
    and dollars of restarts and lost work, semantics §11 and §3c) only when the runs
    configured faults or a preemption rule; ``preemptions`` only under a preemption rule."""

    policy: str
    jct_h: Estimate
    cost_usd: Estimate
    jct_norm: Estimate
    cost_norm: Estimate
    carbon_kg: Estimate
    carbon_norm: Estimate
    egress_usd: Estimate | None = None
    restarts: Estimate | None = None
    wasted_gpu_hours: Estimate | None = None
    wasted_cost_usd: Estimate | None = None
    preemptions: Estimate | None = None

    def row(self) -> dict[str, Any]:
        """A flat dict for CSV/JSON (NaN CIs when there is one seed); ``egress_usd_*`` only
        when egress was charged, ``n_restarts_*`` and ``wasted_*`` only when faults were
        configured."""
        out: dict[str, Any] = {"policy": self.policy, "n_seeds": self.jct_h.n}
        estimates = [
            ("avg_jct_h", self.jct_h),
            ("total_cost_usd", self.cost_usd),
            ("avg_jct_norm", self.jct_norm),
            ("total_cost_norm", self.cost_norm),
            ("carbon_kg", self.carbon_kg),
            ("carbon_norm", self.carbon_norm),
        ]
        if self.egress_usd is not None:
            estimates.append(("egress_usd", self.egress_usd))
        for name, maybe in (
            ("n_restarts", self.restarts),
            ("wasted_gpu_hours", self.wasted_gpu_hours),
            ("wasted_cost_usd", self.wasted_cost_usd),
            ("n_preemptions", self.preemptions),
        ):
            if maybe is not None:
                estimates.append((name, maybe))
        for name, est in estimates:
            out[f"{name}_mean"] = est.mean
            out[f"{name}_ci95"] = est.ci95
        return out


def egress_charged(runs: Sequence[RunSummary]) -> bool:
    """Whether egress was on in ``runs``: an ``egress_usd_per_gb`` knob, or a charge > 0."""
    return any(run.egress_usd > 0 or "egress_usd_per_gb" in dict(run.spec.knobs) for run in runs)


def faults_configured(runs: Sequence[RunSummary]) -> bool:
    """Whether any of ``runs`` could end an attempt early: a scenario with faults (events or a
    GPU failure rate) or a preemption rule."""
    return any(run.interrupted for run in runs)


def preemption_configured(runs: Sequence[RunSummary]) -> bool:
    """Whether any of ``runs`` ran under a preemption rule."""
    return any(run.preemption != "none" for run in runs)


def _ratio(x: float, ref: float) -> float:
    """``x / ref``; NaN when the reference is 0 (a scenario without carbon figures)."""
    return x / ref if ref != 0 else math.nan


def summarise(
    runs: Sequence[RunSummary],
    reference: str,
    *,
    egress: bool | None = None,
    faults: bool | None = None,
) -> list[PolicyStats]:
    """Group ``runs`` by policy (first-seen order) and normalise each seed to ``reference``'s
    run on the same seed. Every policy must have run on the reference's seeds. ``egress``:
    whether to report the egress charge (default: :func:`egress_charged` of ``runs``);
    ``faults``: whether to report restarts and waste (default: :func:`faults_configured`)."""
    with_egress = egress_charged(runs) if egress is None else egress
    with_faults = faults_configured(runs) if faults is None else faults
    with_preemption = preemption_configured(runs)
    by_policy: dict[str, dict[int, RunSummary]] = {}
    for run in runs:
        by_policy.setdefault(run.spec.policy, {})[run.spec.seed] = run
    if reference not in by_policy:
        raise ValueError(f"reference policy {reference!r} has no runs")
    ref = by_policy[reference]
    out = []
    for policy, seeds in by_policy.items():
        if set(seeds) != set(ref):
            raise ValueError(f"{policy} ran on seeds {sorted(seeds)}, {reference} on {sorted(ref)}")
        order = sorted(seeds)
        jct = [seeds[s].avg_jct_h for s in order]
        cost = [seeds[s].total_cost_usd for s in order]
        carbon = [seeds[s].carbon_kg for s in order]
        out.append(
            PolicyStats(
                policy,
                estimate(jct),
                estimate(cost),
                estimate([seeds[s].avg_jct_h / ref[s].avg_jct_h for s in order]),
                estimate([seeds[s].total_cost_usd / ref[s].total_cost_usd for s in order]),
                estimate(carbon),
                estimate([_ratio(seeds[s].carbon_kg, ref[s].carbon_kg) for s in order]),
                estimate([seeds[s].egress_usd for s in order]) if with_egress else None,
                estimate([float(seeds[s].n_restarts) for s in order]) if with_faults else None,
                estimate([seeds[s].wasted_gpu_hours for s in order]) if with_faults else None,
                estimate([seeds[s].wasted_cost_usd for s in order]) if with_faults else None,
                estimate([float(seeds[s].n_preemptions) for s in order])
                if with_preemption
                else None,
            )
        )
    return out


def _pm(est: Estimate, fmt: str) -> str:
    if math.isnan(est.mean):
        return "-"
    if math.isnan(est.ci95):
        return format(est.mean, fmt)
    return f"{format(est.mean, fmt)} ± {format(est.ci95, fmt)}"


def format_table(stats: Sequence[PolicyStats], reference: str) -> str:
    """A text table: mean ± 95% CI half-width, absolute (JCT, cost, carbon and, when it was
    charged, egress; when faults were configured, restarts and wasted cost) and relative to
    ``reference`` (JCT, cost, carbon)."""
    egress = any(s.egress_usd is not None for s in stats)
    faults = any(s.restarts is not None for s in stats)
    preempts = any(s.preemptions is not None for s in stats)
    head = ["policy", "avg JCT h", "total cost $", "carbon kg"]
    if egress:
        head.append("egress $")
    if preempts:
        head.append("preemptions")
    if faults:
        head += ["restarts", "wasted $"]
    head += [f"JCT / {reference}", f"cost / {reference}", f"carbon / {reference}"]
    rows = []
    for s in stats:
        row = [s.policy, _pm(s.jct_h, ",.2f"), _pm(s.cost_usd, ",.2f"), _pm(s.carbon_kg, ",.2f")]
        if egress:
            row.append("-" if s.egress_usd is None else _pm(s.egress_usd, ",.2f"))
        if preempts:
            row.append("-" if s.preemptions is None else _pm(s.preemptions, ",.1f"))
        if faults:
            row.append("-" if s.restarts is None else _pm(s.restarts, ",.1f"))
            row.append("-" if s.wasted_cost_usd is None else _pm(s.wasted_cost_usd, ",.2f"))
        row += [_pm(s.jct_norm, ".3f"), _pm(s.cost_norm, ".3f"), _pm(s.carbon_norm, ".3f")]
        rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    n = stats[0].jct_h.n if stats else 0
    lines = [line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)]
    lines.append(f"mean ± 95% CI half-width over {n} seeds (Student t); ratios are per seed")
    return "\n".join(lines)


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Write dict rows to ``path`` (columns: union of keys, first-seen order), whole or not
    at all (:func:`bacepipe_env.outputs.write_text`)."""
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    write_text(path, buffer.getvalue())


def write_json(path: Path, payload: Any) -> None:
    """Write ``payload`` as strict, indented JSON: NaN (a statistic of no runs) and an
    infinity become null, so that every JSON reader reads the file; a :class:`World` is
    written as its settings by name."""

    def clean(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, World):  # a run's world, as its settings by name
            return clean(dict(x.items()))
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x

    text = json.dumps(clean(payload), indent=2, allow_nan=False)
    write_text(path, text + "\n")


def _hour_of_2023(hour: float) -> str:
    """Hour ``hour`` of 2023 as a UTC date and time, e.g. ``Jan 05 04:00 UTC``."""
    when = datetime(2023, 1, 1, tzinfo=timezone.utc) + timedelta(hours=hour)
    return when.strftime("%b %d %H:%M UTC")


def format_run(result: RunResult, names: Sequence[str], *, faults: bool | None = None) -> str:
    """The per-job table and the totals, in hours, dollars and kg CO2e (an ``egress $`` column
    and total when the run charged egress; with ``faults``, a ``restarts`` column and the
    restarts, wasted GPU-hours and wasted cost in the totals; under a preemption rule, a
    ``preempted`` column and the preemptions in the totals; under an elasticity rule, a
    ``resizes`` column, and the resizes, restarts and waste in the totals, zeros included).
    ``faults`` defaults to whether the run restarted or wasted anything; ``bacepipe
    simulate`` passes whether the scenario configured faults."""
    preempts = result.preemption != "none"
    elastic = result.elasticity != "none"
    if faults is None or preempts:
        faults = bool(faults) or result.n_restarts > 0 or result.wasted_gpu_hours > 0
    faults = faults or elastic
    head = [
        "job",
        "model",
        "dataset",
        "K*",
        "floor",
        "GPUs",
        "path",
        "wait h",
        "exec h",
        "JCT h",
        "cost $",
        "carbon kg",
    ]
    if result.egress:
        head.append("egress $")
    if faults:
        head.append("restarts")
    if preempts:
        head.append("preempted")
    if elastic:
        head.append("resizes")
    rows = []
    for r in result.records:
        row = [
            r.name,
            r.model,
            r.dataset,
            str(r.k_star),
            str(r.memory_floor),
            str(r.n_gpus),
            r.placement.describe(names),
            f"{hours(r.wait):.2f}",
            f"{hours(r.execution):.2f}",
            f"{hours(r.jct):.2f}",
            f"{r.cost:,.2f}",
            f"{r.carbon:,.2f}",
        ]
        if result.egress:
            row.append(f"{r.egress_cost:,.2f}")
        if faults:
            row.append(str(r.restarts))
        if preempts:
            row.append(str(r.preemptions))
        if elastic:
            row.append(str(r.resizes))
        rows.append(row)
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    text = {0, 1, 2, 6}  # the other columns are numbers, right-aligned

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i in text else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    out = [line(head), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
    out.append("")
    memory = "memory ignored" if result.ignore_memory else "memory checked"
    tariff = "flat prices"  # constant in time: no start hour to report
    if result.prices != "flat":
        tariff = (
            f"{result.prices} prices from hour {result.start_hour:g} of 2023 "
            f"({_hour_of_2023(result.start_hour)})"
        )
    if result.egress:
        tariff += ", egress charged"
    out.append(
        f"scenario {result.scenario}, policy {result.policy}, {len(rows)} jobs, "
        f"{result.admission} admission, "
        + (f"{result.preemption} preemption, " if preempts else "")
        + (f"{result.elasticity} elasticity, " if elastic else "")
        + f"{memory}, {tariff}"
        + (f", {result.model} model" if result.model != "paper" else "")
    )
    out.append(f"  average JCT      {hours(result.avg_jct):12.2f} h")
    out.append(f"  JCT p50          {hours(result.jct_p50):12.2f} h")
    out.append(f"  JCT p95          {hours(result.jct_p95):12.2f} h")
    out.append(f"  JCT p99          {hours(result.jct_p99):12.2f} h")
    out.append(f"  mean slowdown    {result.mean_slowdown:12.2f} x")
    out.append(f"  total cost       {result.total_cost:12,.2f} $")
    if result.egress:
        out.append(f"  egress cost      {result.total_egress_cost:12,.2f} $")
    if preempts:
        out.append(f"  preemptions      {result.n_preemptions:12d}")
    if elastic:
        out.append(f"  resizes          {result.n_resizes:12d}")
    if faults:
        out.append(f"  restarts         {result.n_restarts:12d}")
        out.append(f"  wasted GPU-hours {result.wasted_gpu_hours:12,.2f} GPU-h")
        out.append(f"  wasted cost      {result.wasted_cost:12,.2f} $")
    if result.prices == "flat" and result.total_carbon == 0 and result.records:
        # flat carbon intensity of 0 in every region: the scenario carries no carbon data
        out.append("  total carbon              n/a (the scenario has no carbon data)")
    else:
        out.append(f"  total carbon     {result.total_carbon:12,.2f} kg CO2e")
    out.append(f"  makespan         {hours(result.makespan):12.2f} h")
    out.append(f"  GPU utilisation  {100 * result.gpu_utilization:12.1f} %")
    return "\n".join(out)
