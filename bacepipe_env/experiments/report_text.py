"""Markdown helpers every generated report shares (``reproduction.md``, ``online.md``,
``faults.md``): tables, prose wrapped at 96 columns, seed lists, ``mean ± CI`` cells, and the
named prose templates of ``templates/*.md``.

The report modules import this one and nothing imports them back, so the helpers have one home.
"""

from __future__ import annotations

import functools
import math
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources

from .stats import Estimate

__all__ = [
    "WIDTH",
    "Templates",
    "markdown_table",
    "plus_minus",
    "ratio_text",
    "seed_range",
    "seeds_text",
    "templates",
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


# --- prose templates --------------------------------------------------------------------------

_BLOCK = re.compile(r"^@@ (\S+)( verbatim)?$")
# A template line that starts an output line of its own rather than continuing a paragraph.
_STARTS_LINE = re.compile(r"^(#|\||!\[|<!--|[-*] |\d+\. |\*\S|\{\w+\}$)")
_SPLICE = re.compile(r"^\{(\w+)\}$")


@dataclass(frozen=True)
class _Block:
    lines: tuple[str, ...]  # output lines, each a str.format template (verbatim: plain text)
    verbatim: bool


class Templates:
    """Named prose blocks of a text file, filled with :meth:`str.format` fields.

    A line ``@@ name`` starts a block (``@@ name verbatim``: a block copied line for line,
    without fields); text before the first block is a comment. In a block a paragraph's lines
    are joined with single spaces into one output line (the report wraps it again), blank lines
    stay, and a line starts a new output line when it opens a heading, a table row, an image,
    an HTML comment, a list item, an emphasised caption or a splice. A splice is a line holding
    only ``{name}`` whose value is a list of lines: they replace it, and an empty list also
    takes the blank line after it. Literal braces are written ``{{`` and ``}}``.
    """

    def __init__(self, text: str) -> None:
        blocks: dict[str, _Block] = {}
        name: str | None = None
        verbatim = False
        body: list[str] = []

        def close() -> None:
            if name is not None:
                blocks[name] = _Block(self._unfold(body, verbatim), verbatim)

        for line in text.split("\n"):
            head = _BLOCK.match(line)
            if head:
                close()
                name, verbatim, body = head.group(1), bool(head.group(2)), []
                if name in blocks:
                    raise ValueError(f"template block {name!r} is defined twice")
            elif name is not None:
                body.append(line.rstrip())
        close()
        self._blocks = blocks

    @staticmethod
    def _unfold(body: Sequence[str], verbatim: bool) -> tuple[str, ...]:
        lines = list(body)
        while lines and not lines[0]:
            lines.pop(0)
        while lines and not lines[-1]:
            lines.pop()
        if verbatim:
            return tuple(lines)
        out: list[str] = []
        for line in lines:
            if line and out and out[-1] and not _STARTS_LINE.match(line):
                out[-1] += " " + line.lstrip()
            else:
                out.append(line)
        return tuple(out)

    @property
    def names(self) -> tuple[str, ...]:
        """The blocks' names, in file order."""
        return tuple(self._blocks)

    def lines(self, name: str, /, **values: object) -> list[str]:
        """Block ``name`` with its fields filled: one string per output line."""
        block = self._blocks[name]
        if block.verbatim:
            return list(block.lines)
        out: list[str] = []
        skip_blank = False
        for line in block.lines:
            if skip_blank and not line:
                skip_blank = False
                continue
            skip_blank = False
            splice = _SPLICE.match(line)
            spliced = values.get(splice.group(1)) if splice else None
            if isinstance(spliced, list):
                out += [str(x) for x in spliced]
                skip_blank = not spliced
                continue
            out.append(line.format(**values))
        return out

    def text(self, name: str, /, **values: object) -> str:
        """A one-paragraph block filled, as one line."""
        lines = self.lines(name, **values)
        if len(lines) != 1:
            raise ValueError(f"template block {name!r} is {len(lines)} lines, not one")
        return lines[0]


_PACKAGE = __name__.rpartition(".")[0]


@functools.cache
def templates(file: str) -> Templates:
    """The packaged template file ``templates/<file>``, parsed once."""
    text = (resources.files(_PACKAGE) / "templates" / file).read_text(encoding="utf-8")
    return Templates(text)
