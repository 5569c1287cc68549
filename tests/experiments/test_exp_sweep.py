"""``run_sweep``: one knob of the scenario at several values, against direct simulations."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
from exp_helpers import direct, read_csv

from bacepipe_env.errors import ValidationError
from bacepipe_env.experiments import SWEEPS, ExperimentOutcome, run_sweep

DATA = Path(__file__).parents[2] / "bacepipe_env/scenarios/data"

POLICIES = ["bace-pipe", "ldf"]
SEEDS = [0, 1]
T975_DF1 = 12.706205  # two seeds
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
METRICS = ("avg_jct_h", "total_cost_usd", "makespan_h", "gpu_utilization")
CASES = {
    # kind: (load_scenario keyword, values, parse of a CSV cell)
    "jobs": ("n_jobs", [8, 12], int),
    "bandwidth": ("bandwidth_scale", [0.3, 1.5], float),
}


@pytest.fixture(scope="module", params=list(CASES))
def swept(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, ExperimentOutcome, Path]:
    kind = request.param
    out = tmp_path_factory.mktemp(f"sweep-{kind}")
    outcome = run_sweep(kind, "paper", POLICIES, SEEDS, out, values=CASES[kind][1])
    return kind, outcome, out


def test_writes_every_file(swept: tuple[str, ExperimentOutcome, Path]) -> None:
    kind, outcome, out = swept
    stem = f"sweep-{kind}"
    for suffix in ("-runs.csv", "-summary.csv", ".json", ".png"):
        path = out / f"{stem}{suffix}"
        assert path.is_file(), path
        assert path.stat().st_size > 0
        assert path in outcome.files
    assert outcome.reference == "bace-pipe"
    assert outcome.warnings == []
    assert list(outcome.stats) == CASES[kind][1]


def test_png_is_a_real_image(swept: tuple[str, ExperimentOutcome, Path]) -> None:
    import matplotlib.image

    kind, _, out = swept
    path = out / f"sweep-{kind}.png"
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    img = matplotlib.image.imread(path)
    assert img.shape[0] > 100 and img.shape[1] > 100
    assert img.std() > 0


def test_runs_csv_equals_direct_simulation_with_the_knob(
    swept: tuple[str, ExperimentOutcome, Path],
) -> None:
    kind, _, out = swept
    knob, values, parse = CASES[kind]
    rows = read_csv(out / f"sweep-{kind}-runs.csv")
    assert len(rows) == len(values) * len(POLICIES) * len(SEEDS)
    assert sorted((parse(r[knob]), r["policy"], int(r["seed"])) for r in rows) == sorted(
        (v, p, s) for v in values for p in POLICIES for s in SEEDS
    )
    for row in rows:
        assert row["sweep"] == kind
        assert parse(row["value"]) == parse(row[knob])
        want = direct(row["policy"], int(row["seed"]), **{knob: parse(row[knob])})
        for key in METRICS:
            assert float(row[key]) == pytest.approx(want[key], rel=1e-12), (row, key)


def test_the_knob_changes_the_outcome(swept: tuple[str, ExperimentOutcome, Path]) -> None:
    """Sanity: the two values of the knob do not give identical runs."""
    kind, _, out = swept
    knob, values, parse = CASES[kind]
    rows = read_csv(out / f"sweep-{kind}-runs.csv")
    at = {v: [r["avg_jct_h"] for r in rows if parse(r[knob]) == v] for v in values}
    assert at[values[0]] != at[values[1]]


def test_summary_covers_every_value_and_policy(
    swept: tuple[str, ExperimentOutcome, Path],
) -> None:
    kind, _, out = swept
    knob, values, parse = CASES[kind]
    runs = read_csv(out / f"sweep-{kind}-runs.csv")
    summary = read_csv(out / f"sweep-{kind}-summary.csv")
    assert [(parse(r[knob]), r["policy"]) for r in summary] == [
        (v, p) for v in values for p in POLICIES
    ]
    for row in summary:
        assert row["sweep"] == kind
        assert int(row["n_seeds"]) == len(SEEDS)
        v, p = parse(row[knob]), row["policy"]
        mine = {int(r["seed"]): r for r in runs if parse(r[knob]) == v and r["policy"] == p}
        ref = {
            int(r["seed"]): r for r in runs if parse(r[knob]) == v and r["policy"] == POLICIES[0]
        }
        for metric, norm in (
            ("avg_jct_h", "avg_jct_norm"),
            ("total_cost_usd", "total_cost_norm"),
            ("carbon_kg", "carbon_norm"),
        ):
            vals = [float(mine[s][metric]) for s in SEEDS]
            ratios = [float(mine[s][metric]) / float(ref[s][metric]) for s in SEEDS]
            for name, xs in ((metric, vals), (norm, ratios)):
                assert float(row[f"{name}_mean"]) == pytest.approx(statistics.fmean(xs), rel=1e-12)
                half = T975_DF1 * statistics.stdev(xs) / math.sqrt(len(xs))
                assert float(row[f"{name}_ci95"]) == pytest.approx(half, rel=1e-4, abs=1e-12)
        if p == POLICIES[0]:
            assert float(row["avg_jct_norm_mean"]) == 1.0
            assert float(row["total_cost_norm_mean"]) == 1.0
            assert float(row["carbon_norm_mean"]) == 1.0
        assert "egress_usd_mean" not in row  # egress is off


def test_json_agrees(swept: tuple[str, ExperimentOutcome, Path]) -> None:
    kind, _, out = swept
    knob, values, _ = CASES[kind]
    data = json.loads((out / f"sweep-{kind}.json").read_text(encoding="utf-8"))
    assert data["experiment"] == f"sweep-{kind}"
    assert data["knob"] == knob
    assert data["values"] == values
    assert data["seeds"] == SEEDS
    assert data["reference"] == "bace-pipe"
    assert len(data["runs"]) == len(values) * len(POLICIES) * len(SEEDS)
    summary = read_csv(out / f"sweep-{kind}-summary.csv")
    assert len(data["summary"]) == len(summary)
    for jrow, crow in zip(data["summary"], summary):
        assert jrow["policy"] == crow["policy"]
        assert jrow["avg_jct_h_mean"] == float(crow["avg_jct_h_mean"])
        assert jrow["total_cost_norm_ci95"] == float(crow["total_cost_norm_ci95"])


def test_sweeps_table_has_the_papers_values() -> None:
    assert SWEEPS["bandwidth"][:2] == ("bandwidth_scale", (0.3, 0.9, 1.5))
    assert SWEEPS["gpu"][:2] == ("gpu_scale", (0.5, 0.75, 1.25))
    assert SWEEPS["jobs"][:2] == ("n_jobs", (8, 12, 16, 20, 24))


@pytest.mark.parametrize(
    "kind,values",
    [
        ("jobs", [0]),
        ("jobs", [8, -3]),
        ("jobs", [2.5]),
        ("jobs", []),
        ("bandwidth", [-0.5]),
        ("bandwidth", [0]),
        ("gpu", [float("nan")]),
        ("gpu", [float("inf")]),
        ("nope", None),
        ("nope", [1.0]),
    ],
)
def test_bad_values_raise_validation_error(
    kind: str, values: list[float] | None, tmp_path: Path
) -> None:
    with pytest.raises(ValidationError):
        run_sweep(kind, "paper", POLICIES, SEEDS, tmp_path / "out", values=values)
    assert not (tmp_path / "out").exists()


def test_unknown_kind_lists_the_kinds(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as err:
        run_sweep("nope", "paper", POLICIES, SEEDS, tmp_path)
    for kind in SWEEPS:
        assert kind in str(err.value)


def test_duplicate_values_are_rejected_or_counted_once(tmp_path: Path) -> None:
    """Values [8, 8]: either a ValidationError, or one summary row per (value, policy) and
    runs that match the summary's seed counts."""
    try:
        outcome = run_sweep("jobs", "paper", ["lcf"], [0], tmp_path, values=[8, 8])
    except ValidationError:
        return
    runs = read_csv(tmp_path / "sweep-jobs-runs.csv")
    summary = read_csv(tmp_path / "sweep-jobs-summary.csv")
    assert len({(r["n_jobs"], r["policy"]) for r in summary}) == len(summary)
    assert sum(int(r["n_seeds"]) for r in summary) == len(runs)
    assert len(outcome.runs) == len(runs)


@pytest.mark.parametrize("where", ["knob", "file"])
def test_egress_is_reported_at_every_value_when_on(where: str, tmp_path: Path) -> None:
    """With egress charged (a knob, or the scenario file's own field), every value's summary
    has the egress columns, also at 4x the GPUs where every job stays in one region (a charge
    of 0 is still a reported 0)."""
    scenario, knobs = "paper", {"egress_usd_per_gb": 0.02}
    if where == "file":
        spec = json.loads((DATA / "paper.json").read_text())
        path = tmp_path / "paper-egress.json"
        path.write_text(json.dumps({**spec, "egress_usd_per_gb": 0.02}))
        scenario, knobs = str(path), {}
    out = tmp_path / "out"
    policies, values = ["bace-pipe", "ldf"], [1.25, 4.0]
    outcome = run_sweep("gpu", scenario, policies, SEEDS, out, values=values, knobs=knobs)
    runs = read_csv(out / "sweep-gpu-runs.csv")
    summary = read_csv(out / "sweep-gpu-summary.csv")
    assert [(float(r["gpu_scale"]), r["policy"]) for r in summary] == [
        (v, p) for v in values for p in policies
    ]
    egress = {
        v: [float(r["egress_usd"]) for r in runs if float(r["gpu_scale"]) == v] for v in values
    }
    assert max(egress[1.25]) > 0
    assert egress[4.0] == [0.0] * 4
    for row in summary:
        mine = [
            float(r["egress_usd"])
            for r in runs
            if r["policy"] == row["policy"] and float(r["gpu_scale"]) == float(row["gpu_scale"])
        ]
        assert float(row["egress_usd_mean"]) == pytest.approx(statistics.fmean(mine), rel=1e-12)
        half = T975_DF1 * statistics.stdev(mine) / math.sqrt(len(mine))
        assert float(row["egress_usd_ci95"]) == pytest.approx(half, rel=1e-4, abs=1e-12)
    for stats in outcome.stats.values():
        assert all(s.egress_usd is not None for s in stats)
    data = json.loads((out / "sweep-gpu.json").read_text())
    assert data["knobs"] == knobs
    assert all("egress_usd_mean" in r for r in data["summary"])
