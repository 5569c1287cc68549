"""Every registered environment id's headroom: the rollout planner against the id's best
heuristic on held-out episodes, under each lookahead.

    python benchmarks/headroom.py run      # every row x LOOKAHEADS (~1 h 15 min on 2 cores;
                                           # --lookahead L / --only ID: a part, the rest kept)
    python benchmarks/headroom.py table    # headroom.json -> docs/headroom.md
    make headroom                          # both

``run`` calls :func:`bacepipe_env.experiments.headroom.run_headroom` (what ``bacepipe
headroom`` prints) for each row of :data:`ROWS` (and of :data:`DEADLINE_ROWS` whose id is
registered) and each lookahead of :data:`LOOKAHEADS`, on the
episodes ``reset(seed=2_000_000 + i)`` draws (held out from training, as in
benchmarks/preemption.py), and writes ``benchmarks/results/headroom.json``. ``table`` writes the
table between the ``headroom-table`` markers of docs/headroom.md: per id and lookahead the
best heuristic, the planner's paired JCT ratio to it with a 95% bootstrap interval, its cost
ratio, and its time per decision and per episode. Clairvoyant rows are bounds, not results.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bacepipe_env import __version__  # noqa: E402
from bacepipe_env.experiments.headroom import run_headroom  # noqa: E402
from bacepipe_env.experiments.progress import Progress  # noqa: E402
from bacepipe_env.signals import worker_pool  # noqa: E402
from benchmarks.tables import splice  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "headroom.json"
DOCS = ROOT / "docs" / "headroom.md"
HELD_OUT = 2_000_000
LOOKAHEADS = ("submitted", "announced:24", "sampled:4", "clairvoyant")
#: (env id, jobs per episode or None for the id's own, episodes, the planner's base or None
#: for the id's best heuristic, the planner's ``copies`` setting). The Online ids play 80-job
#: episodes in every lookahead (a clairvoyant fork simulates every job still to come), and
#: Online-v1 also its own 500-job episodes. On the calendar's id the planner also finishes its
#: forks with `sjf+finish-aware`, which finds more room there than the best heuristic,
#: `sjf+announce`, does as a base. On the elastic id the planner also plays without choosing
#: counts of copies (`copies=default`): the difference is what that decision is worth.
ROWS: tuple[tuple[str, int | None, int, str | None, str], ...] = (
    ("bacepipe_env/GeoPipe-v2", None, 50, None, "all"),
    ("bacepipe_env/GeoPipe-Fig1-v2", None, 50, None, "all"),
    ("bacepipe_env/GeoPipe-Random-v2", None, 50, None, "all"),
    ("bacepipe_env/GeoPipe-Online-v1", 80, 20, None, "all"),
    ("bacepipe_env/GeoPipe-Online-Preempt-v1", 80, 20, None, "all"),
    ("bacepipe_env/GeoPipe-Online-Announced-v0", 80, 20, None, "all"),
    ("bacepipe_env/GeoPipe-Online-Announced-v0", 80, 20, "sjf+finish-aware", "all"),
    ("bacepipe_env/GeoPipe-Online-Announced-Preempt-v0", 80, 20, None, "all"),
    ("bacepipe_env/GeoPipe-Online-v1", None, 10, None, "all"),
    ("bacepipe_env/GeoPipe-Online-Elastic-v0", 80, 20, None, "all"),
    ("bacepipe_env/GeoPipe-Online-Elastic-v0", 80, 20, None, "default"),
)
#: The episodes a ``sampled:4`` row plays on an Online id (the first of the row's): a sampled
#: decision plays 4 draws of every action and never reuses the last chosen fork, about 10x a
#: clairvoyant decision (docs/headroom.md), so these rows take the row's first 10 episodes.
SAMPLED_EPISODES = 10
#: Rows without a sampled row: Online-v1's own 500-job episodes (about 4,000 CPU-s at 10x the
#: clairvoyant row's cost); its 80-job row has one.
NO_SAMPLED = {("bacepipe_env/GeoPipe-Online-v1", None)}


def _episodes(env_id: str, n_jobs: int | None, episodes: int, lookahead: str) -> int:
    """The episodes a row plays under ``lookahead``: :data:`SAMPLED_EPISODES` for a sampled
    lookahead on an Online id, the row's own otherwise."""
    if lookahead.startswith("sampled") and "Online" in env_id:
        return min(episodes, SAMPLED_EPISODES)
    return episodes


def _lookaheads(env_id: str, n_jobs: int | None) -> tuple[str, ...]:
    """The lookaheads a row is measured under."""
    if (env_id, n_jobs) in NO_SAMPLED:
        return tuple(la for la in LOOKAHEADS if not la.startswith("sampled"))
    return LOOKAHEADS


#: Rows judged by a deadline objective (semantics §15): (env id, jobs, episodes, base,
#: copies, objective). The planner scores its forks by the objective, the best heuristic is
#: the one with the lowest mean miss rate, and the ratio is the paired ratio of misses. Ids
#: not registered in this checkout are skipped by ``run`` (named, not an error).
DEADLINE_ROWS: tuple[tuple[str, int | None, int, str | None, str, str], ...] = (
    ("bacepipe_env/GeoPipe-Online-Deadline-v0", 80, 20, None, "all", "misses"),
    ("bacepipe_env/GeoPipe-Online-Deadline-v0", 80, 20, None, "all", "tardiness"),
    ("bacepipe_env/GeoPipe-Online-Announced-Deadline-v0", 80, 20, None, "all", "misses"),
    ("bacepipe_env/GeoPipe-Online-Announced-Deadline-v0", 80, 20, None, "all", "tardiness"),
)


def _rows() -> list[tuple[str, int | None, int, str | None, str, str]]:
    """Every row, ROWS (objective jct) then DEADLINE_ROWS, those of registered ids only."""
    from bacepipe_env.envs.registration import check_env_id
    from bacepipe_env.errors import ValidationError

    rows = [(*row, "jct") for row in ROWS]
    for row in DEADLINE_ROWS:
        try:
            check_env_id("env_id", row[0])
        except ValidationError:
            print(f"skipped {row[0]}: not registered here")
            continue
        rows.append(row)
    return rows


def _task(
    env_id: str,
    n_jobs: int | None,
    episodes: int,
    base: str | None,
    copies: str,
    objective: str,
    lookahead: str,
) -> dict[str, Any]:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    start = time.process_time()
    report = run_headroom(
        env_id,
        episodes,
        HELD_OUT,
        base=base,
        lookahead=lookahead,
        n_jobs=n_jobs,
        copies=copies,
        objective=objective,
    )
    row = json.loads(report.to_json())
    row["cpu_s"] = time.process_time() - start
    row["key"] = _key(env_id, n_jobs, base, copies, lookahead, objective)
    return row


def _key(
    env_id: str,
    n_jobs: int | None,
    base: str | None,
    copies: str,
    lookahead: str,
    objective: str = "jct",
) -> str:
    tail = "" if copies == "all" else f"|copies={copies}"
    tail += "" if objective == "jct" else f"|objective={objective}"
    return f"{env_id}|{n_jobs}|{base}|{lookahead}{tail}"


def run(workers: int, only: str | None, lookahead: str | None = None) -> None:
    """Every row x lookahead (or those of the ids containing ``only``, or only ``lookahead``,
    the others kept from the last run), ``workers`` processes; writes RESULTS in the order of
    ROWS."""
    rows = _rows()
    tasks = [
        (env_id, n, _episodes(env_id, n, eps, la), base, copies, objective, la)
        for env_id, n, eps, base, copies, objective in rows
        for la in _lookaheads(env_id, n)
        if (only is None or only in env_id) and (lookahead is None or la == lookahead)
    ]
    done: dict[str, dict[str, Any]] = {}
    if (only is not None or lookahead is not None) and RESULTS.exists():
        done = {r.get("key", ""): r for r in json.loads(RESULTS.read_text())["rows"]}
    with Progress(len(tasks), "rows", "headroom") as bar, worker_pool(workers) as pool:
        for row in pool.map(_task, *zip(*tasks)):
            done[row["key"]] = row
            bar.update()
    keys = [_key(e, n, b, c, la, o) for e, n, _, b, c, o in rows for la in _lookaheads(e, n)]
    rows = [done[k] for k in keys if k in done]
    data = {
        "version": __version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "held_out_first_seed": HELD_OUT,
        "rows": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    tmp.replace(RESULTS)
    print(f"wrote {RESULTS.relative_to(ROOT)}")


def _base(planner: str) -> str:
    base = planner.removeprefix("rollout:").split(",")[0]
    return base + (" (default copies only)" if "copies=default" in planner else "")


def _ci(v: list[float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def markdown(data: dict[str, Any]) -> str:
    """The docs table."""
    lines = [
        "| env id | jobs | episodes | lookahead | best heuristic | planner's base | "
        "planner / best (JCT, or the named objective) | cost / best | ms per decision | "
        "s per episode (max) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        name = r["env_id"].removeprefix("bacepipe_env/")
        bound = " (bound)" if r["bound"] else ""
        if r.get("objective", "jct") != "jct":  # its ratio is of misses (tardiness), not JCT
            bound += f"; objective {r['objective']}"
        lines.append(
            f"| {name} | {r['n_jobs']} | {len(r['seeds'])} | {r['lookahead']}{bound} | "
            f"{r['best']} | {_base(r['planner'])} | {_ci(r['ratio'])} | {_ci(r['cost_ratio'])} | "
            f"{r['ms_per_decision']:.1f} | {r['episode_s'][0]:.1f} ({r['episode_s'][1]:.1f}) |"
        )
    lines.append("")
    lines.append(
        f"Measured with bacepipe-env {data['version']}, Python {data['python']}, "
        f"{data['machine']}; held-out reset seeds from {data['held_out_first_seed']:,}; "
        "top-4 planner finished by the best heuristic; 95% paired bootstrap intervals."
    )
    return "\n".join(lines) + "\n"


def table() -> str:
    """Write the table into docs/headroom.md; returns it."""
    text = markdown(json.loads(RESULTS.read_text()))
    splice(DOCS, "headroom-table", text)
    print(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "table"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", default=None, help="only the ids containing this text")
    parser.add_argument("--lookahead", default=None, choices=LOOKAHEADS, help="only this one")
    args = parser.parse_args()
    if args.command == "run":
        run(args.workers, args.only, args.lookahead)
    else:
        table()


if __name__ == "__main__":
    main()
