"""The project's semantics live in the repository (issue 26): every "semantics §N" that code,
tests or docs cite names a section of docs/semantics.md, and nothing cites a file that does not
ship (the SPEC that the project was first written against)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    *(ROOT / "bacepipe_env").rglob("*.py"),
    *(ROOT / "tests").rglob("*.py"),
    *(ROOT / "benchmarks").glob("*.py"),
    *(ROOT / "docs").glob("*.md"),
    ROOT / "README.md",
]


def _sections() -> set[str]:
    text = (ROOT / "docs" / "semantics.md").read_text(encoding="utf-8")
    return set(re.findall(r"^## (\d+[a-z]?)\. ", text, flags=re.M))


def test_the_semantics_are_numbered_without_gaps():
    numbers = _sections()
    whole = sorted({int(re.match(r"\d+", n).group()) for n in numbers})  # type: ignore[union-attr]
    assert whole == list(range(1, len(whole) + 1)), whole
    assert {"3a", "3b", "3c"} <= numbers


def test_every_citation_names_a_section_and_no_spec_is_cited():
    sections = _sections()
    cited: dict[str, list[str]] = {}
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        if path != Path(__file__):
            assert "SPEC" not in text, f"{path.relative_to(ROOT)} cites SPEC"
        for number in re.findall(r"§(\d+[a-z]?)", text):
            cited.setdefault(number, []).append(path.name)
    assert cited, "nothing cites the semantics"
    unknown = {n: files for n, files in cited.items() if n not in sections}
    assert not unknown, unknown
