"""The experiments' outputs carry the deadline metrics (semantics §15) only when some job has
a deadline: the per-run CSV, the summary CSV and table, TensorBoard's scalars and the env's
last ``info``; a world without deadlines writes what it wrote before."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from bacepipe_env.experiments import run_compare

KNOBS = {"n_jobs": 12, "load": 0.8}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("slack", [None, "uniform:1.2,3.0"])
def test_compare_writes_the_deadline_metrics_only_with_deadlines(
    slack: str | None, tmp_path: Path
) -> None:
    knobs: dict[str, Any] = dict(KNOBS)
    if slack is not None:
        knobs["deadline_slack"] = slack
    policies, seeds = ["bace-pipe", "fcfs"], [0, 1]
    run_compare("online", policies, seeds, tmp_path, knobs=knobs)
    runs = _rows(tmp_path / "compare-runs.csv")
    summary = {r["policy"]: r for r in _rows(tmp_path / "compare-summary.csv")}
    assert ("miss_rate" in runs[0]) == (slack is not None)
    assert ("total_tardiness_h" in runs[0]) == (slack is not None)
    assert ("miss_rate_mean" in summary["fcfs"]) == (slack is not None)
    if slack is None:
        return
    for p in policies:
        mine = [r for r in runs if r["policy"] == p]
        for r in mine:  # a share of the run's 12 jobs
            assert float(r["miss_rate"]) * 12 == pytest.approx(round(float(r["miss_rate"]) * 12))
            assert float(r["total_tardiness_h"]) >= 0
        mean = sum(float(r["miss_rate"]) for r in mine) / len(mine)
        assert float(summary[p]["miss_rate_mean"]) == pytest.approx(mean)
    acc_mod = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    acc = acc_mod.EventAccumulator(str(tmp_path / "tb" / "compare" / "online" / "fcfs"))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"compare/miss_rate", "compare/total_tardiness_h"} <= tags
    (event,) = acc.Scalars("compare/miss_rate")
    assert event.value == pytest.approx(float(summary["fcfs"]["miss_rate_mean"]), rel=1e-6)


def test_the_compare_table_has_the_deadline_columns_only_with_deadlines() -> None:
    from bacepipe_env.experiments.runner import RunSpec, run_one
    from bacepipe_env.experiments.summary import format_table, summarise

    def head(knobs: dict[str, Any]) -> str:
        spec = RunSpec("fcfs", "online", 0, tuple(knobs.items()))
        runs = [run_one(spec)]
        return format_table(summarise(runs, "fcfs"), "fcfs").splitlines()[0]

    assert "missed" not in head(KNOBS) and "tardiness" not in head(KNOBS)
    with_ = head({**KNOBS, "deadline_slack": "uniform:1.2,3.0"})
    assert "missed" in with_ and "tardiness h" in with_


def test_the_env_info_has_the_deadline_metrics_only_with_deadlines() -> None:
    from bacepipe_env.envs.geopipe import GeoPipeEnv

    for slack, expected in ((None, False), ("fixed:2", True)):
        knobs = dict(KNOBS, **({"deadline_slack": slack} if slack else {}))
        env = GeoPipeEnv("online", **knobs)
        env.reset(seed=0)
        done, info = False, {}
        while not done:
            _, _, term, trunc, info = env.step(int(env.action_masks().argmax()))
            done = term or trunc
        assert ("episode_miss_rate" in info) == expected
        assert ("episode_total_tardiness_h" in info) == expected
        if expected:
            result = env.sim.result()
            assert info["episode_miss_rate"] == result.miss_rate


@pytest.mark.parametrize("slack", [False, True])
def test_evaluate_shows_the_deadline_columns_only_with_deadlines(
    slack: bool, tmp_path: Path
) -> None:
    import json
    import subprocess
    import sys

    argv = ["evaluate", "--env-id", "bacepipe_env/GeoPipe-v2", "--policies", "sjf,fcfs"]
    out = tmp_path / "evaluate.json"
    argv += ["--episodes", "2", "--first-seed", "0", "--jobs", "6", "--json", str(out)]
    argv += ["--deadline-slack", "fixed:1.5"] if slack else []
    proc = subprocess.run(
        [sys.executable, "-m", "bacepipe_env.cli", *argv],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    head = next(line for line in proc.stdout.splitlines() if line.startswith("policy"))
    assert ("missed %" in head and "tardiness h" in head) == slack
    data = json.loads(out.read_text())
    assert all(("miss_rate" in r) == slack for r in data["rows"])
    assert all(("miss_rate" in p) == slack for p in data["summary"]["policies"])
    if slack:
        rates = [r["miss_rate"] for r in data["rows"]]
        assert all(r * 6 == round(r * 6) for r in rates)  # a share of 6 jobs


def test_semantics_carries_the_tables_of_the_committed_deadline_results(
    benchmark_module,
) -> None:
    """benchmarks/deadlines.py: docs/semantics.md §15 holds the tables of the committed
    results, every policy x calendar x seed is there, and one run recomputed gives them."""
    import json

    bench = benchmark_module("deadlines")
    from benchmarks.tables import between

    data = json.loads(bench.RESULTS.read_text())
    hint = "docs/semantics.md: run python benchmarks/deadlines.py table"
    assert between(bench.DOCS, "deadline-table") == "\n" + bench.markdown(data), hint
    assert between(bench.DOCS, "deadline-levers") == "\n" + bench.lever_markdown(data["levers"]), (
        hint
    )
    seeds = sorted({r["seed"] for r in data["rows"]})
    assert len(data["rows"]) == len(bench.POLICIES) * len(bench.CALENDARS) * len(seeds)
    assert {r["policy"] for r in data["levers"]} == set(bench.LEVER_POLICIES)
    # one committed run, recomputed with the current code
    row = next(r for r in data["rows"] if r["policy"] == "edf+deadline-plan+srtf")
    again = bench._one((row["policy"], row["announce_h"], row["seed"]))
    assert again == row
