"""The ``announce-aware`` admission rule: finish-aware, plus holding the GPUs for an announced
job the offered one would block (bacepipe_env/core/admission.py), worked out by hand.

The numbers of tests/core/test_admission.py. Constants S = m = 1, peak 1 FLOP/s, mfu 1; every
model has N = 6, h = 1 and batch 4, so M = 4 micro-batches, A = 2 bytes and
t_comp(L) = 12 / L s. One region R0 with 4 GPUs and a 2 B/s intra link (every hop 1 s).
Memory is ample: every floor is 1. Eq. (1) in one region:
    t_iter(1) = 96, t_iter(3) = 52, t_iter(4) = 48.
Models: M4 (4 layers, K* = 4), M3 (3 layers, K* = 3), M1 (1 layer, K* = 1); a dataset of
``4 * I`` samples gives I iterations, E = I * t_iter(L).

The rule holds job j (offered p at t, E_j) for an announced job a (submitted at t_a, blocked by
j, E_a on its placement now) iff
    hold = (t_a + E_a) + (t_a + E_a + E_j)  <  start now = (t + E_j) + (t + E_j + E_a),
that is iff 2 (t_a - t) + E_a < E_j.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

# the one-region world of test_admission.py's hand-worked cases (its docstring derives them)
from admission_world import CLUSTER, CONST, M1, M3, M4, REL

from bacepipe_env.core import (
    Job,
    ModelSpec,
    Placement,
    Scenario,
    Simulator,
)
from bacepipe_env.core.admission import (
    AnnounceAwareAdmission,
    hold_for_announced,
    make_admission,
)
from bacepipe_env.core.world import World
from bacepipe_env.errors import ScenarioError
from bacepipe_env.policies.registry import make_policy, policy_info
from bacepipe_env.scenarios import RandomScenarioGenerator, load_scenario


def _scenario(*jobs: tuple[ModelSpec, int, float], announce_h: float = 1.0) -> Scenario:
    """Jobs (model, iterations, submit time in s), ids 1, 2, ..."""
    return Scenario(
        "announce",
        CLUSTER,
        tuple(
            Job(i, m, "d", 4 * iters, 4, submit, constants=CONST, name=f"J{i}")
            for i, (m, iters, submit) in enumerate(jobs, start=1)
        ),
        World(announce_h=announce_h),
    )


def _runs(scn: Scenario, policy: str) -> list[tuple[float, int, float]]:
    """(start, GPUs, JCT) per job, in id order."""
    res = make_policy(policy).simulate(scn)
    return [(r.start_time, r.n_gpus, r.jct) for r in res.records]


# ---------------------------------------------------------------------------------------------
# (a) Hold for a short planned job.
#   J1 = M4 x 100 at t = 0: on the 4 GPUs E_1 = 100 * 48 = 4800. J2 = M4 x 10 at t_a:
#   E_2 = 10 * 48 = 480 on the 4 GPUs. announce_h = 1 h = 3600 s: J2 is announced at t = 0.
#   finish-aware starts J1 (nothing runs). J2's floor (1) fits the 4 free GPUs, not the 0 left
#   once J1 takes them: J1 blocks J2.
#   t_a = 1000: start now (4800) + (4800 + 480) = 10080; hold (1000 + 480) + (1480 + 4800) =
#     7760 < 10080 -> hold. J1 waits; J2 arrives at 1000, SJF picks it (E(1) 960 < 9600), it
#     runs 1000 -> 1480 and J1 1480 -> 6280: JCTs 6280 and 480, exactly the prediction
#     (completions 1480 + 6280 = 7760); average 3380.
#     sjf+finish-aware: J1 0 -> 4800, J2 4800 -> 5280 (JCT 4280): 10080, average 4540.
#   t_a = 2160: hold (2160 + 480) + (2640 + 4800) = 10080 = start now: a tie starts now.
#   t_a = 3000: hold 3480 + 8280 = 11760 > 10080: start now.
# ---------------------------------------------------------------------------------------------
def test_a_job_waits_for_a_short_announced_job_and_the_prediction_is_exact() -> None:
    scn = _scenario((M4, 100, 0.0), (M4, 10, 1000.0))
    assert _runs(scn, "sjf+finish-aware") == [(0.0, 4, 4800.0), (4800.0, 4, 4280.0)]
    assert _runs(scn, "sjf+announce") == [(1480.0, 4, 6280.0), (1000.0, 4, 480.0)]
    assert make_policy("sjf+announce").simulate(scn).avg_jct == pytest.approx(3380.0, rel=REL)
    assert make_policy("sjf+finish-aware").simulate(scn).avg_jct == pytest.approx(4540.0)


def test_the_hold_at_the_first_decision() -> None:
    scn = _scenario((M4, 100, 0.0), (M4, 10, 1000.0))
    sim = Simulator(scn, make_policy("sjf").placement, admission="announce-aware")
    assert sim.next_decision() == (1,)
    assert sim.announced() == (2,)
    whole = Placement((0,), (4,))
    assert sim.execution_time(1, whole) == 4800.0
    assert hold_for_announced(sim, 1, whole) == 2
    assert make_admission("finish-aware").admit(sim, 1, whole)  # finish-aware would start it
    assert sim.place(1) is None and sim.pending == (1,)
    assert sim.next_decision() == (1, 2) and sim.time == 1000.0
    assert sim.announced() == ()  # J2 is submitted: in the queue, no longer announced
    assert sim.place(2) == whole


@pytest.mark.parametrize("t_a", [2160.0, 3000.0])
def test_a_tie_or_a_late_job_starts_now(t_a: float) -> None:
    scn = _scenario((M4, 100, 0.0), (M4, 10, t_a))
    sim = Simulator(scn, make_policy("sjf").placement, admission="announce-aware")
    sim.next_decision()
    assert sim.announced() == (2,)
    assert hold_for_announced(sim, 1, Placement((0,), (4,))) is None
    # J2 waits for J1: 4800 -> 5280
    assert _runs(scn, "sjf+announce") == [(0.0, 4, 4800.0), (4800.0, 4, 5280.0 - t_a)]
    assert _runs(scn, "sjf+announce") == _runs(scn, "sjf+finish-aware")


def test_a_job_beyond_the_calendar_is_not_known() -> None:
    # announce_h = 0.25 h = 900 s < 1000: at t = 0 J2 is not announced, J1 starts (as in (a)
    # under finish-aware); at t = 100 it would be, but J1 is running by then
    scn = _scenario((M4, 100, 0.0), (M4, 10, 1000.0), announce_h=0.25)
    sim = Simulator(scn, make_policy("sjf").placement, admission="announce-aware")
    sim.next_decision()
    assert sim.announced() == ()
    assert _runs(scn, "sjf+announce") == [(0.0, 4, 4800.0), (4800.0, 4, 4280.0)]
    # a clone that knows only the submitted jobs does not know J2 either
    full = _scenario((M4, 100, 0.0), (M4, 10, 1000.0))
    sim = Simulator(full, make_policy("sjf").placement, admission="announce-aware")
    sim.next_decision()
    assert sim.announced() == (2,)
    fork = sim.clone("submitted")
    assert fork.announced() == ()
    assert fork.place(1) == Placement((0,), (4,))  # nothing to hold for
    assert sim.place(1) is None  # the original holds


# ---------------------------------------------------------------------------------------------
# (b) A job that fits beside the offered one is not blocked.
#   J1 = M3 x 100 at 0: K* = 3, E_1 = 100 * 52 = 5200 on 3 GPUs, leaving 1 free. J2 = M1 x 10
#   at 1000: floor 1 <= the 1 GPU left, so J1 does not block it and starts now. (Were it
#   weighed, 2 * 1000 + 10 * 96 = 2960 < 5200 would hold.) J2 takes the free GPU at 1000.
# ---------------------------------------------------------------------------------------------
def test_a_job_that_fits_beside_is_not_waited_for() -> None:
    scn = _scenario((M3, 100, 0.0), (M1, 10, 1000.0))
    sim = Simulator(scn, make_policy("sjf").placement, admission="announce-aware")
    sim.next_decision()
    assert sim.announced() == (2,)
    assert hold_for_announced(sim, 1, Placement((0,), (3,))) is None
    assert _runs(scn, "sjf+announce") == [(0.0, 3, 5200.0), (1000.0, 1, 960.0)]


# ---------------------------------------------------------------------------------------------
# (c) finish-aware's decline comes first.
#   J1 = M3 x 1 (E 52 on 3 GPUs) and J2 = M4 x 10 at 0, J3 = M1 x 1 at 3000 (announced). SJF
#   offers J1 first (E(1) 96 < 960): it starts on 3. J2 is offered the 1 GPU left: now
#   10 * 96 = 960, waiting for J1's release 52 + 10 * 48 = 532 < 960: finish-aware declines,
#   and so does announce-aware, whatever the calendar says (here J3 is not even weighed: it
#   comes at 3000 >= 0 + 960, after J2 would finish). At 52 J2 starts on 4 (E 480): J3, at
#   3000 >= 52 + 480, is again outside the window, so J2 starts as under finish-aware.
# ---------------------------------------------------------------------------------------------
def test_finish_aware_declines_first() -> None:
    scn = _scenario((M3, 1, 0.0), (M4, 10, 0.0), (M1, 1, 3000.0))
    sim = Simulator(scn, make_policy("sjf").placement, admission="announce-aware")
    assert sim.next_decision() == (1, 2)
    assert sim.place(1) == Placement((0,), (3,))
    assert sim.announced() == (3,)
    assert hold_for_announced(sim, 2, Placement((0,), (1,))) is None
    assert sim.place(2) is None  # finish-aware's decline
    rows = _runs(scn, "sjf+announce")
    assert rows == _runs(scn, "sjf+finish-aware")
    assert rows[1] == (52.0, 4, 532.0)


# ---------------------------------------------------------------------------------------------
# Without a calendar it is finish-aware, bit for bit
# ---------------------------------------------------------------------------------------------
def _same(a: Any, b: Any, names: Any) -> None:
    keep = {"policy": "x", "admission": "x"}
    assert a.to_dict(names) | keep == b.to_dict(names) | keep


@pytest.mark.parametrize(
    ("source", "seed", "knobs"),
    [
        ("paper", 0, {}),
        ("paper", 1, {"gpu_scale": 0.5}),
        ("online", 0, {"n_jobs": 60, "load": 2.0}),
        ("online", 3, {"n_jobs": 60, "load": 2.0, "gpu_failure_rate": 2e-4}),
    ],
)
def test_without_a_calendar_announce_aware_is_finish_aware(
    source: str, seed: int, knobs: dict[str, Any]
) -> None:
    scn = load_scenario(source, seed=seed, **knobs)
    assert scn.announce_h == 0.0
    names = scn.cluster.names
    for own, base in (
        ("sjf+announce", "sjf+finish-aware"),
        ("sjf+announce+srtf", "sjf+finish-aware+srtf"),
    ):
        _same(make_policy(own).simulate(scn), make_policy(base).simulate(scn), names)


def test_without_a_calendar_on_random_worlds() -> None:
    gen = RandomScenarioGenerator()
    rng = np.random.default_rng(7)
    for _ in range(4):
        scn = gen(rng)
        names = scn.cluster.names
        _same(
            make_policy("sjf+announce").simulate(scn),
            make_policy("sjf+finish-aware").simulate(scn),
            names,
        )


def test_with_a_calendar_it_reads_the_calendar() -> None:
    """On the online world with a 24 h calendar the rule holds somewhere (so the runs differ
    from finish-aware's), and every run is deterministic."""
    scn = load_scenario("online", seed=2, n_jobs=60, load=2.0, announce_h=24)
    assert scn.announce_h == 24.0 and scn.params["announce_h"] == 24.0
    names = scn.cluster.names
    a, b = (make_policy("sjf+announce").simulate(scn) for _ in range(2))
    _same(a, b, names)
    base = make_policy("sjf+finish-aware").simulate(scn)
    assert a.to_dict(names)["jobs"] != base.to_dict(names)["jobs"]
    assert a.admission == "announce-aware"


# ---------------------------------------------------------------------------------------------
# registry and plumbing
# ---------------------------------------------------------------------------------------------
def test_the_registered_policies() -> None:
    for name, stop in (("sjf+announce", None), ("sjf+announce+srtf", "srtf")):
        info = policy_info(name)
        assert (info.ordering, info.placement, info.admission) == (
            "sjf",
            "pathfinder",
            "announce-aware",
        )
        assert info.preemption == stop
    assert isinstance(make_admission("announce-aware"), AnnounceAwareAdmission)
    assert AnnounceAwareAdmission.name == "announce-aware"


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), 2e6, "24", True])
def test_a_bad_announce_h_is_one_line(bad: Any) -> None:
    with pytest.raises(ScenarioError) as err:
        _scenario((M4, 1, 0.0), announce_h=bad)
    assert err.value.field == "announce_h" and "\n" not in str(err.value)
