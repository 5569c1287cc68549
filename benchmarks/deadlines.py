"""The deadline heuristics on the online world with deadlines, without and with the calendar.

    python benchmarks/deadlines.py run [--seeds 10]   # ~10 s on 2 cores
    python benchmarks/deadlines.py levers [--episodes 40]   # ~1 min
    python benchmarks/deadlines.py table              # deadlines.json -> docs/semantics.md §15

``run`` plays every policy of :data:`POLICIES` on ``load_scenario("online", n_jobs=80,
deadline_slack=DEFAULT_SLACK, announce_h=H, seed=s)`` for ``H`` in 0 (no calendar) and 24 (every
job announced 24 h ahead, as the Online-Announced ids) and seeds ``0 .. N-1``, and writes each
run's miss rate, tardiness and average JCT to ``benchmarks/results/deadlines.json``. ``table``
splices the per-policy means into the ``deadline-table`` block of docs/semantics.md, with the
best rule's paired miss ratio to the best of the rules that do not plan (95% bootstrap).

``levers`` plays :data:`LEVER_POLICIES` in the world with all three levers: the episodes of
``GeoPipe-Online-Elastic-v0`` (physical model, 1-4 data-parallel copies) cut to 80 jobs, with
the 24 h calendar and the default slacks (``reset(seed=2_000_000 + i)``), and ``table`` adds
their miss rates and JCTs paired against ``edf+deadline-plan+srtf`` (the ``deadline-levers``
block): whether the rules that plan compose with preemption and elasticity.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bacepipe_env.core.deadlines import DEFAULT_SLACK  # noqa: E402
from bacepipe_env.experiments.stats import paired_ratio_ci  # noqa: E402
from bacepipe_env.policies.registry import make_policy  # noqa: E402
from bacepipe_env.scenarios import load_scenario  # noqa: E402
from benchmarks.tables import splice  # noqa: E402

N_JOBS = 80
CALENDARS = (0.0, 24.0)
#: Every rule the table compares, the deadline-plan ones last.
POLICIES = (
    "bace-pipe",
    "fcfs",
    "sjf",
    "sjf+finish-aware",
    "bace-pipe+finish-aware",
    "sjf+srtf",
    "lcf",
    "sjf+announce",
    "sjf+announce+srtf",
    "edf",
    "edf+finish-aware",
    "edf+deadline-aware",
    "lsf",
    "lsf+finish-aware",
    "edf-triage",
    "edf-triage+finish-aware",
    "edf-triage+deadline-aware",
    "sjf+deadline-aware",
    "edf+srtf",
    "edf-triage+srtf",
    "edf+deadline-plan",
    "lsf+deadline-plan",
    "edf-triage+deadline-plan",
    "edf+deadline-plan+srtf",
)
PLANS = {p for p in POLICIES if "deadline-plan" in p}
#: The rules compared in the world with all three levers, the reference first.
LEVER_POLICIES = (
    "edf+deadline-plan+srtf",
    "edf+deadline-plan+srtf+elastic",
    "edf+deadline-plan",
    "edf+deadline-plan+elastic",
    "sjf+announce+srtf+elastic",
    "sjf+finish-aware+srtf+elastic",
    "edf+srtf+elastic",
)
LEVER_ID = "bacepipe_env/GeoPipe-Online-Elastic-v0"
HELD_OUT = 2_000_000
RESULTS = ROOT / "benchmarks" / "results" / "deadlines.json"
DOCS = ROOT / "docs" / "semantics.md"


def _one(task: tuple[str, float, int]) -> dict[str, Any]:
    policy, announce_h, seed = task
    scenario = load_scenario(
        "online", seed=seed, n_jobs=N_JOBS, deadline_slack=DEFAULT_SLACK, announce_h=announce_h
    )
    r = make_policy(policy).simulate(scenario)
    return {
        "policy": policy,
        "announce_h": announce_h,
        "seed": seed,
        "miss_rate": r.miss_rate,
        "tardiness_h_per_job": r.total_tardiness / len(r.records) / 3600.0,
        "avg_jct_h": r.avg_jct / 3600.0,
    }


def run(seeds: int, workers: int) -> None:
    """Every policy x calendar x seed, into :data:`RESULTS`."""
    tasks = [(p, h, s) for h in CALENDARS for p in POLICIES for s in range(seeds)]
    with ProcessPoolExecutor(workers) as pool:
        rows = list(pool.map(_one, tasks, chunksize=4))
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    data.update({"n_jobs": N_JOBS, "rows": rows})
    RESULTS.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{len(rows)} runs -> {RESULTS.relative_to(ROOT)}")


def _lever(task: tuple[str, int]) -> dict[str, Any]:
    from bacepipe_env.experiments.evaluate import _make_env

    policy, seed = task
    knobs = {"preview": False, "n_jobs": N_JOBS, "announce_h": 24.0}
    env = _make_env(LEVER_ID, {**knobs, "deadline_slack": DEFAULT_SLACK})
    env.reset(seed=seed)
    assert env.scenario is not None
    r = make_policy(policy).simulate(env.scenario)
    return {"policy": policy, "seed": seed, "miss_rate": r.miss_rate, "avg_jct_h": r.avg_jct / 3600}


def levers(episodes: int, workers: int) -> None:
    """:data:`LEVER_POLICIES` on the elastic id's episodes, into :data:`RESULTS`."""
    tasks = [(p, HELD_OUT + i) for p in LEVER_POLICIES for i in range(episodes)]
    with ProcessPoolExecutor(workers) as pool:
        rows = list(pool.map(_lever, tasks, chunksize=8))
    data = json.loads(RESULTS.read_text())
    data["levers"] = rows
    RESULTS.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{len(rows)} runs -> {RESULTS.relative_to(ROOT)}")


def lever_markdown(rows: list[dict[str, Any]]) -> str:
    """The ``deadline-levers`` table: miss rate and JCT per rule, paired ratios to the first."""

    def col(p: str, key: str) -> list[float]:
        return [r[key] for r in sorted(rows, key=lambda r: r["seed"]) if r["policy"] == p]

    ref = LEVER_POLICIES[0]
    n = len(col(ref, "miss_rate"))
    out = [
        f"`python benchmarks/deadlines.py levers` ({n} episodes of `{LEVER_ID.split('/')[1]}` "
        "cut to 80 jobs, with the 24 h calendar and the default slacks; ratios paired against "
        f"`{ref}`, 95% bootstrap):",
        "",
        "| policy | miss rate | miss ratio | avg JCT h | JCT ratio |",
        "|---|---|---|---|---|",
    ]
    for p in LEVER_POLICIES:
        cells = []
        for key, fmt in (("miss_rate", "{:.2%}"), ("avg_jct_h", "{:.2f}")):
            x = col(p, key)
            point, low, high = paired_ratio_ci(x, col(ref, key))
            cells += [fmt.format(statistics.mean(x)), f"{point:.3f} [{low:.3f}, {high:.3f}]"]
        out.append(f"| `{p}` | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _column(rows: list[dict[str, Any]], policy: str, h: float, key: str) -> list[float]:
    got = [r for r in rows if r["policy"] == policy and r["announce_h"] == h]
    return [r[key] for r in sorted(got, key=lambda r: r["seed"])]


def markdown(data: dict[str, Any]) -> str:
    """The §15 table: per policy, miss rate / tardiness / JCT without and with the calendar,
    then the best plan's paired miss ratio to the best rule that does not plan."""
    rows = data["rows"]
    seeds = sorted({r["seed"] for r in rows})
    out = [
        f"`python benchmarks/deadlines.py run` (`online` cut to {data['n_jobs']} jobs, the "
        f"default slacks, seeds 0-{seeds[-1]}; mean over seeds; tardiness per job):",
        "",
        "| policy | miss rate | tardiness h | avg JCT h | with the 24 h calendar: miss rate "
        "| tardiness h | avg JCT h |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in POLICIES:
        cells = []
        for h in CALENDARS:
            cells += [
                f"{100 * statistics.mean(_column(rows, p, h, 'miss_rate')):.1f}%",
                f"{statistics.mean(_column(rows, p, h, 'tardiness_h_per_job')):.2f}",
                f"{statistics.mean(_column(rows, p, h, 'avg_jct_h')):.1f}",
            ]
        out.append(f"| `{p}` | " + " | ".join(cells) + " |")
    out.append("")
    for h in CALENDARS:
        mean = {p: statistics.mean(_column(rows, p, h, "miss_rate")) for p in POLICIES}
        plan = min(PLANS, key=lambda p: (mean[p], POLICIES.index(p)))
        other = min(set(POLICIES) - PLANS, key=lambda p: (mean[p], POLICIES.index(p)))
        point, low, high = paired_ratio_ci(
            _column(rows, plan, h, "miss_rate"), _column(rows, other, h, "miss_rate")
        )
        where = "with the 24 h calendar" if h else "without a calendar"
        out.append(
            f"- {where}: `{plan}` misses {point:.3f} [{low:.3f}, {high:.3f}] of the deadlines "
            f"`{other}` (the best rule that does not plan) misses, paired over the seeds."
        )
    return "\n".join(out) + "\n"


def main() -> None:
    """``run`` or ``table``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--seeds", type=int, default=10)
    r.add_argument("--workers", type=int, default=2)
    lv = sub.add_parser("levers")
    lv.add_argument("--episodes", type=int, default=40)
    lv.add_argument("--workers", type=int, default=2)
    sub.add_parser("table")
    args = ap.parse_args()
    if args.command == "run":
        run(args.seeds, args.workers)
    elif args.command == "levers":
        levers(args.episodes, args.workers)
    else:
        data = json.loads(RESULTS.read_text())
        text = markdown(data)
        splice(DOCS, "deadline-table", text)
        print(text, end="")
        if "levers" in data:
            text = lever_markdown(data["levers"])
            splice(DOCS, "deadline-levers", text)
            print(text, end="")


if __name__ == "__main__":
    main()
