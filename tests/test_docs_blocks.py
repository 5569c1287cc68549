"""The code blocks of README.md and docs/*.md run as written.

Every ```python and ```bash block runs, offline, in a scratch folder, unless the line before it
is a marker ``<!-- not run: REASON -->`` that says why it cannot (a long training run, an
install, Ray). A page's Python blocks run in order in one interpreter, as a reader pastes them
one after another; each bash block runs on its own, with this interpreter's ``bacepipe`` and
``python`` first on the PATH.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(
    r"(?:<!-- not run: (?P<why>[^>]*?) -->\n[ \t]*)?```(?P<lang>python|bash)\n(?P<body>.*?)```",
    re.S,
)


def _blocks(page: Path) -> list[tuple[str, str, str | None, int]]:
    """(language, code, the marker's reason or None, line) of every block of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [
        (m["lang"], m["body"], m["why"], text[: m.start()].count("\n") + 1)
        for m in _BLOCK.finditer(text)
    ]


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BACEPIPE_PLUGINS")}
    env["OMP_NUM_THREADS"] = "1"
    env["MPLBACKEND"] = "Agg"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(tmp)
    return env


def _run(argv: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    """``argv`` in the scratch folder ``tmp``, its output captured."""
    return subprocess.run(argv, cwd=tmp, env=_env(tmp), capture_output=True, text=True, timeout=600)


def _pages_with(lang: str) -> list[Path]:
    return [p for p in PAGES if any(b[0] == lang and b[2] is None for b in _blocks(p))]


def test_every_marker_says_why() -> None:
    for page in PAGES:
        for _lang, _, why, line in _blocks(page):
            if why is not None:
                assert len(why.split()) >= 3, f"{page.name}:{line}: give the reason in words"


@pytest.mark.parametrize("page", _pages_with("python"), ids=lambda p: p.name)
def test_the_python_blocks_of_a_page_run(page: Path, tmp_path: Path) -> None:
    code = "\n".join(
        body for lang, body, why, _ in _blocks(page) if lang == "python" and why is None
    )
    proc = _run([sys.executable, "-c", code], tmp_path)
    assert proc.returncode == 0, f"{page.name}:\n{proc.stderr[-3000:]}"


_BASH = [
    pytest.param(page, line, body, id=f"{page.name}:{line}")
    for page in PAGES
    for lang, body, why, line in _blocks(page)
    if lang == "bash" and why is None
]


@pytest.mark.parametrize(("page", "line", "body"), _BASH)
def test_a_bash_block_runs(page: Path, line: int, body: str, tmp_path: Path) -> None:
    proc = _run(["bash", "-e", "-o", "pipefail", "-c", body], tmp_path)
    assert proc.returncode == 0, f"{page.name}:{line}:\n{proc.stderr[-3000:]}"
