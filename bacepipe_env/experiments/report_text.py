"""Markdown helpers every generated report shares (``reproduction.md``, ``online.md``,
``faults.md``): tables, prose wrapped at 96 columns, seed lists and ``mean ± CI`` cells.

The report modules import this one and nothing imports them back, so the helpers have one home.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Callable, Sequence

from .stats import Estimate

__all__ = [
    "WIDTH",
    "markdown_table",
    "plus_minus",
    "ratio_text",
    "seed_range",
    "seeds_text",
    "wrap_prose",
]

#: The column at which :func:`wrap_prose` wraps.
WIDTH = 96


def markdown_table(
    head: Sequence[str], rows: Sequence[Sequence[str]], align: str = ""
) -> list[str]:
    """A markdown table; ``align`` gives one letter per column (l or r; default l)."""
    marks = [("---:" if (align[i : i + 1] == "r") else "---") for i in range(len(head))]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(marks) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


# A continuation line must not read as a list item or a heading.
_MARKER = re.compile(r"^([-+*>#]|\d+[.)])( |$)")
# Stands for a space inside a code span while wrapping, so that no span is broken.
_NBSP = "\x00"


def wrap_prose(lines: Sequence[str]) -> list[str]:
    """Wrap long prose lines (not tables, headings or images) at :data:`WIDTH` columns; a list
    item's continuation lines are indented by two spaces."""
    out = []
    for line in lines:
        if len(line) <= WIDTH or line.startswith(("|", "#", "![", "<!--")):
            out.append(line)
            continue
        indent = "  " if line.startswith("- ") else ""
        parts = line.split("`")
        glued = "`".join(p.replace(" ", _NBSP) if i % 2 else p for i, p in enumerate(parts))
        wrapped = textwrap.wrap(
            glued,
            WIDTH,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
        fixed: list[str] = []
        for w in wrapped:
            body = w[len(indent) :] if fixed else w
            if fixed and _MARKER.match(body):
                first, _, rest = body.partition(" ")
                fixed[-1] += f" {first}"
                if rest:
                    fixed.append(indent + rest)
                continue
            fixed.append(w)
        out += [w.replace(_NBSP, " ") for w in fixed]
    return out


def seeds_text(seeds: Sequence[int]) -> str:
    """The ``--seeds`` argument that gives ``seeds``: a count, a range or a list."""
    s = list(seeds)
    if s == list(range(len(s))):
        return str(len(s))
    if len(s) > 2 and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}-{s[-1]}"
    return ",".join(map(str, s))


def seed_range(seeds: Sequence[int]) -> str:
    """Seeds in words: ``0-9`` for a run of two or more, else ``0, 3, 7``."""
    s = list(seeds)
    if len(s) > 1 and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}-{s[-1]}"
    return ", ".join(map(str, s))


def plus_minus(e: Estimate, fmt: Callable[[float], str]) -> str:
    """``mean ± half-width of the 95% CI``, each through ``fmt``; the mean alone without a CI."""
    if math.isnan(e.ci95):  # a single seed
        return fmt(e.mean)
    return f"{fmt(e.mean)} ± {fmt(e.ci95)}"


def ratio_text(x: float) -> str:
    """A ratio with three decimals (``1.042``)."""
    return f"{x:.3f}"
