"""benchmarks/headroom.py: the committed results carry every row the script promises, the
docs carry their table, and the clairvoyant rows keep the planner's guarantee."""

from __future__ import annotations

import json
from types import ModuleType

import pytest


@pytest.fixture(scope="module")
def bench(benchmark_module) -> ModuleType:
    return benchmark_module("headroom")


@pytest.fixture(scope="module")
def data(bench) -> dict:
    return json.loads(bench.RESULTS.read_text())


def test_the_docs_carry_the_table_of_the_committed_results(bench, data) -> None:
    from benchmarks.tables import between  # importable once the script put the root on sys.path

    assert between(bench.DOCS, "headroom-table") == "\n" + bench.markdown(data), (
        "docs/headroom.md: run python benchmarks/headroom.py table"
    )


def test_every_row_and_lookahead_is_there_on_the_held_out_episodes(bench, data) -> None:
    rows = iter(data["rows"])
    count = 0
    for env_id, n_jobs, episodes, base, copies, objective in bench._rows():
        lookaheads = bench._lookaheads(env_id, n_jobs)
        group = [next(rows) for _ in lookaheads]
        count += len(group)
        assert [r["lookahead"] for r in group] == list(lookaheads)
        for r in group:
            assert r["env_id"] == env_id
            assert n_jobs is None or r["n_jobs"] == n_jobs
            played = bench._episodes(env_id, n_jobs, episodes, r["lookahead"])
            assert r["seeds"] == [bench.HELD_OUT + i for i in range(played)]
            assert r["planner"].startswith(f"rollout:{base or r['best']},k=4,")
            assert ("copies=default" in r["planner"]) == (copies == "default")
            assert r["bound"] == (r["lookahead"] == "clairvoyant")
            # the best heuristic is the lowest mean of those the id's agent can play, by the
            # row's objective (JCT, or a deadline objective's scores)
            scores = r.get("scores") or r["heuristics"]
            assert scores[r["best"]] == min(scores.values())
            assert r.get("objective", "jct") == objective
    assert count == len(data["rows"])


def test_a_clairvoyant_planner_over_the_best_heuristic_never_loses_an_episode(data) -> None:
    """The guarantee of policies/rollout.py on the committed episodes (a deterministic base:
    the random ordering draws differently in each fork)."""
    checked = 0
    for r in data["rows"]:
        base = r["planner"].removeprefix("rollout:").split(",")[0]
        if r["lookahead"] != "clairvoyant" or base != r["best"] or base == "random":
            continue
        if r.get("objective", "jct") != "jct":  # its guarantee is on misses, not JCT
            continue
        for mine, best in zip(r["planner_jct_h"], r["best_jct_h"]):
            assert mine <= best * (1 + 1e-9)
        checked += 1
    assert checked >= 6
