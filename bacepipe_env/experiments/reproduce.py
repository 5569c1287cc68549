"""``bacepipe reproduce``: every quantitative claim of the paper's Section IV, under five
simulator semantics and three memory variants of the default one, as one generated report
(``reproduction.md`` plus Fig. 4-8 style PNGs).

The pieces: the claims as data and their evaluation (:mod:`.claims`), the runs and the
measurements (:mod:`.reproduce_runs`), the prose (``templates/reproduction.md``, filled by
:mod:`.reproduce_report`) and the charts (:mod:`.reproduce_charts`). This module ties them
together; the report is a pure function of the seeds, so the same command writes the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BacepipeError, ValidationError
from ..outputs import write_text
from .claims import ABLATIONS, BASELINES, CLAIMS, Claim, Verdict, failing_claims, verdict
from .claims import DEFAULT as DEFAULT
from .claims import FIGURES as FIGURES
from .claims import LABEL as LABEL
from .claims import REFERENCE as REFERENCE
from .experiments import check_seeds
from .preempt_ranking import PreemptRanking, run_ranking
from .report_text import seeds_text
from .reproduce_charts import chart_names as chart_names
from .reproduce_charts import draw_charts
from .reproduce_report import cell_text, render
from .reproduce_runs import CHART_SEMANTICS as CHART_SEMANTICS
from .reproduce_runs import EGRESS as EGRESS
from .reproduce_runs import SCENARIOS, SEMANTICS, RowRuns, Semantics, measure, run_rows
from .reproduce_runs import points as points
from .reproduce_runs import specs_for as specs_for
from .runner import RayBackend

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


def render_report(rows: Sequence[RowRuns], preemption: PreemptRanking | None = None) -> str:
    """The whole report as markdown (a pure function of the runs; the preemption section only
    with its runs)."""
    return render(measure(rows), preemption)


@dataclass
class ReproduceOutcome:
    """What ``reproduce`` computed and wrote."""

    report: Path
    images: list[Path]
    rows: list[RowRuns]  # the semantics'
    variants: list[RowRuns]  # the memory variants'
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
    """Run every claim's experiments under the five semantics and the three memory variants on
    both scenarios and write
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
    images, warnings = draw_charts(rows, img)
    measured = measure(rows)
    markdown = render(measured, ranking)
    report = out / "reproduction.md"
    write_text(report, markdown)
    return ReproduceOutcome(
        report, images, measured.rows, measured.variants, measured.failing, markdown, warnings
    )
