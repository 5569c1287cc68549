"""The paper's Fig. 1 example (Section II-B, semantics §7) under the four baselines.

Numbers, from the ``fig1`` scenario (S = 2048, m = 1, peak 154.8 TFLOP/s, mfu 0.4, bf16):

- P = Qwen2.5-14B: A = 2048 * 5120 * 2 = 20,971,520 B;
  t_comp(L) = 2 * 14e9 * 2048 / (154.8e12 * 0.4) / L = 0.92610 / L s;
  b(L) = A / t_comp(L) = 22.645e6 * L B/s.
- Q = Llama-3.1-70B: A = 2048 * 8192 * 2 = 33,554,432 B;
  t_comp(L) = 2 * 70e9 * 2048 / 6.192e13 / L = 4.6305 / L s; b(L) = 7.2465e6 * L B/s.
- K* (Eq. 13, intra hops at 100 Gbps = 12.5e9 B/s): the hop is 1.68 ms (P) / 2.68 ms (Q),
  far below t_comp at every layer count, so t_iter(k) ~ 2 ((k - 1) hop + (M - 1) t_comp(1) / k)
  keeps falling up to k ~ 530 (P) / ~470 (Q): K* = n_layers = 48 (P) and 80 (Q). No cap binds.
- Links in B/s (Mbps * 1e6 / 8): A-C 125e6, A-D 87.5e6, B-C 50e6, A-B 37.5e6, C-D 37.5e6,
  B-D 25e6.

Both jobs arrive at t = 0 in the order P, Q and every baseline is FCFS, so P is placed first.
"""

from __future__ import annotations

import pytest

from bacepipe_env.core import Simulator
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import load_scenario


@pytest.fixture(scope="module")
def fig1():
    return load_scenario("fig1")


def _placements(scn, policy: str) -> dict[str, list[tuple[str, int]]]:
    res = make_policy(policy).simulate(scn)
    names = scn.cluster.names
    assert res.policy == policy
    assert all(r.start_time == 0.0 and r.wait == 0.0 for r in res.records)
    return {
        r.name: [(names[u], n) for u, n in zip(r.placement.path, r.placement.gpus)]
        for r in res.records
    }


def test_fig1_profiles_match_the_hand_numbers(fig1):
    prof = {j.name: fig1.profiles[j.job_id] for j in fig1.jobs}
    assert [j.name for j in fig1.jobs] == ["P", "Q"]
    assert prof["P"].k_star == 48
    assert prof["Q"].k_star == 80
    assert prof["P"].activation_bytes == 20_971_520
    assert prof["Q"].activation_bytes == 33_554_432
    assert prof["P"].min_bandwidth(1) == pytest.approx(22.645e6, rel=1e-4)
    assert prof["Q"].min_bandwidth(1) == pytest.approx(7.2465e6, rel=1e-4)
    assert list(fig1.cluster.names) == ["A", "B", "C", "D"]
    assert fig1.cluster.bandwidth[0, 2] == pytest.approx(125e6)
    assert fig1.cluster.bandwidth[1, 3] == pytest.approx(25e6)


def test_fig1_lcf(fig1):
    # P: cheapest region with a free GPU is C ($0.191) -> min(2, 48) = 2.
    # Q: C is full; next cheapest B ($0.222 < A's $0.230) -> min(3, 80) = 3.
    assert _placements(fig1, "lcf") == {"P": [("C", 2)], "Q": [("B", 3)]}


def test_fig1_ldf(fig1):
    # P: most free GPUs is A (4) -> 4. Q: B has 3, C and D 2 -> B with 3.
    assert _placements(fig1, "ldf") == {"P": [("A", 4)], "Q": [("B", 3)]}


def test_fig1_cr_lcf(fig1):
    # P: price order C, B, A, D. Start C (g 2).
    #   B: g' 5, b(5) = 113.2e6 > B[C, B] = 50e6 -> skip.
    #   A: g' 6, b(6) = 135.9e6 > 125e6 -> skip.
    #   D: g' 4, b(4) = 90.6e6 > 37.5e6 -> skip.            P -> C:2
    # Q: free A 4, B 3, D 2; order B, A, D. Start B (g 3).
    #   A: g' 7, b(7) = 50.7e6 > 37.5e6 -> skip.  D: g' 5, b(5) = 36.2e6 > 25e6 -> skip.
    #                                                        Q -> B:3
    assert _placements(fig1, "cr-lcf") == {"P": [("C", 2)], "Q": [("B", 3)]}


def test_fig1_cr_ldf(fig1):
    # P: start A (4). Widest from A is C (125e6): g' 6, b(6) = 135.9e6 > 125e6 -> stop.
    #                                                        P -> A:4
    # Q: free B 3, C 2, D 2. Start B. Widest from B among C (50e6), D (25e6) -> C:
    #   g' 5, b(5) = 36.2e6 <= 50e6 -> append (P reserved nothing: single region).
    #   From C: only D (37.5e6), bottleneck 37.5e6; g' 7, b(7) = 50.7e6 > 37.5e6 -> stop.
    #   Fill in path order: B 3, C 2.                        Q -> B:3 > C:2
    assert _placements(fig1, "cr-ldf") == {"P": [("A", 4)], "Q": [("B", 3), ("C", 2)]}


def test_fig1_lcf_step_by_step(fig1):
    # The stepping API shows the same decisions: both jobs are candidates at t = 0, FCFS takes
    # P (job 1) first; after it C is full.
    pol = make_policy("lcf")
    sim = Simulator(fig1, pol.placement)
    cands = sim.next_decision()
    assert cands == (1, 2)
    assert pol.ordering.choose(sim, cands) == 1
    p = sim.place(1)
    assert (p.path, p.gpus) == ((2,), (2,))
    assert sim.free_gpus == (4, 3, 0, 2)
    cands = sim.next_decision()
    assert cands == (2,)
    p = sim.place(2)
    assert (p.path, p.gpus) == ((1,), (3,))
    assert sim.free_gpus == (4, 0, 0, 2)
    assert sim.next_decision() is None
    assert sim.done
