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
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios.loader import load_scenario

DATA = Path(__file__).parents[2] / "bacepipe_env/scenarios/data"

POLICIES = ["bace-pipe", "lcf", "cr-ldf"]
SEEDS = [0, 1, 2]
# t_{0.975, df} for the seed counts used here (textbook values).
T975 = {1: 12.706205, 2: 4.302653}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
METRICS = ("avg_jct_h", "total_cost_usd", "makespan_h", "gpu_utilization")
# Each policy's HParams-session metrics: the summary's means (and CIs) over the seeds.
SCALARS = (
    "compare/avg_jct_h",
    "compare/avg_jct_h_ci95",
    "compare/total_cost_usd",
    "compare/total_cost_usd_ci95",
    "compare/avg_jct_norm",
    "compare/total_cost_norm",
    "compare/carbon_kg",
    "compare/carbon_kg_ci95",
    "compare/carbon_norm",
)
# A normalised scalar or summary column -> the runs column it divides by the reference's.
NORMALISED = {
    "avg_jct_norm": "avg_jct_h",
    "total_cost_norm": "total_cost_usd",
    "carbon_norm": "carbon_kg",
}


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
        carbon = [float(by[p, s]["carbon_kg"]) for s in seeds]
        rj = [float(by[reference, s]["avg_jct_h"]) for s in seeds]
        rc = [float(by[reference, s]["total_cost_usd"]) for s in seeds]
        rk = [float(by[reference, s]["carbon_kg"]) for s in seeds]
        row: dict[str, float] = {"n_seeds": len(seeds)}
        for name, vals in (
            ("avg_jct_h", jct),
            ("total_cost_usd", cost),
            ("avg_jct_norm", [a / b for a, b in zip(jct, rj)]),
            ("total_cost_norm", [a / b for a, b in zip(cost, rc)]),
            ("carbon_kg", carbon),
            ("carbon_norm", [a / b for a, b in zip(carbon, rk)]),
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
        # the session's file (the first session's folder also holds the table's declaration)
        events = list((out / "tb" / "compare" / "paper" / p).glob("events.out.tfevents.*.compare"))
        assert len(events) == 1, p
        assert events[0] in outcome.files
    (declaration,) = (out / "tb").rglob("events.out.tfevents.*.hparams-table")
    assert declaration in outcome.files
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
        assert set(row) == {"policy", *expected[row["policy"]]}  # no egress columns: it is off
    ref = next(r for r in summary if r["policy"] == "bace-pipe")
    for key in NORMALISED:
        assert float(ref[f"{key}_mean"]) == 1.0
        assert float(ref[f"{key}_ci95"]) == 0.0


def test_runs_carbon_is_the_placements_energy_times_intensity(
    compared: tuple[ExperimentOutcome, Path],
) -> None:
    """carbon_kg of a run = sum over jobs and their regions of GPUs x execution hours x kW per
    GPU x gCO2e/kWh, from the scenario file's figures; egress is off, so 0."""
    _, out = compared
    spec = json.loads((DATA / "paper.json").read_text())
    power_kw = spec["constants"]["power_kw"]
    intensity = [r["carbon_g_per_kwh"] for r in spec["regions"]]
    for row in read_csv(out / "compare-runs.csv"):
        seed = int(row["seed"])
        result = make_policy(row["policy"], seed=seed).simulate(load_scenario("paper", seed=seed))
        grams = math.fsum(
            n * rec.execution / 3600.0 * power_kw * intensity[r]
            for rec in result.records
            for r, n in zip(rec.placement.path, rec.placement.gpus, strict=True)
        )
        assert float(row["carbon_kg"]) == pytest.approx(grams / 1000.0, rel=1e-12), row
        assert float(row["egress_usd"]) == 0.0


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
    """Per policy one run, ``tb/compare/paper/<policy>``: the summary's means and CIs at step 0
    (nothing on a seed axis for TensorBoard to smooth across), and every seed's run in a text
    table that equals the runs CSV."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _, out = compared
    runs = {(r["policy"], int(r["seed"])): r for r in read_csv(out / "compare-runs.csv")}
    summary = {r["policy"]: r for r in read_csv(out / "compare-summary.csv")}
    for p in POLICIES:
        acc = EventAccumulator(str(out / "tb" / "compare" / "paper" / p))
        acc.Reload()
        assert set(acc.Tags()["scalars"]) == set(SCALARS), p  # no egress scalar: it is off
        for tag in SCALARS:
            (event,) = acc.Scalars(tag)
            metric = tag.split("/")[1]
            column = metric if metric.endswith("_ci95") else f"{metric}_mean"
            assert event.step == 0, (p, tag)
            assert event.value == pytest.approx(float(summary[p][column]), rel=1e-6), (p, tag)
            if p == "bace-pipe" and metric.endswith("_norm"):
                assert event.value == 1.0
        # The policy's description as a text summary.
        texts = acc.Tensors("compare/policy")
        assert len(texts) == 1
        text = texts[0].tensor_proto.string_val[0].decode()
        assert p in text
        # Every seed's numbers, in seed order, as the runs CSV has them.
        (table,) = acc.Tensors("compare/seeds")
        rows = [
            line.split("|")[1:-1] for line in table.tensor_proto.string_val[0].decode().splitlines()
        ]
        assert [c.strip() for c in rows[0]][:2] == ["seed", "avg JCT (h)"]
        assert [int(r[0]) for r in rows[2:]] == SEEDS
        for cells in rows[2:]:
            seed, jct, norm = int(cells[0]), float(cells[1]), float(cells[4])
            row, ref = runs[p, seed], runs["bace-pipe", seed]
            assert jct == pytest.approx(float(row["avg_jct_h"]), abs=5e-4), (p, seed)
            want = float(row["avg_jct_h"]) / float(ref["avg_jct_h"])
            assert norm == pytest.approx(want, abs=5e-5), (p, seed)


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


def _summary(policy: str, seed: int, carbon: float, egress: float = 0.0, **knobs: Any) -> Any:
    from bacepipe_env.experiments import RunSpec, RunSummary

    spec = RunSpec(policy, "paper", seed, tuple(sorted(knobs.items())))
    return RunSummary(spec, 10.0 + seed, 100.0 + len(policy), 20.0, 0.5, carbon, egress)


def test_table_columns_follow_carbon_and_egress() -> None:
    from bacepipe_env.experiments import format_table, summarise

    def head(table: str) -> list[str]:
        return [c.strip() for c in table.splitlines()[0].split("  ") if c.strip()]

    base = ["policy", "avg JCT h", "total cost $", "carbon kg"]
    ratios = ["JCT / lcf", "cost / lcf", "carbon / lcf"]
    off = [_summary(p, s, 50.0 * (s + 1)) for p in ("lcf", "ldf") for s in (0, 1)]
    table = format_table(summarise(off, "lcf"), "lcf")
    assert head(table) == [*base, *ratios]
    assert table.splitlines()[2].split()[-6:] == ["1.000", "±", "0.000"] * 2
    # egress charged by one run, or asked for with a knob (charging nothing): a column
    charged = [*off[:3], _summary("ldf", 1, 100.0, egress=3.5)]
    knob = [_summary(p, s, 1.0, egress_usd_per_gb=0.02) for p in ("lcf", "ldf") for s in (0, 1)]
    for runs in (charged, knob):
        stats = summarise(runs, "lcf")
        assert head(format_table(stats, "lcf")) == [*base, "egress $", *ratios]
        assert all(s.egress_usd is not None for s in stats)
        assert "egress_usd_mean" in stats[0].row()
    stats = summarise(charged, "lcf")
    assert stats[1].egress_usd is not None
    assert stats[1].egress_usd.mean == 1.75
    # summarise(egress=False) leaves it out whatever the runs say
    assert all(s.egress_usd is None for s in summarise(charged, "lcf", egress=False))
    # no carbon figures (a custom scenario without carbon_g_per_kwh): no ratio, not 0/0
    zero = [_summary(p, s, 0.0) for p in ("lcf", "ldf") for s in (0, 1)]
    stats = summarise(zero, "lcf")
    assert all(math.isnan(s.carbon_norm.mean) for s in stats)
    rows = format_table(stats, "lcf").splitlines()[2:4]
    assert all(row.endswith("  -") for row in rows)
