"""How ``bacepipe reproduce`` writes verdicts: a cell's text (:func:`cell_text`), a row's three
counts (:func:`counts`), and the two sections that compare verdicts across worlds: each claim
under the default world and its memory variants (robust or fragile, :func:`robust_section`),
and the physical row against greedy (:func:`physical_section`).

The comparisons themselves are :func:`.claims.robustness`; this module only puts them into the
templates of ``templates/reproduction.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .claims import (
    CLAIMS,
    LABEL,
    MIN_GAP_PCT,
    MIN_TREND_POINTS,
    Claim,
    Measured,
    Point,
    Verdict,
    robustness,
    verdict,
)
from .report_text import markdown_table, templates
from .reproduce_runs import CHART_SEMANTICS, SEMANTICS, Measurements, RowRuns

__all__ = [
    "PHYSICAL",
    "cell_text",
    "counts",
    "num_text",
    "physical_section",
    "robust_section",
    "threshold_words",
]

#: The semantics the physical row is compared with: the default world, run by Eq. (1).
PHYSICAL = SEMANTICS[-1]


def _t(block: str, /, **values: object) -> str:
    return templates("reproduction.md").text(block, **values)


def _lines(block: str, /, **values: object) -> list[str]:
    return templates("reproduction.md").lines(block, **values)


def num_text(x: float, signed: bool = True) -> str:
    """One decimal; small non-zero values with two significant digits so their sign shows."""
    if x == 0.0:
        return "0.0"
    if abs(x) < 0.05:
        text = f"{x:.2g}"
        return f"+{text}" if signed and x > 0 else text
    return f"{x:+,.1f}" if signed else f"{x:,.1f}"


def cell_text(v: Verdict) -> str:
    """``+3.6 ± 57.6 ✓``: the mean, the 95% CI half-width and the mark; ``(<1)`` after the mark
    when the mean has the paper's sign but falls short of the practical threshold."""
    if v.untestable:
        return "n/a"
    short = f" (<{v.threshold:g})" if v.direction and not v.reproduced else ""
    if math.isnan(v.est.ci95):
        return f"{num_text(v.est.mean)} {v.mark}{short}"
    return f"{num_text(v.est.mean)} ± {num_text(v.est.ci95, signed=False)} {v.mark}{short}"


def counts(row: Measured, claims: Sequence[Claim] = CLAIMS) -> tuple[int, int, int]:
    """Claims on a row in the paper's direction, those whose interval excludes zero, and those
    reproduced (the mean reaches the practical threshold)."""
    vs = [verdict(c, row) for c in claims]
    return (
        sum(v.direction for v in vs),
        sum(v.significant for v in vs),
        sum(v.reproduced for v in vs),
    )


def _ids(claims: Sequence[Claim]) -> str:
    return ", ".join(f"`{c.id}`" for c in claims) if claims else _t("robust.none")


def _reproduced(v: Verdict) -> str:
    return "reproduced" if v.reproduced else "not reproduced"


def robust_section(data: Measurements) -> list[str]:
    """Every claim under the default world and its three memory variants, robust when its
    verdict (reproduced or not) is the same under all four on both scenarios."""
    base = data.base()
    variants = data.variant_rows()
    scenarios = [r.scenario for r in base]
    n = len(CLAIMS)
    count_rows = []
    for name, rows in [(CHART_SEMANTICS.name, base), *variants]:
        for row in rows:
            d, s, r = counts(row)
            count_rows.append([name, row.scenario, f"{d}/{n}", f"{s}/{n}", f"{r}/{n}"])
    head = ["claim"]
    for sc in scenarios:
        head += [f"{CHART_SEMANTICS.name} / {sc}", *(f"{name} / {sc}" for name, _ in variants)]
    head += ["verdict", "flipped by"]
    body, fragile, robust_yes, robust_no = [], [], 0, 0
    for c in CLAIMS:
        rb = robustness(c, base, variants)
        cells = [f"`{c.id}`"]
        for i in range(len(scenarios)):
            cells += [cell_text(rb.base[i]), *(cell_text(vs[i]) for _, vs in rb.variants)]
        by = []
        for name, vs in rb.variants:
            where = [sc for sc, v, b in zip(scenarios, vs, rb.base) if v.outcome != b.outcome]
            if where:
                by.append(f"{name} ({', '.join(where)})")
        cells += ["robust" if rb.robust else "**fragile**", "; ".join(by)]
        body.append(cells)
        if not rb.robust:
            fragile.append(c)
        elif all(v.reproduced for v in rb.base):
            robust_yes += 1
        elif not any(v.reproduced for v in rb.base):
            robust_no += 1
    every = [*data.rows, *data.variants]
    failed = failed_runs(every)
    failed_words = (
        _t("robust.failed", items="; ".join(failed), error=first_error(every))
        if failed
        else _t("robust.none-failed")
    )
    return _lines(
        "robust",
        failed=failed_words,
        base=CHART_SEMANTICS.name,
        variants="; ".join(f"**{v.semantics.name}**: {_about(v)}" for v in _firsts(variants)),
        counts=markdown_table(
            ["world", "scenario", "direction", "CI excludes 0", "reproduced"],
            count_rows,
            "llrrr",
        ),
        n_claims=n,
        n_robust=n - len(fragile),
        robust_yes=robust_yes,
        robust_no=robust_no,
        robust_mixed=n - len(fragile) - robust_yes - robust_no,
        n_fragile=len(fragile),
        fragile=_ids(fragile),
        table=markdown_table(head, body, "l" + "r" * (len(head) - 3) + "ll"),
    )


def failed_runs(rows: Sequence[RowRuns]) -> list[str]:
    """The runs that could not finish, grouped by row and point: ``LCF, LDF at GPUs x0.5 under
    +2 GB reserve on paper (20 runs)``."""
    groups: dict[tuple[str, str, Point], list[str]] = {}
    counts: dict[tuple[str, str, Point], int] = {}
    for row in rows:
        for point, by_policy in row.runs.items():
            for policy, by_seed in by_policy.items():
                n = sum(bool(r.error) for r in by_seed.values())
                if n:
                    key = (row.semantics.name, row.scenario, point)
                    groups.setdefault(key, []).append(LABEL[policy])
                    counts[key] = counts.get(key, 0) + n
    return [
        _t(
            "robust.failed-item",
            policies=", ".join(pols),
            point=point_words(point),
            semantics=sem,
            scenario=sc,
            n_runs=counts[(sem, sc, point)],
        )
        for (sem, sc, point), pols in groups.items()
    ]


def first_error(rows: Sequence[RowRuns]) -> str:
    """The message of the first run that could not finish, or ``""``."""
    for row in rows:
        for by_policy in row.runs.values():
            for by_seed in by_policy.values():
                for r in by_seed.values():
                    if r.error:
                        return r.error
    return ""


def point_words(point: Point) -> str:
    """``the default world``, ``GPUs x0.5``, ``24 jobs``."""
    kind, value = point
    if kind == "default":
        return "the default world"
    if kind == "jobs":
        return f"{int(value)} jobs"
    return f"{'GPUs' if kind == 'gpu' else kind} x{value:g}"


def _firsts(variants: Sequence[tuple[str, Sequence[RowRuns]]]) -> list[RowRuns]:
    return [rows[0] for _, rows in variants]


def _about(row: RowRuns) -> str:
    sem = row.semantics
    knobs = [f"{k}={v!r}" for k, v in sem.knobs if (k, v) not in CHART_SEMANTICS.knobs]
    consts = [f"constants.{k} = {v:g}" for k, v in sem.constants]
    return f"{sem.about} (`{', '.join(knobs + consts)}`)"


def physical_section(data: Measurements) -> list[str]:
    """The claims whose verdict (reproduced or not) differs between greedy and physical on
    some scenario."""
    base = data.base()
    physical = [r for r in data.rows if r.semantics == PHYSICAL]
    n = len(CLAIMS)
    body, gained, lost = [], [], []
    for c in CLAIMS:
        rb = robustness(c, base, [(PHYSICAL.name, physical)])
        _, vs = rb.variants[0]
        if rb.robust:
            continue
        cells = [f"`{c.id}`", c.words]
        for b, v in zip(rb.base, vs):
            cells += [cell_text(b), cell_text(v)]
        body.append(cells)
        if sum(v.reproduced for v in vs) > sum(b.reproduced for b in rb.base):
            gained.append(c)
        elif sum(v.reproduced for v in vs) < sum(b.reproduced for b in rb.base):
            lost.append(c)
    head = ["claim", "the paper's words"]
    for row in base:
        head += [f"{CHART_SEMANTICS.name} / {row.scenario}", f"{PHYSICAL.name} / {row.scenario}"]
    held = [counts(r)[2] for r in physical]
    return _lines(
        "physical",
        base=CHART_SEMANTICS.name,
        held=", ".join(f"{h}/{n} on `{r.scenario}`" for h, r in zip(held, physical)),
        base_held=", ".join(f"{counts(r)[2]}/{n} on `{r.scenario}`" for r in base),
        n_changed=len(body),
        gained=_ids(gained),
        lost=_ids(lost),
        table=markdown_table(head, body, "ll" + "r" * (len(head) - 2)) if body else [],
    )


def threshold_words() -> dict[str, float]:
    """The thresholds as template fields."""
    return {"min_gap": MIN_GAP_PCT, "min_trend": MIN_TREND_POINTS}
