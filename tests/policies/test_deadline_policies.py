"""The deadline heuristics (semantics §15, issue 45 part 3): EDF, least slack first, EDF with
triage and the ``deadline-aware`` admission rule, on hand-worked scenarios; with no deadlines
each is its base; registered, composable and played alike by the simulator and the env.

Common numbers (tests/core/test_admission.py's world). Constants S = m = 1, peak 1 FLOP/s,
mfu 1; every model has N = 6, h = 1 and batch 4, so a dataset of 4 * I samples gives I
iterations. One region R0 with 4 GPUs and a 2 B/s intra link: every hop takes 1 s, and
t_iter(L) = 2 ((L - 1) + 12 + 3 max(12 / L, 1)): L = 1: 96, L = 4: 48. Model M4 has 4 layers,
K* = 4: a job of I iterations takes all four GPUs for E* = 48 I s, and E(1) = 96 I s. One job
runs at a time, so a schedule is an order. Memory floors are 1 GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from bacepipe_env.core import Cluster, Job, ModelSpec, Region, Scenario, TrainingConstants
from bacepipe_env.core.snapshot import QueueSnapshot
from bacepipe_env.core.world import World
from bacepipe_env.envs import GeoPipeEnv, make_agent
from bacepipe_env.policies.deadline import EDFOrdering, EDFTriageOrdering, LSFOrdering
from bacepipe_env.policies.registry import make_policy, policy_info, policy_names, policy_suffixes
from bacepipe_env.scenarios import load_scenario

CONST = TrainingConstants(seq_len=1, micro_batch=1, peak_flops=1.0, mfu=1.0)
M4 = ModelSpec("M4", 6.0, 4, 1)
M3 = ModelSpec("M3", 6.0, 3, 1)
M1 = ModelSpec("M1", 6.0, 1, 1)
CLUSTER = Cluster((Region("R0", 4, 1.0, 2.0),), np.zeros((1, 1)), power_kw=3.6)

NEW = [
    "edf",
    "edf+finish-aware",
    "edf+deadline-aware",
    "edf+srtf",
    "lsf",
    "lsf+finish-aware",
    "edf-triage",
    "edf-triage+finish-aware",
    "edf-triage+deadline-aware",
    "edf-triage+srtf",
    "sjf+deadline-aware",
    "edf+deadline-plan",
    "lsf+deadline-plan",
    "edf-triage+deadline-plan",
    "edf+deadline-plan+srtf",
]


def _scenario(*jobs: tuple[int, float | None] | tuple[int, float | None, ModelSpec]) -> Scenario:
    """Jobs (iterations, deadline s[, model: M4]) submitted at t = 0 in this order, ids 1, 2,
    ..."""
    return Scenario(
        "deadlines",
        CLUSTER,
        tuple(
            Job(
                i, (*job, M4)[2], "d", 4 * job[0], 4, constants=CONST, name=f"J{i}", deadline=job[1]
            )
            for i, job in enumerate(jobs, start=1)
        ),
        World(),
    )


def _run(scn: Scenario, policy: str) -> list[tuple[float, float, float]]:
    """(start, finish, tardiness) per job id."""
    res = make_policy(policy).simulate(scn)
    return [(r.start_time, r.finish_time, r.tardiness) for r in res.records]


# ---------------------------------------------------------------------------------------------
# EDF meets both deadlines where SJF misses one.
#   A: 10 iterations, E* = 480, E(1) = 960, due 500.   B: 2 iterations, E* = 96, E(1) = 192,
#   due 600.
#   SJF: B first (192 < 960): B 0-96, A 96-576: A is 76 s late.
#   EDF: A first (500 < 600): A 0-480 (20 s early), B 480-576 (24 s early).
# ---------------------------------------------------------------------------------------------
def test_edf_meets_both_deadlines_where_sjf_misses_one() -> None:
    scn = _scenario((10, 500.0), (2, 600.0))
    assert _run(scn, "sjf") == [(96.0, 576.0, 76.0), (0.0, 96.0, 0.0)]
    assert _run(scn, "edf") == [(0.0, 480.0, 0.0), (480.0, 576.0, 0.0)]
    assert make_policy("sjf").simulate(scn).miss_rate == 0.5
    assert make_policy("edf").simulate(scn).miss_rate == 0.0


# ---------------------------------------------------------------------------------------------
# Triage: a hopeless job goes last, hopeless ones by SJF.
#   H2: 1 iteration, E* = 48, E(1) = 96, due 10: hopeless at 0 (0 + 48 > 10).
#   H:  10 iterations, E* = 480, E(1) = 960, due 400: hopeless at 0 (0 + 480 > 400).
#   A:  2 iterations, E* = 96, due 550: on time at 0 (0 + 96 <= 550).
#   EDF (due 10, 400, 550): H2 0-48 (38 late), H 48-528 (128 late), A 528-624 (74 late):
#     three misses, 240 s in all.
#   edf-triage: t = 0: A, the only job on time: 0-96. t = 96: H2 and H are hopeless, SJF:
#     H2 (96 < 960) 96-144 (134 late), then H 144-624 (224 late): two misses, 358 s.
#   LSF (latest start due - E*: H2 -38, H -80, A 454): H 0-480 (80 late), H2 480-528 (518
#     late), A 528-624 (74 late).
# ---------------------------------------------------------------------------------------------
def test_triage_puts_the_hopeless_jobs_last_by_sjf() -> None:
    scn = _scenario((1, 10.0), (10, 400.0), (2, 550.0))
    assert _run(scn, "edf") == [(0.0, 48.0, 38.0), (48.0, 528.0, 128.0), (528.0, 624.0, 74.0)]
    triaged = [(96.0, 144.0, 134.0), (144.0, 624.0, 224.0), (0.0, 96.0, 0.0)]
    assert _run(scn, "edf-triage") == triaged
    assert make_policy("edf-triage").simulate(scn).miss_rate == pytest.approx(2 / 3)
    assert _run(scn, "lsf") == [(480.0, 528.0, 518.0), (0.0, 480.0, 80.0), (528.0, 624.0, 74.0)]


# ---------------------------------------------------------------------------------------------
# deadline-aware: a hopeless job yields its GPUs to a blocked job still on time.
#   J: 1 iteration, E = 48 on 4 GPUs, E(1) = 96, due 10.  K: 10 iterations, E = 480, due 500.
#   SJF offers J first (96 < 960). Nothing runs, so finish-aware starts it: J 0-48 (38 late),
#   K 48-528 (28 late): two misses.
#   deadline-aware: J is hopeless (0 + 48 > 10); K is pending, due, blocked (J would take all
#   four GPUs; K's floor is 1) and on time on the 4 GPUs it is offered (0 + 480 <= 500): J
#   yields. K starts at 0 (not hopeless), 0-480; at 480 J is alone: 480-528 (518 late). One
#   miss. EDF offers J first too (10 < 500): the same.
# ---------------------------------------------------------------------------------------------
def test_deadline_aware_defers_a_hopeless_job_for_one_on_time() -> None:
    scn = _scenario((1, 10.0), (10, 500.0))
    assert _run(scn, "sjf+finish-aware") == [(0.0, 48.0, 38.0), (48.0, 528.0, 28.0)]
    yielded = [(480.0, 528.0, 518.0), (0.0, 480.0, 0.0)]
    assert _run(scn, "sjf+deadline-aware") == yielded
    assert _run(scn, "edf+deadline-aware") == yielded
    assert make_policy("sjf+deadline-aware").simulate(scn).admission == "deadline-aware"
    # K without a deadline: J has nobody to yield to, and the rule is finish-aware
    free = _scenario((1, 10.0), (10, None))
    assert _run(free, "sjf+deadline-aware") == _run(free, "sjf+finish-aware")


# ---------------------------------------------------------------------------------------------
# deadline-aware does not yield to a job that would not take the GPUs now.
#   FCFS. t_iter(3) = 2 (2 + 12 + 12) = 52 for M3 on 3 GPUs; M1 (1 layer, K* = 1) on 1 GPU: 96.
#   A: M3, 1 iteration, due 100: 3 GPUs, 0-52.  One GPU is left.
#   J: M1, 1 iteration, due 10: offered the 1 GPU, finishes at 96 > 10: hopeless.
#   K: M4, 10 iterations, due 1000: on the 1 GPU now 0 + 960 = 960 <= 1000, on time, and J
#     blocks it (it would leave no GPU). But finish-aware holds K for A's release at 52: on
#     4 GPUs 52 + 480 = 532 < 960. So J does not yield: J 0-96 (86 late). At 52 K is offered 3
#     GPUs: 52 + 10 * 52 = 572 <= J's release 96 + 480 = 576: K 52-572, on time. As under
#     finish-aware. (Yielding anyway would idle the GPU until 52 and start J at 52: 138 late.)
# ---------------------------------------------------------------------------------------------
def test_deadline_aware_yields_only_to_a_job_that_would_start_now() -> None:
    scn = _scenario((1, 100.0, M3), (1, 10.0, M1), (10, 1000.0))
    expected = [(0.0, 52.0, 0.0), (0.0, 96.0, 86.0), (52.0, 572.0, 0.0)]
    for rule in ("finish-aware", "deadline-aware"):
        res = make_policy("fcfs").simulate(scn, admission=rule)
        assert [(r.start_time, r.finish_time, r.tardiness) for r in res.records] == expected


# ---------------------------------------------------------------------------------------------
# deadline-plan: hold a job whose start now would make a blocked job miss, by the plan.
#   t_iter(3) = 52 for M3 on 3 GPUs; M1 (K* = 1) on 1 GPU: 96 s an iteration.
#   A: M3, 1 iteration, due 100: 3 GPUs, 0-52 (nothing runs: it starts).
#   K: M4, 10 iterations, due 540: offered the 1 GPU left, 0 + 960 > 52 + 480 = 532 (4 GPUs
#     after A's release): finish-aware holds it.
#   J: M1, 10 iterations (E = E* = 960 on 1 GPU), due 5000: finish-aware starts it on the last
#     GPU (0 + 960 < 52 + 960). Then K gets 3 GPUs at 52: 52 + 10 * 52 = 572, 32 s late.
#   deadline-plan at J's offer (pooled GPUs; releases: A's 3 at 52):
#     start now: J holds 1 GPU 0-960; K (4 GPUs, 480 s) fits only from 960: 1440 > 540, a
#       miss, 900 s late: (1 miss, 900 s);
#     hold: J ready at 52. EDF: K from 52 (4 GPUs) to 532 <= 540; J (1 GPU) from 532 to
#       1492 <= 5000: (0 misses, 0 s). J waits.
#   At 52 K starts on the 4 GPUs (nothing runs: no plan), 52-532; J 532-1492. No miss.
# ---------------------------------------------------------------------------------------------
def test_deadline_plan_holds_a_job_that_would_make_another_miss() -> None:
    scn = _scenario((1, 100.0, M3), (10, 540.0), (10, 5000.0, M1))
    assert _run(scn, "edf+finish-aware") == [
        (0.0, 52.0, 0.0),
        (52.0, 572.0, 32.0),
        (0.0, 960.0, 0.0),
    ]
    planned = [(0.0, 52.0, 0.0), (52.0, 532.0, 0.0), (532.0, 1492.0, 0.0)]
    assert _run(scn, "edf+deadline-plan") == planned
    assert make_policy("edf+deadline-plan").simulate(scn).miss_rate == 0.0
    # K without a deadline: nothing to protect, and the rule is finish-aware
    free = _scenario((1, 100.0, M3), (10, None), (10, 5000.0, M1))
    assert _run(free, "edf+deadline-plan") == _run(free, "edf+finish-aware")


def test_orderings_read_a_snapshot_like_the_simulator() -> None:
    """``pick`` on a hand-built snapshot: due 10 / 400 / 550, E* 48 / 480 / 96 at t = 0."""
    queue = QueueSnapshot(
        job_ids=(1, 2, 3),
        single_gpu_exec=(96.0, 960.0, 192.0),
        min_bandwidth_kstar=(1.0, 1.0, 1.0),
        submit_time=(0.0, 0.0, 0.0),
        pending_e1_max=960.0,
        pending_bkstar_max=1.0,
        alpha=0.0,
        time=0.0,
        ideal_execution=(48.0, 480.0, 96.0),
        due=(10.0, 400.0, 550.0),
    )
    legal = range(3)
    assert EDFOrdering().pick(queue, legal) == 0  # due 10
    assert LSFOrdering().pick(queue, legal) == 1  # latest start 400 - 480 = -80
    assert EDFTriageOrdering().pick(queue, legal) == 2  # the one on time
    assert EDFTriageOrdering().pick(queue, [0, 1]) == 0  # both hopeless: E(1) 96 < 960
    # a snapshot without the deadline columns has no deadlines: FCFS
    bare = QueueSnapshot((1, 2), (9.0, 1.0), (1.0, 1.0), (0.0, 0.0), 9.0, 1.0, 0.0, 0.0)
    for ordering in (EDFOrdering(), LSFOrdering(), EDFTriageOrdering()):
        assert ordering.pick(bare, [0, 1]) == 0


# ---------------------------------------------------------------------------------------------
# Without deadlines each new rule is its base: the orderings FCFS, deadline-aware finish-aware.
# ---------------------------------------------------------------------------------------------
BASES = {
    "edf": ("fcfs", {}),
    "lsf": ("fcfs", {}),
    "edf-triage": ("fcfs", {}),
    "edf+finish-aware": ("fcfs", {"admission": "finish-aware"}),
    "edf+deadline-aware": ("fcfs", {"admission": "finish-aware"}),
    "edf-triage+deadline-aware": ("fcfs", {"admission": "finish-aware"}),
    "sjf+deadline-aware": ("sjf", {"admission": "finish-aware"}),
    "edf+srtf": ("fcfs", {"preemption": "srtf"}),
    "edf+deadline-plan": ("fcfs", {"admission": "finish-aware"}),
    "lsf+deadline-plan": ("fcfs", {"admission": "finish-aware"}),
    "edf+deadline-plan+srtf": ("fcfs", {"admission": "finish-aware", "preemption": "srtf"}),
}


@pytest.mark.parametrize("name", list(BASES))
def test_without_deadlines_each_rule_is_its_base(name: str) -> None:
    base, rules = BASES[name]
    for seed in (0, 1):
        scn = load_scenario("online", n_jobs=25, seed=seed)
        assert scn.deadlines == {}
        own = make_policy(name).simulate(scn)
        other = make_policy(base).simulate(scn, **rules)
        assert [(r.job_id, r.start_time, r.finish_time) for r in own.records] == [
            (r.job_id, r.start_time, r.finish_time) for r in other.records
        ]


def test_registered_and_composable() -> None:
    names = policy_names()
    assert set(NEW) <= set(names)
    assert policy_info("edf").ordering == "edf" and policy_info("edf").placement == "pathfinder"
    assert policy_info("edf-triage+deadline-aware").admission == "deadline-aware"
    assert policy_info("edf+srtf").preemption == "srtf"
    suffixes = policy_suffixes()
    assert {"edf", "edf-triage"} <= set(suffixes["+srtf"])
    assert {"edf", "lsf", "edf-triage"} <= set(suffixes["+finish-aware"])
    assert {"sjf", "edf", "edf-triage"} <= set(suffixes["+deadline-aware"])
    assert {"edf", "lsf", "edf-triage"} <= set(suffixes["+deadline-plan"])
    assert policy_info("edf+deadline-plan+srtf").admission == "deadline-plan"
    assert policy_info("lsf+elastic").elasticity == "greedy"  # +elastic follows any heuristic


@pytest.mark.parametrize(
    "name",
    ["edf", "lsf+finish-aware", "edf-triage+deadline-aware", "edf+srtf", "edf+deadline-plan"],
)
def test_an_env_agent_plays_the_simulators_run_with_deadlines(name: str) -> None:
    """40 online jobs due at U[1.0, 1.6] x E*: a window of 64 covers the queue, so the agent
    reading the env's snapshot decides as the simulator does, bit for bit."""
    scn = load_scenario("online", n_jobs=40, deadline_slack="uniform:1.0,1.6", seed=0)
    env = GeoPipeEnv(scn, policy=name, max_queue=64)
    agent = make_agent(name)
    agent.reset(0)
    obs, info = env.reset(seed=0, options={"scenario": scn})
    while True:
        obs, _, terminated, truncated, info = env.step(agent.predict(obs, info=info)[0])
        if terminated or truncated:
            break
    expected = make_policy(name).simulate(scn)
    assert info["episode_avg_jct_s"] == expected.avg_jct
    assert info["episode_miss_rate"] == expected.miss_rate
    fcfs = make_policy("fcfs").simulate(scn)
    assert [r.start_time for r in expected.records] != [r.start_time for r in fcfs.records]
