"""Preemption (semantics §3c), worked out by hand: one SRTF preemption with its checkpoint and
restart, the same with the work since the last checkpoint lost, one LAS preemption, and the
rules' settings, bounds and errors.

The golden job is test_faults.py's ``M2``: 3e12 parameters, 2 layers, hidden 5e8, batch 4,
S = m = 1, 1 TFLOP/s, mfu 1: t_comp(2) = 3 s, A = 1e9 bytes, M = 4. Every hop runs at 8 Gbps =
1e9 B/s (1 s), so on 2 GPUs t_iter = (1 + 2 * 3 + 3 * max(3, 1)) * 2 = 32 s, K* = 2 (on 1 GPU
t_iter = (6 + 3 * 6) * 2 = 48 s). A dataset of 900 samples is 225 iterations (E = 7,200 s, 2 h);
one of 9,000 samples 2,250 iterations (E = 72,000 s, 20 h). One region R0 of 2 GPUs at
$0.1/kWh, 0.5 kW per GPU.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from bacepipe_env.core import Simulator
from bacepipe_env.core.preemption import (
    LASPreemption,
    NoPreemption,
    PreemptionView,
    SRTFPreemption,
    make_preemption,
)
from bacepipe_env.errors import ScenarioError, SimulationError, ValidationError
from bacepipe_env.policies.registry import make_policy, policy_info, policy_names
from bacepipe_env.scenarios import build_scenario, load_scenario

POWER = 0.5
PRICE = 0.1
CONSTANTS = {"seq_len": 1, "micro_batch": 1, "peak_tflops": 1.0, "mfu": 1.0, "power_kw": POWER}
M2 = {"name": "M2", "params": 3e12, "layers": 2, "hidden": 500_000_000, "batch": 4}


def _spec(late_h: float, **top: Any) -> dict[str, Any]:
    """``long`` (20 h of work) at t = 0, ``short`` (2 h) at ``late_h``, on R0:2."""
    return {
        "name": "preemption-golden",
        "ignore_memory": True,  # 3e12 parameters fit in no 48 GB GPU
        "constants": CONSTANTS,
        "regions": [
            {"name": "R0", "gpus": 2, "price_usd_per_kwh": PRICE, "bandwidth_gbps": 8},
        ],
        "links": {"rule": "mean"},
        "models": [M2],
        "datasets": [{"name": "small", "samples": 900}, {"name": "big", "samples": 9000}],
        "jobs": [
            {"name": "long", "model": "M2", "dataset": "big", "submit_h": 0.0},
            {"name": "short", "model": "M2", "dataset": "small", "submit_h": late_h},
        ],
        **top,
    }


def _cost(seconds: float) -> float:
    """Electricity of R0:2 for ``seconds``: 2 GPUs x 0.5 kW x $0.1/kWh."""
    return seconds / 3600 * 2 * POWER * PRICE


def test_one_srtf_preemption_with_its_checkpoint_and_restart() -> None:
    # SRTF (factor 2, min run 1 h); a checkpoint written at preemption takes 60 s, a restart
    # 600 s.
    #  t = 0: long starts on R0:2, to finish at 72,000 s. Its wake-up falls at 3,600 s.
    #  t = 1,800: short arrives; no GPU is free. long has run 0.5 h < 1 h: no preemption.
    #  t = 3,600 (long's wake-up): long has run 1 h and has 72,000 - 3,600 = 68,400 s left;
    #    short would take 225 x 32 = 7,200 s <= 68,400 / 2 on the GPUs long frees: preempt.
    #    long keeps 3,600 / 32 = 112.5 iterations and writes its checkpoint until 3,660.
    #  t = 3,660: long returns to the queue (not offered in this pass); short starts on R0:2
    #    and completes at 3,660 + 7,200 = 10,860 s.
    #  t = 10,860: long restarts on R0:2: 600 s, then 2,137.5 x 32 = 68,400 s: it completes
    #    at 10,860 + 600 + 68,400 = 79,860 s.
    scn = build_scenario(_spec(0.5, preemption="srtf", restart_s=600))
    res = make_policy("fcfs").simulate(scn)
    long, short = res.records
    first, second = long.attempts
    assert (first.outcome, second.outcome) == ("preempted", "completed")
    assert (first.start, first.end) == (0.0, 3660.0)
    assert (second.start, second.end) == (10_860.0, 79_860.0)
    assert second.restart == 600.0
    assert (short.start_time, short.finish_time) == (3660.0, 10_860.0)
    assert long.preemptions == 1 and long.restarts == 1 and short.preemptions == 0
    assert res.n_preemptions == 1 and res.n_restarts == 1 and res.preemption == "srtf"
    # JCT: long 79,860 s; short 10,860 - 1,800 = 9,060 s (72,000 s without preemption, when it
    # would start at 72,000 s: the mean falls from 72,000 s to 44,460 s)
    assert long.jct == 79_860.0 and short.jct == 9_060.0
    assert res.avg_jct == (79_860.0 + 9_060.0) / 2
    # long's execution: 3,660 + 69,000 s; its wait is the 7,200 s short held R0
    assert long.execution == pytest.approx(3660.0 + 69_000.0, rel=1e-12)
    assert long.wait == pytest.approx(7200.0, rel=1e-12)
    # wasted: the 60 s checkpoint and the 600 s restart, 2 GPUs each: 1,320 GPU-s
    assert first.wasted == 60.0 and second.wasted == 600.0
    assert long.wasted_gpu_seconds == pytest.approx(1320.0, rel=1e-12)
    assert long.wasted_cost == pytest.approx(_cost(660.0), rel=1e-12)
    assert res.wasted_gpu_hours == pytest.approx(1320 / 3600, rel=1e-12)
    # cost: long held R0:2 for 3,660 + 69,000 s, short for 7,200 s
    assert long.cost == pytest.approx(_cost(72_660.0), rel=1e-12)
    assert short.cost == pytest.approx(_cost(7200.0), rel=1e-12)
    # GPU-hours held = the work (2 x 79,200 s) + the waste
    assert res.gpu_hours == pytest.approx((2 * 79_200 + 1320) / 3600, rel=1e-12)


def test_lose_since_checkpoint_restarts_from_the_last_hourly_checkpoint() -> None:
    # The same with short arriving at 2.5 h and no checkpoint at preemption; long checkpoints
    # every 3,600 s of computing.
    #  t = 9,000: long has run 2.5 h and has 72,000 - 9,000 = 63,000 s left; short takes
    #    7,200 <= 31,500: preempt at once. Its last checkpoint was at 7,200 s: it keeps
    #    7,200 / 32 = 225 iterations and loses 1,800 s of work. short starts at 9,000 (long is
    #    not offered in this pass) and completes at 16,200.
    #  t = 16,200: long restarts: 600 s + 2,025 x 32 = 64,800 s, completing at 81,600 s.
    scn = build_scenario(
        _spec(2.5, preemption="srtf", preempt_checkpoint_s="lose-since-checkpoint")
    )
    res = make_policy("fcfs").simulate(scn)
    long, short = res.records
    first, second = long.attempts
    assert (first.start, first.end, first.outcome) == (0.0, 9000.0, "preempted")
    assert first.wasted == 1800.0
    assert (short.start_time, short.finish_time) == (9000.0, 16_200.0)
    assert (second.start, second.end) == (16_200.0, 81_600.0)
    # wasted: 1,800 s lost and the 600 s restart, 2 GPUs each
    assert long.wasted_gpu_seconds == pytest.approx(4800.0, rel=1e-12)
    assert long.cost == pytest.approx(_cost(9000.0 + 65_400.0), rel=1e-12)


def test_one_las_preemption() -> None:
    # LAS with a 1 GPU-hour threshold: at long's wake-up (3,600 s) it has held 2 GPU-hours
    # >= 1, and short (0 GPU-hours) is below: preempt, as SRTF did above, though LAS does not
    # look at the sizes.
    srtf = make_policy("fcfs").simulate(build_scenario(_spec(0.5, preemption="srtf")))
    scn = build_scenario(_spec(0.5, preemption="las:threshold_gpu_h=1"))
    las = make_policy("fcfs").simulate(scn)
    assert las.records == srtf.records and las.preemption == "las:threshold_gpu_h=1"
    # a threshold long has not reached: no preemption
    high = build_scenario(_spec(0.5, preemption="las:threshold_gpu_h=5"))
    none = make_policy("fcfs").simulate(high)
    assert none.n_preemptions == 0 and none.records[1].start_time == 72_000.0


def test_no_preemption_when_the_pending_job_is_not_short_enough() -> None:
    # factor 20: short's 7,200 s is more than 68,400 / 20 = 3,420 s: no preemption
    scn = build_scenario(_spec(0.5, preemption="srtf:factor=20"))
    res = make_policy("fcfs").simulate(scn)
    assert res.n_preemptions == 0
    assert res.records[1].start_time == 72_000.0


def test_the_default_is_the_non_preemptive_world_bit_for_bit() -> None:
    for name, knobs in (("paper", {}), ("online", {"n_jobs": 60})):
        scn = load_scenario(name, seed=2, **knobs)
        off = load_scenario(name, seed=2, preemption="none", **knobs)
        assert scn.preemption == "none"
        for policy in ("bace-pipe", "sjf+finish-aware", "lcf"):
            a, b = make_policy(policy).simulate(scn), make_policy(policy).simulate(off)
            assert a.to_dict(scn.cluster.names) == b.to_dict(scn.cluster.names)
            assert a.n_preemptions == 0


def test_registered_preemptive_policies_name_their_rule() -> None:
    names = policy_names()
    for name in ("sjf+finish-aware+srtf", "bace-pipe+srtf", "sjf+las"):
        assert name in names
        assert policy_info(name).preemption in ("srtf", "las")
    res = make_policy("sjf+finish-aware+srtf").simulate(load_scenario("online", n_jobs=40))
    assert res.preemption == "srtf" and res.admission == "finish-aware"
    # the explicit argument wins over the policy's rule, as for admission
    off = make_policy("sjf+finish-aware+srtf").simulate(
        load_scenario("online", n_jobs=40), preemption="none"
    )
    assert off.preemption == "none" and off.n_preemptions == 0


def _agent_preempts_everything(scn: Any) -> tuple[Any, Simulator]:
    """Drive a simulator whose caller preempts the first option at every chance."""
    policy = make_policy("fcfs")
    sim = Simulator(scn, policy.placement, preemption_decisions=True, preemption_wake_s=0.0)
    while (cands := sim.next_decision()) is not None:
        if cands:
            sim.place(cands[0])
        else:
            options = sim.preemption_view().options()
            assert options  # the simulator stops only where a preemption would help
            sim.preempt(options[0])
    return sim.result("greedy-preemptor"), sim


def test_max_preemptions_bounds_a_caller_that_always_preempts() -> None:
    # Two jobs that would take each other's GPUs forever: the caller preempts at every chance,
    # and each job may be preempted at most max_preemptions times, so the run ends.
    for cap in (0, 1, 3):
        scn = build_scenario(_spec(0.0, max_preemptions=cap, preempt_checkpoint_s=0))
        res, _ = _agent_preempts_everything(scn)
        assert all(r.preemptions <= cap for r in res.records)
        assert res.n_preemptions <= 2 * cap
        assert [r.job_id for r in res.records] == [1, 2]


def test_preempting_what_cannot_be_preempted_is_a_one_line_error() -> None:
    scn = build_scenario(_spec(0.5, max_preemptions=0))
    sim = Simulator(scn, make_policy("fcfs").placement, preemption_decisions=True)
    assert sim.next_decision() == (1,)
    sim.place(1)
    with pytest.raises(SimulationError, match="cannot be preempted now"):
        sim.preempt(1)
    with pytest.raises(SimulationError, match="is not running"):
        sim.preempt(2)
    plain = Simulator(build_scenario(_spec(0.5)), make_policy("fcfs").placement)
    with pytest.raises(SimulationError, match="preemption is off"):
        plain.preempt(1)


@pytest.mark.parametrize(
    ("spec", "rule"),
    [
        ("none", NoPreemption()),
        ("srtf", SRTFPreemption()),
        ("srtf:factor=3", SRTFPreemption(factor=3.0)),
        ("srtf:min_run_h=0.5,factor=1.5", SRTFPreemption(factor=1.5, min_run_s=1800.0)),
        ("las:threshold_gpu_h=200", LASPreemption(threshold_gpu_s=720_000.0)),
    ],
)
def test_rule_specs(spec: str, rule: Any) -> None:
    made = make_preemption(spec)
    assert (type(made) is type(rule) and made == rule) or spec == "none"
    assert make_preemption(made.name).name == made.name  # the name reads back


@pytest.mark.parametrize(
    "spec",
    ["lifo", "srtf:factor", "srtf:factor=0.5", "srtf:factor=nan", "srtf:speed=2", "none:x=1", ""],
)
def test_bad_rule_specs_are_one_line_errors(spec: str) -> None:
    with pytest.raises(ValidationError) as err:
        make_preemption(spec)
    assert "\n" not in str(err.value) and str(err.value).startswith("preemption")
    with pytest.raises(ScenarioError) as err2:
        load_scenario("paper", preemption=spec)
    assert str(err2.value).startswith("preemption")


@pytest.mark.parametrize(
    ("knobs", "field"),
    [
        ({"preempt_checkpoint_s": -1}, "preempt_checkpoint_s"),
        ({"preempt_checkpoint_s": "lose"}, "preempt_checkpoint_s"),
        ({"max_preemptions": -1}, "max_preemptions"),
        ({"max_preemptions": 1.5}, "max_preemptions"),
    ],
)
def test_bad_preemption_costs_are_one_line_errors(knobs: dict[str, Any], field: str) -> None:
    with pytest.raises(ScenarioError) as err:
        load_scenario("paper", **knobs)
    assert str(err.value).startswith(field) and "\n" not in str(err.value)


def test_a_view_is_plain_data_once_materialized() -> None:
    import copy
    import pickle

    scn = build_scenario(_spec(0.5, preemption="none"))
    sim = Simulator(scn, make_policy("fcfs").placement, preemption_decisions=True)
    assert sim.next_decision() == (1,)
    sim.place(1)
    # t = 1,800: short arrives and cannot start; preempting long would let it: a decision
    # (the caller's preemptions need no minimum run)
    assert sim.next_decision() == ()
    assert sim.time == 1800.0
    view = sim.preemption_view()
    with pytest.raises(TypeError):
        pickle.dumps(view)
    view.materialize()
    (row,) = view.running
    assert (row.job_id, row.gpus, row.run, row.remaining) == (1, 2, 1800.0, 70_200.0)
    # 2 GPUs x 1,800 s held; 1,800 s computed since its start, its last checkpoint
    assert row.attained == 3600.0 and row.since_checkpoint == 1800.0 and row.preemptible
    (b,) = view.beneficiaries(1)
    assert (b.job_id, b.remaining, b.attained, b.gpus) == (2, 7200.0, 0.0, 2)
    assert view.options() == (1,)
    again = pickle.loads(pickle.dumps(view))
    assert again.beneficiaries(1) == view.beneficiaries(1)
    assert copy.deepcopy(view) is view
    assert isinstance(view, PreemptionView) and math.isinf(
        PreemptionView(0.0, ()).pending_min_remaining
    )
