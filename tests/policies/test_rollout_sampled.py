"""The rollout planner's deadline objectives and its ``sampled`` lookahead (issue 45 part 4,
policies/rollout.py, core/sampling.py): sampled forks never see the real future, keep the
known jobs and draw the rest from the world's own arrival process, deterministically; bad
settings are one line; ``misses`` picks what ``jct`` does not on a hand-worked world.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bacepipe_env.core import (
    Cluster,
    Job,
    ModelSpec,
    Region,
    Scenario,
    Simulator,
    TrainingConstants,
)
from bacepipe_env.core.caches import Caches
from bacepipe_env.core.preemption import make_preemption
from bacepipe_env.core.sampling import PER_JOB_MEMOS, sampled_clone
from bacepipe_env.core.world import World
from bacepipe_env.errors import ValidationError
from bacepipe_env.policies.registry import make_planner, make_policy
from bacepipe_env.policies.rollout import apply, describe, parse_rollout
from bacepipe_env.scenarios import load_scenario, synthetic_scenario
from bacepipe_env.scenarios.generators import RandomScenarioGenerator

SLACK = "uniform:1.2,3.0"


def _decisions(name: str, scenario: Scenario, seed: int = 5) -> list[tuple[float, tuple]]:
    """(time, action) of every decision the planner ``name`` takes on ``scenario``, played as
    RolloutPolicy.simulate plays it (a base without preemption)."""
    policy = make_policy(name, seed=seed)
    planner = make_planner(name, seed)
    rule = make_preemption("none")
    sim = Simulator(scenario, policy.placement, admission=policy.admission)
    out = []
    while (candidates := sim.next_decision()) is not None:
        actions = planner.placement_actions(sim, candidates, sim.has_future_events)
        action = planner.best(sim, actions, rule)
        out.append((sim.time, action))
        apply(sim, action)
    return out


def _other_future(scenario: Scenario, after: float, seed: int) -> Scenario:
    """``scenario`` with every job submitted after ``after`` replaced by another seed's job of
    the same id (another model and dataset, slack 2), the gaps after ``after`` squeezed 20
    times (a burst right after it): the same world up to ``after``, another future."""
    other = {j.job_id: j for j in load_scenario("online", seed=seed, n_jobs=30).jobs}
    jobs = []
    for job in scenario.jobs:
        if job.submit_time > after:
            new = dataclasses.replace(
                other[job.job_id],
                submit_time=after + (job.submit_time - after) * 0.05,
                slack=2.0,
            )
            jobs.append(new)
        else:
            jobs.append(job)
    changed = dataclasses.replace(scenario, jobs=tuple(jobs))
    assert changed.future is scenario.future  # the world's own arrival process is kept
    return changed


# ------------------------------------------------------------------ the test
@pytest.mark.parametrize("announce_h", [0.0, 3.0])
def test_sampled_forks_never_see_the_real_future(announce_h):
    """Two worlds identical up to T, with other jobs after T: a sampled planner takes the
    same action at every decision before T (before T minus the calendar's reach, whose jobs
    a scheduler is shown), while a clairvoyant one, which does see the future, does not."""
    real = load_scenario("online", seed=1, n_jobs=30, deadline_slack=SLACK, announce_h=announce_h)
    order = sorted(real.jobs, key=lambda j: j.submit_time)
    t_cut = order[14].submit_time  # 15 jobs known by T, 15 to come
    changed = _other_future(real, t_cut, seed=9)
    assert [j.model.name for j in changed.jobs] != [j.model.name for j in real.jobs]
    seen = t_cut - announce_h * 3600.0  # the jobs submitted by T are announced from here
    name = "rollout:sjf+finish-aware,objective=misses,lookahead=sampled:2"
    a, b = _decisions(name, real), _decisions(name, changed)
    before = [d for d in a if d[0] < seen]
    assert len(before) >= 10
    assert [d for d in b if d[0] < seen] == before
    # the test can tell: the clairvoyant planner's actions before T depend on what follows
    bound = "rollout:sjf+finish-aware,objective=misses,lookahead=clairvoyant"
    a, b = _decisions(bound, real), _decisions(bound, changed)
    assert [d for d in a if d[0] < seen] != [d for d in b if d[0] < seen]


# ------------------------------------------------------------------ what a sampled fork holds
def _random_v2_episode(seed: int) -> Scenario:
    gen = RandomScenarioGenerator(p_batch=0.0, n_jobs=(12, 16))
    return gen(np.random.default_rng(seed))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    source=st.sampled_from(["online", "online-announced", "random-v2"]),
    seed=st.integers(0, 2**10),
    steps=st.integers(1, 12),
    draw=st.integers(0, 2**16),
)
def test_a_sampled_fork_keeps_the_known_jobs_and_draws_the_rest(source, seed, steps, draw):
    if source == "random-v2":
        scn = _random_v2_episode(seed)
    else:
        ahead = 2.0 if source == "online-announced" else 0.0
        scn = load_scenario("online", seed=seed, n_jobs=20, deadline_slack=SLACK, announce_h=ahead)
    sjf = make_policy("sjf")
    sim = Simulator(scn, sjf.placement)
    for _ in range(steps):  # into the episode, a few decisions
        candidates = sim.next_decision()
        if candidates is None:
            return
        sim.place(sjf.ordering.choose(sim, candidates))
    now, reach = sim.time, sim.time + scn.announce_h * 3600.0
    known = {j.job_id for j in scn.jobs if j.submit_time <= reach}
    fork = sampled_clone(sim, np.random.default_rng(draw))
    jobs = {j.job_id: j for j in fork.scenario.jobs}
    assert sorted(jobs) == sorted(j.job_id for j in scn.jobs)  # the episode's count and ids
    real = {j.job_id: j for j in scn.jobs}
    for j in known:
        assert jobs[j] is real[j]  # untouched: the very job
    future = [jobs[j] for j in jobs if j not in known]
    assert len(future) == len(scn.jobs) - len(known)
    assert all(j.submit_time > reach >= now for j in future)
    times = [j.submit_time for j in sorted(future, key=lambda j: j.job_id)]
    assert times == sorted(times)  # ids follow submission order
    if scn.world.deadline_slack != "none":
        assert all(1.2 <= j.slack <= 3.0 for j in future)
    # the fork finishes every job, its drawn ones too; the real simulator is untouched
    fork.play(sjf.ordering)
    assert fork.done and len(fork.result().records) == len(scn.jobs)
    sim.play(sjf.ordering)
    alone = Simulator(scn, sjf.placement).run(sjf.ordering)
    assert sim.result().records == alone.records  # no memo of the fork reached it


def test_every_memo_of_the_caches_is_sorted_for_a_sampled_fork():
    """A memo added to Caches must be declared shared (pure: by state and shape), per state,
    or per job (emptied in a sampled fork, PER_JOB_MEMOS): this list says which."""
    shared = {"placement_answers", "price_array", "rows_type", "memo_size", "memo_on"}
    per_state = {"view", "helped"}
    assert set(Caches.__slots__) == shared | per_state | set(PER_JOB_MEMOS)


def test_without_an_arrival_process_sampled_knows_what_submitted_knows():
    """A fixed job list has no process to draw from: a sampled fork knows the submitted
    jobs, and the planner plays as with lookahead=submitted, bit for bit."""
    scn = load_scenario("paper", seed=2)
    staggered = tuple(dataclasses.replace(j, submit_time=600.0 * i) for i, j in enumerate(scn.jobs))
    scn = dataclasses.replace(scn, jobs=staggered)
    assert scn.future is None
    sub = make_policy("rollout:sjf,lookahead=submitted").simulate(scn)
    smp = make_policy("rollout:sjf,lookahead=sampled").simulate(scn)
    assert smp.records == sub.records


# ------------------------------------------------------------------ determinism, settings
def test_seeds_give_bit_identical_runs():
    scn = load_scenario("online", seed=3, n_jobs=24, deadline_slack=SLACK)
    name = "rollout:sjf+finish-aware,k=2,lookahead=sampled:3,objective=tardiness"
    first = make_policy(name, seed=7).simulate(scn)
    again = make_policy(name, seed=7).simulate(scn)
    assert first.records == again.records and first.n_decisions == again.n_decisions


def test_sampled_names_parse_and_describe():
    s = parse_rollout("rollout:sjf,lookahead=sampled:1,objective=misses")
    assert (s.lookahead, s.draws, s.objective) == ("sampled", 1, "misses")
    assert s.name == "rollout:sjf,lookahead=sampled,objective=misses"
    four = parse_rollout("rollout:sjf,lookahead=sampled:4")
    assert (four.name, four.draws, four.clairvoyant) == (
        "rollout:sjf,lookahead=sampled:4",
        4,
        False,
    )
    assert parse_rollout("rollout:sjf,lookahead=announced:2").draws == 0
    assert "mean of 4 draws" in describe(four)


@pytest.mark.parametrize(
    "lookahead", ["sampled:0", "sampled:x", "sampled:65", "sampled:", "sampled:1.5", "sampler"]
)
def test_bad_sampled_settings_are_one_line_errors(lookahead):
    with pytest.raises(ValidationError) as err:
        make_policy(f"rollout:sjf,lookahead={lookahead}")
    assert err.value.field == "lookahead"
    assert "sampled:N" in str(err.value) and "\n" not in str(err.value)


def test_without_deadlines_the_deadline_objectives_play_as_jct():
    """No deadline: every fork has 0 misses and 0 tardiness, so the order is jct's."""
    scn = synthetic_scenario(3, 10, seed=4, arrival_rate_per_h=2.0)
    assert not scn.deadlines
    want = make_policy("rollout:sjf,k=3").simulate(scn)
    for objective in ("misses", "tardiness"):
        got = make_policy(f"rollout:sjf,k=3,objective={objective}").simulate(scn)
        assert got.records == want.records


# ------------------------------------------------------------------ misses against jct
# tests/policies/test_deadline_policies.py's world: one region of 4 GPUs, model M4 (K* = 4),
# a job of I iterations takes all four GPUs for E* = 48 I s, and E(1) = 96 I s, so one job
# runs at a time and a schedule is an order.
#   A: 10 iterations, E* = 480, due 500.   B: 2 iterations, E* = 96, due 600. Both at t = 0.
#   B first: B 0-96, A 96-576: job-seconds 96 + 576 = 672; A misses by 76 s (1 miss).
#   A first: A 0-480, B 480-576: job-seconds 480 + 576 = 1056; no miss.
# jct keeps B first (672 < 1056); misses (and tardiness) take A first (0 < 1 miss).
CONST = TrainingConstants(seq_len=1, micro_batch=1, peak_flops=1.0, mfu=1.0)
M4 = ModelSpec("M4", 6.0, 4, 1)
CLUSTER = Cluster((Region("R0", 4, 1.0, 2.0),), np.zeros((1, 1)), power_kw=3.6)


def test_the_misses_objective_picks_what_jct_does_not():
    jobs = (
        Job(1, M4, "d", 4 * 10, 4, constants=CONST, name="A", deadline=500.0),
        Job(2, M4, "d", 4 * 2, 4, constants=CONST, name="B", deadline=600.0),
    )
    scn = Scenario("deadlines", CLUSTER, jobs, World())

    def schedule(name: str) -> list[tuple[float, float, float]]:
        res = make_policy(name).simulate(scn)
        return [(r.start_time, r.finish_time, r.tardiness) for r in res.records]

    assert schedule("rollout:sjf") == [(96.0, 576.0, 76.0), (0.0, 96.0, 0.0)]
    for objective in ("misses", "tardiness"):
        assert schedule(f"rollout:sjf,objective={objective}") == [
            (0.0, 480.0, 0.0),
            (480.0, 576.0, 0.0),
        ]


def test_the_env_agent_samples_as_the_simulator_policy():
    """As an env agent the sampled planner forks the env's simulator with the same draws."""
    from bacepipe_env.envs.agents import agent_env_kwargs, make_agent, run_episode
    from bacepipe_env.envs.geopipe import GeoPipeEnv

    name = "rollout:sjf+finish-aware,k=2,lookahead=sampled:2,objective=misses"
    env = GeoPipeEnv(scenario="online", n_jobs=20, max_queue=32, **agent_env_kwargs(name))
    agent = make_agent(name).bind(env)
    ep = run_episode(env, agent, 0)
    want = make_policy(name).simulate(env.scenario)
    assert env.scenario.future is not None
    assert ep.avg_jct_h * 3600 == pytest.approx(want.avg_jct, rel=1e-12)


@pytest.mark.parametrize("announce_h", [0.0, 3.0])
def test_reusing_the_chosen_forks_score_changes_no_sampled_decision(announce_h: float) -> None:
    """Decisions at one instant draw the same futures, so the base's own action continues the
    fork chosen at the previous one and its score is reused (one fork set in k + 1 saved): the
    decisions are those of a planner that scores every action afresh, and it plays fewer
    forks."""
    scn = load_scenario(
        "online", seed=2, n_jobs=20, load=3.0, deadline_slack=SLACK, announce_h=announce_h
    )
    name = "rollout:edf+finish-aware,objective=misses,lookahead=sampled:2"
    policy = make_policy(name, seed=5)
    rule = make_preemption("none")
    runs, forks = [], []
    for reuse in (True, False):
        planner = make_planner(name, 5)
        planner.reuse = reuse
        played = 0
        score = planner.score

        def counted(*args, _score=score, **kwargs):  # count the actions scored by forks
            nonlocal played
            played += 1
            return _score(*args, **kwargs)

        planner.score = counted  # type: ignore[method-assign]
        sim = Simulator(scn, policy.placement, admission=policy.admission)
        out = []
        while (candidates := sim.next_decision()) is not None:
            action = planner.best(
                sim, planner.placement_actions(sim, candidates, sim.has_future_events), rule
            )
            out.append((sim.time, action))
            apply(sim, action)
        runs.append(out)
        forks.append(played)
    assert runs[0] == runs[1]
    assert forks[0] < forks[1]
