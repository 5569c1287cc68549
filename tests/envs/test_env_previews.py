"""Placement previews: their iteration time is Eq. (1) on the placement's own hops, they agree
with what the simulator would start, and their memo is a bounded first-in-first-out cache that
never changes an answer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bacepipe_env.core import Simulator
from bacepipe_env.core.perf import iteration_time, placement_comm_times, preview_iteration_time
from bacepipe_env.envs import PlacementPreviewer
from bacepipe_env.envs.config import make_placement
from bacepipe_env.errors import ScenarioError, SimulationError
from bacepipe_env.scenarios import load_scenario, synthetic_scenario

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(data=st.data())
def test_preview_iteration_time_is_eq1_on_the_placements_own_hops(data, placement_cases):
    profile, cluster, path, gpus = data.draw(placement_cases)
    n = sum(gpus)
    hops = placement_comm_times(profile, cluster, path, gpus)
    assert len(hops) == n - 1
    exact = iteration_time(profile.t_comp(n), hops, n, profile.n_micro)  # Eq. (1)
    assert preview_iteration_time(profile, cluster, path, gpus) == pytest.approx(exact, rel=1e-12)


def _play(scenario, placement: str, previewer: PlacementPreviewer, rng) -> list[tuple]:
    """Step a simulator with random legal choices; at each decision compare the previews with
    the simulator's own offer and execution time. Returns what the previewer said."""
    policy = make_placement(placement)
    sim = Simulator(scenario, policy)
    seen = []
    while (candidates := sim.next_decision()) is not None:
        previews = previewer(sim, candidates)
        for job, pv in zip(candidates, previews):
            offer = sim.offer(job)  # what place(job) would start now
            assert (pv is None) == (offer is None), (job, pv, offer)
            if pv is not None:
                assert pv.placement == offer
                prof = sim.profile(job)
                assert pv.execution == pytest.approx(sim.execution_time(job, offer), rel=1e-12)
                price = sum(g * sim.cluster.prices[r] for r, g in zip(offer.path, offer.gpus))
                assert pv.avg_price == pytest.approx(price / offer.n_gpus, rel=1e-12)
                assert pv.execution == pytest.approx(
                    prof.iterations
                    * preview_iteration_time(prof, sim.cluster, offer.path, offer.gpus),
                    rel=1e-15,
                )
        seen.append(tuple(previews))
        legal = [i for i, pv in enumerate(previews) if pv is not None]
        if not legal:
            sim.decline(candidates)
            continue
        i = legal[int(rng.integers(len(legal)))]
        assert sim.place(candidates[i], previews[i].placement) == previews[i].placement
    return seen


@SETTINGS
@given(
    data=st.data(),
    placement=st.sampled_from(["pathfinder", "pathfinder+partial", "cr-ldf", "lcf"]),
    memo_size=st.sampled_from([0, 1, 3, 16384]),
)
def test_previews_agree_with_the_simulator_on_random_scenarios(
    data, synthetic_args, placement, memo_size
):
    """The preview of a job is the placement the simulator would start now (``offer``), its
    execution time is Eq. (2) on it, and a memo of any size gives the same answers."""
    try:
        scenario = synthetic_scenario(**data.draw(synthetic_args))
    except ScenarioError:  # a job that can never fit in GPU memory: not a valid example
        event("scenario rejected")
        return
    seed = data.draw(st.integers(0, 100))
    cached = PlacementPreviewer(make_placement(placement), memo_size=memo_size)
    fresh = PlacementPreviewer(make_placement(placement), memo_size=0)
    try:
        a = _play(scenario, placement, cached, np.random.default_rng(seed))
        a2 = _play(scenario, placement, cached, np.random.default_rng(seed))  # memo warm
        b = _play(scenario, placement, fresh, np.random.default_rng(seed))
    except SimulationError as err:  # a single-region rule may leave a job that never starts
        assert "never start" in str(err)
        event("a job can never start")
        return
    assert a == a2 == b
    event("played" if sum(map(len, a)) >= 10 else "played, fewer than 10 previews")
    assert len(cached) <= memo_size and len(fresh) == 0


class _Counting:
    """A pure placement policy that counts its calls."""

    pure = True

    def __init__(self) -> None:
        self.inner = make_placement("pathfinder")
        self.name = "counting"
        self.calls = 0

    def place(self, view, job_id):
        self.calls += 1
        return self.inner.place(view, job_id)


def test_memo_evicts_the_oldest_answer_first():
    """States A, B, C of one scenario; a memo of two answers. A, B miss; A hits; C misses and
    evicts A, the first in (a least-recently-used cache would evict B); then B hits, A misses."""
    scenario = load_scenario("paper")
    policy = _Counting()
    previewer = PlacementPreviewer(policy, memo_size=2)
    sims = [Simulator(scenario, policy) for _ in range(3)]
    for n, sim in enumerate(sims):  # state A: idle; B: one job placed; C: two
        for _ in range(n):
            sim.place(sim.next_decision()[0])
        sim.next_decision()
    last = scenario.jobs[-1].job_id  # pending in every state
    a, b, c = sims
    assert len({(s.free_gpus, s.residual_rows) for s in sims}) == 3

    def calls(sim) -> int:
        before = policy.calls
        previewer(sim, [last])
        return policy.calls - before

    assert [calls(a), calls(b), calls(a), calls(c), calls(b), calls(a)] == [1, 1, 0, 1, 0, 1]
    assert len(previewer) == 2
    previewer.clear()
    assert len(previewer) == 0 and calls(b) == 1


def test_an_impure_policy_is_asked_again_at_every_decision():
    policy = _Counting()
    policy.pure = False
    previewer = PlacementPreviewer(policy)
    sim = Simulator(load_scenario("paper"), policy)
    window = sim.next_decision()
    previewer(sim, window)
    first = policy.calls
    assert 1 <= first <= len(window)  # jobs of one shape share an answer within a decision
    previewer(sim, window)
    assert policy.calls == 2 * first


def test_a_new_cluster_clears_the_memo_and_the_same_one_keeps_it():
    """A random env draws a cluster per episode: the old cluster's answers are dropped (they
    could never hit again). The seeds an env draws from one scenario file share its cluster
    object, so theirs stay."""
    policy = _Counting()
    previewer = PlacementPreviewer(policy)
    paper0 = load_scenario("paper", seed=0)
    sim = Simulator(paper0, policy)
    previewer(sim, sim.next_decision())
    kept = len(previewer)
    assert kept >= 1
    sim = Simulator(paper0, policy)  # the same cluster object: the memo survives, and hits
    before = policy.calls
    previewer(sim, sim.next_decision())
    assert policy.calls == before and len(previewer) == kept
    other = synthetic_scenario(4, 6, seed=3)
    sim = Simulator(other, policy)
    previewer(sim, sim.next_decision())
    assert 1 <= len(previewer) <= len(other.jobs)  # only the new cluster's answers
