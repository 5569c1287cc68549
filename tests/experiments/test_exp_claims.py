"""The claims table of ``bacepipe reproduce`` (experiments/claims.py) is well formed, and its one
generic evaluation gives hand-computed numbers; the prose templates parse as documented."""

from __future__ import annotations

import dataclasses
import math
import re
from importlib import resources

import pytest

from bacepipe_env.experiments.claims import (
    CLAIMS,
    DEFAULT,
    DIRECTIONS,
    FIGURES,
    LABEL,
    METRICS,
    MIN_GAP_PCT,
    MIN_TREND_POINTS,
    Claim,
    Point,
    claim_groups,
    failing_claims,
    robustness,
    verdict,
)
from bacepipe_env.experiments.report_text import Templates, templates
from bacepipe_env.experiments.reproduce_runs import points
from bacepipe_env.policies.registry import make_policy

TEXT_FIELDS = ("id", "figure", "metric", "ref", "family", "words", "paper", "test", "direction")


def test_every_record_has_every_field() -> None:
    names = [f.name for f in dataclasses.fields(Claim)]
    assert set(TEXT_FIELDS) | {"policies", "points", "threshold"} == set(names)
    for c in CLAIMS:
        for name in TEXT_FIELDS:
            value = getattr(c, name)
            assert isinstance(value, str) and value.strip() == value and value, (c.id, name)
        # every record takes its kind's practical threshold, a margin on the paper's side
        assert c.threshold is None, c.id
        assert c.practical == (MIN_TREND_POINTS if c.trend else MIN_GAP_PCT) > 0.0, c.id
        assert math.isfinite(c.practical), c.id


def test_ids_are_unique_and_name_their_figure() -> None:
    ids = [c.id for c in CLAIMS]
    assert len(ids) == len(set(ids))
    for c in CLAIMS:
        # "4J-lcf" belongs to Fig. 4, "7crldf-fall" to Fig. 7
        assert c.id[0] == c.figure.removeprefix("Fig. "), c.id
        assert " " not in c.id and "`" not in c.id, c.id


def test_directions_metrics_and_figures_are_known() -> None:
    figure_names = [f.name for f in FIGURES]
    assert figure_names == ["Fig. 4", "Fig. 5", "Fig. 6", "Fig. 7", "Fig. 8"]
    for c in CLAIMS:
        assert c.direction in DIRECTIONS, c.id
        assert c.metric in METRICS, c.id
        assert c.figure in figure_names, c.id
    # every figure the report has a section for tests at least one claim
    assert {c.figure for c in CLAIMS} == set(figure_names)


def test_every_claim_is_evaluable_on_the_runs_the_report_makes() -> None:
    """A claim's policies and reference are run at each of its points (reproduce_runs.points),
    and each policy is a registered one with a display name."""
    run_at: dict[Point, tuple[str, ...]] = dict(points())
    for c in CLAIMS:
        assert c.policies and len(set(c.policies)) == len(c.policies), c.id
        assert c.ref not in c.policies, c.id
        assert len(c.points) in (1, 2), c.id
        assert len(set(c.points)) == len(c.points), c.id
        for point in c.points:
            assert point in run_at, (c.id, point)
            assert {c.ref, *c.policies} <= set(run_at[point]), (c.id, point)
        for policy in (c.ref, *c.policies):
            assert policy in LABEL, (c.id, policy)
            make_policy(policy)  # raises for an unregistered name


def _where(point: Point) -> str:
    kind, value = point
    if point == DEFAULT:
        return ""
    if kind == "jobs":
        return f", {int(value)} jobs"
    return f", {'GPUs' if kind == 'gpu' else kind} x{value:g}"


def test_the_words_agree_with_the_fields() -> None:
    """The legend's text is written by hand; it must say what the fields compute."""
    for c in CLAIMS:
        what = "JCT" if c.metric == "jct" else "cost"
        assert what in c.words, c.id
        if c.trend:
            assert c.test.endswith("(points)"), c.id
            continue
        (policy,) = c.policies
        (point,) = c.points
        expected = f"{LABEL[policy]} {what} / {LABEL[c.ref]} {what} - 1{_where(point)}"
        assert c.test == expected, c.id
        assert LABEL[policy] in c.words, c.id


class _Row:
    """A made-up row: average JCT and cost by (point, policy), the same on every seed but a
    per-seed offset for the reference's JCT."""

    seeds = (0, 1)

    def __init__(self, jct: dict[tuple[Point, str], float], cost: float = 1.0) -> None:
        self._jct = jct
        self._cost = cost

    def jct(self, point: Point, policy: str, seed: int) -> float:
        return self._jct[(point, policy)] + (seed if policy == "bace-pipe" else 0.0)

    def cost(self, point: Point, policy: str, seed: int) -> float:
        return self._cost


BW: Point = ("bandwidth", 0.3)


def test_a_gap_and_a_trend_by_hand() -> None:
    row = _Row({(DEFAULT, "bace-pipe"): 100.0, (DEFAULT, "lcf"): 150.0, (BW, "bace-pipe"): 100.0})
    row._jct[(BW, "lcf")] = 120.0
    gap = Claim("4J-x", "Fig. 4", "jct", ("lcf",), "bace-pipe", (DEFAULT,), "f", "w", "p", "t")
    # seed 0: 150 / 100 - 1 = +50%; seed 1: 150 / 101 - 1 = +48.51%
    assert gap.values(row) == pytest.approx([50.0, 100 * (150 / 101 - 1)])
    v = verdict(gap, row)
    assert v.direction and v.mark in ("✓", "✓✓")
    # a trend: the gap at the default world minus the gap at bandwidth x0.3
    trend = dataclasses.replace(gap, points=(DEFAULT, BW))
    # seed 0: 50 - 20 = 30 points; seed 1: (150/101 - 1) - (120/101 - 1) = 30/101
    assert trend.values(row) == pytest.approx([30.0, 100 * 30 / 101])


def test_direction_and_threshold_are_read_from_the_record() -> None:
    row = _Row({(DEFAULT, "bace-pipe"): 100.0, (DEFAULT, "lcf"): 150.0})
    plus = Claim("4J-x", "Fig. 4", "jct", ("lcf",), "bace-pipe", (DEFAULT,), "f", "w", "p", "t")
    minus = dataclasses.replace(plus, direction="-")
    assert minus.values(row) == [-x for x in plus.values(row)]
    assert verdict(plus, row).direction and not verdict(minus, row).direction
    # both seeds lie near +49.3%: a 60% threshold is not reached, a 40% one is; the direction
    # does not depend on it
    high = verdict(dataclasses.replace(plus, threshold=60.0), row)
    assert high.direction and not high.reproduced
    assert verdict(dataclasses.replace(plus, threshold=40.0), row).reproduced
    # a tie on every seed is "=", whatever the direction
    tie = dataclasses.replace(plus, metric="cost")
    assert verdict(tie, row).mark == "="
    assert failing_claims([row], [tie]) == [tie]


class _Costs(_Row):
    """A made-up row of costs: LCF's by point (BACE-Pipe's 100 everywhere), the same on every
    seed; a NaN stands for a run that could not finish."""

    def __init__(self, lcf: float, at_bw: float = 100.0) -> None:
        super().__init__({})
        self.lcf = {DEFAULT: lcf, BW: at_bw}

    def cost(self, point: Point, policy: str, seed: int) -> float:
        return self.lcf[point] if policy == "lcf" else 100.0


_GAP = Claim("4C-x", "Fig. 4", "cost", ("lcf",), "bace-pipe", (DEFAULT,), "f", "w", "p", "t")


def test_an_effect_below_the_threshold_is_in_direction_but_not_reproduced() -> None:
    """LCF 100.5 against BACE-Pipe 100 on both seeds: +0.5% each, so in the paper's direction
    with an interval that excludes zero (no spread at all), yet below MIN_GAP_PCT = 1%: not
    reproduced. 102 against 100 is +2%: reproduced; 101 is exactly the threshold: reproduced."""
    assert MIN_GAP_PCT == 1.0 and MIN_TREND_POINTS == 1.0
    small = verdict(_GAP, _Costs(100.5))
    assert small.est.mean == pytest.approx(0.5)
    assert small.direction and small.significant and not small.reproduced
    assert small.mark == "✓✓" and small.outcome == "not reproduced"
    big = verdict(_GAP, _Costs(102.0))
    assert big.est.mean == pytest.approx(2.0) and big.reproduced and big.outcome == "reproduced"
    assert verdict(_GAP, _Costs(101.0)).reproduced  # "at least"
    # a trend: +0.5% at the default world minus 0% at bandwidth x0.3 = 0.5 points < 1 point
    trend = dataclasses.replace(_GAP, points=(DEFAULT, BW))
    t = verdict(trend, _Costs(100.5, at_bw=100.0))
    assert t.threshold == MIN_TREND_POINTS
    assert t.est.mean == pytest.approx(0.5) and t.direction and not t.reproduced
    # +3% minus +1.5% = 1.5 points: reproduced
    assert verdict(trend, _Costs(103.0, at_bw=101.5)).reproduced


def test_robust_and_fragile_follow_from_the_verdicts() -> None:
    """Two scenarios, the base world and two variants, made-up rows: a claim is fragile exactly
    when a variant's outcome (reproduced / not reproduced / untestable) differs on a scenario."""
    base = [_Costs(105.0), _Costs(100.5)]  # reproduced on the 1st scenario, not on the 2nd
    same = robustness(
        _GAP, base, [("a", [_Costs(103.0), _Costs(100.2)]), ("b", [_Costs(109.0), _Costs(96.0)])]
    )
    assert same.robust and same.flipped_by == ()
    # variant "b" reproduces it on the second scenario: fragile, flipped by "b" alone
    flip = robustness(
        _GAP, base, [("a", [_Costs(103.0), _Costs(100.2)]), ("b", [_Costs(109.0), _Costs(101.5)])]
    )
    assert not flip.robust and flip.flipped_by == ("b",)
    # a run that cannot finish (NaN) leaves the claim untestable there: another outcome, a flip
    nan = robustness(_GAP, base, [("a", [_Costs(math.nan), _Costs(100.2)])])
    ((_, (untestable, _)),) = nan.variants
    assert untestable.outcome == "untestable" and untestable.mark == "n/a"
    assert nan.flipped_by == ("a",)


def test_groups_share_family_points_and_reference() -> None:
    groups = claim_groups(CLAIMS)
    assert sum(len(g) for g in groups) == len(CLAIMS)
    for g in groups:
        assert len({(c.family, c.points, c.ref) for c in g}) == 1


# --- the prose templates ----------------------------------------------------------------------


def test_templates_unfold_splice_and_copy() -> None:
    book = Templates(
        "a comment\n"
        "@@ para\n"
        "# Title {n}\n"
        "\n"
        "First line of a paragraph\n"
        "  continues here {x:.1f}.\n"
        "- an item\n"
        "  continued\n"
        "{table}\n"
        "\n"
        "after\n"
        "@@ copy verbatim\n"
        "kept\n"
        "  as {is}\n"
    )
    assert book.names == ("para", "copy")
    lines = book.lines("para", n=2, x=1.25, table=["| a |", "|---|"])
    assert lines == [
        "# Title 2",
        "",
        "First line of a paragraph continues here 1.2.",
        "- an item continued",
        "| a |",
        "|---|",
        "",
        "after",
    ]
    # an empty splice takes the blank line after it
    assert book.lines("para", n=1, x=0.0, table=[])[-2:] == ["- an item continued", "after"]
    assert book.lines("copy") == ["kept", "  as {is}"]
    with pytest.raises(ValueError, match="not one"):
        book.text("copy")


def test_reproduction_template_blocks_are_unique_and_fields_are_simple() -> None:
    book = templates("reproduction.md")
    assert {"report", "summary", "why", "mechanism", "fig1.walkthrough"} <= set(book.names)
    path = resources.files("bacepipe_env.experiments") / "templates" / "reproduction.md"
    text = path.read_text(encoding="utf-8")
    headers = re.findall(r"^@@ (\S+)", text, re.M)
    assert len(headers) == len(set(headers))
    # fields are plain names with an optional format spec: no attribute or index lookups
    fields = re.findall(r"\{([^{}]*)\}", text)
    assert "n_claims" in fields
    for field in fields:
        assert re.fullmatch(r"\w+(:,|:[,.0-9]*[fg])?", field), field
