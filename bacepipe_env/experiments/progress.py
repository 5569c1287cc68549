"""A dependency-free progress bar for long runs: drawn in place on stderr when it is a
terminal, and off a terminal (a log file, CI, a pipe) a plain progress line every 30 s."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``with Progress(total, "runs") as bar: ... bar.update()``.

    Draws ``label [#####-----] 25/50 runs 3.2 s, eta 3.1 s`` in place on a TTY (or anywhere
    with ``force``). Elsewhere (CI logs, pipes, a redirected run) it writes that text as a line
    of its own every ``every_s`` seconds (30): from a thread while the bar is open as a context
    manager, so a unit of work longer than that still shows the run is alive, and otherwise at
    the first update after that time. ``quiet()`` turns both off.
    """

    def __init__(
        self,
        total: int,
        unit: str = "runs",
        label: str = "",
        stream: TextIO | None = None,
        force: bool = False,
        every_s: float | None = 30.0,
    ) -> None:
        self.total = max(0, total)
        self.unit = unit
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = force or bool(getattr(self.stream, "isatty", lambda: False)())
        self.every_s = every_s
        self.lines = not self.enabled and every_s is not None  # off a terminal: a line now and then
        self.done = 0
        self._start = time.perf_counter()
        self._last_line = self._start
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def quiet(self) -> None:
        """Neither draw nor write lines (a caller that asked for no progress)."""
        self.enabled = False
        self.lines = False

    def _line(self) -> None:
        with self._lock:
            self._last_line = time.perf_counter()
            self.stream.write(self.render() + "\n")
            self.stream.flush()

    def _beat(self) -> None:
        assert self.every_s is not None
        while not self._stop.wait(self.every_s):
            if self.lines and time.perf_counter() - self._last_line >= self.every_s * 0.99:
                self._line()

    def update(self, n: int = 1) -> None:
        """Count ``n`` more finished units and redraw."""
        self.done += n
        if self.enabled:
            self.stream.write("\r" + self.render())
            self.stream.flush()
        elif (
            self.lines
            and self.every_s is not None
            and time.perf_counter() - self._last_line >= self.every_s
        ):
            self._line()

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
        """End the bar's line (and stop the line thread)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        if self.lines and self.every_s is not None and self._thread is None:
            self._thread = threading.Thread(target=self._beat, name="progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
