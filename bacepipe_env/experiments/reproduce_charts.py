"""The charts of ``bacepipe reproduce`` (Figs. 4-8 style, and each policy under every
semantics), drawn from the default world's runs; ``docs/reproduction.md`` links them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import BacepipeError
from .claims import ABLATIONS, BASELINES, DEFAULT, LABEL, REFERENCE
from .experiments import SWEEPS
from .plots import bar_chart, grouped_bar_chart, sweep_chart
from .reproduce_runs import CHART_SEMANTICS, SCENARIOS, SEMANTICS, RowRuns
from .summary import PolicyStats

__all__ = ["chart_names", "draw_charts"]


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


def draw_charts(rows: Sequence[RowRuns], img: Path) -> tuple[list[Path], list[str]]:
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
                        f"each policy against BACE-Pipe under every semantics: {sc}, "
                        f"default world, {n} seeds",
                        LABEL[REFERENCE],
                    )
                )
    except BacepipeError as err:
        return written, [str(err)]
    return written, []
