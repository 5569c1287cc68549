"""Charts in the style of the paper's Figs. 4-8 (matplotlib, imported only when drawing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import BacepipeError
from ..outputs import save_figure
from .summary import PolicyStats

__all__ = ["bar_chart", "grouped_bar_chart", "sweep_chart"]


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
