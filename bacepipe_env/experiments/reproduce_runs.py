"""The computation behind ``bacepipe reproduce``: the five simulator semantics and the three
memory variants of the default one, the runs of every claim's experiments (:func:`run_rows`),
and the measurements the report explains them with (:func:`measure`), as plain records for
:mod:`.reproduce_report` to put into words.

Nothing here writes prose. The per-job measurements simulate the few runs they show again
(:class:`Records`); a run is deterministic, so they match the totals of :func:`run_rows`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.admission import ADMISSION_RULES
from ..core.scenario import Scenario
from ..core.simulator import JobRecord, RunResult
from ..core.tariff import DEFAULT_EGRESS_USD_PER_GB
from ..core.units import GBPS_PER_BYTE_PER_S, hours
from ..errors import ScenarioError
from ..policies import bace_pipe
from ..policies.registry import make_policy
from ..scenarios.loader import load_scenario
from .claims import (
    ABLATIONS,
    BASELINES,
    CLAIMS,
    DEFAULT,
    REFERENCE,
    Claim,
    Point,
    claim_groups,
    failing_claims,
    verdict,
)
from .experiments import SWEEPS
from .runner import RayBackend, RunSpec, RunSummary, expand, run_all, with_constants
from .stats import Estimate
from .summary import PolicyStats, summarise

__all__ = [
    "CHART_SEMANTICS",
    "EGRESS",
    "FIG1_POLICIES",
    "SCENARIOS",
    "SEMANTICS",
    "VARIANTS",
    "Agg",
    "EgressRanking",
    "Example",
    "Fig1",
    "Fig1Run",
    "Measurements",
    "Mechanism",
    "Records",
    "RowRuns",
    "Semantics",
    "WhySemantics",
    "job_price",
    "load_point",
    "measure",
    "points",
    "run_rows",
    "scenario_knobs",
    "specs_for",
]

SCENARIOS = ("paper", "paper-aws")


@dataclass(frozen=True)
class Semantics:
    """How the simulator treats GPU memory, admission and time ([semantics §3a, §3b](semantics.md),
    [model](model.md)): world settings, and for a memory variant entries of the scenario file's
    ``constants`` section."""

    name: str
    knobs: tuple[tuple[str, Any], ...]  # load_scenario keywords
    about: str
    constants: tuple[tuple[str, float], ...] = ()  # the scenario file's constants replaced

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
    Semantics(
        "physical",
        (("admission", "greedy"), ("ignore_memory", False), ("model", "physical")),
        "memory checked, greedy admission, and the world runs by the physical model (6N/8N "
        "FLOPs per token over active parameters, backward on the reverse links, both link "
        "directions booked, latency once per fill, a 2 GB runtime reserve per GPU); the "
        "schedulers still decide by Eq. (1)",
    ),
)

#: The default world the charts and the egress table show: memory checked, greedy admission.
CHART_SEMANTICS = SEMANTICS[1]


def _variant(name: str, knob: tuple[tuple[str, Any], ...], about: str, **kw: Any) -> Semantics:
    return Semantics(name, (*CHART_SEMANTICS.knobs, *knob), about, **kw)


#: The default world (greedy, memory checked) with the memory floors moved ([model, Variants of
#: the floors](model.md)): a claim is robust when its verdict is the same under all of them.
VARIANTS = (
    _variant(
        "state-only floors",
        (("state_only_floors", True),),
        "the floors count the training state alone",
    ),
    _variant(
        "+2 GB reserve",
        (("gpu_reserve_gb", 2.0),),
        "each GPU keeps 2 GB for the runtime",
    ),
    _variant(
        "18 B/param",
        (),
        "18 bytes of training state per parameter (fp32 gradients accumulated beside bf16 ones)",
        constants=(("bytes_per_param", 18.0),),
    ),
)
#: The default world with cross-region egress charged at AWS's inter-region rate (semantics §10).
EGRESS: Point = ("egress", DEFAULT_EGRESS_USD_PER_GB)


def points() -> list[tuple[Point, tuple[str, ...]]]:
    """Every experiment point with the policies run there: the default world with the
    baselines and the ablations (Figs. 4, 8), then every sweep value with the baselines."""
    out: list[tuple[Point, tuple[str, ...]]] = [(DEFAULT, (REFERENCE, *BASELINES, *ABLATIONS))]
    for kind, (_, values, _) in SWEEPS.items():
        out += [((kind, float(v)), (REFERENCE, *BASELINES)) for v in values]
    return out


def scenario_knobs(sem: Semantics, point: Point) -> dict[str, Any]:
    """The ``load_scenario`` keywords of a point under a semantics."""
    kind, value = point
    if kind == "default":
        return sem.kwargs
    if kind == "egress":
        return {**sem.kwargs, "egress_usd_per_gb": value}
    knob = SWEEPS[kind][0]
    return {**sem.kwargs, knob: int(value) if knob == "n_jobs" else value}


def load_point(sem: Semantics, scenario: str, seed: int, point: Point = DEFAULT) -> Scenario:
    """The scenario of one run: ``scenario`` at ``point`` under ``sem``, for ``seed``."""
    source = with_constants(scenario, sem.constants)
    return load_scenario(source, seed=seed, **scenario_knobs(sem, point))


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
        knobs = scenario_knobs(sem, point)
        out += expand(policies, scenario, seeds, knobs, tag, sem.constants)
    return out


def run_rows(
    seeds: Sequence[int],
    *,
    workers: int | RayBackend = 1,
    progress: bool | None = None,
    semantics: Sequence[Semantics] = (*SEMANTICS, *VARIANTS),
) -> list[RowRuns]:
    """Run every row (semantics x scenario, the memory variants' rows after the semantics')
    in one :func:`run_all` call."""
    cells = [(sem, sc) for sem in semantics for sc in SCENARIOS]
    specs = [s for sem, sc in cells for s in specs_for(sem, sc, seeds)]
    # a run that cannot finish (no placement of the policy fits a job in GPU memory) leaves the
    # claims that read it untestable on its row, not the whole report unwritten
    results = run_all(specs, workers=workers, label="reproduce", progress=progress, keep_going=True)
    rows = {(sem.name, sc): RowRuns(sem, sc, tuple(seeds), {}) for sem, sc in cells}
    for r in results:
        row = rows[(r.spec.tag["semantics"], r.spec.scenario)]
        point = (r.spec.tag["point"], r.spec.tag["value"])
        row.runs.setdefault(point, {}).setdefault(r.spec.policy, {})[r.spec.seed] = r
    return list(rows.values())


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


# --- per-job records --------------------------------------------------------------------------


@dataclass(frozen=True)
class Agg:
    """Per-job means of a policy's runs over a row's seeds."""

    wait_h: float  # mean wait per job
    exec_h: float  # mean execution per job
    gpus: float  # mean GPUs per job
    waiting: float  # share of jobs that wait at all
    gpu_h: float  # GPU-hours per run
    price: float  # $/kWh paid on average: cost / (GPU-hours * power)


class Records:
    """Per-job records of single runs. :class:`RunSummary` keeps only a run's totals, so the
    few runs a measurement shows are simulated again (deterministic: the same totals)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[Any, ...], tuple[Scenario, RunResult]] = {}

    def get(self, row: RowRuns, point: Point, policy: str, seed: int) -> tuple[Scenario, RunResult]:
        """The scenario and the full result of one run."""
        key = (row.semantics.name, row.scenario, point, policy, seed)
        if key not in self._cache:
            scenario = load_point(row.semantics, row.scenario, seed, point)
            self._cache[key] = (scenario, make_policy(policy, seed=seed).simulate(scenario))
        return self._cache[key]

    def agg(self, row: RowRuns, point: Point, policy: str) -> Agg:
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
        return Agg(
            _mean(waits), _mean(execs), _mean(gpus), _mean(waiting), _mean(gpu_h), _mean(price)
        )


def job_price(scenario: Scenario, rec: JobRecord) -> float:
    """The average $/kWh a job's GPUs pay."""
    prices = scenario.cluster.prices
    p = rec.placement
    return math.fsum(prices[r] * n for r, n in zip(p.path, p.gpus)) / p.n_gpus


def _ranks(means: dict[str, float]) -> dict[str, int]:
    """1 = the lowest mean; equal means share a rank."""
    return {p: 1 + sum(m < x for m in means.values()) for p, x in means.items()}


# --- egress -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class EgressRanking:
    """The default world's cost ranking on one scenario with cross-region egress charged:
    means over the seeds by policy."""

    scenario: str
    policies: tuple[str, ...]
    electricity: dict[str, float]  # $ without egress
    egress: dict[str, float]  # $ of egress
    total: dict[str, float]  # $ electricity + egress, with egress charged
    same: bool  # every run's electricity is unchanged by charging egress

    @property
    def rank_electricity(self) -> dict[str, int]:
        """Ranks by electricity, 1 the cheapest."""
        return _ranks(self.electricity)

    @property
    def rank_total(self) -> dict[str, int]:
        """Ranks by electricity + egress."""
        return _ranks(self.total)

    def share(self, policy: str) -> float:
        """Egress as a percentage of the policy's total."""
        return 100 * self.egress[policy] / self.total[policy]


def _egress(row: RowRuns) -> EgressRanking:
    policies = (REFERENCE, *BASELINES, *ABLATIONS)
    seeds = row.seeds
    plain, charged = row.runs[DEFAULT], row.runs[EGRESS]
    same = all(
        charged[p][s].total_cost_usd == plain[p][s].total_cost_usd for p in policies for s in seeds
    )
    return EgressRanking(
        row.scenario,
        policies,
        {p: _mean([plain[p][s].total_cost_usd for s in seeds]) for p in policies},
        {p: _mean([charged[p][s].egress_usd for s in seeds]) for p in policies},
        {
            p: _mean([charged[p][s].total_cost_usd + charged[p][s].egress_usd for s in seeds])
            for p in policies
        },
        same,
    )


# --- why the semantics matter -----------------------------------------------------------------


@dataclass(frozen=True)
class WhySemantics:
    """The numbers of the three mechanisms behind the rows' differences."""

    policies: tuple[str, ...]  # the policies of the table
    below: list[list[int]]  # [row][policy]: jobs started below K*/4 over the seeds
    longest: list[list[float]]  # [row][policy]: mean of each seed's longest JCT (h)
    n_jobs: int  # jobs of the printed row's seeds
    share: float  # % of the summed JCT the longest job takes on the printed row, mean
    ideal: dict[str, tuple[float, float]]  # dataset -> min, max ideal execution (h)
    seed: int  # the seed of BACE-Pipe's longest job on the printed row
    job: JobRecord  # that job under BACE-Pipe
    ldf_job: JobRecord  # the same job under LDF
    names: tuple[str, ...]  # the regions' names
    floor: int  # the fewest GPUs the job fits in with memory checked
    links: list[tuple[str, float]]  # (scenario, narrowest link at 0.3x bandwidth, Gbps)
    b_kstar: tuple[float, float]  # min, max b(K*) of the jobs (Gbps)


def _why(rows: Sequence[RowRuns], rec: Records) -> WhySemantics:
    printed = rows[0]
    seeds = printed.seeds
    pols = (REFERENCE, "lcf", "ldf")
    below, longest = [], []
    for row in rows:
        row_below, row_longest = [], []
        for p in pols:
            n_below, tops = 0, []
            for s in seeds:
                _, res = rec.get(row, DEFAULT, p, s)
                n_below += sum(4 * r.n_gpus < r.k_star for r in res.records)
                tops.append(max(hours(r.jct) for r in res.records))
            row_below.append(n_below)
            row_longest.append(_mean(tops))
        below.append(row_below)
        longest.append(row_longest)
    n_jobs = sum(len(rec.get(printed, DEFAULT, REFERENCE, s)[1].records) for s in seeds)

    # 1: the longest job's share of the summed JCT, and the spread of job sizes
    shares = []
    for s in seeds:
        jcts = [r.jct for r in rec.get(printed, DEFAULT, REFERENCE, s)[1].records]
        shares.append(max(jcts) / math.fsum(jcts))
    ideal: dict[str, list[float]] = {}
    for s in seeds:
        sc, _ = rec.get(printed, DEFAULT, REFERENCE, s)
        for j in sc.jobs:
            ideal.setdefault(j.dataset, []).append(hours(sc.profiles[j.job_id].ideal_execution))

    # 2: BACE-Pipe's longest job on the printed row, against LDF
    _, w_seed, w_job = max(
        (
            (hours(r.jct), s, r)
            for s in seeds
            for r in rec.get(printed, DEFAULT, REFERENCE, s)[1].records
        ),
        key=lambda x: (x[0], -x[1]),
    )
    sc, _ = rec.get(printed, DEFAULT, REFERENCE, w_seed)
    _, ldf_res = rec.get(printed, DEFAULT, "ldf", w_seed)
    checked = load_scenario(printed.scenario, seed=w_seed, **SEMANTICS[1].kwargs)

    # 3: the narrowest link against the largest b(K*)
    links = []
    for scen in SCENARIOS:
        low = load_scenario(scen, bandwidth_scale=0.3, **SEMANTICS[0].kwargs).cluster.bandwidth
        k = low.shape[0]
        narrowest = min(float(low[u, v]) for u in range(k) for v in range(k) if u != v)
        links.append((scen, narrowest * GBPS_PER_BYTE_PER_S))
    b_k = [p.min_bandwidth_kstar * GBPS_PER_BYTE_PER_S for p in sc.profiles.values()]
    return WhySemantics(
        pols,
        below,
        longest,
        n_jobs,
        100 * math.fsum(shares) / len(shares),
        {name: (min(v), max(v)) for name, v in sorted(ideal.items())},
        w_seed,
        w_job,
        next(r for r in ldf_res.records if r.job_id == w_job.job_id),
        tuple(sc.cluster.names),
        min(checked.memory_floors[w_job.job_id]),
        links,
        (min(b_k), max(b_k)),
    )


# --- mechanisms of the claims no row reproduces ----------------------------------------------


@dataclass(frozen=True)
class Example:
    """One job of one seed that shows a failing claim's mechanism on the printed row."""

    seed: int
    point: Point  # the claim's last point
    scenario: Scenario
    ref_run: RunResult
    pol_run: RunResult
    job: JobRecord  # under the reference policy
    pol_job: JobRecord  # the same job under the claim's policy
    ref_price: float  # $/kWh the job pays under each policy
    pol_price: float
    e1: dict[int, float]  # E(1) in hours, by job id
    rank_large: int  # the job's rank by E(1), 1 the largest
    rank_small: int  # ... 1 the smallest
    cheap_holders: list[str]  # jobs holding the claim policy's cheapest region first (cost)
    cheap_region: int  # that region
    queue: tuple[int, int] | None  # (jobs before it in submission order, of them started first)
    table_ids: list[int]  # the jobs of the per-job table, in run order
    table_trimmed: bool  # the table shows only the jobs that differ most


@dataclass(frozen=True)
class Mechanism:
    """Where a group of failing claims comes from, measured on every row."""

    group: tuple[Claim, ...]
    rows: tuple[RowRuns, ...]  # the rows where every claim of the group is testable
    main: Claim  # the group's claim furthest from the paper on the printed row
    policy: str  # the main claim's policy furthest from the paper there
    estimates: dict[str, list[Estimate]]  # claim id -> per row
    aggs: list[list[tuple[Agg, Agg]]]  # [row][point]: (reference, policy)
    power_kw: float  # per GPU
    example: Example

    @property
    def pricier_rows(self) -> int:
        """Rows where the reference pays a higher average $/kWh than the policy (first point)."""
        return sum(r.price > a.price for r, a in (by_point[0] for by_point in self.aggs))

    @property
    def more_gpu_hour_rows(self) -> int:
        """Rows where the reference runs more GPU-hours than the policy (first point)."""
        return sum(r.gpu_h > a.gpu_h for r, a in (by_point[0] for by_point in self.aggs))

    @property
    def wait_gap_grows_rows(self) -> int:
        """For a trend: rows where the policy's mean wait exceeds the reference's by more at
        the second point than at the first."""
        return sum(
            (a1.wait_h - r1.wait_h) > (a0.wait_h - r0.wait_h) for (r0, a0), (r1, a1) in self.aggs
        )


def _mechanism(group: Sequence[Claim], rows: Sequence[RowRuns], rec: Records) -> Mechanism:
    printed = rows[0]  # the paper as printed, on the paper's scenario
    rows = [r for r in rows if not any(verdict(c, r).untestable for c in group)]
    est = {c.id: [verdict(c, r).est for r in rows] for c in group}
    main = min(group, key=lambda c: (est[c.id][0].mean, c.id))

    def mean_q(p: str) -> float:
        return _mean([main.policy_quantity(printed, s, p) for s in printed.seeds])

    pol = min(main.policies, key=lambda p: (mean_q(p), p))
    aggs = [
        [(rec.agg(row, point, main.ref), rec.agg(row, point, pol)) for point in main.points]
        for row in rows
    ]
    power = load_scenario(
        printed.scenario, seed=printed.seeds[0], **printed.semantics.kwargs
    ).cluster.power_kw
    example = _example(main, pol, printed, rec)
    return Mechanism(tuple(group), tuple(rows), main, pol, est, aggs, power, example)


def _example(claim: Claim, pol: str, row: RowRuns, rec: Records) -> Example:
    point = claim.points[-1]
    seed = min(row.seeds, key=lambda s: (claim.policy_quantity(row, s, pol), s))
    scenario, r_res = rec.get(row, point, claim.ref, seed)
    _, a_res = rec.get(row, point, pol, seed)
    a_by_id = {r.job_id: r for r in a_res.records}

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
    e1 = {r.job_id: hours(scenario.profiles[r.job_id].single_gpu_exec) for r in r_res.records}
    ref_price, pol_price = job_price(scenario, job), job_price(scenario, a_job)

    cheap = min(a_job.placement.path, key=lambda r: (scenario.cluster.prices[r], r))
    holders: list[str] = []
    if claim.metric == "cost" and claim.ref == REFERENCE and not claim.trend:
        holders = [
            r.name
            for r in r_res.records
            if r.job_id != job.job_id
            and cheap in r.placement.path
            and r.start_time <= job.start_time
        ]
        if ref_price <= pol_price:
            holders = []

    queue = None
    if claim.trend and claim.metric == "jct" and hours(a_job.wait) > hours(job.wait):
        order = [r.job_id for r in sorted(a_res.records, key=lambda r: (r.submit_time, r.job_id))]
        k = order.index(job.job_id)
        before = set(order[:k])
        ahead = sum(
            1 for r in a_res.records if r.job_id in before and r.start_time <= a_job.start_time
        )
        queue = (k, ahead)

    records = list(r_res.records)
    trimmed = len(records) > 8
    if trimmed:

        def diff(r: JobRecord) -> float:
            a = a_by_id[r.job_id]
            return abs(r.cost - a.cost) if claim.metric == "cost" else abs(r.jct - a.jct)

        keep = {r.job_id for r in sorted(records, key=lambda r: (-diff(r), r.job_id))[:8]}
        keep.add(job.job_id)
        records = [r for r in records if r.job_id in keep]
    return Example(
        seed,
        point,
        scenario,
        r_res,
        a_res,
        job,
        a_job,
        ref_price,
        pol_price,
        e1,
        1 + sum(v > e1[job.job_id] for v in e1.values()),
        1 + sum(v < e1[job.job_id] for v in e1.values()),
        holders,
        cheap,
        queue,
        [r.job_id for r in records],
        trimmed,
    )


# --- Fig. 1 -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fig1Run:
    """One policy on the ``fig1`` scenario."""

    key: str  # the policy, "+partial" for BACE-Pipe with partial_take
    placements: dict[str, str]  # job name -> placement
    avg_jct_h: float
    cost_usd: float


@dataclass(frozen=True)
class Fig1:
    """The motivation example under every semantics and admission rule."""

    errors: dict[str, str | None]  # semantics name -> the ScenarioError loading raises
    by_semantics: dict[str, list[Fig1Run]]  # the semantics that load
    literal: list[Fig1Run]  # memory ignored, greedy admission; with partial_take
    by_rule: dict[str, list[Fig1Run]]  # admission rule (memory ignored) -> runs


#: The policies of the Fig. 1 example, BACE-Pipe with partial_take last.
FIG1_POLICIES = ("lcf", "ldf", "bace-pipe", "bace-pipe+partial")


def _fig1_runs(knobs: dict[str, Any]) -> list[Fig1Run]:
    scenario = load_scenario("fig1", **knobs)
    names = scenario.cluster.names
    out = []
    for key in FIG1_POLICIES:
        pol = bace_pipe(partial_take=True) if key == "bace-pipe+partial" else make_policy(key)
        res = pol.simulate(scenario)
        placements = {r.name: r.placement.describe(names) for r in res.records}
        out.append(Fig1Run(key, placements, hours(res.avg_jct), res.total_cost))
    return out


def _fig1_error(sem: Semantics) -> str | None:
    """The ScenarioError that loading ``fig1`` under ``sem`` raises, or None if it loads."""
    try:
        load_scenario("fig1", **sem.kwargs)
    except ScenarioError as err:
        return str(err)
    return None


def _fig1() -> Fig1:
    errors = {sem.name: _fig1_error(sem) for sem in SEMANTICS}
    return Fig1(
        errors,
        {s.name: _fig1_runs(s.kwargs) for s in SEMANTICS if errors[s.name] is None},
        _fig1_runs(SEMANTICS[0].kwargs),
        {rule: _fig1_runs({"admission": rule, "ignore_memory": True}) for rule in ADMISSION_RULES},
    )


# --- everything the report shows --------------------------------------------------------------


@dataclass(frozen=True)
class Measurements:
    """The rows' runs and every measurement the report explains them with."""

    rows: list[RowRuns]  # the semantics' rows
    variants: list[RowRuns]  # the memory variants' rows, in VARIANTS order
    egress: list[EgressRanking]  # the default world's rows, with egress charged
    why: WhySemantics
    failing: list[Claim]  # the claims no row reproduces in direction
    mechanisms: list[Mechanism]  # one per group of failing claims
    fig1: Fig1

    def base(self) -> list[RowRuns]:
        """The default world's rows (greedy, memory checked), one per scenario."""
        return [r for r in self.rows if r.semantics == CHART_SEMANTICS]

    def variant_rows(self) -> list[tuple[str, list[RowRuns]]]:
        """Each memory variant's rows, one per scenario in the base rows' order."""
        order = [r.scenario for r in self.base()]
        return [
            (
                v.name,
                sorted(
                    (r for r in self.variants if r.semantics == v),
                    key=lambda r: order.index(r.scenario),
                ),
            )
            for v in VARIANTS
        ]


def measure(rows: Sequence[RowRuns]) -> Measurements:
    """Every measurement of the report, from the rows' runs (the semantics' and the memory
    variants'; and, for per-job detail, from the few runs it simulates again)."""
    rec = Records()
    main = [r for r in rows if r.semantics in SEMANTICS]
    failing = failing_claims(main, CLAIMS)
    return Measurements(
        main,
        [r for r in rows if r.semantics in VARIANTS],
        [_egress(row) for row in main if row.semantics == CHART_SEMANTICS],
        _why(main, rec),
        failing,
        [_mechanism(group, main, rec) for group in claim_groups(failing)],
        _fig1(),
    )
