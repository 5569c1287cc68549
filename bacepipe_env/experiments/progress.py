"""A dependency-free progress bar for long runs, drawn on stderr only when it is a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``with Progress(total, "runs") as bar: ... bar.update()``.

    Draws ``label [#####-----] 25/50 runs 3.2 s, eta 3.1 s`` in place; silent when the stream
    is not a TTY (CI logs, pipes) unless ``force`` is set.
    """

    def __init__(
        self,
        total: int,
        unit: str = "runs",
        label: str = "",
        stream: TextIO | None = None,
        force: bool = False,
    ) -> None:
        self.total = max(0, total)
        self.unit = unit
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = force or bool(getattr(self.stream, "isatty", lambda: False)())
        self.done = 0
        self._start = time.perf_counter()

    def update(self, n: int = 1) -> None:
        """Count ``n`` more finished units and redraw."""
        self.done += n
        if self.enabled:
            self.stream.write("\r" + self.render())
            self.stream.flush()

    def render(self) -> str:
        """The bar's current text."""
        width = 30
        frac = self.done / self.total if self.total else 1.0
        filled = round(width * frac)
        elapsed = time.perf_counter() - self._start
        eta = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
        prefix = f"{self.label} " if self.label else ""
        return (
            f"{prefix}[{'#' * filled}{'-' * (width - filled)}] {self.done}/{self.total} "
            f"{self.unit} {elapsed:.1f} s, eta {eta:.1f} s"
        )

    def close(self) -> None:
        """End the bar's line."""
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
