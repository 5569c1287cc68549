"""The preemptive heuristics against the best non-preemptive one, on held-out episodes.

    python benchmarks/preemption.py run       # every world x policy x episode (~10 min, 2 cores)
    python benchmarks/preemption.py table     # preemption.json -> docs/preemption.md
    make preemption                           # both

``run`` plays every policy of :data:`POLICIES` in the simulator on the held-out episodes of each
world of :data:`WORLDS`: the scenario ``gym.make(env_id, **kwargs).reset(seed=2_000_000 + i)``
draws (the same episodes a held-out evaluation of the env plays), and writes
``benchmarks/results/preemption.json``: per policy and episode the average JCT, the electricity
cost, the preemptions, the wasted and the total GPU-hours, and per policy and world the CPU
seconds its episodes took (one process each). ``table`` writes the results table (JCT and
cost as ratios of means to :data:`REFERENCE` on the same episodes, with 95% paired bootstrap
intervals, episodes won and lost, preemptions and wasted GPU-hours per episode) and the speed
table (episodes per CPU second, preemption on and off) between the ``preemption-table``
markers of docs/preemption.md.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bacepipe_env import __version__  # noqa: E402
from bacepipe_env.experiments.progress import Progress  # noqa: E402
from bacepipe_env.experiments.stats import paired_ratio_ci  # noqa: E402
from bacepipe_env.signals import worker_pool  # noqa: E402
from benchmarks.tables import splice  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "preemption.json"
DOCS = ROOT / "docs" / "preemption.md"  # every row and the speed table
MARKERS = "preemption-table"  # <!-- preemption-table:begin --> ... :end -->
HELD_OUT = 2_000_000  # the first held-out reset seed, as for the learned orderers
REFERENCE = "sjf+finish-aware"  # the best non-preemptive heuristic on Random-v2 and GeoPipe-v2
N_BOOT = 2000
#: The policies played, the reference first; ``+lose`` runs the policy before it with
#: ``preempt_checkpoint_s="lose-since-checkpoint"`` (the work since the last hourly checkpoint
#: is lost at a preemption instead of a 60 s checkpoint being written).
POLICIES = (
    REFERENCE,
    "sjf+finish-aware+srtf",
    "sjf+finish-aware+srtf+lose",
    "sjf+srtf",
    "bace-pipe+srtf",
    "sjf+finish-aware+las",
    "sjf+las",
    "bace-pipe",
)
#: World name -> (env id, env kwargs, held-out episodes).
WORLDS: dict[str, tuple[str, dict[str, Any], int]] = {
    "Online-v1 (500 jobs)": ("bacepipe_env/GeoPipe-Online-v1", {}, 20),
    "Online-v1 (80 jobs)": ("bacepipe_env/GeoPipe-Online-v1", {"n_jobs": 80}, 100),
    "Random-v2": ("bacepipe_env/GeoPipe-Random-v2", {}, 100),
    "paper (GeoPipe-v2)": ("bacepipe_env/GeoPipe-v2", {}, 100),
}


def _episode(world: str, env_id: str, kwargs: dict[str, Any], seed: int) -> dict[str, Any]:
    """Every policy on one held-out episode: its figures and CPU seconds."""
    import dataclasses

    import gymnasium as gym

    import bacepipe_env  # noqa: F401  (registers the ids)
    from bacepipe_env.policies.registry import make_policy

    env = gym.make(env_id, **kwargs)
    env.reset(seed=seed)
    scenario = env.unwrapped.scenario
    out: dict[str, Any] = {"world": world, "seed": seed, "n_jobs": len(scenario.jobs)}
    for name in POLICIES:
        base, lose = name.removesuffix("+lose"), name.endswith("+lose")
        run_on = scenario
        if lose:  # the same jobs and tariff, with the work since the last checkpoint lost
            faults = dataclasses.replace(
                scenario.faults or _default_faults(), preempt_checkpoint_s=None
            )
            run_on = dataclasses.replace(scenario, faults=faults)
        start = time.process_time()
        result = make_policy(base, seed=seed).simulate(run_on)
        cpu = time.process_time() - start
        out[name] = {
            "avg_jct_h": result.avg_jct / 3600,
            "cost_usd": result.total_cost,
            "preemptions": result.n_preemptions,
            "wasted_gpu_h": result.wasted_gpu_hours,
            "gpu_h": result.gpu_hours,
            "cpu_s": cpu,
        }
    return out


def _default_faults() -> Any:
    from bacepipe_env.core.faults import FaultModel

    return FaultModel()


def run(worlds: list[str], workers: int, episodes: int | None) -> None:
    """Play every policy on every world's held-out episodes and write the JSON."""
    data = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {"rows": []}
    rows = [r for r in data["rows"] if r["world"] not in worlds]
    tasks = []
    for world in worlds:
        env_id, kwargs, n = WORLDS[world]
        n = n if episodes is None else episodes
        tasks += [(world, env_id, kwargs, HELD_OUT + i) for i in range(n)]
    start = time.perf_counter()
    bar = Progress(len(tasks), "episodes", "preemption", force=True)
    with bar, worker_pool(workers) as pool:
        for row in pool.map(_episode, *zip(*tasks)):
            rows.append(row)
            bar.update()
    payload = {
        "version": __version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "held_out_first_seed": HELD_OUT,
        "reference": REFERENCE,
        "policies": list(POLICIES),
        "worlds": {w: {"env_id": e, "kwargs": k, "episodes": n} for w, (e, k, n) in WORLDS.items()},
        "wall_s": time.perf_counter() - start,
        "rows": rows,
    }
    RESULTS.write_text(json.dumps(payload, indent=1, allow_nan=False) + "\n")
    print(f"{RESULTS.relative_to(ROOT)}: {len(rows)} episodes")


def _column(rows: list[dict[str, Any]], policy: str, key: str) -> np.ndarray:
    return np.array([r[policy][key] for r in rows], dtype=np.float64)


def summarise(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Per world and policy: the ratios to the reference with their intervals, wins and
    losses, preemptions and wasted GPU-hours per episode, episodes per CPU second."""
    out = []
    ref = data["reference"]
    for world in data["worlds"]:
        rows = sorted((r for r in data["rows"] if r["world"] == world), key=lambda r: r["seed"])
        if not rows:
            continue
        ref_jct, ref_cost = _column(rows, ref, "avg_jct_h"), _column(rows, ref, "cost_usd")
        for policy in data["policies"]:
            jct, cost = _column(rows, policy, "avg_jct_h"), _column(rows, policy, "cost_usd")
            ratio = paired_ratio_ci(jct, ref_jct, n_boot=N_BOOT)
            cost_ratio = paired_ratio_ci(cost, ref_cost, n_boot=N_BOOT)
            cpu = _column(rows, policy, "cpu_s").sum()
            out.append(
                {
                    "world": world,
                    "policy": policy,
                    "episodes": len(rows),
                    "jct_h": float(jct.mean()),
                    "jct_ratio": ratio,
                    "cost_ratio": cost_ratio,
                    "wins": int((jct < ref_jct).sum()),
                    "losses": int((jct > ref_jct).sum()),
                    "preemptions": float(_column(rows, policy, "preemptions").mean()),
                    "wasted_gpu_h": float(_column(rows, policy, "wasted_gpu_h").mean()),
                    "gpu_h": float(_column(rows, policy, "gpu_h").mean()),
                    "episodes_per_cpu_s": len(rows) / cpu if cpu > 0 else math.nan,
                }
            )
    return out


def _ci(v: tuple[float, float, float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def markdown(summaries: list[dict[str, Any]], data: dict[str, Any]) -> str:
    """The results and speed tables, generated (a pure function of the JSON)."""
    ref = data["reference"]
    speed = {(s["world"], s["policy"]): s["episodes_per_cpu_s"] for s in summaries}
    lines = [
        f"| world | policy | mean JCT h | JCT / `{ref}` [95% CI] | wins / losses | "
        f"cost / `{ref}` [95% CI] | preemptions per episode | wasted GPU-h per episode |",
        "|---|---|---:|---|---|---|---:|---:|",
    ]
    for s in summaries:
        policy = f"`{s['policy']}`"
        if s["policy"] == ref:
            policy += " (reference)"
        best = s["jct_ratio"][2] < 1.0
        ratio = f"**{_ci(s['jct_ratio'])}**" if best else _ci(s["jct_ratio"])
        lines.append(
            f"| {s['world']} ({s['episodes']} eps) | {policy} | {s['jct_h']:,.1f} | {ratio} | "
            f"{s['wins']} / {s['losses']} | {_ci(s['cost_ratio'])} | {s['preemptions']:,.1f} | "
            f"{s['wasted_gpu_h']:,.0f} of {s['gpu_h']:,.0f} |"
        )
    lines += [
        "",
        f"Held-out episodes: the scenario `gym.make(env_id).reset(seed={HELD_OUT:,} + i)` draws, "
        "every policy in the simulator on the same episodes. Ratios are of means over the "
        "episodes, with 95% paired percentile-bootstrap intervals (2,000 resamples of episodes); "
        f"bold: the interval lies below 1. Wins and losses: episodes with a lower and a higher "
        f"mean JCT than `{ref}`. `+lose`: the same policy with `preempt_checkpoint_s = "
        '"lose-since-checkpoint"`. Regenerate: `make preemption` (or `python '
        "benchmarks/preemption.py table` from the committed `benchmarks/results/preemption.json`).",
    ]
    lines += [
        "",
        "| world | episodes per CPU second, no preemption (`" + ref + "`) | "
        "with preemption (`sjf+finish-aware+srtf`) | (`sjf+finish-aware+las`) |",
        "|---|---:|---:|---:|",
    ]
    for world in dict.fromkeys(s["world"] for s in summaries):
        cells = [
            f"{speed[(world, p)]:,.1f}"
            for p in (ref, "sjf+finish-aware+srtf", "sjf+finish-aware+las")
        ]
        lines.append(f"| {world} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"CPU seconds per episode in the simulator, one process per episode, on this project's "
        f"2-core {data['machine']} machine, Python {data['python']}.",
    ]
    return "\n".join(lines) + "\n"


def table() -> str:
    """Write the tables into the docs; returns them."""
    data = json.loads(RESULTS.read_text())
    summaries = summarise(data)
    text = markdown(summaries, data)
    splice(DOCS, MARKERS, text)
    print(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "table"))
    parser.add_argument("--worlds", default=",".join(WORLDS), help="comma-separated world names")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--episodes", type=int, default=None, help="override every world's")
    args = parser.parse_args()
    if args.command == "run":
        worlds = [w.strip() for w in args.worlds.split(",") if w.strip()]
        unknown = [w for w in worlds if w not in WORLDS]
        if unknown:
            raise SystemExit(f"unknown worlds {unknown}; known: {list(WORLDS)}")
        run(worlds, args.workers, args.episodes)
    else:
        table()


if __name__ == "__main__":
    main()
