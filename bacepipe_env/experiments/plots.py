"""Charts in the style of the paper's Figs. 4-8, and the mean-JCT charts of ``bacepipe
evaluate --plot`` and ``bacepipe headroom --plot`` (matplotlib, imported only when drawing)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BacepipeError
from ..outputs import save_figure
from .stats import estimate
from .summary import PolicyStats

if TYPE_CHECKING:  # the reports' modules need nothing from here
    from .evaluate import EvaluationReport
    from .headroom import HeadroomReport

__all__ = [
    "bar_chart",
    "evaluation_chart",
    "grouped_bar_chart",
    "headroom_chart",
    "series_styles",
    "sweep_chart",
]

#: matplotlib's ten default colours (tab10), named so that no style sheet changes them.
TAB10 = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = "osD^v<>pPX*h"


def series_styles(n: int) -> list[dict[str, str]]:
    """Line styles for ``n`` series, all different: series ``i`` has colour ``i % 10``
    (:data:`TAB10`), line style ``i // 10`` (solid, dashed, dotted, dash-dot, round again)
    and marker ``i % 12``, so no two of the first 120 share all three (and no two of the
    first 40 share colour and line style). Keys are ``plot``'s: ``color``, ``linestyle``,
    ``marker``."""
    return [
        {
            "color": TAB10[i % len(TAB10)],
            "linestyle": LINESTYLES[(i // len(TAB10)) % len(LINESTYLES)],
            "marker": MARKERS[i % len(MARKERS)],
        }
        for i in range(n)
    ]


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise BacepipeError("charts need matplotlib: pip install 'bacepipe-env[viz]'") from None
    return plt


def bar_chart(stats: Sequence[PolicyStats], path: Path, title: str, reference: str) -> Path:
    """Grouped bars of average JCT and total cost per policy, normalised to ``reference``,
    with 95% CI error bars (the paper's Figs. 4 and 8)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(stats) + 2), 3.6), dpi=120)
    width = 0.38
    xs = range(len(stats))
    for offset, attr, label, colour in (
        (-width / 2, "jct_norm", "Avg. JCT", "#4C72B0"),
        (width / 2, "cost_norm", "Total Cost", "#DD8452"),
    ):
        means = [getattr(s, attr).mean for s in stats]
        errs = [0.0 if getattr(s, attr).n < 2 else getattr(s, attr).ci95 for s in stats]
        ax.bar(
            [x + offset for x in xs], means, width, yerr=errs, capsize=3, label=label, color=colour
        )
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([s.policy for s in stats], rotation=20, ha="right")
    ax.set_ylabel(f"normalised to {reference}")
    ax.set_title(title, fontsize=10)
    ax.legend(frameon=False, ncol=2, fontsize=9)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path


def sweep_chart(
    xs: Sequence[float],
    series: Mapping[str, Sequence[PolicyStats]],
    path: Path,
    xlabel: str,
    title: str,
    reference: str,
) -> Path:
    """Two panels (average JCT, total cost) of normalised values against the swept knob, one
    line per policy, with 95% CI bands (the paper's Figs. 5-7). ``series[policy][i]`` is the
    policy's stats at ``xs[i]``."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), dpi=120)
    for ax, attr, ylabel in (
        (axes[0], "jct_norm", "Avg. JCT"),
        (axes[1], "cost_norm", "Total Cost"),
    ):
        for policy, stats in series.items():
            means = [getattr(s, attr).mean for s in stats]
            errs = [0.0 if getattr(s, attr).n < 2 else getattr(s, attr).ci95 for s in stats]
            ax.errorbar(xs, means, yerr=errs, marker="o", capsize=3, label=policy)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"{ylabel} / {reference}")
        ax.set_xticks(list(xs))
        ax.grid(alpha=0.3)
    axes[0].legend(frameon=False, fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path


def grouped_bar_chart(
    categories: Sequence[str],
    series: Mapping[str, Sequence[PolicyStats]],
    path: Path,
    title: str,
    reference: str,
) -> Path:
    """Two stacked panels (average JCT, total cost) of values normalised to ``reference``: one
    group of bars per category, one bar per series, with 95% CI error bars. ``series[name][i]``
    is the stats of ``categories[i]`` under that series (for example one simulator semantics)."""
    plt = _pyplot()
    n = max(1, len(series))
    fig, axes = plt.subplots(
        2, 1, figsize=(max(6.0, 1.15 * len(categories) + 1.5), 6.4), dpi=120, sharex=True
    )
    width = 0.8 / n
    xs = range(len(categories))
    for ax, attr, ylabel in (
        (axes[0], "jct_norm", "Avg. JCT"),
        (axes[1], "cost_norm", "Total Cost"),
    ):
        for k, (name, stats) in enumerate(series.items()):
            means = [getattr(s, attr).mean for s in stats]
            errs = [0.0 if getattr(s, attr).n < 2 else getattr(s, attr).ci95 for s in stats]
            offset = (k - (n - 1) / 2) * width
            ax.bar([x + offset for x in xs], means, width, yerr=errs, capsize=2, label=name)
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        ax.set_ylabel(f"{ylabel} / {reference}")
        ax.grid(axis="y", alpha=0.3)
    axes[1].set_xticks(list(xs))
    axes[1].set_xticklabels(list(categories), rotation=20, ha="right")
    axes[0].legend(frameon=False, fontsize=8, ncol=min(n, 4))
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path


#: A dot chart's plain rows, then its marked ones (colour, marker), in order of marking.
_DOT = ("#4C72B0", "o")
_MARKED = (("#d62728", "D"), ("#2ca02c", "s"))


def _dot_chart(
    rows: Sequence[tuple[str, float, float]],
    path: str | Path,
    title: str,
    marks: Mapping[str, str],
) -> Path:
    """One row per ``(name, mean JCT h, 95% CI half-width)``, top to bottom: a dot at the
    mean with a bar over its interval (none for a NaN half-width; no dot for a non-finite
    mean). ``marks`` maps a row's name to what it is (``best heuristic``): such rows get
    their own colour and marker and that note after their name, and a dashed line runs down
    from the first one's mean."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 1.4 + 0.3 * len(rows)), dpi=120)
    ys = range(len(rows))
    for y, (name, mean, ci) in zip(ys, rows):
        if not math.isfinite(mean):
            continue
        order = list(marks).index(name) if name in marks else None
        colour, marker = _DOT if order is None else _MARKED[order % len(_MARKED)]
        ax.errorbar(
            [mean],
            [y],
            xerr=None if math.isnan(ci) else [ci],
            fmt=marker,
            color=colour,
            capsize=3,
            markersize=6,
        )
    first = next((r for r in rows if r[0] in marks and math.isfinite(r[1])), None)
    if first is not None:
        ax.axvline(first[1], color="grey", linewidth=0.8, linestyle="--")
    ax.set_yticks(list(ys))
    ax.set_yticklabels(
        [f"{r[0]} ({marks[r[0]]})" if r[0] in marks else r[0] for r in rows], fontsize=8
    )
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the first row at the top
    ax.set_xlabel("mean JCT (h)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return Path(path)


def evaluation_chart(report: EvaluationReport, path: str | Path) -> Path:
    """``bacepipe evaluate --plot``: each policy's mean average JCT over the episodes with its
    95% interval (the table's ``avg JCT h`` column), one row per policy in the table's order,
    the reference marked; written to ``path`` whole or not at all."""
    rows = []
    for p in report.policies:
        jct = p.jct()
        rows.append((p.name, jct.mean, jct.ci95))
    lo, hi = report.seeds[0], report.seeds[-1]
    title = f"{report.env_id}: {len(report.seeds)} episode(s), seeds {lo}..{hi}; mean ± 95% CI"
    return _dot_chart(rows, path, title, {report.reference: "reference"})


def headroom_chart(report: HeadroomReport, path: str | Path) -> Path:
    """``bacepipe headroom --plot``: every heuristic's mean average JCT, best first, then the
    planner's; the best heuristic and the planner marked, with 95% intervals over the
    episodes (the report keeps only the other heuristics' means); written to ``path``."""
    best, planned = estimate(report.best_jct_h), estimate(report.planner_jct_h)
    rows = [
        (
            name,
            best.mean if name == report.best else mean,
            best.ci95 if name == report.best else math.nan,
        )
        for name, mean in sorted(report.heuristics.items(), key=lambda item: item[1])
    ]
    rows.append((report.planner, planned.mean, planned.ci95))
    p, lo, hi = report.ratio
    title = (
        f"{report.env_id}: {len(report.seeds)} episode(s) of {report.n_jobs} jobs\n"
        f"planner / best heuristic JCT {p:.3f} [{lo:.3f}, {hi:.3f}] (paired, 95%)"
    )
    marks = {report.best: "best heuristic", report.planner: "planner"}
    return _dot_chart(rows, path, title, marks)
