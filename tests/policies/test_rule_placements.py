"""The placement objects of the baselines and ablations on hand-made scheduler states.

A tiny stand-in view gives the free GPUs, prices, residual bandwidth and one job's profile
(``t_comp(g) = 10 / g``, ``A = 10``), so the bandwidth check reads
``min(b_min, B[tail, u]) >= g'`` as in the pure-function tests.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bacepipe_env.core import Placement
from bacepipe_env.policies import PathfinderPlacement
from bacepipe_env.policies.baselines import PLACEMENT_RULES, RulePlacement
from bacepipe_env.policies.registry import make_policy


def t10(g: int) -> float:
    return 10.0 / g


def view(free, price, bw, k_star):
    def profile(job_id):
        job = SimpleNamespace(job_id=job_id)
        return SimpleNamespace(k_star=k_star, activation_bytes=10.0, t_comp=t10, job=job)

    return SimpleNamespace(
        free_gpus=tuple(free),
        cluster=SimpleNamespace(prices=tuple(price)),
        residual_rows=tuple(tuple(float(x) for x in row) for row in bw),
        profile=profile,
        memory_floor=lambda job_id: (1,) * len(free),  # memory is not what these tests are about
    )


def wide(k: int, value: float = 100.0):
    return [[0.0 if u == v else value for v in range(k)] for u in range(k)]


def test_rule_names():
    assert set(PLACEMENT_RULES) >= {"lcf", "ldf", "cr-lcf", "cr-ldf"}
    for name in PLACEMENT_RULES:
        assert RulePlacement(name).name == name


@pytest.mark.parametrize("rule", sorted(PLACEMENT_RULES))
def test_every_rule_returns_none_when_all_busy(rule):
    v = view([0, 0, 0], [0.1, 0.2, 0.3], wide(3), 4)
    assert RulePlacement(rule).place(v, 1) is None


def test_rule_placements_on_one_state():
    # free [3, 0, 5, 2], price [0.3, 0.1, 0.2, 0.2], every link 100, K* = 4:
    #   lcf: region 1 is cheapest but full; 2 and 3 tie at 0.2 -> 2, min(5, 4) = 4.
    #   ldf: most free is 2 (5) -> 4.
    #   cr-lcf: start at 2 (g 4 = K*) -> nothing appended.
    #   cr-ldf: start at 2 (g 4 = K*) -> nothing appended.
    v = view([3, 0, 5, 2], [0.3, 0.1, 0.2, 0.2], wide(4), 4)
    for rule in ("lcf", "ldf", "cr-lcf", "cr-ldf"):
        assert RulePlacement(rule).place(v, 7) == Placement((2,), (4,)), rule


def test_no_pathfinder_placement_cr_ldf_path_with_cost_min():
    # free [4, 6], price [0.1, 0.5], link 100 both ways, K* = 8 (no region fits K*).
    #   CR-LDF: start 1 (6 free), append 0 (g' = min(6 + 4, 8) = 8 <= 100) -> path [1, 0].
    #     CR-LDF's own fill: 1 takes 6, 0 takes 2.
    #     Alg. 2 on that path: one each, surplus 6 by price: 0 +3 (full at 4), 1 +3 -> (4, 4).
    #   BACE-Pipe (Pathfinder): start 0 -> [0, 1], Alg. 2 {0: 4, 1: 4}, avg 0.3; start 1 ->
    #     [1, 0] with the same allocation and average: a tie keeps the first -> [0, 1].
    v = view([4, 6], [0.1, 0.5], wide(2), 8)
    assert RulePlacement("cr-ldf").place(v, 1) == Placement((1, 0), (6, 2))
    assert make_policy("no-pathfinder").placement.place(v, 1) == Placement((1, 0), (4, 4))
    assert PathfinderPlacement().place(v, 1) == Placement((0, 1), (4, 4))


def test_no_costmin_placement_phase1_is_unchanged():
    # free [6, 2], price [0.3, 0.1], K* = 5: region 0 fits K* alone -> (0: 5) for both.
    v = view([6, 2], [0.3, 0.1], wide(2), 5)
    assert make_policy("no-costmin").placement.place(v, 1) == Placement((0,), (5,))
    assert PathfinderPlacement().place(v, 1) == Placement((0,), (5,))


def test_no_costmin_placement_spreads_evenly_on_the_grown_path():
    # free [4, 8], price [0.3, 0.1], link 100 both ways, K* = 10 (nothing fits alone).
    #   start 0: g 4, append 1 (g' = min(12, 10) = 10 <= 100) -> [0, 1], g 10.
    #   start 1: g 8, append 0 (g' = 10) -> [1, 0], g 10.
    #   Alg. 2: one each + surplus 8 by price: 1 +7 (full), 0 +1 -> {0: 2, 1: 8}, avg 0.14 for
    #     both starts; a tie keeps start 0 -> BACE-Pipe: [0, 1], GPUs (2, 8).
    #   Even: 10 over (4, 8): level t with 4 + t = 10 -> t = 6 (region 0 capped at 4) ->
    #     {0: 4, 1: 6}, avg 0.18 for both starts -> no-costmin: [0, 1], GPUs (4, 6).
    v = view([4, 8], [0.3, 0.1], wide(2), 10)
    assert make_policy("no-costmin").placement.place(v, 1) == Placement((0, 1), (4, 6))
    assert PathfinderPlacement().place(v, 1) == Placement((0, 1), (2, 8))


def test_no_costmin_path_choice_uses_the_even_spread():
    # free [4, 4, 4, 4], price [0.1, 0.25, 0.5, 0.25], K* = 6. Only 0 <-> 2 and 1 <-> 3 are
    # wide (100); every other link is 1 < any g' >= 5, so the grown paths are [0, 2], [1, 3],
    # [2, 0], [3, 1], each with g = 6.
    #   Alg. 2: {0: 4, 2: 2} -> (0.4 + 1.0) / 6 = 0.233; {1: 3, 3: 3} -> 0.25  => [0, 2].
    #   Even:   {0: 3, 2: 3} -> (0.3 + 1.5) / 6 = 0.3;   {1: 3, 3: 3} -> 0.25  => [1, 3].
    # The w/o Cost-Min ablation compares paths with the even spread too (Alg. 1 line 18-20 with
    # Alg. 2 swapped out), so it picks another path than BACE-Pipe here.
    bw = [[0.0 if u == v else 1.0 for v in range(4)] for u in range(4)]
    bw[0][2] = bw[2][0] = bw[1][3] = bw[3][1] = 100.0
    v = view([4, 4, 4, 4], [0.1, 0.25, 0.5, 0.25], bw, 6)
    assert PathfinderPlacement().place(v, 1) == Placement((0, 2), (4, 2))
    assert make_policy("no-costmin").placement.place(v, 1) == Placement((1, 3), (3, 3))
