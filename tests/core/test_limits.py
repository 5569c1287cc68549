"""core.limits and the guards behind it: ranges, short error lines, overflow caught by name,
a job that can never outrun its failures, and a run whose totals overflow (issue 13)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bacepipe_env.core import Cluster, Region
from bacepipe_env.core.faults import FaultModel
from bacepipe_env.core.job import Job, ModelSpec, TrainingConstants
from bacepipe_env.core.limits import LIMITS, Limit, check_limit, limit_text
from bacepipe_env.core.perf import profile_job
from bacepipe_env.core.records import check_finite
from bacepipe_env.core.scenario import Scenario
from bacepipe_env.core.simulator import MAX_ATTEMPTS
from bacepipe_env.errors import (
    MAX_LINE_CHARS,
    ScenarioError,
    SimulationError,
    ValidationError,
    choices,
)
from bacepipe_env.policies import bace_pipe
from bacepipe_env.scenarios import load_scenario


def test_check_limit_goldens() -> None:
    layers = LIMITS["models.layers"]  # [1, 10,000], whole numbers
    assert check_limit("models.layers", 80) == 80
    assert check_limit("models.layers", 80.0) == 80  # a whole float is a count
    with pytest.raises(
        ScenarioError, match=r"^models.layers: must be in \[1, 10,000\] \(got 10001\)$"
    ):
        check_limit("models.layers", 10_001)
    with pytest.raises(ScenarioError, match=r"must be a whole number"):
        check_limit("models.layers", 2.5)
    with pytest.raises(ScenarioError, match=r"must be a whole number"):
        check_limit("models.layers", True)  # a bool is not a count
    assert layers.text() == "[1, 10,000]"
    # an open low end: 0 itself is out, the smallest positive float is in
    assert limit_text("constants.mfu") == "(0, 1]"
    with pytest.raises(ScenarioError, match=r"^constants.mfu: must be in \(0, 1\]"):
        check_limit("constants.mfu", 0.0)
    assert check_limit("constants.mfu", 5e-324) == 5e-324
    with pytest.raises(ScenarioError, match=r"must be finite"):
        check_limit("constants.mfu", math.nan)
    with pytest.raises(ScenarioError, match=r"must be finite \(it is beyond float range\)"):
        check_limit("restart_s", 10**400)
    # the field named is the caller's, the exception type too
    with pytest.raises(ValidationError, match=r"^--jobs: must be in \[1, 10,000,000\] jobs"):
        check_limit("workload.n_jobs", 0, field="--jobs", exc=ValidationError)
    assert Limit(0, 1e9, "s").text() == "[0, 1e9]"
    assert limit_text("seed") == "[0, 2**63 - 1]"


def test_every_range_is_finite_and_ordered() -> None:
    for key, limit in LIMITS.items():
        assert math.isfinite(limit.low) and math.isfinite(limit.high), key
        assert limit.low < limit.high, key


def test_choices_abbreviates_long_lists() -> None:
    assert choices(["a", "b", "c"]) == "a, b, c"
    names = [f"policy-{i}" for i in range(30)]
    # "policy-0, policy-1" (18) + ", ... (28 more)" (15) = 33 <= 40, but a third name makes
    # 28 + 15 = 43 > 40: two names and the count of the rest
    assert choices(names, 40) == "policy-0, policy-1, ... (28 more)"
    assert choices([]) == ""
    assert choices(["x" * 100]) == "x" * 100  # one name is always shown whole


@given(
    field=st.text(max_size=500),
    reason=st.text(max_size=5000),
    value=st.one_of(st.text(max_size=5000), st.lists(st.integers(), max_size=3000)),
)
def test_a_validation_error_is_one_bounded_line(field: str, reason: str, value: object) -> None:
    msg = str(ValidationError(field, value, reason))
    assert len(msg) <= MAX_LINE_CHARS + 20  # the reason's room never drops below 40


def test_a_profile_that_overflows_names_the_job() -> None:
    """Every input inside its range, but 1e15 parameters on a GPU of 1e-280 FLOP/s: E(1) is
    1e15 x 2 x 1e6 tokens / 1e-280 ~ 1e301 s per micro-batch, times 1e15 samples: inf."""
    constants = TrainingConstants(seq_len=1_000_000, peak_flops=1e-280, mfu=1.0)
    model = ModelSpec("huge", 1e15, 8, 1024)
    job = Job(3, model, "d", 10**15, 1, constants=constants)
    with pytest.raises(ScenarioError, match=r"^job 3 \(huge\): its run time overflows"):
        profile_job(job, 1e10)
    ok = Job(4, model, "d", 10, 1)  # the default constants: a finite profile
    assert math.isfinite(profile_job(ok, 1e10).single_gpu_exec)


def _one_region(rate: float, checkpoint_s: float, restart_s: float) -> Scenario:
    region = Region("R", 4, 0.1, 1e9)
    cluster = Cluster((region,), np.zeros((1, 1)))
    # compute_coeff = 2 N m S / (peak mfu) = 2 x 1e6 x 1 x 1 / (1e6 x 1) = 2 s per micro-batch;
    # one GPU, 1,000 iterations of 2 x 2 s: 4,000 s of work
    constants = TrainingConstants(seq_len=1, micro_batch=1, peak_flops=1e6, mfu=1.0)
    job = Job(1, ModelSpec("m", 1e6, 1, 1), "d", 1000, 1, constants=constants)
    faults = FaultModel(
        gpu_failure_rate=rate, checkpoint_interval_s=checkpoint_s, restart_s=restart_s
    )
    return Scenario("doomed", cluster, (job,), faults=faults)


def test_a_job_that_can_never_outrun_its_failures_is_an_error_not_a_hang() -> None:
    """One GPU failing once an hour on average (the top of the range) against a 100,000 s
    restart: an attempt survives its restart with probability exp(-100000 / 3600) ~ 1e-12,
    so the job would restart forever."""
    with pytest.raises(SimulationError, match=rf"job 1 was interrupted {MAX_ATTEMPTS:,} times"):
        bace_pipe().simulate(_one_region(1.0, 3600.0, 100_000.0))


def test_too_many_interruptions_name_their_cause_counted_apart() -> None:
    """The error counts resizes, preemptions and failures apart and blames the largest: here
    every one of the 10,000 interruptions is a GPU failure, at the scenario's rate of 1."""
    with pytest.raises(SimulationError) as err:
        bace_pipe().simulate(_one_region(1.0, 3600.0, 100_000.0))
    text = str(err.value)
    assert f"(0 resizes, 0 preemptions, {MAX_ATTEMPTS:,} failures or outages)" in text
    assert "failures outpace its checkpoints (gpu_failure_rate 1," in text
    assert "\n" not in text


def test_a_job_whose_failures_it_can_outrun_finishes() -> None:
    """The same job failing once a GPU-hour on average, checkpointing every 100 s and
    restarting in 10 s: it finishes, after some restarts."""
    result = bace_pipe().simulate(_one_region(1.0, 100.0, 10.0))
    (record,) = result.records
    assert math.isfinite(record.jct) and record.jct >= 4000.0


def test_a_run_whose_totals_overflow_is_an_error_naming_the_figure() -> None:
    result = bace_pipe().simulate(load_scenario("fig1"))
    check_finite(result)  # a normal run passes
    broken = dataclasses.replace(result, total_cost=math.inf)
    with pytest.raises(SimulationError, match=r"^the run's total_cost is inf: job \d+"):
        check_finite(broken)
