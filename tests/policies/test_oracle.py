"""The exhaustive best-order oracle: a lower bound for every ordering on Pathfinder placement
when all jobs arrive together, and the run of the order it reports."""

from __future__ import annotations

import itertools

import pytest

from bacepipe_env.core import Simulator
from bacepipe_env.errors import ValidationError
from bacepipe_env.policies import PathfinderPlacement
from bacepipe_env.policies.oracle import StaticOrdering, best_static_order
from bacepipe_env.policies.registry import make_policy, policy_names
from bacepipe_env.scenarios import load_scenario


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_oracle_is_no_worse_than_any_ordering_on_the_same_placement(seed: int) -> None:
    # All jobs arrive at t = 0, so the jobs any ordering picks, in turn, form a permutation,
    # and the static order equal to that permutation replays it: the best static order is a
    # lower bound on average JCT for every ordering that uses Pathfinder placement.
    scenario = load_scenario("paper", seed=seed, n_jobs=5, gpu_scale=0.5)
    oracle = make_policy("oracle").simulate(scenario)
    for name in ("bace-pipe", "fcfs", "sjf", "random"):
        other = make_policy(name, seed=seed).simulate(scenario)
        assert oracle.avg_jct <= other.avg_jct * (1 + 1e-12), name


def test_oracle_reports_the_best_of_every_permutation() -> None:
    scenario = load_scenario("paper", seed=3, n_jobs=4, gpu_scale=0.5)
    order, result = best_static_order(scenario, PathfinderPlacement())
    sim = Simulator(scenario, PathfinderPlacement())
    runs = {}
    for perm in itertools.permutations(sorted(j.job_id for j in scenario.jobs)):
        sim.reset()
        r = sim.run(StaticOrdering(perm))
        runs[perm] = (r.avg_jct, r.total_cost)
    best = min(runs.values())
    assert (result.avg_jct, result.total_cost) == best
    assert runs[order] == best
    # ties go to the earliest permutation in lexicographic order
    assert order == min(p for p, v in runs.items() if v == best)


def test_oracle_refuses_more_than_eight_jobs() -> None:
    with pytest.raises(ValidationError, match="at most 8 jobs"):
        make_policy("oracle").simulate(load_scenario("paper", n_jobs=9))


def test_oracle_is_listed_apart() -> None:
    assert "oracle" not in policy_names()
    assert "oracle" in policy_names(include_oracles=True)
