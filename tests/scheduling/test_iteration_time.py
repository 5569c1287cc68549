"""Eq. (1) of the paper: ``t_iter = (sum t_comm + L * t_comp + (M - 1) * Delta) * 2``.

semantics §3 states that this equals a micro-batch-level GPipe forward pass, with stages and
links as servers in series, doubled for the backward pass. The reference below simulates that
pipeline micro-batch by micro-batch and does not use the closed form.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bacepipe_env.errors import ValidationError
from bacepipe_env.scheduling import iteration_time


def gpipe_forward_then_backward(
    t_comp: float, comm_times: list[float], n_stages: int, n_micro: int
) -> float:
    """Simulate the forward pass of ``n_micro`` micro-batches through the tandem of servers
    ``stage 1, link 1-2, stage 2, ..., link (L-1)-L, stage L`` and double it.

    Micro-batch ``i`` enters server ``s`` once it has left server ``s - 1`` (all micro-batches
    are ready at time 0 in front of stage 1) and server ``s`` has finished micro-batch ``i - 1``.
    """
    assert len(comm_times) == n_stages - 1
    service = [t_comp]
    for c in comm_times:
        service += [c, t_comp]
    finished = [0.0] * len(service)  # time server s finished its previous micro-batch
    for _ in range(n_micro):
        left_previous = 0.0
        for s, duration in enumerate(service):
            start = max(left_previous, finished[s])
            finished[s] = start + duration
            left_previous = finished[s]
    return 2.0 * finished[-1]


times = st.floats(min_value=0.0, max_value=10.0, allow_nan=False, allow_subnormal=False)


@st.composite
def pipelines(draw: st.DrawFn) -> tuple[float, list[float], int, int]:
    n_stages = draw(st.integers(min_value=1, max_value=12))
    n_micro = draw(st.integers(min_value=1, max_value=64))
    t_comp = draw(times)
    comm = draw(st.lists(times, min_size=n_stages - 1, max_size=n_stages - 1))
    return t_comp, comm, n_stages, n_micro


@settings(max_examples=200, deadline=None)
@given(pipelines())
def test_eq1_equals_micro_batch_gpipe_simulation(case: tuple[float, list[float], int, int]):
    t_comp, comm, n_stages, n_micro = case
    expected = gpipe_forward_then_backward(t_comp, comm, n_stages, n_micro)
    got = iteration_time(t_comp, comm, n_stages, n_micro)
    assert isinstance(got, float)
    assert math.isclose(got, expected, rel_tol=1e-12, abs_tol=0.0)


def test_simulation_reference_itself_on_fig3_trace():
    # Sanity check of the reference on the Fig. 3 shape (4 stages, 4 micro-batches), traced by
    # hand: t_comp = 1, links 0.5 / 2 / 0.5. The 2 s link is the bottleneck: micro-batch 1
    # leaves stage 4 at 1+0.5+1+2+1+0.5+1 = 7 and each later one 2 s after the previous: 13.
    assert gpipe_forward_then_backward(1.0, [0.5, 2.0, 0.5], 4, 4) == 26.0


def test_fig3_four_stages_four_micro_batches_comm_bound():
    # sum(t_comm) = 3, L * t_comp = 4, Delta = max(1, 2) = 2, (M - 1) * Delta = 6
    # t_iter = (3 + 4 + 6) * 2 = 26
    assert iteration_time(1.0, [0.5, 2.0, 0.5], 4, 4) == pytest.approx(26.0, rel=1e-15)


def test_fig3_four_stages_four_micro_batches_compute_bound():
    # sum(t_comm) = 1.5, L * t_comp = 8, Delta = max(2, 0.5) = 2, (M - 1) * Delta = 6
    # t_iter = (1.5 + 8 + 6) * 2 = 31
    assert iteration_time(2.0, [0.5, 0.5, 0.5], 4, 4) == pytest.approx(31.0, rel=1e-15)


def test_single_stage_has_no_links():
    # L = 1: no boundary, Delta = t_comp; (0 + 1 * 0.25 + 7 * 0.25) * 2 = 4
    assert iteration_time(0.25, [], 1, 8) == pytest.approx(4.0, rel=1e-15)


def test_single_micro_batch_is_pure_fill_latency():
    # M = 1: (2 + 3) + 3 * 1 + 0 * Delta = 8, doubled = 16
    assert iteration_time(1.0, [2.0, 3.0], 3, 1) == pytest.approx(16.0, rel=1e-15)


def test_accepts_tuple_of_comm_times():
    # (1 + 2 * 1 + 2 * max(1, 1)) * 2 = 10
    assert iteration_time(1.0, (1.0,), 2, 3) == pytest.approx(10.0, rel=1e-15)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"t_comp": 1.0, "comm_times": [0.1], "n_stages": 3, "n_micro": 4}, "comm_times"),
        ({"t_comp": 1.0, "comm_times": [0.1, 0.2], "n_stages": 2, "n_micro": 4}, "comm_times"),
        ({"t_comp": 1.0, "comm_times": [], "n_stages": 0, "n_micro": 4}, "n_stages"),
        ({"t_comp": float("nan"), "comm_times": [0.1], "n_stages": 2, "n_micro": 4}, "t_comp"),
        ({"t_comp": float("inf"), "comm_times": [0.1], "n_stages": 2, "n_micro": 4}, "t_comp"),
        ({"t_comp": -1.0, "comm_times": [0.1], "n_stages": 2, "n_micro": 4}, "t_comp"),
        ({"t_comp": 1.0, "comm_times": [0.1, -0.5], "n_stages": 3, "n_micro": 4}, "comm_times[1]"),
        (
            {"t_comp": 1.0, "comm_times": [float("nan")], "n_stages": 2, "n_micro": 4},
            "comm_times[0]",
        ),
        ({"t_comp": 1.0, "comm_times": [0.1], "n_stages": 2, "n_micro": 0}, "n_micro"),
        ({"t_comp": 1.0, "comm_times": [0.1], "n_stages": 2.5, "n_micro": 4}, "n_stages"),
    ],
)
def test_validation_errors(kwargs: dict, field: str):
    with pytest.raises(ValidationError) as info:
        iteration_time(**kwargs)
    assert isinstance(info.value, ValueError)
    assert info.value.field == field


@pytest.mark.parametrize("comm_times", [None, 5, 0.5])
def test_non_sequence_comm_times_is_a_validation_error(comm_times):
    # "Bad inputs raise ValidationError": a missing or scalar comm_times is bad input too.
    with pytest.raises(ValidationError) as info:
        iteration_time(1.0, comm_times, 2, 4)
    assert info.value.field == "comm_times"
