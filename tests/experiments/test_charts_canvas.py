"""Every chart the project draws keeps all its text on the canvas (issue 44, item 6).

Each chart is drawn as its command draws it, with realistic data: the policy names the
commands show (long ones too: ``rollout:...``, ``learned:...``, ``+elastic``), the titles
they build, and as many policies as the defaults give. While the PNG is written, every text
artist that draws records its window extent (the renderer's pixels); a test fails when any
box reaches past the figure's edge, naming the text.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from matplotlib.image import imread
from matplotlib.text import Text

from bacepipe_env.envs.agents import EpisodeResult
from bacepipe_env.envs.render import render_rgb, run_snapshot, save_timeline
from bacepipe_env.experiments import faults, online, plots
from bacepipe_env.experiments.claims import ABLATIONS, BASELINES, DEFAULT, REFERENCE
from bacepipe_env.experiments.evaluate import EvaluationReport, PolicyEvaluation, outcome
from bacepipe_env.experiments.experiments import SWEEPS
from bacepipe_env.experiments.headroom import HeadroomReport
from bacepipe_env.experiments.plots import (
    bar_chart,
    evaluation_chart,
    headroom_chart,
    sweep_chart,
)
from bacepipe_env.experiments.reproduce_charts import chart_names, draw_charts
from bacepipe_env.experiments.reproduce_runs import SCENARIOS, SEMANTICS, RowRuns
from bacepipe_env.experiments.runner import RunSpec, RunSummary
from bacepipe_env.experiments.stats import Estimate
from bacepipe_env.experiments.summary import PolicyStats
from bacepipe_env.outputs import save_figure
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import load_scenario

#: How far (pixels) a text's box may reach past the edge: float rounding, nothing visible.
TOLERANCE_PX = 0.5

# A layout that gives up (a title or labels too big for the figure) is a failure too.
pytestmark = [
    pytest.mark.filterwarnings("error:Tight layout not applied:UserWarning"),
    pytest.mark.filterwarnings("error:This figure includes Axes that are not compatible"),
]

#: Long names, as ``bacepipe evaluate`` and ``compare`` show them.
LONG_POLICIES = (
    "bace-pipe",
    "sjf+finish-aware+srtf",
    "rollout:sjf+finish-aware+elastic,k=4,lookahead=submitted,copies=default",
    "learned:maskable_ppo-GeoPipe-Online-Preempt-v2-seed3-checkpoint-2000000",
    "cr-ldf",
)
LONG_ENV = "bacepipe_env/GeoPipe-Online-Preempt-Replicas-v2"


@dataclass(frozen=True)
class Drawn:
    """One text as drawn: its string, its box (pixels) and its canvas's size (pixels)."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    width: float
    height: float

    def outside(self) -> bool:
        """Whether any side of the box is past the canvas's edge (beyond the tolerance)."""
        t = TOLERANCE_PX
        return self.x0 < -t or self.y0 < -t or self.x1 > self.width + t or self.y1 > self.height + t


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Drawn]]:
    """Every non-empty text that draws from now on, with the box the renderer gives it
    (``savefig`` draws a figure twice, a layout pass and then the pixels: both are kept)."""
    records: list[Drawn] = []
    original = Text.draw

    def draw(self: Text, renderer: Any) -> None:
        original(self, renderer)
        if self.get_visible() and self.get_text().strip():
            box = self.get_window_extent(renderer)
            w, h = renderer.get_canvas_width_height()
            records.append(Drawn(self.get_text(), box.x0, box.y0, box.x1, box.y1, w, h))

    monkeypatch.setattr(Text, "draw", draw)
    yield records


def _check(records: list[Drawn], *must: str) -> None:
    """No text outside its canvas, and each of ``must`` drawn (so the hook saw the chart)."""
    texts = ["".join(r.text.split()) for r in records]  # wrapped or not
    for want in must:
        assert any("".join(want.split()) in t for t in texts), (want, texts)
    bad = [f"{r.text!r} at ({r.x0:.0f}, {r.y0:.0f}, {r.x1:.0f}, {r.y1:.0f}) on "
           f"{r.width:.0f} x {r.height:.0f}" for r in records if r.outside()]  # fmt: skip
    assert not bad, "text outside the canvas:\n" + "\n".join(dict.fromkeys(bad))


def _png(path: Path) -> None:
    assert path.is_file() and imread(path).ndim == 3


# --------------------------------------------------------------------------- evaluate


def _episodes(agent: str, seeds: range, jcts: list[float]) -> tuple[EpisodeResult, ...]:
    return tuple(
        EpisodeResult(agent, s, -j, j, 900.0 * j, 400, 0, 30.0 * j) for s, j in zip(seeds, jcts)
    )


def evaluation_report(names: tuple[str, ...] = LONG_POLICIES) -> EvaluationReport:
    """20 episodes: the reference's JCTs spread like the issue's (55.7 ± 13.4 h), and every
    other policy ~ ``1 + 0.11 k / 2`` times them per episode, losing all but one."""
    seeds = range(1_000_000, 1_000_020)
    ref = [40.0 + 3.3 * (i % 10) + 0.2 * i for i in range(20)]
    policies = []
    for k, name in enumerate(names):
        factor = 1.0 + 0.055 * k
        jcts = [b * (factor + (0.03 if i % 3 else -0.02)) if k else b for i, b in enumerate(ref)]
        if k:
            jcts[0] = ref[0] * 0.95  # one win
        ratios = tuple(j / b for j, b in zip(jcts, ref))
        outcomes = tuple(outcome(j, b) for j, b in zip(jcts, ref))
        episodes = _episodes(name, seeds, jcts)
        policies.append(PolicyEvaluation(name, name, None, episodes, ratios, outcomes))
    return EvaluationReport(LONG_ENV, seeds[0], tuple(seeds), names[0], tuple(policies))


def test_the_evaluate_chart_stays_on_its_canvas(tmp_path: Path, drawn: list[Drawn]) -> None:
    report = evaluation_report()
    _png(evaluation_chart(report, tmp_path / "evaluate.png"))
    _check(drawn, LONG_ENV, LONG_POLICIES[2], "1 win / 19 losses of 20")


def _played(name: str, jct: list[float], cost: list[float]) -> PolicyEvaluation:
    """``name``'s episodes (seeds 0, 1, ...) with these JCTs (h) and costs ($)."""
    episodes = tuple(
        EpisodeResult(name, s, -j, j, c, 10, 0, 1.0) for s, (j, c) in enumerate(zip(jct, cost))
    )
    ref = [10.0, 20.0, 30.0]  # the reference's JCTs, as below
    ratios = tuple(j / b for j, b in zip(jct, ref))
    return PolicyEvaluation(
        name, name, None, episodes, ratios, tuple(outcome(j, b) for j, b in zip(jct, ref))
    )


def test_the_evaluate_chart_shows_the_paired_ratios_and_the_record(
    tmp_path: Path, drawn: list[Drawn], monkeypatch: pytest.MonkeyPatch
) -> None:
    figures: list[Any] = []
    save = save_figure

    def keep(fig: Any, path: Path) -> Path:
        figures.append(fig)
        return save(fig, path)

    monkeypatch.setattr("bacepipe_env.experiments.plots.save_figure", keep)
    ref = _played("bace-pipe", [10.0, 20.0, 30.0], [100.0, 200.0, 300.0])
    # JCT ratios 11/10, 24/20, 30/30 = 1.1, 1.2, 1.0: mean 1.1, sd 0.1, half-width
    # t(2) 4.3027 x 0.1 / sqrt(3) = 0.2484; two losses and a tie
    # cost ratios 90/100, 180/200, 300/300 = 0.9, 0.9, 1.0: mean 0.9333
    other = _played("sjf", [11.0, 24.0, 30.0], [90.0, 180.0, 300.0])
    report = EvaluationReport(
        "bacepipe_env/GeoPipe-Fig1-v2", 0, (0, 1, 2), "bace-pipe", (ref, other)
    )
    evaluation_chart(report, tmp_path / "evaluate.png")
    _check(drawn, "bace-pipe (reference)", "sjf JCT ×1.100 ± 0.248, 0 wins / 1 tie / 2 losses of 3")
    jct_ratio, cost_ratio, unpaired = figures[0].axes
    # the panels' dots, top to bottom: the reference's at 1, then sjf's
    xs = [[float(c.lines[0].get_xdata()[0]) for c in ax.containers] for ax in figures[0].axes]
    assert xs[0] == pytest.approx([1.0, 1.1])
    assert xs[1] == pytest.approx([1.0, 2.8 / 3])
    assert xs[2] == pytest.approx([20.0, 65.0 / 3])  # the unpaired means: 60 / 3, 65 / 3
    # sjf's JCT interval: 1.1 ± 0.2484
    (bar,) = jct_ratio.containers[1].lines[2]
    (segment,) = bar.get_segments()
    assert [x for x, _ in segment] == pytest.approx([1.1 - 0.24841, 1.1 + 0.24841], abs=1e-4)
    assert "paired" in jct_ratio.get_xlabel() and "unpaired" in unpaired.get_xlabel()
    assert "total cost" in cost_ratio.get_xlabel()


def test_wrap_breaks_long_names_at_their_separators() -> None:
    name = "rollout:sjf+finish-aware,k=4,lookahead=submitted"
    assert plots._wrap(name, 20) == "rollout:sjf+finish-\naware,k=4,\nlookahead=submitted"
    assert plots._wrap("one two three", 7) == "one two\nthree"
    assert plots._wrap("abcdefghij", 4) == "abcd\nefgh\nij"  # no place to break: cut
    assert plots._wrap("short\nlines kept", 40) == "short\nlines kept"


# --------------------------------------------------------------------------- headroom


def headroom_report() -> HeadroomReport:
    """A headroom row of an id with data-parallel copies: 16 heuristics, long names."""
    names = [
        "bace-pipe",
        "lcf",
        "ldf",
        "cr-lcf",
        "cr-ldf",
        "no-priority",
        "no-pathfinder",
        "no-costmin",
        "sjf",
        "sjf+finish-aware",
    ]
    names += [f"{n}+elastic" for n in names[:6]]
    heuristics = {n: 20.0 + 0.7 * i for i, n in enumerate(names)}
    best = names[0]
    return HeadroomReport(
        env_id=LONG_ENV,
        lookahead="clairvoyant",
        n_jobs=200,
        planner=f"rollout:{best},k=4,lookahead=clairvoyant,copies=default",
        best=best,
        seeds=tuple(range(1_000_000, 1_000_020)),
        ratio=(0.9412, 0.9211, 0.9633),
        cost_ratio=(1.0123, 0.9977, 1.0301),
        ms_per_decision=12.5,
        episode_s=(3.1, 4.2),
        heuristics=heuristics,
        planner_jct_h=tuple(18.5 + 0.1 * i for i in range(20)),
        best_jct_h=tuple(19.5 + 0.1 * i for i in range(20)),
    )


def test_the_headroom_chart_stays_on_its_canvas(tmp_path: Path, drawn: list[Drawn]) -> None:
    _png(headroom_chart(headroom_report(), tmp_path / "headroom.png"))
    _check(drawn, LONG_ENV, "no-priority+elastic")


# ---------------------------------------------------------- compare, sweep, reproduce


def _est(mean: float, n: int = 10) -> Estimate:
    return Estimate(mean, 0.08 * mean, n)


def _stats(policy: str, k: int) -> PolicyStats:
    norm = 1.0 + 0.07 * k
    return PolicyStats(
        policy, _est(30 * norm), _est(9000 * norm), _est(norm), _est(norm), _est(500.0), _est(1.0)
    )


def test_the_compare_and_sweep_charts_stay_on_their_canvas(
    tmp_path: Path, drawn: list[Drawn]
) -> None:
    stats = [_stats(p, k) for k, p in enumerate(LONG_POLICIES)]
    title = f"compare: paper-aws, 10 seeds, egress charged, {LONG_ENV} world knobs"
    _png(bar_chart(stats, tmp_path / "compare.png", title, LONG_POLICIES[0]))
    _check(drawn, "compare: paper-aws", LONG_POLICIES[3])
    # the title, 105 characters, in two lines: the figure is 1.5 x 5 + 2 = 9.5 in wide (the
    # long names written level), room for 0.9 x 9.5 x 72 / (10 pt x 0.64) = 96 of them
    (shown,) = {r.text for r in drawn if r.text.startswith("compare: ")}
    assert len(title) == 105 and shown.count("\n") == 1
    drawn.clear()
    xs = [0.3, 0.9, 1.5]
    series = {p: [_stats(p, k + i) for i in range(3)] for k, p in enumerate(LONG_POLICIES)}
    title = "sensitivity to inter-region bandwidth scale: paper-aws, 10 seeds"
    _png(
        sweep_chart(
            xs, series, tmp_path / "sweep.png", "inter-region bandwidth scale", title, "bace-pipe"
        )
    )
    _check(drawn, "sensitivity to", LONG_POLICIES[3])


def _summary(policy: str, seed: int, k: int) -> RunSummary:
    spec = RunSpec(policy, "paper", seed)
    f = 1.0 + 0.05 * k + 0.01 * seed
    return RunSummary(spec, 30.0 * f, 9000.0 * f, 80.0 * f, 0.7, carbon_kg=500.0 * f)


def test_the_reproduce_charts_stay_on_their_canvas(tmp_path: Path, drawn: list[Drawn]) -> None:
    seeds = tuple(range(10))
    policies = (REFERENCE, *BASELINES, *ABLATIONS)
    points = [DEFAULT, *((kind, float(v)) for kind, (_, vals, _) in SWEEPS.items() for v in vals)]
    rows = [
        RowRuns(
            sem,
            sc,
            seeds,
            {
                pt: {p: {s: _summary(p, s, k) for s in seeds} for k, p in enumerate(policies)}
                for pt in points
            },
        )
        for sem in SEMANTICS
        for sc in SCENARIOS
    ]
    written, warnings = draw_charts(rows, tmp_path)
    assert warnings == [] and [p.name for p in written] == [c[0] for c in chart_names()]
    _check(drawn, "Fig. 4 style", "each policy against BACE-Pipe under every semantics")


# ----------------------------------------------------------------------- faults, online


def _grid_runs(
    xs: tuple[float, ...], policies: tuple[str, ...], seeds: tuple[int, ...]
) -> dict[tuple[float, str, int], RunSummary]:
    return {
        (x, p, s): RunSummary(
            RunSpec(p, "online", s),
            10.0 * (1 + 0.04 * k) * (1 + 3 * x),
            5000.0 * (1 + 0.03 * k) * (1 + x),
            60.0,
            0.8,
            carbon_kg=300.0,
            jct_p95_h=25.0,
        )
        for x in xs
        for k, p in enumerate(policies)
        for s in seeds
    }


def test_the_faults_chart_stays_on_its_canvas(tmp_path: Path, drawn: list[Drawn]) -> None:
    rates = (0.0, 1e-5, 2e-5, 1e-4, 2e-4, 1e-3)
    policies = faults.DEFAULT_POLICIES
    seeds = tuple(range(10))
    data = faults.FaultRuns("paper-aws", seeds, rates, policies, _grid_runs(rates, policies, seeds))
    _png(faults._chart(data, tmp_path / faults.CHART))
    _check(drawn, "GPU failures", "sjf+finish-aware+srtf")


def test_the_online_charts_stay_on_their_canvas(tmp_path: Path, drawn: list[Drawn]) -> None:
    loads = online.DEFAULT_LOADS
    policies = tuple(online.default_policies())
    seeds = tuple(range(10))
    data = online.OnlineRuns(
        seeds,
        loads,
        200,
        policies,
        policies[0],
        _grid_runs(loads, policies, seeds),
        tuple(10.0 * x for x in loads),
        100.0,
        96,
    )
    for name in online.CHARTS:
        _png(online._chart(data, tmp_path / name, "jct" if "jct" in name else "cost"))
    _check(drawn, "jobs per episode", "sjf+finish-aware+las")


# --------------------------------------------------------------------------- timeline


@pytest.mark.parametrize("scenario", ["fig1", "online"])
def test_the_timeline_stays_on_its_canvas(
    scenario: str, tmp_path: Path, drawn: list[Drawn]
) -> None:
    """``bacepipe simulate --plot`` (its title) and the env's ``rgb_array`` frame (its own):
    fig1's two jobs get a legend, online's 40 do not."""
    sc = (
        load_scenario(scenario, seed=0, n_jobs=40)
        if scenario == "online"
        else load_scenario(scenario)
    )
    result = make_policy("sjf+finish-aware+srtf", seed=0).simulate(sc)
    snap = run_snapshot(result, sc.cluster)
    title = (  # as bacepipe simulate builds it
        f"{result.scenario}, {result.policy}: {len(result.records)} jobs, makespan "
        f"{result.makespan / 3600:.2f} h, GPU utilisation {100 * result.gpu_utilization:.1f} %"
    )
    _png(save_timeline(snap, tmp_path / "timeline.png", title))
    _check(drawn, "GPU utilisation")
    drawn.clear()
    assert render_rgb(snap).shape == (400, 800, 3)
    _check(drawn, "done")
    assert math.isfinite(result.makespan)
