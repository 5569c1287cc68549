"""``run_compare``: its CSV/JSON/PNG/TensorBoard output against direct simulations."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from exp_helpers import direct, read_csv

from bacepipe_env.errors import ValidationError
from bacepipe_env.experiments import (
    ExperimentOutcome,
    reference_policy,
    run_compare,
)

POLICIES = ["bace-pipe", "lcf", "cr-ldf"]
SEEDS = [0, 1, 2]
# t_{0.975, df} for the seed counts used here (textbook values).
T975 = {1: 12.706205, 2: 4.302653}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
METRICS = ("avg_jct_h", "total_cost_usd", "makespan_h", "gpu_utilization")
SCALARS = (
    "compare/avg_jct_h",
    "compare/total_cost_usd",
    "compare/avg_jct_norm",
    "compare/total_cost_norm",
)


def mean_ci(values: Sequence[float]) -> tuple[float, float]:
    """Sample mean and Student-t 95% half-width, computed independently of the library."""
    n = len(values)
    m = statistics.fmean(values)
    return m, T975[n - 1] * statistics.stdev(values) / math.sqrt(n)


def expected_summary(
    runs: list[dict[str, str]], policies: Sequence[str], reference: str
) -> dict[str, dict[str, float]]:
    """Per-policy means/CIs of the runs CSV, with per-seed ratios to ``reference``."""
    by = {(r["policy"], int(r["seed"])): r for r in runs}
    seeds = sorted({int(r["seed"]) for r in runs})
    out = {}
    for p in policies:
        jct = [float(by[p, s]["avg_jct_h"]) for s in seeds]
        cost = [float(by[p, s]["total_cost_usd"]) for s in seeds]
        rj = [float(by[reference, s]["avg_jct_h"]) for s in seeds]
        rc = [float(by[reference, s]["total_cost_usd"]) for s in seeds]
        row: dict[str, float] = {"n_seeds": len(seeds)}
        for name, vals in (
            ("avg_jct_h", jct),
            ("total_cost_usd", cost),
            ("avg_jct_norm", [a / b for a, b in zip(jct, rj)]),
            ("total_cost_norm", [a / b for a, b in zip(cost, rc)]),
        ):
            row[f"{name}_mean"], row[f"{name}_ci95"] = mean_ci(vals)
        out[p] = row
    return out


def check_summary_row(actual: dict[str, Any], expected: dict[str, float]) -> None:
    assert int(actual["n_seeds"]) == expected["n_seeds"]
    for key, value in expected.items():
        if key == "n_seeds":
            continue
        got = float(actual[key])
        if key.endswith("_mean"):
            assert got == pytest.approx(value, rel=1e-12, abs=1e-15), key
        else:  # the CI uses a 4-decimal t table
            assert got == pytest.approx(value, rel=1e-4, abs=1e-12), key


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[ExperimentOutcome, Path]:
    out = tmp_path_factory.mktemp("compare")
    return run_compare("paper", POLICIES, SEEDS, out), out


def test_writes_every_file(compared: tuple[ExperimentOutcome, Path]) -> None:
    outcome, out = compared
    for name in ("compare-runs.csv", "compare-summary.csv", "compare.json", "compare.png"):
        assert (out / name).is_file(), name
        assert (out / name).stat().st_size > 0
        assert out / name in outcome.files
    for p in POLICIES:
        events = list((out / "tb" / p).glob("events.out.tfevents.*"))
        assert len(events) == 1, p
        assert events[0] in outcome.files
    assert outcome.reference == "bace-pipe"
    assert outcome.warnings == []


def test_runs_csv_equals_direct_simulation(compared: tuple[ExperimentOutcome, Path]) -> None:
    _, out = compared
    rows = read_csv(out / "compare-runs.csv")
    assert len(rows) == len(POLICIES) * len(SEEDS)
    assert sorted((r["policy"], int(r["seed"])) for r in rows) == sorted(
        (p, s) for p in POLICIES for s in SEEDS
    )
    for row in rows:
        assert row["scenario"] == "paper"
        want = direct(row["policy"], int(row["seed"]))
        for key in METRICS:
            assert float(row[key]) == pytest.approx(want[key], rel=1e-12), (row, key)


def test_summary_csv_equals_statistics_of_the_runs(
    compared: tuple[ExperimentOutcome, Path],
) -> None:
    _, out = compared
    runs = read_csv(out / "compare-runs.csv")
    summary = read_csv(out / "compare-summary.csv")
    assert [r["policy"] for r in summary] == POLICIES
    expected = expected_summary(runs, POLICIES, "bace-pipe")
    for row in summary:
        check_summary_row(row, expected[row["policy"]])
    ref = next(r for r in summary if r["policy"] == "bace-pipe")
    for key in ("avg_jct_norm", "total_cost_norm"):
        assert float(ref[f"{key}_mean"]) == 1.0
        assert float(ref[f"{key}_ci95"]) == 0.0


def test_json_agrees_with_the_csvs(compared: tuple[ExperimentOutcome, Path]) -> None:
    _, out = compared
    data = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert data["experiment"] == "compare"
    assert data["scenario"] == "paper"
    assert data["seeds"] == SEEDS
    assert data["reference"] == "bace-pipe"
    runs = read_csv(out / "compare-runs.csv")
    assert len(data["runs"]) == len(runs)
    for jrow, crow in zip(data["runs"], runs):
        assert jrow["policy"] == crow["policy"]
        assert jrow["seed"] == int(crow["seed"])
        for key in METRICS:
            assert jrow[key] == float(crow[key])
    summary = read_csv(out / "compare-summary.csv")
    assert [r["policy"] for r in data["summary"]] == [r["policy"] for r in summary]
    for jrow, crow in zip(data["summary"], summary):
        for key, value in crow.items():
            if key == "policy":
                continue
            assert jrow[key] == float(value), key


def test_png_is_a_real_image(compared: tuple[ExperimentOutcome, Path]) -> None:
    import matplotlib.image

    _, out = compared
    path = out / "compare.png"
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    img = matplotlib.image.imread(path)
    assert img.ndim == 3
    assert img.shape[0] > 100 and img.shape[1] > 100
    assert img.std() > 0  # not a blank canvas


def test_tensorboard_scalars_read_back(compared: tuple[ExperimentOutcome, Path]) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _, out = compared
    runs = {(r["policy"], int(r["seed"])): r for r in read_csv(out / "compare-runs.csv")}
    for p in POLICIES:
        acc = EventAccumulator(str(out / "tb" / p))
        acc.Reload()
        assert set(SCALARS) <= set(acc.Tags()["scalars"]), p
        for tag in SCALARS:
            events = acc.Scalars(tag)
            assert [e.step for e in events] == SEEDS, (p, tag)
            for e in events:
                row, ref = runs[p, e.step], runs["bace-pipe", e.step]
                metric = tag.split("/")[1]
                if metric.endswith("_norm"):
                    base = "avg_jct_h" if metric == "avg_jct_norm" else "total_cost_usd"
                    want = float(row[base]) / float(ref[base])
                else:
                    want = float(row[metric])
                assert e.value == pytest.approx(want, rel=1e-6), (p, tag, e.step)
                if p == "bace-pipe" and metric.endswith("_norm"):
                    assert e.value == 1.0
        # The policy's description as a text summary.
        texts = acc.Tensors("compare/policy")
        assert len(texts) == 1
        text = texts[0].tensor_proto.string_val[0].decode()
        assert p in text


def test_two_workers_give_the_same_numbers(
    compared: tuple[ExperimentOutcome, Path], tmp_path: Path
) -> None:
    _, out1 = compared
    run_compare("paper", POLICIES, SEEDS, tmp_path, workers=2, tensorboard=False)
    assert not (tmp_path / "tb").exists()
    for name in ("compare-runs.csv", "compare-summary.csv"):
        assert read_csv(tmp_path / name) == read_csv(out1 / name), name


def test_first_policy_is_the_reference_without_bace_pipe(tmp_path: Path) -> None:
    policies, seeds = ["lcf", "ldf"], [0, 1]
    outcome = run_compare("paper", policies, seeds, tmp_path, name="base", tensorboard=False)
    assert outcome.reference == "lcf"
    assert json.loads((tmp_path / "base.json").read_text())["reference"] == "lcf"
    runs = read_csv(tmp_path / "base-runs.csv")
    summary = read_csv(tmp_path / "base-summary.csv")
    expected = expected_summary(runs, policies, "lcf")
    assert [r["policy"] for r in summary] == policies
    for row in summary:
        check_summary_row(row, expected[row["policy"]])
    lcf = summary[0]
    assert float(lcf["avg_jct_norm_mean"]) == 1.0
    assert float(lcf["total_cost_norm_mean"]) == 1.0
    # ldf is normalised seed by seed to lcf (mean of ratios, not ratio of means).
    by = {(r["policy"], int(r["seed"])): r for r in runs}
    ratios = [float(by["ldf", s]["avg_jct_h"]) / float(by["lcf", s]["avg_jct_h"]) for s in seeds]
    assert float(summary[1]["avg_jct_norm_mean"]) == pytest.approx(
        statistics.fmean(ratios), rel=1e-12
    )


def test_reference_policy() -> None:
    assert reference_policy(["lcf", "bace-pipe"]) == "bace-pipe"
    assert reference_policy(["cr-ldf", "lcf"]) == "cr-ldf"


@pytest.mark.parametrize(
    "policies,seeds",
    [([], [0]), (["nope"], [0]), (["lcf", "lcf"], [0]), (["lcf"], []), (["lcf"], [-1])],
)
def test_bad_arguments_raise_validation_error(
    policies: list[str], seeds: list[int], tmp_path: Path
) -> None:
    with pytest.raises(ValidationError):
        run_compare("paper", policies, seeds, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_one_seed_gives_nan_cis_and_strict_json(tmp_path: Path) -> None:
    def no_constants(name: str) -> Any:
        raise AssertionError(f"non-standard JSON constant {name}")

    run_compare("paper", ["bace-pipe", "lcf"], [3], tmp_path, tensorboard=False)
    summary = read_csv(tmp_path / "compare-summary.csv")
    assert all(math.isnan(float(r["avg_jct_h_ci95"])) for r in summary)
    data = json.loads((tmp_path / "compare.json").read_text(), parse_constant=no_constants)
    assert all(row["avg_jct_h_ci95"] is None for row in data["summary"])
    assert data["summary"][1]["avg_jct_h_mean"] == float(summary[1]["avg_jct_h_mean"])
    assert (tmp_path / "compare.png").read_bytes()[:8] == PNG_SIGNATURE


def test_duplicate_seeds_are_rejected_or_counted_once(tmp_path: Path) -> None:
    """Seeds [0, 0]: like a policy listed twice, either a ValidationError, or every output
    counts seed 0 once (runs CSV rows per policy == n_seeds of the summary)."""
    try:
        outcome = run_compare("paper", ["lcf", "ldf"], [0, 0], tmp_path, tensorboard=False)
    except ValidationError as err:
        assert "seed" in str(err)
        return
    runs = read_csv(tmp_path / "compare-runs.csv")
    for stats in outcome.stats[None]:
        n_rows = sum(r["policy"] == stats.policy for r in runs)
        assert n_rows == stats.jct_h.n, (stats.policy, n_rows, stats.jct_h.n)
