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
