"""``bacepipe online``: every policy on the ``online`` world (Philly-trace arrivals, hourly 2023
prices and carbon) at several offered loads, as one generated markdown block and two charts.

Each seed fixes an episode's arrivals, job mix and start hour, and every policy plays the same
episodes (paired comparisons); a load only changes the arrival rate (``load_scenario(...,
load=x)``). The block lies between ``<!-- online:begin -->`` and ``<!-- online:end -->``:
when ``out/online.md`` already holds those markers (``docs/online.md`` wraps the block in
prose) only the block is replaced, otherwise the file is written afresh. The output is a pure
function of the arguments, so the same command writes the same bytes.
"""

from __future__ import annotations

import math
import operator
import shlex
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.preemption import check_preemption
from ..core.validate import require_float, require_int
from ..errors import BacepipeError, ValidationError
from ..outputs import save_figure, write_text
from ..policies.registry import baseline_names
from ..scenarios.loader import compile_scenario, load_scenario_spec
from .experiments import check_policies, check_seeds, reference_policy
from .plots import _pyplot, series_styles
from .report_text import markdown_table, plus_minus, ratio_text, seeds_text, wrap_prose
from .runner import RayBackend, RunGrid, RunSummary, check_workers, expand, run_all
from .stats import Estimate, estimate

__all__ = [
    "BEGIN",
    "DEFAULT_LOADS",
    "END",
    "SCENARIO",
    "OnlineRuns",
    "default_policies",
    "online_command",
    "render_block",
    "run_online",
    "splice",
]

SCENARIO = "online"
#: The offered loads ``bacepipe online`` sweeps by default; 0.8 is the scenario file's own.
DEFAULT_LOADS = (0.4, 0.6, 0.8, 1.0, 1.2)
#: The load the ranking table is taken at (the nearest swept load when it is not swept).
RANKING_LOAD = 0.8
DEFAULT_N_JOBS = 500
BEGIN = "<!-- online:begin -->"
END = "<!-- online:end -->"
CHARTS = ("online-jct-vs-load.png", "online-cost-vs-load.png")


def default_policies() -> list[str]:
    """BACE-Pipe, the paper's four baselines, the three ablations, the SJF and random
    orderings (``fcfs`` is left out: it is ``no-priority`` under another name), the best
    waiting heuristic ``sjf+finish-aware`` and three preemptive heuristics (semantics §3c)."""
    return [
        *baseline_names(),
        "no-priority",
        "no-pathfinder",
        "no-costmin",
        "sjf",
        "random",
        "sjf+finish-aware",
        "sjf+finish-aware+srtf",
        "bace-pipe+srtf",
        "sjf+finish-aware+las",
    ]


@dataclass(frozen=True)
class OnlineRuns(RunGrid):
    """Every run of one ``run_online`` call, by load, policy and seed."""

    seeds: tuple[int, ...]
    loads: tuple[float, ...]
    n_jobs: int
    policies: tuple[str, ...]
    reference: str
    runs: dict[tuple[float, str, int], RunSummary]
    rates: tuple[float, ...]  # arrival rate (jobs/h) at each load
    mean_gpu_hours: float  # a job's expected ideal GPU-hours (K* GPUs, ideal execution)
    total_gpus: int
    preemption: str = "none"  # the rule of every policy without its own (semantics §3c)

    def ratio(self, load: float, policy: str, metric: Callable[[RunSummary], float]) -> Estimate:
        """``metric`` divided by the reference's on the same seed: mean ± 95% CI."""
        ref = self.values(load, self.reference, metric)
        own = self.values(load, policy, metric)
        return estimate([a / b for a, b in zip(own, ref)])

    def ranks(self, load: float, metric: Callable[[RunSummary], float]) -> dict[str, int]:
        """Each policy's rank by the mean of ``metric`` (1 = lowest; equal means share a rank)."""
        means = {p: self.mean(load, p, metric) for p in self.policies}
        return {p: 1 + sum(m < means[p] for m in means.values()) for p in self.policies}

    @property
    def ranking_load(self) -> float:
        """The load of the ranking table: 0.8, or the swept load nearest to it."""
        return min(self.loads, key=lambda x: (abs(x - RANKING_LOAD), x))


# The per-run figures the tables show, read off each RunSummary.
_jct = operator.attrgetter("avg_jct_h")
_cost = operator.attrgetter("total_cost_usd")
_carbon = operator.attrgetter("carbon_kg")
_p95 = operator.attrgetter("jct_p95_h")
_p99 = operator.attrgetter("jct_p99_h")
_slowdown = operator.attrgetter("mean_slowdown")
_util = operator.attrgetter("gpu_utilization")
_wasted = operator.attrgetter("wasted_gpu_hours")


def _preemptions(r: RunSummary) -> float:
    return float(r.n_preemptions)


def _throughput(r: RunSummary) -> float:
    """Jobs completed per hour of makespan (RunResult.throughput)."""
    return r.n_jobs / r.makespan_h if r.makespan_h > 0 else 0.0


# --- validation -----------------------------------------------------------------------------


def _check(
    out: Path,
    seeds: Sequence[int],
    loads: Sequence[float],
    n_jobs: int,
    policies: Sequence[str],
    workers: int | RayBackend,
) -> list[float]:
    """Every argument checked before any run; a one-line ValidationError otherwise."""
    if not str(out):
        raise ValidationError("out", str(out), "give an output directory")
    check_seeds(seeds)
    if not loads:
        raise ValidationError("loads", list(loads), "give at least one offered load")
    vals = [require_float("loads", x, positive=True, exc=ValidationError) for x in loads]
    if len(set(vals)) != len(vals):
        raise ValidationError("loads", vals, "a load is listed twice")
    require_int("n_jobs", n_jobs, minimum=1, exc=ValidationError)
    check_workers(workers)
    check_policies(policies)
    return vals


# --- the entry point ------------------------------------------------------------------------


def run_online(
    out: Path,
    *,
    seeds: Sequence[int],
    loads: Sequence[float],
    n_jobs: int = DEFAULT_N_JOBS,
    policies: Sequence[str] | None = None,
    workers: int | RayBackend = 1,
    progress: bool | None = None,
    preemption: str = "none",
) -> Path:
    """Run every policy on the ``online`` scenario at every offered load for every seed (the
    same seed gives every policy the same arrivals, job mix and start hour), then write
    ``out/online.md`` and the charts ``out/img/online-{jct,cost}-vs-load.png``; returns the
    markdown's path. ``preemption`` is the rule of every policy without its own (semantics §3c). A
    missing matplotlib skips the charts with a warning; the markdown does not change."""
    pols = list(default_policies() if policies is None else policies)
    vals = _check(out, seeds, loads, n_jobs, pols, workers)
    preemption = check_preemption(preemption)
    img = out / "img"
    try:
        img.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BacepipeError(f"cannot create output directory {img}: {err.strerror}") from None
    data = _run(list(seeds), vals, n_jobs, pols, workers, progress, preemption)
    try:
        for name in CHARTS:
            _chart(data, img / name, "jct" if "jct" in name else "cost")
    except BacepipeError as err:  # matplotlib is missing
        warnings.warn(f"online charts skipped: {err}", stacklevel=2)
    block = render_block(data, str(out))  # names the --out given
    path = out / "online.md"
    try:
        old = path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else str(err)
        raise BacepipeError(f"cannot read {path}: {reason}") from None
    write_text(path, splice(old, block))
    return path


def _run(
    seeds: list[int],
    loads: list[float],
    n_jobs: int,
    policies: list[str],
    workers: int | RayBackend,
    progress: bool | None,
    preemption: str = "none",
) -> OnlineRuns:
    knobs: dict[str, object] = {"n_jobs": n_jobs}
    if preemption != "none":  # (left out otherwise: the runs' knobs are as they always were)
        knobs["preemption"] = preemption
    specs = [
        spec
        for x in loads
        for spec in expand(policies, SCENARIO, seeds, {"load": x, **knobs}, {"load": x})
    ]
    results = run_all(specs, workers=workers, label=SCENARIO, progress=progress)
    runs = {(r.spec.tag["load"], r.spec.policy, r.spec.seed): r for r in results}
    spec = load_scenario_spec(SCENARIO)
    templates = [compile_scenario(spec, load=x, n_jobs=n_jobs) for x in loads]
    rates = []
    for t in templates:
        assert t.workload is not None and t.workload.rate is not None  # the file's workload
        rates.append(t.workload.rate)
    return OnlineRuns(
        tuple(seeds),
        tuple(loads),
        n_jobs,
        tuple(policies),
        reference_policy(policies),
        runs,
        tuple(rates),
        templates[0].mean_gpu_hours(),
        templates[0].cluster.total_gpus,
        preemption,
    )


# --- the markdown ---------------------------------------------------------------------------


def online_command(
    seeds: Sequence[int],
    loads: Sequence[float],
    n_jobs: int,
    policies: Sequence[str],
    preemption: str = "none",
    out: str | None = "docs",
) -> str:
    """The ``bacepipe online`` command line that gives these arguments into ``out`` (``docs``
    regenerates the docs page; None leaves ``--out`` out); the
    loads, the job count, the policies and the preemption rule are left out when they are the
    defaults."""
    cmd = "bacepipe online"
    if out is not None:  # None: the command as it reads whatever the folder
        cmd += f" --out {shlex.quote(out)}"
    cmd += f" --seeds {seeds_text(seeds)}"
    if tuple(loads) != DEFAULT_LOADS:
        cmd += f" --loads {','.join(f'{x:g}' for x in loads)}"
    if n_jobs != DEFAULT_N_JOBS:
        cmd += f" --jobs {n_jobs}"
    if list(policies) != default_policies():
        cmd += f" --policies {','.join(policies)}"
    if preemption != "none":
        cmd += f" --preemption {preemption}"
    return cmd


def splice(old: str | None, block: str) -> str:
    """``old`` with its marked block replaced by ``block``; a fresh document when ``old`` is
    None or holds no (well-ordered) pair of markers."""
    if old is not None:
        start, end = old.find(BEGIN), old.find(END)
        if 0 <= start < end and old.count(BEGIN) == old.count(END) == 1:
            return old[:start] + block + old[end + len(END) :]
    return (
        "# Online scheduling: results\n\n"
        "<!-- Written by `bacepipe online`; docs/online.md explains the world and reads the "
        "numbers. -->\n\n" + block + "\n"
    )


def _h(x: float) -> str:
    return f"{x:,.1f}"


def _usd(x: float) -> str:
    return f"${x:,.0f}"


def _tonnes(x_kg: float) -> str:
    return f"{x_kg / 1000:,.1f}"


def _load(x: float) -> str:
    return f"{x:g}"


def render_block(data: OnlineRuns, out: str = "docs") -> str:
    """The generated block, markers included (a pure function of the runs)."""
    seeds = data.seeds
    ref = data.reference
    at = data.ranking_load
    args = (seeds, data.loads, data.n_jobs, data.policies, data.preemption)
    cmd = online_command(*args, out)  # exactly what wrote it, in the comment (never wrapped)
    said = online_command(*args, None)  # the prose's, the same whatever the folder
    n_runs = len(data.runs)
    lines = [
        BEGIN,
        f"<!-- Generated by `{cmd}`; do not edit between the online markers. -->",
        "",
        f"Written by `{said}`: {len(data.policies)} policies on the `{SCENARIO}` scenario at "
        f"{len(data.loads)} offered loads, {len(seeds)} seeds ({_seed_words(seeds)}), "
        f"{data.n_jobs} jobs per episode, {n_runs:,} simulations. A seed fixes an episode's "
        "arrivals, job mix and start hour; every policy plays the same episodes. Offered load = "
        f"arrival rate x {data.mean_gpu_hours:,.0f} GPU-h (a job's expected ideal GPU-hours, "
        f"K* GPUs in one region) / {data.total_gpus} GPUs."
        + (
            f" Every policy without a preemption rule of its own runs under `{data.preemption}`."
            if data.preemption != "none"
            else ""
        ),
        "",
    ]
    lines += _ranking(data, at)
    lines += _by_load(data)
    lines += [
        "",
        f"![Mean JCT against offered load, absolute and per seed over {ref}](img/{CHARTS[0]})",
        "",
        f"![Total electricity cost against offered load, absolute and per seed over {ref}]"
        f"(img/{CHARTS[1]})",
        "",
        f"*Means over the {len(seeds)} seeds with 95% CIs; right panels divide each seed's value "
        f"by {ref}'s on the same seed.*",
        "",
        END,
    ]
    return "\n".join(wrap_prose(lines))


def _seed_words(seeds: Sequence[int]) -> str:
    s = list(seeds)
    if len(s) > 2 and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}-{s[-1]}"
    return ", ".join(map(str, s))


def _ranking(data: OnlineRuns, at: float) -> list[str]:
    ref = data.reference
    ranks = data.ranks(at, _jct)
    order = sorted(data.policies, key=lambda p: (ranks[p], data.policies.index(p)))
    body = []
    for p in order:
        body.append(
            [
                str(ranks[p]),
                f"`{p}`",
                plus_minus(data.est(at, p, _jct), _h),
                plus_minus(data.ratio(at, p, _jct), ratio_text),
                _h(data.mean(at, p, _p95)),
                _h(data.mean(at, p, _p99)),
                f"{data.mean(at, p, _slowdown):,.1f}",
                _usd(data.mean(at, p, _cost)),
                plus_minus(data.ratio(at, p, _cost), ratio_text),
                _tonnes(data.mean(at, p, _carbon)),
                f"{100 * data.mean(at, p, _util):.1f}%",
                f"{data.mean(at, p, _throughput):.4f}",
                f"{data.mean(at, p, _preemptions):,.1f}",
                f"{data.mean(at, p, _wasted):,.0f}",
            ]
        )
    head = [
        "rank",
        "policy",
        "mean JCT h",
        f"JCT / {ref}",
        "p95 JCT h",
        "p99 JCT h",
        "mean slowdown",
        "cost $",
        f"cost / {ref}",
        "carbon t",
        "GPU util.",
        "jobs/h",
        "preemptions",
        "wasted GPU-h",
    ]
    return [
        f"### Ranking at offered load {_load(at)}",
        "",
        f"Policies by mean JCT at offered load {_load(at)} ({data.rates[data.loads.index(at)]:.4f} "
        f"jobs/h). Mean JCT and the ratios to {ref} (taken seed by seed) are means ± 95% CI "
        "half-widths over the seeds; p95/p99 JCT, slowdown, electricity cost, carbon (tonnes "
        "CO2e), GPU utilisation, throughput (jobs completed per hour of makespan), preemptions "
        "and the GPU-hours they wasted (restarts and checkpoint writes) are means of each run's "
        "figure.",
        "",
        *markdown_table(head, body, "rl" + "r" * (len(head) - 2)),
        "",
    ]


def _by_load(data: OnlineRuns) -> list[str]:
    loads = data.loads
    head = ["policy", *(f"load {_load(x)}" for x in loads)]
    out = [
        "### By offered load",
        "",
        "Arrival rate at each load (jobs/h): "
        + ", ".join(f"{_load(x)}: {r:.4f}" for x, r in zip(loads, data.rates))
        + ". Means over the seeds, each policy's rank at that load in parentheses (1 = lowest).",
        "",
    ]
    for title, metric, fmt in (
        ("Mean JCT (h)", _jct, _h),
        ("Electricity cost ($)", _cost, _usd),
        ("Carbon (t CO2e)", _carbon, _tonnes),
    ):
        ranks = {x: data.ranks(x, metric) for x in loads}
        body = [
            [f"`{p}`", *(f"{fmt(data.mean(x, p, metric))} ({ranks[x][p]})" for x in loads)]
            for p in data.policies
        ]
        out += [f"{title}:", "", *markdown_table(head, body, "l" + "r" * len(loads)), ""]
    head = ["load", "lowest mean JCT", "lowest p95 JCT", "lowest cost", "lowest carbon"]
    body = []
    for x in loads:
        cells = [_load(x)]
        for metric in (_jct, _p95, _cost, _carbon):
            rank = data.ranks(x, metric)
            cells.append(", ".join(f"`{p}`" for p in data.policies if rank[p] == 1))
        body.append(cells)
    out += ["The best policy at each load:", "", *markdown_table(head, body, "rllll")]
    return out


# --- the charts -----------------------------------------------------------------------------


def _chart(data: OnlineRuns, path: Path, what: str) -> Path:
    """Write :func:`_figure`'s chart of ``what`` (``jct`` or ``cost``) to ``path``."""
    plt = _pyplot()
    fig = _figure(data, what)
    save_figure(fig, path)
    plt.close(fig)
    return path


def _figure(data: OnlineRuns, what: str) -> Any:
    """Two panels against offered load, one line per policy: the metric's mean over the seeds
    (left) and its per-seed ratio to the reference with 95% CI bars (right; the lines are
    nudged sideways so that the bars do not hide each other). Every policy has its own
    colour, line style and marker (:func:`~.plots.series_styles`)."""
    plt = _pyplot()
    metric, label = (_jct, "mean JCT (h)") if what == "jct" else (_cost, "total cost ($)")
    xs = list(data.loads)
    gaps = [b - a for a, b in zip(sorted(xs), sorted(xs)[1:])]
    nudge = 0.3 * (min(gaps) if gaps else 0.2) / max(1, len(data.policies))
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), dpi=120)
    styles = series_styles(len(data.policies))
    for i, p in enumerate(data.policies):
        style = {**styles[i], "markersize": 4, "linewidth": 1}
        axes[0].plot(xs, [data.mean(x, p, metric) for x in xs], label=p, **style)
        es = [data.ratio(x, p, metric) for x in xs]
        shift = (i - (len(data.policies) - 1) / 2) * nudge
        axes[1].errorbar(
            [x + shift for x in xs],
            [e.mean for e in es],
            yerr=[0.0 if math.isnan(e.ci95) else e.ci95 for e in es],
            capsize=2,
            elinewidth=0.8,
            **style,
        )
    axes[0].set_ylabel(f"{label}, mean over seeds")
    axes[1].set_ylabel(f"{label.split(' (')[0]} / {data.reference}, 95% CI")
    axes[1].axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    for ax in axes:
        ax.set_xlabel("offered load")
        ax.set_xticks(xs)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", frameon=False, fontsize=8)
    fig.suptitle(
        f"{SCENARIO}: {data.n_jobs} jobs per episode, {len(data.seeds)} seeds", fontsize=10
    )
    fig.tight_layout(rect=(0.0, 0.0, 0.87, 1.0))
    return fig
