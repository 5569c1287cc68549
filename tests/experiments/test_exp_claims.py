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
    Claim,
    Point,
    claim_groups,
    failing_claims,
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
        assert isinstance(c.threshold, float) and math.isfinite(c.threshold), c.id
        assert c.threshold >= 0.0, c.id  # a margin beyond zero on the paper's side


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
    # both seeds lie near +49.3%: a 60-point margin is not met, a 40-point one is
    assert not verdict(dataclasses.replace(plus, threshold=60.0), row).direction
    assert verdict(dataclasses.replace(plus, threshold=40.0), row).direction
    # a tie on every seed is "=", whatever the direction
    tie = dataclasses.replace(plus, metric="cost")
    assert verdict(tie, row).mark == "="
    assert failing_claims([row], [tie]) == [tie]


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
