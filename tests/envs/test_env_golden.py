"""A golden episode on the tiny hand-made scenario of ``conftest.py``: the reward scales, every
step's reward and the exact observation arrays after every step, derived by hand.

Observation scales (ObsScales defaults): GPUs / 128, $/kWh / 0.35, ``lg(Gbps) = log10(1 + Gbps)
/ 2``, ``lh(hours) = log10(1 + hours) / 4``. ``max_queue = 3``, two regions, no padding.

Reward scales. ``jct_norm`` = the jobs' ideal executions = 10 h + 2 h + 5.5 h = 17.5 h = 63000 s
(``jct_scale`` = 63000 / 3 = 21000 s). ``cost_norm`` = every job on K* GPUs for its ideal
execution at the mean price (0.2 + 0.1) / 2 = $0.15/kWh and 1 kW per GPU: (3 * 10 + 1 * 2 +
2 * 5.5) GPU-h = 43 GPU-h -> $6.45.

Placements (Pathfinder + Cost-Min on the idle cluster):

- A (K* = 3): no region has 3 GPUs, so Phase 2. From X: 2 GPUs, then the widest link to Y:
  ``A / 1e9 = 0.5 s <= t_comp(3) = 2/3 s``, so 3 GPUs on X > Y; Cost-Min gives one to each
  region, the third to the cheaper Y: X:1 > Y:2. From Y the path Y > X gets the same GPUs and
  the same average price, a tie that keeps the first. Hops: X -> Y 0.5 s, inside Y 1 s;
  ``t_iter = (1.5 + 3 * 2/3 + 3 * max(2/3, 1)) * 2 = 13 s``: E = 13 h. It reserves
  ``b(3) = 7.5e8`` B/s on X -> Y (alpha = 7.5e8 / 2e9 = 0.375); 0.4 $/h on 1 + 2 GPUs.
- B (K* = 1) on the idle cluster: the cheapest region, Y:1 (E = 2 h, $0.10). After A took
  Y's GPUs: X:1 (E = 2 h, 0.2 $/h).
- C (K* = 2) once B has left X at 2 h: X is the only region with a free GPU and has no
  unvisited neighbour with GPUs, so X:1 (L = 1 < K*): ``t_iter(1) = (2 + 3 * 2) * 2 = 16 s``,
  E = 8 h, 0.2 $/h.

Playing slot 0 every step: A at 0 (ends 13 h), B at 0 (ends 2 h), C waits from 1 h to 2 h
(ends 10 h). JCTs 13 h, 2 h, 9 h: average 8 h = 28800 s. Costs 5.2 + 0.4 + 1.6 = $7.2.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from bacepipe_env.core.snapshot import QueueSnapshot
from bacepipe_env.envs import GeoPipeEnv, RewardTerms

H = 3600.0
JCT_NORM = 63000.0
COST_NORM = 6.45
ALPHA = 0.375  # A's reservation on X -> Y over the 2e9 B/s of both links


def lg(gbps: float) -> float:
    return math.log10(1.0 + gbps) / 2


def lh(hours: float) -> float:
    return math.log10(1.0 + hours) / 4


def f32(rows: object) -> np.ndarray:
    return np.array(rows, dtype=np.float32)


def regions(free_x: int, free_y: int) -> np.ndarray:
    #      present, free/capacity, capacity/128, price/0.35, lg(intra Gbps)
    return f32(
        [
            [1, free_x / 2, 2 / 128, 0.2 / 0.35, lg(8)],
            [1, free_y / 2, 2 / 128, 0.1 / 0.35, lg(4)],
        ]
    )


def bandwidth(residual_xy_gbps: float) -> np.ndarray:
    #  layer 0: residual, layer 1: capacity; row u, column v; zero diagonal
    return f32(
        [
            [[0, lg(residual_xy_gbps)], [lg(8), 0]],
            [[0, lg(8)], [lg(8), 0]],
        ]
    )


ZERO_ROW = [0.0] * 11


def assert_obs(obs: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> None:
    assert obs.keys() == expected.keys()
    for key, value in expected.items():
        assert obs[key].dtype == value.dtype, key
        np.testing.assert_array_equal(obs[key], value, err_msg=key)


def test_golden_episode(tiny_scenario) -> None:
    env = GeoPipeEnv(tiny_scenario, max_queue=3, info="full")
    obs, info = env.reset(seed=0)
    assert info["jct_scale_s"] == pytest.approx(JCT_NORM / 3, rel=1e-12)
    assert info["cost_scale_usd"] == pytest.approx(COST_NORM, rel=1e-12)
    assert env.reward_scales.jct_norm == pytest.approx(JCT_NORM, rel=1e-12)

    # ---- t = 0, pending A, B. E(1) max = 16 h (A), b(K*) max = 7.5e8 (A).
    #      present, I_j, D_j, lh(E(1)), lg(b(K*)), K*/128, lh(wait),
    #      preview: GPUs/K*, regions/2, lh(E), price/0.35
    a_row = [1, 1, 1, lh(16), lg(6), 3 / 128, 0, 3 / 3, 2 / 2, lh(13), (0.2 + 2 * 0.1) / 3 / 0.35]
    b_row = [1, 2 / 16, 4 / 6, lh(2), lg(4), 1 / 128, 0, 1 / 1, 1 / 2, lh(2), 0.1 / 0.35]
    assert_obs(
        obs,
        {
            "regions": regions(2, 2),
            "bandwidth": bandwidth(8),
            "queue": f32([a_row, b_row, ZERO_ROW]),
            #              alpha, lh(t), pending/3, hidden/3, running/3, free/total
            "summary": f32([0, 0, 2 / 3, 0, 0, 4 / 4]),
            "action_mask": np.array([1, 1, 0], dtype=np.int8),
        },
    )
    assert info["queue"] == QueueSnapshot(
        job_ids=(1, 2),
        single_gpu_exec=(16 * H, 2 * H),
        min_bandwidth_kstar=(7.5e8, 5e8),
        submit_time=(0.0, 0.0),
        pending_e1_max=16 * H,
        pending_bkstar_max=7.5e8,
        alpha=0.0,
        time=0.0,
        ideal_execution=(10 * H, 2 * H),  # E* of A and B (the ideal executions above)
        due=(math.inf, math.inf),  # no deadlines
    )
    assert info["queue"] is env.queue_snapshot
    assert info["reward_terms"] == RewardTerms(0.0, 0.0, False)

    # ---- step 1: A starts on X:1 > Y:2. B can start at once: same instant, no reward.
    obs, reward, terminated, truncated, info = env.step(0)
    assert reward == 0.0 and not terminated and not truncated
    rewards = [reward]
    b_row = [1, 1, 1, lh(2), lg(4), 1 / 128, 0, 1 / 1, 1 / 2, lh(2), 0.2 / 0.35]  # now on X:1
    assert_obs(
        obs,
        {
            "regions": regions(1, 0),
            "bandwidth": bandwidth(8 - 6),  # A holds 6 Gbps of X -> Y
            "queue": f32([b_row, ZERO_ROW, ZERO_ROW]),
            "summary": f32([ALPHA, 0, 1 / 3, 0, 1 / 3, 1 / 4]),
            "action_mask": np.array([1, 0, 0], dtype=np.int8),
        },
    )
    assert info["queue"].job_ids == (2,) and info["time_s"] == 0.0

    # ---- step 2: B starts on X:1. No GPU is free; C arrives at 1 h; B ends at 2 h.
    # dJ = 2 jobs * 1 h + 3 jobs * 1 h = 5 h = 18000 s; dC = (0.4 + 0.2) $/h * 2 h = $1.2.
    # r = -(18000 / 63000 + 0.25 * 1.2 / 6.45) = -(2/7 + 2/43)
    obs, reward, terminated, truncated, info = env.step(0)
    assert reward == pytest.approx(-(2 / 7 + 2 / 43), rel=1e-12)
    assert info["reward_terms"].jct == pytest.approx(2 / 7, rel=1e-12)
    assert info["reward_terms"].cost == pytest.approx(8 / 43, rel=1e-12)
    assert info["reward_jct"] == pytest.approx(-2 / 7, rel=1e-12)
    assert info["reward_cost"] == pytest.approx(-2 / 43, rel=1e-12)
    # the tiny regions emit nothing (carbon 0 gCO2e/kWh): the carbon term is 0
    np.testing.assert_allclose(info["reward_vector"], [-2 / 7, -8 / 43, 0.0], rtol=1e-12)
    assert info["reward_terms"].carbon == 0.0 and info["carbon_kg"] == 0.0
    assert info["time_s"] == 2 * H and not terminated and not truncated
    # C alone: I_j = D_j = 1, E(1) = 8 h, 4 Gbps, K* = 2, waited 1 h, preview X:1 for 8 h
    c_row = [1, 1, 1, lh(8), lg(4), 2 / 128, lh(1), 1 / 2, 1 / 2, lh(8), 0.2 / 0.35]
    assert_obs(
        obs,
        {
            "regions": regions(1, 0),
            "bandwidth": bandwidth(2),
            "queue": f32([c_row, ZERO_ROW, ZERO_ROW]),
            "summary": f32([ALPHA, lh(2), 1 / 3, 0, 1 / 3, 1 / 4]),
            "action_mask": np.array([1, 0, 0], dtype=np.int8),
        },
    )
    c_queue = QueueSnapshot((3,), (8 * H,), (5e8,), (H,), 8 * H, 5e8, ALPHA, 2 * H)
    # E* of C = 5.5 h (its ideal execution above); no deadline
    assert info["queue"] == dataclasses.replace(
        c_queue, ideal_execution=(5.5 * H,), due=(math.inf,)
    )
    rewards.append(reward)

    # ---- step 3: C starts on X:1 at 2 h; nothing is left to decide: C ends at 10 h, A at 13 h.
    # dJ = 2 jobs * 8 h + 1 job * 3 h = 19 h = 68400 s; dC = 0.6 $/h * 8 h + 0.4 $/h * 3 h = $6.
    # r = -(68400 / 63000 + 0.25 * 6 / 6.45) = -(38/35 + 10/43)
    obs, reward, terminated, truncated, info = env.step(0)
    assert reward == pytest.approx(-(38 / 35 + 10 / 43), rel=1e-12)
    assert terminated and not truncated
    assert info["time_s"] == 13 * H
    assert_obs(
        obs,
        {
            "regions": regions(2, 2),
            "bandwidth": bandwidth(8),  # A's reservation is gone
            "queue": f32([ZERO_ROW, ZERO_ROW, ZERO_ROW]),
            "summary": f32([0, lh(13), 0, 0, 0, 1]),
            "action_mask": np.array([0, 0, 0], dtype=np.int8),
        },
    )
    assert info["episode_avg_jct_s"] == pytest.approx(8 * H, rel=1e-12)
    assert info["episode_total_cost_usd"] == pytest.approx(7.2, rel=1e-12)
    assert info["episode_makespan_s"] == 13 * H
    # JCTs: A 13 h, B 2 h, C 10 h - 1 h = 9 h; ideal executions 10 h, 2 h, 5.5 h
    assert info["episode_jobs_completed"] == 3
    assert info["episode_jct_p50_s"] == pytest.approx(9 * H, rel=1e-12)
    assert info["episode_jct_p95_s"] == pytest.approx(12.6 * H, rel=1e-12)  # 9 + 0.9 * 4 h
    assert info["episode_jct_p99_s"] == pytest.approx(12.92 * H, rel=1e-12)
    slowdown = (13 / 10 + 2 / 2 + 9 / 5.5) / 3
    assert info["episode_mean_slowdown"] == pytest.approx(slowdown, rel=1e-12)
    assert info["episode_carbon_kg"] == 0.0 and info["episode_egress_usd"] == 0.0
    # the return is the objective: -(8 h / 21000 s + 0.25 * 7.2 / 6.45) = -(48/35 + 12/43)
    returned = math.fsum([*rewards, reward])
    assert returned == pytest.approx(-(48 / 35 + 12 / 43), rel=1e-12)
    objective = -(info["episode_avg_jct_s"] / info["jct_scale_s"])
    objective -= 0.25 * info["episode_total_cost_usd"] / info["cost_scale_usd"]
    assert returned == pytest.approx(objective, rel=1e-12)


def test_golden_wait(tiny_scenario) -> None:
    """With ``allow_wait`` the agent may wait at t = 0 for C's arrival at 1 h: two jobs in the
    system for an hour, nothing running. r = -(7200 / 63000) = -4/35."""
    env = GeoPipeEnv(tiny_scenario, max_queue=3, allow_wait=True, info="full")
    _, info = env.reset(seed=0)
    assert info["action_mask"].tolist() == [True, True, False, True]  # an arrival is to come
    obs, reward, terminated, _, info = env.step(3)
    assert reward == pytest.approx(-4 / 35, rel=1e-12)
    assert info["reward_terms"] == RewardTerms(pytest.approx(4 / 35, rel=1e-12), 0.0, False)
    assert info["time_s"] == H and not terminated
    # every job is pending and no event is to come: waiting is no longer legal.
    # C on the idle cluster: Y:2 (phase 1, the cheaper region), hop 1 s:
    # t_iter = (1 + 2 * 1 + 3 * 1) * 2 = 12 s -> 6 h.
    a_row = [1, 1, 1, lh(16), lg(6), 3 / 128, lh(1), 1, 1, lh(13), (0.2 + 2 * 0.1) / 3 / 0.35]
    b_row = [1, 2 / 16, 4 / 6, lh(2), lg(4), 1 / 128, lh(1), 1, 1 / 2, lh(2), 0.1 / 0.35]
    c_row = [1, 8 / 16, 4 / 6, lh(8), lg(4), 2 / 128, 0, 2 / 2, 1 / 2, lh(6), 0.1 / 0.35]
    np.testing.assert_array_equal(obs["queue"], f32([a_row, b_row, c_row]))
    np.testing.assert_array_equal(obs["summary"], f32([0, lh(1), 3 / 3, 0, 0, 1]))
    assert obs["action_mask"].tolist() == [1, 1, 1, 0]
