"""The greedy elasticity rule on the elastic id's episodes: does it thrash, and what it gives.

    python benchmarks/elastic.py run [--episodes 40]   # ~4 min on 2 cores
    python benchmarks/elastic.py table                 # elastic.json -> docs/model.md table

``run`` plays ``sjf+finish-aware`` and ``sjf+finish-aware+elastic`` in the simulator on the
scenarios ``gym.make("bacepipe_env/GeoPipe-Online-Elastic-v0", n_jobs=80).reset(seed=2_000_000
+ i)`` draws, and reads from the elastic run's records alone (what any user of the JSON sees):

- a *shrink* is a ``resized`` attempt followed by one with fewer copies; it *starts nobody* when
  no other job's attempt begins at that instant (a job that started, not one that was resized);
- an *undo* is a resize in the opposite direction of the job's previous one;
- a *swap* is a shrink of one job with a grow of another at the same instant;
- restart GPU-hours are the GPU-hours of resize restarts (wasted), split into those of undone
  resizes and the rest.

It writes ``benchmarks/results/elastic.json``: per episode both runs' average JCT and the
counts above; ``table`` prints the summary and splices it into docs/model.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bacepipe_env.experiments.headroom import env_scenarios  # noqa: E402
from bacepipe_env.experiments.progress import Progress  # noqa: E402
from bacepipe_env.experiments.stats import paired_ratio_ci  # noqa: E402
from bacepipe_env.policies.registry import make_policy  # noqa: E402
from benchmarks.tables import splice  # noqa: E402

ENV_ID = "bacepipe_env/GeoPipe-Online-Elastic-v0"
HELD_OUT = 2_000_000
N_JOBS = 80
PLAIN, ELASTIC = "sjf+finish-aware", "sjf+finish-aware+elastic"
RESULTS = ROOT / "benchmarks" / "results" / "elastic.json"
DOCS = ROOT / "docs" / "model.md"


def resize_events(records: Any) -> dict[str, Any]:
    """Counts of shrinks, grows, shrinks that start nobody, undos and swaps, from records."""
    starts: dict[float, int] = {}  # instant -> attempts begun then that are no resize's next
    resizes: list[tuple[float, int, int]] = []  # (time, job, +1 grow / -1 shrink)
    restart_gpu_s = undo_gpu_s = 0.0
    for r in records:
        atts = r.attempts
        for i, a in enumerate(atts):
            if i == 0 or atts[i - 1].outcome != "resized":
                starts[a.start] = starts.get(a.start, 0) + 1
        last = 0
        for i, a in enumerate(atts[:-1]):
            if a.outcome != "resized":
                continue
            nxt = atts[i + 1]
            step = 1 if nxt.placement.n_replicas > a.placement.n_replicas else -1
            resizes.append((a.end, r.job_id, step))
            gpu_s = nxt.placement.n_gpus * nxt.restart
            restart_gpu_s += gpu_s
            if last and step != last:
                undo_gpu_s += gpu_s
            last = step
    shrinks = [(t, j) for t, j, s in resizes if s < 0]
    grows_at = {t for t, _, s in resizes if s > 0}
    by_job: dict[int, list[int]] = {}
    for _, j, s in sorted(resizes):
        by_job.setdefault(j, []).append(s)
    undos = sum(sum(1 for a, b in itertools.pairwise(v) if a != b) for v in by_job.values())
    return {
        "resizes": len(resizes),
        "shrinks": len(shrinks),
        "grows": len(resizes) - len(shrinks),
        "shrinks_start_nobody": sum(1 for t, _ in shrinks if not starts.get(t)),
        "swaps": sum(1 for t, _ in shrinks if t in grows_at),
        "undos": undos,
        "max_resizes_job": max((len(v) for v in by_job.values()), default=0),
        "restart_gpu_h": restart_gpu_s / 3600,
        "undo_restart_gpu_h": undo_gpu_s / 3600,
    }


def run(episodes: int) -> None:
    """Play both policies on ``episodes`` held-out episodes; write RESULTS."""
    seeds = [HELD_OUT + i for i in range(episodes)]
    scenarios = env_scenarios(ENV_ID, seeds, N_JOBS)
    rows = []
    start = time.process_time()
    with Progress(len(seeds), "episodes", "elastic") as progress:
        for seed, s in zip(seeds, scenarios):
            rows.append(_episode(seed, s))
            progress.update()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    out = {"env_id": ENV_ID, "n_jobs": N_JOBS, "cpu_s": time.process_time() - start, "rows": rows}
    RESULTS.write_text(json.dumps(out, indent=1) + "\n")
    print(table(out))


def _episode(seed: int, s: Any) -> dict[str, Any]:
    """One episode's row: both runs' mean JCT and the elastic run's resize counts."""
    plain = make_policy(PLAIN, seed=seed).simulate(s)
    elastic = make_policy(ELASTIC, seed=seed).simulate(s)
    return {
        "seed": seed,
        "plain_jct_h": plain.avg_jct / 3600,
        "elastic_jct_h": elastic.avg_jct / 3600,
        **resize_events(elastic.records),
    }


def table(data: dict[str, Any]) -> str:
    """The summary as a markdown table."""
    rows = data["rows"]
    plain = [r["plain_jct_h"] for r in rows]
    elastic = [r["elastic_jct_h"] for r in rows]
    ratio, low, high = paired_ratio_ci(elastic, plain, seed=0)
    worst = max(e / p for e, p in zip(elastic, plain))
    tot = {k: sum(r[k] for r in rows) for k in rows[0] if k not in ("seed",) and "jct" not in k}
    nobody = tot["shrinks_start_nobody"] / tot["shrinks"] if tot["shrinks"] else 0.0
    undo = tot["undos"] / tot["resizes"] if tot["resizes"] else 0.0
    waste = tot["undo_restart_gpu_h"] / tot["restart_gpu_h"] if tot["restart_gpu_h"] else 0.0
    lines = [
        "| episodes | plain mean JCT h | elastic mean JCT h | elastic / plain | worst episode "
        "| resizes | shrinks | starting nobody | undos | most resizes of a job "
        "| restart GPU-h (of undos) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        f"| {len(rows)} | {sum(plain) / len(rows):.2f} | {sum(elastic) / len(rows):.2f} "
        f"| {ratio:.3f} [{low:.3f}, {high:.3f}] | {worst:.3f} | {tot['resizes']:,} "
        f"| {tot['shrinks']:,} | {tot['shrinks_start_nobody']:,} ({nobody:.1%}) "
        f"| {tot['undos']:,} ({undo:.1%}) | {max(r['max_resizes_job'] for r in rows)} "
        f"| {tot['restart_gpu_h']:,.1f} ({waste:.1%}) |",
    ]
    return "\n".join(lines)


def main() -> None:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--episodes", type=int, default=40)
    sub.add_parser("table")
    args = parser.parse_args()
    if args.cmd == "run":
        run(args.episodes)
    else:
        data = json.loads(RESULTS.read_text())
        text = table(data)
        print(text)
        splice(DOCS, "elastic-table", text + "\n")


if __name__ == "__main__":
    main()
