"""Per-policy statistics over seeds, absolute and normalised to a reference policy, and
:func:`format_run`, the text ``bacepipe simulate`` prints for one run."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..core.metrics import ordered
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
    configured faults or a preemption rule; ``preemptions`` only under a preemption rule;
    ``miss_rate`` and ``tardiness_h`` (the share of jobs that missed their deadline, the
    hours they were late in total, semantics §15) only when some job had a deadline."""

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
    miss_rate: Estimate | None = None
    tardiness_h: Estimate | None = None

    def row(self) -> dict[str, Any]:
        """A flat dict for CSV/JSON (NaN CIs when there is one seed): ``<key>_mean`` and
        ``<key>_ci95`` of each estimate, keyed as :data:`~bacepipe_env.core.metrics.METRICS`
        keys its metric (or its ratio); those the runs did not show (None) are left out."""
        out: dict[str, Any] = {"policy": self.policy, "n_seeds": self.jct_h.n}
        for f in fields(self)[1:]:  # in field order
            est = getattr(self, f.name)
            if est is not None:
                out[f"{_STAT_KEYS[f.name]}_mean"] = est.mean
                out[f"{_STAT_KEYS[f.name]}_ci95"] = est.ci95
        return out


#: PolicyStats' estimate fields and their keys: each metric's and its ratio's.
_STAT_KEYS = {
    name: key
    for m in ordered("stats")
    for name, key in ((m.stat, m.key), (m.norm, m.norm_key))
    if name
}
assert {f.name for f in fields(PolicyStats)} - {"policy"} == set(_STAT_KEYS), (
    "PolicyStats' fields != METRICS' stat and norm fields"
)


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
    shows = {"always"}
    if egress_charged(runs) if egress is None else egress:
        shows.add("egress")
    if faults_configured(runs) if faults is None else faults:
        shows.add("faults")
    if preemption_configured(runs):
        shows.add("preemption")
    if any(run.deadlines for run in runs):
        shows.add("deadlines")
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
        est: dict[str, Estimate] = {}
        for m in ordered("stats", shows):
            est[m.stat] = estimate([float(getattr(seeds[s], m.key)) for s in order])
            if m.norm:
                ratios = [_ratio(getattr(seeds[s], m.key), getattr(ref[s], m.key)) for s in order]
                est[m.norm] = estimate(ratios)
        out.append(PolicyStats(policy, **est))
    return out


def _pm(est: Estimate, fmt: str) -> str:
    if math.isnan(est.mean):
        return "-"
    if math.isnan(est.ci95):
        return format(est.mean, fmt)
    return f"{format(est.mean, fmt)} ± {format(est.ci95, fmt)}"


def format_table(stats: Sequence[PolicyStats], reference: str) -> str:
    """A text table: mean ± 95% CI half-width, absolute (the ``column`` of each
    :data:`~bacepipe_env.core.metrics.METRICS` row that some of ``stats`` has: JCT, cost,
    carbon and, when it was charged, egress; under a preemption rule, preemptions; when
    faults were configured, restarts and wasted cost) and relative to ``reference`` (JCT,
    cost, carbon)."""
    columns = [m for m in ordered("column") if any(getattr(s, m.stat) is not None for s in stats)]
    norms = [m for m in ordered("column") if m.norm]
    head = ["policy", *(m.column for m in columns)]
    head += [f"{m.norm_label} / {reference}" for m in norms]
    rows = []
    for s in stats:
        row = [s.policy]
        for m in columns:
            est = getattr(s, m.stat)
            row.append("-" if est is None else _pm(est, m.column_fmt))
        row += [_pm(getattr(s, m.norm), ".3f") for m in norms]
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


def write_csv(
    path: str | Path, rows: Sequence[dict[str, Any]], *, field: str | None = None
) -> None:
    """Write dict rows to ``path`` (columns: union of keys, first-seen order), whole or not
    at all (:func:`bacepipe_env.outputs.write_text`; a path it cannot write is one line
    naming ``field``)."""
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    write_text(path, buffer.getvalue(), field=field)


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
    on = {"egress": result.egress, "preemption": preempts, "elastic": elastic, "faults": faults}
    on["deadlines"] = result.deadlines
    shows = {"always", *(condition for condition, yes in on.items() if yes)}
    out += [metric.line(result) for metric in ordered("summary", shows)]
    return "\n".join(out)
