"""Fault events apply themselves (semantics §11, issue 26): each kind on a hand-made target
whose every operation is written down, then the same events inside the simulator, with the
numbers worked out by hand.

The simulator's golden world is test_faults.py's: one job of the ``M2`` model, t_iter 32 s and
E = 7,200 s on 2 GPUs of one region; regions R0 (2 GPUs, $0.1/kWh) and R1 (2 GPUs, $0.3/kWh).
"""

from __future__ import annotations

from typing import Any

import pytest

from bacepipe_env.core import Placement, Simulator
from bacepipe_env.core.faults import (
    FaultModel,
    FaultState,
    GpuFailure,
    LinkChange,
    LinkChangeEnd,
    LinkChangeStart,
    Outage,
    OutageEnd,
    OutageStart,
    PriceChange,
    PriceChangeEnd,
    PriceChangeStart,
)
from bacepipe_env.policies import bace_pipe
from bacepipe_env.scenarios import build_scenario, load_scenario
from bacepipe_env.scenarios.loader import load_scenario_spec

NOMINAL = ((0.0, 1e9), (1e9, 0.0))  # bytes/s, two regions


class Recorder:
    """A :class:`~bacepipe_env.core.faults.FaultTarget` that writes down every operation a
    fault performs on it. Jobs 1 and 2 run on region 0, job 3 on region 1; job 3's live
    attempt is attempt 7."""

    def __init__(self) -> None:
        self.fault_state = FaultState(FaultModel(), NOMINAL, seed=0)
        self.fault_state.reset()
        self.log: list[tuple[Any, ...]] = []
        self.on = {0: [1, 2], 1: [3]}

    def jobs_on(self, region: int) -> list[int]:
        return list(self.on[region])

    def attempt_live(self, job_id: int, attempt_id: int) -> bool:
        return (job_id, attempt_id) == (3, 7)

    def end_attempt(self, job_id: int, outcome: str) -> None:
        self.log.append(("end", job_id, outcome))

    def close_region(self, region: int) -> None:
        self.log.append(("close", region))

    def open_region(self, region: int) -> None:
        self.log.append(("open", region))

    def set_link_capacity(self, src: int, dst: int, capacity: float) -> None:
        self.log.append(("link", src, dst, capacity))


def test_an_outage_ends_its_regions_attempts_and_closes_it_until_the_last_one_ends() -> None:
    sim = Recorder()
    OutageStart(0).apply(sim)  # jobs 1 and 2 end, then the region closes
    assert sim.log == [("end", 1, "outage"), ("end", 2, "outage"), ("close", 0)]
    assert sim.fault_state.down == [True, False] and sim.fault_state.outages_on == [1, 0]
    OutageStart(0).apply(sim)  # an overlapping outage: counted, nothing more happens
    OutageEnd(0).apply(sim)  # one of two ends: still down
    assert len(sim.log) == 3 and sim.fault_state.down == [True, False]
    OutageEnd(0).apply(sim)
    assert sim.log[3:] == [("open", 0)] and sim.fault_state.down == [False, False]


def test_link_changes_multiply_the_nominal_capacity_in_the_order_they_came() -> None:
    sim = Recorder()
    LinkChangeStart(0, 1, 0.5).apply(sim)  # 1e9 x 0.5
    LinkChangeStart(0, 1, 0.25).apply(sim)  # 1e9 x 0.5 x 0.25
    LinkChangeEnd(0, 1, 0.5).apply(sim)  # 1e9 x 0.25
    LinkChangeEnd(0, 1, 0.25).apply(sim)  # back to nominal
    assert [e[3] for e in sim.log] == [5e8, 1.25e8, 2.5e8, 1e9]
    assert {e[1:3] for e in sim.log} == {(0, 1)}


def test_a_price_change_is_in_force_between_its_events_and_no_decision_point() -> None:
    sim = Recorder()
    state = sim.fault_state
    start, end = PriceChangeStart(1, 0, 3.0), PriceChangeEnd(1, 0, 3.0)
    assert not start.decision_point and not end.decision_point
    PriceChangeStart(1, 1, 0.5).apply(sim)
    start.apply(sim)
    assert state.price_factors(1) == (3.0, 0.5) and state.price_factors(0) == ()  # model order
    end.apply(sim)
    assert state.price_factors(1) == (0.5,) and sim.log == []  # nothing else changes


def test_a_gpu_failure_ends_its_attempt_while_it_runs() -> None:
    sim = Recorder()
    assert GpuFailure(3, 7).live(sim) and not GpuFailure(3, 6).live(sim)
    assert GpuFailure.drawn and not OutageStart.drawn
    GpuFailure(3, 7).apply(sim)
    assert sim.log == [("end", 3, "failed")]


def test_a_fault_model_runs_as_start_and_end_events_in_its_order() -> None:
    model = FaultModel(
        outages=(Outage(1, 10.0, 20.0),),
        links=(LinkChange(0, 1, 0.5, 5.0, 15.0),),
        prices=(PriceChange(0, 2.0, 0.0, 30.0),),
    )
    assert model.events() == [
        (10.0, OutageStart(1)),
        (20.0, OutageEnd(1)),
        (5.0, LinkChangeStart(0, 1, 0.5)),
        (15.0, LinkChangeEnd(0, 1, 0.5)),
        (0.0, PriceChangeStart(0, 0, 2.0)),
        (30.0, PriceChangeEnd(0, 0, 2.0)),
    ]
    state = FaultState(model, NOMINAL, seed=0)
    assert [t for t, _ in state.scheduled] == [10.0, 20.0, 5.0, 15.0]  # the heap's
    assert [t for t, _ in state.calendar] == [0.0, 30.0]  # applied as the clock passes


def test_failure_draws_follow_the_seed_and_a_copy_continues_the_stream() -> None:
    a, b = FaultState(FaultModel(), NOMINAL, 5), FaultState(FaultModel(), NOMINAL, 5)
    a.reset()
    b.reset()
    first = a.draw_failure(1, 0, 4, 0.0, 1.0)
    assert first == b.draw_failure(1, 0, 4, 0.0, 1.0)
    assert first is not None and first[1] == GpuFailure(1, 0) and first[0] > 0.0
    copy = a.copy()
    assert a.draw_failure(1, 0, 4, 0.0, 1.0) == copy.draw_failure(1, 0, 4, 0.0, 1.0)


POWER = 0.5
M2 = {"name": "M2", "params": 3e12, "layers": 2, "hidden": 500_000_000, "batch": 4}


def _world(events: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> Any:
    return build_scenario(
        {
            "name": "fault-events",
            "ignore_memory": True,  # 3e12 parameters fit in no 48 GB GPU
            "constants": {
                "seq_len": 1,
                "micro_batch": 1,
                "peak_tflops": 1.0,
                "mfu": 1.0,
                "power_kw": POWER,
            },
            "regions": [
                {"name": n, "gpus": 2, "price_usd_per_kwh": p, "bandwidth_gbps": 8}
                for n, p in (("R0", 0.1), ("R1", 0.3))
            ],
            "links": {"rule": "mean"},
            "models": [M2],
            "datasets": [{"name": "D", "samples": 900}],
            "jobs": jobs,
            "events": events,
        }
    )


JOB = {"name": "j", "model": "M2", "dataset": "D"}


def test_an_outage_event_ends_the_attempt_and_blocks_the_regions_gpus() -> None:
    # t = 0: the job starts on the cheaper R0:2. t = 5,000 s: R0 goes down (until 10 h): the
    # attempt ends (outcome "outage"), the job waits again, and only R1's 2 GPUs are free.
    scenario = _world(
        [{"type": "outage", "region": "R0", "start_h": 5000 / 3600, "end_h": 10}], [JOB]
    )
    sim = Simulator(scenario, bace_pipe().placement)
    (job,) = (j.job_id for j in scenario.jobs)
    assert sim.next_decision() == (job,)
    assert sim.place(job) == Placement((0,), (2,))
    assert sim.next_decision() == (job,)  # back in the queue at the outage
    assert sim.time == pytest.approx(5000.0, rel=1e-12)
    assert sim.free_gpus == (0, 2) and sim.down_regions == (True, False)
    assert sim.running == () and sim.pending == (job,)
    assert sim.place(job) == Placement((1,), (2,))
    assert sim.next_decision() is None  # the outage's end is still an event: R0 comes back
    assert sim.time == 36000.0 and sim.free_gpus == (2, 2) and not any(sim.down_regions)
    (rec,) = sim.result().records
    assert [a.outcome for a in rec.attempts] == ["outage", "completed"]


def test_price_events_change_price_at_as_the_clock_passes_them() -> None:
    # R0's price doubles over [1 h, 3 h) and R1's triples from t = 0 to 1 h. Job 0 runs from
    # t = 0 to 2 h, job 1 arrives at 2 h and runs to 4 h: decisions at 0 and 2 h, the end at 4 h.
    scenario = _world(
        [
            {"type": "price", "region": "R0", "factor": 2.0, "start_h": 1.0, "end_h": 3.0},
            {"type": "price", "region": "R1", "factor": 3.0, "start_h": 0.0, "end_h": 1.0},
        ],
        [JOB, {**JOB, "name": "k", "submit_h": 2.0}],
    )
    sim = Simulator(scenario, bace_pipe().placement)
    seen = []
    while (cands := sim.next_decision()) is not None:
        seen.append((sim.time, sim.price_at(0), sim.price_at(1)))
        sim.place(cands[0])
    seen.append((sim.time, sim.price_at(0), sim.price_at(1)))
    assert seen == [(0.0, 0.1, 0.3 * 3.0), (7200.0, 0.1 * 2.0, 0.3), (14400.0, 0.1, 0.3)]
    assert sim.faults is None  # prices alone move no job: no attempt is tracked


def test_price_at_is_the_tariffs_price_at_every_decision() -> None:
    """Overlapping changes on an hourly tariff from a random start hour: the events' factors
    give the tariff's price to the last bit, at every decision."""
    spec = {
        **load_scenario_spec("online"),
        "events": [
            {"type": "price", "region": "US-East-2", "factor": 3.0, "start_h": 1.0, "end_h": 40.0},
            {"type": "price", "region": "US-East-2", "factor": 0.5, "start_h": 20.0, "end_h": 60},
            {"type": "price", "region": "EU-West", "factor": 0.0, "start_h": 5.0, "end_h": 6.0},
        ],
    }
    scenario = load_scenario(spec, seed=5, n_jobs=40, prices="hourly", start_hour="random")
    sim = Simulator(scenario, bace_pipe().placement)
    tariff, k = scenario.tariff, scenario.cluster.n_regions
    checked = 0
    while (cands := sim.next_decision()) is not None:
        now = sim.time
        assert [sim.price_at(r) for r in range(k)] == [tariff.price_at(r, now) for r in range(k)]
        checked += 1
        sim.place(cands[0])
    assert checked >= 40
