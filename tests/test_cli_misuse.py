"""Command-line misuse is one ``bacepipe: error:`` line and exit status 2."""

from __future__ import annotations

import json
import re

import pytest

from bacepipe_env.cli import _error, main
from bacepipe_env.errors import SimulationError


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


@pytest.mark.parametrize(
    ("argv", "start"),
    [
        (
            ["simulate", "--scenario", "paper", "--jobs", "10000001"],
            "--jobs: must be a whole number in [1, 10,000,000] jobs (got '10000001')",
        ),
        (
            ["simulate", "--scenario", "paper", "--jobs", "100000000"],
            "--jobs: must be a whole number in [1, 10,000,000]",
        ),
        (
            ["simulate", "--scenario", "paper", "--gpu-scale", "1e308"],
            "--gpu-scale: must be a number in (0, 1,000] (got '1e308')",
        ),
        (
            ["simulate", "--scenario", "paper", "--bandwidth-scale", "0"],
            "--bandwidth-scale: must be a number in (0, 1,000]",
        ),
        (
            ["simulate", "--scenario", "paper", "--seed", str(2**63)],
            "argument --seed: must be a whole number in [0, 2**63 - 1]",
        ),
        (
            ["simulate", "--scenario", "paper", "--restart-s", "1e308"],
            "--restart-s: must be a number in [0, 10,000,000] s (got '1e308')",
        ),
        (
            ["simulate", "--scenario", "paper", "--gpu-failure-rate", "2"],
            "--gpu-failure-rate: must be a number in [0, 1] per GPU-hour",
        ),
        (
            ["simulate", "--scenario", "paper", "--outage", "EU-West:1:1e9"],
            "--outage END_H: must be a number in [0, 1,000,000] h",
        ),
        (
            ["simulate", "--scenario", "paper", "--link-degrade", "EU-West:US-East-2:2:1:3"],
            "--link-degrade FACTOR: must be a number in (0, 1]",
        ),
        (
            ["sweep", "--kind", "jobs", "--values", "1e9", "--seeds", "1"],
            "jobs values: must be in [1, 10,000,000] jobs (got 1000000000.0)",
        ),
        (
            ["compare", "--workers", "1000000000", "--seeds", "1"],
            "argument --workers: must be a whole number in [1, 1,024]",
        ),
        (
            [
                "evaluate",
                "--env-id",
                "x",
                "--policies",
                "fcfs",
                "--episodes",
                "1e9",
                "--first-seed",
                "0",
            ],
            "argument --episodes: must be a whole number in [1, 100,000]",
        ),
    ],
)
def test_numeric_flags_are_bounded(argv, start, capsys, tmp_path):
    """Each was a hang (a million jobs, a billion-job sweep), an overflow or a silent
    absurdity; now one line naming the flag and its range, before any work."""
    if argv[0] in ("sweep", "compare"):
        argv = [*argv, "--out", str(tmp_path / "o")]
    try:
        status = main(argv)
    except SystemExit as stop:  # argparse's own checks exit from inside parse_args
        status = stop.code
    assert status == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    # argparse's own errors say "bacepipe simulate: error:", ours "bacepipe: error:"
    assert re.sub(r"^bacepipe( \w+)?: error: ", "", line).startswith(start), line
    assert len(line) <= 200


def test_simulate_json_is_strict_json(capsys):
    def refuse(name: str) -> float:
        raise AssertionError(f"{name} in --json output")

    assert main(["simulate", "--scenario", "fig1", "--json", "-"]) == 0
    payload = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert payload["avg_jct_h"] > 0


def test_any_error_is_printed_as_one_short_line(capsys):
    """A SimulationError listing thousands of jobs, or holding newlines, is still one line."""
    _error(SimulationError("jobs " + ", ".join(map(str, range(5000))) + "\ncan never start"))
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("bacepipe: error: jobs 0, 1, 2,") and len(line) <= 200


def test_an_unknown_command_is_a_short_line(capsys):
    """It listed all 12 commands in 216 characters; now the first few and how many more."""
    with pytest.raises(SystemExit) as stop:
        main(["bogus"])
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("bacepipe: error: unknown command 'bogus'; choose from simulate, ")
    assert line.endswith("more) (see bacepipe --help)") and len(line) <= 150, line


def test_a_full_device_on_stdout_is_one_line():
    """``bacepipe simulate > /dev/full``: an OSError traceback at exit before. Skipped where
    ``/dev/full`` is no character device (a container, macOS), and never created: opened
    without ``O_CREAT``."""
    import os
    import stat
    import subprocess
    import sys

    try:
        device = stat.S_ISCHR(os.stat("/dev/full").st_mode)
    except OSError:
        device = False
    if not device:
        pytest.skip("/dev/full is not a character device on this machine")
    full = os.open("/dev/full", os.O_WRONLY)  # no O_CREAT: a missing file stays missing
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "bacepipe_env", "simulate", "--scenario", "fig1"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        os.close(full)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "bacepipe: error: cannot write stdout: No space left on device"
    ]


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/nope/model.zip", "no model file there"),
        ("/" + "a" * 5000, "cannot read: File name too long"),
    ],
)
def test_a_learned_model_path_is_one_line_naming_policies(path, reason, capsys):
    argv = ["evaluate", "--env-id", "bacepipe_env/GeoPipe-v2", "--policies", f"ppo:{path}"]
    assert main([*argv, "--episodes", "1", "--first-seed", "0"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"bacepipe: error: --policies: {reason} (got 'ppo:/"), line
    assert len(line) < 200


@pytest.mark.parametrize("command", ["compare", "online", "faults", "reproduce"])
def test_an_out_that_cannot_be_a_folder_is_one_line(command, capsys, tmp_path):
    """An --out below a file, or too long for the OS: PermissionError and OSError
    tracebacks before (an unwritable folder is the same line; root writes anywhere)."""
    (tmp_path / "file").write_text("x")
    for out, reason in (
        (tmp_path / "file" / "out", "cannot create or open: "),
        (tmp_path / ("a" * 300), "cannot create or open: File name too long"),
    ):
        assert main([command, "--seeds", "1", "--out", str(out)]) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith(f"bacepipe: error: --out: {reason}"), line
