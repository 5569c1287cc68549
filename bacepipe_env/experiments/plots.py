"""Charts in the style of the paper's Figs. 4-8, and the charts of ``bacepipe evaluate --plot``
(paired ratios to the reference) and ``bacepipe headroom --plot`` (mean JCTs); matplotlib,
imported only when drawing. Titles and long policy names are wrapped to the figure's width,
so that no text runs off the canvas (tests/experiments/test_charts_canvas.py)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BacepipeError
from ..outputs import save_figure
from .stats import Estimate, estimate
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


#: About how wide a character of the default font (DejaVu Sans) is, in ems: digits are 0.64,
#: lower-case letters 0.5-0.65; a little over their mean, so that an estimate errs short.
_EM_PER_CHAR = 0.64
#: Where a long name may break across lines: after a space or one of these.
_BREAKS = re.compile(r"(?<=[ ,:;+/-])")


def _chars(width_in: float, fontsize: float) -> int:
    """How many characters of ``fontsize`` points fit, about, across ``width_in`` inches
    (less a tenth for the figure's margins)."""
    return max(12, int(0.9 * width_in * 72 / (fontsize * _EM_PER_CHAR)))


def _wrap(text: str, width: int) -> str:
    """``text`` in lines of at most ``width`` characters, each existing line broken after a
    space or one of ``, : ; + / -`` (a policy name such as ``rollout:sjf,k=4,lookahead=submitted``
    breaks after its commas); a piece longer than ``width`` with no such place is cut."""
    out: list[str] = []
    for line in text.split("\n"):
        current = ""
        for piece in _BREAKS.split(line):
            while len(piece) > width:  # no place to break: cut
                if current:
                    out.append(current.rstrip())
                    current = ""
                out.append(piece[:width])
                piece = piece[width:]
            if current and len((current + piece).rstrip()) > width:
                out.append(current.rstrip())
                current = piece.lstrip()
            else:
                current += piece
        out.append(current.rstrip())
    return "\n".join(out)


def _save(fig: Any, path: str | Path) -> Path:
    """Lay ``fig`` out so that its text stays inside it (``tight_layout``), write it to
    ``path`` whole or not at all, and close it."""
    plt = _pyplot()
    try:
        fig.tight_layout()
        save_figure(fig, path)
    finally:
        plt.close(fig)
    return Path(path)


def _group_labels(names: Sequence[str]) -> tuple[list[str], dict[str, Any]]:
    """How to write ``names`` under groups of bars: as they are, slanted, when none is longer
    than 22 characters; otherwise each wrapped at 20 characters and written level in 8 pt,
    which needs groups 1.5 in wide (20 x 8 x 0.64 / 72 = 1.42 in). Returns the labels and
    ``set_xticklabels``'s keywords (no rotation for level ones)."""
    if all(len(name) <= 22 for name in names):
        return list(names), {"rotation": 20, "ha": "right"}
    return [_wrap(name, 20) for name in names], {"fontsize": 8}


def bar_chart(stats: Sequence[PolicyStats], path: Path, title: str, reference: str) -> Path:
    """Grouped bars of average JCT and total cost per policy, normalised to ``reference``,
    with 95% CI error bars (the paper's Figs. 4 and 8). Long policy names and the title are
    wrapped (:func:`_group_labels`)."""
    plt = _pyplot()
    names, style = _group_labels([s.policy for s in stats])
    lines = max(name.count("\n") for name in names)  # beyond the first
    fig_w = max(5.0, (1.1 if "rotation" in style else 1.5) * len(stats) + 2)
    fig, ax = plt.subplots(figsize=(fig_w, 3.6 + 0.2 * lines), dpi=120)
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
    ax.set_xticklabels(names, **style)
    ax.set_ylabel(_wrap(f"normalised to {reference}", 30))
    fig.suptitle(_wrap(title, _chars(fig_w, 10)), fontsize=10)  # centred on the figure
    ax.legend(frameon=False, ncol=2, fontsize=9)
    return _save(fig, path)


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
    policy's stats at ``xs[i]``. The legend sits in the left panel, or, when a policy's name
    is longer than 22 characters, wrapped at 26 of 8 pt (26 x 8 x 0.64 / 72 = 1.85 in) to the
    right of the panels, in a figure 2.2 in wider. The title is wrapped to the figure's width."""
    plt = _pyplot()
    outside = any(len(policy) > 22 for policy in series)
    width = 9.0 + (2.2 if outside else 0.0)
    fig, axes = plt.subplots(1, 2, figsize=(width, 3.4), dpi=120)
    for ax, attr, ylabel in (
        (axes[0], "jct_norm", "Avg. JCT"),
        (axes[1], "cost_norm", "Total Cost"),
    ):
        for policy, stats in series.items():
            means = [getattr(s, attr).mean for s in stats]
            errs = [0.0 if getattr(s, attr).n < 2 else getattr(s, attr).ci95 for s in stats]
            ax.errorbar(xs, means, yerr=errs, marker="o", capsize=3, label=_wrap(policy, 26))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(_wrap(f"{ylabel} / {reference}", 30))
        ax.set_xticks(list(xs))
        ax.grid(alpha=0.3)
    if outside:
        axes[1].legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    else:
        axes[0].legend(frameon=False, fontsize=8)
    fig.suptitle(_wrap(title, _chars(width, 10)), fontsize=10)
    return _save(fig, path)


def grouped_bar_chart(
    categories: Sequence[str],
    series: Mapping[str, Sequence[PolicyStats]],
    path: Path,
    title: str,
    reference: str,
) -> Path:
    """Two stacked panels (average JCT, total cost) of values normalised to ``reference``: one
    group of bars per category, one bar per series, with 95% CI error bars. ``series[name][i]``
    is the stats of ``categories[i]`` under that series (for example one simulator semantics).
    Long names and the title are wrapped (:func:`_group_labels`)."""
    plt = _pyplot()
    n = max(1, len(series))
    names, style = _group_labels(categories)
    lines = max(name.count("\n") for name in names)  # beyond the first
    width = max(6.0, (1.15 if "rotation" in style else 1.5) * len(categories) + 1.5)
    fig, axes = plt.subplots(2, 1, figsize=(width, 6.4 + 0.2 * lines), dpi=120, sharex=True)
    bar = 0.8 / n
    xs = range(len(categories))
    for ax, attr, ylabel in (
        (axes[0], "jct_norm", "Avg. JCT"),
        (axes[1], "cost_norm", "Total Cost"),
    ):
        for k, (name, stats) in enumerate(series.items()):
            means = [getattr(s, attr).mean for s in stats]
            errs = [0.0 if getattr(s, attr).n < 2 else getattr(s, attr).ci95 for s in stats]
            offset = (k - (n - 1) / 2) * bar
            ax.bar([x + offset for x in xs], means, bar, yerr=errs, capsize=2, label=name)
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        ax.set_ylabel(_wrap(f"{ylabel} / {reference}", 30))
        ax.grid(axis="y", alpha=0.3)
    axes[1].set_xticks(list(xs))
    axes[1].set_xticklabels(names, **style)
    axes[0].legend(frameon=False, fontsize=8, ncol=min(n, 4))
    fig.suptitle(_wrap(title, _chars(width, 10)), fontsize=10)
    return _save(fig, path)


#: A dot chart's plain rows, then its marked ones (colour, marker), in order of marking.
_DOT = ("#4C72B0", "o")
_MARKED = (("#d62728", "D"), ("#2ca02c", "s"))
#: Rows of a dot chart: ``(name, mean, 95% CI half-width)``.
_Rows = Sequence[tuple[str, float, float]]


def _dots(ax: Any, rows: _Rows, marks: Mapping[str, str]) -> None:
    """Draw ``rows`` top to bottom on ``ax``: a dot at each mean with a bar over its interval
    (none for a NaN half-width; no dot for a non-finite mean), the rows named in ``marks`` in
    their own colour and marker (:data:`_MARKED`, in the order of ``marks``)."""
    for y, (name, mean, ci) in enumerate(rows):
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
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the first row at the top
    ax.grid(axis="x", alpha=0.3)


def _dot_chart(
    rows: _Rows,
    path: str | Path,
    title: str,
    marks: Mapping[str, str],
) -> Path:
    """One row per ``(name, mean JCT h, 95% CI half-width)``, top to bottom (:func:`_dots`).
    ``marks`` maps a row's name to what it is (``best heuristic``): such rows get their own
    colour and marker and that note after their name, and a dashed line runs down from the
    first one's mean. Long names and the title are wrapped to the figure's width."""
    plt = _pyplot()
    width = 7.0
    labels = [_wrap(f"{r[0]} ({marks[r[0]]})" if r[0] in marks else r[0], 40) for r in rows]
    lines = sum(label.count("\n") + 1 for label in labels)
    fig, ax = plt.subplots(figsize=(width, 1.4 + 0.3 * max(len(rows), 0.5 * lines)), dpi=120)
    _dots(ax, rows, marks)
    first = next((r for r in rows if r[0] in marks and math.isfinite(r[1])), None)
    if first is not None:
        ax.axvline(first[1], color="grey", linewidth=0.8, linestyle="--")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel("mean JCT (h)")
    fig.suptitle(_wrap(title, _chars(width, 9)), fontsize=9)  # centred on the figure
    return _save(fig, path)


def _paired(values: Sequence[float], reference: Sequence[float]) -> Estimate | None:
    """Mean ± 95% CI of the per-episode ratios ``values[i] / reference[i]``, the finite ones
    (None when none is): what :meth:`~.evaluate.PolicyEvaluation.ratio` gives for the JCT."""
    ratios = [v / r for v, r in zip(values, reference) if r != 0 and math.isfinite(v / r)]
    return estimate(ratios) if ratios else None


def _record(wins: int, ties: int, losses: int) -> str:
    """``3 wins / 17 losses of 20`` (ties only when there are some)."""

    def count(k: int, one: str, many: str) -> str:
        return f"{k} {one if k == 1 else many}"

    parts = [
        count(wins, "win", "wins"),
        *([count(ties, "tie", "ties")] if ties else []),
        count(losses, "loss", "losses"),
    ]
    return f"{' / '.join(parts)} of {wins + ties + losses}"


def evaluation_chart(report: EvaluationReport, path: str | Path) -> Path:
    """``bacepipe evaluate --plot``: one row per policy in the table's order, three panels.

    Left, the paired JCT ratio to the reference: the mean over the episodes of the policy's
    average JCT divided by the reference's on the same episode, with its 95% interval (the
    table's ``JCT / reference`` column); the row's label gives that ratio and the policy's wins
    and losses against the reference (episodes with a lower and a higher JCT). Middle, the
    same ratio for the total cost. Right, each policy's mean average JCT with its 95% interval
    (the table's ``avg JCT h``): unpaired, so it hides what the episodes have in common. The
    reference is marked (its ratios are 1); written to ``path`` whole or not at all."""
    plt = _pyplot()
    ref = next(p for p in report.policies if p.name == report.reference)
    ref_cost = [r.total_cost_usd for r in ref.episodes]
    jct_rows, cost_rows, mean_rows, labels = [], [], [], []
    for p in report.policies:
        name = p.name
        jct = p.jct()
        mean_rows.append((name, jct.mean, jct.ci95))
        if name == report.reference:
            jct_rows.append((name, 1.0, math.nan))
            cost_rows.append((name, 1.0, math.nan))
            labels.append(f"{_wrap(name, 34)}\n(reference)")
            continue
        ratio = p.ratio()
        cost = _paired([r.total_cost_usd for r in p.episodes], ref_cost)
        jct_rows.append((name, *_mean_ci(ratio)))
        cost_rows.append((name, *_mean_ci(cost)))
        shown = "JCT n/a" if ratio is None else f"JCT ×{_cell(ratio)}"
        labels.append(f"{_wrap(name, 34)}\n{shown}, {_record(*p.counts())}")
    width = 11.0
    lo, hi = report.seeds[0], report.seeds[-1]
    title = _wrap(
        f"{report.env_id}: {len(report.seeds)} episode(s), reset seeds {lo}..{hi}; "
        f"each policy against {report.reference} on the same episodes (wins / losses: "
        f"episodes with a lower / higher average JCT)",
        _chars(width, 10),
    )
    lines = sum(label.count("\n") + 1 for label in labels)
    height = 1.9 + title.count("\n") * 0.2 + 0.2 * max(lines, 2 * len(labels))
    fig, axes = plt.subplots(1, 3, figsize=(width, height), dpi=120, sharey=True)
    marks = {report.reference: "reference"}
    ref_name = _wrap(report.reference, 24)
    for ax, rows, xlabel in (
        (axes[0], jct_rows, f"avg JCT / {ref_name}\npaired per episode, mean ± 95% CI"),
        (axes[1], cost_rows, f"total cost / {ref_name}\npaired per episode, mean ± 95% CI"),
        (axes[2], mean_rows, "avg JCT (h)\nunpaired, mean ± 95% CI"),
    ):
        _dots(ax, rows, marks)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
        ax.ticklabel_format(axis="x", useOffset=False)  # 1.0004, not 0.0004 and a +1
    for ax in axes[:2]:
        ax.axvline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ref_mean = ref.jct().mean
    if math.isfinite(ref_mean):
        axes[2].axvline(ref_mean, color="grey", linewidth=0.8, linestyle="--")
    axes[0].set_yticks(range(len(labels)))
    axes[0].set_yticklabels(labels, fontsize=8)
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def _mean_ci(e: Estimate | None) -> tuple[float, float]:
    return (math.nan, math.nan) if e is None else (e.mean, e.ci95)


def _cell(e: Estimate) -> str:
    """``1.109 ± 0.035`` (the mean alone for one episode)."""
    return f"{e.mean:.3f}" if math.isnan(e.ci95) else f"{e.mean:.3f} ± {e.ci95:.3f}"


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
