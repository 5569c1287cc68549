"""The paper's experiments: Fig. 4 (compare), Figs. 5-7 (sweeps) and Fig. 8 (ablation).

Each runs registered policies on the same seeds, summarises them against BACE-Pipe (or the
first policy when BACE-Pipe is not among them) and writes CSV, JSON and PNG files; ``compare``
also writes TensorBoard scalars, one run per policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.validate import require_float, require_int
from ..errors import BacepipeError, ValidationError
from ..learned import is_learned, load_learned
from ..policies.registry import policy_info
from ..scenarios.loader import load_scenario
from .plots import bar_chart, sweep_chart
from .runner import RunSummary, expand, run_all
from .summary import (
    PolicyStats,
    egress_charged,
    faults_configured,
    summarise,
    write_csv,
    write_json,
)
from .tensorboard import ScalarWriter

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
    workers: int = 1,
    progress: bool | None = None,
    tensorboard: bool = True,
) -> ExperimentOutcome:
    """Run ``policies`` x ``seeds`` on ``scenario``; write ``{name}-runs.csv``,
    ``{name}-summary.csv``, ``{name}.json``, ``{name}.png`` and (``tensorboard``)
    ``tb/<policy>/`` event files with ``{name}/*`` scalars at step = seed. Running again into
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
        files.extend(_write_tensorboard(out / "tb", name, runs, ref, egress=egress))
    return outcome


def _write_tensorboard(
    tb_dir: Path, name: str, runs: Sequence[RunSummary], reference: str, *, egress: bool = False
) -> list[Path]:
    """Per policy, one run of ``{name}/*`` scalars at step = seed: average JCT, cost and
    carbon, absolute and over the reference's on the same seed, and (``egress``) the egress
    charge."""
    ref = {r.spec.seed: r for r in runs if r.spec.policy == reference}
    written = []
    for policy in dict.fromkeys(r.spec.policy for r in runs):
        # A re-run replaces this experiment's earlier events instead of doubling every point.
        run_dir = tb_dir / _run_name(policy)
        for old in run_dir.glob(f"events.out.tfevents.*.{name}"):
            old.unlink()
        with ScalarWriter(run_dir, suffix=f".{name}") as writer:
            about = "learned model" if is_learned(policy) else policy_info(policy).description
            writer.add_text(f"{name}/policy", f"**{policy}**: {about}")
            for r in sorted(
                (r for r in runs if r.spec.policy == policy), key=lambda r: r.spec.seed
            ):
                s = r.spec.seed
                writer.add_scalar(f"{name}/avg_jct_h", r.avg_jct_h, s)
                writer.add_scalar(f"{name}/total_cost_usd", r.total_cost_usd, s)
                writer.add_scalar(f"{name}/avg_jct_norm", r.avg_jct_h / ref[s].avg_jct_h, s)
                writer.add_scalar(
                    f"{name}/total_cost_norm", r.total_cost_usd / ref[s].total_cost_usd, s
                )
                writer.add_scalar(f"{name}/carbon_kg", r.carbon_kg, s)
                if ref[s].carbon_kg > 0:  # a scenario without carbon figures has no ratio
                    writer.add_scalar(f"{name}/carbon_norm", r.carbon_kg / ref[s].carbon_kg, s)
                if egress:
                    writer.add_scalar(f"{name}/egress_usd", r.egress_usd, s)
            written.append(writer.path)
    return written


def _run_name(policy: str) -> str:
    """A TensorBoard run folder for a policy; ``ppo:runs/x/model.zip`` -> ``ppo-runs-x-model``."""
    if not is_learned(policy):
        return policy
    algo, path = policy.split(":", 1)
    stem = Path(path).with_suffix("").as_posix().strip("/").replace("/", "-")
    return f"{algo}-{stem}"


def run_sweep(
    kind: str,
    scenario: str,
    policies: Sequence[str],
    seeds: Sequence[int],
    out: Path,
    *,
    values: Sequence[float] | None = None,
    knobs: dict[str, Any] | None = None,
    workers: int = 1,
    progress: bool | None = None,
) -> ExperimentOutcome:
    """One of the paper's sensitivity sweeps (``kind`` in :data:`SWEEPS`): every policy and seed
    at every value; writes ``sweep-{kind}-runs.csv``, ``-summary.csv``, ``.json`` and ``.png``.
    ``knobs`` are load_scenario keywords applied to every run (``admission``,
    ``ignore_memory``, ``prices``, ``start_hour``, ``egress_usd_per_gb``, ``load``). The
    egress charge is reported at every value when it is on at any (:func:`egress_charged`)."""
    if kind not in SWEEPS:
        raise ValidationError("sweep", kind, f"unknown sweep; choose from: {', '.join(SWEEPS)}")
    knob, default_values, xlabel = SWEEPS[kind]
    vals = list(default_values if values is None else values)
    if not vals:
        raise ValidationError(f"{kind} values", [], "give at least one value")
    if knob == "n_jobs":
        vals = [require_int("jobs", v, minimum=1, exc=ValidationError) for v in vals]
    else:
        vals = [require_float(kind, v, positive=True, exc=ValidationError) for v in vals]
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
    return outcome
