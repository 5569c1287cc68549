"""The paper's world against the physical one: link overbooking with the backward pass's
reverse traffic counted, and BACE-Pipe's rank among the paper's five policies.

    python benchmarks/physical.py run     # every world x model (under a minute)
    python benchmarks/physical.py table   # physical.json -> docs/model.md
    make physical                          # both

``run`` simulates BACE-Pipe, LCF, LDF, CR-LCF and CR-LDF on three worlds (``paper``, 10 seeds;
the online Philly world, 500 jobs, 3 seeds; the random generator's clusters, whose links are
drawn each way on their own, 30 episodes), each under ``model="paper"`` and
``model="physical"`` (the schedulers estimating with Eq. (1) in both), and BACE-Pipe once more
in the physical world with ``scheduler_model="world"``: the cost of the schedulers' mismatch.
It writes ``benchmarks/results/physical.json``.

The overbooking audit reads only the runs' records (each job's placement, start, finish and
booking): between consecutive starts and finishes, a directed link carries the bookings of
the jobs whose path crosses it forward plus those crossing it backward (the backward pass
sends the same bytes back). A link-interval is overbooked when that sum exceeds the link's
capacity. ``table`` writes the table between the ``physical-table`` markers of
docs/model.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bacepipe_env import __version__  # noqa: E402
from bacepipe_env.core import RunResult, Scenario  # noqa: E402
from bacepipe_env.experiments.progress import Progress  # noqa: E402
from bacepipe_env.policies.registry import make_policy  # noqa: E402
from bacepipe_env.scenarios import RandomScenarioGenerator, load_scenario  # noqa: E402
from benchmarks.tables import splice  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "physical.json"
DOCS = ROOT / "docs" / "model.md"
POLICIES = ("bace-pipe", "lcf", "ldf", "cr-lcf", "cr-ldf")
MODELS = ("paper", "physical")
WORLDS = {"paper": 10, "online": 3, "random": 30}  # episodes per world


def scenarios(world: str, model: str, scheduler_model: str = "paper") -> list[Scenario]:
    """The world's episodes under ``model``, the schedulers estimating by ``scheduler_model``."""
    n = WORLDS[world]
    if world == "random":
        gen = RandomScenarioGenerator(model=model, scheduler_model=scheduler_model)
        return [gen(np.random.default_rng(seed)) for seed in range(n)]
    return [
        load_scenario(world, seed=seed, model=model, scheduler_model=scheduler_model)
        for seed in range(n)
    ]


def overbooking(scn: Scenario, res: RunResult) -> tuple[int, int]:
    """``(overbooked, total)`` link-intervals of a run, from its records alone: each link
    carries its forward bookings plus the reverse traffic of the jobs crossing it the other
    way."""
    cap = np.asarray(scn.cluster.bandwidth, dtype=float)
    times = sorted({t for r in res.records for t in (r.start_time, r.finish_time)})
    over = total = 0
    for t0, t1 in itertools.pairwise(times):
        mid = (t0 + t1) / 2
        load = np.zeros_like(cap)
        for r in res.records:
            if r.start_time <= mid < r.finish_time and r.reserved_bandwidth > 0:
                for u, v in zip(r.placement.path, r.placement.path[1:]):
                    load[u, v] += r.reserved_bandwidth
                    load[v, u] += r.reserved_bandwidth
        used = load > 0
        total += int(used.sum())
        over += int((load[used] > cap[used] * (1 + 1e-9)).sum())
    return over, total


def run() -> dict[str, Any]:
    """Every world x model x policy: mean JCT and cost per episode, and the audit."""
    rows = []
    n = sum(WORLDS.values()) * len(MODELS)
    with Progress(n, unit="episodes", label="physical") as progress:
        for world in WORLDS:
            for model in MODELS:
                eps = scenarios(world, model)
                t = time.perf_counter()
                per: dict[str, dict[str, list[float]]] = {
                    p: {"jct_h": [], "cost": []} for p in POLICIES
                }
                over = total = 0
                for scn in eps:
                    for p in POLICIES:
                        res = make_policy(p, seed=0).simulate(scn)
                        per[p]["jct_h"].append(res.avg_jct / 3600)
                        per[p]["cost"].append(res.total_cost)
                        o, n_int = overbooking(scn, res)
                        over, total = over + o, total + n_int
                    progress.update()
                told = [  # BACE-Pipe estimating with the world's own model
                    make_policy("bace-pipe", seed=0).simulate(scn).avg_jct / 3600
                    for scn in scenarios(world, model, "world")
                ]
                rows.append(
                    {
                        "world": world,
                        "model": model,
                        "episodes": len(eps),
                        "policies": per,
                        "bace_pipe_told_jct_h": told,
                        "overbooked": over,
                        "link_intervals": total,
                        "seconds": time.perf_counter() - t,
                    }
                )
    out = {
        "rows": rows,
        "versions": {"python": platform.python_version(), "bacepipe_env": __version__},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return out


def table(data: dict[str, Any]) -> str:
    """The Markdown table: per world and model, each policy's mean JCT, BACE-Pipe's rank,
    and the overbooked link-intervals."""
    head = [
        "world",
        "model",
        "episodes",
        *(f"{p} JCT (h)" for p in POLICIES),
        "BACE-Pipe's rank",
        "BACE-Pipe told the world's model (h)",
        "overbooked link-intervals",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in data["rows"]:
        means = {p: float(np.mean(row["policies"][p]["jct_h"])) for p in POLICIES}
        rank = 1 + sum(means[p] < means["bace-pipe"] for p in POLICIES)
        share = row["overbooked"] / row["link_intervals"] if row["link_intervals"] else 0.0
        cells = [
            row["world"],
            f"`{row['model']}`",
            str(row["episodes"]),
            *(f"{means[p]:,.1f}" for p in POLICIES),
            f"{rank} of {len(POLICIES)}",
            f"{float(np.mean(row['bace_pipe_told_jct_h'])):,.1f}"
            if row["model"] != "paper"
            else "=",
            f"{row['overbooked']:,} of {row['link_intervals']:,} ({100 * share:.1f}%)",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("run", "table"))
    args = parser.parse_args()
    data = run() if args.what == "run" else json.loads(RESULTS.read_text(encoding="utf-8"))
    text = table(data)
    print(text)
    splice(DOCS, "physical-table", text)


if __name__ == "__main__":
    main()
