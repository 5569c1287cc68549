"""``bacepipe policies`` lists the suffixes that compose a policy, and an elastic run says
what it did (issue 44, item 3): its summary prints its resizes, restarts and waste, and an
elastic rule where no job may run a second copy is one line naming ``--max-replicas``."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from bacepipe_env.cli import main
from bacepipe_env.policies.registry import policy_info, policy_suffixes

ELASTIC_RUN = ["simulate", "--scenario", "paper", "--policy", "bace-pipe+elastic"]
ELASTIC_RUN += ["--model", "physical", "--max-replicas", "4"]


def _totals(text: str) -> dict[str, str]:
    """The summary's ``  name   value [unit]`` lines, name -> value."""
    out = {}
    for line in text.splitlines():
        found = re.fullmatch(r"  ([a-zA-Z][\w -]*?) {2,}(\S+)( \S+)?", line)
        if found:
            out[found.group(1)] = found.group(2)
    return out


# ------------------------------------------------------------------------------ policies
def test_policies_lists_every_suffix_with_its_rule_and_bases(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    family = {line.split()[0]: line for line in lines if line.startswith("<base>+")}
    assert list(family) == [f"<base>{s}" for s in policy_suffixes()]
    assert {"<base>+srtf", "<base>+las", "<base>+elastic"} <= set(family)
    assert (
        "(preemption srtf; base: sjf, sjf+finish-aware, bace-pipe, sjf+announce, edf, "
        "edf-triage, edf+deadline-plan)" in (family["<base>+srtf"])
    )
    assert "(preemption las; base: sjf, sjf+finish-aware)" in family["<base>+las"]
    assert "(elasticity greedy; base: any heuristic)" in family["<base>+elastic"]
    assert "--max-replicas" in family["<base>+elastic"]
    assert lines[-1].startswith("rollout:<base>")  # the planner family stays last


def test_every_listed_composition_is_a_policy() -> None:
    for suffix, bases in policy_suffixes().items():
        for base in bases or ["lcf", "sjf+srtf"]:  # +elastic: any heuristic
            info = policy_info(base + suffix)
            assert info.name == base + suffix
    assert policy_info("lcf+elastic").elasticity == "greedy"
    assert policy_info("sjf+finish-aware+srtf").preemption == "srtf"


# ------------------------------------------------------------------------------ elastic runs
def test_an_elastic_run_prints_its_resizes_restarts_and_waste(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "run.json"
    assert main([*ELASTIC_RUN, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    run = json.loads(out.read_text(encoding="utf-8"))
    # counted on the jobs' attempts, not on the run's totals: here one job is resized once
    # (attempts resized, completed), so 1 resize and 1 restart; the summary must say so
    outcomes = [a["outcome"] for job in run["jobs"] for a in job["attempts"]]
    resized = outcomes.count("resized")
    restarts = sum(len(job["attempts"]) - 1 for job in run["jobs"])
    assert resized == restarts == 1
    wasted = sum(job["wasted_gpu_hours"] for job in run["jobs"])
    assert wasted > 0
    totals = _totals(text)
    assert totals["resizes"] == str(resized) and totals["restarts"] == str(restarts)
    assert totals["wasted GPU-hours"] == f"{wasted:,.2f}"
    assert totals["wasted cost"] == f"{run['wasted_cost_usd']:,.2f}"
    assert "greedy elasticity" in text.split("\n\n")[1].splitlines()[0]
    head = text.splitlines()[0].split()
    assert head[-2:] == ["restarts", "resizes"]
    rows = {line.split()[0]: line.split() for line in text.splitlines()[2:10]}
    assert rows["J1"][-1] == "1" and rows["J2"][-1] == "0"  # per-job resizes


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (
            ["--policy", "bace-pipe+elastic", "--model", "physical"],
            "bacepipe: error: --policy: no job may run a second copy of its pipeline, so "
            "nothing would be resized: give --max-replicas 2 or more (got 'bace-pipe+elastic')",
        ),
        (
            ["--elasticity", "greedy", "--model", "physical"],
            "bacepipe: error: --elasticity: no job may run a second copy of its pipeline, so "
            "nothing would be resized: give --max-replicas 2 or more (got 'greedy')",
        ),
        (
            ["--policy", "sjf+elastic"],
            "bacepipe: error: --policy: no job may run a second copy of its pipeline, so "
            "nothing would be resized: give --max-replicas 2 or more and --model physical "
            "(got 'sjf+elastic')",
        ),
    ],
)
def test_an_elastic_rule_without_copies_is_one_line(
    extra: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--scenario", "paper", *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.splitlines() == [line]


def test_a_plain_run_prints_no_resizes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--scenario", "fig1"]) == 0
    text = capsys.readouterr().out
    assert "resizes" not in text and "elasticity" not in text and "restarts" not in text


def test_the_attempts_csv_lists_every_copy_and_link_booking_the_json_has(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 44: ``--csv`` writes a row per attempt with every copy's path and each directed
    link's booking, the same attempts, copies and rates as the JSON (both written by one run);
    the resized job's second attempt holds two copies (2 x 80 GPUs)."""
    js, table = tmp_path / "run.json", tmp_path / "attempts.csv"
    assert main([*ELASTIC_RUN, "--json", str(js), "--csv", str(table)]) == 0
    capsys.readouterr()
    run = json.loads(js.read_text(encoding="utf-8"))
    with table.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    attempts = [(job["job_id"], a) for job in run["jobs"] for a in job["attempts"]]
    assert len(rows) == len(attempts)
    for row, (job_id, a) in zip(rows, attempts):
        assert int(row["job_id"]) == job_id and row["outcome"] == a["outcome"]
        assert float(row["start_s"]) == a["start_s"] and int(row["gpus"]) == a["gpus"]
        copies = [">".join(f"{c['region']}:{c['gpus']}" for c in copy) for copy in a["copies"]]
        assert row["copies"] == " | ".join(copies)
        links = {f"{x['from']}>{x['to']}": x["booked_Bps"] for x in a["links"]}
        parsed = dict(p.split("=") for p in row["links"].split("; ") if p)
        assert {k: float(v) for k, v in parsed.items()} == links
    grown = [a for _, a in attempts if len(a["copies"]) > 1]
    assert grown and all(a["gpus"] == sum(c["gpus"] for q in a["copies"] for c in q) for a in grown)
