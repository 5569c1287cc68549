"""The learned orderers' evidence: train, evaluate on held-out episodes, tabulate, ship.

    python benchmarks/learned.py train                # every recipe x training seed
    python benchmarks/learned.py evaluate             # heuristics and models, held-out set
    python benchmarks/learned.py table                # learned.json -> docs/learned.md's table
    python benchmarks/learned.py ship                 # the pretrained agents of the package
    make learned                                      # all four, in that order

``train`` runs ``bacepipe train learn`` once per (recipe, seed) into
``benchmarks/results/learned/<env slug>/<recipe>-<seed>/`` (config.json with the wall time,
eval.csv, progress.csv, the TensorBoard events and model.zip; checkpoints are dropped). The
training runs' own evaluations (``eval.csv``) use reset seeds 1,000,000 + i; the held-out set
of ``evaluate`` starts at :data:`HELD_OUT` (2,000,000), so nothing reported was used to pick
or tune a model.

``evaluate`` plays every non-preemptive heuristic that can act as an agent (the 15 of
``bacepipe policies`` without the oracle and the preemptive ones, waiting heuristics included)
and every trained model on the same :data:`EPISODES` held-out episodes per env with
``bacepipe_env.experiments.evaluate``, and writes
``benchmarks/results/learned/<env slug>/heldout.json``; ``table`` merges them into
``benchmarks/results/learned.json`` (one row per policy, training seed and episode) and
writes the results table (interquartile mean and mean with 95% bootstrap intervals, the
paired JCT ratio to the env's best heuristic, training wall time) into docs/learned.md
between its ``learned-table`` markers. ``ship`` copies, per env, the model of the best recipe
whose *training-time* evaluation was best into ``bacepipe_env/pretrained``.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bacepipe_env import __version__  # noqa: E402
from bacepipe_env.envs.agents import AGENT_PLACEMENTS  # noqa: E402
from bacepipe_env.envs.registration import env_slug  # noqa: E402
from bacepipe_env.experiments.evaluate import evaluate_policies  # noqa: E402
from bacepipe_env.experiments.progress import Progress  # noqa: E402
from bacepipe_env.experiments.stats import bootstrap_ci, paired_ratio_ci  # noqa: E402
from bacepipe_env.learned import pretrained_dir  # noqa: E402
from bacepipe_env.policies.registry import policy_info  # noqa: E402
from bacepipe_env.signals import worker_pool  # noqa: E402
from benchmarks.tables import splice  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "learned"
LEARNED_JSON = ROOT / "benchmarks" / "results" / "learned.json"
DOCS = ROOT / "docs" / "learned.md"  # the results table, between its learned-table markers
HELD_OUT = 2_000_000  # first held-out reset seed (training evaluations use 1,000,000 + i)
EPISODES = 200  # held-out episodes per env
SEEDS = (0, 1, 2)  # training seeds per recipe
N_BOOT = 2000
#: The heuristics the learned orderers are judged against: every agent of the world they play,
#: where no job is preempted (the preemptive heuristics are measured in docs/preemption.md).
HEURISTICS = [n for n in AGENT_PLACEMENTS if policy_info(n).preemption is None]

#: Recipe name -> env id -> (``bacepipe train learn`` flags besides seed and folders,
#: GeoPipeEnv overrides besides :data:`ENV_KWARGS`). Budgets fit one working session of this
#: 2-core machine (the pilots' JCT stopped improving after 30-60k steps on GeoPipe-v2 and
#: Random-v2); the slot policy trains at 200-400 steps/s on those, and on Online-v1 about 45
#: with its full 500-slot window, hence a 64-job window there.
RECIPES: dict[str, dict[str, tuple[list[str], dict[str, Any]]]] = {
    "slot": {
        "bacepipe_env/GeoPipe-v2": (["--total-timesteps", "60000", "--eval-freq", "10000"], {}),
        "bacepipe_env/GeoPipe-Random-v2": (
            ["--total-timesteps", "100000", "--eval-freq", "10000"],
            {},
        ),
        # Fig. 1's two jobs: every episode is the same scenario, so 10k steps are plenty
        "bacepipe_env/GeoPipe-Fig1-v2": (["--total-timesteps", "10000", "--eval-freq", "2000"], {}),
        # The window is the first 64 pending jobs in submission order (the id shows all 500):
        # 8x less work per PPO update; the episodes are the id's own. No wait action: with it,
        # the first seed's policy learned to wait and its held-out JCT went from 93 h to
        # 2,534 h at 10k steps (1,172 h at 40k), and no waiting heuristic beats the greedy
        # ones on this env, so the recipe orders only (greedy admission).
        "bacepipe_env/GeoPipe-Online-v1": (
            ["--total-timesteps", "40000", "--eval-freq", "10000", "--n-eval", "5"],
            {"max_queue": 64, "allow_wait": False},
        ),
    },
}
#: Flags every recipe shares: the slot policy on MaskablePPO, two worker processes.
COMMON = ["--policy", "slot", "--n-envs", "2", "--n-eval", "20", "--no-progress"]
#: Overrides every recipe shares: a reward that weighs cost 0.1 (not the default 0.25): the
#: goal is JCT at no more than 1.05x the best heuristic's cost, and at 0.25 the pilots came out
#: 4-7% cheaper than it and no faster.
ENV_KWARGS: dict[str, Any] = {"reward": {"cost_weight": 0.1}}


def _run_dirs(env_id: str) -> list[tuple[str, int, Path]]:
    """(recipe, seed, folder) of every finished training run of ``env_id``."""
    out = []
    for recipe, envs in RECIPES.items():
        if env_id not in envs:
            continue
        for seed in SEEDS:
            folder = RESULTS / env_slug(env_id) / f"{recipe}-{seed}"
            if (folder / "model.zip").is_file():
                out.append((recipe, seed, folder))
    return out


def train(env_ids: list[str], force: bool) -> None:
    """Train every (recipe, seed) of ``env_ids`` that has no model yet (or all, ``force``)."""
    for recipe, envs in RECIPES.items():
        for env_id in env_ids:
            if env_id not in envs:
                continue
            for seed in SEEDS:
                folder = RESULTS / env_slug(env_id) / f"{recipe}-{seed}"
                if (folder / "model.zip").is_file() and not force:
                    print(f"{folder.relative_to(ROOT)}: trained already")
                    continue
                if folder.exists():
                    shutil.rmtree(folder)
                cmd = [
                    sys.executable,
                    "-m",
                    "bacepipe_env.cli",
                    "train",
                    "learn",
                    "--env-id",
                    env_id,
                    "--seed",
                    str(seed),
                    *COMMON,
                    *envs[env_id][0],
                    "--env-kwargs",
                    json.dumps({**ENV_KWARGS, **envs[env_id][1]}),
                    "--logdir",
                    str(folder.parent),
                    "--run-name",
                    folder.name,
                ]
                print(" ".join(cmd[2:]), flush=True)
                subprocess.run(cmd, check=True, cwd=ROOT)
                shutil.rmtree(folder / "checkpoints", ignore_errors=True)


def _play(env_id: str, policies: list[str], episodes: int) -> tuple[list[dict[str, Any]], float]:
    """Rows of ``policies`` on the held-out episodes of ``env_id``, and the wall time (s)."""
    start = time.perf_counter()
    with Progress(len(policies) * episodes, "episodes", env_slug(env_id)) as bar:
        report = evaluate_policies(env_id, policies, episodes, HELD_OUT, progress=bar)
    return report.rows(), time.perf_counter() - start


def evaluate(env_ids: list[str], episodes: int, heuristics_only: bool, workers: int) -> None:
    """Every heuristic and every trained model of each env on its held-out episodes. The
    heuristics' rows are kept in ``heuristics.json`` and reused while the episode count is
    the same (they do not depend on any model): ``--heuristics-only`` computes just them."""
    for env_id in env_ids:
        folder = RESULTS / env_slug(env_id)
        folder.mkdir(parents=True, exist_ok=True)
        cache = folder / "heuristics.json"
        data = json.loads(cache.read_text()) if cache.is_file() else {}
        if data.get("episodes") != episodes:
            rows, wall = _play(env_id, HEURISTICS, episodes)
            data = {"env_id": env_id, "episodes": episodes, "eval_wall_s": wall, "rows": rows}
            cache.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
        if heuristics_only:
            print(f"{cache.relative_to(ROOT)}: {len(data['rows'])} rows")
            continue
        runs = _run_dirs(env_id)
        specs = [f"maskable_ppo:{run / 'model.zip'}" for _, _, run in runs]
        start = time.perf_counter()
        with worker_pool(workers) as pool:  # one model per process
            jobs = [pool.submit(_play, env_id, [spec], episodes) for spec in specs]
            learned = [row for job in jobs for row in job.result()[0]]
        wall = time.perf_counter() - start
        shown = {f"learned:{run.name}": (recipe, seed) for recipe, seed, run in runs}
        for row in learned:  # learned:<recipe>, its seed in train_seed
            recipe, seed = shown[row["policy"]]
            row.update(policy=f"learned:{recipe}", train_seed=seed)
        rows = data["rows"] + learned
        out = folder / "heldout.json"
        payload = {
            "env_id": env_id,
            "episodes": episodes,
            "eval_wall_s": data["eval_wall_s"] + wall,
            "rows": rows,
        }
        out.write_text(json.dumps(payload, indent=1, allow_nan=False) + "\n")
        print(f"{out.relative_to(ROOT)}: {len(rows)} rows")


def _table(rows: list[dict[str, Any]], policy: str, key: str) -> np.ndarray:
    """A (training seed, episode) array of ``key`` for ``policy`` (one row for a heuristic),
    episodes in seed order."""
    mine = [r for r in rows if r["policy"] == policy]
    seeds = sorted({r["train_seed"] for r in mine}, key=lambda s: -1 if s is None else s)
    return np.array(
        [
            [r[key] for r in sorted(mine, key=lambda r: r["episode_seed"]) if r["train_seed"] == s]
            for s in seeds
        ],
        dtype=np.float64,
    )


def _wall_h(env_id: str, recipe: str) -> float | None:
    """Mean training wall time (h) of the recipe's runs on ``env_id``."""
    walls = []
    for r, _, folder in _run_dirs(env_id):
        if r == recipe:
            walls.append(json.loads((folder / "config.json").read_text())["wall_time_s"])
    return float(np.mean(walls)) / 3600.0 if walls else None


def summarise(env_id: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary per policy of ``env_id``: IQM and mean JCT with bootstrap intervals, mean
    cost, and the paired ratios to the best heuristic (by mean JCT) over the same episodes."""
    names = list(dict.fromkeys(r["policy"] for r in rows))
    jct = {n: _table(rows, n, "avg_jct_h") for n in names}
    cost = {n: _table(rows, n, "total_cost_usd") for n in names}
    heuristics = [n for n in names if not n.startswith("learned:")]
    best = min(heuristics, key=lambda n: float(jct[n].mean()))
    ref_jct, ref_cost = jct[best][0], cost[best][0]
    out = []
    for n in names:
        i, ilo, ihi = bootstrap_ci(jct[n], "iqm", N_BOOT)
        m, mlo, mhi = bootstrap_ci(jct[n], "mean", N_BOOT)
        r, rlo, rhi = paired_ratio_ci(jct[n], ref_jct, N_BOOT)
        c = paired_ratio_ci(cost[n], ref_cost, N_BOOT)
        recipe = n.split(":", 1)[1] if n.startswith("learned:") else None
        out.append(
            {
                "env_id": env_id,
                "policy": n,
                "train_seeds": int(jct[n].shape[0]) if recipe else 0,
                "episodes": int(jct[n].shape[1]),
                "iqm_jct_h": [i, ilo, ihi],
                "mean_jct_h": [m, mlo, mhi],
                "mean_cost_usd": float(cost[n].mean()),
                "best_heuristic": best,
                "jct_ratio": [r, rlo, rhi],
                "cost_ratio": list(c),
                "train_wall_h": _wall_h(env_id, recipe) if recipe else None,
            }
        )
    return out


def _fmt_ci(v: list[float], digits: int) -> str:
    return f"{v[0]:,.{digits}f} [{v[1]:,.{digits}f}, {v[2]:,.{digits}f}]"


def markdown(summaries: list[dict[str, Any]]) -> str:
    """The results table: per env the best heuristic, the strongest baselines and every
    learned recipe (all policies are in learned.json)."""
    lines = [
        "| env | policy | IQM JCT h [95% CI] | mean JCT h [95% CI] | mean cost $ "
        "| JCT / best heuristic [95% CI] | cost / best heuristic | training |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for env_id in dict.fromkeys(s["env_id"] for s in summaries):
        mine = [s for s in summaries if s["env_id"] == env_id]
        best = mine[0]["best_heuristic"]
        shown = [s for s in mine if s["policy"] in (best, "bace-pipe", "sjf", "fcfs")]
        shown += [s for s in mine if s["policy"].startswith("learned:")]
        shown.sort(key=lambda s: s["mean_jct_h"][0])
        for s in shown:
            name = f"**{s['policy']}** (best heuristic)" if s["policy"] == best else s["policy"]
            if s["train_seeds"]:
                name += f", {s['train_seeds']} seeds"
            wall = s["train_wall_h"]
            lines.append(
                f"| {env_slug(env_id)} | {name} | {_fmt_ci(s['iqm_jct_h'], 1)} "
                f"| {_fmt_ci(s['mean_jct_h'], 1)} | {s['mean_cost_usd']:,.0f} "
                f"| {_fmt_ci(s['jct_ratio'], 3)} | {s['cost_ratio'][0]:.3f} "
                f"| {'' if wall is None else f'{wall * 60:.0f} min'} |"
            )
    n = summaries[0]["episodes"] if summaries else 0
    lines.append("")
    lines.append(
        f"{n} held-out episodes per env (reset seeds {HELD_OUT:,} + i), the same for every "
        "policy; a learned recipe pools its training seeds. IQM: the interquartile mean. "
        f"Intervals: 95% percentile bootstrap ({N_BOOT:,} resamples of episodes and seeds); "
        "ratios are of means over the same episodes. Training: mean wall time per run on 2 "
        "CPU cores. Regenerate: `make learned` (or `python benchmarks/learned.py table` from "
        "the committed runs)."
    )
    return "\n".join(lines) + "\n"


def table() -> None:
    """Merge the held-out files into learned.json and write the tables."""
    rows: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    walls = {}
    for path in sorted(RESULTS.glob("*/heldout.json")):
        data = json.loads(path.read_text())
        rows += data["rows"]
        summaries += summarise(data["env_id"], data["rows"])
        walls[data["env_id"]] = data["eval_wall_s"]
    meta = {
        "command": "python benchmarks/learned.py train && ... evaluate && ... table",
        "held_out_first_seed": HELD_OUT,
        "bootstrap_resamples": N_BOOT,
        "recipes": {
            r: {
                e: {"flags": COMMON + f, "env_kwargs": {**ENV_KWARGS, **kw}}
                for e, (f, kw) in envs.items()
            }
            for r, envs in RECIPES.items()
        },
        "eval_wall_s": walls,
        "versions": {"python": platform.python_version(), "bacepipe_env": __version__},
    }
    payload = {"meta": meta, "summary": summaries, "rows": rows}
    LEARNED_JSON.write_text(json.dumps(payload, indent=1, allow_nan=False) + "\n")
    text = markdown(summaries)
    splice(DOCS, "learned-table", text)
    print(text)


def ship() -> None:
    """Per env, the model of the run whose training-time evaluation (eval.csv's last row,
    reset seeds 1,000,000 + i, never the held-out set) was best, into the package."""
    folder = pretrained_dir()
    folder.mkdir(exist_ok=True)
    env_ids = sorted({e for envs in RECIPES.values() for e in envs})
    for env_id in env_ids:
        runs = _run_dirs(env_id)
        if not runs:
            continue

        def last_eval(run: tuple[str, int, Path]) -> float:
            lines = (run[2] / "eval.csv").read_text().strip().splitlines()
            header, last = lines[0].split(","), lines[-1].split(",")
            value = float(last[header.index("avg_jct_h")])
            return value if math.isfinite(value) else math.inf

        recipe, seed, best = min(runs, key=last_eval)
        slug = env_slug(env_id)
        shutil.copyfile(best / "model.zip", folder / f"{slug}.zip")
        config = json.loads((best / "config.json").read_text())
        config["source"] = str(best.relative_to(ROOT))
        (folder / f"{slug}.json").write_text(json.dumps(config, indent=2) + "\n")
        print(f"{slug}: {recipe} seed {seed} ({best.relative_to(ROOT)})")


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", choices=("train", "evaluate", "table", "ship"))
    all_envs = [e for envs in RECIPES.values() for e in envs]  # the order they train in
    parser.add_argument(
        "--envs",
        default=",".join(all_envs),
        help="comma-separated env ids (default: every recipe's)",
    )
    parser.add_argument("--episodes", type=int, default=EPISODES)
    parser.add_argument("--force", action="store_true", help="train again over finished runs")
    parser.add_argument(
        "--heuristics-only", action="store_true", help="evaluate: only the heuristics"
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="evaluate: models played at once (processes)"
    )
    args = parser.parse_args()
    env_ids = [e.strip() for e in args.envs.split(",") if e.strip()]
    unknown = [e for e in env_ids if e not in all_envs]
    if unknown:
        parser.error(f"no recipe for {', '.join(unknown)}; choose from {', '.join(all_envs)}")
    if args.stage == "train":
        train(env_ids, args.force)
    elif args.stage == "evaluate":
        evaluate(env_ids, args.episodes, args.heuristics_only, args.workers)
    elif args.stage == "table":
        table()
    else:
        ship()


if __name__ == "__main__":
    main()
