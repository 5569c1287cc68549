"""The simulation horizon (issue 25): no submit, event or finish time passes
``core.limits.HORIZON_H`` = 1,000,000 h; a run that would goes no further, with one line
naming the job, its time and the horizon; and a record's JCT is its finish minus its submit
time, to within the clock's rounding."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bacepipe_env.core import Cluster, Region
from bacepipe_env.core.faults import FaultModel
from bacepipe_env.core.job import Job, ModelSpec, TrainingConstants
from bacepipe_env.core.limits import HORIZON_H, HORIZON_S, LIMITS
from bacepipe_env.core.scenario import Scenario
from bacepipe_env.core.simulator import JobRecord, Simulator
from bacepipe_env.errors import SimulationError
from bacepipe_env.policies import bace_pipe
from bacepipe_env.policies.bace_pipe import PathfinderPlacement, PriorityOrdering
from bacepipe_env.scenarios import load_scenario
from bacepipe_env.scenarios.loader import load_scenario_spec

#: seq_len 1, micro-batch 1, 1e6 FLOP/s at MFU 1 and a 1e6-parameter, one-layer model: a
#: micro-batch's compute coefficient is 2 N m S / (peak x MFU) = 2 x 1e6 x 1 x 1 / 1e6 = 2 s,
#: an iteration of batch 1 takes 2 x 2 s = 4 s on the one GPU that K* allows (the model has
#: one layer), so a job takes 4 s per sample (test_limits's 1,000 samples: 4,000 s).
_TOY = TrainingConstants(seq_len=1, micro_batch=1, peak_flops=1e6, mfu=1.0)
_MODEL = ModelSpec("m", 1e6, 1, 1)


def _one_job(samples: int, faults: FaultModel | None = None) -> Scenario:
    cluster = Cluster((Region("R", 4, 0.1, 1e9),), np.zeros((1, 1)))
    job = Job(1, _MODEL, "d", samples, 1, constants=_TOY)
    return Scenario("slow", cluster, (job,), faults=faults)


def test_the_horizon_is_a_million_hours_and_tops_every_range_of_hours() -> None:
    assert HORIZON_H == 1_000_000.0
    assert HORIZON_S == 3_600_000_000.0  # 1e6 h x 3,600 s
    for key in ("jobs.submit_h", "workload.submit_h", "workload.horizon_h", "events.end_h"):
        assert LIMITS[key].high == HORIZON_H, key


def test_a_job_that_runs_just_inside_the_horizon_finishes() -> None:
    """899,000,000 samples x 4 s = 3,596,000,000 s = 998,888.9 h < 1,000,000 h."""
    (record,) = bace_pipe().simulate(_one_job(899_000_000)).records
    assert record.finish_time == pytest.approx(3_596_000_000.0, rel=1e-12)
    assert record.finish_time <= HORIZON_S


def test_a_job_that_would_finish_past_the_horizon_stops_the_run_in_one_line() -> None:
    """1,000,000,000 samples x 4 s = 4e9 s = 1,111,111.1 h, started at 0 on the one GPU."""
    with pytest.raises(SimulationError) as err:
        bace_pipe().simulate(_one_job(1_000_000_000))
    assert str(err.value) == (
        "job 1 (J1) would finish at 1,111,111.1 h, past the simulation horizon of "
        "1,000,000 h (HORIZON_H): it runs from 0.0 h on 1 GPU for 1,111,111.1 h; "
        "shorten the workload"
    )


def test_a_restarted_attempt_is_held_to_the_horizon_too() -> None:
    """With faults on, the attempt's end includes its restart; the same 4e9 s job is refused
    when it starts, under the fault model's bookkeeping as without it."""
    faults = FaultModel(gpu_failure_rate=1e-9)
    with pytest.raises(SimulationError, match=r"^job 1 \(J1\) would finish at 1,111,111\.1 h"):
        bace_pipe().simulate(_one_job(1_000_000_000, faults))


def test_a_job_submitted_past_the_horizon_is_refused_when_the_simulator_is_made() -> None:
    """Job() refuses a submit time past 1e6 h; one built with Job.trusted (as the generators
    do) is caught by the simulator: 3.6e9 s + 3,600 s = 1,000,001 h."""
    cluster = Cluster((Region("R", 4, 0.1, 1e9),), np.zeros((1, 1)))
    late = Job.trusted(
        job_id=7,
        model=_MODEL,
        dataset="d",
        samples=10,
        batch=1,
        submit_time=HORIZON_S + 3600.0,
        epochs=1,
        constants=_TOY,
        name="late",
    )
    scenario = Scenario("late", cluster, (late,))
    with pytest.raises(SimulationError) as err:
        Simulator(scenario, PathfinderPlacement())
    assert str(err.value) == (
        "job 7 (late) is submitted at 1,000,001.0 h, past the simulation horizon of "
        "1,000,000 h (HORIZON_H)"
    )


def test_a_failure_drawn_past_the_horizon_never_moves_the_clock() -> None:
    """A GPU failing at 1e-12 per hour fails about 1e12 h on: after the job's end (40 s of
    work), so it never happens; the clock ends at the job's finish, not at the failure."""
    scenario = _one_job(10, FaultModel(gpu_failure_rate=1e-12))
    sim = Simulator(scenario, PathfinderPlacement())
    result = sim.run(PriorityOrdering())
    assert result.records[0].finish_time == pytest.approx(40.0)
    assert sim.time == result.records[0].finish_time


def _jct_is_finish_minus_submit(records: tuple[JobRecord, ...]) -> None:
    for r in records:
        # wait = start - submit and JCT = wait + execution, each rounded once: within two
        # units in the last place of the finish time (4.8e-7 s at the horizon)
        assert abs(r.jct - (r.finish_time - r.submit_time)) <= 2 * math.ulp(r.finish_time)
        assert 0.0 <= r.submit_time <= r.start_time <= r.finish_time <= HORIZON_S


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_records_at_the_lowest_allowed_load_keep_jct_equal_to_finish_minus_submit(
    seed: int,
) -> None:
    """The online world at load 0.001, the lowest LIMITS allows, with 100 jobs: they arrive
    over 99 / rate hours, well inside the horizon (500 jobs would pass it: see
    tests/scenarios/test_arrival_horizon.py)."""
    assert LIMITS["workload.load"].low == 0.001
    scenario = load_scenario("online", seed=seed, load=0.001, n_jobs=100)
    result = bace_pipe().simulate(scenario)
    assert len(result.records) == 100
    _jct_is_finish_minus_submit(result.records)


def test_records_of_arrivals_spread_over_half_the_horizon_keep_jct_exact() -> None:
    """Poisson arrivals at 0.002 jobs/h for 1,000 jobs span about 999 / 0.002 = 499,500 h,
    half the horizon, where the clock's spacing is 2.4e-7 s: the records still add up."""
    spec = load_scenario_spec("paper")
    spec["workload"] = dict(spec["workload"], arrivals="poisson", arrival_rate_per_h=0.002)
    scenario = load_scenario(spec, seed=3, n_jobs=1000)
    assert max(j.submit_time for j in scenario.jobs) > 100_000 * 3600.0
    _jct_is_finish_minus_submit(bace_pipe().simulate(scenario).records)
