"""The quantitative claims of the paper's Section IV (Figs. 4-8) as data: one :class:`Claim`
record per claim in :data:`CLAIMS`, and one generic evaluation (:func:`verdict`) that turns any
record and a row of runs into an estimate and a mark.

A record names the figure, the paper's words and number, the metric it compares (average JCT
or total cost), the policies against a reference policy, the experiment points (one for a gap,
two for a trend), the sign the paper predicts and the practical threshold the mean must reach
to count as reproduced (:data:`MIN_GAP_PCT`, :data:`MIN_TREND_POINTS` unless the record sets its
own). :func:`robustness` compares the verdicts of the default world with its memory variants.
The runs
behind a row come from :mod:`.reproduce_runs`; this module needs only the
:class:`Measured` accessors, so the table and its evaluation stand alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .stats import Estimate, estimate

__all__ = [
    "ABLATIONS",
    "BASELINES",
    "CLAIMS",
    "DEFAULT",
    "DIRECTIONS",
    "FIGURES",
    "LABEL",
    "METRICS",
    "MIN_GAP_PCT",
    "MIN_TREND_POINTS",
    "REFERENCE",
    "Claim",
    "Figure",
    "Measured",
    "Point",
    "Robustness",
    "Verdict",
    "claim_groups",
    "failing_claims",
    "robustness",
    "verdict",
]

#: The policy every claim is measured against unless it names another.
REFERENCE = "bace-pipe"
#: The paper's baselines (Figs. 4-7) and ablations (Fig. 8).
BASELINES = ("lcf", "ldf", "cr-lcf", "cr-ldf")
ABLATIONS = ("no-pathfinder", "no-priority", "no-costmin")

#: Short display names of the policies, as the paper writes them.
LABEL = {
    "bace-pipe": "BACE-Pipe",
    "lcf": "LCF",
    "ldf": "LDF",
    "cr-lcf": "CR-LCF",
    "cr-ldf": "CR-LDF",
    "no-pathfinder": "w/o Pathfinder",
    "no-priority": "w/o Priority",
    "no-costmin": "w/o Cost-Min",
}

#: An experiment point: ("default", 0), a sweep's (kind, value) or ("egress", $/GB).
Point = tuple[str, float]
DEFAULT: Point = ("default", 0.0)

#: The metrics a claim may compare: average JCT (h) or total electricity cost ($).
METRICS = ("jct", "cost")
#: A claim's direction: the sign the paper gives its per-seed quantity, as a factor.
DIRECTIONS = {"+": 1.0, "-": -1.0}

#: The practical thresholds: a claim counts as reproduced only when its oriented mean reaches
#: one. For a gap, 1% of the reference's JCT or cost: below the resolution the paper's bar
#: charts are read at, and the size of the differences that come from a tie broken another way
#: (a different even split of one path). For a trend, 1 percentage point between two gaps.
MIN_GAP_PCT = 1.0  # percent: 100 * (x_policy / x_ref - 1), mean over the seeds
MIN_TREND_POINTS = 1.0  # percentage points: a gap at one point minus the gap at another


@dataclass(frozen=True)
class Figure:
    """A figure of Section IV and the chart the report draws for it."""

    name: str  # "Fig. 4", as claims cite it
    shows: str  # what the figure varies
    chart: str  # the report's chart, img/<chart>-<scenario>.png
    style: str  # the chart's alt text after "<name> style: "


FIGURES = (
    Figure("Fig. 4", "end-to-end (8 jobs, default resources)", "compare",
           "average JCT and cost normalised to BACE-Pipe"),
    Figure("Fig. 5", "bandwidth x{0.3, 0.9, 1.5}", "sweep-bandwidth",
           "sensitivity to inter-region bandwidth"),
    Figure("Fig. 6", "GPUs x{0.5, 0.75, 1.25}", "sweep-gpu", "sensitivity to GPU capacity"),
    Figure("Fig. 7", "8 to 24 jobs", "sweep-jobs", "sensitivity to the number of jobs"),
    Figure("Fig. 8", "ablation", "ablation", "the ablations against BACE-Pipe"),
)  # fmt: skip


class Measured(Protocol):
    """What a claim reads from a row of runs: the seeds, and each run's average JCT and total
    cost by point, policy and seed (:class:`~.reproduce_runs.RowRuns`)."""

    @property
    def seeds(self) -> tuple[int, ...]:
        """The row's seeds, in order."""

    def jct(self, point: Point, policy: str, seed: int) -> float:
        """Average JCT (h)."""

    def cost(self, point: Point, policy: str, seed: int) -> float:
        """Total cost ($)."""


@dataclass(frozen=True)
class Claim:
    """One quantitative claim of Section IV, tested by the sign of a per-seed quantity.

    With one point the quantity is ``100 * (x_policy / x_ref - 1)`` (averaged over
    ``policies`` when there are several); with two points it is that gap at ``points[0]``
    minus the gap at ``points[1]``, in percentage points. ``direction`` is the sign the paper
    gives that quantity; the report shows it oriented (times the direction), so positive is
    the paper's direction. The claim holds in direction when the oriented mean is positive, and
    is reproduced when it reaches :attr:`practical` (``threshold``, else the kind's default).
    """

    id: str
    figure: str  # a Figure.name
    metric: str  # one of METRICS
    policies: tuple[str, ...]
    ref: str
    points: tuple[Point, ...]
    family: str  # claims that one mechanism explains
    words: str  # the paper's words
    paper: str  # the number the paper gives
    test: str  # the per-seed quantity, in words
    direction: str = "+"  # a key of DIRECTIONS
    threshold: float | None = None  # percent (points for a trend); None: the kind's default

    def gap(self, row: Measured, seed: int, point: Point, policy: str) -> float:
        """``100 * (x_policy / x_ref - 1)`` on one seed at one point."""
        get = row.jct if self.metric == "jct" else row.cost
        return 100.0 * (get(point, policy, seed) / get(point, self.ref, seed) - 1.0)

    def policy_quantity(self, row: Measured, seed: int, policy: str) -> float:
        """The oriented per-seed quantity for one of the claim's policies alone."""
        first = self.gap(row, seed, self.points[0], policy)
        if self.trend:
            first -= self.gap(row, seed, self.points[1], policy)
        return DIRECTIONS[self.direction] * first

    def quantity(self, row: Measured, seed: int) -> float:
        """The oriented per-seed quantity (percent, or percentage points for a trend)."""

        def mean_gap(point: Point) -> float:
            return math.fsum(self.gap(row, seed, point, p) for p in self.policies) / len(
                self.policies
            )

        value = mean_gap(self.points[0])
        if self.trend:
            value -= mean_gap(self.points[1])
        return DIRECTIONS[self.direction] * value

    def values(self, row: Measured) -> list[float]:
        """The per-seed quantity on every seed of the row."""
        return [self.quantity(row, s) for s in row.seeds]

    def estimate(self, row: Measured) -> Estimate:
        """Mean ± 95% CI of the per-seed quantity."""
        return estimate(self.values(row))

    @property
    def trend(self) -> bool:
        """Whether the claim compares a gap at two points."""
        return len(self.points) == 2

    @property
    def practical(self) -> float:
        """The oriented mean the claim must reach to count as reproduced."""
        if self.threshold is not None:
            return self.threshold
        return MIN_TREND_POINTS if self.trend else MIN_GAP_PCT


_REF = REFERENCE
_BW03: Point = ("bandwidth", 0.3)
_BW15: Point = ("bandwidth", 1.5)
_GPU05: Point = ("gpu", 0.5)
_GPU125: Point = ("gpu", 1.25)
_JOBS8: Point = ("jobs", 8.0)
_JOBS24: Point = ("jobs", 24.0)
_F4J = "+27.9% to +64.7% (range over the four)"
_F4C = "+12.6% to +30.6% (range over the four)"

# One record per claim: id, figure, metric, policies, reference, points, family; the paper's
# words, the paper's number, the per-seed quantity in words; direction. Every record takes its
# kind's practical threshold (MIN_GAP_PCT, MIN_TREND_POINTS).
# fmt: off
CLAIMS: tuple[Claim, ...] = (
    Claim("4J-lcf", "Fig. 4", "jct", ("lcf",), _REF, (DEFAULT,), "jct",
          "LCF has a longer average JCT than BACE-Pipe", _F4J,
          "LCF JCT / BACE-Pipe JCT - 1", "+"),
    Claim("4J-ldf", "Fig. 4", "jct", ("ldf",), _REF, (DEFAULT,), "jct",
          "LDF has a longer average JCT than BACE-Pipe",
          f"{_F4J}; +27.9% implied (1.647 / 1.288)",
          "LDF JCT / BACE-Pipe JCT - 1", "+"),
    Claim("4J-crlcf", "Fig. 4", "jct", ("cr-lcf",), _REF, (DEFAULT,), "jct",
          "CR-LCF has a longer average JCT than BACE-Pipe",
          f"{_F4J}; +44.7% implied (1.279 x 1.131)",
          "CR-LCF JCT / BACE-Pipe JCT - 1", "+"),
    Claim("4J-crldf", "Fig. 4", "jct", ("cr-ldf",), _REF, (DEFAULT,), "jct",
          "CR-LDF has a longer average JCT than BACE-Pipe", f"{_F4J}; +64.7% (Sec. IV-D)",
          "CR-LDF JCT / BACE-Pipe JCT - 1", "+"),
    Claim("4C-lcf", "Fig. 4", "cost", ("lcf",), _REF, (DEFAULT,), "cost",
          "LCF has a higher total cost than BACE-Pipe", _F4C,
          "LCF cost / BACE-Pipe cost - 1", "+"),
    Claim("4C-ldf", "Fig. 4", "cost", ("ldf",), _REF, (DEFAULT,), "cost",
          "LDF has a higher total cost than BACE-Pipe", _F4C,
          "LDF cost / BACE-Pipe cost - 1", "+"),
    Claim("4C-crlcf", "Fig. 4", "cost", ("cr-lcf",), _REF, (DEFAULT,), "cost",
          "CR-LCF has a higher total cost than BACE-Pipe", _F4C,
          "CR-LCF cost / BACE-Pipe cost - 1", "+"),
    Claim("4C-crldf", "Fig. 4", "cost", ("cr-ldf",), _REF, (DEFAULT,), "cost",
          "CR-LDF has a higher total cost than BACE-Pipe", _F4C,
          "CR-LDF cost / BACE-Pipe cost - 1", "+"),
    Claim("4P-crldf", "Fig. 4", "jct", ("cr-ldf",), "ldf", (DEFAULT,), "paradox",
          "cross-region paradox: CR-LDF has a longer average JCT than LDF", "+28.8%",
          "CR-LDF JCT / LDF JCT - 1", "+"),
    Claim("4P-crlcf", "Fig. 4", "jct", ("cr-lcf",), "ldf", (DEFAULT,), "paradox",
          "cross-region paradox: CR-LCF has a longer average JCT than LDF", "+13.1%",
          "CR-LCF JCT / LDF JCT - 1", "+"),
    Claim("5J.3-ldf", "Fig. 5", "jct", ("ldf",), _REF, (_BW03,), "jct",
          "at 0.3x bandwidth LDF has a longer average JCT than BACE-Pipe", "+10.7%",
          "LDF JCT / BACE-Pipe JCT - 1, bandwidth x0.3", "+"),
    Claim("5J.3-crldf", "Fig. 5", "jct", ("cr-ldf",), _REF, (_BW03,), "jct",
          "at 0.3x bandwidth CR-LDF has a longer average JCT than BACE-Pipe", "+26.2%",
          "CR-LDF JCT / BACE-Pipe JCT - 1, bandwidth x0.3", "+"),
    Claim("5C.3-lcf", "Fig. 5", "cost", ("lcf",), _REF, (_BW03,), "cost",
          "at 0.3x bandwidth LCF has a higher cost than BACE-Pipe", "+29.2% to +34.9% (range)",
          "LCF cost / BACE-Pipe cost - 1, bandwidth x0.3", "+"),
    Claim("5C.3-ldf", "Fig. 5", "cost", ("ldf",), _REF, (_BW03,), "cost",
          "at 0.3x bandwidth LDF has a higher cost than BACE-Pipe", "+29.2% to +34.9% (range)",
          "LDF cost / BACE-Pipe cost - 1, bandwidth x0.3", "+"),
    Claim("5C.3-crlcf", "Fig. 5", "cost", ("cr-lcf",), _REF, (_BW03,), "cost",
          "at 0.3x bandwidth CR-LCF has a higher cost than BACE-Pipe",
          "+29.2% to +34.9% (range)",
          "CR-LCF cost / BACE-Pipe cost - 1, bandwidth x0.3", "+"),
    Claim("5C.3-crldf", "Fig. 5", "cost", ("cr-ldf",), _REF, (_BW03,), "cost",
          "at 0.3x bandwidth CR-LDF has a higher cost than BACE-Pipe",
          "+29.2% to +34.9% (range)",
          "CR-LDF cost / BACE-Pipe cost - 1, bandwidth x0.3", "+"),
    Claim("5J1.5-lcf", "Fig. 5", "jct", ("lcf",), _REF, (_BW15,), "jct",
          "at 1.5x bandwidth LCF has a longer average JCT than BACE-Pipe",
          "+42.9% to +240.3% (range)",
          "LCF JCT / BACE-Pipe JCT - 1, bandwidth x1.5", "+"),
    Claim("5J1.5-ldf", "Fig. 5", "jct", ("ldf",), _REF, (_BW15,), "jct",
          "at 1.5x bandwidth LDF has a longer average JCT than BACE-Pipe",
          "+42.9% to +240.3% (range)",
          "LDF JCT / BACE-Pipe JCT - 1, bandwidth x1.5", "+"),
    Claim("5J1.5-crlcf", "Fig. 5", "jct", ("cr-lcf",), _REF, (_BW15,), "jct",
          "at 1.5x bandwidth CR-LCF has a longer average JCT than BACE-Pipe",
          "+42.9% to +240.3% (range)",
          "CR-LCF JCT / BACE-Pipe JCT - 1, bandwidth x1.5", "+"),
    Claim("5J1.5-crldf", "Fig. 5", "jct", ("cr-ldf",), _REF, (_BW15,), "jct",
          "at 1.5x bandwidth CR-LDF has a longer average JCT than BACE-Pipe", "+240.3% (3.4x)",
          "CR-LDF JCT / BACE-Pipe JCT - 1, bandwidth x1.5", "+"),
    Claim("5C1.5-lcf", "Fig. 5", "cost", ("lcf",), _REF, (_BW15,), "cost",
          "at 1.5x bandwidth LCF has a higher cost than BACE-Pipe", "+14.3% to +28.5% (range)",
          "LCF cost / BACE-Pipe cost - 1, bandwidth x1.5", "+"),
    Claim("5C1.5-ldf", "Fig. 5", "cost", ("ldf",), _REF, (_BW15,), "cost",
          "at 1.5x bandwidth LDF has a higher cost than BACE-Pipe", "+14.3% to +28.5% (range)",
          "LDF cost / BACE-Pipe cost - 1, bandwidth x1.5", "+"),
    Claim("5C1.5-crlcf", "Fig. 5", "cost", ("cr-lcf",), _REF, (_BW15,), "cost",
          "at 1.5x bandwidth CR-LCF has a higher cost than BACE-Pipe",
          "+14.3% to +28.5% (range)",
          "CR-LCF cost / BACE-Pipe cost - 1, bandwidth x1.5", "+"),
    Claim("5C1.5-crldf", "Fig. 5", "cost", ("cr-ldf",), _REF, (_BW15,), "cost",
          "at 1.5x bandwidth CR-LDF has a higher cost than BACE-Pipe", "+19.0%",
          "CR-LDF cost / BACE-Pipe cost - 1, bandwidth x1.5", "+"),
    Claim("5grow", "Fig. 5", "jct", BASELINES, _REF, (_BW15, _BW03), "bandwidth-trend",
          "BACE-Pipe's JCT advantage grows with bandwidth (0.3x to 1.5x)",
          "+10.7% / +26.2% at 0.3x; +42.9% to +240.3% at 1.5x",
          "mean baseline JCT gap at x1.5 minus at x0.3 (points)", "+"),
    Claim("6J.5-lcf", "Fig. 6", "jct", ("lcf",), _REF, (_GPU05,), "jct",
          "at 0.5x GPUs LCF has a longer average JCT than BACE-Pipe", "+32.2% to +69.9% (range)",
          "LCF JCT / BACE-Pipe JCT - 1, GPUs x0.5", "+"),
    Claim("6J.5-ldf", "Fig. 6", "jct", ("ldf",), _REF, (_GPU05,), "jct",
          "at 0.5x GPUs LDF has a longer average JCT than BACE-Pipe", "+32.2% to +69.9% (range)",
          "LDF JCT / BACE-Pipe JCT - 1, GPUs x0.5", "+"),
    Claim("6J.5-crlcf", "Fig. 6", "jct", ("cr-lcf",), _REF, (_GPU05,), "jct",
          "at 0.5x GPUs CR-LCF has a longer average JCT than BACE-Pipe",
          "+32.2% to +69.9%; CR-* near +70%",
          "CR-LCF JCT / BACE-Pipe JCT - 1, GPUs x0.5", "+"),
    Claim("6J.5-crldf", "Fig. 6", "jct", ("cr-ldf",), _REF, (_GPU05,), "jct",
          "at 0.5x GPUs CR-LDF has a longer average JCT than BACE-Pipe",
          "+32.2% to +69.9%; CR-* near +70%",
          "CR-LDF JCT / BACE-Pipe JCT - 1, GPUs x0.5", "+"),
    Claim("6C.5-lcf", "Fig. 6", "cost", ("lcf",), _REF, (_GPU05,), "cost",
          "at 0.5x GPUs LCF has a higher cost than BACE-Pipe", "+24.1% to +42.5% (range)",
          "LCF cost / BACE-Pipe cost - 1, GPUs x0.5", "+"),
    Claim("6C.5-ldf", "Fig. 6", "cost", ("ldf",), _REF, (_GPU05,), "cost",
          "at 0.5x GPUs LDF has a higher cost than BACE-Pipe", "+24.1% to +42.5% (range)",
          "LDF cost / BACE-Pipe cost - 1, GPUs x0.5", "+"),
    Claim("6C.5-crlcf", "Fig. 6", "cost", ("cr-lcf",), _REF, (_GPU05,), "cost",
          "at 0.5x GPUs CR-LCF has a higher cost than BACE-Pipe", "+24.1% to +42.5% (range)",
          "CR-LCF cost / BACE-Pipe cost - 1, GPUs x0.5", "+"),
    Claim("6C.5-crldf", "Fig. 6", "cost", ("cr-ldf",), _REF, (_GPU05,), "cost",
          "at 0.5x GPUs CR-LDF has a higher cost than BACE-Pipe", "+24.1% to +42.5% (range)",
          "CR-LDF cost / BACE-Pipe cost - 1, GPUs x0.5", "+"),
    Claim("6C.5-lcf>ldf", "Fig. 6", "cost", ("lcf",), "ldf", (_GPU05,), "lcf-ldf",
          "at 0.5x GPUs LCF costs more than LDF", "LCF above LDF (no number)",
          "LCF cost / LDF cost - 1, GPUs x0.5", "+"),
    Claim("6J1.25-lcf", "Fig. 6", "jct", ("lcf",), _REF, (_GPU125,), "jct",
          "at 1.25x GPUs LCF still has a longer average JCT than BACE-Pipe",
          "+5.5% to +20.7% (range)",
          "LCF JCT / BACE-Pipe JCT - 1, GPUs x1.25", "+"),
    Claim("6J1.25-ldf", "Fig. 6", "jct", ("ldf",), _REF, (_GPU125,), "jct",
          "at 1.25x GPUs LDF still has a longer average JCT than BACE-Pipe",
          "+5.5% to +20.7% (range)",
          "LDF JCT / BACE-Pipe JCT - 1, GPUs x1.25", "+"),
    Claim("6J1.25-crlcf", "Fig. 6", "jct", ("cr-lcf",), _REF, (_GPU125,), "jct",
          "at 1.25x GPUs CR-LCF still has a longer average JCT than BACE-Pipe",
          "+5.5% to +20.7% (range)",
          "CR-LCF JCT / BACE-Pipe JCT - 1, GPUs x1.25", "+"),
    Claim("6J1.25-crldf", "Fig. 6", "jct", ("cr-ldf",), _REF, (_GPU125,), "jct",
          "at 1.25x GPUs CR-LDF still has a longer average JCT than BACE-Pipe",
          "+5.5% to +20.7% (range)",
          "CR-LDF JCT / BACE-Pipe JCT - 1, GPUs x1.25", "+"),
    Claim("6C1.25-lcf", "Fig. 6", "cost", ("lcf",), _REF, (_GPU125,), "cost",
          "at 1.25x GPUs LCF still has a higher cost than BACE-Pipe", "+0.2% to +9.4% (range)",
          "LCF cost / BACE-Pipe cost - 1, GPUs x1.25", "+"),
    Claim("6C1.25-ldf", "Fig. 6", "cost", ("ldf",), _REF, (_GPU125,), "cost",
          "at 1.25x GPUs LDF still has a higher cost than BACE-Pipe", "+0.2% to +9.4% (range)",
          "LDF cost / BACE-Pipe cost - 1, GPUs x1.25", "+"),
    Claim("6C1.25-crlcf", "Fig. 6", "cost", ("cr-lcf",), _REF, (_GPU125,), "cost",
          "at 1.25x GPUs CR-LCF still has a higher cost than BACE-Pipe",
          "+0.2% to +9.4% (range)",
          "CR-LCF cost / BACE-Pipe cost - 1, GPUs x1.25", "+"),
    Claim("6C1.25-crldf", "Fig. 6", "cost", ("cr-ldf",), _REF, (_GPU125,), "cost",
          "at 1.25x GPUs CR-LDF still has a higher cost than BACE-Pipe",
          "+0.2% to +9.4% (range)",
          "CR-LDF cost / BACE-Pipe cost - 1, GPUs x1.25", "+"),
    Claim("6narrow", "Fig. 6", "jct", BASELINES, _REF, (_GPU05, _GPU125), "gpu-trend",
          "the JCT gaps narrow from 0.5x to 1.25x GPUs", "+32.2% to +69.9% -> +5.5% to +20.7%",
          "mean baseline JCT gap at x0.5 minus at x1.25 (points)", "+"),
    Claim("7crldf-fall", "Fig. 7", "jct", ("cr-ldf",), _REF, (_JOBS8, _JOBS24), "jobs-trend",
          "CR-LDF's JCT overhead falls from 8 to 24 jobs", "+64.7% -> +21.7% (43.0 points)",
          "CR-LDF JCT gap at 8 jobs minus at 24 jobs (points)", "+"),
    Claim("7J24-lcf", "Fig. 7", "jct", ("lcf",), _REF, (_JOBS24,), "jct",
          "at 24 jobs BACE-Pipe has a shorter average JCT than LCF",
          "9.7% to 23.3% improvement (range)",
          "LCF JCT / BACE-Pipe JCT - 1, 24 jobs", "+"),
    Claim("7J24-ldf", "Fig. 7", "jct", ("ldf",), _REF, (_JOBS24,), "jct",
          "at 24 jobs BACE-Pipe has a shorter average JCT than LDF",
          "9.7% to 23.3% improvement (range)",
          "LDF JCT / BACE-Pipe JCT - 1, 24 jobs", "+"),
    Claim("7J24-crlcf", "Fig. 7", "jct", ("cr-lcf",), _REF, (_JOBS24,), "jct",
          "at 24 jobs BACE-Pipe has a shorter average JCT than CR-LCF",
          "9.7% to 23.3% improvement (range)",
          "CR-LCF JCT / BACE-Pipe JCT - 1, 24 jobs", "+"),
    Claim("7J24-crldf", "Fig. 7", "jct", ("cr-ldf",), _REF, (_JOBS24,), "jct",
          "at 24 jobs BACE-Pipe has a shorter average JCT than CR-LDF",
          "9.7% to 23.3% improvement (range)",
          "CR-LDF JCT / BACE-Pipe JCT - 1, 24 jobs", "+"),
    Claim("7crlcf-cost", "Fig. 7", "cost", ("cr-lcf",), _REF, (_JOBS8, _JOBS24), "jobs-trend",
          "the cost advantage over CR-LCF shrinks (to about 1% at 20-24 jobs)",
          "about +1% at 20-24 jobs",
          "CR-LCF cost gap at 8 jobs minus at 24 jobs (points)", "+"),
    Claim("8J-pf", "Fig. 8", "jct", ("no-pathfinder",), _REF, (DEFAULT,), "ablation-pf",
          "w/o Pathfinder has a longer average JCT than BACE-Pipe", "+52.5%",
          "w/o Pathfinder JCT / BACE-Pipe JCT - 1", "+"),
    Claim("8C-pf", "Fig. 8", "cost", ("no-pathfinder",), _REF, (DEFAULT,), "ablation-pf",
          "w/o Pathfinder has a higher total cost than BACE-Pipe", "+20.5%",
          "w/o Pathfinder cost / BACE-Pipe cost - 1", "+"),
    Claim("8J-pr", "Fig. 8", "jct", ("no-priority",), _REF, (DEFAULT,), "ablation-pr",
          "w/o Priority has a longer average JCT than BACE-Pipe", "+41.9%",
          "w/o Priority JCT / BACE-Pipe JCT - 1", "+"),
    Claim("8C-pr", "Fig. 8", "cost", ("no-priority",), _REF, (DEFAULT,), "ablation-pr",
          "w/o Priority has a higher total cost than BACE-Pipe", "+5.0%",
          "w/o Priority cost / BACE-Pipe cost - 1", "+"),
    Claim("8J-cm", "Fig. 8", "jct", ("no-costmin",), _REF, (DEFAULT,), "ablation-cm",
          "w/o Cost-Min has a longer average JCT than BACE-Pipe", "+4.6%",
          "w/o Cost-Min JCT / BACE-Pipe JCT - 1", "+"),
    Claim("8C-cm", "Fig. 8", "cost", ("no-costmin",), _REF, (DEFAULT,), "ablation-cm",
          "w/o Cost-Min has a higher total cost than BACE-Pipe", "+13.9%",
          "w/o Cost-Min cost / BACE-Pipe cost - 1", "+"),
)
# fmt: on


# --- evaluation -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """A claim's estimate on one row and what it says about the paper's direction."""

    est: Estimate  # of the oriented per-seed quantity
    zero: bool  # the quantity is exactly zero on every seed
    threshold: float = 0.0  # the claim's practical threshold (Claim.practical)

    @property
    def untestable(self) -> bool:
        """Some run of the claim could not finish (the quantity is NaN on some seed)."""
        return math.isnan(self.est.mean)

    @property
    def direction(self) -> bool:
        """The mean has the paper's sign."""
        return not self.zero and self.est.mean > 0.0

    @property
    def significant(self) -> bool:
        """The mean has the paper's sign and the 95% CI excludes zero."""
        ci = self.est.ci95
        return self.direction and not math.isnan(ci) and self.est.mean > ci

    @property
    def reproduced(self) -> bool:
        """The mean reaches the practical threshold on the paper's side."""
        return self.direction and self.est.mean >= self.threshold

    @property
    def opposite(self) -> bool:
        """The mean has the other sign and the 95% CI excludes zero."""
        ci = self.est.ci95
        return not self.zero and not math.isnan(ci) and self.est.mean < -ci

    @property
    def outcome(self) -> str:
        """``reproduced``, ``not reproduced`` or ``untestable``: what robustness compares."""
        if self.untestable:
            return "untestable"
        return "reproduced" if self.reproduced else "not reproduced"

    @property
    def mark(self) -> str:
        """``✓✓`` / ``✓`` / ``=`` / ``✗`` / ``✗✗`` / ``n/a`` (see the report's legend)."""
        if self.untestable:
            return "n/a"
        if self.zero:
            return "="
        if self.direction:
            return "✓✓" if self.significant else "✓"
        return "✗✗" if self.opposite else "✗"


def verdict(claim: Claim, row: Measured) -> Verdict:
    """The claim's estimate and marks on one row: the one evaluation every record goes through."""
    values = claim.values(row)
    return Verdict(estimate(values), all(v == 0.0 for v in values), claim.practical)


@dataclass(frozen=True)
class Robustness:
    """A claim's verdicts in a world and in that world's variants, scenario by scenario."""

    claim: Claim
    base: tuple[Verdict, ...]  # by scenario
    variants: tuple[tuple[str, tuple[Verdict, ...]], ...]  # (variant, verdicts by scenario)

    @property
    def flipped_by(self) -> tuple[str, ...]:
        """The variants under which the claim's outcome (reproduced, not reproduced or
        untestable) differs from the base world's on some scenario."""
        return tuple(
            name
            for name, vs in self.variants
            if any(v.outcome != b.outcome for v, b in zip(vs, self.base, strict=True))
        )

    @property
    def robust(self) -> bool:
        """The claim's verdict is the same in the base world and under every variant."""
        return not self.flipped_by


def robustness(
    claim: Claim, base: Sequence[Measured], variants: Sequence[tuple[str, Sequence[Measured]]]
) -> Robustness:
    """The claim on the base world's rows and on each variant's rows (the same scenarios, in
    the same order)."""
    return Robustness(
        claim,
        tuple(verdict(claim, r) for r in base),
        tuple((name, tuple(verdict(claim, r) for r in rows)) for name, rows in variants),
    )


def failing_claims(rows: Sequence[Measured], claims: Sequence[Claim] = CLAIMS) -> list[Claim]:
    """The claims whose direction no row reproduces."""
    return [c for c in claims if not any(verdict(c, r).direction for r in rows)]


def claim_groups(claims: Sequence[Claim]) -> list[list[Claim]]:
    """Claims that one mechanism explains: the same family, points and reference."""
    out: dict[tuple[Any, ...], list[Claim]] = {}
    for c in claims:
        out.setdefault((c.family, c.points, c.ref), []).append(c)
    return list(out.values())
