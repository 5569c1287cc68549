"""``bacepipe compare|sweep|ablation|policies`` as a user runs them (subprocesses)."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bacepipe_env.policies.registry import policy_names


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "bacepipe_env.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=env,
    )


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def table_rows(stdout: str) -> list[str]:
    """First cells of the table's body rows (between the dashes and the footnote)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("---"))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip() or line.startswith("mean ±"):
            break
        rows.append(line.split()[0])
    return rows


def test_compare(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    stdout = ok(
        run(
            "compare",
            "--seeds",
            "2",
            "--policies",
            "bace-pipe,lcf",
            "--out",
            str(out),
            cwd=tmp_path,
        )
    )
    assert table_rows(stdout) == ["bace-pipe", "lcf"]
    assert "95% CI" in stdout
    assert "over 2 seeds" in stdout
    for name in ("compare-runs.csv", "compare-summary.csv", "compare.json", "compare.png"):
        assert (out / name).is_file(), name
        assert name in stdout
    for policy in ("bace-pipe", "lcf"):
        assert list((out / "tb" / "compare" / "paper" / policy).glob("events.out.tfevents.*"))
    assert f"tensorboard --logdir {out / 'tb'}" in stdout
    with open(out / "compare-runs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted((r["policy"], r["seed"]) for r in rows) == [
        ("bace-pipe", "0"),
        ("bace-pipe", "1"),
        ("lcf", "0"),
        ("lcf", "1"),
    ]


def test_sweep_gpu(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    stdout = ok(
        run(
            "sweep",
            "--kind",
            "gpu",
            "--values",
            "0.5,1.25",
            "--seeds",
            "2",
            "--policies",
            "bace-pipe,ldf",
            "--out",
            str(out),
            cwd=tmp_path,
        )
    )
    assert "gpu_scale = 0.5" in stdout and "gpu_scale = 1.25" in stdout
    for suffix in ("-runs.csv", "-summary.csv", ".json", ".png"):
        assert (out / f"sweep-gpu{suffix}").is_file()
    assert not (out / "sweep-jobs-runs.csv").exists()
    with open(out / "sweep-gpu-summary.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(float(r["gpu_scale"]), r["policy"]) for r in rows] == [
        (0.5, "bace-pipe"),
        (0.5, "ldf"),
        (1.25, "bace-pipe"),
        (1.25, "ldf"),
    ]
    # One HParams session per (policy, value): the knob is an hparam, not a step.
    sessions = sorted(
        p.parent.relative_to(out / "tb").as_posix()
        for p in (out / "tb").rglob("events.out.tfevents.*.sweep-gpu")
    )
    assert sessions == [
        f"sweep-gpu/paper/{policy}/gpu_scale={value}"
        for policy in ("bace-pipe", "ldf")
        for value in ("0.5", "1.25")
    ]
    assert f"TensorBoard: tensorboard --logdir {out / 'tb'}" in stdout


def test_ablation(tmp_path: Path) -> None:
    out = tmp_path / "abl"
    stdout = ok(run("ablation", "--seeds", "2", "--out", str(out), cwd=tmp_path))
    assert table_rows(stdout) == ["bace-pipe", "no-priority", "no-pathfinder", "no-costmin"]
    assert (out / "ablation-summary.csv").is_file()
    assert (out / "ablation.png").is_file()


def test_policies_lists_every_registered_name(tmp_path: Path) -> None:
    stdout = ok(run("policies", cwd=tmp_path))
    listed = [line.split()[0] for line in stdout.splitlines() if line.strip()]
    assert listed[-1] == "rollout:<base>"  # the planner family, after every registered name
    families = [name for name in listed[:-1] if name.startswith("<base>+")]  # the suffixes
    listed = [name for name in listed[:-1] if name not in families]
    assert listed == policy_names(include_oracles=True)
    assert {"<base>+srtf", "<base>+las", "<base>+elastic"} <= set(families)
    assert "oracle" in listed and "oracle" not in policy_names()
    for name in ("bace-pipe", "lcf", "ldf", "cr-lcf", "cr-ldf", "no-costmin", "random"):
        assert name in listed


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("bacepipe: error: ")
    return lines[0]


def test_unknown_policy_lists_the_valid_names(tmp_path: Path) -> None:
    proc = run(
        "compare", "--seeds", "2", "--policies", "bace-pipe,nope", "--out", "o", cwd=tmp_path
    )
    line = one_line_error(proc)
    assert "nope" in line and len(line) <= 250  # short: the list is cut past 170 characters
    assert "`bacepipe policies` lists them" in line
    assert all(name in line for name in policy_names()[:5])  # the list starts with them
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("seeds", ["0", "", "abc", "3-1", "1,-2"])
def test_bad_seeds(seeds: str, tmp_path: Path) -> None:
    proc = run("compare", "--seeds", seeds, "--policies", "lcf", "--out", "o", cwd=tmp_path)
    line = one_line_error(proc)
    assert "--seeds" in line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--kind", "jobs", "--values", "0"], "jobs"),
        (["--kind", "bandwidth", "--values", "-1"], "bandwidth"),
        (["--kind", "gpu", "--values", "x"], "--values"),
        (["--kind", "all", "--values", "1,2"], "--kind"),
        (["--values", "1,2"], "--kind"),  # --kind defaults to all
    ],
)
def test_bad_sweep_values(args: list[str], needle: str, tmp_path: Path) -> None:
    proc = run("sweep", *args, "--seeds", "2", "--policies", "lcf", "--out", "o", cwd=tmp_path)
    line = one_line_error(proc)
    assert needle in line
    assert not (tmp_path / "o").exists()


def test_unknown_kind_lists_the_choices(tmp_path: Path) -> None:
    proc = run("sweep", "--kind", "nope", "--seeds", "2", "--out", "o", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    # argparse prints its usage, then one error line naming every choice.
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1
    assert "--kind" in errors[0] and "nope" in errors[0]
    for kind in ("bandwidth", "gpu", "jobs", "all"):
        assert kind in errors[0]
    assert not (tmp_path / "o").exists()


def test_bad_workers_is_an_argparse_error(tmp_path: Path) -> None:
    proc = run("compare", "--workers", "0", "--seeds", "2", "--out", "o", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "--workers" in errors[0]


def test_one_seed_works(tmp_path: Path) -> None:
    stdout = ok(
        run(
            "compare",
            "--seeds",
            "1",
            "--policies",
            "lcf,ldf",
            "--out",
            "o",
            "--workers",
            "1",
            cwd=tmp_path,
        )
    )
    assert table_rows(stdout) == ["lcf", "ldf"]
    assert "±" not in stdout.split("mean ±")[0]  # no CI with a single seed
    assert (tmp_path / "o" / "compare.json").is_file()


def test_out_that_is_a_file_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("not a directory")
    proc = run("compare", "--seeds", "2", "--policies", "lcf", "--out", "taken", cwd=tmp_path)
    line = one_line_error(proc)
    assert "taken" in line


def header_cells(stdout: str) -> list[str]:
    """The cells of a printed table's header line."""
    return [c.strip() for c in stdout.splitlines()[0].split("  ") if c.strip()]


def test_compare_reports_carbon_and_egress_when_charged(tmp_path: Path) -> None:
    argv = ["compare", "--seeds", "2", "--policies", "bace-pipe,lcf", "--workers", "1"]
    plain = ok(run(*argv, "--out", "plain", cwd=tmp_path))
    assert header_cells(plain) == [
        "policy",
        "avg JCT h",
        "total cost $",
        "carbon kg",
        "JCT / bace-pipe",
        "cost / bace-pipe",
        "carbon / bace-pipe",
    ]
    world = ["--prices", "hourly", "--start-hour", "100", "--egress"]
    charged = ok(run(*argv, "--out", "charged", *world, cwd=tmp_path))
    assert header_cells(charged)[3:5] == ["carbon kg", "egress $"]
    assert table_rows(charged) == ["bace-pipe", "lcf"]
    with open(tmp_path / "charged" / "compare-summary.csv", newline="") as fh:
        summary = list(csv.DictReader(fh))
    assert all(r["egress_usd_mean"] and r["carbon_kg_mean"] for r in summary)
    with open(tmp_path / "plain" / "compare-summary.csv", newline="") as fh:
        assert "egress_usd_mean" not in next(csv.DictReader(fh))

    # The schedule (JCT column) is the same: prices and egress change the bill only.
    def jct(stdout: str) -> list[str]:
        return [re.split(r" {2,}", line)[1] for line in stdout.splitlines()[2:4]]

    assert jct(charged) == jct(plain)
    assert all("±" in cell for cell in jct(plain))


def test_online_help_lists_its_flags(tmp_path: Path) -> None:
    stdout = ok(run("online", "--help", cwd=tmp_path))
    for flag in ("--out", "--seeds", "--loads", "--jobs", "--policies", "--workers"):
        assert flag in stdout
    assert "out/online" in stdout and "0.4,0.6,0.8,1.0,1.2" in stdout


def test_world_flags_are_in_every_experiments_help(tmp_path: Path) -> None:
    for command in ("simulate", "compare", "sweep", "ablation"):
        stdout = ok(run(command, "--help", cwd=tmp_path))
        for flag in ("--prices", "--start-hour", "--egress", "--load", "--admission"):
            assert flag in stdout, (command, flag)
