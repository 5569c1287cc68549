"""Data-parallel copies of a pipeline (semantics §3e) and the greedy elasticity rule (§3f),
worked out by hand.

Common numbers (physical model, no recomputation, memory ignored). Constants S = m = 1, peak
1 GFLOP/s, mfu 1, power 0.5 kW per GPU, 2-byte activations and gradients. Model ``DP``:
N = 3e9, 2 layers, hidden 5e8, batch 4, so M = 4 micro-batches and
A = 1 * 1 * 5e8 * 2 = 1e9 bytes. Forward ``t_f(L) = 2 N m S / (L peak mfu) = 6 / L`` s,
backward twice that, ``t_b(L) = 12 / L``. Every intra bandwidth and link is 8 Gbps = 1e9 B/s,
so a hop takes 1 s. Dataset ``D``: 400 samples, I = ceil(400 / 4) = 100 iterations.

One pipeline (physical, ``fwd_sum + L t_f + (M-1) max(t_f, hop)`` plus the same backward):

- L = 1: (6 + 3 * 6) + (12 + 3 * 12) = 72 s; L = 2: (1 + 6 + 3 * 3) + (1 + 12 + 3 * 6) = 47 s,
  so K* = 2 and one pipeline runs E = 100 * 47 = 4700 s.

Two copies of the 2-stage pipeline: each runs ceil(4 / 2) = 2 micro-batches,
(1 + 6 + 1 * 3) + (1 + 12 + 1 * 6) = 29 s, then the all-reduce. A stage's gradients are
G = 2 * 3e9 / 2 = 3e9 bytes; each ring step sends a chunk G / 2 = 1.5e9 bytes along every
edge, and there are 2 (d - 1) = 2 steps.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from bacepipe_env.core import Placement, Simulator
from bacepipe_env.core.perf import (
    allreduce_link_bytes,
    allreduce_time,
    job_iteration_time,
    replica_micro_batches,
    ring_allreduce_bytes,
    ring_allreduce_time,
)
from bacepipe_env.errors import ScenarioError, SimulationError, ValidationError
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import build_scenario, load_scenario

REL = 1e-12
# 2-byte gradients (``bytes_per_grad``, 4 by default since issue 44): the arithmetic below
# (G = 2 * 3e9 / 2 = 3e9 bytes) is worked out for them; tests/core/test_perf.py has the default
CONSTANTS = {
    "seq_len": 1,
    "micro_batch": 1,
    "peak_tflops": 0.001,
    "mfu": 1.0,
    "power_kw": 0.5,
    "bytes_per_grad": 2,
}
MODEL = {"name": "DP", "params": 3e9, "layers": 2, "hidden": 500_000_000, "batch": 4}


def _scenario(regions: list[tuple[str, int, float]], jobs: list[dict[str, Any]], **world: Any):
    spec: dict[str, Any] = {
        "name": "golden-dp",
        "model": "physical",
        "scheduler_model": "world",
        "recompute": False,
        "ignore_memory": True,
        "constants": CONSTANTS,
        "regions": [
            {"name": n, "gpus": g, "price_usd_per_kwh": p, "intra_gbps": 8} for n, g, p in regions
        ],
        "models": [MODEL],
        "datasets": [{"name": "D", "samples": 400}],
        "jobs": [{"model": "DP", "dataset": "D", **j} for j in jobs],
        **world,
    }
    spec["links"] = (
        {"pairs": [{"a": "R0", "b": "R1", "gbps": 8}]}
        if len(regions) > 1
        else {"matrix_gbps": [[0]]}
    )
    return build_scenario(spec)


def test_the_ring_arithmetic() -> None:
    # 2 (d - 1) / d of the buffer on every edge; 2 (d - 1) steps of the slowest edge's chunk
    assert ring_allreduce_bytes(3e9, 2) == 3e9
    assert ring_allreduce_bytes(3e9, 4) == 4.5e9  # 2 * 3 / 4
    assert ring_allreduce_bytes(3e9, 1) == 0.0
    assert ring_allreduce_time(1.5, 2) == 3.0
    assert ring_allreduce_time(1.5, 1) == 0.0
    assert replica_micro_batches(4, 2) == 2
    assert replica_micro_batches(5, 2) == 3  # the slowest copy's share
    assert replica_micro_batches(4, 1) == 4


def test_two_copies_in_one_region() -> None:
    """R0 has 4 GPUs: the copies are R0:2 and R0:2; every ring edge is inside R0, a chunk
    takes 1.5e9 / 1e9 = 1.5 s, the all-reduce 2 * 1.5 = 3 s, the iteration 29 + 3 = 32 s
    (one pipeline: 47 s), E = 3200 s; 4 GPUs at $0.1/kWh and 0.5 kW for 3200 s."""
    scn = _scenario([("R0", 4, 0.1)], [{"min_replicas": 2, "max_replicas": 2}])
    prof = scn.profiles[1]
    assert prof.k_star == 2 and prof.iterations == 100
    result = make_policy("sjf").simulate(scn)
    (rec,) = result.records
    assert rec.placement == Placement((0,), (2,), (Placement((0,), (2,)),))
    assert rec.placement.n_gpus == 4 and rec.placement.stages == 2
    assert allreduce_time(prof, scn.cluster, rec.placement) == pytest.approx(3.0, rel=REL)
    assert job_iteration_time(prof, scn.cluster, rec.placement) == pytest.approx(32.0, rel=REL)
    assert rec.execution == pytest.approx(3200.0, rel=REL)
    assert rec.cost == pytest.approx(4 * 0.1 * 0.5 * 3200 / 3600, rel=REL)
    assert rec.to_dict(scn.cluster.names)["replicas"] == [
        [{"region": "R0", "gpus": 2}],
        [{"region": "R0", "gpus": 2}],
    ]
    one = _scenario([("R0", 4, 0.1)], [{}])
    assert make_policy("sjf").simulate(one).records[0].execution == pytest.approx(4700.0, rel=REL)


def test_two_copies_across_a_link_book_and_bill_the_all_reduce() -> None:
    """R0 (2 GPUs, $0.1) and R1 (2 GPUs, $0.3): the copies are R0:2 and R1:2. Each stage's ring
    crosses R0 -> R1 and R1 -> R0, so each direction carries 2 chunks per step:
    2 * 1.5e9 / 1e9 = 3 s a step, the all-reduce 6 s, the iteration 29 + 6 = 35 s, E = 3500 s.
    Each direction carries 2 edges * G = 6e9 bytes an iteration: booked at 6e9 / 35 B/s both
    ways (the physical world books a pair both ways, the busier direction's rate), billed at
    $0.02/GB: 12 GB * $0.02 * 100 iterations = $24."""
    scn = _scenario(
        [("R0", 2, 0.1), ("R1", 2, 0.3)],
        [{"min_replicas": 2, "max_replicas": 2}],
        egress_usd_per_gb=0.02,
    )
    sim = Simulator(scn, make_policy("sjf").placement)
    assert sim.next_decision() == (1,)
    p = sim.place(1)
    assert p == Placement((0,), (2,), (Placement((1,), (2,)),))
    assert p.ring == ((((0, 1), 2), ((1, 0), 2)), ())
    assert allreduce_link_bytes(scn.profiles[1], p) == (((0, 1), 6e9), ((1, 0), 6e9))
    reserved = sim.reserved_bandwidth
    assert reserved[0, 1] == pytest.approx(6e9 / 35, rel=REL)
    assert reserved[1, 0] == pytest.approx(6e9 / 35, rel=REL)
    assert sim.free_gpus == (0, 0)
    while sim.next_decision() is not None:
        pass
    (rec,) = sim.result().records
    assert rec.execution == pytest.approx(3500.0, rel=REL)
    assert rec.egress_cost == pytest.approx(24.0, rel=REL)
    assert rec.cost == pytest.approx((2 * 0.1 + 2 * 0.3) * 0.5 * 3500 / 3600, rel=REL)
    assert sim.free_gpus == (2, 2) and sim.reserved_bandwidth.max() == 0.0


def test_the_greedy_rule_grows_a_job_once_it_has_run_min_run() -> None:
    """One job, 1 to 2 copies, greedy rule (min gain 5%, min run 0.25 h = 900 s), checkpoint
    60 s + restart 600 s per resize. It starts on R0:2 (E = 4700 s). At 900 s (its wake-up)
    it has 100 - 900 / 47 iterations left: 3800 s on one copy, or 660 + (100 - 900/47) * 32 =
    3247.23 s on two, a gain of 552.77 s > 5% of 3800 s: it grows. The new attempt restarts
    for 660 s and finishes at 900 + 660 + (100 - 900 / 47) * 32 = 4760 - 28800 / 47 s."""
    scn = _scenario([("R0", 4, 0.1)], [{"max_replicas": 2}], elasticity="greedy")
    result = make_policy("sjf").simulate(scn)
    (rec,) = result.records
    assert result.elasticity == "greedy" and result.n_resizes == rec.resizes == 1
    first, second = rec.attempts
    assert (first.start, first.end, first.outcome) == (0.0, 900.0, "resized")
    assert first.placement == Placement((0,), (2,))
    assert second.placement.n_replicas == 2 and second.outcome == "completed"
    assert rec.finish_time == pytest.approx(4760 - 28800 / 47, rel=REL)
    assert rec.wasted_gpu_seconds == pytest.approx(660 * 4, rel=REL)
    assert rec.gpu_seconds == pytest.approx(2 * 900 + 4 * (rec.finish_time - 900), rel=REL)
    # without elasticity the job keeps its one copy
    still = _scenario([("R0", 4, 0.1)], [{"max_replicas": 2}])
    assert make_policy("sjf").simulate(still).records[0].finish_time == 4700.0
    assert make_policy("sjf+elastic").simulate(still).n_resizes == 1  # the policy's own rule


def test_the_greedy_rule_shrinks_a_job_to_admit_a_waiting_one() -> None:
    """As above, then J2 (one copy, needs 2 GPUs) arrives at 3600 s on a full R0. J1 has run
    2700 s since its resize: it gives back its second copy and J2 starts at once. J1 had
    100 - 900 / 47 - (3600 - 1560) / 32 = 803.75 / 47 iterations left, which one copy runs
    in 803.75 s after a 660 s restart: it finishes at 3600 + 660 + 803.75 = 5063.75 s; J2 at
    3600 + 4700 = 8300 s."""
    scn = _scenario(
        [("R0", 4, 0.1)],
        [{"max_replicas": 2}, {"submit_h": 1.0}],
        elasticity="greedy",
    )
    result = make_policy("sjf").simulate(scn)
    j1, j2 = result.records
    assert [a.outcome for a in j1.attempts] == ["resized", "resized", "completed"]
    assert j1.attempts[2].start == 3600.0 and j1.attempts[2].placement.n_replicas == 1
    assert j1.finish_time == pytest.approx(5063.75, rel=REL)
    assert (j2.start_time, j2.finish_time) == (3600.0, 8300.0)


class _AloneAdmission:
    """Admits a job only onto an idle cluster (nothing running): a rule that declines what a
    shrink or a grow would make room for, so the tests see the elastic rule ask it."""

    name = "alone"

    def admit(self, sim: Any, job_id: int, placement: Placement) -> bool:
        return not sim.running


def test_a_shrink_the_admission_rule_would_not_follow_with_a_start_never_happens() -> None:
    """The shrink test's world, under a rule that admits J2 only onto an idle cluster. At
    3600 s giving back J1's second copy would free 2 GPUs J2 could be placed on, but the
    admission rule would not start it there (J1 still runs): the greedy rule leaves J1 alone
    (before issue 44 it shrank J1 anyway and grew it back later). J1 keeps its two copies and
    finishes at 4760 - 28800 / 47 = 4147.23 s, as in the grow test, and J2 starts then."""
    scn = _scenario(
        [("R0", 4, 0.1)],
        [{"max_replicas": 2}, {"submit_h": 1.0}],
        elasticity="greedy",
    )
    sim = Simulator(scn, make_policy("sjf").placement, admission=_AloneAdmission())
    j1, j2 = sim.run(make_policy("sjf").ordering).records
    assert [a.outcome for a in j1.attempts] == ["resized", "completed"]
    assert j1.finish_time == pytest.approx(4760 - 28800 / 47, rel=REL)
    assert j2.start_time == j1.finish_time and j2.resizes == 0


def test_a_grow_never_takes_gpus_a_waiting_job_could_start_on() -> None:
    """J1 and J2 (one copy each, 2 GPUs) both arrive at 0 on R0's 4 GPUs; the rule above
    starts J1 and declines J2, which could be placed on the other 2 GPUs. At J1's wake-up
    (900 s) a second copy would gain 552.77 s (the grow test), but it would take J2's GPUs:
    J1 keeps one copy and finishes at E = 4700 s. J2 starts then, alone, and grows at its own
    wake-up, 900 s later, as in the grow test: it finishes at 4700 + 4760 - 28800 / 47 s."""
    scn = _scenario(
        [("R0", 4, 0.1)],
        [{"max_replicas": 2}, {"max_replicas": 2}],
        elasticity="greedy",
    )
    sim = Simulator(scn, make_policy("sjf").placement, admission=_AloneAdmission())
    result = sim.run(make_policy("sjf").ordering)
    j1, j2 = result.records
    assert j1.resizes == 0 and (j1.finish_time, j2.start_time) == (4700.0, 4700.0)
    got = [(a.start, a.outcome) for a in j2.attempts]
    assert got == [(4700.0, "resized"), (5600.0, "completed")]
    assert j2.finish_time == pytest.approx(4700 + 4760 - 28800 / 47, rel=REL)


def test_the_greedy_rule_grows_a_job_at_most_max_grows_times() -> None:
    """A job that may grow no more than max_grows times: with max_grows=0 the grow test's
    job keeps its one copy (E = 4700 s); a resize asked of the simulator past the bound is a
    one-line error."""
    scn = _scenario([("R0", 4, 0.1)], [{"max_replicas": 2}], elasticity="greedy:max_grows=0")
    (rec,) = make_policy("sjf").simulate(scn).records
    assert rec.resizes == 0 and rec.finish_time == 4700.0
    sim = Simulator(scn, make_policy("sjf").placement)
    assert sim.next_decision() == (1,)
    sim.place(1)
    with pytest.raises(SimulationError, match=r"cannot grow again: it grew 0 times \(the"):
        sim.resize(1, 2)
    with pytest.raises(ValidationError, match="max_grows must be a whole number"):
        _scenario([("R0", 4, 0.1)], [{}], elasticity="greedy:max_grows=1.5")


def test_a_resize_keeps_every_gpu_and_link_accounted() -> None:
    scn = _scenario([("R0", 4, 0.1)], [{"max_replicas": 2}], elasticity="greedy")
    sim = Simulator(scn, make_policy("sjf").placement)
    assert sim.next_decision() == (1,)
    sim.place(1)
    assert sim.free_gpus == (2,)
    with pytest.raises(SimulationError, match="may run 1 to 2 copies"):
        sim.resize(1, 3)
    new = sim.resize(1, 2)
    assert new.n_replicas == 2 and sim.free_gpus == (0,)
    with pytest.raises(SimulationError, match="resized at this instant"):
        sim.resize(1, 1)
    with pytest.raises(SimulationError, match="not running"):
        sim.resize(7, 1)


def test_the_paper_model_has_no_replicas() -> None:
    with pytest.raises(ScenarioError, match="no data-parallel replicas"):
        load_scenario("paper", max_replicas=2)
    with pytest.raises(ScenarioError, match="no data-parallel replicas"):
        load_scenario("paper", elasticity="greedy")
    with pytest.raises(ScenarioError, match="at least min_replicas"):
        _scenario([("R0", 4, 0.1)], [{"min_replicas": 3, "max_replicas": 2}])
    with pytest.raises(ValidationError, match="unknown rule"):
        Simulator(
            _scenario([("R0", 4, 0.1)], [{}]), make_policy("sjf").placement, elasticity="pollux"
        )


def test_a_world_without_replicas_is_unchanged_by_the_elastic_suffix() -> None:
    """``+elastic`` changes nothing where every job runs one pipeline."""
    scn = load_scenario("online", seed=3, n_jobs=30, model="physical")
    plain = make_policy("sjf").simulate(scn)
    elastic = make_policy("sjf+elastic").simulate(scn)
    assert [r.finish_time for r in plain.records] == [r.finish_time for r in elastic.records]
    assert elastic.n_resizes == 0


def test_replicas_never_exceed_their_range_or_the_micro_batches() -> None:
    scn = load_scenario("online", seed=1, n_jobs=40, model="physical", max_replicas=8)
    result = make_policy("sjf+elastic").simulate(scn)
    for rec in result.records:
        low, high = scn.replica_ranges[rec.job_id]
        m = scn.profiles[rec.job_id].n_micro
        assert high <= m
        for attempt in rec.attempts:
            assert low <= attempt.placement.n_replicas <= high
    assert math.isfinite(result.avg_jct)


def test_every_registered_heuristic_composes_with_the_elastic_rule() -> None:
    from bacepipe_env.policies.registry import policy_info, policy_names

    for name in policy_names():
        policy = make_policy(f"{name}+elastic")
        assert policy.elasticity == "greedy" and policy.name == f"{name}+elastic"
        assert policy.admission == policy_info(name).admission
        assert policy.preemption == policy_info(name).preemption
    with pytest.raises(ValidationError, match=r"\+elastic follows a registered heuristic"):
        make_policy("oracle+elastic")
    with pytest.raises(ValidationError, match="unknown policy"):
        make_policy("nope+elastic")
    scn = _scenario([("R0", 4, 0.1)], [{"max_replicas": 2}, {"submit_h": 1.0}])
    assert make_policy("sjf+finish-aware+srtf+elastic").simulate(scn).n_resizes >= 1


def test_a_planning_admission_rule_vetoes_a_grow_that_makes_a_deadline_miss() -> None:
    """The grow test's J1, and J2 (one copy, 2 GPUs, E = 4700 s) announced 1 h ahead, submitted
    at 0.3 h = 1080 s and due at 1080 + 4700 + 200 = 5980 s (1.66111... h).

    At J1's wake-up (900 s) a second copy would gain 552.77 s, and no job is pending, so
    ``finish-aware`` lets it grow: J1 holds R0's 4 GPUs until 4760 - 28800 / 47 = 4147.23 s,
    and J2 cannot start before 4147 s (5780 s at the earliest would need a start by 1280 s):
    it misses. ``deadline-plan`` plans J2 (ready 1080 s, 2 GPUs for 4700 s) before the grow:
    on the 2 free GPUs, 1080-5780 s, on time; after it: from 4147.23 s, 8847.23 s > 5980 s, a
    miss. The plan is worse, so J1 keeps one copy (finishing at 4700 s) and J2 starts at its
    submission: 1080-5780 s, on time."""
    due_h = (1080 + 4700 + 200) / 3600
    scn = _scenario(
        [("R0", 4, 0.1)],
        [{"max_replicas": 2}, {"submit_h": 0.3, "deadline_h": due_h}],
        elasticity="greedy",
        announce_h=1.0,
    )
    greedy = make_policy("edf").simulate(scn, admission="finish-aware")
    assert greedy.records[0].resizes >= 1 and greedy.records[1].missed
    planned = make_policy("edf").simulate(scn, admission="deadline-plan")
    j1, j2 = planned.records
    assert j1.resizes == 0 and j1.finish_time == 4700.0
    assert (j2.start_time, j2.finish_time, j2.missed) == (1080.0, 5780.0, False)
