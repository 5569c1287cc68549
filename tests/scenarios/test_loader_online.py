"""Scenario-file keys of the online world: arrival processes, offered load, horizon, weighted
job mixes, price model, start hour and egress (semantics §10 and §12)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from bacepipe_env.errors import ScenarioError
from bacepipe_env.scenarios import load_scenario, load_scenario_spec
from bacepipe_env.scenarios.arrivals import arrival_times
from bacepipe_env.scenarios.loader import compile_scenario


def _paper(**workload: Any) -> dict[str, Any]:
    spec = copy.deepcopy(load_scenario_spec("paper"))
    spec["workload"] = {"n_jobs": 40, "models": "random", "datasets": "random", **workload}
    return spec


def test_poisson_workload_keeps_its_old_draws() -> None:
    # arrival_rate_per_h alone still means Poisson, drawn after the models and the datasets
    spec = _paper(arrival_rate_per_h=2.0)
    scn = load_scenario(spec, seed=5)
    rng = np.random.default_rng(5)
    rng.integers(8, size=40)  # models
    rng.integers(3, size=40)  # datasets
    gaps = rng.exponential(1 / 2.0, size=40)
    gaps[0] = 0.0
    hours = 0.0 + np.cumsum(gaps)  # submit_h + cumulative gaps, hours
    assert [j.submit_time for j in scn.jobs] == (hours * 3600.0).tolist()


def test_philly_workload_uses_the_trace_stream() -> None:
    scn = load_scenario(_paper(arrivals="philly", arrival_rate_per_h=1.5), seed=2)
    rng = np.random.default_rng(2)
    rng.integers(8, size=40)
    rng.integers(3, size=40)
    hours = arrival_times("philly", 40, 1.5, rng)
    assert [j.submit_time for j in scn.jobs] == (hours * 3600.0).tolist()


def test_load_sets_the_rate_from_the_mean_job() -> None:
    template = compile_scenario(_paper(arrivals="poisson", load=0.5))
    w = template.workload
    assert w is not None and w.rate is not None
    # offered load = rate * E[K* x ideal hours] / GPUs, with the mean over the uniform draws
    assert w.rate * template.mean_gpu_hours() / 336 == pytest.approx(0.5, rel=1e-12)
    assert template.offered_load() == pytest.approx(0.5, rel=1e-12)
    doubled = compile_scenario(_paper(arrivals="poisson", load=0.5), load=1.0).workload
    assert doubled is not None and doubled.rate == pytest.approx(2 * w.rate, rel=1e-12)


def test_horizon_cuts_the_arrivals() -> None:
    scn = load_scenario(_paper(arrivals="poisson", arrival_rate_per_h=1.0, horizon_h=10.0))
    assert 1 <= len(scn.jobs) < 40
    assert all(j.submit_time < 10 * 3600 for j in scn.jobs)


def test_weighted_datasets_follow_their_weights() -> None:
    spec = _paper(datasets={"Alpaca-52k": 3, "OpenWebText": 1})
    spec["workload"]["n_jobs"] = 4000
    names = [j.dataset for j in load_scenario(spec, seed=1, ignore_memory=True).jobs]
    assert set(names) == {"Alpaca-52k", "OpenWebText"}
    share = names.count("Alpaca-52k") / len(names)
    assert abs(share - 0.75) < 0.03  # binomial sd sqrt(0.75 * 0.25 / 4000) = 0.007


@pytest.mark.parametrize(
    ("workload", "field"),
    [
        ({"arrivals": "weibull", "arrival_rate_per_h": 1.0}, "workload.arrivals"),
        ({"arrivals": "philly"}, "workload.arrival_rate_per_h"),
        ({"arrivals": "poisson", "arrival_rate_per_h": -1.0}, "workload.arrival_rate_per_h"),
        ({"arrivals": "poisson", "arrival_rate_per_h": 0.0}, "workload.arrival_rate_per_h"),
        ({"arrivals": "batch", "arrival_rate_per_h": 1.0}, "workload.arrivals"),
        ({"arrivals": "poisson", "load": -0.5}, "workload.load"),
        ({"arrivals": "poisson", "load": 0.5, "arrival_rate_per_h": 1.0}, "workload.load"),
        ({"arrivals": "poisson", "arrival_rate_per_h": 1.0, "horizon_h": 0}, "workload.horizon_h"),
        ({"datasets": {"Alpaca-52k": -1}}, "workload.datasets"),
        ({"datasets": {"Nope": 1}}, "workload.datasets.Nope"),
        ({"datasets": {"Alpaca-52k": 0}}, "workload.datasets"),
    ],
)
def test_bad_workloads_are_one_line_errors(workload: dict[str, Any], field: str) -> None:
    with pytest.raises(ScenarioError) as err:
        load_scenario(_paper(**workload))
    assert str(err.value).startswith(field) and "\n" not in str(err.value)


def test_load_override_needs_an_online_workload() -> None:
    with pytest.raises(ScenarioError, match=r"^load: needs a workload with poisson or philly"):
        load_scenario("paper", load=0.5)
    with pytest.raises(ScenarioError, match=r"^load: must be in \[0.001, 1,000\]"):
        load_scenario("online", load=-1.0)
    with pytest.raises(ScenarioError, match=r"^start_hour"):
        load_scenario("paper", prices="hourly", start_hour=9000)
    with pytest.raises(ScenarioError, match=r"^prices"):
        load_scenario("paper", prices="weekly")


def test_horizon_knob_cuts_an_online_episode_and_the_window_keeps_the_budget() -> None:
    from bacepipe_env.scenarios import ScenarioSampler

    full = load_scenario("online", seed=0)
    cut = load_scenario("online", seed=0, horizon_h=720.0)
    assert 1 <= len(cut.jobs) < len(full.jobs)
    assert all(j.submit_time < 720 * 3600 for j in cut.jobs)
    # the cut keeps a prefix of the same episode: same jobs, same times
    assert [(j.model, j.dataset, j.submit_time) for j in cut.jobs] == [
        (j.model, j.dataset, j.submit_time) for j in full.jobs[: len(cut.jobs)]
    ]
    assert ScenarioSampler("online", horizon_h=720.0).max_jobs == 500  # the budget
    with pytest.raises(ScenarioError, match=r"^horizon_h: must be in \(0, "):
        load_scenario("online", horizon_h=0)
    with pytest.raises(ScenarioError, match=r"^horizon_h: needs a workload rule"):
        load_scenario("fig1", horizon_h=10)


def test_random_generator_draws_carbon_only_when_asked() -> None:
    from bacepipe_env.scenarios import RandomScenarioGenerator

    plain = RandomScenarioGenerator()(np.random.default_rng(7))
    green = RandomScenarioGenerator(carbon_range=(100.0, 600.0))(np.random.default_rng(7))
    assert plain.cluster.carbon == (0.0,) * plain.cluster.n_regions
    assert all(100.0 <= c <= 600.0 for c in green.cluster.carbon)
    # everything else is the same episode
    assert plain.cluster.capacity == green.cluster.capacity
    assert plain.cluster.prices == green.cluster.prices
    assert [(j.model, j.dataset, j.submit_time) for j in plain.jobs] == [
        (j.model, j.dataset, j.submit_time) for j in green.jobs
    ]
    with pytest.raises(ScenarioError, match=r"^carbon_range\[1\]"):
        RandomScenarioGenerator(carbon_range=(500.0, 100.0))


def test_an_unknown_knob_is_a_one_line_error() -> None:
    from bacepipe_env.errors import ValidationError
    from bacepipe_env.scenarios import ScenarioSampler

    for call in (
        lambda: load_scenario("paper", gpu_scael=2.0),
        lambda: ScenarioSampler("paper", bandwith_scale=0.5),
    ):
        with pytest.raises(ValidationError) as err:
            call()
        assert "unknown knob; known: bandwidth_scale, gpu_scale" in str(err.value)
        assert "\n" not in str(err.value)
