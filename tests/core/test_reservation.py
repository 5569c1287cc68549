"""The reservation plan behind the ``deadline-plan`` admission rule (core/reservation.py,
semantics §15): the pooled GPUs' free profile, conservative backfilling in EDF order and the
late jobs sent to the back, on a hand-worked plan and as invariants on random ones."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from bacepipe_env.core.reservation import FreeProfile, PlanJob, plan_lateness


def _job(job_id: int, ready: float, gpus: int, duration: float, due: float) -> PlanJob:
    return PlanJob(job_id, ready, gpus, duration, due, rank=float(job_id))


# ---------------------------------------------------------------------------------------------
# A pool of 8 GPUs at t = 0: 2 free, 6 given back at t = 10 (so 8 free from 10).
#   EDF order: A (due 15), B (due 30), C (due 12), D (no deadline) -> C, A, B, D.
#   C: 2 GPUs for 5 s, ready 0: free 2 over [0, 10): 0-5, due 12: on time. Profile: 0 free on
#      [0, 5), 2 on [5, 10), 8 from 10.
#   A: 4 GPUs for 4 s, ready 0: the first 4 free are at 10: 10-14 <= 15, on time. Profile:
#      0 on [0, 5), 2 on [5, 10), 4 on [10, 14), 8 from 14.
#   B: 6 GPUs for 10 s, ready 0: 6 free from 14: 14-24 <= 30, on time.
#   D: 2 GPUs for 3 s (backfilled): 2 free on [5, 10): 5-8; no deadline.
#   E: 8 GPUs for 1 s, due 20 (EDF between A and B): 8 free only from 14: 14-15 <= 20, on time;
#      then B starts at 15: 15-25. E for 3 s due 16 (still between A and B): 14-17 > 16, late:
#      sent to the back, B at 14-24, and E after every other job: at 24, 24-27, 11 s late.
# ---------------------------------------------------------------------------------------------
def test_a_hand_worked_plan() -> None:
    jobs = [
        _job(1, 0.0, 4, 4.0, 15.0),  # A
        _job(2, 0.0, 6, 10.0, 30.0),  # B
        _job(3, 0.0, 2, 5.0, 12.0),  # C
        _job(4, 0.0, 2, 3.0, math.inf),  # D
    ]
    misses, tardiness, finish = plan_lateness(FreeProfile(0.0, 2, [(10.0, 6)]), jobs)
    assert (misses, tardiness) == (0, 0.0)
    assert finish == {3: 5.0, 1: 14.0, 2: 24.0, 4: 8.0}
    on_time = plan_lateness(FreeProfile(0.0, 2, [(10.0, 6)]), [*jobs, _job(5, 0.0, 8, 1.0, 20.0)])
    assert on_time[2][5] == 15.0 and on_time[2][2] == 25.0 and on_time[0] == 0
    late = plan_lateness(FreeProfile(0.0, 2, [(10.0, 6)]), [*jobs, _job(5, 0.0, 8, 3.0, 16.0)])
    assert late[0] == 1 and late[1] == 11.0
    assert late[2][2] == 24.0 and late[2][5] == 27.0


def test_a_job_larger_than_the_pool_never_fits() -> None:
    profile = FreeProfile(0.0, 2, [(5.0, 2)])
    assert profile.earliest(0.0, 5, 1.0) == math.inf
    misses, tardiness, finish = plan_lateness(profile, [_job(1, 0.0, 5, 1.0, 100.0)])
    assert misses == 1 and tardiness == math.inf and finish[1] == math.inf


@st.composite
def plans(draw: st.DrawFn) -> tuple[float, int, list[tuple[float, int]], list[PlanJob]]:
    start = draw(st.floats(0.0, 100.0))
    free = draw(st.integers(0, 8))
    releases = draw(st.lists(st.tuples(st.floats(0.0, 200.0), st.integers(1, 8)), max_size=6))
    total = free + sum(g for _, g in releases)
    jobs = [
        _job(
            i,
            draw(st.floats(start, start + 150.0)),
            draw(st.integers(1, max(1, total))),
            draw(st.floats(0.5, 80.0)),
            draw(st.one_of(st.just(math.inf), st.floats(start, start + 400.0))),
        )
        for i in range(draw(st.integers(0, 12)))
    ]
    return start, free, releases, jobs


@given(plans())
@settings(max_examples=200, deadline=None)
def test_a_plan_never_overbooks_and_counts_its_misses(plan: tuple) -> None:
    start, free, releases, jobs = plan
    misses, tardiness, finish = plan_lateness(FreeProfile(start, free, releases), jobs)
    capacity = FreeProfile(start, free, releases)  # the pool before any reservation
    assert set(finish) == {p.job_id for p in jobs}
    late = [p for p in jobs if finish[p.job_id] > p.due]
    assert misses == len(late)
    if all(math.isfinite(finish[p.job_id]) for p in jobs):
        assert math.isclose(tardiness, math.fsum(finish[p.job_id] - p.due for p in late))
    # at every instant where something changes, the planned jobs use no more than the pool
    placed = [p for p in jobs if math.isfinite(finish[p.job_id])]
    # (a start read back as finish - duration may be off by a rounding: 1e-6 s either side)
    instants = {start, *(finish[p.job_id] - p.duration for p in placed)}
    for t in instants:
        t += 1e-6
        used = sum(
            p.gpus for p in placed if finish[p.job_id] - p.duration <= t < finish[p.job_id] - 2e-6
        )
        i = max(0, sum(1 for x in capacity.times if x <= t) - 1)
        assert used <= capacity.free[i]
    for p in placed:  # none starts before it is ready
        assert finish[p.job_id] - p.duration >= p.ready - 1e-9 * max(1.0, p.ready)
    assert all(p.due == math.inf or p in late or finish[p.job_id] <= p.due for p in jobs)
