"""``bacepipe reproduce``: every quantitative claim of the paper's Section IV, under four
simulator semantics, as one generated report (``reproduction.md`` plus Fig. 4-8 style PNGs).

The runs reuse the experiment machinery (:func:`expand`, :func:`run_all`, :func:`summarise`,
:func:`estimate` and the chart helpers); the report is a pure function of the seeds, so the same
command writes the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.admission import ADMISSION_RULES
from ..core.scenario import Scenario
from ..core.simulator import JobRecord, RunResult
from ..core.tariff import DEFAULT_EGRESS_USD_PER_GB
from ..core.units import GBPS_PER_BYTE_PER_S, hours
from ..errors import BacepipeError, ScenarioError, ValidationError
from ..outputs import write_text
from ..policies import bace_pipe
from ..policies.base import Policy
from ..policies.registry import make_policy
from ..scenarios.loader import load_scenario
from .claims import (
    ABLATIONS,
    BASELINES,
    CLAIMS,
    DEFAULT,
    FIGURES,
    LABEL,
    REFERENCE,
    Claim,
    Point,
    Verdict,
    claim_groups,
    failing_claims,
    verdict,
)
from .experiments import SWEEPS, check_seeds
from .plots import bar_chart, grouped_bar_chart, sweep_chart
from .preempt_ranking import PreemptRanking, run_ranking
from .preempt_ranking import render as render_preemption
from .report_text import markdown_table as _table
from .report_text import seed_range as _seed_range
from .report_text import seeds_text
from .report_text import wrap_prose as _wrap
from .runner import RayBackend, RunSpec, RunSummary, expand, run_all
from .summary import PolicyStats, summarise

__all__ = [
    "ABLATIONS",
    "BASELINES",
    "CLAIMS",
    "SCENARIOS",
    "SEMANTICS",
    "Claim",
    "ReproduceOutcome",
    "RowRuns",
    "Semantics",
    "Verdict",
    "cell_text",
    "failing_claims",
    "render_report",
    "run_reproduce",
    "run_rows",
    "seeds_text",
    "verdict",
]


SCENARIOS = ("paper", "paper-aws")


@dataclass(frozen=True)
class Semantics:
    """How the simulator treats GPU memory and admission ([semantics §3a, §3b](semantics.md))."""

    name: str
    knobs: tuple[tuple[str, Any], ...]  # load_scenario keywords
    about: str

    @property
    def kwargs(self) -> dict[str, Any]:
        """The knobs as load_scenario keywords."""
        return dict(self.knobs)

    @property
    def memory(self) -> bool:
        """Whether GPU memory is checked."""
        return not self.kwargs["ignore_memory"]


SEMANTICS = (
    Semantics(
        "ignore-memory + greedy",
        (("admission", "greedy"), ("ignore_memory", True)),
        "the paper as printed: any GPU count may start, Alg. 1 never waits",
    ),
    Semantics(
        "greedy",
        (("admission", "greedy"), ("ignore_memory", False)),
        "memory checked; a job starts whenever a placement that fits exists",
    ),
    Semantics(
        "finish-aware",
        (("admission", "finish-aware"), ("ignore_memory", False)),
        "memory checked; a job waits for the next release when that finishes it earlier",
    ),
    Semantics(
        "full",
        (("admission", "full"), ("ignore_memory", False)),
        "memory checked; a job starts only with the GPUs it would get on the idle cluster",
    ),
)

#: The default world the charts and the egress table show: memory checked, greedy admission.
CHART_SEMANTICS = SEMANTICS[1]
#: The default world with cross-region egress charged at AWS's inter-region rate (semantics §10).
EGRESS: Point = ("egress", DEFAULT_EGRESS_USD_PER_GB)


def points() -> list[tuple[Point, tuple[str, ...]]]:
    """Every experiment point with the policies run there: the default world with the
    baselines and the ablations (Figs. 4, 8), then every sweep value with the baselines."""
    out: list[tuple[Point, tuple[str, ...]]] = [(DEFAULT, (REFERENCE, *BASELINES, *ABLATIONS))]
    for kind, (_, values, _) in SWEEPS.items():
        out += [((kind, float(v)), (REFERENCE, *BASELINES)) for v in values]
    return out


def _knobs(sem: Semantics, point: Point) -> dict[str, Any]:
    kind, value = point
    if kind == "default":
        return sem.kwargs
    if kind == "egress":
        return {**sem.kwargs, "egress_usd_per_gb": value}
    knob = SWEEPS[kind][0]
    return {**sem.kwargs, knob: int(value) if knob == "n_jobs" else value}


@dataclass
class RowRuns:
    """The runs of one semantics on one scenario, by point, policy and seed."""

    semantics: Semantics
    scenario: str
    seeds: tuple[int, ...]
    runs: dict[Point, dict[str, dict[int, RunSummary]]]

    def jct(self, point: Point, policy: str, seed: int) -> float:
        """Average JCT (h) of a policy on a seed at a point."""
        return self.runs[point][policy][seed].avg_jct_h

    def cost(self, point: Point, policy: str, seed: int) -> float:
        """Total cost ($) of a policy on a seed at a point."""
        return self.runs[point][policy][seed].total_cost_usd

    def stats(self, point: Point) -> list[PolicyStats]:
        """Per-policy statistics at a point, normalised to BACE-Pipe (summary.summarise)."""
        return summarise(
            [r for by_seed in self.runs[point].values() for r in by_seed.values()], REFERENCE
        )

    @property
    def label(self) -> str:
        """``semantics / scenario``."""
        return f"{self.semantics.name} / {self.scenario}"


def specs_for(sem: Semantics, scenario: str, seeds: Sequence[int]) -> list[RunSpec]:
    """Every run of one row, tagged with its point; the default world's row (greedy, memory
    checked) also runs the default-world policies with egress charged."""
    out = []
    pts = points()
    if sem == CHART_SEMANTICS:
        pts.append((EGRESS, pts[0][1]))
    for point, policies in pts:
        tag = {"semantics": sem.name, "point": point[0], "value": point[1]}
        out += expand(policies, scenario, seeds, _knobs(sem, point), tag)
    return out


def run_rows(
    seeds: Sequence[int], *, workers: int | RayBackend = 1, progress: bool | None = None
) -> list[RowRuns]:
    """Run every row (semantics x scenario) in one :func:`run_all` call."""
    cells = [(sem, sc) for sem in SEMANTICS for sc in SCENARIOS]
    specs = [s for sem, sc in cells for s in specs_for(sem, sc, seeds)]
    results = run_all(specs, workers=workers, label="reproduce", progress=progress)
    rows = {(sem.name, sc): RowRuns(sem, sc, tuple(seeds), {}) for sem, sc in cells}
    for r in results:
        row = rows[(r.spec.tag["semantics"], r.spec.scenario)]
        point = (r.spec.tag["point"], r.spec.tag["value"])
        row.runs.setdefault(point, {}).setdefault(r.spec.policy, {})[r.spec.seed] = r
    return list(rows.values())


# --- formatting ---------------------------------------------------------------------------


def _num(x: float, signed: bool = True) -> str:
    """One decimal; small non-zero values with two significant digits so their sign shows."""
    if x == 0.0:
        return "0.0"
    if abs(x) < 0.05:
        text = f"{x:.2g}"
        return f"+{text}" if signed and x > 0 else text
    return f"{x:+,.1f}" if signed else f"{x:,.1f}"


def cell_text(v: Verdict) -> str:
    """``+3.6 ± 57.6 ✓``: the mean, the 95% CI half-width and the mark."""
    if math.isnan(v.est.ci95):
        return f"{_num(v.est.mean)} {v.mark}"
    return f"{_num(v.est.mean)} ± {_num(v.est.ci95, signed=False)} {v.mark}"


def _h(x: float) -> str:
    return f"{x:,.1f} h"


def _usd(x: float) -> str:
    return f"${x:,.0f}" if abs(x) >= 100 else f"${x:,.2f}"


def _rank(n: int, which: str) -> str:
    """``the largest``, ``the 2nd largest``, ..."""
    return f"the {which}" if n == 1 else f"the {_ordinal(n)} {which}"


def _seeds_words(seeds: Sequence[int]) -> str:
    return f"seed{'s' if len(seeds) > 1 else ''} {_seed_range(seeds)}"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _point_words(point: Point) -> str:
    kind, value = point
    if kind == "default":
        return "the default world"
    if kind == "jobs":
        return f"{int(value)} jobs"
    return f"{'GPUs' if kind == 'gpu' else kind} x{value:g}"


# --- per-job records for the mechanisms -----------------------------------------------------


class _Records:
    """Per-job records of single runs. :class:`RunSummary` keeps only a run's totals, so the
    few runs a mechanism shows are simulated again (deterministic: the same totals)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[Any, ...], tuple[Scenario, RunResult]] = {}

    def get(self, row: RowRuns, point: Point, policy: str, seed: int) -> tuple[Scenario, RunResult]:
        key = (row.semantics.name, row.scenario, point, policy, seed)
        if key not in self._cache:
            scenario = load_scenario(row.scenario, seed=seed, **_knobs(row.semantics, point))
            self._cache[key] = (scenario, make_policy(policy, seed=seed).simulate(scenario))
        return self._cache[key]

    def agg(self, row: RowRuns, point: Point, policy: str) -> _Agg:
        """Per-job means over the row's seeds."""
        waits, execs, gpus, waiting, gpu_h, price = [], [], [], [], [], []
        for seed in row.seeds:
            scenario, res = self.get(row, point, policy, seed)
            recs = res.records
            n = len(recs)
            waits.append(math.fsum(hours(r.wait) for r in recs) / n)
            execs.append(math.fsum(hours(r.execution) for r in recs) / n)
            gpus.append(sum(r.n_gpus for r in recs) / n)
            waiting.append(sum(r.wait > 0 for r in recs) / n)
            gh = math.fsum(r.n_gpus * hours(r.execution) for r in recs)
            gpu_h.append(gh)
            price.append(res.total_cost / (gh * scenario.cluster.power_kw))

        def mean(xs: list[float]) -> float:
            return math.fsum(xs) / len(xs)

        return _Agg(mean(waits), mean(execs), mean(gpus), mean(waiting), mean(gpu_h), mean(price))


@dataclass(frozen=True)
class _Agg:
    wait_h: float  # mean wait per job
    exec_h: float  # mean execution per job
    gpus: float  # mean GPUs per job
    waiting: float  # share of jobs that wait at all
    gpu_h: float  # GPU-hours per run
    price: float  # $/kWh paid on average: cost / (GPU-hours * power)


def _job_price(scenario: Scenario, rec: JobRecord) -> float:
    """The average $/kWh a job's GPUs pay."""
    prices = scenario.cluster.prices
    p = rec.placement
    return math.fsum(prices[r] * n for r, n in zip(p.path, p.gpus)) / p.n_gpus


# --- mechanisms of the claims no row reproduces ---------------------------------------------


def _short_row(row: RowRuns) -> str:
    return f"{row.semantics.name} / {row.scenario}"


def _mechanism(group: Sequence[Claim], rows: Sequence[RowRuns], rec: _Records) -> list[str]:
    printed = rows[0]  # the paper as printed, on the paper's scenario
    est = {c.id: [verdict(c, r).est for r in rows] for c in group}
    main = min(group, key=lambda c: (est[c.id][0].mean, c.id))
    seeds = printed.seeds

    def mean_q(p: str) -> float:
        return math.fsum(main.policy_quantity(printed, s, p) for s in seeds) / len(seeds)

    pol = min(main.policies, key=lambda p: (mean_q(p), p))
    ref = main.ref
    means = [e.mean for c in group for e in est[c.id]]
    ids = ", ".join(f"`{c.id}`" for c in group)
    lines = [f"### {ids}", ""]
    papers = list(dict.fromkeys(c.paper for c in group))
    if len(papers) == 1:
        words = f"{'; '.join(c.words for c in group)} (paper: {papers[0]})"
    else:
        words = "; ".join(f"{c.words} (paper: {c.paper})" for c in group)
    lines.append(
        f"The paper: {words}. No row has the paper's sign: across the {len(rows)} rows the "
        f"means run from {_num(min(means))} to {_num(max(means))}"
        f"{' points' if main.trend else '%'}."
    )
    lines.append("")
    lines += _decomposition(main, pol, rows, rec)
    lines.append("")
    if main.metric == "cost" and ref == REFERENCE and not main.trend:
        lines += _cost_story(main, pol, rows, rec)
    elif main.metric == "jct" and ref == REFERENCE and main.trend:
        lines += _queue_story(main, pol, rows, rec)
    lines += _example(main, pol, printed, rec)
    return lines


def _decomposition(claim: Claim, pol: str, rows: Sequence[RowRuns], rec: _Records) -> list[str]:
    R, A = LABEL[claim.ref], LABEL[pol]
    head = ["row"]
    for point in claim.points:
        at = f", {_point_words(point)}" if claim.trend else ""
        if claim.metric == "cost":
            head += [f"{R} GPU-h{at}", f"{R} $/kWh{at}", f"{A} GPU-h{at}", f"{A} $/kWh{at}"]
        else:
            head += [f"{R} wait h{at}", f"{R} exec h{at}", f"{A} wait h{at}", f"{A} exec h{at}"]
    head.append(f"`{claim.id}`")
    body = []
    for row in rows:
        cells = [_short_row(row)]
        for point in claim.points:
            for p in (claim.ref, pol):
                a = rec.agg(row, point, p)
                if claim.metric == "cost":
                    cells += [f"{a.gpu_h:,.0f}", f"{a.price:.3f}"]
                else:
                    cells += [f"{a.wait_h:,.1f}", f"{a.exec_h:,.1f}"]
        cells.append(cell_text(verdict(claim, row)))
        body.append(cells)
    what = (
        "GPU-hours per run and the average price they pay"
        if claim.metric == "cost"
        else "mean wait and mean execution per job"
    )
    out = [
        f"Where the difference comes from, {what} (means over {_seeds_words(rows[0].seeds)}; "
        f"{A} is the policy of `{claim.id}`, the claim of this group furthest from the paper on "
        "the printed row):",
        "",
    ]
    return out + _table(head, body, "l" + "r" * (len(head) - 1))


def _cost_story(claim: Claim, pol: str, rows: Sequence[RowRuns], rec: _Records) -> list[str]:
    point = claim.points[0]
    R, A = LABEL[claim.ref], LABEL[pol]
    r_agg = [rec.agg(row, point, claim.ref) for row in rows]
    a_agg = [rec.agg(row, point, pol) for row in rows]
    dearer = sum(r.price > a.price for r, a in zip(r_agg, a_agg))
    more = sum(r.gpu_h > a.gpu_h for r, a in zip(r_agg, a_agg))
    r0, a0 = r_agg[0], a_agg[0]
    if r0.price > a0.price and r0.gpu_h <= a0.gpu_h:
        why = "from the price it pays, not from GPU-hours (it runs fewer)"
    elif r0.gpu_h > a0.gpu_h and r0.price <= a0.price:
        why = "from GPU-hours, not from the price"
    elif r0.gpu_h > a0.gpu_h:
        why = "from both more GPU-hours and a higher price"
    else:
        why = "from neither mean alone (the ratio is taken seed by seed)"
    return [
        "Eq. (4) makes a run's cost its GPU-hours times the average price its GPUs pay "
        f"(times {_power(rows[0]):g} kW per GPU). On the printed row at "
        f"{_point_words(point)}, {R} runs {r0.gpu_h:,.0f} GPU-h at ${r0.price:.3f}/kWh on "
        f"average and {A} {a0.gpu_h:,.0f} GPU-h at ${a0.price:.3f}/kWh: the gap comes {why}. "
        f"{R} pays the higher average price in {dearer} of the {len(rows)} rows and runs more "
        f"GPU-hours in {more}.",
        "",
    ]


def _power(row: RowRuns) -> float:
    return load_scenario(row.scenario, seed=row.seeds[0], **row.semantics.kwargs).cluster.power_kw


def _queue_story(claim: Claim, pol: str, rows: Sequence[RowRuns], rec: _Records) -> list[str]:
    p0, p1 = claim.points
    R, A = LABEL[claim.ref], LABEL[pol]
    grows = 0
    for row in rows:
        d0 = rec.agg(row, p0, pol).wait_h - rec.agg(row, p0, claim.ref).wait_h
        d1 = rec.agg(row, p1, pol).wait_h - rec.agg(row, p1, claim.ref).wait_h
        grows += d1 > d0
    printed = rows[0]
    a0, a1 = rec.agg(printed, p0, pol), rec.agg(printed, p1, pol)
    r0, r1 = rec.agg(printed, p0, claim.ref), rec.agg(printed, p1, claim.ref)
    w0, w1 = _point_words(p0), _point_words(p1)
    out = [
        f"A job's JCT is its wait plus its execution (Eq. 3), and every job is submitted at "
        f"t = 0. On the printed row the share of jobs that wait at all grows from "
        f"{100 * a0.waiting:.0f}% at {w0} to {100 * a1.waiting:.0f}% at {w1} under {A} "
        f"({100 * r0.waiting:.0f}% to {100 * r1.waiting:.0f}% under {R}); {A}'s mean wait goes "
        f"from {_h(a0.wait_h)} to {_h(a1.wait_h)} and {R}'s from {_h(r0.wait_h)} to "
        f"{_h(r1.wait_h)}, while their mean execution goes from {_h(a0.exec_h)} to "
        f"{_h(a1.exec_h)} and from {_h(r0.exec_h)} to {_h(r1.exec_h)}. {A}'s wait exceeds "
        f"{R}'s by more at {w1} than at {w0} in {grows} of the {len(rows)} rows."
    ]
    if 2 * grows > len(rows):
        out.append(
            f" The longer the queue, the more an order matters: Eq. (12) runs jobs with a "
            f"small E(1) first while the network is idle, which saves more waiting against "
            f"{A}'s submission order the more jobs wait (the shortest-job-first effect). The "
            "paper reads the narrowing gap as saturation leaving little to schedule; in this "
            "model, with every job queued at t = 0, the saturated cluster is where the order "
            "matters most."
        )
    return ["".join(out), ""]


def _example(claim: Claim, pol: str, row: RowRuns, rec: _Records) -> list[str]:
    point = claim.points[-1]
    seed = min(row.seeds, key=lambda s: (claim.policy_quantity(row, s, pol), s))
    R, A = LABEL[claim.ref], LABEL[pol]
    scenario, r_res = rec.get(row, point, claim.ref, seed)
    _, a_res = rec.get(row, point, pol, seed)
    a_by_id = {r.job_id: r for r in a_res.records}
    names = scenario.cluster.names
    profiles = scenario.profiles

    def metric(r: JobRecord) -> float:
        return r.cost if claim.metric == "cost" else hours(r.jct)

    def lead(r: JobRecord) -> tuple[bool, float, int]:
        """How much the reference is behind on this job (ahead, for a failed trend)."""
        a = a_by_id[r.job_id]
        if not claim.trend:
            return True, metric(r) - metric(a), -r.job_id
        if claim.metric == "jct":  # the queue: of the jobs it finishes sooner, the wait it cuts
            return a.jct > r.jct, hours(a.wait) - hours(r.wait), -r.job_id
        return True, metric(a) - metric(r), -r.job_id

    job = max(r_res.records, key=lead)
    a_job = a_by_id[job.job_id]
    e1 = {r.job_id: hours(profiles[r.job_id].single_gpu_exec) for r in r_res.records}
    n = len(r_res.records)
    rank_large = 1 + sum(v > e1[job.job_id] for v in e1.values())
    rank_small = 1 + sum(v < e1[job.job_id] for v in e1.values())

    def fmt(x: float) -> str:
        return _usd(x) if claim.metric == "cost" else _h(x)

    def where(r: JobRecord) -> str:
        return (
            f"starts it after {_h(hours(r.wait))} on {r.placement.describe(names)} "
            f"({r.n_gpus} GPUs, ${_job_price(scenario, r):.3f}/kWh) and it runs "
            f"{_h(hours(r.execution))}"
        )

    what = "costs" if claim.metric == "cost" else "has a JCT of"
    if not claim.trend:
        why, rank = f"the job where {R} loses most", _rank(rank_large, "largest")
    else:
        if claim.metric == "jct":
            why = f"of the jobs {R} finishes sooner, the one whose wait it cuts most"
        else:
            why = f"the job where {R} gains most on {A}"
        rank = _rank(rank_small, "smallest")
    out = [
        f"An example from seed {seed} of the printed row at {_point_words(point)} (the seed "
        f"where `{claim.id}` is furthest from the paper for {A}; {why}): **{job.name}** "
        f"({job.model} on {job.dataset}, E(1) = {_h(e1[job.job_id])}, {rank} of {n}) {what} "
        f"{fmt(metric(job))} under {R} against {fmt(metric(a_job))} under {A}. {R} "
        f"{where(job)}; {A} {where(a_job)}."
    ]
    if claim.metric == "cost" and claim.ref == REFERENCE and not claim.trend:
        cheap = min(a_job.placement.path, key=lambda r: (scenario.cluster.prices[r], r))
        holders = [
            r.name
            for r in r_res.records
            if r.job_id != job.job_id
            and cheap in r.placement.path
            and r.start_time <= job.start_time
        ]
        if holders and _job_price(scenario, job) > _job_price(scenario, a_job):
            out.append(
                f" Under {R}, {names[cheap]} (${scenario.cluster.prices[cheap]:.3f}/kWh, "
                f"where {A} runs it) goes to {', '.join(holders)}, which start no later than "
                f"{job.name}."
            )
            if rank_large <= 2:
                pos = "last" if rank_large == 1 else "second to last"
                out.append(
                    f" Eq. (12) ranks {job.name} {pos} while no bandwidth is reserved "
                    "(alpha = 0 at t = 0, so the score is `1 - E(1) / max E(1)`); Pathfinder "
                    "then places it on what is left: Alg. 1's phase 1 takes the cheapest "
                    "region that still holds K* GPUs, phase 2 the path with the most GPUs, "
                    f"whatever its price. {A} places jobs in submission order. The job runs "
                    f"{_h(hours(job.execution))}, so where it runs decides much of the run's cost."
                )
    if claim.trend and claim.metric == "jct" and hours(a_job.wait) > hours(job.wait):
        order = [r.job_id for r in sorted(a_res.records, key=lambda r: (r.submit_time, r.job_id))]
        k = order.index(job.job_id)
        before = set(order[:k])
        ahead = sum(
            1 for r in a_res.records if r.job_id in before and r.start_time <= a_job.start_time
        )
        out.append(
            f" {A} serves the queue in submission order: {job.name} is {_ordinal(k + 1)} of "
            f"{n}, and {ahead} of the {k} jobs before it start no later than it does."
        )
    return ["".join(out), "", *_job_table(claim, pol, r_res, a_res, scenario, job.job_id), ""]


def _job_table(
    claim: Claim,
    pol: str,
    r_res: RunResult,
    a_res: RunResult,
    scenario: Scenario,
    job_id: int,
) -> list[str]:
    R, A = LABEL[claim.ref], LABEL[pol]
    names = scenario.cluster.names
    a_by_id = {r.job_id: r for r in a_res.records}
    records = list(r_res.records)
    note = ""
    if len(records) > 8:

        def diff(r: JobRecord) -> float:
            a = a_by_id[r.job_id]
            return abs(r.cost - a.cost) if claim.metric == "cost" else abs(r.jct - a.jct)

        keep = {r.job_id for r in sorted(records, key=lambda r: (-diff(r), r.job_id))[:8]}
        keep.add(job_id)
        records = [r for r in records if r.job_id in keep]
        note = f"The {len(records)} jobs whose {claim.metric.upper()} differs most:"
    head = ["job", "model", "dataset", "E(1) h"]
    for who in (R, A):
        head += [f"{who} path", "wait h", "exec h", "JCT h", "cost $"]
    body = []
    for r in records:
        a = a_by_id[r.job_id]
        name = f"**{r.name}**" if r.job_id == job_id else r.name
        cells = [
            name,
            r.model,
            r.dataset,
            f"{hours(scenario.profiles[r.job_id].single_gpu_exec):,.1f}",
        ]
        for x in (r, a):
            cells += [
                x.placement.describe(names),
                f"{hours(x.wait):,.1f}",
                f"{hours(x.execution):,.1f}",
                f"{hours(x.jct):,.1f}",
                f"{x.cost:,.1f}",
            ]
        body.append(cells)
    out = [note, ""] if note else []
    return out + _table(head, body, "lllr" + "lrrrr" * 2)


# --- Fig. 1 ---------------------------------------------------------------------------------

_FIG1_PAPER = {
    "lcf": "C(2), B(3); 1.50 h, $0.53",
    "ldf": "A(4), B(3); 1.32 h, $0.56",
    "bace-pipe": '"Ours (FCFS)" A4+C2, B3; 1.27 h, $0.55',
    "bace-pipe+partial": "-",
}


def _fig1_policies() -> list[tuple[str, str, Policy]]:
    return [
        ("lcf", "LCF", make_policy("lcf")),
        ("ldf", "LDF", make_policy("ldf")),
        ("bace-pipe", "BACE-Pipe", make_policy("bace-pipe")),
        ("bace-pipe+partial", "BACE-Pipe, `--partial-take`", bace_pipe(partial_take=True)),
    ]


def _fig1_runs(knobs: Mapping[str, Any]) -> list[tuple[str, str, RunResult, Scenario]]:
    scenario = load_scenario("fig1", **knobs)
    return [(key, label, pol.simulate(scenario), scenario) for key, label, pol in _fig1_policies()]


def _fig1_error(sem: Semantics) -> str | None:
    """The ScenarioError that loading ``fig1`` under ``sem`` raises, or None if it loads."""
    try:
        load_scenario("fig1", **sem.kwargs)
    except ScenarioError as err:
        return str(err)
    return None


def _describe(res: RunResult, scenario: Scenario) -> dict[str, str]:
    return {r.name: r.placement.describe(scenario.cluster.names) for r in res.records}


def _fig1_section() -> list[str]:
    out = [
        "## Fig. 1: the motivation example",
        "",
        'The `fig1` scenario under each semantics (`load_scenario("fig1", ignore_memory=..., '
        "admission=...)`, then `make_policy(name).simulate(...)`):",
        "",
    ]
    body = []
    for sem in SEMANTICS:
        err = _fig1_error(sem)
        if err is None:
            runs = _fig1_runs(sem.kwargs)
            parts = []
            for key, label, res, sc in runs:
                if key == "bace-pipe+partial":
                    continue
                d = _describe(res, sc)
                parts.append(
                    f"{label}: P on {d['P']}, Q on {d['Q']}, {_h(hours(res.avg_jct))}, "
                    f"${res.total_cost:.2f}"
                )
            body.append([sem.name, "runs; " + "; ".join(parts)])
        else:
            body.append([sem.name, f"infeasible: loading raises `ScenarioError: {err}`"])
    out += _table(["semantics", "Fig. 1 example"], body)
    out += [
        "",
        "Under the paper's literal semantics (memory ignored, greedy admission), in detail:",
        "",
    ]
    body = []
    for key, label, res, sc in _fig1_runs(SEMANTICS[0].kwargs):
        d = _describe(res, sc)
        body.append(
            [
                label,
                d["P"],
                d["Q"],
                f"{hours(res.avg_jct):.2f} h",
                f"${res.total_cost:.2f}",
                _FIG1_PAPER[key],
            ]
        )
    out += _table(
        ["policy", "P (Qwen2.5-14B)", "Q (Llama-3.1-70B)", "avg JCT", "cost", "paper"],
        body,
        "llllrl",
    )
    out += [
        "",
        "For reference, the other admission rules with memory still ignored "
        '(`load_scenario("fig1", admission=...)`; the file sets `ignore_memory`):',
        "",
    ]
    body = []
    for rule in ADMISSION_RULES:
        cells = [rule]
        for key, _, res, sc in _fig1_runs({"admission": rule, "ignore_memory": True}):
            if key == "bace-pipe+partial":
                continue
            d = _describe(res, sc)
            cells.append(
                f"P {d['P']}, Q {d['Q']}; {hours(res.avg_jct):.2f} h, ${res.total_cost:.2f}"
            )
        body.append(cells)
    out += _table(["admission", "LCF", "LDF", "BACE-Pipe"], body)
    out += ["", *_FIG1_WALKTHROUGH.strip("\n").split("\n"), ""]
    return out


# Static prose: every number below follows from Eq. (1) and the fig1/paper files; the tests
# recompute them (tests/experiments/test_exp_reproduce.py).
_FIG1_WALKTHROUGH = """
LCF and LDF place exactly as the paper's text says. **What BACE-Pipe does, and why** (memory
ignored). At t = 0 nothing is reserved, so alpha = 0 and Eq. (12) ranks by `E(1)` alone: P
(26.9 h on one GPU) before Q (134.0 h). This is the paper's "FCFS" order, not its "Reordered"
one ([semantics §8](semantics.md)). No region holds K* (48 for P, 80 for Q), so Pathfinder's phase 2
runs:

- **P.** From A (4 GPUs), the widest link is A-C at 1000 Mbps. Appending C would give 6 GPUs
  and needs `A_P / 125 MB/s = 20.97 MB / 125 MB/s = 0.168 s <= t_comp(6) = 0.154 s`, which
  fails. Every other start is smaller, so P runs on A:4.
- **Q.** From B (3 GPUs), the widest link to a region with free GPUs is B-C at 400 Mbps. The
  check is `33.55 MB / 50 MB/s = 0.671 s <= t_comp(5) = 0.926 s`, which passes. Then C-D at
  300 Mbps would need `0.895 s <= t_comp(7) = 0.661 s`, which fails. The start C gives the
  same 5 GPUs at the same price, and the earlier start is kept. So Q runs on B:3 > C:2.

The paper's "Ours" placement for P (A4 + C2) needs the A-C link to pass a check it fails by
9% under Eq. (1)'s own `t_comp`. With `partial_take`, P takes A:4 + C:1 (5 GPUs pass) and
Alg. 2 moves a GPU to the cheaper C. Absolute times are 14-20x the paper's: the paper's
Fig. 1 numbers imply a speed-up that Eq. (1) cannot produce ([semantics §8](semantics.md)). The
simulator
implements the equations, not those numbers. And the example cannot run at all once GPU
memory counts: Q's 1.1 TB of training state needs at least 27 A6000s, and the four regions
have 11 GPUs in all.
"""

_INTRO_EXAMPLE = """
## The introduction's example

A Llama-3.1-70B stage computes a micro-batch in `t_comp(80) = 57.9 ms` under these constants
(paper: "about 50 ms"). A 33.5 MB activation takes 1.34 s over 200 Mbps (paper: 30 MB in
1200 ms). The GPUs then idle `1 - 57.9 / 1342 = 95.7%` of the steady state (paper: "nearly
96%"), and the bottleneck stage is 23x slower (paper: "up to 24x"). Eq. (1) for one iteration
with M = 128 and 80 stages, one hop at 200 Mbps against all hops intra-region at 70 Gbps,
gives 14.4x. The fill-up term is not bottlenecked, so a finite iteration is less than 23x
slower.
"""

_NOT_CHASED = """
## What is not chased

- The paper's absolute percentages. The paper does not publish enough of its simulator to pin
  down its numbers; this report tests the direction of every claim and reports the size it
  measures.
- The Fig. 1 absolute numbers, which Eq. (1) cannot produce, and the "Ours" placements, which
  Alg. 1 as printed cannot produce for any K* ([semantics §8](semantics.md)).
- The introduction's "65% to 77%" electricity saving example, which has no setup to simulate.
"""


# --- charts ---------------------------------------------------------------------------------


def _select(stats: Sequence[PolicyStats], policies: Sequence[str]) -> list[PolicyStats]:
    by = {s.policy: s for s in stats}
    return [by[p] for p in policies]


def chart_names() -> list[tuple[str, str, str]]:
    """(file name, scenario, what) of every chart, in report order."""
    out = []
    for sc in SCENARIOS:
        out.append((f"compare-{sc}.png", sc, "compare"))
        out += [(f"sweep-{kind}-{sc}.png", sc, kind) for kind in SWEEPS]
        out.append((f"ablation-{sc}.png", sc, "ablation"))
        out.append((f"semantics-{sc}.png", sc, "semantics"))
    return out


def _charts(rows: Sequence[RowRuns], img: Path) -> tuple[list[Path], list[str]]:
    """Draw every chart into ``img``; a missing matplotlib is a warning, not an error."""
    by = {(r.semantics.name, r.scenario): r for r in rows}
    n = len(rows[0].seeds)
    written: list[Path] = []
    try:
        for name, sc, what in chart_names():
            row = by[(CHART_SEMANTICS.name, sc)]
            path = img / name
            world = f"{sc}, {CHART_SEMANTICS.name} (memory checked), {n} seeds"
            if what in ("compare", "ablation"):
                policies = (REFERENCE, *(BASELINES if what == "compare" else ABLATIONS))
                fig = "Fig. 4" if what == "compare" else "Fig. 8"
                written.append(
                    bar_chart(
                        _select(row.stats(DEFAULT), policies),
                        path,
                        f"{fig} style: {world}",
                        REFERENCE,
                    )
                )
            elif what in SWEEPS:
                _, values, xlabel = SWEEPS[what]
                vals = [float(v) for v in values]
                policies = (REFERENCE, *BASELINES)
                stats = {v: row.stats((what, v)) for v in vals}
                series = {LABEL[p]: [_select(stats[v], [p])[0] for v in vals] for p in policies}
                fig = {"bandwidth": "Fig. 5", "gpu": "Fig. 6", "jobs": "Fig. 7"}[what]
                written.append(
                    sweep_chart(
                        [int(v) if what == "jobs" else v for v in vals],
                        series,
                        path,
                        xlabel,
                        f"{fig} style: {world}",
                        LABEL[REFERENCE],
                    )
                )
            else:
                policies = (*BASELINES, *ABLATIONS)
                sem_series = {
                    sem.name: _select(by[(sem.name, sc)].stats(DEFAULT), policies)
                    for sem in SEMANTICS
                }
                written.append(
                    grouped_bar_chart(
                        [LABEL[p] for p in policies],
                        sem_series,
                        path,
                        f"each policy against BACE-Pipe under the four semantics: {sc}, "
                        f"default world, {n} seeds",
                        LABEL[REFERENCE],
                    )
                )
    except BacepipeError as err:
        return written, [str(err)]
    return written, []


# --- the report -----------------------------------------------------------------------------

_SEM_SHORT = {
    "ignore-memory + greedy": "ignore-memory",
    "greedy": "greedy",
    "finish-aware": "finish-aware",
    "full": "full",
}


def _col(row: RowRuns) -> str:
    return f"{_SEM_SHORT[row.semantics.name]} / {row.scenario}"


def _counts(row: RowRuns, claims: Sequence[Claim] = CLAIMS) -> tuple[int, int]:
    vs = [verdict(c, row) for c in claims]
    return sum(v.direction for v in vs), sum(v.significant for v in vs)


def render_report(rows: Sequence[RowRuns], preemption: PreemptRanking | None = None) -> str:
    """The whole report as markdown (a pure function of the runs; the preemption section only
    with its runs)."""
    seeds = rows[0].seeds
    n_claims = len(CLAIMS)
    cmd = f"bacepipe reproduce --out docs --seeds {seeds_text(seeds)}"
    n_runs = sum(
        len(by_seed)
        for row in rows
        for by_policy in row.runs.values()
        for by_seed in by_policy.values()
    )
    lines = [
        "# Reproducing the paper's evaluation",
        "",
        "<!-- Generated by `bacepipe reproduce`; do not edit by hand. -->",
        "",
        f"Every quantitative claim of Section IV of the BACE-Pipe paper (arXiv 2605.25375, "
        f"Figs. 4-8), {n_claims} in all, tested under four simulator semantics on two scenarios "
        f"({n_runs:,} simulations). "
        f"This report and its charts were written by `{cmd}` (the `--out` directory does not "
        f"change a byte of it), from {len(seeds)} seeds: {_seed_range(seeds)}. A seed draws each "
        "job's dataset. No constant was tuned to approach the paper's numbers: the scenario "
        "files carry the paper's Tables II and III and the [semantics](semantics.md) defaults "
        "(A6000 peak "
        "154.8 TFLOP/s, MFU 0.4, S = 2048, m = 1, 0.3 kW and 48 GB per GPU, 16 bytes of "
        "training state per parameter).",
        "",
        "The four semantics ([semantics §3a and §3b](semantics.md)), each run on `paper` "
        "(Table II, "
        "`B[i, j] = (B_i + B_j) / 2`) and on `paper-aws` (the same regions with measured AWS "
        "inter-region throughput):",
        "",
    ]
    for sem in SEMANTICS:
        knobs = ", ".join(f"{k}={v!r}" for k, v in sem.knobs)
        lines.append(f"- **{sem.name}**: {sem.about} (`load_scenario(..., {knobs})`).")
    lines += [
        "",
        "## How to read the numbers",
        "",
        "Every claim is turned into a per-seed quantity whose sign is the claim's direction: "
        'for "LCF has a longer average JCT than BACE-Pipe" it is `100 * (JCT_LCF / '
        'JCT_BACE-Pipe - 1)` on the same seed; for a trend ("the gap narrows") it is the '
        "difference of two such gaps, in percentage points. A cell is the mean of that "
        f"quantity over the {len(seeds)} seeds ± the half-width of its 95% Student-t interval, "
        "and a mark:",
        "",
        "- `✓✓` the mean has the paper's sign and the interval excludes zero;",
        "- `✓` the mean has the paper's sign, the interval includes zero;",
        "- `✗` the mean has the other sign, the interval includes zero;",
        "- `✗✗` the mean has the other sign and the interval excludes zero;",
        "- `=` the quantity is exactly zero on every seed (the two policies tie).",
        "",
        "Positive means the paper's direction in every cell, whatever the claim says in words. "
        "Values below 0.05 are printed with two significant digits: several are real but "
        "negligible differences (a different even split of one path, say), so a `✓` there "
        "means little.",
        "",
    ]
    lines += _summary(rows)
    lines += _big_table(rows)
    lines += ["", *_legend(), ""]
    lines += _row_summaries(rows)
    lines += _absolute(rows)
    lines += _egress(rows)
    if preemption is not None:
        lines += render_preemption(preemption)
    lines += _why_semantics(rows)
    lines += _per_figure(rows)
    lines += _mechanisms(rows)
    lines += _fig1_section()
    lines += _INTRO_EXAMPLE.strip("\n").split("\n")
    lines.append("")
    lines += _NOT_CHASED.strip("\n").split("\n")
    return "\n".join(_wrap(lines)).rstrip("\n") + "\n"


def _summary(rows: Sequence[RowRuns]) -> list[str]:
    body = []
    for row in rows:
        d, s = _counts(row)
        body.append([row.semantics.name, row.scenario, f"{d}/{len(CLAIMS)}", f"{s}/{len(CLAIMS)}"])
    failing = failing_claims(rows)
    if failing:
        none = (
            f"No row reproduces the direction of {len(failing)} claims: "
            f"{', '.join(f'`{c.id}`' for c in failing)}; their mechanisms are in "
            "[Claims no row reproduces](#claims-no-row-reproduces)."
        )
    else:
        none = "Every claim is reproduced in direction by at least one row."
    return [
        "## Summary",
        "",
        "Claims reproduced in direction, and those whose 95% interval also excludes zero, per "
        "semantics and scenario:",
        "",
        *_table(["semantics", "scenario", "direction", "CI excludes 0"], body, "llrr"),
        "",
        none,
        "",
    ]


def _big_table(rows: Sequence[RowRuns]) -> list[str]:
    head = ["semantics", "scenario", *(f"`{c.id}`" for c in CLAIMS), "direction", "CI excl. 0"]
    body = []
    for row in rows:
        d, s = _counts(row)
        body.append(
            [
                row.semantics.name,
                row.scenario,
                *(cell_text(verdict(c, row)) for c in CLAIMS),
                f"{d}/{len(CLAIMS)}",
                f"{s}/{len(CLAIMS)}",
            ]
        )
    return [
        "## The semantics table",
        "",
        f"One row per semantics and scenario, one column per claim (legend below), in percent "
        f"(trends in points). The last two columns count the claims reproduced in direction and "
        f"those whose 95% interval excludes zero on the paper's side, out of {len(CLAIMS)}. The "
        "same cells, one figure at a time and easier to read, follow in "
        "[Figure by figure](#figure-by-figure).",
        "",
        *_table(head, body, "ll" + "r" * (len(head) - 2)),
        "",
        "![Each policy's average JCT and cost against BACE-Pipe under the four semantics, "
        "paper](img/semantics-paper.png)",
        "",
        "![The same on paper-aws](img/semantics-paper-aws.png)",
        "",
        "*Each baseline's and ablation's average JCT and cost divided by BACE-Pipe's on the same "
        "seed, default world, one bar per semantics, 95% CIs over seeds.*",
    ]


def _legend() -> list[str]:
    body = [[f"`{c.id}`", c.figure, c.words, c.paper, c.test] for c in CLAIMS]
    return [
        "### The claims",
        "",
        *_table(
            ["id", "figure", "the paper's words", "the paper's number", "per-seed quantity"], body
        ),
    ]


def _row_summaries(rows: Sequence[RowRuns]) -> list[str]:
    out = ["## Row by row", ""]
    errors = {sem.name: _fig1_error(sem) for sem in SEMANTICS}
    for row in rows:
        d, s = _counts(row)
        figs = []
        for fig in FIGURES:
            cs = [c for c in CLAIMS if c.figure == fig.name]
            figs.append(f"{fig.name} {_counts(row, cs)[0]}/{len(cs)}")
        jct = [c for c in CLAIMS if c.metric == "jct"]
        cost = [c for c in CLAIMS if c.metric == "cost"]
        err = errors[row.semantics.name]
        fig1 = (
            "the Fig. 1 example runs (below)"
            if err is None
            else "the Fig. 1 example is infeasible (Q needs 27 GPUs in memory, the cluster has 11)"
        )
        out.append(
            f"- **{row.semantics.name}, {row.scenario}**: {d} of {len(CLAIMS)} claims hold in "
            f"direction, {s} with an interval that excludes zero; by figure {', '.join(figs)}; "
            f"JCT claims {_counts(row, jct)[0]}/{len(jct)}, cost claims "
            f"{_counts(row, cost)[0]}/{len(cost)}; {fig1}."
        )
    return [*out, ""]


def _absolute(rows: Sequence[RowRuns]) -> list[str]:
    policies = (REFERENCE, *BASELINES, *ABLATIONS)
    body = []
    for row in rows:
        stats = {s.policy: s for s in row.stats(DEFAULT)}
        body.append(
            [
                _col(row),
                *(
                    f"{stats[p].jct_h.mean:,.1f} h / ${stats[p].cost_usd.mean:,.0f}"
                    for p in policies
                ),
            ]
        )
    return [
        "## Absolute means, default world",
        "",
        "Average JCT and total cost, means over the seeds (8 jobs, Table II resources):",
        "",
        *_table(["row", *(LABEL[p] for p in policies)], body, "l" + "r" * len(policies)),
        "",
    ]


def _ranks(means: Mapping[str, float]) -> dict[str, int]:
    """1 = the lowest mean; equal means share a rank."""
    return {p: 1 + sum(m < x for m in means.values()) for p, x in means.items()}


def _egress(rows: Sequence[RowRuns]) -> list[str]:
    policies = (REFERENCE, *BASELINES, *ABLATIONS)
    seeds = rows[0].seeds
    body = []
    notes: list[str] = []
    same = True  # the electricity of every run is the same with egress charged
    for row in rows:
        if row.semantics != CHART_SEMANTICS:
            continue
        plain = row.runs[DEFAULT]
        charged = row.runs[EGRESS]

        def mean(xs: Sequence[float]) -> float:
            return math.fsum(xs) / len(xs)

        elec = {p: mean([plain[p][s].total_cost_usd for s in seeds]) for p in policies}
        egress = {p: mean([charged[p][s].egress_usd for s in seeds]) for p in policies}
        total = {
            p: mean([charged[p][s].total_cost_usd + charged[p][s].egress_usd for s in seeds])
            for p in policies
        }
        same = same and all(
            charged[p][s].total_cost_usd == plain[p][s].total_cost_usd
            for p in policies
            for s in seeds
        )
        r0, r1 = _ranks(elec), _ranks(total)
        cheapest = [LABEL[p] for p in policies if r0[p] == 1]
        winners = [LABEL[p] for p in policies if r1[p] == 1]
        free = [LABEL[p] for p in policies if egress[p] == 0.0]
        paying = [100 * egress[p] / total[p] for p in policies if egress[p] > 0.0]
        share = (
            f"egress is {min(paying):.0f}% to {max(paying):.0f}% of the others' totals"
            if paying
            else "no policy pays egress"
        )
        least = (
            f"{_and(cheapest)} {_verb(cheapest)} the least both for electricity and in total "
            "with egress"
            if cheapest == winners
            else f"{_and(cheapest)} {_verb(cheapest)} the least for electricity and "
            f"{_and(winners)} the least in total with egress"
        )
        notes.append(
            f"On `{row.scenario}`, {least}. "
            f"{_and(free) if free else 'No policy'} {_verb(free)} no egress (none of "
            f"{'their' if len(free) != 1 else 'its'} jobs crosses a region) and {share}."
        )
        for p in sorted(policies, key=lambda p: (r0[p], policies.index(p))):
            move = r1[p] - r0[p]
            change = "=" if move == 0 else (f"down {move}" if move > 0 else f"up {-move}")
            body.append(
                [
                    row.scenario,
                    LABEL[p],
                    _usd(elec[p]),
                    str(r0[p]),
                    _usd(egress[p]),
                    f"{100 * egress[p] / total[p]:.1f}%",
                    _usd(total[p]),
                    str(r1[p]),
                    change,
                ]
            )
    check = (
        "Every run's electricity is the same to the cent with egress charged: placement does "
        "not see the egress price (it is accounting only), so the runs differ by the egress "
        "term alone."
        if same
        else "Some runs' electricity differs with egress charged, which placement should not "
        "see (accounting only)."
    )
    head = [
        "scenario",
        "policy",
        "electricity $",
        "rank",
        "egress $",
        "egress share",
        "electricity + egress $",
        "rank",
        "rank change",
    ]
    return [
        "## Egress: the cost ranking with cross-region traffic charged",
        "",
        f"The default world (`{CHART_SEMANTICS.name}`, memory checked) again, with every "
        f"cross-region hop of a pipeline charged ${DEFAULT_EGRESS_USD_PER_GB:.2f}/GB each way "
        "(AWS's inter-region rate; `load_scenario(..., egress_usd_per_gb=0.02)`, [semantics §10]"
        "(semantics.md)): an iteration sends M activations of A bytes forward over each hop "
        "u->v and as "
        "many gradients back over v->u, so a job's egress is `I * M * A * (e_uv + e_vu) / 1e9` "
        "dollars per hop. Means over the seeds; ranks by the mean total, 1 the cheapest (a "
        "rank change `down 2` is two places worse with egress). The paper's cost (Eq. 8) has "
        f"no egress term. {check}",
        "",
        *_table(head, body, "ll" + "r" * (len(head) - 2)),
        "",
        " ".join(notes),
        "",
    ]


def _verb(names: Sequence[str]) -> str:
    return "pays" if len(names) == 1 else "pay"


def _and(names: Sequence[str]) -> str:
    """``A``, ``A and B``, ``A, B and C``."""
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


def _per_figure(rows: Sequence[RowRuns]) -> list[str]:
    out = [
        "## Figure by figure",
        "",
        "The semantics table transposed, one figure at a time: one row per claim, one column "
        "per semantics / scenario (`ignore-memory` is ignore-memory + greedy). The charts show "
        f"the default world (`{CHART_SEMANTICS.name}`, memory checked) on both scenarios.",
        "",
    ]
    for fig in FIGURES:
        claims = [c for c in CLAIMS if c.figure == fig.name]
        head = ["claim", "paper", *(_col(r) for r in rows)]
        body = [[f"`{c.id}`", c.paper, *(cell_text(verdict(c, r)) for r in rows)] for c in claims]
        counts = ", ".join(f"{_col(r)} {_counts(r, claims)[0]}" for r in rows)
        alt = f"{fig.name} style: {fig.style}"
        out += [
            f"### {fig.name}: {fig.shows}",
            "",
            *_table(head, body, "ll" + "r" * len(rows)),
            "",
            f"Claims reproduced in direction, of {len(claims)}: {counts}.",
            "",
            f"![{alt}, paper](img/{fig.chart}-paper.png)",
            "",
            f"![{alt}, paper-aws](img/{fig.chart}-paper-aws.png)",
            "",
        ]
    return out


def _mechanisms(rows: Sequence[RowRuns]) -> list[str]:
    failing = failing_claims(rows)
    out = ["## Claims no row reproduces", ""]
    if not failing:
        return [*out, "Every claim is reproduced in direction by at least one row.", ""]
    out += [
        f"{len(failing)} of the {len(CLAIMS)} claims have the paper's sign in none of the "
        f"{len(rows)} rows: {', '.join(f'`{c.id}`' for c in failing)}. For each group, the "
        "numbers below come from the same runs (the per-job tables from simulating those runs "
        'again); the "printed row" is ignore-memory + greedy on `paper`, the paper as printed.',
        "",
    ]
    rec = _Records()
    for group in claim_groups(failing):
        out += _mechanism(group, rows, rec)
    return out


# --- the entry point ------------------------------------------------------------------------


@dataclass
class ReproduceOutcome:
    """What ``reproduce`` computed and wrote."""

    report: Path
    images: list[Path]
    rows: list[RowRuns]
    failing: list[Claim]
    markdown: str
    warnings: list[str] = field(default_factory=list)


def run_reproduce(
    out: Path,
    seeds: Sequence[int],
    *,
    workers: int | RayBackend = 1,
    progress: bool | None = None,
) -> ReproduceOutcome:
    """Run every claim's experiments under the four semantics on both scenarios and write
    ``out/reproduction.md`` and ``out/img/*.png``. The report depends on the seeds only."""
    if not str(out):
        raise ValidationError("out", str(out), "give an output directory")
    check_seeds(seeds)
    img = out / "img"
    try:
        img.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BacepipeError(f"cannot create output directory {img}: {err.strerror}") from None
    rows = run_rows(list(seeds), workers=workers, progress=progress)
    ranking = run_ranking(list(seeds), workers=workers, progress=progress)
    images, warnings = _charts(rows, img)
    markdown = render_report(rows, ranking)
    report = out / "reproduction.md"
    write_text(report, markdown)
    return ReproduceOutcome(report, images, rows, failing_claims(rows), markdown, warnings)


# --- why the semantics matter ---------------------------------------------------------------


def _why_semantics(rows: Sequence[RowRuns]) -> list[str]:
    """The three mechanisms behind the rows' differences, with numbers from the runs."""
    rec = _Records()
    printed = rows[0]
    seeds = printed.seeds
    pols = (REFERENCE, "lcf", "ldf")
    head = ["row"]
    head += [f"{LABEL[p]} jobs below K*/4" for p in pols]
    head += [f"{LABEL[p]} longest JCT" for p in pols]
    body = []
    for row in rows:
        below = []
        longest = []
        for p in pols:
            n_below, tops = 0, []
            for s in seeds:
                _, res = rec.get(row, DEFAULT, p, s)
                n_below += sum(4 * r.n_gpus < r.k_star for r in res.records)
                tops.append(max(hours(r.jct) for r in res.records))
            below.append(str(n_below))
            longest.append(_h(math.fsum(tops) / len(tops)))
        body.append([_short_row(row), *below, *longest])
    n_jobs = sum(len(rec.get(printed, DEFAULT, REFERENCE, s)[1].records) for s in seeds)

    # 1: the longest job's share of the summed JCT, and the spread of job sizes
    shares = []
    for s in seeds:
        _, res = rec.get(printed, DEFAULT, REFERENCE, s)
        jcts = [r.jct for r in res.records]
        shares.append(max(jcts) / math.fsum(jcts))
    share = 100 * math.fsum(shares) / len(shares)
    ideal: dict[str, list[float]] = {}
    for s in seeds:
        sc, _ = rec.get(printed, DEFAULT, REFERENCE, s)
        for j in sc.jobs:
            ideal.setdefault(j.dataset, []).append(hours(sc.profiles[j.job_id].ideal_execution))
    spread = ", ".join(f"{name} {min(v):,.1f}-{max(v):,.1f} h" for name, v in sorted(ideal.items()))

    # 2: BACE-Pipe's longest job on the printed row, against LDF
    worst = max(
        (
            (hours(r.jct), s, r)
            for s in seeds
            for r in rec.get(printed, DEFAULT, REFERENCE, s)[1].records
        ),
        key=lambda x: (x[0], -x[1]),
    )
    _, w_seed, w_job = worst
    sc, _ = rec.get(printed, DEFAULT, REFERENCE, w_seed)
    _, ldf_res = rec.get(printed, DEFAULT, "ldf", w_seed)
    ldf_job = next(r for r in ldf_res.records if r.job_id == w_job.job_id)
    names = sc.cluster.names
    checked = load_scenario(printed.scenario, seed=w_seed, **SEMANTICS[1].kwargs)
    floor = min(checked.memory_floors[w_job.job_id])
    floor_words = (
        f" With memory checked ([semantics §3a](semantics.md)) that start is forbidden: "
        f"{w_job.model} fits in no "
        f"fewer than {floor} GPUs."
        if w_job.n_gpus < floor
        else ""
    )

    # 3: the narrowest link against the largest b(K*)
    links = []
    for scen in SCENARIOS:
        low = load_scenario(scen, bandwidth_scale=0.3, **SEMANTICS[0].kwargs).cluster.bandwidth
        k = low.shape[0]
        links.append(
            (
                scen,
                min(float(low[u, v]) for u in range(k) for v in range(k) if u != v)
                * GBPS_PER_BYTE_PER_S,
            )
        )
    b_k = [p.min_bandwidth_kstar * GBPS_PER_BYTE_PER_S for p in sc.profiles.values()]
    return [
        "## Why the semantics matter",
        "",
        "Three mechanisms, first seen under the paper's literal semantics, explain most of the "
        "differences between the rows (numbers from the default-world runs above):",
        "",
        f"1. **A few long jobs dominate the average JCT.** A job's execution on K* GPUs with no "
        f"cross-region hop ranges over {spread} (the datasets' sizes differ by two orders of "
        f"magnitude). On the printed row the longest job is {share:.0f}% of the summed JCT of "
        "its run, on average over the seeds.",
        "2. **Under ignore-memory + greedy, nothing stops a job from starting on a few leftover "
        "GPUs.** Eq. (12) ranks the long jobs last, and Alg. 1 never waits: it takes the best "
        f"path among the free GPUs, however few. On seed {w_seed} of the printed row, "
        f"{w_job.name} ({w_job.model} on {w_job.dataset}) starts under BACE-Pipe on "
        f"{w_job.placement.describe(names)} ({w_job.n_gpus} of K* = {w_job.k_star} GPUs) and "
        f"its JCT is {_h(hours(w_job.jct))}; LDF gives it "
        f"{ldf_job.placement.describe(names)} and {_h(hours(ldf_job.jct))}.{floor_words} The "
        "finish-aware and full admission rules ([semantics §3b](semantics.md)) make a job "
        "wait for a better start. "
        "Jobs that start with "
        f"fewer than a quarter of their K*, over the {n_jobs} jobs of seeds "
        f"{_seed_range(seeds)}, and the mean of each seed's longest JCT:",
        "",
        *_table(head, body, "l" + "r" * (len(head) - 1)),
        "",
        f"3. **The paper's bandwidth almost never binds.** With `B[i, j] = (B_i + B_j) / 2`, "
        f"even at 0.3x the narrowest link of `{links[0][0]}` carries {links[0][1]:.1f} Gbps, "
        f"while `b(K*)` of the Table III jobs lies between {min(b_k):.1f} and {max(b_k):.1f} "
        "Gbps: constraint (6) fails only when several jobs share a link, so the bandwidth "
        f"sweep on `paper` is nearly flat. On `{links[1][0]}` (measured AWS throughput) the "
        f"narrowest link at 0.3x is {links[1][1]:.1f} Gbps, bandwidth binds and the sweep "
        "moves.",
        "",
    ]
