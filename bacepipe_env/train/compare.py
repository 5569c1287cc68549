"""Overlay the heuristics on the learned runs in TensorBoard.

    bacepipe train compare --logdir runs/

(from a checkout also ``python -m train.compare ...``, the same command).

The learned runs under ``--logdir`` are the folders with a ``config.json`` written by
``train.learn``, at any depth (``--run-name learned/geopipe/mppo-s0`` nests one). For each
(environment, held-out set) among them this evaluates every heuristic an agent of that
environment can play (:func:`~bacepipe_env.experiments.headroom.env_heuristics`: the waiting
ones too, so the environment's best heuristic is always among them; ``--policies`` chooses
others) once on exactly those episodes, however many learned runs share them, and writes its
``eval/avg_jct_h``,
``eval/total_cost_usd``, ``eval/carbon_kg`` and ``eval/return`` at every step where one of
those runs was evaluated, as a run of its own: ``{logdir}/heuristics/{env}/{policy}``. Each
heuristic run is an HParams session (``algo`` = ``heuristic``) beside the learned runs', and
carries a custom-scalars layout that draws the learned curves and the heuristics' flat lines
on one chart per metric (TensorBoard's Custom Scalars tab). A table of the latest evaluations
is printed and saved as ``{logdir}/comparison.csv``; its last lines put each learned run's
mean JCT against the best heuristic's on the same episodes.

The heuristic runs are written best first (lowest mean JCT), so in TensorBoard's run list,
which is ordered by start time, they follow the learned runs: TensorBoard colours a run by its
place in that list, cycling through 7 colours, so the learned runs and the best heuristics get
distinct colours and only runs 7 or more places apart share one.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from ..envs.agents import agent_env_kwargs, evaluate, make_agent
from ..envs.registration import ENV_IDS
from ..errors import BacepipeError, OneLineParser
from ..experiments.headroom import env_heuristics
from ..experiments.stats import estimate
from ..experiments.summary import write_csv
from ..experiments.tensorboard import Category, Chart, ScalarWriter, run_component
from ..policies.registry import split_policies
from .config import env_slug
from .learn import check_geopipe_id
from .sb3 import load_agent

__all__ = [
    "HEURISTICS",
    "HEURISTICS_DIR",
    "LAYOUT",
    "best_first",
    "compare",
    "evaluate_heuristic",
    "learned_runs",
    "main",
    "standing",
    "write_heuristic",
]

#: The paper's heuristics (the default of ``--policies`` before it became every heuristic of
#: the environment, :func:`~bacepipe_env.experiments.headroom.env_heuristics`).
HEURISTICS = ("bace-pipe", "fcfs", "sjf", "lcf", "ldf", "cr-lcf", "cr-ldf")
_TAGS = ("avg_jct_h", "total_cost_usd", "carbon_kg", "return", "miss_rate")
#: The folder (under ``--logdir``) of the heuristic runs; train.compare owns it.
HEURISTICS_DIR = "heuristics"

#: GeoPipeEnv settings that change what an agent observes but not the episodes a heuristic
#: plays (it reads the queue snapshot and never plays an illegal action), so learned runs that
#: differ only in them share one set of heuristic runs.
_OBSERVATION_ONLY = frozenset(
    {
        "observation",
        "scales",
        "preview",
        "grid_features",
        "fault_features",
        "running_features",
        "render_mode",
        "illegal_action",
    }
)

#: The custom-scalars layout: one chart per metric of the held-out evaluations, each with the
#: learned runs' curves and the heuristics' flat lines (carbon only where it was logged).
LAYOUT = (
    Category(
        "Held-out episodes: learned runs and heuristics",
        (
            Chart("average JCT (h)", (r"^eval/avg_jct_h$",)),
            Chart("electricity cost ($)", (r"^eval/total_cost_usd$",)),
            Chart("carbon (kg CO2e)", (r"^eval/carbon_kg$",)),
            Chart("episode return", (r"^eval/return$",)),
            Chart("deadline miss rate", (r"^eval/miss_rate$",)),
        ),
    ),
)

_Key = tuple[str, str, tuple[int, ...]]  # env id, episode-relevant settings (JSON), seeds


def _layout(logged: list[str]) -> list[Category]:
    """:data:`LAYOUT` without the charts of metrics that were not logged."""
    wanted = {f"^eval/{tag}$" for tag in logged}
    return [
        Category(cat.title, tuple(c for c in cat.charts if set(c.tags) <= wanted), cat.closed)
        for cat in LAYOUT
    ]


def learned_runs(logdir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Runs written by train.learn under ``logdir`` (at any depth, not inside the heuristics'
    folder), with their saved configs."""
    runs = []
    for cfg in sorted(logdir.rglob("config.json")):
        if cfg.relative_to(logdir).parts[0] == HEURISTICS_DIR:
            continue
        data = json.loads(cfg.read_text())
        if "algo" in data and "env_id" in data:
            runs.append((cfg.parent, data))
    return runs


def _eval_steps(run_dir: Path) -> list[int]:
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    if "eval/avg_jct_h" not in acc.Tags()["scalars"]:
        return []
    return sorted({e.step for e in acc.Scalars("eval/avg_jct_h")})


def _episode_settings(env_kwargs: dict[str, Any]) -> str:
    """The settings that decide a heuristic's episodes, as a canonical JSON key."""
    kept = {k: v for k, v in env_kwargs.items() if k not in _OBSERVATION_ONLY}
    return json.dumps(kept, sort_keys=True)


def _env_names(keys: list[_Key]) -> dict[_Key, str]:
    """A short folder per (environment, held-out set): the id's slug (``geopipe``), with the
    held-out seeds (``-s1000000x10``) when sets of one slug differ in them, and a digest of
    the settings when that is still not enough."""
    names: dict[_Key, str] = {}
    for key in keys:
        slug = env_slug(key[0])
        same = [k for k in keys if env_slug(k[0]) == slug]
        names[key] = slug
        if len({k[2] for k in same}) > 1:
            names[key] += f"-s{key[2][0]}x{len(key[2])}"
    for key, name in list(names.items()):
        if list(names.values()).count(name) > 1:
            names[key] = name + "-" + hashlib.sha1(repr(key).encode()).hexdigest()[:4]
    return {k: run_component(v) for k, v in names.items()}


def _clear_heuristics(logdir: Path) -> None:
    """Remove the heuristic runs an earlier compare wrote, so that the folder holds this
    comparison's only (a re-run replaces them instead of doubling every point); also the
    ``heuristic__<policy>__<env>`` folders of the earlier flat layout."""
    old = [*(logdir / HEURISTICS_DIR).rglob("events.out.tfevents.*")]
    for folder in logdir.glob("heuristic__*"):
        if folder.is_dir() and not (folder / "config.json").exists():
            old += folder.glob("events.out.tfevents.*")
    for path in old:
        path.unlink()
    folders = [*(logdir / HEURISTICS_DIR).rglob("*"), *logdir.glob("heuristic__*")]
    for folder in sorted((d for d in folders if d.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


def compare(
    logdir: Path,
    policies: list[str] | None = None,
    env_id: str | None = None,
    seeds: list[int] | None = None,
) -> list[dict[str, Any]]:
    """Write the heuristic runs, once per (environment, held-out set), and return one summary
    row per (environment, held-out set, policy) and per learned run. ``policies`` None: each
    environment's own heuristics (:func:`~bacepipe_env.experiments.headroom.env_heuristics`)."""
    return [row for group in _compare(logdir, policies, env_id, seeds) for row in group]


def _compare(
    logdir: Path, policies: list[str] | None, env_id: str | None, seeds: list[int] | None
) -> list[list[dict[str, Any]]]:
    """:func:`compare`'s rows, one list per (environment, held-out set): its heuristics' rows
    (in the order evaluated), then its learned runs'."""
    groups: dict[_Key, dict[str, Any]] = {}
    for run_dir, data in learned_runs(logdir):
        key = (data["env_id"], _episode_settings(data["env_kwargs"]), tuple(data["eval_seeds"]))
        g = groups.setdefault(key, {"runs": [], "steps": set()})
        g["runs"].append((run_dir, data))
        g["steps"].update(_eval_steps(run_dir))
    if env_id is not None:
        key = (env_id, json.dumps({}), tuple(seeds or range(1_000_000, 1_000_010)))
        groups.setdefault(key, {"runs": [], "steps": {0}})
    _clear_heuristics(logdir)
    names = _env_names(list(groups))
    out = []
    for (gid, kw_json, eval_seeds), group in groups.items():
        env_kwargs = json.loads(kw_json)
        steps = sorted(group["steps"]) or [0]
        evaluated = []
        for policy in env_heuristics(gid) if policies is None else policies:
            placement, values = evaluate_heuristic(gid, policy, env_kwargs, list(eval_seeds))
            evaluated.append((policy, placement, values))
        run = logdir / HEURISTICS_DIR / names[(gid, kw_json, eval_seeds)]
        for policy, placement, values in best_first(evaluated):
            write_heuristic(
                run / run_component(policy), policy, placement, gid, eval_seeds, values, steps
            )
        rows = [
            _heuristic_row(gid, policy, len(eval_seeds), values) for policy, _, values in evaluated
        ]
        for run_dir, data in group["runs"]:
            row = _learned_row(logdir, run_dir, data)
            if row is not None:
                rows.append(row)
        out.append(rows)
    return out


def evaluate_heuristic(
    env_id: str, policy: str, env_kwargs: dict[str, Any], seeds: list[int]
) -> tuple[str, dict[str, list[float]]]:
    """Play the heuristic ``policy`` on the episodes of ``env_id`` (with ``env_kwargs``) reset
    with ``seeds``, in the env its agent needs (its placement, admission, preemption and
    elasticity rules, :func:`~bacepipe_env.envs.agents.agent_env_kwargs`; on an id with
    preempt actions a preemptive heuristic plays its rule itself); returns its placement and
    each tag's per-episode values."""
    preempt = bool({**ENV_IDS.get(env_id, {}), **env_kwargs}.get("preempt_window"))
    agent = make_agent(policy)
    kwargs = {**env_kwargs, **agent_env_kwargs(policy, preempt_actions=preempt)}
    env = gym.make(env_id, **kwargs).unwrapped
    results = evaluate(env, agent, list(seeds))
    return agent.placement, _values(results)


def best_first(
    evaluated: list[tuple[str, str, dict[str, list[float]]]],
) -> list[tuple[str, str, dict[str, list[float]]]]:
    """Heuristics' (policy, placement, values) in the order their runs are written: the lowest
    mean JCT first (ties: the order given), so that the best take the colours right after the
    learned runs' in TensorBoard's run list (see the module docstring)."""
    return sorted(evaluated, key=lambda e: float(np.mean(e[2]["avg_jct_h"])))


def write_heuristic(
    run_dir: Path,
    policy: str,
    placement: str,
    env_id: str,
    eval_seeds: Sequence[int],
    values: dict[str, list[float]],
    steps: Sequence[int],
) -> Path:
    """One heuristic's run: an HParams session, the layout, and its held-out means as flat
    lines at the learned runs' evaluation steps; returns the event file's path."""
    # An environment without carbon figures gets no carbon line (nor chart).
    logged = [t for t in _TAGS if not any(math.isnan(v) for v in values[t])]
    with ScalarWriter(run_dir) as writer:
        hparams: dict[str, str | float] = {
            "algo": "heuristic",
            "policy": policy,
            "env_id": env_id,
            "placement": placement,
            "n_eval": len(eval_seeds),
            "eval_seed": int(eval_seeds[0]),
        }
        writer.add_hparams(hparams)
        writer.add_text(
            "hparams_text",
            "| parameter | value |\n|---|---|\n"
            + "\n".join(f"| {k} | {v} |" for k, v in hparams.items()),
        )
        writer.add_custom_scalars(_layout(logged))
        # The constant at every learned evaluation step: a flat line across the curves.
        for step in steps:
            for tag in logged:
                writer.add_scalar(f"eval/{tag}", float(np.mean(values[tag])), step)
    return writer.path


def _values(results: list[Any]) -> dict[str, list[float]]:
    """Each tag's per-episode values of evaluated episodes (``EpisodeResult``)."""
    return {
        "avg_jct_h": [r.avg_jct_h for r in results],
        "total_cost_usd": [r.total_cost_usd for r in results],
        "carbon_kg": [r.carbon_kg for r in results],
        "return": [r.episode_return for r in results],
        # NaN without deadlines (semantics §15): then neither logged nor charted
        "miss_rate": [r.miss_rate for r in results],
    }


def _heuristic_row(
    env_id: str, policy: str, n_eval: int, values: dict[str, list[float]]
) -> dict[str, Any]:
    """A table row: the means over the held-out episodes of ``values`` (per-episode lists of
    each tag), with 95% CIs; a learned run's row is made the same way."""
    jct, cost = estimate(values["avg_jct_h"]), estimate(values["total_cost_usd"])
    carbon = estimate(values["carbon_kg"])
    return {
        "env_id": env_id,
        "policy": policy,
        "n_eval": n_eval,
        "avg_jct_h": jct.mean,
        "avg_jct_h_ci95": jct.ci95,
        "total_cost_usd": cost.mean,
        "total_cost_usd_ci95": cost.ci95,
        "carbon_kg": carbon.mean,
        "carbon_kg_ci95": carbon.ci95,
        "return": float(np.mean(values["return"])),
    }


def standing(rows: list[dict[str, Any]], complete: bool = True) -> list[str]:
    """One line per learned row of one (environment, held-out set): its mean JCT against the
    best (lowest mean JCT) heuristic row's, the same numbers the table prints.
    ``complete`` False: the heuristics are not all of the environment's, and the line says so."""
    heuristics = [r for r in rows if not r["policy"].startswith("learned:")]
    if not heuristics:
        return []
    best = min(heuristics, key=lambda r: r["avg_jct_h"])  # ties: the earlier row
    which = (
        "the best heuristic here"
        if complete
        else f"the best of the {len(heuristics)} heuristics given"
    )
    return [
        f"learned {r['policy'].removeprefix('learned:')}: {r['avg_jct_h']:.2f} h, "
        f"{r['avg_jct_h'] / best['avg_jct_h']:.3f}x {best['policy']} "
        f"({which}, {best['avg_jct_h']:.2f} h)"
        for r in rows
        if r["policy"].startswith("learned:")
    ]


def _learned_row(logdir: Path, run_dir: Path, data: dict[str, Any]) -> dict[str, Any] | None:
    """The run's final model on the held-out set, per episode (so with a CI), or None when
    the run has not saved a model yet; named ``learned:<run folder under logdir>``."""
    model = run_dir / "model.zip"
    if not model.is_file():
        return None
    agent = load_agent(f"{data['algo']}:{model}")
    env = gym.make(data["env_id"], **data["env_kwargs"]).unwrapped
    results = evaluate(env, agent, list(data["eval_seeds"]))
    values = _values(results)
    name = f"learned:{run_dir.relative_to(logdir).as_posix()}"
    return _heuristic_row(data["env_id"], name, len(results), values)


def main(argv: list[str] | None = None, prog: str = "python -m train.compare") -> int:
    """Command-line entry point (``bacepipe train compare``, ``python -m train.compare``)."""
    parser = OneLineParser(prog=prog, description=__doc__)
    parser.add_argument("--logdir", default="runs", help="folder of train.learn runs")
    parser.add_argument(
        "--policies",
        default=None,
        help="comma-separated heuristic policies (default: every heuristic an agent of the "
        "environment can play, waiting ones included; `bacepipe headroom` uses the same)",
    )
    parser.add_argument(
        "--env-id", default=None, help="also evaluate on this id when no learned run uses it"
    )
    args = parser.parse_args(argv)
    logdir = Path(args.logdir)
    policies = None if args.policies is None else split_policies(args.policies)
    try:
        for p in policies or []:
            make_agent(p)
        if args.env_id is not None:
            check_geopipe_id(args.env_id)
    except BacepipeError as err:
        parser.exit(2, f"{parser.prog}: error: {err}\n")
    if not learned_runs(logdir) and args.env_id is None:
        parser.exit(
            2,
            f"{parser.prog}: error: no train.learn runs under {logdir}; "
            "train first or give --env-id\n",
        )
    groups = _compare(logdir, policies, args.env_id, None)
    rows = [row for group in groups for row in group]
    out = logdir / "comparison.csv"
    write_csv(out, rows)
    width = max(len(r["policy"]) for r in rows)
    for r in rows:
        ci = "" if math.isnan(r["avg_jct_h_ci95"]) else f" ± {r['avg_jct_h_ci95']:.2f}"
        print(
            f"{r['env_id']:32s} {r['policy']:{width}s}  avg JCT {r['avg_jct_h']:8.2f} h{ci}"
            f"  cost ${r['total_cost_usd']:10,.2f}  carbon {r['carbon_kg']:10,.1f} kg"
            f"  return {r['return']:8.4f}"
        )
    print(f"\nwrote {out}\nTensorBoard: tensorboard --logdir {logdir}")
    lines = []
    for group in groups:
        env = group[0]["env_id"]
        complete = policies is None or set(env_heuristics(env)) <= set(policies)
        lines += standing(group, complete)
    if lines:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
