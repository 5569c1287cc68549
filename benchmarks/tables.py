"""What the benchmark scripts share: writing a generated table into a document."""

from __future__ import annotations

from pathlib import Path


def markers(name: str) -> tuple[str, str]:
    """The begin and end markers of the generated block ``name``."""
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def between(path: Path, name: str) -> str:
    """What :func:`splice` put between ``name``'s markers in ``path`` (with the line break
    after the first marker)."""
    begin, end = markers(name)
    text = path.read_text(encoding="utf-8")
    return text[text.index(begin) + len(begin) : text.index(end)]


def splice(path: Path, name: str, text: str) -> None:
    """Put ``text`` between the ``<!-- {name}:begin -->`` and ``<!-- {name}:end -->`` markers
    of ``path`` (a line break after the first; the markers stay), atomically: the new text
    goes to a temporary file renamed over ``path``. Exits with one line if a marker is
    missing."""
    begin, end = markers(name)
    old = path.read_text(encoding="utf-8")
    start, stop = old.find(begin), old.find(end)
    if not 0 <= start < stop:
        raise SystemExit(f"{path}: no {begin} ... {end} markers")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(old[: start + len(begin)] + "\n" + text + old[stop:], encoding="utf-8")
    tmp.replace(path)
