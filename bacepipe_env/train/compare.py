"""Overlay the heuristics on the learned runs in TensorBoard.

    bacepipe train compare --logdir runs/

(from a checkout also ``python -m train.compare ...``, the same command).

For every learned run under ``--logdir`` (a folder with a ``config.json`` written by
``train.learn``) this evaluates each heuristic policy on the *same* held-out set (environment
id, settings and reset seeds) and writes its ``eval/avg_jct_h``, ``eval/total_cost_usd`` and
``eval/return`` at the training steps where the learned run was evaluated, as a run of its
own: ``{logdir}/heuristic__{policy}__{env}``. ``tensorboard --logdir runs/`` then draws the
heuristics as flat lines through the learning curves. Hyperparameters go in as text and as
TensorBoard hparams. A table of the latest evaluations is printed and saved as
``{logdir}/comparison.csv``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import summary_v2 as hp_summary

from ..envs.agents import evaluate, make_agent
from ..errors import BacepipeError
from ..experiments.stats import estimate
from ..experiments.tensorboard import ScalarWriter
from .sb3 import load_agent

__all__ = ["HEURISTICS", "compare", "learned_runs", "main"]

HEURISTICS = ("bace-pipe", "fcfs", "sjf", "lcf", "ldf", "cr-lcf", "cr-ldf")
_TAGS = ("avg_jct_h", "total_cost_usd", "carbon_kg", "return")


def learned_runs(logdir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Runs written by train.learn under ``logdir``, with their saved configs."""
    runs = []
    for cfg in sorted(logdir.glob("*/config.json")):
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


def _env_tag(env_id: str) -> str:
    return env_id.split("/")[-1].removesuffix("-v1").lower()


def compare(
    logdir: Path, policies: list[str], env_id: str | None = None, seeds: list[int] | None = None
) -> list[dict[str, Any]]:
    """Write the heuristic runs and return one summary row per (environment, policy)."""
    groups: dict[tuple[str, str, tuple[int, ...]], dict[str, Any]] = {}
    for run_dir, data in learned_runs(logdir):
        key = (
            data["env_id"],
            json.dumps(data["env_kwargs"], sort_keys=True),
            tuple(data["eval_seeds"]),
        )
        g = groups.setdefault(key, {"runs": [], "steps": set()})
        g["runs"].append((run_dir, data))
        g["steps"].update(_eval_steps(run_dir))
    if env_id is not None:
        key = (env_id, json.dumps({}), tuple(seeds or range(1_000_000, 1_000_010)))
        groups.setdefault(key, {"runs": [], "steps": {0}})
    rows = []
    tags = [_env_tag(gid) for gid, _, _ in groups]
    for (gid, kw_json, eval_seeds), group in groups.items():
        # Runs of one environment with different settings or held-out sets get their own
        # heuristic runs, named apart, instead of overwriting each other.
        env_tag = _env_tag(gid)
        if tags.count(env_tag) > 1:
            env_tag += f"__eval{eval_seeds[0]}x{len(eval_seeds)}"
            same = [k for k in groups if _env_tag(k[0]) == _env_tag(gid) and k[2] == eval_seeds]
            if len(same) > 1:
                env_tag += f"__settings{same.index((gid, kw_json, eval_seeds))}"
        env_kwargs = json.loads(kw_json)
        steps = sorted(group["steps"]) or [0]
        for policy in policies:
            agent = make_agent(policy)
            kwargs = {**env_kwargs, **agent.env_kwargs}  # its placement (and admission rule)
            env = gym.make(gid, **kwargs).unwrapped
            results = evaluate(env, agent, list(eval_seeds))
            values = {
                "avg_jct_h": [r.avg_jct_h for r in results],
                "total_cost_usd": [r.total_cost_usd for r in results],
                "carbon_kg": [r.carbon_kg for r in results],
                "return": [r.episode_return for r in results],
            }
            run = logdir / f"heuristic__{policy}__{env_tag}"
            for old in run.glob("events.out.tfevents.*"):
                old.unlink()
            with ScalarWriter(run) as writer:
                hparams = {
                    "policy": policy,
                    "env_id": gid,
                    "placement": agent.placement,
                    "n_eval": len(eval_seeds),
                    "eval_seed": int(eval_seeds[0]),
                }
                writer.add_summary(hp_summary.hparams_pb(hparams).SerializeToString())
                writer.add_text(
                    "hparams_text",
                    "| parameter | value |\n|---|---|\n"
                    + "\n".join(f"| {k} | {v} |" for k, v in hparams.items()),
                )
                for step in steps:
                    for tag in _TAGS:
                        writer.add_scalar(f"eval/{tag}", float(np.mean(values[tag])), step)
            jct, cost = estimate(values["avg_jct_h"]), estimate(values["total_cost_usd"])
            carbon = estimate(values["carbon_kg"])
            rows.append(
                {
                    "env_id": gid,
                    "policy": policy,
                    "n_eval": len(eval_seeds),
                    "avg_jct_h": jct.mean,
                    "avg_jct_h_ci95": jct.ci95,
                    "total_cost_usd": cost.mean,
                    "total_cost_usd_ci95": cost.ci95,
                    "carbon_kg": carbon.mean,
                    "carbon_kg_ci95": carbon.ci95,
                    "return": float(np.mean(values["return"])),
                }
            )
        for run_dir, data in group["runs"]:
            row = _learned_row(run_dir, data)
            if row is not None:
                rows.append(row)
    return rows


def _learned_row(run_dir: Path, data: dict[str, Any]) -> dict[str, Any] | None:
    """The run's final model on the held-out set, per episode (so with a CI), or None when
    the run has not saved a model yet."""
    model = run_dir / "model.zip"
    if not model.is_file():
        return None
    agent = load_agent(f"{data['algo']}:{model}")
    env = gym.make(data["env_id"], **data["env_kwargs"]).unwrapped
    results = evaluate(env, agent, list(data["eval_seeds"]))
    jct = estimate([r.avg_jct_h for r in results])
    cost = estimate([r.total_cost_usd for r in results])
    carbon = estimate([r.carbon_kg for r in results])
    return {
        "env_id": data["env_id"],
        "policy": f"learned:{run_dir.name}",
        "n_eval": len(results),
        "avg_jct_h": jct.mean,
        "avg_jct_h_ci95": jct.ci95,
        "total_cost_usd": cost.mean,
        "total_cost_usd_ci95": cost.ci95,
        "carbon_kg": carbon.mean,
        "carbon_kg_ci95": carbon.ci95,
        "return": float(np.mean([r.episode_return for r in results])),
    }


def main(argv: list[str] | None = None, prog: str = "python -m train.compare") -> int:
    """Command-line entry point (``bacepipe train compare``, ``python -m train.compare``)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument("--logdir", default="runs", help="folder of train.learn runs")
    parser.add_argument(
        "--policies", default=",".join(HEURISTICS), help="comma-separated heuristic policies"
    )
    parser.add_argument(
        "--env-id", default=None, help="also evaluate on this id when no learned run uses it"
    )
    args = parser.parse_args(argv)
    logdir = Path(args.logdir)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    try:
        for p in policies:
            make_agent(p)
    except BacepipeError as err:
        parser.exit(2, f"{parser.prog}: error: {err}\n")
    if not learned_runs(logdir) and args.env_id is None:
        parser.exit(
            2,
            f"{parser.prog}: error: no train.learn runs under {logdir}; "
            "train first or give --env-id\n",
        )
    rows = compare(logdir, policies, args.env_id)
    out = logdir / "comparison.csv"
    with open(out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    width = max(len(r["policy"]) for r in rows)
    for r in rows:
        ci = "" if math.isnan(r["avg_jct_h_ci95"]) else f" ± {r['avg_jct_h_ci95']:.2f}"
        print(
            f"{r['env_id']:32s} {r['policy']:{width}s}  avg JCT {r['avg_jct_h']:8.2f} h{ci}"
            f"  cost ${r['total_cost_usd']:10,.2f}  carbon {r['carbon_kg']:10,.1f} kg"
            f"  return {r['return']:8.4f}"
        )
    print(f"\nwrote {out}\nTensorBoard: tensorboard --logdir {logdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
