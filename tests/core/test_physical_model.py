"""The physical model's iteration time (semantics §3d): hand-worked pipelines, and the
per-stage form against the equal-stage kernels."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bacepipe_env.core.perf import (
    physical_pipeline_iteration_time,
    pipeline_iteration_time,
    staged_iteration_time,
)


def test_a_hand_worked_physical_iteration() -> None:
    # L = 3 stages, M = 4 micro-batches; forward 1 s and backward 2 s per stage and
    # micro-batch; forward hops 0.5 s and 1.5 s, reverse hops 0.25 s and 3 s; latencies 0.1 s
    # and 0.2 s (paid once per direction).
    # forward:  hops 2.0 + latency 0.3 + 3 * 1 + 3 * max(1, 1.5) = 2.0 + 0.3 + 3 + 4.5 = 9.8
    # backward: hops 3.25 + latency 0.3 + 3 * 2 + 3 * max(2, 3) = 3.25 + 0.3 + 6 + 9 = 18.55
    got = staged_iteration_time([1, 1, 1], [2, 2, 2], [0.5, 1.5], [0.25, 3.0], 4, [0.1, 0.2])
    assert got == pytest.approx(9.8 + 18.55)
    assert physical_pipeline_iteration_time(
        1.0, 2.0, 3, 4, (2.0, 1.5), (3.25, 3.0), (0.3, 0.3)
    ) == pytest.approx(28.35)


def test_the_paper_form_mirrors_the_forward_pass_and_charges_latency_per_micro_batch() -> None:
    # the same pipeline under Eq. (1): hops with latency 0.6 and 1.7 s, the slowest 1.7 s
    # 2 * (2.3 + 3 * 1 + 3 * 1.7) = 2 * 10.4 = 20.8; the backward numbers play no part
    got = staged_iteration_time(
        [1, 1, 1], [9, 9, 9], [0.5, 1.5], [7.0, 7.0], 4, [0.1, 0.2], model="paper"
    )
    assert got == pytest.approx(20.8)
    assert pipeline_iteration_time(1.0, 2.3, 1.7, 3, 4) == pytest.approx(20.8)


def test_one_gpu_is_forward_then_backward_micro_batch_by_micro_batch() -> None:
    # no hop: M * (t_fwd + t_bwd) = 8 * (1 + 3) = 32 (with recomputation, backward = 3x forward)
    assert physical_pipeline_iteration_time(1.0, 3.0, 1, 8) == 32.0
    assert staged_iteration_time([1.0], [3.0], [], [], 8) == 32.0


@given(
    st.integers(1, 12),
    st.integers(1, 64),
    st.floats(1e-3, 10.0),
    st.floats(1e-3, 10.0),
    st.lists(st.tuples(st.floats(0, 5), st.floats(0, 5), st.floats(0, 1)), max_size=11),
)
def test_equal_stages_agree_with_the_kernels(
    n: int, m: int, fwd: float, bwd: float, hops: list[tuple[float, float, float]]
) -> None:
    hops = (hops * n)[: n - 1]
    f = [h[0] for h in hops]
    b = [h[1] for h in hops]
    lat = [h[2] for h in hops]
    got = staged_iteration_time([fwd] * n, [bwd] * n, f, b, m, lat)
    want = physical_pipeline_iteration_time(
        fwd,
        bwd,
        n,
        m,
        (sum(f), max(f, default=0.0)),
        (sum(b), max(b, default=0.0)),
        (sum(lat), sum(lat)),
    )
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
    paper = staged_iteration_time([fwd] * n, None, f, None, m, lat, model="paper")
    comm = [x + d for x, d in zip(f, lat)]
    assert paper == pytest.approx(
        pipeline_iteration_time(fwd, sum(comm), max(comm, default=0.0), n, m), rel=1e-12
    )
    # latency charged once per fill never costs more than Eq. (1)'s latency per micro-batch
    # when the backward pass mirrors the forward one
    mirrored = staged_iteration_time([fwd] * n, [fwd] * n, f, f, m, lat)
    assert mirrored <= paper * (1 + 1e-12)
