"""Paired held-out comparison of train.learn runs against heuristics.

For every run under ``--logdir``, plays its saved model and each heuristic on the run's own
held-out seeds and prints, per heuristic, the per-episode ratio learned / heuristic of the
average JCT (mean and 95% t-interval over episodes) with the wins, ties and losses, and the
same ratio for cost. Writes the rows to ``--csv``.

Run from a checkout: ``python -m benchmarks.paired_eval --logdir runs --csv paired.csv``
(needs the ``train`` extra).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import gymnasium as gym

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs.agents import evaluate, make_agent
from bacepipe_env.experiments.stats import estimate
from bacepipe_env.train.compare import learned_runs
from bacepipe_env.train.sb3 import load_agent

HEURISTICS = ("bace-pipe", "fcfs", "sjf", "lcf", "ldf", "cr-lcf", "cr-ldf")


def main() -> None:
    """Print and write the paired comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", default="runs", help="folder of train.learn runs")
    parser.add_argument("--csv", default=None, help="also write the rows to this CSV file")
    args = parser.parse_args()
    rows = []
    for run_dir, data in learned_runs(Path(args.logdir)):
        seeds = list(data["eval_seeds"])
        agent = load_agent(f"{data['algo']}:{run_dir / 'model.zip'}")
        env = gym.make(data["env_id"], **data["env_kwargs"]).unwrapped
        learned = evaluate(env, agent, seeds)
        for name in HEURISTICS:
            heuristic = make_agent(name)
            kwargs = {**data["env_kwargs"], "placement": heuristic.placement}
            other = evaluate(gym.make(data["env_id"], **kwargs).unwrapped, heuristic, seeds)
            jct = [a.avg_jct_h / b.avg_jct_h for a, b in zip(learned, other)]
            cost = [a.total_cost_usd / b.total_cost_usd for a, b in zip(learned, other)]
            j, c = estimate(jct), estimate(cost)
            wins = sum(r < 1.0 for r in jct)
            ties = sum(r == 1.0 for r in jct)
            row = {
                "env_id": data["env_id"],
                "run": run_dir.name,
                "against": name,
                "n_eval": len(seeds),
                "jct_ratio": j.mean,
                "jct_ratio_ci95": j.ci95,
                "cost_ratio": c.mean,
                "cost_ratio_ci95": c.ci95,
                "wins": wins,
                "ties": ties,
                "losses": len(seeds) - wins - ties,
            }
            rows.append(row)
            print(
                f"{data['env_id']:32s} {run_dir.name} vs {name:10s} JCT ratio "
                f"{j.mean:.3f} ± {j.ci95:.3f}  cost ratio {c.mean:.3f} ± {c.ci95:.3f}  "
                f"{wins}/{row['ties']}/{row['losses']} (win/tie/loss)"
            )
    if args.csv and rows:
        with open(args.csv, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
