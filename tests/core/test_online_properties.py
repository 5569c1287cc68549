"""Invariants of online runs (Poisson or Philly arrivals) under hourly prices, for every
registered policy (semantics §10 and §12).

Cost and carbon are recomputed here hour by hour from the shipped CSV, independently of
:mod:`bacepipe_env.core.tariff`'s prefix sums.
"""

from __future__ import annotations

import csv
import io
import math
from importlib import resources
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bacepipe_env.core import RunResult, Scenario, Simulator
from bacepipe_env.policies.registry import make_policy, policy_names
from bacepipe_env.scenarios import load_scenario

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REL = 1e-9


def _series() -> dict[str, list[float]]:
    text = resources.files("bacepipe_env").joinpath("data/hourly-price-carbon-2023.csv")
    rows = [r for r in text.read_text("utf-8").splitlines() if not r.startswith("#")]
    table = list(csv.DictReader(io.StringIO("\n".join(rows))))
    return {k: [float(r[k]) for r in table] for k in table[0] if k != "utc"}


SERIES = _series()


def _hourly_integral(values: list[float], start_hour: float, t0: float, t1: float) -> float:
    """Integral of an hourly step function over [t0, t1] seconds, t in hours, hour by hour."""
    x0, x1 = t0 / 3600 + start_hour, t1 / 3600 + start_hour
    total, h = 0.0, math.floor(x0)
    while h < x1:
        overlap = min(x1, h + 1) - max(x0, h)
        if overlap > 0:
            total += overlap * values[h % 8760]
        h += 1
    return total


@st.composite
def online_worlds(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "seed": draw(st.integers(0, 2**16)),
        "n_jobs": draw(st.integers(2, 40)),
        "load": draw(st.floats(0.2, 1.5)),
        "start_hour": draw(st.one_of(st.just("random"), st.integers(0, 8759))),
        "egress_usd_per_gb": draw(st.one_of(st.none(), st.just(0.02))),
        "policy": draw(st.sampled_from(policy_names())),
        "arrivals": draw(st.sampled_from(["philly", "poisson"])),
    }


def _scenario(world: dict[str, Any]) -> Scenario:
    from bacepipe_env.scenarios.loader import load_scenario_spec

    spec = dict(load_scenario_spec("online"))
    spec["workload"] = dict(spec["workload"], arrivals=world["arrivals"])
    return load_scenario(
        spec,
        seed=world["seed"],
        n_jobs=world["n_jobs"],
        load=world["load"],
        start_hour=world["start_hour"],
        egress_usd_per_gb=world["egress_usd_per_gb"],
    )


def _run(scn: Scenario, policy: str, seed: int) -> tuple[RunResult, Simulator]:
    p = make_policy(policy, seed=seed)
    sim = Simulator(scn, p.placement)
    return sim.run(p.ordering), sim


def _check_capacities(scn: Scenario, res: RunResult) -> None:
    """At every start instant, the running jobs' GPUs and reservations fit the cluster."""
    cap = scn.cluster.capacity
    bw = scn.cluster.bandwidth
    for t in sorted({r.start_time for r in res.records}):
        used = [0] * len(cap)
        links: dict[tuple[int, int], float] = {}
        for r in res.records:
            if r.start_time <= t < r.finish_time:
                for reg, g in zip(r.placement.path, r.placement.gpus):
                    used[reg] += g
                for u, v in zip(r.placement.path, r.placement.path[1:]):
                    links[(u, v)] = links.get((u, v), 0.0) + r.reserved_bandwidth
        assert all(u <= c for u, c in zip(used, cap)), (t, used, cap)
        for (u, v), b in links.items():
            assert b <= float(bw[u, v]) * (1 + 1e-9), (t, u, v, b)


@SETTINGS
@given(online_worlds())
def test_online_hourly_runs_keep_every_invariant(world: dict[str, Any]) -> None:
    scn = _scenario(world)
    res, sim = _run(scn, world["policy"], world["seed"])
    # every job completes exactly once
    assert [r.job_id for r in res.records] == sorted(j.job_id for j in scn.jobs)
    assert all(r.start_time >= r.submit_time for r in res.records)
    _check_capacities(scn, res)
    # cost and carbon: per job the hand integral of its regions' series, then they add up
    tariff, power = scn.tariff, scn.cluster.power_kw
    names = scn.cluster.names
    for r in res.records:
        cost = carbon = 0.0
        for reg, g in zip(r.placement.path, r.placement.gpus):
            w = SERIES[f"{names[reg]}_usd_per_mwh"]
            mean = math.fsum(w) / 8760
            dev = _hourly_integral([(x - mean) / 1000 for x in w], tariff.start_hour, *_span(r))
            base = scn.cluster.prices[reg] * r.execution / 3600
            cost += g * (base + dev)
            c = SERIES[f"{names[reg]}_gco2_per_kwh"]
            carbon += g * _hourly_integral(c, tariff.start_hour, *_span(r))
        assert r.cost == pytest.approx(power * cost, rel=1e-9, abs=1e-9)
        assert r.carbon == pytest.approx(power * carbon / 1000, rel=1e-9)
        assert r.egress_cost >= 0.0
        assert (r.egress_cost > 0) == (
            world["egress_usd_per_gb"] is not None and len(r.placement.path) > 1
        )
    assert res.total_cost == pytest.approx(math.fsum(r.cost for r in res.records), rel=1e-12)
    assert res.total_carbon == pytest.approx(math.fsum(r.carbon for r in res.records), rel=1e-12)
    everything = res.total_cost + res.total_egress_cost
    assert sim.cost_accrued == pytest.approx(everything, rel=1e-9, abs=1e-9)
    assert sim.carbon_accrued == pytest.approx(res.total_carbon, rel=1e-9)
    assert res.jct_p50 <= res.jct_p95 <= res.jct_p99 <= max(r.jct for r in res.records)
    # same seed, same run, bit for bit
    again, _ = _run(_scenario(world), world["policy"], world["seed"])
    assert again.to_dict(names) == res.to_dict(names)


def _span(r: Any) -> tuple[float, float]:
    return r.start_time, r.finish_time


def test_online_scenario_defaults() -> None:
    scn = load_scenario("online", seed=3)
    assert len(scn.jobs) == 500
    assert scn.tariff.model == "hourly"
    assert 0 <= scn.tariff.start_hour < 8760 and scn.tariff.start_hour == int(scn.tariff.start_hour)
    assert load_scenario("online", seed=3).tariff.start_hour == scn.tariff.start_hour
    assert load_scenario("online", seed=4).tariff.start_hour != scn.tariff.start_hour
    submits = [j.submit_time for j in scn.jobs]
    assert submits == sorted(submits) and submits[0] == 0.0
    # the episode's arrivals have exactly the target rate (the window is normalised)
    rate = float(scn.params["arrival_rate_per_h"])
    assert (len(submits) - 1) / (submits[-1] / 3600) == pytest.approx(rate, rel=1e-9)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(0.0, 1e9, allow_nan=False), min_size=1, max_size=600),
    st.sampled_from([0.5, 0.95, 0.99]),
)
def test_run_percentiles_are_numpys_linear_percentiles(values: list[float], q: float) -> None:
    import numpy as np

    from bacepipe_env.core.records import percentile

    expected = float(np.percentile(np.array(values), 100 * q))
    assert percentile(sorted(values), q) == expected
