"""Hourly prices, carbon and egress (semantics §10), worked out by hand.

The hourly values below are read from the shipped CSV with the csv module in this file, not
through the code under test. The job used throughout is the golden ``M2`` of
test_simulator_golden.py: 3e12 parameters, 2 layers, hidden 5e8, batch 4, S = m = 1, 1 TFLOP/s,
mfu 1, so t_comp(2) = 3 s and A = 1e9 bytes (M = 4); with every hop at 8 Gbps = 1e9 B/s (1 s),
t_iter(2) = (1 + 2 * 3 + 3 * 3) * 2 = 32 s and 225 iterations give E = 7,200 s = 2 h on 2 GPUs,
whether the one hop is inside a region or between two.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
from importlib import resources
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bacepipe_env.core import Placement, Simulator
from bacepipe_env.core.faults import PriceChange
from bacepipe_env.core.tariff import Tariff, hourly_series
from bacepipe_env.errors import ScenarioError
from bacepipe_env.policies import bace_pipe
from bacepipe_env.scenarios import build_scenario, load_scenario

POWER_KW = 0.5
CONSTANTS = {"seq_len": 1, "micro_batch": 1, "peak_tflops": 1.0, "mfu": 1.0, "power_kw": POWER_KW}
M2 = {"name": "M2", "params": 3e12, "layers": 2, "hidden": 500_000_000, "batch": 4}


def _series() -> dict[str, list[float]]:
    """Column name -> the 8,760 hourly values, straight from the CSV."""
    text = resources.files("bacepipe_env").joinpath("data/hourly-price-carbon-2023.csv")
    rows = [r for r in text.read_text("utf-8").splitlines() if not r.startswith("#")]
    table = list(csv.DictReader(io.StringIO("\n".join(rows))))
    assert len(table) == 8760
    return {k: [float(r[k]) for r in table] for k in table[0] if k != "utc"}


SERIES = _series()


def _scenario(regions: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    return {
        "name": "tariff-golden",
        "ignore_memory": True,  # 3e12 parameters fit in no 48 GB GPU
        "constants": CONSTANTS,
        "regions": regions,
        "links": {"rule": "mean"},
        "models": [M2],
        "datasets": [{"name": "D", "samples": 900}],
        "jobs": [{"name": "j", "model": "M2", "dataset": "D"}],
        **top,
    }


def _region(name: str, gpus: int, price: float, carbon: float = 0.0) -> dict[str, Any]:
    return {
        "name": name,
        "gpus": gpus,
        "price_usd_per_kwh": price,
        "bandwidth_gbps": 8,
        "carbon_g_per_kwh": carbon,
    }


def test_a_job_across_the_year_boundary_costs_the_hand_integral() -> None:
    # One region, EU-West (zone GB), 2 GPUs at the Table II rate 0.251 $/kWh. The job starts at
    # t = 0 with start_hour = 8758.5 and runs E = 2 h: hours 8758.5-8759 (half of 2023-12-31
    # 22:00), 8759-8760 (all of 23:00), then the series wraps to 8760-8760.5 = half of hour 0
    # (2023-01-01 00:00).
    spec = _scenario([_region("EU-West", 2, 0.251)], prices="hourly", start_hour=8758.5)
    res = bace_pipe().simulate(build_scenario(spec))
    (rec,) = res.records
    assert rec.placement == Placement((0,), (2,))
    assert rec.execution == pytest.approx(7200.0, rel=1e-12)

    w = SERIES["EU-West_usd_per_mwh"]
    assert (w[8758], w[8759], w[0]) == (95.44, 80.87, 63.40)  # the rows as printed in the CSV
    mean = math.fsum(w) / 8760  # about 116.63 USD/MWh

    def price(h: int) -> float:  # $/kWh: Table II plus the hour's wholesale deviation
        return 0.251 + (w[h] - mean) / 1000

    # cost = power * GPUs * integral of price dt (t in hours)
    integral = 0.5 * price(8758) + 1.0 * price(8759) + 0.5 * price(0)
    assert rec.cost == pytest.approx(POWER_KW * 2 * integral, rel=1e-12)
    # about 0.5 * 2 * (0.251 * 2 + (0.5 * 95.44 + 80.87 + 0.5 * 63.40 - 2 * 116.63) / 1000)
    assert rec.cost == pytest.approx(0.5 * 2 * (0.502 + (160.29 - 233.26) / 1000), rel=1e-3)

    c = SERIES["EU-West_gco2_per_kwh"]
    assert (c[8758], c[8759], c[0]) == (94.51, 95.02, 91.44)
    # kg = power * GPUs * (g/kWh * h) / 1000 = 0.5 * 2 * (47.255 + 95.02 + 45.72) / 1000
    assert rec.carbon == pytest.approx(0.187995, rel=1e-12)
    assert res.total_carbon == rec.carbon
    assert res.start_hour == 8758.5 and res.prices == "hourly"


def test_flat_prices_are_eq4_and_carbon_the_flat_intensity() -> None:
    spec = _scenario([_region("EU-West", 2, 0.251, carbon=290.805)])
    (rec,) = bace_pipe().simulate(build_scenario(spec)).records
    assert rec.cost == pytest.approx(2.0 * 0.251 * 2 * POWER_KW, rel=1e-12)  # E h * sum nP * kW
    assert rec.carbon == pytest.approx(2.0 * 290.805 * 2 * POWER_KW / 1000, rel=1e-12)


def test_price_zone_maps_a_custom_region_to_a_series() -> None:
    # "Dublin" has no series of its own; price_zone borrows EU-West's. Same integral as above.
    here = _region("Dublin", 2, 0.251) | {"price_zone": "EU-West"}
    ours = bace_pipe().simulate(
        build_scenario(_scenario([here], prices="hourly", start_hour=8758.5))
    )
    ref = _region("EU-West", 2, 0.251)
    theirs = bace_pipe().simulate(
        build_scenario(_scenario([ref], prices="hourly", start_hour=8758.5))
    )
    assert ours.records[0].cost == theirs.records[0].cost
    assert ours.records[0].carbon == theirs.records[0].carbon


def test_a_job_on_two_regions_integrates_each_regions_series() -> None:
    # One GPU in EU-West (GB) and one in EU-Central (DE-LU), start at hour 100 of 2023: the job
    # runs exactly hours 100 and 101. Cost = 0.5 kW * sum over the two GPUs and two hours.
    regions = [_region("EU-West", 1, 0.251), _region("EU-Central", 1, 0.288)]
    scenario = build_scenario(_scenario(regions, prices="hourly", start_hour=100))
    sim = Simulator(scenario, bace_pipe().placement)
    (job,) = sim.next_decision() or ()
    sim.place(job, Placement((0, 1), (1, 1)))
    while sim.next_decision() is not None:
        pass
    res = sim.result("explicit")
    (rec,) = res.records
    assert rec.execution == pytest.approx(7200.0, rel=1e-12)
    total = 0.0
    carbon = 0.0
    for zone, rate in (("EU-West", 0.251), ("EU-Central", 0.288)):
        w = SERIES[f"{zone}_usd_per_mwh"]
        mean = math.fsum(w) / 8760
        total += sum(rate + (w[h] - mean) / 1000 for h in (100, 101))
        carbon += sum(SERIES[f"{zone}_gco2_per_kwh"][h] for h in (100, 101))
    assert rec.cost == pytest.approx(POWER_KW * total, rel=1e-12)
    assert rec.carbon == pytest.approx(POWER_KW * carbon / 1000, rel=1e-12)
    # the accrued totals the environment's reward reads add up to the same figures
    assert sim.cost_accrued == pytest.approx(rec.cost, rel=1e-12)
    assert sim.carbon_accrued == pytest.approx(rec.carbon, rel=1e-12)


def test_egress_is_charged_on_both_directions_of_each_cross_region_hop() -> None:
    # J on EU-West:1 -> US-East-2:1, one cross-region boundary. Each iteration sends M * A =
    # 4 * 1e9 bytes forward (activations, EU-West -> US-East-2) and as many back (gradients):
    # 225 iterations * 4e9 B * (0.02 + 0.02) $/GB / 1e9 B/GB = $36.
    regions = [_region("EU-West", 1, 0.251), _region("US-East-2", 1, 0.156)]
    for egress, expected in ((None, 0.0), (0.02, 36.0), (True, 36.0)):
        top = {} if egress is None else {"egress_usd_per_gb": egress}
        sim = Simulator(build_scenario(_scenario(regions, **top)), bace_pipe().placement)
        (job,) = sim.next_decision() or ()
        sim.place(job, Placement((0, 1), (1, 1)))
        while sim.next_decision() is not None:
            pass
        res = sim.result("explicit")
        assert res.records[0].egress_cost == pytest.approx(expected, rel=1e-12)
        assert res.total_egress_cost == pytest.approx(expected, rel=1e-12)
        assert res.egress is (egress is not None)
        # electricity is unchanged: 2 h * (0.251 + 0.156) * 0.5 kW
        assert res.total_cost == pytest.approx(2 * 0.407 * POWER_KW, rel=1e-12)
        assert sim.cost_accrued == pytest.approx(res.total_cost + expected, rel=1e-12)


def test_asymmetric_egress_matrix_bills_each_direction_at_its_rate() -> None:
    # forward EU-West -> US-East-2 at $0.05/GB, back at $0.01/GB: 225 * 4 * (0.05 + 0.01) = $54
    regions = [_region("EU-West", 1, 0.251), _region("US-East-2", 1, 0.156)]
    spec = _scenario(regions, egress_usd_per_gb=[[0, 0.05], [0.01, 0]])
    sim = Simulator(build_scenario(spec), bace_pipe().placement)
    (job,) = sim.next_decision() or ()
    sim.place(job, Placement((0, 1), (1, 1)))
    while sim.next_decision() is not None:
        pass
    assert sim.result().records[0].egress_cost == pytest.approx(54.0, rel=1e-12)


def test_single_region_jobs_pay_no_egress() -> None:
    spec = _scenario([_region("EU-West", 2, 0.251)], egress_usd_per_gb=0.02)
    assert bace_pipe().simulate(build_scenario(spec)).total_egress_cost == 0.0


def test_paper_scenario_default_is_flat_with_country_carbon() -> None:
    scenario = load_scenario("paper")
    assert scenario.tariff.model == "flat" and scenario.tariff.egress is None
    assert scenario.cluster.carbon == (290.805, 369.473, 380.95, 485.392, 470.783, 548.692)
    res = bace_pipe().simulate(scenario)
    power = scenario.cluster.power_kw
    for r in res.records:  # carbon = E h * sum n_r c_r * kW / 1000, region by region
        by_region = sum(
            g * scenario.cluster.carbon[reg] for reg, g in zip(r.placement.path, r.placement.gpus)
        )
        assert r.carbon == pytest.approx(r.execution / 3600 * by_region * power / 1000, rel=1e-12)


def test_tariff_price_and_carbon_at_an_instant() -> None:
    t = Tariff([0.251], [0.0], model="hourly", start_hour=8759, zones=["EU-West"])
    w = SERIES["EU-West_usd_per_mwh"]
    mean = math.fsum(w) / 8760
    assert t.price_at(0, 0.0) == pytest.approx(0.251 + (w[8759] - mean) / 1000, rel=1e-12)
    assert t.price_at(0, 3600.0) == pytest.approx(0.251 + (w[0] - mean) / 1000, rel=1e-12)
    assert t.carbon_at(0, 3599.0) == SERIES["EU-West_gco2_per_kwh"][8759]
    # a whole year of deviations integrates to zero: Table II stays the annual mean
    assert t.price_hours(0, 0.0, 8760 * 3600.0) == pytest.approx(0.251 * 8760, rel=1e-9)


@pytest.mark.parametrize(
    ("top", "field"),
    [
        ({"prices": "hourly", "start_hour": 8760}, "start_hour"),
        ({"prices": "hourly", "start_hour": -1}, "start_hour"),
        ({"prices": "hourly", "start_hour": "noon"}, "start_hour"),
        ({"prices": "monthly"}, "prices"),
        ({"egress_usd_per_gb": -0.02}, "egress_usd_per_gb"),
        ({"egress_usd_per_gb": [[0, 1]]}, "egress_usd_per_gb"),
    ],
)
def test_bad_tariff_fields_are_one_line_errors(top: dict[str, Any], field: str) -> None:
    spec = _scenario([_region("EU-West", 2, 0.251)], **top)
    with pytest.raises(ScenarioError) as err:
        build_scenario(spec)
    assert field in str(err.value) and "\n" not in str(err.value)


def test_a_region_without_a_series_is_a_one_line_error_under_hourly_prices() -> None:
    spec = _scenario([_region("Mars-1", 2, 0.2)], prices="hourly")
    with pytest.raises(ScenarioError, match=r"price_zone.*zones: EU-West") as err:
        build_scenario(spec)
    assert "\n" not in str(err.value)
    build_scenario(_scenario([_region("Mars-1", 2, 0.2)]))  # flat prices need no series


ZONES = ("EU-West", "US-East-2", "EU-Central", "EA-East", "SEA-South", "OC-East")


@settings(max_examples=200, deadline=None)
@given(
    model=st.sampled_from(["flat", "hourly"]),
    start_hour=st.floats(0.0, 8759.99),
    t0=st.floats(0.0, 3e8),  # up to ten simulated years: the series wraps
    dt=st.floats(0.0, 4e5),
    busy=st.lists(st.tuples(st.integers(0, 5), st.integers(1, 128)), max_size=8),
    spike=st.booleans(),
)
def test_busy_hours_is_the_per_region_sum(model, start_hour, t0, dt, busy, spike) -> None:
    """The simulator's accrual asks busy_hours once per event; it must be the sum of
    n * price_hours and of n * carbon_hours, region by region in order, to the last bit (the
    hourly series' reading of t0 and t1 is shared, the arithmetic is the same)."""
    changes = [PriceChange(2, 3.0, t0 + dt / 3, t0 + dt / 2 + 1.0)] if spike else []
    tariff = Tariff(
        [0.251, 0.156, 0.288, 0.191, 0.222, 0.295],
        [300.0, 400.0, 350.0, 550.0, 500.0, 650.0],
        model=model,
        start_hour=start_hour,
        zones=ZONES if model == "hourly" else None,
        price_changes=changes,
    )
    t1 = t0 + dt
    cost = carbon = 0.0
    for r, n in busy:
        cost += n * tariff.price_hours(r, t0, t1)
        carbon += n * tariff.carbon_hours(r, t0, t1)
    got = tariff.busy_hours(t0, t1, busy)
    assert got[0].hex() == cost.hex() and got[1].hex() == carbon.hex()


# Scheduled price changes (issue 25): overlapping changes multiply, and the bill is the integral
# of the price the observation shows.

H = 3600.0  # seconds per hour


def test_overlapping_price_changes_multiply_in_the_bill_as_in_the_price() -> None:
    # Flat 0.1 $/kWh; factor 2 over [1 h, 3 h) and factor 3 over [2 h, 4 h). The price is
    #   [0, 1): 0.1   [1, 2): 0.2   [2, 3): 0.1 * 2 * 3 = 0.6   [3, 4): 0.3   [4, 5): 0.1
    # so the integral over [0, 5 h] is 0.1 * (1 + 2 * 1 + 6 * 1 + 3 * 1 + 1) = 0.1 * 13 = 1.3.
    t = Tariff(
        [0.1],
        [0.0],
        price_changes=[PriceChange(0, 2.0, 1 * H, 3 * H), PriceChange(0, 3.0, 2 * H, 4 * H)],
    )
    assert t.price_hours(0, 0.0, 5 * H) == pytest.approx(1.3, rel=1e-12)
    # the observation's price in the overlap is 6x, and so is the bill for that hour (not 4x)
    assert t.price_at(0, 2.5 * H) == pytest.approx(0.6, rel=1e-12)
    assert t.price_hours(0, 2 * H, 3 * H) == pytest.approx(0.6, rel=1e-12)
    # [1.5 h, 3.5 h]: 0.1 * (0.5 * 2 + 1 * 6 + 0.5 * 3) = 0.1 * 8.5 = 0.85
    assert t.price_hours(0, 1.5 * H, 3.5 * H) == pytest.approx(0.85, rel=1e-12)
    # before and after the changes: the base price, 0.1 $/kWh
    assert t.price_hours(0, 0.0, 0.5 * H) == pytest.approx(0.05, rel=1e-12)
    assert t.price_at(0, 4 * H) == 0.1


def test_overlapping_zero_factors_cost_nothing_and_never_a_negative_amount() -> None:
    # Flat 0.1 $/kWh; factor 0 over [1 h, 3 h) and factor 0 over [2 h, 4 h): the price is 0 over
    # [1 h, 4 h) (0 * 0 = 0 in the overlap), 0.1 elsewhere. Over [0, 5 h]:
    # 0.1 * (1 + 0 + 0 + 0 + 1) = 0.2. Adding (factor - 1) x base per change would give
    # 0.1 * (5 - 2 - 2) = 0.1, and -0.1 over the overlap alone.
    t = Tariff(
        [0.1],
        [0.0],
        price_changes=[PriceChange(0, 0.0, 1 * H, 3 * H), PriceChange(0, 0.0, 2 * H, 4 * H)],
    )
    assert t.price_hours(0, 0.0, 5 * H) == pytest.approx(0.2, rel=1e-12)
    assert t.price_hours(0, 2 * H, 3 * H) == 0.0
    assert t.price_hours(0, 1 * H, 4 * H) == 0.0
    assert t.price_hours(0, 1.5 * H, 3.5 * H) == 0.0
    assert t.price_at(0, 2.5 * H) == 0.0


@pytest.mark.parametrize(
    ("t0", "m", "t1"),
    # windows [t0, m) and [m, t1): base - base1 - base2 rounded below zero in all three
    [(2834.7, 11192.4, 15520.1), (54141.2, 63532.7, 67344.7), (23308.4, 25617.1, 27804.9)],
)
def test_adjacent_zero_factors_covering_the_interval_cost_exactly_nothing(
    t0: float, m: float, t1: float
) -> None:
    # two back-to-back factor-0 changes cover [t0, t1]: the price is 0 throughout
    t = Tariff(
        [0.251], [0.0], price_changes=[PriceChange(0, 0.0, t0, m), PriceChange(0, 0.0, m, t1)]
    )
    assert t.price_hours(0, t0, t1) == 0.0
    # [t0 - 1 h, t1 + 1 h]: the two uncovered hours at 0.251
    assert t.price_hours(0, t0 - H, t1 + H) == pytest.approx(2 * 0.251, rel=1e-12)


def _eu_west_price(h: int) -> float:
    """EU-West's hourly price at hour ``h`` of 2023 ($/kWh), Table II's 0.251 plus the
    wholesale deviation, from the shipped series read through HourlySeries."""
    series = hourly_series()
    w = series.price[series.zone("EU-West")]
    return 0.251 + (float(w[h]) - math.fsum(w.tolist()) / 8760) / 1000


def test_an_hourly_price_change_multiplies_the_hours_series() -> None:
    # start_hour 100: [0, 1 h) is hour 100 of 2023, [1 h, 2 h) hour 101. Factor 2 over
    # [0.5 h, 1.5 h): integral over [0, 2 h] = 0.5 * p(100) + 0.5 * 2 * p(100)
    #                                         + 0.5 * 2 * p(101) + 0.5 * p(101)
    #                                         = 1.5 * (p(100) + p(101))
    p100, p101 = _eu_west_price(100), _eu_west_price(101)
    w = SERIES["EU-West_usd_per_mwh"]  # the same figures as the CSV prints them
    assert p100 == pytest.approx(0.251 + (w[100] - math.fsum(w) / 8760) / 1000, rel=1e-12)
    one = Tariff(
        [0.251],
        [0.0],
        model="hourly",
        start_hour=100,
        zones=["EU-West"],
        price_changes=[PriceChange(0, 2.0, 0.5 * H, 1.5 * H)],
    )
    assert one.price_hours(0, 0.0, 2 * H) == pytest.approx(1.5 * (p100 + p101), rel=1e-12)
    assert one.price_at(0, 0.75 * H) == pytest.approx(2 * p100, rel=1e-12)
    # add factor 0.5 over [1 h, 2 h): [0, 0.5) p100 * 0.5, [0.5, 1) 2 * p100 * 0.5,
    # [1, 1.5) 2 * 0.5 * p101 * 0.5, [1.5, 2) 0.5 * p101 * 0.5 -> 1.5 * p100 + 0.75 * p101
    two = Tariff(
        [0.251],
        [0.0],
        model="hourly",
        start_hour=100,
        zones=["EU-West"],
        price_changes=[PriceChange(0, 2.0, 0.5 * H, 1.5 * H), PriceChange(0, 0.5, 1 * H, 2 * H)],
    )
    assert two.price_hours(0, 0.0, 2 * H) == pytest.approx(1.5 * p100 + 0.75 * p101, rel=1e-12)
    assert two.price_at(0, 1.25 * H) == pytest.approx(p101, rel=1e-12)


def _reference_price_hours(
    tariff: Tariff, base: Tariff, region: int, t0: float, t1: float
) -> tuple[float, float, float, float]:
    """``(integral of price_at, integral of |price_at|, max |price_at|, integral of |base
    price_at|)`` over ``[t0, t1]`` ($/kWh * h; the max in $/kWh), ``base`` being ``tariff``
    without its changes. The price is constant between consecutive boundaries (the changes'
    starts and ends and, under hourly prices, the hours of the series), so each piece's
    integral is its midpoint's price x its width."""
    cuts = {t0, t1}
    cuts.update(x for c in tariff.price_changes for x in (c.start, c.end) if t0 < x < t1)
    if tariff.model == "hourly":  # hour k of the series starts at t = (k - start_hour) * 3600
        first = math.ceil(t0 / H + tariff.start_hour)
        last = math.floor(t1 / H + tariff.start_hour)
        cuts.update(
            x for k in range(first, last + 1) if t0 < (x := (k - tariff.start_hour) * H) < t1
        )
    pieces = [((a + b) / 2, (b - a) / H) for a, b in itertools.pairwise(sorted(cuts))]
    prices = [tariff.price_at(region, mid) for mid, _ in pieces]
    terms = [price * hours for price, (_, hours) in zip(prices, pieces, strict=True)]
    unscaled = math.fsum(abs(base.price_at(region, mid)) * hours for mid, hours in pieces)
    peak = max((abs(x) for x in prices), default=0.0)
    return math.fsum(terms), math.fsum(abs(x) for x in terms), peak, unscaled


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    model=st.sampled_from(["flat", "hourly"]),
    start_hour=st.floats(0.0, 8759.99),
    t0=st.floats(0.0, 3e7),
    span=st.floats(0.0, 3e5),
)
def test_price_hours_is_the_integral_of_price_at(data, model, start_hour, t0, span) -> None:
    """Random changes, 1 to 4 per region with factors in [0, 5], windows around [t0, t1] that
    often overlap: price_hours is the integral of price_at to 1e-9 of the integral of its
    absolute value (and the rounding of reading t in hours), never negative under flat prices."""
    t1 = t0 + span
    width = st.floats(1.0, max(span, 2 * H))
    changes = []
    for region in (0, 1):
        for _ in range(data.draw(st.integers(1, 4))):
            start = data.draw(st.floats(max(0.0, t0 - span / 2 - H), t1 + H))
            factor = data.draw(st.sampled_from([0.0, 1.0, 2.0]) | st.floats(0.0, 5.0))
            changes.append(PriceChange(region, factor, start, start + data.draw(width)))
    zones = ZONES[:2] if model == "hourly" else None
    args = ([0.251, 0.156], [300.0, 400.0])
    tariff = Tariff(*args, model=model, start_hour=start_hour, zones=zones, price_changes=changes)
    base = Tariff(*args, model=model, start_hour=start_hour, zones=zones)
    for region in (0, 1):
        got = tariff.price_hours(region, t0, t1)
        ref, size, peak, _ = _reference_price_hours(tariff, base, region, t0, t1)
        # Rounding, beyond 1e-9 of the integral of |price|:
        # - the peak price times 1e-10 h (0.36 us): the hourly series reads t0, t1 and each
        #   change's start and end (up to 8) in hours, t / 3600 + start_hour, to its float
        #   spacing (3.6e-12 h near 2e4 h), where the price can jump by up to twice the peak.
        # - a subnormal's worth (hypothesis found 5e-324 against 0 with every factor 0: a sum
        #   of terms that cancel exactly but for the last bit of the smallest float).
        assert abs(got - ref) <= 1e-9 * size + 1e-10 * peak + 1e-300
        if model == "flat":
            assert got >= 0.0


def test_a_job_through_two_overlapping_zero_factor_changes_costs_the_uncovered_hours() -> None:
    # The golden job runs on R0:2 for 2 h at 0.1 $/kWh. Factor 0 over [0.25 h, 1.5 h) and factor
    # 0 over [0.5 h, 1.75 h): the price is 0 over [0.25 h, 1.75 h) and 0.1 over the other 0.5 h,
    # so cost = 0.5 kW x 2 GPUs x 0.1 $/kWh x 0.5 h = $0.05. Adding (factor - 1) x base per
    # change billed 0.5 x 2 x 0.1 x (2 - 1.25 - 1.25) = -$0.05.
    spec = _scenario(
        [_region("R0", 2, 0.1, carbon=200.0)],
        events=[
            {"type": "price", "region": "R0", "factor": 0.0, "start_h": 0.25, "end_h": 1.5},
            {"type": "price", "region": "R0", "factor": 0.0, "start_h": 0.5, "end_h": 1.75},
        ],
    )
    sim = Simulator(build_scenario(spec), bace_pipe().placement)
    (job,) = sim.next_decision() or ()
    sim.place(job, Placement((0,), (2,)))
    while sim.next_decision() is not None:
        pass
    (rec,) = sim.result("explicit").records
    assert rec.execution == pytest.approx(7200.0, rel=1e-12)
    assert rec.cost >= 0.0
    assert rec.cost == pytest.approx(0.05, rel=1e-12)
    assert sim.cost_accrued == pytest.approx(0.05, rel=1e-12)  # what the reward reads
    # and the policy's own run, booked the same way
    (own,) = bace_pipe().simulate(build_scenario(spec)).records
    assert own.placement == Placement((0,), (2,)) and own.cost == rec.cost
    # carbon does not follow the price: 0.5 kW x 2 GPUs x 200 g/kWh x 2 h / 1000 = 0.4 kg
    assert rec.carbon == pytest.approx(0.4, rel=1e-12)
