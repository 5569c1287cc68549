"""The preemption view's beneficiaries and minima, kept across versions by
:class:`~bacepipe_env.core.helped.HelpedMemo` (issue 39), are at every decision what a fresh
computation gives: the algorithm the simulator used before the memo, written out here and run
on a clone of the simulator (with no memo of its own), compared field for field and in order.

Drivers: a caller that places and preempts at random (checkpointed, instant and
lose-since-checkpoint preemptions, GPU failures), the built-in rules (whose views are checked
each time the rule is asked), a placement policy that declares itself impure (asked in the old
order, never reused across versions), and the Gymnasium environment's decisions to preempt."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.core import Simulator
from bacepipe_env.core.perf import replica_micro_batches
from bacepipe_env.core.preemption import Beneficiary, PreemptionView, make_preemption
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import load_scenario

PREEMPT_ID = "bacepipe_env/GeoPipe-Online-Preempt-v1"


def _least_remaining(sim: Any, j: int) -> float:
    """Before the memo: a pending job's lower bound, worked out afresh."""
    p, book = sim.profile(j), sim._book
    m1, k = replica_micro_batches(p.n_micro, sim.replica_range(j)[1]) - 1, p.k_star
    forward = p.compute_coeff + p.stage_overhead + m1 * p.t_comp(k)
    back = p.compute_coeff if p.backward_coeff is None else p.backward_coeff
    floor = forward + (back + p.stage_overhead + m1 * p.t_bwd(k))
    restart = sim.recovery.restart_s if book.has_run(j) else 0.0
    return restart + book.iters_left[j] * floor


def fresh(original: Simulator) -> tuple[dict[int, tuple[Beneficiary, ...]], tuple[float, float]]:
    """Every running job's beneficiaries and the queue's minima, by the algorithm the
    simulator used before the memo (every victim, every shape, every time), on a clone."""
    sim: Any = original.clone()
    now, rec, book = sim.time, sim.recovery, sim._book
    running = sim._running
    draining = {j for j, run in running.items() if run.preempted_at is not None}
    base = sim._state_without(draining, now)
    pending = tuple(sim.pending)
    groups: dict[tuple[object, ...], list[int]] = {}
    for j in pending:
        groups.setdefault(sim.placement_shape(j), []).append(j)
    out: dict[int, tuple[Beneficiary, ...]] = {}
    for victim, run in running.items():
        if not sim._running_row(victim, run).preemptible:
            out[victim] = ()
            continue
        state = sim._state_without(draining | {victim}, now)
        helped = []
        for jobs in groups.values():
            p = sim.placement_on(jobs[0], state)
            if p is None or sim.placement_on(jobs[0], base) is not None:
                continue
            t_iter = sim.iteration_time(jobs[0], p)
            for j in jobs:
                remaining = book.iters_left[j] * t_iter + (
                    rec.restart_s if j in book.attempts else 0.0
                )
                helped.append(Beneficiary(j, remaining, book.attained[j], p.n_gpus))
        helped.sort(key=lambda b: sim._queue.rank[b.job_id])
        out[victim] = tuple(helped)
    lower = min((_least_remaining(sim, j) for j in pending), default=math.inf)
    attained = min((book.attained[j] for j in pending), default=math.inf)
    return out, (lower, attained)


def check(sim: Simulator, view: PreemptionView | None = None) -> int:
    """Compare ``view`` (default: the simulator's now) with a fresh computation; returns how
    many beneficiaries were compared."""
    view = sim.preemption_view() if view is None else view
    want, minima = fresh(sim)
    assert [r.job_id for r in view.running] == list(want)
    for victim, expected in want.items():
        got = view.beneficiaries(victim)
        assert got == expected, (sim.time, victim)
        assert all(type(b) is Beneficiary for b in got)
    assert (view.pending_min_remaining, view.pending_min_attained) == minima
    return sum(len(b) for b in want.values())


@pytest.mark.parametrize(
    "knobs",
    [
        {"preempt_checkpoint_s": 60.0},
        {"preempt_checkpoint_s": 0.0, "restart_s": 0.0},
        {"preempt_checkpoint_s": "lose-since-checkpoint", "checkpoint_interval_s": 600.0},
        {"preempt_checkpoint_s": 60.0, "gpu_failure_rate": 2e-4},  # faults: no nominal memo
    ],
    ids=["checkpoint", "instant", "lose", "failures"],
)
def test_a_random_caller_sees_fresh_answers_at_every_decision(knobs: dict[str, Any]) -> None:
    scn = load_scenario("online", seed=3, n_jobs=100, load=3.0, **knobs)
    sim = Simulator(scn, make_policy("fcfs").placement, preemption_decisions=True)
    rng = np.random.default_rng(3)
    views = compared = 0
    while (cands := sim.next_decision()) is not None:
        if sim.running:
            compared += check(sim)
            views += 1
        if cands:
            if rng.random() < 0.2 and sim.has_future_events:
                sim.defer()  # pending jobs that could start stay pending: not beneficiaries
            else:
                sim.place(cands[int(rng.integers(len(cands)))])
        elif rng.random() < 0.7:
            options = sim.preemption_view().options()
            sim.preempt(options[int(rng.integers(len(options)))])
        else:
            sim.defer()
    assert sim.done and views > 100 and compared > 500, (views, compared)


class _Checking:
    """A preemption rule that checks each view it is asked with, then decides by ``rule``."""

    def __init__(self, rule: str) -> None:
        self.rule = make_preemption(rule)
        self.name = self.rule.name
        self.sim: Simulator | None = None
        self.views = 0

    def choose(self, view: PreemptionView) -> int | None:
        assert self.sim is not None
        check(self.sim, view)
        self.views += 1
        choice: int | None = self.rule.choose(view)
        return choice


@pytest.mark.parametrize("rule", ["srtf:factor=1.2,min_run_h=0.1", "las:threshold_gpu_h=20"])
def test_the_rules_views_are_fresh_answers(rule: str) -> None:
    scn = load_scenario("online", seed=5, n_jobs=100, load=5.0)
    checking = _Checking(rule)
    sim = Simulator(scn, make_policy("bace-pipe").placement, preemption=checking)
    checking.sim = sim
    res = sim.run(make_policy("bace-pipe").ordering)
    assert checking.views > 20 and res.n_preemptions > 0, (checking.views, res.n_preemptions)


class _Impure:
    """The Pathfinder, declared impure: its answers are never reused across versions, and it
    is asked in the order the simulator always asked."""

    pure = False

    def __init__(self) -> None:
        self.inner = make_policy("bace-pipe").placement
        self.name = "impure-pathfinder"
        self.calls = 0

    def place(self, view: Any, job_id: int) -> Any:
        self.calls += 1
        return self.inner.place(view, job_id)


def test_an_impure_placement_policy_gets_fresh_answers() -> None:
    scn = load_scenario("online", seed=7, n_jobs=80, load=5.0, preempt_checkpoint_s=60.0)
    sim = Simulator(scn, _Impure(), preemption_decisions=True)
    rng = np.random.default_rng(7)
    views = 0
    while (cands := sim.next_decision()) is not None:
        if sim.running:
            check(sim)
            views += 1
        if cands:
            sim.place(cands[int(rng.integers(len(cands)))])
        else:
            options = sim.preemption_view().options()
            sim.preempt(options[int(rng.integers(len(options)))])
    assert views > 20


def test_the_environments_decisions_to_preempt_are_fresh_answers() -> None:
    env = gym.make(PREEMPT_ID, n_jobs=150).unwrapped
    rng = np.random.default_rng(11)
    _, info = env.reset(seed=11)
    decisions = 0
    while True:
        window = info["preemption"]
        if window is not None and window.view is not None:  # a decision to preempt
            sim = env.sim
            assert window.view.materialized
            check(sim, window.view)
            mask = info["action_mask"]
            for i, job in enumerate(window.job_ids):
                assert bool(mask[window.first_action + i]) == bool(fresh(sim)[0][job])
            decisions += 1
        legal = np.flatnonzero(info["action_mask"])
        _, _, terminated, truncated, info = env.step(int(legal[int(rng.integers(len(legal)))]))
        if terminated or truncated:
            break
    assert decisions > 50, decisions


def test_a_clone_and_a_reset_start_their_own_memo() -> None:
    scn = load_scenario("online", seed=3, n_jobs=30, load=3.0)
    sim = Simulator(scn, make_policy("fcfs").placement, preemption_decisions=True)
    while (cands := sim.next_decision()) is not None and (cands or not sim.running):
        sim.place(cands[0])
    assert cands == () and sim.preemption_view().any_option()
    memo = sim._caches.helped
    assert memo is not None
    twin = sim.clone()
    assert twin._caches.helped is None  # the copy makes its own
    assert twin.preemption_view().materialize() == sim.preemption_view().materialize()
    assert sim._caches.helped is memo
    sim.reset()
    assert sim._caches.helped is None
