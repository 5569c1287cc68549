"""The METRICS table is every output's one list of run metrics: each output shows exactly
the table's rows (no hand-written extras), and a row added to the table shows up in the
summary, the result JSON and the env info with nothing else edited."""

from __future__ import annotations

import dataclasses
import math

import pytest

from bacepipe_env.core.metrics import METRICS, OUTPUTS, SHOW, Metric, ordered
from bacepipe_env.core.records import RunResult
from bacepipe_env.experiments.experiments import _METRICS
from bacepipe_env.experiments.runner import RunSpec, RunSummary, run_one
from bacepipe_env.experiments.stats import Estimate
from bacepipe_env.experiments.summary import PolicyStats, format_run, format_table, summarise
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios.loader import load_scenario

#: RunResult.to_dict's keys that are not metrics: the run, its settings and its jobs.
_NOT_METRICS = {
    "scenario",
    "policy",
    "preemption",
    "admission",
    "ignore_memory",
    "prices",
    "start_hour",
    "egress",
    "model",
    "jobs",
}


@pytest.fixture(scope="module")
def fig1() -> tuple[RunResult, tuple[str, ...]]:
    """bace-pipe on fig1: two jobs, no faults, flat prices, no egress."""
    scenario = load_scenario("fig1")
    return make_policy("bace-pipe").simulate(scenario), scenario.cluster.names


def test_every_row_is_well_formed() -> None:
    for m in METRICS.values():
        assert m.show in SHOW, m.name
        assert not m.label or m.fmt, f"{m.name}: a summary line needs a format"
        assert len(m.json) <= (2 if m.unit == "s" else 1), m.name
        assert len(m.info) <= (2 if m.unit == "s" else 1), m.name
        assert bool(m.norm) == bool(m.norm_key) == bool(m.norm_label), m.name
        assert not m.norm or m.stat, f"{m.name}: a ratio needs its metric's statistics"
        assert not m.episode or (m.key and m.info), m.name
    for output in OUTPUTS:  # every output's order is a permutation of its rows
        rows = ordered(output)
        assert len({m.name for m in rows}) == len(rows)


def test_the_json_lists_exactly_the_tables_keys(fig1: tuple[RunResult, tuple[str, ...]]) -> None:
    result, names = fig1
    out = result.to_dict(names)
    metric_keys = [k for k in out if k not in _NOT_METRICS]
    # not elastic, no deadlines: the rows shown under elasticity (the resizes) and under
    # deadlines (the misses, the tardiness) are left out
    expected = [
        k for m in ordered("json") if m.show not in ("elastic", "deadlines") for k in m.json
    ]
    assert metric_keys == expected
    # a time has its value in seconds, then in hours: 62192.6 s = 17.2757 h
    assert out["avg_jct_s"] == result.avg_jct
    assert out["avg_jct_h"] == pytest.approx(62192.60777713759 / 3600)
    assert out["makespan_h"] == pytest.approx(100060.21979640792 / 3600)  # the second job's JCT


def test_the_env_info_lists_exactly_the_tables_keys(
    fig1: tuple[RunResult, tuple[str, ...]],
) -> None:
    from bacepipe_env.envs.reward import episode_info

    result, _ = fig1
    info = episode_info(result)
    # no deadlines: the rows shown under deadlines are left out
    assert list(info) == [k for m in ordered("info") if m.show != "deadlines" for k in m.info]
    assert info["episode_jobs_completed"] == 2  # fig1's two jobs
    assert info["episode_avg_jct_h"] == pytest.approx(62192.60777713759 / 3600)


def test_the_summary_has_one_line_per_shown_row(fig1: tuple[RunResult, tuple[str, ...]]) -> None:
    result, names = fig1
    totals = format_run(result, names).split("\n\n", 1)[1].splitlines()[1:]
    # no faults, preemption, elasticity or egress: the rows shown always, in the table's order
    shown = ordered("summary", {"always"})
    assert [line[2:18].rstrip() for line in totals] == [m.label for m in shown]
    # fig1's average JCT: (24325.0 + 100060.2) / 2 s = 62192.6 s = 17.28 h
    assert totals[0] == "  average JCT             17.28 h"


def test_the_run_rows_and_statistics_are_the_tables() -> None:
    run = run_one(RunSpec("bace-pipe", "fig1", 0))
    row = run.row()
    run_keys = [k for k in row if k not in ("policy", "scenario", "seed")]
    # fig1 configures no fault and no preemption rule: only the rows shown always or egress
    assert run_keys == [m.key for m in ordered("row", {"always", "egress"})]
    assert row["n_jobs"] == 2 and row["avg_jct_h"] == pytest.approx(62192.60777713759 / 3600)
    stats = summarise([run], "bace-pipe")
    stat_keys = [k.removesuffix("_mean") for k in stats[0].row() if k.endswith("_mean")]
    names = {k for m in ordered("stats", {"always"}) for k in (m.key, m.norm_key) if k}
    assert set(stat_keys) == names
    assert stats[0].jct_norm.mean == 1.0  # the reference against itself
    head = format_table(stats, "bace-pipe").splitlines()[0].split("  ")
    columns = [m.column for m in ordered("column", {"always"})]
    norms = [f"{m.norm_label} / bace-pipe" for m in ordered("column") if m.norm]
    assert [h.strip() for h in head if h.strip()] == ["policy", *columns, *norms]


def test_the_hparams_metrics_are_the_tables() -> None:
    normed = [m for m in ordered("tb") if m.norm]
    assert list(_METRICS) == [
        *(m.key for m in normed),
        *(m.norm_key for m in normed),
        *(f"{m.key}_ci95" for m in normed),
        *(m.key for m in ordered("tb") if not m.norm),
    ]
    stats = PolicyStats("p", *[_est(float(i)) for i in range(6)])
    # egress, restarts and waste are None when not shown: not logged
    assert [k for k, read in _METRICS.items() if read(stats) is not None] == list(_METRICS)[:9]


def _est(x: float) -> Estimate:
    return Estimate(x, math.nan, 1)


def test_the_dataclasses_fields_follow_the_table() -> None:
    from bacepipe_env.envs.agents import EpisodeResult

    summary = [f.name for f in dataclasses.fields(RunSummary)]
    own = ("spec", "faults", "preemption", "deadlines", "error")
    assert [k for k in summary if k not in own] == [m.key for m in ordered("row")]
    stats = {f.name for f in dataclasses.fields(PolicyStats)} - {"policy"}
    assert stats == {k for m in ordered("stats") for k in (m.stat, m.norm) if k}
    episode = {f.name for f in dataclasses.fields(EpisodeResult)}
    assert {m.key for m in ordered("episode")} <= episode
    for m in METRICS.values():  # every row reads a RunResult figure
        assert (
            m.get is not None
            or hasattr(RunResult, m.name)
            or m.name in {f.name for f in dataclasses.fields(RunResult)}
        ), m.name


def test_a_new_row_reaches_the_summary_json_and_info(
    monkeypatch: pytest.MonkeyPatch, fig1: tuple[RunResult, tuple[str, ...]]
) -> None:
    from bacepipe_env.envs.reward import episode_info

    result, names = fig1
    # a made-up metric: the GPUs the jobs' last attempts held, summed
    row = Metric(
        "gpus_held",
        "count",
        "GPUs held",
        "12d",
        json=("gpus_held",),
        info=("episode_gpus_held",),
        get=lambda r: sum(rec.n_gpus for rec in r.records),
    )
    monkeypatch.setitem(METRICS, "gpus_held", row)
    gpus = sum(rec.n_gpus for rec in result.records)
    assert f"  GPUs held        {gpus:12d}" in format_run(result, names).splitlines()
    out = result.to_dict(names)
    assert out["gpus_held"] == gpus
    assert list(out).index("gpus_held") < list(out).index("admission")  # among the figures
    assert episode_info(result)["episode_gpus_held"] == gpus
    # shown only under faults: absent from a run without them, in the JSON all the same
    monkeypatch.setitem(METRICS, "gpus_held", dataclasses.replace(row, show="faults"))
    assert "GPUs held" not in format_run(result, names)
    assert "GPUs held" in format_run(result, names, faults=True)
    assert result.to_dict(names)["gpus_held"] == gpus
