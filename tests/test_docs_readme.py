"""The README is a five-minute read that stays true (issue 26): short, its links and anchors
resolve (the docs' too), CI runs its test command, its commands parse, its quick start prints
what the command prints, and every number of its results table is on the page its row links."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from bacepipe_env.cli import main
from bacepipe_env.cli_args import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")  # [text](target), not images
NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : None if end < 0 else end]


def _blocks(text: str, *langs: str) -> list[str]:
    return [b for lang, b in re.findall(r"```(\w*)\n(.*?)```", text, re.S) if lang in langs]


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats
    numbered."""
    seen: dict[str, int] = {}
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        seen[slug] = seen.get(slug, -1) + 1
        if seen[slug]:
            seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def test_the_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 210


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        assert path.exists(), f"{page.name}: {target} does not exist"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{page.name}: {target}: no such heading"


def test_the_readme_lists_every_doc_page() -> None:
    text = _section(README.read_text(encoding="utf-8"), "Documentation")
    listed = re.findall(r"^- \[docs/([\w.]+\.md)\]", text, flags=re.M)
    assert sorted(listed) == sorted(p.name for p in PAGES[1:])


def test_ci_runs_the_readmes_test_command() -> None:
    (block,) = _blocks(_section(README.read_text(encoding="utf-8"), "Two commands"), "bash")
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert [c for c in commands if c] == ["make demo", "make test"]
    ci = [line.split("#")[0].strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "make test" in ci
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^test: \$\(STAMP\)\n\t\$\(PY\) -m pytest", makefile, flags=re.M)
    assert re.search(r"^\$\(STAMP\):.*\n\t@test -x \$\(PY\) \|\| .* -m venv", makefile, re.M)


def _commands() -> list[tuple[str, list[str]]]:
    """(page, argv) of every `bacepipe ...` line in the README's and docs/cli.md's blocks."""
    found = []
    for page in (README, ROOT / "docs" / "cli.md"):
        for block in _blocks(page.read_text(encoding="utf-8"), "bash", "console"):
            for line in block.splitlines():
                words = shlex.split(line.removeprefix("$ "), comments=True)
                if words and words[0] in ("bacepipe", ".venv/bin/bacepipe"):
                    found.append((page.name, words[1:]))
    return found


def test_every_documented_command_parses() -> None:
    commands = _commands()
    assert len(commands) >= 20
    parser = build_parser()  # `bacepipe train ...` goes to the training command's own parser
    for page, argv in commands:
        if argv[0] != "train":
            try:
                parser.parse_args(argv)
            except SystemExit as stop:  # argparse's way of saying no
                pytest.fail(f"{page}: bacepipe {shlex.join(argv)} exits {stop.code}")


def test_the_quick_start_prints_what_the_command_prints(capsys: pytest.CaptureFixture[str]):
    text = _section(README.read_text(encoding="utf-8"), "Quick start: the shell")
    lines = _blocks(text, "console")[0].splitlines()
    assert lines[0] == "$ .venv/bin/bacepipe simulate --scenario paper --seed 0"
    assert main(["simulate", "--scenario", "paper", "--seed", "0"]) == 0
    printed = capsys.readouterr().out.splitlines()
    shown = [line for line in lines[1:] if line != "..."]
    assert len(shown) >= 15
    for line in shown:
        assert line in printed, line


def test_every_number_of_the_results_table_is_on_its_page() -> None:
    text = _section(README.read_text(encoding="utf-8"), "What the project measures")
    rows = [line for line in text.splitlines() if line.startswith("| ")][1:]
    assert len(rows) >= 8
    for row in rows:
        question, result, details = row.strip("| ").split(" | ")
        (target,) = re.findall(r"\]\((docs/[\w.]+\.md)#[\w-]+\)", details)
        page = (ROOT / target).read_text(encoding="utf-8")
        for number in NUMBER.findall(question + " " + result):
            assert number in page, f"{number} ({question}) is not in {target}"
