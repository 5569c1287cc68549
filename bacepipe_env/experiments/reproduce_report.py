"""The words of ``bacepipe reproduce``: :func:`render` puts the runs' verdicts and the
measurements of :mod:`.reproduce_runs` into the prose templates of
``templates/reproduction.md`` and the report's tables.

The sentences live in the template file; the numbers come from the measurements and from the
claims' verdicts (:func:`.claims.verdict`). This module picks a sentence where the numbers decide
(which policy is cheapest, whether a story applies), formats the tables' cells and inflects
(``pays``/``pay``, ``2nd``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.simulator import JobRecord
from ..core.tariff import DEFAULT_EGRESS_USD_PER_GB
from ..core.units import hours
from .claims import (
    ABLATIONS,
    BASELINES,
    CLAIMS,
    DEFAULT,
    FIGURES,
    LABEL,
    REFERENCE,
    Claim,
    verdict,
)
from .preempt_ranking import PreemptRanking
from .preempt_ranking import render as render_preemption
from .report_text import markdown_table, seed_range, seeds_text, templates, wrap_prose
from .reproduce_runs import (
    CHART_SEMANTICS,
    FIG1_POLICIES,
    SEMANTICS,
    VARIANTS,
    EgressRanking,
    Example,
    Fig1,
    Fig1Run,
    Measurements,
    Mechanism,
    RowRuns,
    WhySemantics,
)
from .reproduce_verdicts import (
    cell_text,
    counts,
    num_text,
    physical_section,
    point_words,
    robust_section,
    threshold_words,
)

__all__ = ["FIG1_PAPER", "cell_text", "counts", "render"]

#: The paper's Fig. 1 placements and numbers, by policy (Eq. (1) cannot produce them).
FIG1_PAPER = {
    "lcf": "C(2), B(3); 1.50 h, $0.53",
    "ldf": "A(4), B(3); 1.32 h, $0.56",
    "bace-pipe": '"Ours (FCFS)" A4+C2, B3; 1.27 h, $0.55',
    "bace-pipe+partial": "-",
}
_FIG1_LABEL = {**LABEL, "bace-pipe+partial": "BACE-Pipe, `--partial-take`"}
_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
_SEM_SHORT = {
    "ignore-memory + greedy": "ignore-memory",
    "greedy": "greedy",
    "finish-aware": "finish-aware",
    "full": "full",
    "physical": "physical",
}


def _t(block: str, /, **values: object) -> str:
    return templates("reproduction.md").text(block, **values)


def _lines(block: str, /, **values: object) -> list[str]:
    return templates("reproduction.md").lines(block, **values)


def _blocks(blocks: Sequence[list[str]]) -> list[str]:
    """Blocks of lines, one blank line between them."""
    out: list[str] = []
    for block in blocks:
        out += [*([""] if out else []), *block]
    return out


def _trim(lines: Sequence[str]) -> list[str]:
    out = list(lines)
    while out and not out[-1]:
        out.pop()
    return out


# --- numbers in words -------------------------------------------------------------------------


def _h(x: float) -> str:
    return f"{x:,.1f} h"


def _usd(x: float) -> str:
    return f"${x:,.0f}" if abs(x) >= 100 else f"${x:,.2f}"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _rank(n: int, which: str) -> str:
    """``the largest``, ``the 2nd largest``, ..."""
    return f"the {which}" if n == 1 else f"the {_ordinal(n)} {which}"


def _seeds_words(seeds: Sequence[int]) -> str:
    return f"seed{'s' if len(seeds) > 1 else ''} {seed_range(seeds)}"


def _and(names: Sequence[str]) -> str:
    """``A``, ``A and B``, ``A, B and C``."""
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


def _pay(names: Sequence[str]) -> str:
    return "pays" if len(names) == 1 else "pay"


def _ids(claims: Sequence[Claim]) -> str:
    return ", ".join(f"`{c.id}`" for c in claims)


def _col(row: RowRuns) -> str:
    return f"{_SEM_SHORT[row.semantics.name]} / {row.scenario}"


# --- the claims' tables -----------------------------------------------------------------------


def _summary(rows: Sequence[RowRuns], failing: Sequence[Claim]) -> list[str]:
    n = len(CLAIMS)
    body = []
    for row in rows:
        d, s, r = counts(row)
        body.append([row.semantics.name, row.scenario, f"{d}/{n}", f"{s}/{n}", f"{r}/{n}"])
    head = ["semantics", "scenario", "direction", "CI excludes 0", "reproduced"]
    if failing:
        words = _t("summary.failing", n_failing=len(failing), ids=_ids(failing))
    else:
        words = _t("all-reproduced")
    return _lines(
        "summary",
        table=markdown_table(head, body, "llrrr"),
        failing=words,
        **threshold_words(),
    )


def _semantics_table(rows: Sequence[RowRuns]) -> list[str]:
    n = len(CLAIMS)
    head = ["semantics", "scenario", *(f"`{c.id}`" for c in CLAIMS)]
    head += ["direction", "CI excl. 0", "reproduced"]
    body = []
    for row in rows:
        d, s, r = counts(row)
        cells = [cell_text(verdict(c, row)) for c in CLAIMS]
        body.append([row.semantics.name, row.scenario, *cells, f"{d}/{n}", f"{s}/{n}", f"{r}/{n}"])
    legend = [[f"`{c.id}`", c.figure, c.words, c.paper, _quantity_words(c)] for c in CLAIMS]
    legend_head = ["id", "figure", "the paper's words", "the paper's number", "per-seed quantity"]
    return _lines(
        "semantics-table",
        n_claims=n,
        table=markdown_table(head, body, "ll" + "r" * (len(head) - 2)),
        legend=markdown_table(legend_head, legend),
    )


def _quantity_words(claim: Claim) -> str:
    """The per-seed quantity as the cells show it: oriented to the paper's direction."""
    return claim.test if claim.direction == "+" else f"-({claim.test})"


def _row_summaries(rows: Sequence[RowRuns], fig1: Fig1) -> list[str]:
    items = []
    jct = [c for c in CLAIMS if c.metric == "jct"]
    cost = [c for c in CLAIMS if c.metric == "cost"]
    for row in rows:
        d, s, r = counts(row)
        figs = []
        for fig in FIGURES:
            cs = [c for c in CLAIMS if c.figure == fig.name]
            figs.append(f"{fig.name} {counts(row, cs)[2]}/{len(cs)}")
        runs = fig1.errors[row.semantics.name] is None
        items.append(
            _t(
                "rows.item",
                semantics=row.semantics.name,
                scenario=row.scenario,
                direction=d,
                n_claims=len(CLAIMS),
                significant=s,
                reproduced=r,
                figures=", ".join(figs),
                jct=f"{counts(row, jct)[2]}/{len(jct)}",
                cost=f"{counts(row, cost)[2]}/{len(cost)}",
                fig1=_t("rows.fig1-runs" if runs else "rows.fig1-infeasible"),
            )
        )
    return _lines("rows", items=items)


def _per_figure(rows: Sequence[RowRuns]) -> list[str]:
    figures = []
    for fig in FIGURES:
        claims = [c for c in CLAIMS if c.figure == fig.name]
        head = ["claim", "paper", *(_col(r) for r in rows)]
        body = [[f"`{c.id}`", c.paper, *(cell_text(verdict(c, r)) for r in rows)] for c in claims]
        figures.append(
            _lines(
                "figure",
                name=fig.name,
                shows=fig.shows,
                style=fig.style,
                chart=fig.chart,
                table=markdown_table(head, body, "ll" + "r" * len(rows)),
                n_claims=len(claims),
                counts=", ".join(
                    f"{_col(r)} {counts(r, claims)[0]} ({counts(r, claims)[2]})" for r in rows
                ),
            )
        )
    return _lines("figures", semantics=CHART_SEMANTICS.name, figures=_blocks(figures))


# --- absolute numbers and egress --------------------------------------------------------------


def _absolute(rows: Sequence[RowRuns]) -> list[str]:
    policies = (REFERENCE, *BASELINES, *ABLATIONS)
    body = []
    for row in rows:
        stats = {s.policy: s for s in row.stats(DEFAULT)}
        cells = [f"{stats[p].jct_h.mean:,.1f} h / ${stats[p].cost_usd.mean:,.0f}" for p in policies]
        body.append([_col(row), *cells])
    head = ["row", *(LABEL[p] for p in policies)]
    return _lines("absolute", table=markdown_table(head, body, "l" + "r" * len(policies)))


def _egress_note(e: EgressRanking) -> str:
    r0, r1 = e.rank_electricity, e.rank_total
    cheapest = [LABEL[p] for p in e.policies if r0[p] == 1]
    winners = [LABEL[p] for p in e.policies if r1[p] == 1]
    free = [LABEL[p] for p in e.policies if e.egress[p] == 0.0]
    paying = [e.share(p) for p in e.policies if e.egress[p] > 0.0]
    share = (
        _t("egress.share", low=min(paying), high=max(paying)) if paying else _t("egress.no-share")
    )
    if cheapest == winners:
        least = _t("egress.least-both", cheapest=_and(cheapest), pay=_pay(cheapest))
    else:
        least = _t(
            "egress.least-split", cheapest=_and(cheapest), pay=_pay(cheapest), winners=_and(winners)
        )
    return _t(
        "egress.note",
        scenario=e.scenario,
        least=least,
        free=_and(free) if free else _t("egress.no-policy"),
        free_pay=_pay(free),
        their="their" if len(free) != 1 else "its",
        share=share,
    )


def _egress(rankings: Sequence[EgressRanking]) -> list[str]:
    body = []
    for e in rankings:
        r0, r1 = e.rank_electricity, e.rank_total
        for p in sorted(e.policies, key=lambda p: (r0[p], e.policies.index(p))):
            move = r1[p] - r0[p]
            change = "=" if move == 0 else (f"down {move}" if move > 0 else f"up {-move}")
            body.append(
                [
                    e.scenario,
                    LABEL[p],
                    _usd(e.electricity[p]),
                    str(r0[p]),
                    _usd(e.egress[p]),
                    f"{e.share(p):.1f}%",
                    _usd(e.total[p]),
                    str(r1[p]),
                    change,
                ]
            )
    head = ["scenario", "policy", "electricity $", "rank", "egress $", "egress share"]
    head += ["electricity + egress $", "rank", "rank change"]
    return _lines(
        "egress",
        semantics=CHART_SEMANTICS.name,
        rate=DEFAULT_EGRESS_USD_PER_GB,
        check=_t("egress.same" if all(e.same for e in rankings) else "egress.differs"),
        table=markdown_table(head, body, "ll" + "r" * (len(head) - 2)),
        notes=" ".join(_egress_note(e) for e in rankings),
    )


# --- why the semantics matter -----------------------------------------------------------------


def _why(rows: Sequence[RowRuns], why: WhySemantics) -> list[str]:
    head = ["row"]
    head += [f"{LABEL[p]} jobs below K*/4" for p in why.policies]
    head += [f"{LABEL[p]} longest JCT" for p in why.policies]
    body = [
        [f"{row.semantics.name} / {row.scenario}", *map(str, below), *map(_h, longest)]
        for row, below, longest in zip(rows, why.below, why.longest)
    ]
    job, ldf_job = why.job, why.ldf_job
    floor = ""
    if job.n_gpus < why.floor:
        floor = " " + _t("why.floor", model=job.model, floor=why.floor)
    (scenario, narrowest), (aws, aws_narrowest) = why.links
    spread = ", ".join(
        _t("why.spread", dataset=name, low=lo, high=hi) for name, (lo, hi) in why.ideal.items()
    )
    return _lines(
        "why",
        spread=spread,
        share=why.share,
        seed=why.seed,
        job=job.name,
        model=job.model,
        dataset=job.dataset,
        path=job.placement.describe(why.names),
        n_gpus=job.n_gpus,
        k_star=job.k_star,
        jct=hours(job.jct),
        ldf_path=ldf_job.placement.describe(why.names),
        ldf_jct=hours(ldf_job.jct),
        floor=floor,
        n_jobs=why.n_jobs,
        seeds=seed_range(rows[0].seeds),
        table=markdown_table(head, body, "l" + "r" * (len(head) - 1)),
        scenario=scenario,
        narrowest=narrowest,
        b_low=why.b_kstar[0],
        b_high=why.b_kstar[1],
        aws=aws,
        aws_narrowest=aws_narrowest,
    )


# --- the claims no row reproduces -------------------------------------------------------------


def _mechanisms(data: Measurements) -> list[str]:
    if not data.failing:
        return _lines("mechanisms.none", every=_t("all-reproduced"))
    return _lines(
        "mechanisms",
        n_failing=len(data.failing),
        n_claims=len(CLAIMS),
        n_rows=len(data.rows),
        ids=_ids(data.failing),
        groups=_blocks([_mechanism(m, m.rows) for m in data.mechanisms]),
    )


def _mechanism(m: Mechanism, rows: Sequence[RowRuns]) -> list[str]:
    main, group = m.main, m.group
    means = [e.mean for c in group for e in m.estimates[c.id]]
    papers = list(dict.fromkeys(c.paper for c in group))
    if len(papers) == 1:
        words = _t("mechanism.words", words="; ".join(c.words for c in group), paper=papers[0])
    else:
        words = "; ".join(_t("mechanism.words", words=c.words, paper=c.paper) for c in group)
    story: list[str] = []
    if main.metric == "cost" and main.ref == REFERENCE and not main.trend:
        story = _cost_story(m, rows)
    elif main.metric == "jct" and main.ref == REFERENCE and main.trend:
        story = _queue_story(m, rows)
    return _lines(
        "mechanism",
        ids=_ids(group),
        words=words,
        n_rows=len(rows),
        low=num_text(min(means)),
        high=num_text(max(means)),
        unit=" points" if main.trend else "%",
        what=_t(f"mechanism.{main.metric}-what"),
        seeds=_seeds_words(rows[0].seeds),
        policy=LABEL[m.policy],
        id=main.id,
        decomposition=_decomposition(m, rows),
        story=story,
        example=_example(main, m.policy, m.example),
        job_table=_job_table(main, m.policy, m.example),
    )


def _decomposition(m: Mechanism, rows: Sequence[RowRuns]) -> list[str]:
    claim = m.main
    R, A = LABEL[claim.ref], LABEL[m.policy]
    head = ["row"]
    for point in claim.points:
        at = f", {point_words(point)}" if claim.trend else ""
        if claim.metric == "cost":
            head += [f"{R} GPU-h{at}", f"{R} $/kWh{at}", f"{A} GPU-h{at}", f"{A} $/kWh{at}"]
        else:
            head += [f"{R} wait h{at}", f"{R} exec h{at}", f"{A} wait h{at}", f"{A} exec h{at}"]
    head.append(f"`{claim.id}`")
    body = []
    for row, by_point in zip(rows, m.aggs):
        cells = [f"{row.semantics.name} / {row.scenario}"]
        for pair in by_point:
            for a in pair:
                if claim.metric == "cost":
                    cells += [f"{a.gpu_h:,.0f}", f"{a.price:.3f}"]
                else:
                    cells += [f"{a.wait_h:,.1f}", f"{a.exec_h:,.1f}"]
        cells.append(cell_text(verdict(claim, row)))
        body.append(cells)
    return markdown_table(head, body, "l" + "r" * (len(head) - 1))


def _cost_story(m: Mechanism, rows: Sequence[RowRuns]) -> list[str]:
    r0, a0 = m.aggs[0][0]  # the printed row at the claim's point: reference, policy
    if r0.price > a0.price and r0.gpu_h <= a0.gpu_h:
        why = "price"
    elif r0.gpu_h > a0.gpu_h and r0.price <= a0.price:
        why = "gpu-hours"
    elif r0.gpu_h > a0.gpu_h:
        why = "both"
    else:
        why = "neither"
    return _lines(
        "story.cost",
        power=m.power_kw,
        point=point_words(m.main.points[0]),
        ref=LABEL[m.main.ref],
        ref_gpu_h=r0.gpu_h,
        ref_price=r0.price,
        policy=LABEL[m.policy],
        pol_gpu_h=a0.gpu_h,
        pol_price=a0.price,
        why=_t(f"story.cost-{why}"),
        dearer=m.pricier_rows,
        n_rows=len(rows),
        more=m.more_gpu_hour_rows,
    )


def _queue_story(m: Mechanism, rows: Sequence[RowRuns]) -> list[str]:
    (r0, a0), (r1, a1) = m.aggs[0]  # the printed row at the two points
    grows = m.wait_gap_grows_rows
    A = LABEL[m.policy]
    order = ""
    if 2 * grows > len(rows):
        order = " " + _t("story.queue-order", policy=A)
    p0, p1 = m.main.points
    return _lines(
        "story.queue",
        pol_waiting0=100 * a0.waiting,
        pol_waiting1=100 * a1.waiting,
        ref_waiting0=100 * r0.waiting,
        ref_waiting1=100 * r1.waiting,
        at0=point_words(p0),
        at1=point_words(p1),
        policy=A,
        ref=LABEL[m.main.ref],
        pol_wait0=a0.wait_h,
        pol_wait1=a1.wait_h,
        ref_wait0=r0.wait_h,
        ref_wait1=r1.wait_h,
        pol_exec0=a0.exec_h,
        pol_exec1=a1.exec_h,
        ref_exec0=r0.exec_h,
        ref_exec1=r1.exec_h,
        grows=grows,
        n_rows=len(rows),
        order=order,
    )


def _example(claim: Claim, pol: str, ex: Example) -> str:
    R, A = LABEL[claim.ref], LABEL[pol]
    job, a_job = ex.job, ex.pol_job
    names = ex.scenario.cluster.names

    def value(r: JobRecord) -> str:
        return _usd(r.cost) if claim.metric == "cost" else _h(hours(r.jct))

    def where(r: JobRecord, price: float) -> str:
        return _t(
            "example.where",
            wait=hours(r.wait),
            path=r.placement.describe(names),
            n_gpus=r.n_gpus,
            price=price,
            execution=hours(r.execution),
        )

    if not claim.trend:
        why, rank = _t("example.why-gap", ref=R), _rank(ex.rank_large, "largest")
    else:
        which = "example.why-queue" if claim.metric == "jct" else "example.why-gain"
        why, rank = _t(which, ref=R, policy=A), _rank(ex.rank_small, "smallest")
    more = []
    if ex.cheap_holders:
        prices = ex.scenario.cluster.prices
        more.append(
            _t(
                "example.cheap-region",
                ref=R,
                region=names[ex.cheap_region],
                price=prices[ex.cheap_region],
                policy=A,
                holders=", ".join(ex.cheap_holders),
                job=job.name,
            )
        )
        if ex.rank_large <= 2:
            position = "last" if ex.rank_large == 1 else "second to last"
            more.append(
                _t(
                    "example.ranked-last",
                    job=job.name,
                    position=position,
                    policy=A,
                    execution=hours(job.execution),
                )
            )
    if ex.queue is not None:
        before, ahead = ex.queue
        more.append(
            _t(
                "example.queue",
                policy=A,
                job=job.name,
                position=_ordinal(before + 1),
                n_jobs=len(ex.ref_run.records),
                ahead=ahead,
                before=before,
            )
        )
    return _t(
        "example",
        seed=ex.seed,
        point=point_words(ex.point),
        id=claim.id,
        policy=A,
        why=why,
        job=job.name,
        model=job.model,
        dataset=job.dataset,
        e1=ex.e1[job.job_id],
        rank=rank,
        n_jobs=len(ex.ref_run.records),
        what="costs" if claim.metric == "cost" else "has a JCT of",
        ref_value=value(job),
        ref=R,
        pol_value=value(a_job),
        ref_where=where(job, ex.ref_price),
        pol_where=where(a_job, ex.pol_price),
        more="".join(f" {m}" for m in more),
    )


def _job_table(claim: Claim, pol: str, ex: Example) -> list[str]:
    names = ex.scenario.cluster.names
    by_id = {r.job_id: r for r in ex.ref_run.records}
    a_by_id = {r.job_id: r for r in ex.pol_run.records}
    head = ["job", "model", "dataset", "E(1) h"]
    for who in (LABEL[claim.ref], LABEL[pol]):
        head += [f"{who} path", "wait h", "exec h", "JCT h", "cost $"]
    body = []
    for job_id in ex.table_ids:
        r, a = by_id[job_id], a_by_id[job_id]
        name = f"**{r.name}**" if job_id == ex.job.job_id else r.name
        cells = [name, r.model, r.dataset, f"{ex.e1[job_id]:,.1f}"]
        for x in (r, a):
            cells += [
                x.placement.describe(names),
                f"{hours(x.wait):,.1f}",
                f"{hours(x.execution):,.1f}",
                f"{hours(x.jct):,.1f}",
                f"{x.cost:,.1f}",
            ]
        body.append(cells)
    note = []
    if ex.table_trimmed:
        n = len(ex.table_ids)
        note = [_t("example.table-note", n_jobs=n, metric=claim.metric.upper()), ""]
    return note + markdown_table(head, body, "lllr" + "lrrrr" * 2)


# --- Fig. 1 -----------------------------------------------------------------------------------


def _fig1(fig1: Fig1) -> list[str]:
    by_sem = []
    for sem in SEMANTICS:
        err = fig1.errors[sem.name]
        if err is None:
            runs = [
                _t(
                    "fig1.run",
                    policy=_FIG1_LABEL[r.key],
                    p=r.placements["P"],
                    q=r.placements["Q"],
                    jct=r.avg_jct_h,
                    cost=r.cost_usd,
                )
                for r in fig1.by_semantics[sem.name]
                if r.key != FIG1_POLICIES[-1]
            ]
            by_sem.append([sem.name, _t("fig1.runs", runs="; ".join(runs))])
        else:
            by_sem.append([sem.name, _t("fig1.infeasible", error=err)])
    literal = [
        [
            _FIG1_LABEL[r.key],
            r.placements["P"],
            r.placements["Q"],
            f"{r.avg_jct_h:.2f} h",
            f"${r.cost_usd:.2f}",
            FIG1_PAPER[r.key],
        ]
        for r in fig1.literal
    ]
    literal_head = ["policy", "P (Qwen2.5-14B)", "Q (Llama-3.1-70B)", "avg JCT", "cost", "paper"]

    def cell(r: Fig1Run) -> str:
        p, q = r.placements["P"], r.placements["Q"]
        return _t("fig1.rule-cell", p=p, q=q, jct=r.avg_jct_h, cost=r.cost_usd)

    by_rule = [
        [rule, *(cell(r) for r in runs if r.key != FIG1_POLICIES[-1])]
        for rule, runs in fig1.by_rule.items()
    ]
    return _lines(
        "fig1",
        by_semantics=markdown_table(["semantics", "Fig. 1 example"], by_sem),
        literal=markdown_table(literal_head, literal, "llllrl"),
        by_rule=markdown_table(["admission", "LCF", "LDF", "BACE-Pipe"], by_rule),
        walkthrough=_lines("fig1.walkthrough"),
    )


# --- the report -------------------------------------------------------------------------------


def render(data: Measurements, preemption: PreemptRanking | None = None) -> str:
    """The whole report as markdown, wrapped at 96 columns (the preemption section only with its
    runs)."""
    rows = data.rows
    seeds = rows[0].seeds
    n_runs = sum(
        len(by_seed)
        for row in rows
        for by_policy in row.runs.values()
        for by_seed in by_policy.values()
    )
    semantics = [
        _t(
            "semantics-item",
            name=sem.name,
            about=sem.about,
            knobs=", ".join(f"{k}={v!r}" for k, v in sem.knobs),
        )
        for sem in SEMANTICS
    ]
    lines = _lines(
        "report",
        n_claims=len(CLAIMS),
        n_runs=n_runs,
        command=f"bacepipe reproduce --out docs --seeds {seeds_text(seeds)}",
        n_seeds=len(seeds),
        seed_range=seed_range(seeds),
        semantics=semantics,
        n_semantics=_WORDS.get(len(SEMANTICS), str(len(SEMANTICS))),
        variants=_and([f"{v.name}" for v in VARIANTS]),
        **threshold_words(),
        summary=_summary(rows, data.failing),
        semantics_table=_semantics_table(rows),
        rows=_row_summaries(rows, data.fig1),
        robust=robust_section(data),
        physical=physical_section(data),
        absolute=_absolute(rows),
        egress=_egress(data.egress),
        preemption=_trim(render_preemption(preemption)) if preemption is not None else [],
        why=_why(rows, data.why),
        figures=_per_figure(rows),
        mechanisms=_mechanisms(data),
        fig1=_fig1(data.fig1),
        introduction=_lines("introduction"),
        not_chased=_lines("not-chased"),
    )
    return "\n".join(wrap_prose(lines)).rstrip("\n") + "\n"
