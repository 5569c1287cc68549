"""Admission rules (semantics §3b) on small scenarios worked out by hand.

Common numbers. Constants S = m = 1, peak 1 FLOP/s, mfu 1; every model has N = 6, h = 1 and
batch 4, so M = 4 micro-batches, A = m * S * h * 2 = 2 bytes and t_comp(L) = 2 N / L = 12 / L s.
One region R0 with 4 GPUs at $1/kWh and a 2 B/s intra link: every hop takes A / 2 = 1 s.
Power 3.6 kW, so Eq. (4) is cost = E / 3600 * n * 1 * 3.6 = E * n / 1000 dollars.
Memory: 16 * 6 / n_layers bytes of state per layer fit many times in a 48 GB GPU: every floor
is 1 and only admission decides.

Eq. (1) in one region, t_iter(L) = 2 ((L - 1) * 1 + L * 12 / L + 3 * max(12 / L, 1)):
    L = 1: 2 (0 + 12 + 36) = 96      L = 3: 2 (2 + 12 + 12) = 52
    L = 2: 2 (1 + 12 + 18) = 62      L = 4: 2 (3 + 12 + 9)  = 48
Models: M4 (4 layers, K* = 4), M3 (3 layers, K* = 3), M1 (1 layer, K* = 1).
A dataset of ``4 * I`` samples gives I iterations; Eq. (2) E = I * t_iter(L).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from admission_world import CLUSTER, CONST, M1, M3, M4, REL

from bacepipe_env.core import (
    Cluster,
    Job,
    ModelSpec,
    Placement,
    Region,
    Scenario,
    Simulator,
)
from bacepipe_env.core.admission import (
    ADMISSION_RULES,
    AnnounceAwareAdmission,
    FinishAwareAdmission,
    FullAdmission,
    GreedyAdmission,
    make_admission,
)
from bacepipe_env.core.simulator import Release
from bacepipe_env.core.world import World
from bacepipe_env.errors import ScenarioError, ValidationError
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import build_scenario

RULES = ["greedy", "finish-aware", "full"]


def _scenario(*jobs: tuple[ModelSpec, int], admission: str = "greedy") -> Scenario:
    """Jobs (model, iterations) submitted at t = 0 in this order, ids 1, 2, ..."""
    return Scenario(
        "admission",
        CLUSTER,
        tuple(
            Job(i, m, "d", 4 * iters, 4, constants=CONST, name=f"J{i}")
            for i, (m, iters) in enumerate(jobs, start=1)
        ),
        World(admission=admission),
    )


def _outcome(scn: Scenario, rule: str, policy: str = "fcfs") -> list[tuple[float, ...]]:
    """(start, GPUs, execution, JCT, cost) per job under FCFS + Pathfinder (or ``policy``)."""
    res = make_policy(policy).simulate(scn, admission=rule)
    assert res.admission == rule
    assert [r.job_id for r in res.records] == [j.job_id for j in scn.jobs]
    return [(r.start_time, r.n_gpus, r.execution, r.jct, r.cost) for r in res.records]


def _approx(rows: list[tuple[float, ...]]) -> Any:
    return [pytest.approx(r, rel=REL) for r in rows]


def test_profiles() -> None:
    scn = _scenario((M4, 1), (M3, 1), (M1, 1))
    assert [scn.profiles[j].k_star for j in (1, 2, 3)] == [4, 3, 1]
    assert set(scn.memory_floors.values()) == {(1,)}


# ---------------------------------------------------------------------------------------------
# (a) Finish-aware waits and wins.
#   A = M3 for 1 iteration, B = M4 for 10 iterations, FCFS.
#   t = 0: A (K* = 3) takes 3 of the 4 GPUs: E_A = 52, A finishes at 52.
#   B (K* = 4) is offered the one free GPU: now, B finishes at 0 + 10 * 96 = 960.
#   finish-aware: the next release is A's at 52, after which B would get 4 GPUs:
#     52 + 10 * 48 = 532 < 960 -> wait. At 52 B starts on 4, finishes at 532 (exactly the
#     prediction: in a two-job world nothing else can take A's GPUs).
#   full: full_gpus(B) = min(K* = 4, 4 on the idle cluster) = 4 > 1 -> wait: the same.
#   greedy: B starts at once on 1 GPU: JCT 960.
#   costs: A 52 * 3 / 1000 = 0.156; B on 1 GPU 960 / 1000 = 0.96, on 4 480 * 4 / 1000 = 1.92.
# ---------------------------------------------------------------------------------------------
def test_a_finish_aware_waits_and_wins() -> None:
    scn = _scenario((M3, 1), (M4, 10))
    a = (0.0, 3, 52.0, 52.0, 0.156)
    assert _outcome(scn, "greedy") == _approx([a, (0.0, 1, 960.0, 960.0, 0.96)])
    waited = _approx([a, (52.0, 4, 480.0, 532.0, 1.92)])
    assert _outcome(scn, "finish-aware") == waited
    assert _outcome(scn, "full") == waited
    # average JCT: greedy (52 + 960) / 2 = 506; waiting (52 + 532) / 2 = 292
    for rule, avg in [("greedy", 506.0), ("finish-aware", 292.0), ("full", 292.0)]:
        res = make_policy("fcfs").simulate(scn, admission=rule)
        assert res.avg_jct == pytest.approx(avg, rel=REL)
        # the rule's name comes from the argument; the scenario's own is greedy
        assert res.admission == rule
    # BACE-Pipe and LCF place both jobs the same way here (A first: E(1) 96 < 960)
    for policy in ("bace-pipe", "lcf", "ldf", "cr-lcf", "cr-ldf"):
        assert _outcome(scn, "finish-aware", policy) == waited, policy


def test_a_prediction_is_exact_in_a_two_job_world() -> None:
    scn = _scenario((M3, 1), (M4, 10))
    sim = Simulator(scn, make_policy("fcfs").placement, admission="finish-aware")
    assert sim.next_release() is None  # nothing running
    assert sim.next_decision() == (1, 2)
    assert sim.place(1) == Placement((0,), (3,))
    release = sim.next_release()
    assert release == Release(52.0, (4,), ((0.0,),))
    later = sim.placement_on(2, release)
    assert later == Placement((0,), (4,))
    assert sim.execution_time(2, later) == pytest.approx(480.0, rel=REL)
    assert sim.execution_time(2, Placement((0,), (1,))) == pytest.approx(960.0, rel=REL)
    assert sim.next_decision() == (2,)
    assert sim.place(2) is None  # declined: 960 > 52 + 480
    assert sim.pending == (2,)
    assert sim.free_gpus == (1,)
    # declined jobs are offered again after the next event
    assert sim.next_decision() == (2,)
    assert sim.time == pytest.approx(52.0, rel=REL)
    assert sim.place(2) == Placement((0,), (4,))
    assert sim.next_decision() is None
    rec = sim.result().records[1]
    assert rec.finish_time == pytest.approx(release.time + 480.0, rel=REL)  # the prediction


@pytest.mark.parametrize(
    "iters,start,gpus",
    [
        # A = M3 for 12 iterations: E_A = 12 * 52 = 624. B = M4:
        # 13 iterations: now 13 * 96 = 1248, waiting 624 + 13 * 48 = 1248: a tie starts now;
        (13, 0.0, 1),
        # 14 iterations: now 1344 > 624 + 672 = 1296: waits.
        (14, 624.0, 4),
    ],
)
def test_finish_aware_ties_start_now(iters: int, start: float, gpus: int) -> None:
    scn = _scenario((M3, 12), (M4, iters))
    rec = make_policy("fcfs").simulate(scn, admission="finish-aware").records[1]
    assert (rec.start_time, rec.n_gpus) == (start, gpus)


# ---------------------------------------------------------------------------------------------
# (b) Waiting loses: A = M3 for 100 iterations (E_A = 100 * 52 = 5200), B = M4 for 10, FCFS.
#   B now on 1 GPU: 960. Waiting for A: 5200 + 480 = 5680.
#   greedy and finish-aware (960 <= 5680) start B at once: JCT 960.
#   full: 1 < full_gpus(B) = 4 -> B waits for A, starts at 5200 on 4 GPUs, JCT 5680.
#   A: cost 5200 * 3 / 1000 = 15.6. Average JCT: (5200 + 960) / 2 = 3080 against
#   (5200 + 5680) / 2 = 5440 under full.
# ---------------------------------------------------------------------------------------------
def test_b_full_waits_for_a_long_job_and_loses() -> None:
    scn = _scenario((M3, 100), (M4, 10))
    a = (0.0, 3, 5200.0, 5200.0, 15.6)
    now = _approx([a, (0.0, 1, 960.0, 960.0, 0.96)])
    assert _outcome(scn, "greedy") == now
    assert _outcome(scn, "finish-aware") == now
    assert _outcome(scn, "full") == _approx([a, (5200.0, 4, 480.0, 5680.0, 1.92)])
    avg = {r: make_policy("fcfs").simulate(scn, admission=r).avg_jct for r in RULES}
    assert avg == pytest.approx({"greedy": 3080.0, "finish-aware": 3080.0, "full": 5440.0})


def test_b_under_bace_pipe_the_order_changes_and_nobody_waits() -> None:
    # Eq. (12) at alpha = 0 puts B first (E(1): B 10 * 96 = 960, A 100 * 96 = 9600): B takes
    # all 4 GPUs (E 480), A waits until 480 and then gets its K* = 3 (E 5200, JCT 5680). Every
    # placement is the idle cluster's, so all three rules agree.
    scn = _scenario((M3, 100), (M4, 10))
    for rule in RULES:
        assert _outcome(scn, rule, "bace-pipe") == _approx(
            [(480.0, 3, 5200.0, 5680.0, 15.6), (0.0, 4, 480.0, 480.0, 1.92)]
        ), rule


# ---------------------------------------------------------------------------------------------
# (c) Three jobs: finish-aware's prediction is wrong because another job takes the GPUs.
#   A = M3 for 1 iteration, B = M4 for 10, C = M1 for 10, all at t = 0, FCFS.
#   In a two-job world the finish-aware prediction is exact: the job that waits is the only
#   pending one when the release comes, so it gets exactly the placement predicted. With a
#   third job it is not:
#   t = 0: A takes 3 GPUs (finishes at 52). B declines the free GPU, predicting 52 + 480 = 532
#     (as in (a)). The pass goes on: C (K* = 1) takes the free GPU: now 0 + 10 * 96 = 960 <=
#     52 + 960 -> starts; it finishes at 960.
#   t = 52: A releases 3 GPUs, C still holds one: B is offered 3 (not the 4 it counted on),
#     E = 10 * 52 = 520. Waiting for C: 960 + 480 = 1440 > 52 + 520 = 572 -> B starts now
#     and finishes at 572, 40 s after its prediction.
#   greedy: B takes the free GPU at 0 (JCT 960); C waits for A and runs 52 -> 1012.
#   full: B waits for 4 GPUs: declined at 52 (3 < 4), starts at 960 (C's release), JCT 1440.
#   Costs: B on 3 GPUs 520 * 3 / 1000 = 1.56; C 960 / 1000 = 0.96.
# ---------------------------------------------------------------------------------------------
def test_c_another_job_takes_the_released_gpus() -> None:
    scn = _scenario((M3, 1), (M4, 10), (M1, 10))
    a = (0.0, 3, 52.0, 52.0, 0.156)
    assert _outcome(scn, "greedy") == _approx(
        [a, (0.0, 1, 960.0, 960.0, 0.96), (52.0, 1, 960.0, 1012.0, 0.96)]
    )
    assert _outcome(scn, "finish-aware") == _approx(
        [a, (52.0, 3, 520.0, 572.0, 1.56), (0.0, 1, 960.0, 960.0, 0.96)]
    )
    assert _outcome(scn, "full") == _approx(
        [a, (960.0, 4, 480.0, 1440.0, 1.92), (0.0, 1, 960.0, 960.0, 0.96)]
    )
    # average JCT: greedy (52 + 960 + 1012) / 3 = 674.67; finish-aware (52 + 572 + 960) / 3
    # = 528; full (52 + 1440 + 960) / 3 = 817.33
    avg = {r: make_policy("fcfs").simulate(scn, admission=r).avg_jct for r in RULES}
    assert avg == pytest.approx(
        {"greedy": 2024 / 3, "finish-aware": 528.0, "full": 2452 / 3}, rel=REL
    )


def test_c_stepping_the_pass_goes_on_after_a_decline() -> None:
    scn = _scenario((M3, 1), (M4, 10), (M1, 10))
    sim = Simulator(scn, make_policy("fcfs").placement, admission="finish-aware")
    assert sim.next_decision() == (1, 2, 3)
    assert sim.place(1) == Placement((0,), (3,))
    assert sim.next_decision() == (2, 3)
    predicted = sim.next_release()
    assert predicted is not None and predicted.free == (4,)
    assert sim.offer(2) is None  # offer asks the rule too, and changes nothing
    assert sim.place(2) is None
    # B is declined, the pass continues with C
    assert sim.next_decision() == (3,)
    assert sim.place(3) == Placement((0,), (1,))
    # at 52 the release frees 3 GPUs, not the 4 predicted
    assert sim.next_decision() == (2,)
    assert sim.time == pytest.approx(52.0, rel=REL)
    assert sim.free_gpus == (3,)
    assert sim.next_release() == Release(960.0, (4,), ((0.0,),))
    assert sim.place(2) == Placement((0,), (3,))
    assert sim.next_decision() is None
    res = sim.result()
    assert res.records[1].finish_time == pytest.approx(572.0, rel=REL)
    assert res.records[1].finish_time > predicted.time + 480.0  # 572 > 532


# ---------------------------------------------------------------------------------------------
# Simulator.next_release on two regions with bandwidth reservations
#
#   R0, R1 with 2 GPUs each at $1, 2 B/s inside and 2 B/s each way between (hop 1 s).
#   X = M4 for 1 iteration on R0:1 > R1:1 (L = 2: hops [1], t_iter = 2 (1 + 12 + 18) = 62),
#   Y = M4 for 10 iterations on R1:1 > R0:1 (E = 620). Both reserve b(2) = A / t_comp(2)
#   = 2 / 6 = 1/3 B/s, X on R0 -> R1 and Y on R1 -> R0.
# ---------------------------------------------------------------------------------------------
def _two_regions(*jobs: tuple[ModelSpec, int]) -> Scenario:
    regions = (Region("R0", 2, 1.0, 2.0), Region("R1", 2, 1.0, 2.0))
    bw = np.array([[0.0, 2.0], [2.0, 0.0]])
    return Scenario(
        "two",
        Cluster(regions, bw, power_kw=3.6),
        tuple(Job(i, m, "d", 4 * n, 4, constants=CONST) for i, (m, n) in enumerate(jobs, start=1)),
    )


def test_next_release_returns_gpus_and_bandwidth_of_the_first_finisher() -> None:
    scn = _two_regions((M4, 1), (M4, 10))
    sim = Simulator(scn, make_policy("fcfs").placement)
    assert sim.next_decision() == (1, 2)
    sim.place(1, Placement((0, 1), (1, 1)))
    sim.place(2, Placement((1, 0), (1, 1)))
    assert sim.free_gpus == (0, 0)
    residual = sim.residual_rows
    assert residual[0][1] == pytest.approx(2.0 - 1 / 3, rel=REL)
    assert residual[1][0] == pytest.approx(2.0 - 1 / 3, rel=REL)
    release = sim.next_release()
    assert release is not None
    assert release.time == pytest.approx(62.0, rel=REL)
    assert release.free == (1, 1)  # X's GPUs
    assert release.residual[0][1] == 2.0  # X's reservation gone
    assert release.residual[1][0] == residual[1][0]  # Y still holds R1 -> R0
    # the simulator's own state is untouched
    assert sim.free_gpus == (0, 0) and sim.residual_rows == residual
    assert sim.next_decision() is None
    assert sim.time == pytest.approx(620.0, rel=REL)


def test_next_release_releases_every_job_finishing_at_that_instant() -> None:
    # X and Y both run 1 iteration on the same kind of path: both finish at 62
    scn = _two_regions((M4, 1), (M4, 1), (M4, 10))
    sim = Simulator(scn, make_policy("fcfs").placement)
    sim.next_decision()
    sim.place(1, Placement((0, 1), (1, 1)))
    sim.place(2, Placement((1, 0), (1, 1)))
    release = sim.next_release()
    assert release == Release(62.0, (2, 2), ((0.0, 2.0), (2.0, 0.0)))


# ---------------------------------------------------------------------------------------------
# Simulator.full_gpus
# ---------------------------------------------------------------------------------------------
def test_full_gpus_is_k_star_capped_by_the_idle_cluster() -> None:
    # M4: K* = 4 = the cluster; M12 (12 layers): t_iter(6) = 2 (5 + 12 + 3 * 2) = 46 is the
    # minimum of Eq. (13) -> K* = 6, but the idle cluster offers 4 -> full_gpus 4.
    m12 = ModelSpec("M12", 6.0, 12, 1)
    scn = _scenario((M3, 1), (M4, 1), (m12, 1))
    assert scn.profiles[3].k_star == 6
    sim = Simulator(scn, make_policy("fcfs").placement, admission="full")
    assert sim.next_decision() == (1, 2, 3)
    assert sim.place(1) == Placement((0,), (3,))
    # asked on a busy cluster, still the idle cluster's answer
    assert [sim.full_gpus(j) for j in (1, 2, 3)] == [3, 4, 4]
    assert sim.place(2) is None  # 1 < 4
    assert sim.place(3) is None  # 1 < 4
    assert sim.free_gpus == (1,)


class _Never:
    name = "never"
    pure = True

    def place(self, view: Any, job_id: int) -> Placement | None:
        return None


def test_full_gpus_is_k_star_when_the_idle_cluster_offers_nothing() -> None:
    scn = _scenario((M3, 1), (M4, 1))
    sim = Simulator(scn, _Never(), admission="full")
    assert [sim.full_gpus(j) for j in (1, 2)] == [3, 4]


# ---------------------------------------------------------------------------------------------
# make_admission, scenario and simulator plumbing
# ---------------------------------------------------------------------------------------------
def test_make_admission_by_name() -> None:
    # announce-aware (tests/core/test_admission_announce.py) and deadline-aware
    # (tests/core/test_admission_deadline.py) come after the three rules here
    assert list(ADMISSION_RULES) == [*RULES, "announce-aware", "deadline-aware", "deadline-plan"]
    assert isinstance(make_admission("greedy"), GreedyAdmission)
    assert isinstance(make_admission("finish-aware"), FinishAwareAdmission)
    assert isinstance(make_admission("full"), FullAdmission)
    assert isinstance(make_admission("announce-aware"), AnnounceAwareAdmission)
    assert [make_admission(r).name for r in ADMISSION_RULES] == list(ADMISSION_RULES)
    rule = FullAdmission()
    assert make_admission(rule) is rule


@pytest.mark.parametrize("bad", ["eager", "", "Greedy", "finish_aware"])
def test_make_admission_unknown_name(bad: str) -> None:
    with pytest.raises(ValidationError) as err:
        make_admission(bad)
    assert err.value.field == "admission"
    assert err.value.value == bad
    assert "greedy, finish-aware, full" in str(err.value)


@pytest.mark.parametrize("bad", [object(), 3, None])
def test_make_admission_rejects_an_object_without_admit(bad: Any) -> None:
    with pytest.raises(ValidationError, match="admit"):
        make_admission(bad)


def test_simulator_and_scenario_reject_unknown_rules() -> None:
    scn = _scenario((M4, 1))
    with pytest.raises(ValidationError, match="admission"):
        Simulator(scn, make_policy("fcfs").placement, admission="eager")
    with pytest.raises(ScenarioError, match="admission"):
        _scenario((M4, 1), admission="eager")
    with pytest.raises(ValidationError, match="admission"):
        make_policy("lcf").simulate(scn, admission="eager")


def test_the_scenario_rule_is_the_default_and_the_argument_overrides_it() -> None:
    scn = _scenario((M3, 1), (M4, 10), admission="finish-aware")
    sim = Simulator(scn, make_policy("fcfs").placement)
    assert sim.admission.name == "finish-aware"
    res = make_policy("fcfs").simulate(scn)
    assert res.admission == "finish-aware"
    assert res.records[1].start_time == pytest.approx(52.0, rel=REL)
    res = make_policy("fcfs").simulate(scn, admission="greedy")
    assert res.admission == "greedy"
    assert res.records[1].start_time == 0.0


def test_scenario_file_admission_field() -> None:
    spec: dict[str, Any] = {
        "name": "adm-file",
        "admission": "full",
        "constants": {"seq_len": 1, "micro_batch": 1, "peak_tflops": 1e-12, "mfu": 1.0},
        "regions": [{"name": "R0", "gpus": 4, "price_usd_per_kwh": 1.0, "intra_gbps": 16e-9}],
        "links": {"matrix_gbps": [[0.0]]},
        "models": [
            {"name": "M3", "params": 6, "layers": 3, "hidden": 1, "batch": 4},
            {"name": "M4", "params": 6, "layers": 4, "hidden": 1, "batch": 4},
        ],
        "datasets": [{"name": "one", "samples": 4}, {"name": "ten", "samples": 40}],
        "jobs": [{"model": "M3", "dataset": "one"}, {"model": "M4", "dataset": "ten"}],
    }
    scn = build_scenario(spec)
    assert scn.admission == "full"
    assert scn.params["world_admission"] == "full"
    # 16e-9 Gbps = 2 B/s and 1e-12 TFLOP/s = 1 FLOP/s: scenario (a) again
    res = make_policy("fcfs").simulate(scn)
    assert res.admission == "full"
    assert [(r.start_time, r.n_gpus) for r in res.records] == [(0.0, 3), (52.0, 4)]
    assert build_scenario(spec, admission="greedy").admission == "greedy"
    with pytest.raises(ScenarioError) as err:
        build_scenario({**spec, "admission": "eager"})
    assert err.value.field == "admission"


class _DeclineFirst:
    """Declines every job the first time it is asked about it, then admits it."""

    name = "decline-first"

    def __init__(self) -> None:
        self.asked: list[tuple[float, int, Placement]] = []

    def admit(self, sim: Simulator, job_id: int, placement: Placement) -> bool:
        first = all(j != job_id for _, j, _ in self.asked)
        self.asked.append((sim.time, job_id, placement))
        return not first


def test_a_declined_job_is_offered_again_after_the_next_event() -> None:
    # A rule that declines each job once. A (M3, 1 iteration) at t = 0, B (M4, 10 iterations)
    # at t = 10 s. t = 0: A is offered 3 GPUs and declined; the pass ends (nothing else
    # pending). t = 10 (B's arrival, the next event): A is offered again and admitted (3 GPUs,
    # E 52, finishes at 62); B is offered the last GPU and declined. t = 62 (A's completion):
    # B is offered again, all 4 GPUs, admitted (E 480, finishes at 542).
    jobs = (
        Job(1, M3, "d", 4, 4, constants=CONST),
        Job(2, M4, "d", 40, 4, submit_time=10.0, constants=CONST),
    )
    scn = Scenario("decline", CLUSTER, jobs)
    rule = _DeclineFirst()
    sim = Simulator(scn, make_policy("fcfs").placement, admission=rule)
    assert sim.admission is rule
    assert sim.next_decision() == (1,)
    assert sim.place(1) is None
    assert sim.pending == (1,)
    # A is not offered again in this pass; the next event is B's arrival at 10
    assert sim.next_decision() == (1, 2)
    assert sim.time == 10.0
    assert sim.place(1) == Placement((0,), (3,))  # asked again: admitted
    assert sim.place(2) is None  # B's first time: declined, 1 GPU offered
    # next event: A's completion at 10 + 52 = 62; B gets all 4
    assert sim.next_decision() == (2,)
    assert sim.time == pytest.approx(62.0, rel=REL)
    assert sim.place(2) == Placement((0,), (4,))
    assert sim.next_decision() is None
    assert [(t, j, p.n_gpus) for t, j, p in rule.asked] == [
        (0.0, 1, 3),
        (10.0, 1, 3),
        (10.0, 2, 1),
        (pytest.approx(62.0, rel=REL), 2, 4),
    ]
    res = sim.result()
    assert res.admission == "decline-first"
    # A: wait 10, E 52, JCT 62; B: submitted 10, starts 62, E 480, JCT 532
    assert [(r.wait, r.execution, r.jct) for r in res.records] == _approx(
        [(10.0, 52.0, 62.0), (52.0, 480.0, 532.0)]
    )


def test_greedy_never_asks_the_rule() -> None:
    # greedy admission is the paper's rule: the simulator does not even consult it
    scn = _scenario((M3, 1), (M4, 10))
    ref = make_policy("fcfs").simulate(scn, admission="greedy")
    again = make_policy("fcfs").simulate(scn, admission=GreedyAdmission())
    assert again.records == ref.records
