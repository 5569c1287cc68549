"""The compiled Pathfinder (``bacepipe_env.scheduling.compiled``) against the Python reference
(``pathfinder_unchecked``): the same path and GPUs on random instances, and the same records on
whole simulations of large clusters.

``pathfinder_arrays`` run as plain Python checks the transcription wherever these tests run;
the numba kernel itself needs the ``fast`` extra (the Makefile's venvs install it, so CI runs
those tests too).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bacepipe_env import synthetic_scenario
from bacepipe_env.core.faults import FaultModel, LinkChange, Outage
from bacepipe_env.core.simulator import Simulator
from bacepipe_env.errors import ValidationError
from bacepipe_env.policies.bace_pipe import PathfinderPlacement, PriorityOrdering
from bacepipe_env.policies.base import Policy
from bacepipe_env.scheduling import compiled
from bacepipe_env.scheduling.pathfinder import pathfinder_unchecked

numba_only = pytest.mark.skipif(not compiled.available(), reason="needs numba (the fast extra)")


@st.composite
def instances(draw: st.DrawFn) -> tuple[object, ...]:
    """A cluster state and a job: few distinct prices and bandwidths, so that ties (equal
    prices, equal widest links, equal averages) are common; zero links and busy regions too."""
    k = draw(st.integers(1, 24))
    free = draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 5, 8, 16]), min_size=k, max_size=k))
    price = draw(st.lists(st.sampled_from([0.05, 0.1, 0.1, 0.12, 0.3]), min_size=k, max_size=k))
    levels = st.sampled_from([0.0, 1e9, 2e9, 5e9, 1e10, 1e10, 4e10])
    bw = draw(st.lists(st.lists(levels, min_size=k, max_size=k), min_size=k, max_size=k))
    k_star = draw(st.integers(1, 80))
    a = draw(st.sampled_from([1e6, 3e7, 1e8, 4e8]))
    coeff = draw(st.sampled_from([0.05, 0.4, 1.3, 7.0]))
    overhead = draw(st.sampled_from([0.0, 1e-3, 0.02]))
    partial_take = draw(st.booleans())
    return free, price, bw, k_star, a, coeff, overhead, partial_take


def _reference(case: tuple[object, ...]) -> tuple[list[int], list[int]]:
    free, price, bw, k_star, a, coeff, overhead, partial_take = case
    path, alloc = pathfinder_unchecked(
        free, price, bw, k_star, a, lambda n: coeff / n + overhead, partial_take
    )
    return path, [alloc[r] for r in path]


def _arrays(case: tuple[object, ...]) -> tuple[object, ...]:
    free, price, bw, *rest = case
    return (
        np.array(free, dtype=np.int64),
        np.array(price, dtype=np.float64),
        np.array(bw, dtype=np.float64),
        *rest,
    )


@settings(max_examples=300, deadline=None)
@given(case=instances())
def test_array_transcription_matches_the_reference(case):
    path, gpus = compiled.pathfinder_arrays(*_arrays(case))
    assert (path.tolist(), gpus.tolist()) == _reference(case)


@numba_only
@settings(max_examples=500, deadline=None)
@given(case=instances())
def test_kernel_matches_the_reference(case):
    kernel = compiled.kernel()
    assert kernel is not None
    path, gpus = kernel(*_arrays(case))
    assert (path.tolist(), gpus.tolist()) == _reference(case)


def _policy(compiled_flag: bool | None, partial_take: bool = False) -> Policy:
    return Policy(
        "bace-pipe", PriorityOrdering(), PathfinderPlacement(partial_take, compiled=compiled_flag)
    )


@numba_only
@pytest.mark.parametrize(
    ("n_regions", "kwargs", "partial_take"),
    [
        (48, {"arrival_rate_per_h": 6.0}, False),  # the queue grows: phase 2 on a full cluster
        (32, {}, True),  # every job at t = 0, partial takes
        (40, {"arrival_rate_per_h": 2.0}, False),  # with faults, below
    ],
)
def test_whole_runs_keep_their_records(n_regions, kwargs, partial_take):
    scenario = synthetic_scenario(n_regions, 300, seed=3, **kwargs)
    if n_regions == 40:  # GPU failures, an outage and a degraded link: restarts, rebookings
        faults = FaultModel(
            outages=(Outage(3, 3600.0, 30_000.0),),
            links=(LinkChange(0, 1, 0.25, 1800.0, 90_000.0), LinkChange(5, 2, 0.5, 0.0, 5e5)),
            gpu_failure_rate=1e-3,
        )
        scenario = dataclasses.replace(scenario, faults=faults)
    reference = _policy(False, partial_take).simulate(scenario)
    fast = _policy(True, partial_take).simulate(scenario)
    assert fast == reference  # every field, records included, bit for bit
    assert fast.records == reference.records
    if n_regions == 40:
        assert reference.n_restarts > 0  # the faults did strike


def test_placement_arrays_mirror_the_simulator_state():
    scenario = synthetic_scenario(20, 60, seed=5, arrival_rate_per_h=8.0)
    sim = Simulator(scenario, PathfinderPlacement(compiled=False))
    ordering = PriorityOrdering()
    sim.placement_arrays()  # from here on the residual array is kept up to date in place
    checked = 0
    while (candidates := sim.next_decision()) is not None:
        free, price, residual = sim.placement_arrays()
        assert free.tolist() == list(sim.free_gpus)
        assert price.tolist() == list(scenario.cluster.prices)
        assert residual.tolist() == [list(row) for row in sim.residual_rows]
        sim.place(ordering.choose(sim, candidates))
        checked += 1
    assert checked >= 60


def test_compiled_must_be_none_or_a_bool():
    with pytest.raises(ValidationError, match="must be None, True or False"):
        PathfinderPlacement(compiled="yes")  # type: ignore[arg-type]


def test_compiled_true_without_numba_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(compiled, "available", lambda: False)
    with pytest.raises(ValidationError, match=r"needs numba: pip install 'bacepipe-env\[fast\]'"):
        PathfinderPlacement(compiled=True)


def test_the_automatic_choice(monkeypatch):
    big = compiled.COMPILED_WORK  # jobs x regions^2 that pays for loading numba
    monkeypatch.setattr(compiled, "available", lambda: True)
    monkeypatch.setattr(compiled, "loaded", lambda: False)
    enough = math.ceil(big / 128**2)  # about 12,000 jobs on 128 regions
    assert compiled.worth_it(128, enough)
    assert not compiled.worth_it(128, enough - 1)
    assert not compiled.worth_it(compiled.COMPILED_FROM - 1, 10**9)  # too few regions, ever
    monkeypatch.setattr(compiled, "loaded", lambda: True)  # paid already: any run from 16 on
    assert compiled.worth_it(compiled.COMPILED_FROM, 1)
    monkeypatch.setenv("BACEPIPE_COMPILED", "0")  # the switch turns it off
    assert not compiled.enabled()
    assert not compiled.worth_it(128, 10**9)
    monkeypatch.setattr(compiled, "available", lambda: False)  # so does a missing numba
    monkeypatch.delenv("BACEPIPE_COMPILED")
    assert not compiled.worth_it(128, 10**9)
