"""``--help`` of the world-running commands lists its flags in groups (world, policy, output,
execution), every flag still works, and an unknown command, choice or policy name that is close
to a valid one says which (issue 39, item 4)."""

from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from bacepipe_env.cli import main
from bacepipe_env.cli_args import build_parser, did_you_mean
from bacepipe_env.core.world import KNOBS


def _knob_flags(*scopes: str) -> list[str]:
    """The world flags of KNOBS in ``scopes``, in the table's order."""
    return [k.flag for k in KNOBS.values() if k.flag and k.scope in scopes]


EXECUTION = ["--seeds", "--workers", "--backend", "--address"]
EXPECTED = {
    "simulate": {
        "options": ["-h", "--help"],
        "world": ["--scenario", "--env-id", "--seed", *_knob_flags("simulate", "world")],
        "policy": ["--policy", "--partial-take"],
        "output": ["--json", "--csv", "--plot"],
    },
    "compare": {
        "options": ["-h", "--help"],
        "world": ["--scenario", *_knob_flags("world")],
        "policy": ["--policies"],
        "output": ["--out"],
        "execution": EXECUTION,
    },
    "sweep": {
        "options": ["-h", "--help"],
        "world": ["--scenario", "--kind", "--values", *_knob_flags("world")],
        "policy": ["--policies"],
        "output": ["--out"],
        "execution": EXECUTION,
    },
}
EXPECTED["ablation"] = EXPECTED["compare"]


def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def _sections(text: str) -> dict[str, list[str]]:
    """Each ``heading:`` of a help text and the flags listed under it, in order (a flag's
    line starts with two spaces and a dash; its wrapped help lines are indented further)."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if re.fullmatch(r"[a-z][a-z ]*:", line):
            current = line[:-1]
            out[current] = []
        elif current is not None and re.match(r"  -", line):
            names = line.strip().split("  ")[0]  # "-h, --help", "--kind {a,b}", "--seed SEED"
            out[current] += [f.split(" ")[0] for f in names.split(", ")]
    return out


@pytest.mark.parametrize("command", list(EXPECTED))
def test_help_lists_the_flags_in_their_groups(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # the layout of a pipe or an 80-column terminal
    text = _help(command, capsys)
    assert _sections(text) == EXPECTED[command]
    usage = text.split("\n\n")[0].splitlines()
    assert usage[0].startswith(f"usage: bacepipe {command} ") and len(usage) <= 3, usage
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "\nworld:\n  the scenario and its settings: a flag not given keeps" in text


def test_the_flags_parse_into_the_same_settings() -> None:
    parser = build_parser()
    sim = parser.parse_args(
        shlex.split(
            "simulate --scenario fig1 --seed 3 --policy sjf --partial-take --egress "
            "--outage A:1:2 --outage B:2:3 --json r.json --plot t.png"
        )
    )
    assert (sim.scenario, sim.seed, sim.policy, sim.partial_take) == ("fig1", 3, "sjf", True)
    assert (sim.egress_usd_per_gb, sim.outages) == (0.02, ["A:1:2", "B:2:3"])
    assert (sim.json, sim.plot) == ("r.json", "t.png")
    sweep = parser.parse_args(
        shlex.split(
            "sweep --kind gpu --values 0.5,1 --seeds 0-2 --workers 2 --backend ray "
            "--address auto --policies bace-pipe,lcf --out o --admission full"
        )
    )
    assert (sweep.kind, sweep.values, sweep.seeds, sweep.workers) == ("gpu", "0.5,1", "0-2", 2)
    assert (sweep.backend, sweep.address, sweep.policies) == ("ray", "auto", "bace-pipe,lcf")
    assert (sweep.out, sweep.admission) == ("o", "full")
    compare = parser.parse_args(["compare"])
    assert (compare.scenario, compare.seeds, compare.backend, compare.out) == (
        "paper",
        "10",
        "local",
        "out/compare",
    )


def test_simulate_flags_from_every_group_still_work(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    argv = ["simulate", "--scenario", "fig1", "--seed", "0", "--policy", "bace-pipe"]
    argv += ["--partial-take", "--admission", "full", "--egress", "--json", str(out)]
    assert main(argv) == 0
    run = json.loads(out.read_text(encoding="utf-8"))
    assert run["policy"] == "bace-pipe+partial"  # --partial-take (policy group)
    assert run["admission"] == "full" and run["egress"] is True  # world group
    assert [job["name"] for job in run["jobs"]] == ["P", "Q"]  # fig1's two jobs


def test_compare_flags_from_every_group_still_work(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    argv = ["compare", "--scenario", "fig1", "--seeds", "0,1", "--workers", "1"]
    argv += ["--policies", "bace-pipe,lcf", "--out", str(out), "--admission", "full"]
    assert main(argv) == 0
    with open(out / "compare-runs.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted((r["policy"], r["seed"]) for r in rows) == [
        ("bace-pipe", "0"),
        ("bace-pipe", "1"),
        ("lcf", "0"),
        ("lcf", "1"),
    ]


def test_an_execution_flag_keeps_its_check(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # out/compare, had the run started
    assert main(["compare", "--address", "auto", "--seeds", "1"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["bacepipe: error: --address: needs --backend ray (got 'auto')"]
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------ did you mean
@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["simulat"],
            "bacepipe: error: unknown command 'simulat'; did you mean 'simulate'? "
            "(see bacepipe --help)",
        ),
        (
            ["compare", "--policies", "sjf+finsh-aware"],
            "bacepipe: error: policy: unknown policy; did you mean 'sjf+finish-aware'? "
            "(`bacepipe policies` lists them) (got 'sjf+finsh-aware')",
        ),
        (
            ["sweep", "--kind", "bandwith"],
            "bacepipe sweep: error: unknown --kind value 'bandwith'; did you mean 'bandwidth'? "
            "(see bacepipe sweep --help)",
        ),
    ],
)
def test_a_close_name_is_suggested_in_one_line(
    argv: list[str], line: str, tmp_path: Path, bacepipe_cli: Any
) -> None:
    proc = bacepipe_cli(*argv, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", line + "\n")
    assert list(tmp_path.iterdir()) == []  # nothing ran


def test_simulate_suggests_a_policy(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--scenario", "fig1", "--policy", "bace-pip"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "bacepipe: error: policy: unknown policy; did you mean 'bace-pipe'? "
        "(`bacepipe policies` lists them) (got 'bace-pip')"
    ]


def test_a_name_close_to_none_still_lists_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["bogus"])
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("bacepipe: error: unknown command 'bogus'; choose from simulate, ")
    assert main(["simulate", "--scenario", "fig1", "--policy", "zzzz"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("bacepipe: error: policy: unknown policy; choose from: bace-pipe, ")
    assert "did you mean" not in line and len(line) < 200


def test_did_you_mean_picks_the_closest_or_none() -> None:
    commands = ["simulate", "scenarios", "sweep", "train"]
    assert did_you_mean("simulat", commands) == "simulate"
    assert did_you_mean("swep", commands) == "sweep"
    assert did_you_mean("xyz", commands) is None
