"""The paper's experiments: Fig. 4 (compare), Figs. 5-7 (sweeps) and Fig. 8 (ablation).

Each runs registered policies on the same seeds, summarises them against BACE-Pipe (or the
first policy when BACE-Pipe is not among them) and writes CSV, JSON and PNG files, and
TensorBoard event files: one HParams session per policy (per policy and swept value for a
sweep) holding its means over the seeds, so TensorBoard's HParams table puts the policies side
by side and nothing is smoothed across seeds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.limits import check_limit
from ..core.metrics import ordered
from ..core.validate import require_int
from ..errors import BacepipeError, ValidationError
from ..learned import is_learned, load_learned
from ..outputs import remove
from ..policies.registry import policy_info
from ..scenarios.loader import load_scenario
from .plots import bar_chart, sweep_chart
from .runner import RayBackend, RunSummary, expand, run_all
from .summary import (
    PolicyStats,
    egress_charged,
    faults_configured,
    summarise,
    write_csv,
    write_json,
)
from .tensorboard import MAX_RUN_COMPONENT, ScalarWriter, declare_hparams_table, run_component

__all__ = [
    "SWEEPS",
    "ExperimentOutcome",
    "check_seeds",
    "reference_policy",
    "run_compare",
    "run_sweep",
]

#: Sweep kind -> (load_scenario knob, the paper's values, axis label).
SWEEPS: dict[str, tuple[str, tuple[float, ...], str]] = {
    "bandwidth": ("bandwidth_scale", (0.3, 0.9, 1.5), "inter-region bandwidth scale"),
    "gpu": ("gpu_scale", (0.5, 0.75, 1.25), "GPU capacity scale"),
    "jobs": ("n_jobs", (8, 12, 16, 20, 24), "number of jobs"),
}


@dataclass
class ExperimentOutcome:
    """What an experiment computed and where it wrote it."""

    reference: str
    stats: dict[Any, list[PolicyStats]]  # point (None for compare) -> per-policy stats
    runs: list[RunSummary]
    files: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def reference_policy(policies: Sequence[str]) -> str:
    """BACE-Pipe if it is in ``policies``, else the first one."""
    return "bace-pipe" if "bace-pipe" in policies else policies[0]


def _check(
    policies: Sequence[str],
    seeds: Sequence[int],
    scenario: str,
    knobs: dict[str, Any] | None = None,
) -> None:
    check_policies(policies)
    check_seeds(seeds)
    load_scenario(scenario, **(knobs or {}))  # fail fast on a bad scenario, before any worker


def check_policies(policies: Sequence[str]) -> None:
    """At least one policy, each registered or a loadable model (``algo:path``), none twice; a
    one-line ValidationError otherwise."""
    if not policies:
        raise ValidationError("policies", list(policies), "give at least one policy")
    for name in policies:
        if is_learned(name):
            load_learned(name)  # a missing, corrupt or foreign model fails here, in one line
        else:
            policy_info(name)  # raises with the valid names
    if len(set(policies)) != len(policies):
        raise ValidationError("policies", list(policies), "a policy is listed twice")


def check_seeds(seeds: Sequence[int]) -> None:
    """At least one seed, each a whole number >= 0, none twice; a ValidationError otherwise."""
    if not seeds:
        raise ValidationError("seeds", [], "give at least one seed")
    for s in seeds:
        require_int("seeds", s, minimum=0, exc=ValidationError)
    if len(set(seeds)) != len(seeds):
        raise ValidationError("seeds", list(seeds), "a seed is listed twice")


def _prepare(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BacepipeError(f"cannot create output directory {out}: {err.strerror}") from None


def run_compare(
    scenario: str,
    policies: Sequence[str],
    seeds: Sequence[int],
    out: Path,
    *,
    name: str = "compare",
    title: str | None = None,
    knobs: dict[str, Any] | None = None,
    workers: int | RayBackend = 1,
    progress: bool | None = None,
    tensorboard: bool = True,
) -> ExperimentOutcome:
    """Run ``policies`` x ``seeds`` on ``scenario``; write ``{name}-runs.csv``,
    ``{name}-summary.csv``, ``{name}.json``, ``{name}.png`` and (``tensorboard``)
    ``tb/{name}/<scenario>/<policy>/`` event files: one HParams session per policy with its
    ``{name}/*`` means over the seeds (:func:`_write_sessions`). Running again into
    the same ``out`` replaces that experiment's files. ``knobs`` are load_scenario keywords
    applied to every run (sweep knobs, ``admission``, ``ignore_memory``, ``prices``,
    ``start_hour``, ``egress_usd_per_gb``, ``load``). Carbon is reported beside cost, and the
    egress charge too when egress is on (:func:`egress_charged`)."""
    _check(policies, seeds, scenario, knobs)
    ref = reference_policy(policies)
    _prepare(out)
    runs = run_all(
        expand(policies, scenario, seeds, knobs), workers=workers, label=name, progress=progress
    )
    egress = egress_charged(runs)
    stats = summarise(runs, ref, egress=egress, faults=faults_configured(runs))
    outcome = ExperimentOutcome(ref, {None: stats}, runs)
    files = outcome.files
    files.append(out / f"{name}-runs.csv")
    write_csv(files[-1], [r.row() for r in runs])
    files.append(out / f"{name}-summary.csv")
    write_csv(files[-1], [s.row() for s in stats])
    files.append(out / f"{name}.json")
    write_json(
        files[-1],
        {
            "experiment": name,
            "scenario": scenario,
            "seeds": list(seeds),
            "knobs": knobs or {},
            "reference": ref,
            "summary": [s.row() for s in stats],
            "runs": [r.row() for r in runs],
        },
    )
    try:
        files.append(
            bar_chart(
                stats, out / f"{name}.png", title or f"{name}: {scenario}, {len(seeds)} seeds", ref
            )
        )
    except BacepipeError as err:
        outcome.warnings.append(str(err))
    if tensorboard:
        root = _experiment_dir(out / "tb", name, scenario)
        _clear_events(out / "tb", root, name)
        sessions: list[Session] = []
        shared = _hparams(name, scenario, ref, seeds, knobs)
        written = _write_sessions(root, name, name, shared, runs, stats, ref, sessions)
        files.extend(written)
        files.append(
            declare_hparams_table(out / "tb", root, sessions, _metric_order, into=written[0].parent)
        )
    return outcome


def _experiment_dir(tb_dir: Path, experiment: str, scenario: str) -> Path:
    """``tb/<experiment>/<scenario>``: the folder of one experiment's runs (a scenario file
    is named by its stem)."""
    return tb_dir / experiment / run_component(Path(scenario).stem or scenario)


def _clear_events(tb_dir: Path, root: Path, suffix: str) -> None:
    """Remove this experiment's earlier event files, so that a re-run replaces its sessions
    instead of doubling them (or keeping a policy it no longer runs); also those of the
    earlier flat ``tb/<policy>/`` layout. Other experiments' files stay."""
    old = [*root.rglob(f"events.out.tfevents.*.{suffix}"), *tb_dir.glob(f"*/*.{suffix}")]
    for path in old:
        if path.name.startswith("events.out.tfevents."):
            remove(path)  # at the run's commit: an interrupted run keeps the old sessions
    for folder in sorted((d for d in root.rglob("*") if d.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


def _hparams(
    experiment: str,
    scenario: str,
    reference: str,
    seeds: Sequence[int],
    knobs: dict[str, Any] | None,
) -> dict[str, Any]:
    """The hyperparameters every session of an experiment shares: what ran, on which seeds,
    against which reference, under which load_scenario knobs."""
    seed_list = sorted(seeds)
    contiguous = seed_list == list(range(seed_list[0], seed_list[-1] + 1))
    out: dict[str, Any] = {
        "experiment": experiment,
        "scenario": scenario,
        "reference": reference,
        # a string: the table would print a count as 5.0000, and 0-9 says more
        "seeds": f"{seed_list[0]}-{seed_list[-1]}"
        if contiguous and len(seed_list) > 1
        else ",".join(map(str, seed_list)),
    }
    for key, value in (knobs or {}).items():
        if value is None or isinstance(value, (str, bool, int, float)):
            out[key] = value
        else:  # the HParams table holds strings, numbers and booleans only
            out[key] = json.dumps(value, sort_keys=True, default=str)
    return out


def _session_names(policies: Sequence[str]) -> dict[str, str]:
    """A short run-folder name per policy: a registered name as it is, a learned model as
    ``<algo>-<its run folder>`` (``maskable_ppo:runs/x/model.zip`` -> ``maskable_ppo-x``)."""
    names = {}
    for policy in policies:
        if is_learned(policy):
            algo, path = policy.split(":", 1)
            p = Path(path)
            label = p.parent.name if p.stem == "model" and p.parent.name else p.stem
            names[policy] = run_component(f"{algo}-{label}")
        else:
            names[policy] = run_component(policy)
    taken = list(names.values())
    for policy, short in names.items():
        if taken.count(short) > 1:  # two models from folders of one name: tell them apart
            limit = min(len(short) + 6, MAX_RUN_COMPONENT)
            names[policy] = run_component(f"{short}-{policy}", limit=limit)
    return names


def _write_sessions(
    root: Path,
    suffix: str,
    prefix: str,
    hparams: dict[str, Any],
    runs: Sequence[RunSummary],
    stats: Sequence[PolicyStats],
    reference: str,
    sessions: list[Session],
    knob: tuple[str, float] | None = None,
) -> list[Path]:
    """One HParams session per policy, in ``root/<policy>`` (``root/<policy>/<knob>=<value>``
    for a sweep's point): its hyperparameters (``hparams``, the policy and the knob's value)
    and, at step 0, the ``{prefix}/*`` means over the seeds (average JCT, cost and carbon, with
    their 95% CI half-widths, and the means of the per-seed ratios to the reference), which
    the HParams table shows as metric columns. Each seed's numbers go in a text table, not on
    the step axis, so TensorBoard never smooths one seed into the next. Each session's
    hyperparameters and metric tags are appended to ``sessions``, for the table's
    declaration (:func:`declare_hparams_table`)."""
    by_seed = {(r.spec.policy, r.spec.seed): r for r in runs}
    seeds = sorted({r.spec.seed for r in runs})
    names = _session_names([s.policy for s in stats])
    egress = any(s.egress_usd is not None for s in stats)
    written = []
    for st in stats:
        run_dir = root / names[st.policy]
        session = {**hparams, "policy": st.policy}
        if knob is not None:
            run_dir = run_dir / run_component(f"{knob[0]}={knob[1]:g}")
            session[knob[0]] = knob[1]
        with ScalarWriter(run_dir, suffix=f".{suffix}") as writer:
            writer.add_hparams(session)
            tags = []
            for metric, read in _METRICS.items():
                value = read(st)
                # None: not shown by these runs (egress not charged, no faults); NaN: one seed
                # has no CI, a scenario without carbon figures no carbon ratio.
                if value is not None and not math.isnan(value):
                    writer.add_scalar(f"{prefix}/{metric}", value, 0)
                    tags.append(f"{prefix}/{metric}")
            sessions.append((session, tags))
            about = "learned model" if is_learned(st.policy) else policy_info(st.policy).description
            writer.add_text(f"{prefix}/policy", f"**{st.policy}**: {about}")
            writer.add_text(
                f"{prefix}/seeds",
                _seed_table([by_seed[st.policy, s] for s in seeds], by_seed, reference, egress),
            )
            written.append(writer.path)
    return written


def _hparams_metrics() -> dict[str, Callable[[PolicyStats], float | None]]:
    """The HParams table's metric columns, in order, and how each reads a policy's
    :class:`PolicyStats`: the means of the :data:`~bacepipe_env.core.metrics.METRICS` rows
    with a ratio to the reference (TensorBoard ticks the first five, so the three measures
    and two of their ratios are shown without a click), their ratios, their CIs, then the
    means of the other ``tb`` rows (None: not shown by these runs)."""
    normed = [m for m in ordered("tb") if m.norm]

    def get(field: str, part: str) -> Callable[[PolicyStats], float | None]:
        return lambda st: None if getattr(st, field) is None else getattr(getattr(st, field), part)

    out = {m.key: get(m.stat, "mean") for m in normed}
    out.update({m.norm_key: get(m.norm, "mean") for m in normed})
    out.update({f"{m.key}_ci95": get(m.stat, "ci95") for m in normed})
    out.update({m.key: get(m.stat, "mean") for m in ordered("tb") if not m.norm})
    return out


_METRICS = _hparams_metrics()

#: A session's hyperparameters and the metric tags it logged.
Session = tuple[dict[str, Any], list[str]]


def _metric_order(tag: str) -> tuple[int, str]:
    """Where ``tag`` (``<prefix>/<metric>``) goes among the table's columns: by
    :data:`_METRICS`, then by prefix; unknown metrics last."""
    prefix, _, metric = tag.rpartition("/")
    names = list(_METRICS)
    rank = names.index(metric) if metric in names else len(names)
    return rank, prefix


def _seed_table(
    rows: Sequence[RunSummary],
    by_seed: dict[tuple[str, int], RunSummary],
    reference: str,
    egress: bool,
) -> str:
    """A markdown table of a policy's run on every seed, with its JCT over the reference's."""
    head = ["seed", "avg JCT (h)", "cost ($)", "carbon (kg)", f"JCT / {reference}"]
    if egress:
        head.append("egress ($)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ref = by_seed[reference, r.spec.seed]
        cells = [
            str(r.spec.seed),
            f"{r.avg_jct_h:.3f}",
            f"{r.total_cost_usd:,.2f}",
            f"{r.carbon_kg:,.1f}",
            f"{r.avg_jct_h / ref.avg_jct_h:.4f}",
        ]
        if egress:
            cells.append(f"{r.egress_usd:,.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_sweep(
    kind: str,
    scenario: str,
    policies: Sequence[str],
    seeds: Sequence[int],
    out: Path,
    *,
    values: Sequence[float] | None = None,
    knobs: dict[str, Any] | None = None,
    workers: int | RayBackend = 1,
    progress: bool | None = None,
    tensorboard: bool = True,
) -> ExperimentOutcome:
    """One of the paper's sensitivity sweeps (``kind`` in :data:`SWEEPS`): every policy and seed
    at every value; writes ``sweep-{kind}-runs.csv``, ``-summary.csv``, ``.json``, ``.png`` and
    (``tensorboard``) ``tb/sweep-{kind}/<scenario>/<policy>/<knob>=<value>/`` event files: one
    HParams session per policy and value, the knob an hparam, with ``sweep/*`` means over the
    seeds. ``knobs`` are load_scenario keywords applied to every run (``admission``,
    ``ignore_memory``, ``prices``, ``start_hour``, ``egress_usd_per_gb``, ``load``). The
    egress charge is reported at every value when it is on at any (:func:`egress_charged`)."""
    if kind not in SWEEPS:
        raise ValidationError("sweep", kind, f"unknown sweep; choose from: {', '.join(SWEEPS)}")
    knob, default_values, xlabel = SWEEPS[kind]
    vals = list(default_values if values is None else values)
    if not vals:
        raise ValidationError(f"{kind} values", [], "give at least one value")
    key = "workload.n_jobs" if knob == "n_jobs" else knob  # the knob's range (core.limits)
    vals = [check_limit(key, v, field=f"{kind} values", exc=ValidationError) for v in vals]
    if len(set(vals)) != len(vals):
        raise ValidationError(f"{kind} values", vals, "a value is listed twice")
    _check(policies, seeds, scenario, knobs)
    ref = reference_policy(policies)
    _prepare(out)
    specs = [
        spec
        for v in vals
        for spec in expand(
            policies, scenario, seeds, {**(knobs or {}), knob: v}, {"sweep": kind, "value": v}
        )
    ]
    runs = run_all(specs, workers=workers, label=f"sweep {kind}", progress=progress)
    egress = egress_charged(runs)
    faults = faults_configured(runs)
    stats = {
        v: summarise(
            [r for r in runs if r.spec.tag["value"] == v], ref, egress=egress, faults=faults
        )
        for v in vals
    }
    outcome = ExperimentOutcome(ref, dict(stats), runs)
    stem = f"sweep-{kind}"
    outcome.files.append(out / f"{stem}-runs.csv")
    write_csv(outcome.files[-1], [r.row() for r in runs])
    outcome.files.append(out / f"{stem}-summary.csv")
    write_csv(
        outcome.files[-1], [{"sweep": kind, knob: v, **s.row()} for v in vals for s in stats[v]]
    )
    outcome.files.append(out / f"{stem}.json")
    write_json(
        outcome.files[-1],
        {
            "experiment": stem,
            "scenario": scenario,
            "knob": knob,
            "knobs": knobs or {},
            "values": vals,
            "seeds": list(seeds),
            "reference": ref,
            "summary": [{knob: v, **s.row()} for v in vals for s in stats[v]],
            "runs": [r.row() for r in runs],
        },
    )
    series = {p: [next(s for s in stats[v] if s.policy == p) for v in vals] for p in policies}
    try:
        outcome.files.append(
            sweep_chart(
                vals,
                series,
                out / f"{stem}.png",
                xlabel,
                f"sensitivity to {xlabel}: {scenario}, {len(seeds)} seeds",
                ref,
            )
        )
    except BacepipeError as err:
        outcome.warnings.append(str(err))
    if tensorboard:
        # The swept value is an hparam of its own session, not a step: TensorBoard's HParams
        # table and scatter plots then draw each metric against the knob, unsmoothed.
        root = _experiment_dir(out / "tb", stem, scenario)
        _clear_events(out / "tb", root, stem)
        shared = _hparams(stem, scenario, ref, seeds, knobs)
        sessions: list[Session] = []
        written = []
        for v in vals:
            at_v = [r for r in runs if r.spec.tag["value"] == v]
            written.extend(
                _write_sessions(
                    root, stem, "sweep", shared, at_v, stats[v], ref, sessions, (knob, v)
                )
            )
        outcome.files.extend(written)
        outcome.files.append(
            declare_hparams_table(out / "tb", root, sessions, _metric_order, into=written[0].parent)
        )
    return outcome
