"""Command-line misuse is one ``bacepipe: error:`` line and exit status 2."""

from __future__ import annotations

import pytest

from bacepipe_env.cli import main


@pytest.mark.parametrize(
    "command", ["compare", "sweep", "ablation", "reproduce", "online", "faults"]
)
@pytest.mark.parametrize("out", ["", "   "])
def test_an_empty_out_is_refused_not_the_current_directory(
    command, out, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # had it been taken, the files would land here
    assert main([command, "--out", out, "--seeds", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bacepipe: error: --out: give an output directory (got {out!r})"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("seeds", ["1" * 23, "100001", "0-100000", f"1,{2**63}"])
def test_seeds_are_bounded(seeds, capsys, tmp_path):
    """A 23-digit count was an OverflowError, 1e11 seeds a MemoryError: now one line."""
    assert main(["compare", "--seeds", seeds, "--out", str(tmp_path / "o")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("bacepipe: error: --seeds: at most 100,000 seeds"), line
