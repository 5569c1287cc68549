"""The data-parallel parts of the validation (docs/validation.md): reading a run's replicas,
the gradient all-reduce, the percentile the summary reports and the send-blocking
sensitivity. Pure functions of plain values; :mod:`.validation` feeds them the runs, the
profiles and Sailor's fitted network.

The page's data-parallel sections (the per-run table, the sensitivity, the targets and the
misses) are rendered here too, from anything shaped like :class:`.validation.Prediction`
(:class:`PredictionLike`; this module imports nothing from :mod:`.validation`).

A data-parallel run has ``dp`` replicas of a ``pp``-stage pipeline. Every stage replica is its
own node (the runs have ``n_nodes = pp x dp``). After the last micro-batch's backward pass
each stage's ``dp`` copies all-reduce their gradients in a ring, in replica order; the stages'
rings run at once, on distinct nodes, so the slowest ring is the term the iteration pays.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..core.perf import ring_allreduce_time

__all__ = [
    "MISS",
    "RUN_KINDS",
    "TARGETS",
    "Link",
    "PredictionLike",
    "Replicas",
    "RunLike",
    "Summary",
    "allreduce_seconds",
    "blocking_sends",
    "breakdown_allreduce_s",
    "breakdown_s",
    "breakdown_table",
    "dp_table",
    "kind",
    "misses_table",
    "nearest_rank",
    "parse_replicas",
    "ring_chunk_seconds",
    "sensitivity",
    "sensitivity_tables",
    "single_type_replicas",
    "summary_of",
    "targets_text",
]

#: Replica j's GPU type at each stage: ``replicas[j][i]`` is stage i's j-th copy.
Replicas = tuple[tuple[str, ...], ...]

#: Seconds to send ``n_bytes`` from a node of GPU type ``a`` to one of type ``b``.
Link = Callable[[str, str, float], float]

_GROUP = re.compile(r"\[([^\]]+)\]")
_COPY = re.compile(r"(.+?)x(\d+)(?:\*(\d+))?")


def parse_replicas(text: str) -> Replicas | None:
    """A plan's ``stage_replicas``, read as replicas: one ``[...]`` group per stage listing
    its copies in order, ``TYPExN`` a copy of N GPUs of TYPE and ``*k`` k such copies in a
    row; replica j is the pipeline of stage 0's j-th copy, stage 1's j-th copy, ...

    ``[RTX-3090x8,RTX-2080x8*2] [Titan-RTXx8,RTX-2080x8,Titan-RTXx8]`` ->
    ``(("RTX-3090", "Titan-RTX"), ("RTX-2080", "RTX-2080"), ("RTX-2080", "Titan-RTX"))``.
    None when the text names no stage, a copy cannot be read, or the stages have different
    numbers of copies."""
    stages: list[list[str]] = []
    for group in _GROUP.findall(text):
        copies: list[str] = []
        for part in group.split(","):
            m = _COPY.fullmatch(part.strip())
            if m is None:
                return None
            copies += [m.group(1)] * int(m.group(3) or 1)
        stages.append(copies)
    if not stages or len({len(s) for s in stages}) != 1:
        return None
    return tuple(zip(*stages))


def single_type_replicas(gpu_types: str, pp: int, dp: int, n_nodes: int) -> Replicas | None:
    """The replicas of a run whose plan names none (the Aceso runs): readable only on one GPU
    type with one node per stage replica (``n_nodes == pp x dp``), ``dp`` copies of
    ``(gpu_types,) * pp``; None otherwise."""
    if n_nodes != pp * dp or not gpu_types or "+" in gpu_types:
        return None
    return ((gpu_types,) * pp,) * dp


def ring_chunk_seconds(ring: Sequence[str], chunk_bytes: float, link: Link) -> float:
    """Seconds of one step of a ring over copies on GPU types ``ring`` (copy j sends to copy
    ``j + 1 mod d``): every edge sends one ``chunk_bytes`` chunk, the slowest edge sets it."""
    d = len(ring)
    return max(link(ring[j], ring[(j + 1) % d], chunk_bytes) for j in range(d))


def allreduce_seconds(
    buffers: Sequence[float], rings: Sequence[Sequence[str]], link: Link
) -> tuple[float, list[float]]:
    """The gradient all-reduce term and each stage's all-reduce (seconds): stage s reduces
    ``buffers[s]`` bytes among its copies ``rings[s]`` in a ring, ``ring_allreduce_time`` of
    the slowest edge's time for one ``1 / d`` chunk (``2 (d - 1)`` steps); the stages' rings
    run at once, so the term is the slowest stage's. 0 with one copy per stage."""
    per_stage = [
        ring_allreduce_time(ring_chunk_seconds(ring, buf / len(ring), link), len(ring))
        if len(ring) > 1
        else 0.0
        for buf, ring in zip(buffers, rings)
    ]
    return max(per_stage, default=0.0), per_stage


def blocking_sends(
    stage_fwd: Sequence[float],
    stage_bwd: Sequence[float],
    hop_fwd: Sequence[float],
    hop_bwd: Sequence[float],
) -> tuple[list[float], list[float]]:
    """The sensitivity's stage times when a stage's send blocks it (the hops are then 0):
    stage i's forward time plus its outgoing forward hop (to i + 1), its backward time plus
    its outgoing backward hop (to i - 1). The simulator keeps the overlapped model, where a
    link is a server in series and ``Delta = max(stage, hop)``."""
    last = len(stage_fwd) - 1
    fwd = [t + (hop_fwd[i] if i < last else 0.0) for i, t in enumerate(stage_fwd)]
    bwd = [t + (hop_bwd[i - 1] if i > 0 else 0.0) for i, t in enumerate(stage_bwd)]
    return fwd, bwd


def nearest_rank(values: Sequence[float], percent: int) -> float:
    """The nearest-rank ``percent``-th percentile: the ``ceil(percent x n / 100)``-th smallest
    of the ``n`` values (integer arithmetic, so 90% of 10 values is the 9th, not the 10th)."""
    ordered = sorted(values)
    return ordered[max(0, -(-percent * len(ordered) // 100) - 1)]


def breakdown_allreduce_s(notes: str) -> float | None:
    """The all-reduce an Aceso run's own time breakdown records (``backward-params-all-reduce``
    in ms, quoted in the data's ``notes``), in seconds; None when the notes quote none."""
    m = re.search(r"backward-params-all-reduce ([\d.]+)", notes)
    return float(m.group(1)) / 1e3 if m else None


def breakdown_s(notes: str) -> dict[str, float]:
    """An Aceso run's own time breakdown (``forward-compute``, ``backward-compute``,
    ``backward-params-all-reduce``, ``optimizer``, in ms, quoted in the data's ``notes``), in
    seconds by name; empty when the notes quote none."""
    m = re.search(r"breakdown ms: ([^;]+)", notes)
    if m is None:
        return {}
    parts = (part.strip().rsplit(" ", 1) for part in m.group(1).split(","))
    return {name: float(ms) / 1e3 for name, ms in parts}


def breakdown_table(predictions: Sequence[PredictionLike]) -> list[str]:
    """The one-stage Aceso runs at the schedule level: the compute and the per-iteration
    terms their own breakdown records against the prediction's. With one stage and no hop the
    predicted pipeline is ``M x`` the profile's forward plus backward layer times, the
    compute alone."""
    lines = [
        "| row | run | dp | M | measured (s) | Aceso's compute (s) | profile's compute (s) "
        "| compute ratio | Aceso's all-reduce + optimizer (s) | predicted all-reduce + "
        "optimizer step (s) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in predictions:
        r = p.run
        parts = breakdown_s(r.notes)
        if p.level != "schedule" or p.reason or r.pp != 1 or not parts or p.pipeline_s is None:
            continue
        compute = parts["forward-compute"] + parts["backward-compute"]
        fixed = parts["backward-params-all-reduce"] + parts["optimizer"]
        lines.append(
            f"| {r.row} | {r.name} | {r.dp} | {r.n_micro} | {_s(r.measured_s)} "
            f"| {compute:.4g} | {p.pipeline_s:.4g} | {compute / p.pipeline_s:.3f} "
            f"| {fixed:.4g} | {p.allreduce_s + p.update_s:.4g} |"
        )
    return lines


# --- the summary's statistics -----------------------------------------------------------------

#: The summary's kinds of run: dp = 1 and dp > 1.
RUN_KINDS = ("pipeline-only", "data-parallel")

#: The targets of the schedule level's physical model (issue 44): (kind of run, statistic,
#: bound); ``signed median`` bounds the absolute value of the median signed error (a bias),
#: and the pipeline-only bound is their median before the data-parallel extension.
TARGETS = (
    ("data-parallel", "median", 0.06),
    ("data-parallel", "p90", 0.136),
    ("data-parallel", "signed median", 0.03),
    ("pipeline-only", "median", 0.098),
)

#: A run misses when its absolute error exceeds this.
MISS = 0.15


@dataclass(frozen=True)
class Summary:
    """Relative errors of one level, model and kind of run (:data:`RUN_KINDS`) over the runs
    it predicts that are not flagged suspect: the median, nearest-rank 90th percentile
    (:func:`nearest_rank`) and worst of the absolute errors, and the median of the signed ones
    (``median_signed``: below 0 when the runs are predicted low, a bias)."""

    level: str
    model: str
    runs: str
    n_runs: int
    median_abs: float
    p90_abs: float
    worst_abs: float
    worst_run: str
    median_signed: float = math.nan


def summary_of(level: str, model: str, runs: str, errs: Sequence[tuple[float, str]]) -> Summary:
    """The :class:`Summary` of ``errs``, (signed error, run name) pairs (NaN when empty)."""
    if not errs:
        return Summary(level, model, runs, 0, math.nan, math.nan, math.nan, "")
    worst = max((abs(e), name) for e, name in errs)
    abs_errs = [abs(e) for e, _ in errs]
    median = statistics.median(abs_errs)
    signed = statistics.median(e for e, _ in errs)
    return Summary(
        level, model, runs, len(errs), median, nearest_rank(abs_errs, 90), *worst, signed
    )


class RunLike(Protocol):
    """What the data-parallel sections read of a run (:class:`.validation.Run`)."""

    @property
    def row(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def pp(self) -> int: ...
    @property
    def dp(self) -> int: ...
    @property
    def tp(self) -> int: ...
    @property
    def n_micro(self) -> int: ...
    @property
    def runtime(self) -> str: ...
    @property
    def measured_s(self) -> float | None: ...
    @property
    def red_grads(self) -> float | None: ...
    @property
    def suspect(self) -> bool: ...
    @property
    def notes(self) -> str: ...


class PredictionLike(Protocol):
    """What the data-parallel sections read of a prediction (:class:`.validation.Prediction`)."""

    @property
    def run(self) -> RunLike: ...
    @property
    def level(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def physical_s(self) -> float | None: ...
    @property
    def pipeline_s(self) -> float | None: ...
    @property
    def allreduce_s(self) -> float: ...
    @property
    def update_s(self) -> float: ...
    @property
    def blocking_s(self) -> float | None: ...
    @property
    def approximate(self) -> str: ...
    def error(self, model: str) -> float | None: ...


def kind(run: RunLike) -> str:
    """The run's kind (:data:`RUN_KINDS`)."""
    return RUN_KINDS[run.dp > 1]


def _counted(predictions: Sequence[PredictionLike], level: str) -> list[PredictionLike]:
    """The summary's runs at ``level``: predicted and not flagged suspect."""
    return [p for p in predictions if p.level == level and not p.reason and not p.run.suspect]


def sensitivity(predictions: Sequence[PredictionLike]) -> list[Summary]:
    """The schedule level's physical model with sends overlapping compute (the simulator's)
    and with a stage's send blocking it (``blocking_s``), per kind of run, over the runs the
    summary counts."""
    rows = _counted(predictions, "schedule")
    out: list[Summary] = []
    for model in ("overlapped sends", "blocking sends"):
        for runs in RUN_KINDS:
            errs = [
                (t / p.run.measured_s - 1.0, p.run.name)
                for p in rows
                if kind(p.run) == runs
                and p.run.measured_s is not None
                and (t := p.blocking_s if model == "blocking sends" else p.physical_s) is not None
            ]
            out.append(summary_of("schedule", model, runs, errs))
    return out


# --- the page's sections ----------------------------------------------------------------------


def _s(x: float | None) -> str:
    return "" if x is None else f"{x:.4g}"


def _e(x: float | None) -> str:
    return "" if x is None else f"{x:+.1%}"


def dp_table(predictions: Sequence[PredictionLike]) -> list[str]:
    """The schedule level's data-parallel runs, one line each: the slowest replica's
    pipeline, the all-reduce, the file's ``red_grads`` as context and the prediction."""
    lines = [
        "| row | run | pp | dp | tp | M | measured (s) | predicted pipeline (s) "
        "| predicted all-reduce (s) | `red_grads` in the file (undocumented) (s) "
        "| physical (s) | physical error | note |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for p in predictions:
        r = p.run
        if p.level != "schedule" or p.reason or r.dp == 1:
            continue
        aceso = breakdown_allreduce_s(r.notes)
        notes = (
            "suspect, excluded" if r.suspect else "",
            p.approximate,
            f"Aceso's own breakdown: all-reduce {aceso:.4g} s" if aceso is not None else "",
        )
        lines.append(
            f"| {r.row} | {r.name} | {r.pp} | {r.dp} | {r.tp} | {r.n_micro} "
            f"| {_s(r.measured_s)} | {_s(p.pipeline_s)} | {p.allreduce_s:.4g} "
            f"| {_s(r.red_grads)} | {_s(p.physical_s)} | {_e(p.error('physical'))} "
            f"| {'; '.join(n for n in notes if n)} |"
        )
    return lines


def sensitivity_tables(predictions: Sequence[PredictionLike], rows: Sequence[int]) -> list[str]:
    """The send-blocking sensitivity: median and p90 of both models per kind of run, then
    the runs ``rows`` under both."""
    by = {(s.model, s.runs): s for s in sensitivity(predictions)}
    lines = [
        "| runs | n | overlapped: median | overlapped: p90 | blocking: median | blocking: p90 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for runs in RUN_KINDS:
        o, b = by["overlapped sends", runs], by["blocking sends", runs]
        lines.append(
            f"| {runs} | {o.n_runs} | {o.median_abs:.1%} | {o.p90_abs:.1%} "
            f"| {b.median_abs:.1%} | {b.p90_abs:.1%} |"
        )
    lines += [
        "",
        "| row | run | measured (s) | overlapped (s) | error | blocking (s) | error |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for p in predictions:
        r = p.run
        if p.level == "schedule" and r.row in rows and r.measured_s is not None:
            blocked = None if p.blocking_s is None else p.blocking_s / r.measured_s - 1.0
            lines.append(
                f"| {r.row} | {r.name} | {_s(r.measured_s)} | {_s(p.physical_s)} "
                f"| {_e(p.error('physical'))} | {_s(p.blocking_s)} | {_e(blocked)} |"
            )
    return lines


def misses_table(predictions: Sequence[PredictionLike]) -> list[str]:
    """The summary's schedule-level runs whose physical error exceeds :data:`MISS`."""
    lines = [
        "| row | run | runs | pp | dp | M | measured (s) | physical (s) | physical error |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for p in _counted(predictions, "schedule"):
        r, err = p.run, p.error("physical")
        if err is not None and abs(err) > MISS:
            lines.append(
                f"| {r.row} | {r.name} | {kind(r)} | {r.pp} | {r.dp} | {r.n_micro} "
                f"| {_s(r.measured_s)} | {_s(p.physical_s)} | {_e(err)} |"
            )
    return lines


def targets_text(summary: Sequence[Summary], predictions: Sequence[PredictionLike]) -> list[str]:
    """One line per :data:`TARGETS` entry (met or not, with the number), then the
    data-parallel runs of Sailor's own runtime alone, without the Aceso runtime's."""
    by = {(s.level, s.model, s.runs): s for s in summary}
    lines: list[str] = []
    for runs, stat, bound in TARGETS:
        s = by["schedule", "physical", runs]
        if stat == "signed median":
            value, what = abs(s.median_signed), "|median signed error|"
            shown = f"{s.median_signed:+.2%}"
        else:
            value = s.median_abs if stat == "median" else s.p90_abs
            what, shown = f"{stat} abs. error", f"{value:.2%}"
        verdict = "**met**" if value <= bound else "**not met**"
        lines.append(
            f"- {runs} runs, {what} <= {bound:.1%}: {verdict}, {shown} over {s.n_runs} runs"
        )
    errs = [
        (e, p.run.name)
        for p in _counted(predictions, "schedule")
        if p.run.dp > 1
        and p.run.runtime.startswith("Sailor")
        and (e := p.error("physical")) is not None
    ]
    sailor = summary_of("schedule", "physical", "data-parallel", errs)
    lines.append(
        f"- for reference, the data-parallel runs of Sailor's runtime alone (no Aceso run): "
        f"median {sailor.median_abs:.1%}, p90 {sailor.p90_abs:.1%}, median signed error "
        f"{sailor.median_signed:+.1%} over {sailor.n_runs} runs"
    )
    return lines
