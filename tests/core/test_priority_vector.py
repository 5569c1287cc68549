"""The vectorised Eq. (12) (``PriorityOrdering.choose`` on ``Simulator.priority_columns``) and
the long queue's one-candidate-per-shape offer make the same choices as the snapshot path over
every candidate, so every record is bit-identical (issue 14)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bacepipe_env import synthetic_scenario
from bacepipe_env.core.faults import FaultModel, Outage
from bacepipe_env.core.scenario import Scenario
from bacepipe_env.errors import ScenarioError
from bacepipe_env.policies import bace_pipe
from bacepipe_env.policies.bace_pipe import PriorityOrdering
from bacepipe_env.scenarios import load_scenario


class _EveryCandidate(PriorityOrdering):
    """Eq. (12) asked on every candidate: no one-per-shape shortcut (``by_shape``)."""

    by_shape = False  # type: ignore[assignment]


def _run(scenario: Scenario, vector_from: float, by_shape: bool = True) -> tuple[object, ...]:
    policy = bace_pipe()
    if not by_shape:
        policy = dataclasses.replace(policy, ordering=_EveryCandidate())
    assert isinstance(policy.ordering, PriorityOrdering)
    policy.ordering.vector_from = vector_from  # type: ignore[assignment]
    result = policy.simulate(scenario)
    return (result.n_decisions, *(dataclasses.astuple(r) for r in result.records))


def _same(scenario: Scenario) -> None:
    always, never = _run(scenario, 0), _run(scenario, float("inf"))
    assert always == never  # every field of every record, floats compared exactly
    # the earliest candidate of each shape only (a long queue's default) and every candidate
    assert always == _run(scenario, 0, by_shape=False) == _run(scenario, float("inf"), False)


#: A fixed set: the paper's world, a long batch queue, a heavy online queue, hourly prices,
#: faults (restarted jobs rejoin the queue) and 64-region clusters, one with a long queue and
#: faults.
FIXED = {
    "paper seed 3": lambda: load_scenario("paper", seed=3),
    "paper, memory ignored": lambda: load_scenario("paper", seed=1, ignore_memory=True),
    "online seed 2, 120 jobs": lambda: load_scenario("online", seed=2, n_jobs=120),
    "online, GPU failures": lambda: load_scenario(
        "online", seed=0, n_jobs=80, gpu_failure_rate=2e-3
    ),
    "paper-aws, outage": lambda: load_scenario(
        "paper-aws", seed=0, n_jobs=40, outages=[("EU-West", 2.0, 30.0)]
    ),
    "32 regions, 600 jobs at t = 0": lambda: synthetic_scenario(32, 600, seed=0),
    "64 regions, 800 jobs at 4/h": lambda: synthetic_scenario(
        64, 800, seed=1, arrival_rate_per_h=4.0
    ),
    # a long queue with restarts: interrupted jobs rejoin their shape's queue mid-way
    "64 regions at 4/h, GPU failures and an outage": lambda: dataclasses.replace(
        synthetic_scenario(64, 600, seed=2, arrival_rate_per_h=4.0),
        faults=FaultModel(outages=(Outage(5, 7200.0, 90_000.0),), gpu_failure_rate=5e-4),
    ),
}


@pytest.mark.parametrize("name", sorted(FIXED))
def test_vectorised_priority_gives_identical_records(name: str) -> None:
    _same(FIXED[name]())


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    n_regions=st.integers(2, 8),
    n_jobs=st.integers(1, 120),
    seed=st.integers(0, 2**16),
    rate=st.one_of(st.none(), st.floats(0.5, 20.0)),
)
def test_vectorised_priority_on_random_synthetic_scenarios(
    n_regions: int, n_jobs: int, seed: int, rate: float | None
) -> None:
    try:
        scenario = synthetic_scenario(n_regions, n_jobs, seed=seed, arrival_rate_per_h=rate)
    except ScenarioError:  # a small cluster that cannot hold a job in GPU memory
        assume(False)
    _same(scenario)


def test_priority_columns_follow_the_pending_queue() -> None:
    from bacepipe_env.core.simulator import Simulator
    from bacepipe_env.policies.bace_pipe import PathfinderPlacement

    scenario = load_scenario("paper", seed=0)
    sim = Simulator(scenario, PathfinderPlacement())
    candidates = sim.next_decision()
    assert candidates is not None
    pending, e1, bk = sim.priority_columns()
    assert pending.tolist() == list(sim.pending)
    for j in sim.pending:
        assert e1[j] == sim.profile(j).single_gpu_exec
        assert bk[j] == sim.profile(j).min_bandwidth_kstar
    sim.place(candidates[0])  # the queue changes: the array follows
    assert sim.priority_columns()[0].tolist() == list(sim.pending)
    with pytest.raises(ValueError):
        e1[1] = 0.0  # read-only


def _long_queue() -> Scenario:
    return synthetic_scenario(64, 400, seed=1, arrival_rate_per_h=4.0)


def test_choose_array_agrees_with_choose_and_the_snapshot_at_every_decision() -> None:
    """Along a run with a queue of hundreds: the array entry point ``run`` uses, the tuple
    entry point and the snapshot-based ``Ordering.choose`` (Python maxima) choose alike."""
    import numpy as np

    from bacepipe_env.core.simulator import Simulator
    from bacepipe_env.policies.bace_pipe import PathfinderPlacement
    from bacepipe_env.policies.base import Ordering

    sim = Simulator(_long_queue(), PathfinderPlacement())
    ordering = PriorityOrdering()
    longest = 0
    while (candidates := sim.next_decision()) is not None:
        longest = max(longest, len(sim.pending))
        c = np.array(candidates, dtype=np.intp)
        chosen = ordering.choose_array(sim, c)
        assert (
            chosen == ordering.choose(sim, candidates) == Ordering.choose(ordering, sim, candidates)
        )
        sim.place(chosen)
    assert longest >= 100  # the numpy paths were taken


def test_run_asks_an_overriding_subclass_through_its_choose() -> None:
    """A subclass that overrides ``choose`` inherits ``choose_array``, which defers to it: a run
    equals the run of a plain ordering object with the same ``choose`` (and no array path)."""
    from bacepipe_env.policies.bace_pipe import PathfinderPlacement
    from bacepipe_env.policies.base import FCFSOrdering, Policy

    class Latest(PriorityOrdering):
        name = "latest"

        def choose(self, view, candidates):  # type: ignore[no-untyped-def]
            return candidates[-1]

    class LatestFcfs(FCFSOrdering):
        name = "latest"

        def choose(self, view, candidates):  # type: ignore[no-untyped-def]
            return candidates[-1]

    class Plain:
        name = "latest"

        def choose(self, view, candidates):  # type: ignore[no-untyped-def]
            return candidates[-1]

    scenario = _long_queue()

    def records(ordering: object) -> tuple[object, ...]:
        result = Policy("latest", ordering, PathfinderPlacement()).simulate(scenario)  # type: ignore[arg-type]
        return tuple(dataclasses.astuple(r) for r in result.records)

    plain = records(Plain())
    assert records(Latest()) == plain
    assert records(LatestFcfs()) == plain
    assert records(FCFSOrdering()) != plain  # the override mattered


def test_a_long_queue_is_offered_one_candidate_per_shape() -> None:
    """On a queue of hundreds, ``run`` offers Eq. (12) the earliest candidate of each job shape
    (E(1), b(K*), memory floor): a few dozen instead of hundreds, the same choice."""
    from bacepipe_env.core.simulator import Simulator
    from bacepipe_env.policies.bace_pipe import PathfinderPlacement

    scenario = _long_queue()
    sim = Simulator(scenario, PathfinderPlacement())
    longest = fewest = 0
    ordering = PriorityOrdering()
    while (firsts := sim._next_candidates(by_shape=True)) is not None:
        every = sim.next_decision()
        assert every is not None
        if len(sim.pending) >= 48:
            assert isinstance(firsts, tuple)
            assert set(firsts) <= set(every) and list(firsts) == sorted(firsts, key=every.index)
            shapes = {sim._queue.shape_of[j] for j in every}
            assert len(firsts) == len(shapes)  # one per shape among the candidates
            assert ordering.choose(sim, firsts) == ordering.choose(sim, every)
            longest, fewest = max(longest, len(every)), max(fewest, len(firsts))
        sim.place(ordering.choose(sim, every))
    assert longest >= 100 and fewest < longest / 4
