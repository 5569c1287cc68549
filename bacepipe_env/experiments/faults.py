"""``bacepipe faults``: policies on a scenario at several GPU failure rates (semantics §11), as
one generated markdown block and a chart.

Each seed fixes a scenario's job mix and its failure draws; every policy and every rate plays
the same seed, so each run is normalised to the rate-0 run of the same policy and seed. The
block lies between ``<!-- faults:begin -->`` and ``<!-- faults:end -->``: when
``out/faults.md`` already holds those markers (``docs/faults.md`` wraps the block in prose)
only the block is replaced, otherwise the file is written afresh. The output is a pure function
of the arguments, so the same command writes the same bytes.
"""

from __future__ import annotations

import operator
import shlex
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.faults import DEFAULT_CHECKPOINT_INTERVAL_S, DEFAULT_RESTART_S
from ..core.preemption import check_preemption
from ..core.validate import require_float
from ..errors import BacepipeError, ValidationError
from ..outputs import save_figure, write_text
from ..scenarios.loader import load_scenario
from .experiments import check_policies, check_seeds
from .plots import _pyplot
from .report_text import markdown_table, plus_minus, seeds_text, wrap_prose
from .runner import RayBackend, RunGrid, RunSummary, check_workers, expand, run_all
from .stats import Estimate, estimate

__all__ = [
    "BEGIN",
    "CHART",
    "DEFAULT_POLICIES",
    "DEFAULT_RATES",
    "END",
    "TABLE_RATES",
    "FaultRuns",
    "faults_command",
    "render_block",
    "run_faults",
    "splice",
]

#: GPU failures per GPU-hour ``bacepipe faults`` sweeps by default (2e-5 is Llama 3's).
DEFAULT_RATES = (0.0, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4)
#: The rates the table shows (those of them that were swept).
TABLE_RATES = (0.0, 2e-5, 2e-4)
DEFAULT_POLICIES = (
    "bace-pipe",
    "lcf",
    "ldf",
    "cr-lcf",
    "cr-ldf",
    "sjf",
    "sjf+finish-aware",
    "sjf+finish-aware+srtf",
    "bace-pipe+srtf",
)
DEFAULT_SCENARIO = "paper"
BEGIN = "<!-- faults:begin -->"
END = "<!-- faults:end -->"
CHART = "faults-vs-rate.png"

_jct = operator.attrgetter("avg_jct_h")
_cost = operator.attrgetter("total_cost_usd")
_wasted_h = operator.attrgetter("wasted_gpu_hours")
_wasted_usd = operator.attrgetter("wasted_cost_usd")


def _restarts(r: RunSummary) -> float:
    return float(r.n_restarts)


def _preemptions(r: RunSummary) -> float:
    return float(r.n_preemptions)


@dataclass(frozen=True)
class FaultRuns(RunGrid):
    """Every run of one ``run_faults`` call, by rate, policy and seed."""

    scenario: str
    seeds: tuple[int, ...]
    rates: tuple[float, ...]
    policies: tuple[str, ...]
    runs: dict[tuple[float, str, int], RunSummary]
    checkpoint_s: float = DEFAULT_CHECKPOINT_INTERVAL_S  # the scenario's checkpoint interval
    restart_s: float = DEFAULT_RESTART_S  # and its restart time
    preemption: str = "none"  # the rule of every policy without its own (semantics §3c)

    def ratio(self, rate: float, policy: str, metric: Callable[[RunSummary], float]) -> Estimate:
        """``metric`` over the same policy's on the same seed at rate 0: mean ± 95% CI."""
        base = self.values(0.0, policy, metric)
        own = self.values(rate, policy, metric)
        return estimate([a / b for a, b in zip(own, base)])


def _check(
    out: Path,
    seeds: Sequence[int],
    rates: Sequence[float],
    policies: Sequence[str],
    scenario: str,
    workers: int | RayBackend,
) -> list[float]:
    """Every argument checked before any run; a one-line ValidationError otherwise."""
    if not str(out):
        raise ValidationError("out", str(out), "give an output directory")
    check_seeds(seeds)
    if not rates:
        raise ValidationError("rates", list(rates), "give at least one failure rate")
    vals = [require_float("rates", x, minimum=0.0, exc=ValidationError) for x in rates]
    if len(set(vals)) != len(vals):
        raise ValidationError("rates", vals, "a rate is listed twice")
    if 0.0 not in vals:
        raise ValidationError("rates", vals, "must include 0 (the runs are normalised to it)")
    check_workers(workers)
    check_policies(policies)
    return sorted(vals)


def _checkpointing(scenario: str) -> tuple[float, float]:
    """The scenario's checkpoint interval and restart time (s); loading it fails fast on a bad
    scenario, before any worker."""
    faults = load_scenario(scenario).faults
    if faults is None:
        return DEFAULT_CHECKPOINT_INTERVAL_S, DEFAULT_RESTART_S
    return faults.checkpoint_interval_s, faults.restart_s


def run_faults(
    out: Path,
    *,
    seeds: Sequence[int],
    rates: Sequence[float] = DEFAULT_RATES,
    policies: Sequence[str] | None = None,
    scenario: str = DEFAULT_SCENARIO,
    workers: int | RayBackend = 1,
    progress: bool | None = None,
    preemption: str = "none",
) -> Path:
    """Run every policy on ``scenario`` at every GPU failure rate (per GPU-hour) for every seed,
    then write ``out/faults.md`` and the chart ``out/img/faults-vs-rate.png``; returns the
    markdown's path. The rates must include 0; ``preemption`` is the rule of every policy
    without its own (semantics §3c). A missing matplotlib skips the chart with a warning; the
    markdown does not change."""
    pols = list(DEFAULT_POLICIES if policies is None else policies)
    preemption = check_preemption(preemption)
    vals = _check(out, seeds, rates, pols, scenario, workers)
    checkpoint_s, restart_s = _checkpointing(scenario)
    img = out / "img"
    try:
        img.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BacepipeError(f"cannot create output directory {img}: {err.strerror}") from None
    specs = [
        spec
        for x in vals
        for spec in expand(
            pols,
            scenario,
            seeds,
            {"gpu_failure_rate": x, **({"preemption": preemption} if preemption != "none" else {})},
            {"rate": x},
        )
    ]
    results = run_all(specs, workers=workers, label="faults", progress=progress)
    data = FaultRuns(
        scenario,
        tuple(seeds),
        tuple(vals),
        tuple(pols),
        {(r.spec.tag["rate"], r.spec.policy, r.spec.seed): r for r in results},
        checkpoint_s,
        restart_s,
        preemption,
    )
    try:
        _chart(data, img / CHART)
    except BacepipeError as err:  # matplotlib is missing
        warnings.warn(f"faults chart skipped: {err}", stacklevel=2)
    path = out / "faults.md"
    try:
        old = path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else str(err)
        raise BacepipeError(f"cannot read {path}: {reason}") from None
    write_text(path, splice(old, render_block(data, str(out))))  # names the --out given
    return path


# --- the markdown ---------------------------------------------------------------------------


def _rate(x: float) -> str:
    return "0" if x == 0 else f"{x:.0e}".replace("e-0", "e-")


def faults_command(
    seeds: Sequence[int],
    rates: Sequence[float],
    policies: Sequence[str],
    scenario: str,
    preemption: str = "none",
    out: str | None = "docs",
) -> str:
    """The ``bacepipe faults`` command line that gives these arguments into ``out`` (``docs``
    regenerates the docs page; None leaves ``--out`` out); the
    rates, policies, scenario and preemption rule are left out when they are the defaults."""
    cmd = "bacepipe faults"
    if out is not None:  # None: the command as it reads whatever the folder
        cmd += f" --out {shlex.quote(out)}"
    cmd += f" --seeds {seeds_text(seeds)}"
    if tuple(sorted(rates)) != DEFAULT_RATES:
        cmd += f" --rates {','.join(_rate(x) for x in rates)}"
    if tuple(policies) != DEFAULT_POLICIES:
        cmd += f" --policies {','.join(policies)}"
    if scenario != DEFAULT_SCENARIO:
        cmd += f" --scenario {scenario}"
    if preemption != "none":
        cmd += f" --preemption {preemption}"
    return cmd


def splice(old: str | None, block: str) -> str:
    """``old`` with its marked block replaced by ``block``; a fresh document when ``old`` is
    None or holds no (single, well-ordered) pair of markers."""
    if old is not None:
        start, end = old.find(BEGIN), old.find(END)
        if 0 <= start < end and old.count(BEGIN) == old.count(END) == 1:
            return old[:start] + block + old[end + len(END) :]
    return (
        "# Faults: results\n\n"
        "<!-- Written by `bacepipe faults`; docs/faults.md explains the model and reads the "
        "numbers. -->\n\n" + block + "\n"
    )


def _pm(e: Estimate, fmt: str) -> str:
    return plus_minus(e, lambda x: format(x, fmt))


def _seed_words(seeds: Sequence[int]) -> str:
    s = list(seeds)
    if len(s) > 2 and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}-{s[-1]}"
    return ", ".join(map(str, s))


def render_block(data: FaultRuns, out: str = "docs") -> str:
    """The generated block, markers included (a pure function of the runs)."""
    args = (data.seeds, data.rates, data.policies, data.scenario, data.preemption)
    cmd = faults_command(*args, out)  # exactly what wrote it, in the comment (never wrapped)
    said = faults_command(*args, None)  # the prose's, the same whatever the folder
    shown = [x for x in TABLE_RATES if x in data.rates] or list(data.rates)
    lines = [
        BEGIN,
        f"<!-- Generated by `{cmd}`; do not edit between the faults markers. -->",
        "",
        f"Written by `{said}`: {len(data.policies)} policies on the `{data.scenario}` scenario "
        f"at {len(data.rates)} GPU failure rates ({', '.join(_rate(x) for x in data.rates)} "
        f"per GPU-hour), {len(data.seeds)} seeds ({_seed_words(data.seeds)}), "
        f"{len(data.runs):,} simulations. Checkpoints every {data.checkpoint_s:g} s of "
        f"computing, {data.restart_s:g} s to restore one. A seed fixes the job mix and the "
        "failure draws; every policy and rate plays the same seeds, and the last two columns "
        "divide each run by the same policy's run on the "
        "same seed at rate 0."
        + (
            f" Every policy without a preemption rule of its own runs under `{data.preemption}`."
            if data.preemption != "none"
            else ""
        ),
        "",
    ]
    head = [
        "policy",
        "rate /GPU-h",
        "mean JCT h",
        "cost $",
        "restarts",
        "preemptions",
        "wasted GPU-h",
        "wasted $",
        "JCT / rate 0",
        "cost / rate 0",
    ]
    body = []
    for p in data.policies:
        for x in shown:
            body.append(
                [
                    f"`{p}`",
                    _rate(x),
                    _pm(data.est(x, p, _jct), ",.1f"),
                    _pm(data.est(x, p, _cost), ",.0f"),
                    f"{data.mean(x, p, _restarts):.1f}",
                    f"{data.mean(x, p, _preemptions):.1f}",
                    f"{data.mean(x, p, _wasted_h):,.0f}",
                    f"{data.mean(x, p, _wasted_usd):,.0f}",
                    _pm(data.ratio(x, p, _jct), ".3f"),
                    _pm(data.ratio(x, p, _cost), ".3f"),
                ]
            )
    lines += [
        "Mean JCT and cost are means ± 95% CI half-widths over the seeds (cost is electricity, "
        "the wasted part included); restarts (after a failure, an outage or a preemption), "
        "preemptions, wasted GPU-hours and wasted cost are means of each run's totals.",
        "",
        *markdown_table(head, body, "l" + "r" * (len(head) - 1)),
        "",
        f"![Mean JCT and cost against the GPU failure rate, per policy](img/{CHART})",
        "",
        f"*Means over the {len(data.seeds)} seeds at every swept rate; the x axis is "
        "logarithmic, with rate 0 drawn at its left end.*",
        "",
        END,
    ]
    return "\n".join(wrap_prose(lines))


# --- the chart ------------------------------------------------------------------------------


def _chart(data: FaultRuns, path: Path) -> Path:
    """Two panels against the failure rate (log x; rate 0 at a tenth of the smallest positive
    rate, labelled 0), one line per policy: mean JCT and mean cost over the seeds."""
    plt = _pyplot()
    positive = [x for x in data.rates if x > 0]
    zero_at = (min(positive) if positive else 1e-5) / 10
    xs = [x if x > 0 else zero_at for x in data.rates]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), dpi=120)
    markers = "osD^v<>pPX*h"
    drawn: dict[tuple[tuple[float, ...], tuple[float, ...]], str] = {}
    for i, p in enumerate(data.policies):
        jct = tuple(data.mean(x, p, _jct) for x in data.rates)
        cost = tuple(data.mean(x, p, _cost) for x in data.rates)
        style: dict[str, object] = {
            "marker": markers[i % len(markers)],
            "markersize": 4,
            "linewidth": 1,
        }
        label = p
        same = drawn.setdefault((jct, cost), p)
        if same != p:  # the very same schedule as a policy drawn before: show both lines
            style.update(linestyle="--", markerfacecolor="none", markersize=7)
            label = f"{p} (= {same})"
        axes[0].plot(xs, jct, label=label, **style)
        axes[1].plot(xs, cost, **style)
    axes[0].set_ylabel("mean JCT (h), mean over seeds")
    axes[1].set_ylabel("total cost ($), mean over seeds")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels([_rate(x) for x in data.rates], fontsize=7)
        ax.minorticks_off()
        ax.set_xlabel("GPU failures per GPU-hour")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False, fontsize=8)
    fig.suptitle(f"{data.scenario}: GPU failures, {len(data.seeds)} seeds", fontsize=10)
    rows = -(-len(labels) // 4)  # the legend's rows, below the panels
    fig.tight_layout(rect=(0.0, 0.06 * rows, 1.0, 1.0))
    save_figure(fig, path)
    plt.close(fig)
    return path
