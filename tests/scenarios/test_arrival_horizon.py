"""Arrival rules and the simulation horizon (issue 25): rates and loads have physical lower
bounds, and whatever the range, arrivals that would pass ``HORIZON_H`` are refused in one line
naming the input (a file's ``workload.arrival_rate_per_h`` or ``workload.load``, the ``load``
knob, the random generator's rate) before anything is simulated."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from bacepipe_env.core.limits import HORIZON_H, LIMITS
from bacepipe_env.errors import ScenarioError
from bacepipe_env.scenarios import load_scenario
from bacepipe_env.scenarios.arrivals import arrival_times, check_arrival_span
from bacepipe_env.scenarios.generators import RandomScenarioGenerator, synthetic_scenario
from bacepipe_env.scenarios.loader import compile_scenario, load_scenario_spec

ONLINE = load_scenario_spec("online")


def _online(**workload: Any) -> dict[str, Any]:
    """The online scenario with its workload's arrivals replaced."""
    spec = copy.deepcopy(ONLINE)
    base = {k: v for k, v in spec["workload"].items() if k != "load"}
    spec["workload"] = {**base, **workload}
    return spec


def test_the_lower_bounds_are_one_job_per_horizon_and_a_thousandth_of_the_cluster() -> None:
    assert LIMITS["workload.arrival_rate_per_h"].low == 1.0 / HORIZON_H == 1e-6
    assert LIMITS["workload.load"].low == 0.001
    assert not LIMITS["workload.arrival_rate_per_h"].open_low
    assert not LIMITS["workload.load"].open_low


def test_a_rate_of_1e_300_is_refused_by_its_range_in_one_line() -> None:
    with pytest.raises(ScenarioError) as err:
        load_scenario(_online(arrivals="poisson", arrival_rate_per_h=1e-300, n_jobs=20))
    assert str(err.value) == (
        "workload.arrival_rate_per_h: must be in [1e-6, 1,000,000] jobs/h (got 1e-300)"
    )
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("spec", "knobs", "expected"),
    [
        (_online(arrivals="philly", load=1e-9), {}, "workload.load: must be in [0.001, 1,000] "),
        (copy.deepcopy(ONLINE), {"load": 1e-9}, "load: must be in [0.001, 1,000] "),
    ],
)
def test_a_load_of_1e_9_is_refused_by_its_range_in_one_line(
    spec: dict[str, Any], knobs: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ScenarioError) as err:
        load_scenario(spec, **knobs)
    assert str(err.value) == expected + "(got 1e-09)"


def test_a_rate_in_range_whose_arrivals_pass_the_horizon_is_refused_by_name() -> None:
    """2,000 jobs at 0.001 jobs/h: the last arrives about 1,999 / 0.001 = 1,999,000 h on."""
    for arrivals in ("poisson", "philly"):
        spec = _online(arrivals=arrivals, arrival_rate_per_h=0.001, n_jobs=2000)
        with pytest.raises(ScenarioError) as err:
            compile_scenario(spec)  # before any draw
        assert str(err.value) == (
            "workload.arrival_rate_per_h: 2,000 arrivals at 0.001 jobs/h would end at "
            "1,999,000 h, past the simulation horizon (1,000,000 h): raise the rate or load "
            "(got 0.001)"
        )


def test_a_load_in_range_whose_arrivals_pass_the_horizon_is_refused_by_name() -> None:
    """The online world (336 GPUs) at load 0.001: rate = 0.001 x 336 / (mean GPU-hours per
    job), and its 500 Philly arrivals span 499 / rate hours, about 3.1 million."""
    gpu_hours = compile_scenario(ONLINE).mean_gpu_hours()  # the workload's, as docs define load
    total_gpus = sum(r["gpus"] for r in ONLINE["regions"])
    assert total_gpus == 336
    rate = 0.001 * total_gpus / gpu_hours
    end = 499 / rate
    assert 3.1e6 < end < 3.2e6
    want = (
        f"500 arrivals at {rate:.4g} jobs/h would end at {end:,.0f} h, past the simulation "
        "horizon (1,000,000 h): raise the rate or load (got 0.001)"
    )
    with pytest.raises(ScenarioError) as err:
        load_scenario(ONLINE, load=0.001)
    assert str(err.value) == "load: " + want
    with pytest.raises(ScenarioError) as err:
        load_scenario(_online(arrivals="philly", load=0.001))
    assert str(err.value) == "workload.load: " + want
    # fewer jobs at the same load fit: 99 / rate ~ 624,000 h
    assert len(load_scenario(ONLINE, load=0.001, n_jobs=100).jobs) == 100


def test_a_cut_at_horizon_h_keeps_a_long_stream_inside_the_horizon() -> None:
    """The same 2,000 jobs at 0.001 jobs/h, cut at 500,000 h: only the Poisson arrivals
    before it are kept (about 500 +- 22), so nothing passes the horizon."""
    spec = _online(arrivals="poisson", arrival_rate_per_h=0.001, n_jobs=2000, horizon_h=500_000)
    scenario = load_scenario(spec, seed=1)
    assert 400 < len(scenario.jobs) < 600
    assert max(j.submit_time for j in scenario.jobs) < 500_000 * 3600.0


def test_a_stream_starting_late_counts_its_start() -> None:
    """From submit_h 900,000 h, 11 jobs at 1e-4 jobs/h end 10 / 1e-4 = 100,000 h later:
    exactly the horizon, accepted; a 12th would end at 1,010,000 h."""
    check_arrival_span(11, 1e-4, start_h=900_000.0)
    with pytest.raises(ScenarioError) as err:
        check_arrival_span(12, 1e-4, start_h=900_000.0)
    assert str(err.value) == (
        "rate_per_h: 12 arrivals at 0.0001 jobs/h from 900,000 h would end at 1,010,000 h, "
        "past the simulation horizon (1,000,000 h): raise the rate or load (got 0.0001)"
    )


def test_a_poisson_draw_longer_than_its_mean_is_refused_when_drawn() -> None:
    """Two arrivals at 1 / 990,000 jobs/h: the mean span (990,000 h) is inside the horizon,
    but the one exponential gap passes 1,000,000 h with probability exp(-1000/990) ~ 36%;
    the seeds where numpy's draw does are refused, the others kept."""
    rate = 1 / 990_000
    refused = kept = 0
    for seed in range(20):
        gap = np.random.default_rng(seed).exponential(990_000.0, size=2)[1]
        rng = np.random.default_rng(seed)
        if gap > HORIZON_H:
            with pytest.raises(ScenarioError, match=r"^rate_per_h: the 2 arrivals drawn end at"):
                arrival_times("poisson", 2, rate, rng)
            refused += 1
        else:
            assert arrival_times("poisson", 2, rate, rng)[-1] == pytest.approx(gap)
            kept += 1
    assert refused and kept


def test_a_start_past_the_horizon_is_refused() -> None:
    with pytest.raises(ScenarioError, match=r"^start_h: must be <= 1000000\.0 "):
        arrival_times("batch", 3, None, np.random.default_rng(0), start_h=HORIZON_H + 1)


def test_the_random_generator_refuses_a_slow_long_workload_when_made() -> None:
    """Up to 10,000 jobs at 0.5 jobs/h or more: 9,999 / 0.5 = 19,998 h, fine; up to 1,000,000
    at 0.5: 1,999,998 h, past the horizon, named by the slowest rate."""
    RandomScenarioGenerator(n_jobs=(1, 10_000))
    with pytest.raises(ScenarioError) as err:
        RandomScenarioGenerator(n_jobs=(1, 1_000_000))
    assert str(err.value) == (
        "arrival_rate_per_h[0]: 1,000,000 arrivals at 0.5 jobs/h would end at 1,999,998 h, "
        "past the simulation horizon (1,000,000 h): raise the rate or load (got 0.5)"
    )
    # all at t = 0 (p_batch 1): no arrival stream to check
    RandomScenarioGenerator(n_jobs=(1, 1_000_000), p_batch=1.0)
    with pytest.raises(ScenarioError, match=r"^arrival_rate_per_h\[0\]: must be in \[1e-6, "):
        RandomScenarioGenerator(arrival_rate_per_h=(1e-9, 1.0))


def test_synthetic_scenarios_name_their_load() -> None:
    with pytest.raises(ScenarioError, match=r"^workload.load: must be in \[0.001, 1,000\]"):
        synthetic_scenario(4, 10, arrivals="philly", load=1e-9)
