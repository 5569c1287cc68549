"""``bacepipe reproduce``: the generated report, checked against independent computations."""

from __future__ import annotations

import itertools
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from exp_helpers import PNG_SIGNATURE, header, section, table

from bacepipe_env.cli import main
from bacepipe_env.core.perf import iteration_time
from bacepipe_env.core.scenario import Scenario
from bacepipe_env.core.units import hours
from bacepipe_env.errors import SimulationError
from bacepipe_env.experiments import run_compare
from bacepipe_env.experiments.reproduce import (
    CHART_SEMANTICS,
    CLAIMS,
    SCENARIOS,
    SEMANTICS,
    ReproduceOutcome,
    Semantics,
    run_reproduce,
    specs_for,
    verdict,
)
from bacepipe_env.experiments.reproduce_runs import VARIANTS, load_point
from bacepipe_env.experiments.runner import RunSpec, run_all, spec_scenario
from bacepipe_env.experiments.stats import estimate
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import load_scenario

SEEDS = [0, 1]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "reproduction.md"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[ReproduceOutcome, str]:
    out = tmp_path_factory.mktemp("reproduce")
    outcome = run_reproduce(out, SEEDS, progress=False)
    return outcome, (out / "reproduction.md").read_text(encoding="utf-8")


def cell(md: str, semantics: str, scenario: str, claim: str) -> str:
    sec = section(md, "## The semantics table")
    col = header(sec).index(f"`{claim}`")
    row = next(r for r in table(sec) if r[0] == semantics and r[1] == scenario)
    return row[col]


#: A cell's mark, with ``(<1)`` when the mean has the paper's sign but is below the threshold.
MARK = re.compile(r"(?:(✓✓|✓)(?: \((<1)\))?|✗✗|✗|=)$|^n/a$")


def test_semantics_table_has_ten_rows_with_counts(report: tuple[ReproduceOutcome, str]) -> None:
    _, md = report
    sec = section(md, "## The semantics table")
    head = header(sec)
    assert head[:2] == ["semantics", "scenario"]
    assert head[2:-3] == [f"`{c.id}`" for c in CLAIMS]
    assert head[-3:] == ["direction", "CI excl. 0", "reproduced"]
    rows = table(sec)
    assert [s.name for s in SEMANTICS][-1] == "physical"
    assert [(r[0], r[1]) for r in rows] == [(s.name, sc) for s in SEMANTICS for sc in SCENARIOS]
    n = len(CLAIMS)
    for r in rows:
        assert len(r) == len(head)
        cells = r[2:-3]
        marks = [MARK.search(c) for c in cells]
        assert all(marks), cells
        direction = sum(m is not None and m.group(1) is not None for m in marks)
        significant = sum(m is not None and m.group(1) == "✓✓" for m in marks)
        reproduced = sum(m is not None and bool(m.group(1)) and not m.group(2) for m in marks)
        assert r[-3:] == [f"{direction}/{n}", f"{significant}/{n}", f"{reproduced}/{n}"]
    # the Summary repeats the counts
    summary = table(section(md, "## Summary"))
    assert [s[2:] for s in summary] == [r[-3:] for r in rows]


def test_below_the_threshold_is_marked_and_not_counted(
    report: tuple[ReproduceOutcome, str],
) -> None:
    """An in-direction cell carries ``(<1)`` exactly when its mean is below 1 (percent or
    point): the printed mean (one decimal) is at most 1.0 with it and at least 1.0 without."""
    _, md = report
    n_short = 0
    for r in table(section(md, "## The semantics table")):
        for c in r[2:-3]:
            m = MARK.search(c)
            assert m is not None
            if m.group(1):
                mean = float(c.split()[0])
                assert (mean <= 1.0) if m.group(2) else (mean >= 1.0), c
                n_short += m.group(2) is not None
    assert n_short > 0  # these seeds have some


def test_physical_semantics_runs_the_physical_model() -> None:
    """The physical row's runs (their specs, as run_all runs them, and the scenarios the
    report simulates again) run by model="physical"; the greedy row's by the paper's."""
    physical, greedy = SEMANTICS[-1], SEMANTICS[1]
    for sem, model in ((physical, "physical"), (greedy, "paper")):
        spec = specs_for(sem, "paper", [0])[0]
        scenario = spec_scenario(spec)
        assert make_policy(spec.policy).simulate(scenario).model == model
        assert load_point(sem, "paper", 0).world.model == model


def _floors(scenario: Scenario) -> dict[str, int]:
    return {j.model.name: min(scenario.memory_floors[j.job_id]) for j in scenario.jobs}


def test_each_memory_variant_moves_the_floors_it_names() -> None:
    """[model, Variants of the floors]: on `paper`, FLM-101B fits in 40 A6000s and
    Llama-3.1-70B in 27 by default; a 2 GB reserve per GPU moves them to 80 and 40. State-only
    floors leave those two (their activations are small next to the state) and lower the small
    models' (Falcon-40B 20 -> 15, Qwen2.5-14B 7 -> 5); 18 bytes per parameter moves FLM-101B and
    Llama-3.1-70B as the reserve does and Qwen2.5-32B from 13 to 16."""
    by_name = {v.name: v for v in VARIANTS}
    assert set(by_name) == {"state-only floors", "+2 GB reserve", "18 B/param"}

    def floors(sem: Semantics) -> dict[str, int]:
        run = _floors(spec_scenario(specs_for(sem, "paper", [0])[0]))
        assert run == _floors(load_point(sem, "paper", 0))  # the report's re-simulations agree
        return run

    base = floors(CHART_SEMANTICS)
    assert (base["FLM-101B"], base["Llama-3.1-70B"]) == (40, 27)
    reserve = floors(by_name["+2 GB reserve"])
    assert (reserve["FLM-101B"], reserve["Llama-3.1-70B"]) == (80, 40)
    state = floors(by_name["state-only floors"])
    assert (state["FLM-101B"], state["Llama-3.1-70B"]) == (40, 27)
    assert (state["Falcon-40B"], state["Qwen2.5-14B"]) == (15, 5)
    b18 = by_name["18 B/param"]
    assert b18.constants == (("bytes_per_param", 18.0),)
    heavy = floors(b18)
    assert (heavy["FLM-101B"], heavy["Llama-3.1-70B"], heavy["Qwen2.5-32B"]) == (80, 40, 16)
    scenario = spec_scenario(specs_for(b18, "paper", [0])[0])
    assert {j.constants.bytes_per_param for j in scenario.jobs} == {18.0}
    # the default world keeps the file's 16
    assert {j.constants.bytes_per_param for j in load_point(CHART_SEMANTICS, "paper", 0).jobs} == {
        16.0
    }


def test_robust_section_follows_from_the_variant_rows(
    report: tuple[ReproduceOutcome, str],
) -> None:
    """A claim is fragile exactly when a variant's outcome differs from greedy's on a scenario,
    computed here from the outcome's rows."""
    outcome, md = report
    sec = section(md, "## Robust or fragile")
    counts = table(sec)  # greedy's and each variant's counts, by scenario
    assert [(r[0], r[1]) for r in counts] == [
        (s.name, sc) for s in (CHART_SEMANTICS, *VARIANTS) for sc in SCENARIOS
    ]
    rows = {r[0].strip("`"): r for r in table(sec[sec.index("| claim |") :])}
    assert list(rows) == [c.id for c in CLAIMS]
    base = {r.scenario: r for r in outcome.rows if r.semantics == CHART_SEMANTICS}
    for c in CLAIMS:
        flips = [
            v.name
            for v in VARIANTS
            if any(
                verdict(c, r).outcome != verdict(c, base[r.scenario]).outcome
                for r in outcome.variants
                if r.semantics == v
            )
        ]
        assert rows[c.id][-2] == ("**fragile**" if flips else "robust"), c.id
        assert [f.split(" (")[0] for f in rows[c.id][-1].split("; ") if f] == flips, c.id
    # the n/a cells are explained by the runs that cannot finish, named with their error
    prose = " ".join(sec.split())
    assert "LCF, LDF at GPUs x0.5 under +2 GB reserve on `paper` (4 runs)" in prose
    assert "can never start" in prose


def test_fig4_cell_equals_run_compare(report: tuple[ReproduceOutcome, str], tmp_path: Path) -> None:
    _, md = report
    outcome = run_compare(
        "paper",
        ["bace-pipe", "ldf"],
        SEEDS,
        tmp_path,
        knobs={"admission": "greedy", "ignore_memory": False},
        progress=False,
        tensorboard=False,
    )
    ldf = next(s for s in outcome.stats[None] if s.policy == "ldf")
    mean, ci = 100 * (ldf.jct_norm.mean - 1), 100 * ldf.jct_norm.ci95
    text = cell(md, "greedy", "paper", "4J-ldf")
    assert text.startswith(f"{mean:+.1f} ± {ci:.1f} "), text
    mark = text.split()[3]
    assert mark in (("✓", "✓✓") if mean > 0 else ("✗", "✗✗")), text
    assert text.endswith("(<1)") == (0 < mean < 1.0), text


def test_trend_cell_equals_policy_simulate(report: tuple[ReproduceOutcome, str]) -> None:
    """`7crldf-fall` on the printed row: CR-LDF's JCT gap at 8 jobs minus at 24, per seed."""
    _, md = report

    def gap(seed: int, n_jobs: int) -> float:
        sc = load_scenario(
            "paper", seed=seed, n_jobs=n_jobs, ignore_memory=True, admission="greedy"
        )
        base = make_policy("bace-pipe").simulate(sc).avg_jct
        return 100 * (make_policy("cr-ldf").simulate(sc).avg_jct / base - 1)

    est = estimate([gap(s, 8) - gap(s, 24) for s in SEEDS])
    text = cell(md, "ignore-memory + greedy", "paper", "7crldf-fall")
    assert text.startswith(f"{est.mean:+.1f} ± {est.ci95:.1f} "), text


def test_deterministic(report: tuple[ReproduceOutcome, str], tmp_path: Path) -> None:
    outcome, md = report
    again = run_reproduce(tmp_path / "again", SEEDS, workers=2, progress=False)
    assert again.markdown == md
    for png in outcome.images:
        assert (tmp_path / "again" / "img" / png.name).read_bytes() == png.read_bytes()


def test_pngs_exist_and_are_referenced(report: tuple[ReproduceOutcome, str]) -> None:
    outcome, md = report
    img = outcome.report.parent / "img"
    referenced = set(re.findall(r"\]\(img/([^)]+\.png)\)", md))
    assert {p.name for p in outcome.images} == referenced
    assert len(referenced) >= 12
    for name in referenced:
        data = (img / name).read_bytes()
        assert data[:8] == PNG_SIGNATURE, name
        assert b"IEND" in data[-16:], name
    for name in ("compare-paper.png", "ablation-paper.png", "sweep-bandwidth-paper-aws.png"):
        assert name in referenced


def test_fig1_section(report: tuple[ReproduceOutcome, str]) -> None:
    _, md = report
    sec = section(md, "## Fig. 1: the motivation example")
    rows = {r[0]: r for r in table(sec)}
    ignore = rows["ignore-memory + greedy"][1]
    assert "LCF: P on C:2, Q on B:3" in ignore
    assert "LDF: P on A:4, Q on B:3" in ignore
    for sem, floor in (("greedy", 27), ("finish-aware", 27), ("full", 27), ("physical", 40)):
        note = rows[sem][1]
        assert note.startswith("infeasible: loading raises `ScenarioError:"), note
        # the physical model keeps 2 GB per GPU for the runtime: Q needs 40 A6000s
        assert f"needs {floor} GPUs" in note and "11 GPUs" in note
    detail = sec.split("in detail:", 1)[1].split("For reference", 1)[0]
    assert "| LCF | C:2 | B:3 |" in detail
    assert "| LDF | A:4 | B:3 |" in detail
    assert "| BACE-Pipe | A:4 | B:3 > C:2 |" in detail
    # the row summaries say the same
    summary = " ".join(section(md, "## Row by row").split())
    assert summary.count("the Fig. 1 example is infeasible") == 8
    assert summary.count("the Fig. 1 example runs") == 2


def _usd(x: float) -> str:
    return f"${x:,.0f}" if abs(x) >= 100 else f"${x:,.2f}"


def test_egress_table_equals_the_hand_formula(report: tuple[ReproduceOutcome, str]) -> None:
    """Each policy's egress is the sum over its jobs and cross-region hops u->v of
    I * M * A * (e_uv + e_vu) / 1e9 dollars (activations forward, gradients back), with
    e = $0.02/GB; the electricity is the default world's without egress; ranks follow."""
    _, md = report
    sec = section(md, "## Egress: the cost ranking with cross-region traffic charged")
    head = header(sec)
    assert head == [
        "scenario",
        "policy",
        "electricity $",
        "rank",
        "egress $",
        "egress share",
        "electricity + egress $",
        "rank",
        "rank change",
    ]
    rows = table(sec)
    labels = {"BACE-Pipe": "bace-pipe", "LCF": "lcf", "LDF": "ldf", "CR-LCF": "cr-lcf"}
    labels |= {"CR-LDF": "cr-ldf", "w/o Pathfinder": "no-pathfinder"}
    labels |= {"w/o Priority": "no-priority", "w/o Cost-Min": "no-costmin"}
    assert len(rows) == 2 * len(labels)
    rate = 0.02  # $/GB each way, AWS inter-region
    for scenario in SCENARIOS:
        mine = [r for r in rows if r[0] == scenario]
        assert {r[1] for r in mine} == set(labels)
        elec, total = {}, {}
        for r in mine:
            policy = labels[r[1]]
            egress, plain = [], []
            for seed in SEEDS:
                world = {"admission": "greedy", "ignore_memory": False}
                sc = load_scenario(scenario, seed=seed, egress_usd_per_gb=rate, **world)
                res = make_policy(policy, seed=seed).simulate(sc)
                dollars = 0.0
                for job in res.records:
                    prof = sc.profiles[job.job_id]
                    path = job.placement.path
                    for u, v in itertools.pairwise(path):
                        assert u != v
                        e_uv = e_vu = rate  # forward on u->v, backward on v->u
                        bytes_each_way = prof.iterations * prof.n_micro * prof.activation_bytes
                        dollars += bytes_each_way * (e_uv + e_vu) / 1e9
                egress.append(dollars)
                plain.append(
                    make_policy(policy, seed=seed)
                    .simulate(load_scenario(scenario, seed=seed, **world))
                    .total_cost
                )
            e, c = sum(egress) / len(SEEDS), sum(plain) / len(SEEDS)
            assert r[4] == _usd(e), (scenario, policy)
            assert r[2] == _usd(c), (scenario, policy)
            elec[r[1]], total[r[1]] = c, c + e
        for r in mine:
            r0 = 1 + sum(x < elec[r[1]] for x in elec.values())
            r1 = 1 + sum(x < total[r[1]] for x in total.values())
            assert (int(r[3]), int(r[7])) == (r0, r1), r
            move = r1 - r0
            assert r[8] == ("=" if move == 0 else f"down {move}" if move > 0 else f"up {-move}")
        # single-region policies pay no egress
        assert next(r for r in mine if r[1] == "LCF")[4] == "$0.00"


def test_mechanisms_exactly_for_the_claims_no_row_reproduces(
    report: tuple[ReproduceOutcome, str],
) -> None:
    outcome, md = report
    sec = section(md, "## The semantics table")
    head = header(sec)
    rows = table(sec)
    unreproduced = [
        h.strip("`")
        for i, h in enumerate(head[2:-3], start=2)
        if not any("✓" in r[i] for r in rows)
    ]
    assert unreproduced == [c.id for c in outcome.failing]
    assert unreproduced, "these seeds leave some claim unreproduced"
    mech = section(md, "## Claims no row reproduces")
    headings = re.findall(r"^### .*$", mech, re.M)
    assert re.findall(r"`([^`]+)`", " ".join(headings)) == unreproduced
    for heading in headings:
        group = section(mech, heading)
        prose = " ".join(group.split())  # the report wraps its prose
        assert "No row has the paper's sign" in prose
        assert re.search(r"An example from seed \d+ of the printed row", prose)
        assert re.search(r"\*\*J\d+\*\*", group)  # the example job, also bold in its table
        assert "| job | model | dataset |" in group


def test_static_prose_numbers_hold() -> None:
    """The Fig. 1 walk-through and the introduction's example are static text; check them."""
    fig1 = load_scenario("fig1")
    prof = {j.name: fig1.profiles[j.job_id] for j in fig1.jobs}
    p, q = prof["P"], prof["Q"]
    assert round(hours(p.single_gpu_exec), 1) == 26.9
    assert round(hours(q.single_gpu_exec), 1) == 134.0
    assert (p.k_star, q.k_star) == (48, 80)
    assert round(p.activation_bytes / 125e6, 3) == 0.168 > round(p.t_comp(6), 3) == 0.154
    assert round(q.activation_bytes / 50e6, 3) == 0.671 <= round(q.t_comp(5), 3) == 0.926
    assert round(q.activation_bytes / 37.5e6, 3) == 0.895 > round(q.t_comp(7), 3) == 0.661
    paper = load_scenario("paper", ignore_memory=True)
    llama = next(paper.profiles[j.job_id] for j in paper.jobs if j.model.name == "Llama-3.1-70B")
    tc, hop = llama.t_comp(80), llama.activation_bytes / 25e6
    assert round(tc * 1e3, 1) == 57.9
    assert round(hop, 2) == 1.34
    assert round(100 * (1 - tc / hop), 1) == 95.7
    assert round(hop / tc) == 23
    intra = 70e9 / 8
    slow = iteration_time(tc, [hop] + [llama.activation_bytes / intra] * 78, 80, llama.n_micro)
    fast = iteration_time(tc, [llama.activation_bytes / intra] * 79, 80, llama.n_micro)
    assert llama.n_micro == 128
    assert round(slow / fast, 1) == 14.4


def test_cli_writes_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rep"
    assert main(["reproduce", "--out", str(out), "--seeds", "1", "--workers", "1"]) == 0
    stdout = capsys.readouterr().out
    assert (out / "reproduction.md").is_file()
    assert "--seeds 1`" in (out / "reproduction.md").read_text(encoding="utf-8")
    # the five semantics and the three memory variants, on both scenarios
    assert len([line for line in stdout.splitlines() if "in direction" in line]) == 16
    assert f"wrote {out / 'reproduction.md'}" in stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--seeds", "x"], "--seeds"),
        (["--out", ""], "--out"),
        (["--seeds", "0,0"], "twice"),
        (["--workers", "0"], "--workers"),
    ],
)
def test_bad_input_one_line_exit_2(
    args: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["reproduce", "--out", str(tmp_path / "x"), *args]
    try:
        rc = main(argv)
    except SystemExit as exit_:  # argparse usage errors
        rc = exit_.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert rc == 2
    assert len(err.strip().splitlines()) == 1, err
    assert needle in err
    assert not (tmp_path / "x" / "reproduction.md").exists()


def test_bad_seeds_as_a_user_runs_it(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bacepipe_env.cli", "reproduce", "--seeds", "x", "--out", "o"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_docs_report_is_current(tmp_path: Path) -> None:
    """docs/reproduction.md is exactly what `bacepipe reproduce` writes for its seeds."""
    committed = DOCS.read_text(encoding="utf-8")
    match = re.search(r"`bacepipe reproduce --out docs --seeds ([0-9,-]+)`", committed)
    assert match, "the report names the command that produced it"
    assert main(["reproduce", "--out", str(tmp_path), "--seeds", match.group(1)]) == 0
    regenerated = (tmp_path / "reproduction.md").read_text(encoding="utf-8")
    assert regenerated == committed, "run `bacepipe reproduce --out docs` and commit the result"


def test_a_run_that_cannot_finish_is_untestable_not_an_error() -> None:
    """With a 2 GB reserve FLM-101B needs 80 A6000s; at GPUs x0.5 the largest region holds 64,
    so LCF (one region per job) can never start it. run_all(keep_going=True) records the run as
    failed (NaN metrics, the simulator's message) instead of raising."""
    spec = RunSpec(
        "lcf", "paper", 0, (("gpu_reserve_gb", 2.0), ("gpu_scale", 0.5), ("ignore_memory", False))
    )
    with pytest.raises(SimulationError, match="can never start"):
        run_all([spec])
    (failed,) = run_all([spec], keep_going=True)
    assert "can never start" in failed.error and math.isnan(failed.avg_jct_h)
