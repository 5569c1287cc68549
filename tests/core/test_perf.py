"""The performance model (semantics §3) checked by hand.

A = m * S * h * bytes; t_comp(L) = 2 N m S / (L * peak * mfu) + c0; I = ceil(samples / batch) *
epochs; Eq. (1) t_iter = (sum t_comm + L t_comp + (M - 1) Delta) * 2; E(1) = I * t_iter(1);
b(L) = A / t_comp(L); K* = argmin_k t_iter(k) over 1..n_layers with every hop at the largest
region's intra bandwidth (Eq. 13).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from bacepipe_env.core import (
    Cluster,
    Job,
    ModelSpec,
    Placement,
    Region,
    Scenario,
    Simulator,
    TrainingConstants,
    iteration_time,
    profile_job,
)
from bacepipe_env.core.perf import (
    allreduce_time,
    electricity_cost,
    job_iteration_time,
    placement_comm_times,
    stage_gradient_bytes,
)
from bacepipe_env.errors import ScenarioError
from bacepipe_env.scenarios import build_scenario, load_scenario

LLAMA_70B = ModelSpec("Llama-3.1-70B", 70e9, 80, 8192)
A6000 = TrainingConstants()  # S = 2048, m = 1, 154.8 TFLOP/s, mfu 0.4, c0 = 0, fp16

# A toy model whose numbers can be followed by hand. With S = m = 1, peak = 1 FLOP/s and
# mfu = 1: t_comp(L) = 2 * N / L = 12 / L seconds for N = 6. With h = 1 and 2-byte values
# A = 2 bytes, so a 2 B/s intra-region link makes every intra hop exactly 1 s.
TOY_CONST = TrainingConstants(seq_len=1, micro_batch=1, peak_flops=1.0, mfu=1.0)
TOY_INTRA = 2.0  # bytes/s -> hop = A / intra = 1 s


def toy_job(
    n_layers: int = 12,
    *,
    samples: int = 10,
    batch: int = 4,
    epochs: int = 1,
    constants: TrainingConstants = TOY_CONST,
) -> Job:
    return Job(
        job_id=1,
        model=ModelSpec("toy", 6.0, n_layers, 1),
        dataset="toy-data",
        samples=samples,
        batch=batch,
        epochs=epochs,
        constants=constants,
    )


# ----------------------------------------------------------------------------- activation


def test_activation_size_llama_70b() -> None:
    # A = m * S * h * 2 = 1 * 2048 * 8192 * 2 = 33,554,432 bytes (the paper's "about 30 MB").
    job = Job(1, LLAMA_70B, "Alpaca-52k", 52002, 128)
    prof = profile_job(job, 1e9)
    assert prof.activation_bytes == 33_554_432


def test_activation_scales_with_micro_batch_and_bytes() -> None:
    c = TrainingConstants(seq_len=1024, micro_batch=4, bytes_per_value=4)
    job = Job(1, LLAMA_70B, "d", 100, 128, constants=c)
    # 4 * 1024 * 8192 * 4 = 134,217,728
    assert profile_job(job, 1e9).activation_bytes == 134_217_728


# ----------------------------------------------------------------------------- compute


def test_t_comp_llama_70b() -> None:
    job = Job(1, LLAMA_70B, "Alpaca-52k", 52002, 128)
    prof = profile_job(job, 1e9)
    coeff = 2 * 70e9 * 1 * 2048 / (154.8e12 * 0.4)  # = 286.72e12 / 61.92e12 ~ 4.6305 s
    assert coeff == pytest.approx(4.630490956, rel=1e-9)
    for L in (1, 2, 7, 40, 80):
        assert prof.t_comp(L) == pytest.approx(coeff / L, rel=1e-12)


def test_t_comp_with_stage_overhead() -> None:
    c = TrainingConstants(seq_len=1, micro_batch=1, peak_flops=1.0, mfu=1.0, stage_overhead=0.5)
    prof = profile_job(toy_job(constants=c), TOY_INTRA)
    # t_comp(L) = 12 / L + 0.5
    assert prof.t_comp(1) == pytest.approx(12.5)
    assert prof.t_comp(3) == pytest.approx(4.5)
    assert prof.t_comp(4) == pytest.approx(3.5)


def test_toy_t_comp_is_exact() -> None:
    prof = profile_job(toy_job(), TOY_INTRA)
    assert prof.compute_coeff == 12.0
    assert [prof.t_comp(L) for L in (1, 2, 3, 4, 6, 12)] == [12.0, 6.0, 4.0, 3.0, 2.0, 1.0]
    assert prof.activation_bytes == 2.0


# ----------------------------------------------------------------------------- iterations


@pytest.mark.parametrize(
    ("samples", "batch", "epochs", "iterations"),
    [(10, 4, 1, 3), (8, 4, 1, 2), (9, 4, 1, 3), (10, 4, 2, 6), (1, 4, 3, 3), (52002, 128, 1, 407)],
)
def test_iterations(samples: int, batch: int, epochs: int, iterations: int) -> None:
    job = toy_job(samples=samples, batch=batch, epochs=epochs)
    prof = profile_job(job, TOY_INTRA)
    assert prof.iterations == iterations
    assert prof.n_micro == batch  # m = 1


def test_micro_batches_with_larger_micro_batch() -> None:
    c = TrainingConstants(seq_len=1, micro_batch=4, peak_flops=1.0, mfu=1.0)
    prof = profile_job(toy_job(batch=16, constants=c), TOY_INTRA)
    assert prof.n_micro == 4  # M = batch / m


# ----------------------------------------------------------------------------- E(1), b(L)


def test_single_gpu_exec_toy() -> None:
    # E(1) = I * 2 * M * t_comp(1) = 3 * 2 * 4 * 12 = 288 s
    prof = profile_job(toy_job(samples=10, batch=4), TOY_INTRA)
    assert prof.single_gpu_exec == pytest.approx(288.0)
    # two epochs double it
    prof2 = profile_job(toy_job(samples=10, batch=4, epochs=2), TOY_INTRA)
    assert prof2.single_gpu_exec == pytest.approx(576.0)


def test_single_gpu_exec_llama_70b_on_alpaca() -> None:
    job = Job(1, LLAMA_70B, "Alpaca-52k", 52002, 128)
    prof = profile_job(job, 1e9)
    t1 = 2 * 70e9 * 2048 / (154.8e12 * 0.4)
    iters = math.ceil(52002 / 128)  # 407
    assert prof.single_gpu_exec == pytest.approx(iters * 2 * 128 * t1, rel=1e-12)


def test_min_bandwidth() -> None:
    prof = profile_job(toy_job(), TOY_INTRA)
    # b(L) = A / t_comp(L) = 2 / (12 / L) = L / 6 bytes/s
    for L in (1, 2, 3, 6, 12):
        assert prof.min_bandwidth(L) == pytest.approx(L / 6)
    llama = profile_job(Job(1, LLAMA_70B, "d", 52002, 128), 1e9)
    t8 = 2 * 70e9 * 2048 / (8 * 154.8e12 * 0.4)
    assert llama.min_bandwidth(8) == pytest.approx(33_554_432 / t8, rel=1e-12)


# ----------------------------------------------------------------------------- Eq. (1)


def test_iteration_time_by_hand() -> None:
    # L = 3, t_comp = 4, hops [1, 4.5], M = 4: Delta = 4.5;
    # (5.5 + 12 + 3 * 4.5) * 2 = 62
    assert iteration_time(4.0, [1.0, 4.5], 3, 4) == pytest.approx(62.0)
    # single stage: (0 + t + (M-1) t) * 2 = 2 M t
    assert iteration_time(12.0, [], 1, 4) == pytest.approx(96.0)
    # compute-bound: Delta = t_comp
    assert iteration_time(3.0, [1.0, 1.0, 1.0], 4, 4) == pytest.approx((3 + 12 + 9) * 2)


def _gpipe_forward(servers: list[float], n_micro: int) -> float:
    """Micro-batches through servers in series (stages and links), all ready at t = 0."""
    done = [0.0] * len(servers)
    for _ in range(n_micro):
        t = 0.0
        for i, s in enumerate(servers):
            t = max(t, done[i]) + s
            done[i] = t
    return done[-1]


@pytest.mark.parametrize("seed", range(10))
def test_iteration_time_equals_gpipe_forward_doubled(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_stages = int(rng.integers(1, 7))
    n_micro = int(rng.integers(1, 9))
    t = float(rng.uniform(0.1, 3.0))
    comm = [float(x) for x in rng.uniform(0.0, 5.0, size=n_stages - 1)]
    servers = [t]
    for c in comm:
        servers += [c, t]
    assert iteration_time(t, comm, n_stages, n_micro) == pytest.approx(
        2 * _gpipe_forward(servers, n_micro), rel=1e-12
    )


# ----------------------------------------------------------------------------- Eq. (13)


def test_k_star_strictly_inside_by_hand() -> None:
    # Toy model, M = 4, every hop 1 s, t_comp(k) = 12 / k (>= 1 for k <= 12):
    #   t_iter(k) = 2 * ((k - 1) * 1 + k * 12/k + 3 * max(12/k, 1)) = 2 * (k + 11 + 36/k)
    #   k:       1     2     3     4     5      6     7        8     12
    #   t_iter:  96    62    52    48    46.4   46    46.29    47    52
    # so K* = 6, strictly between 1 and n_layers = 12, with t_iter(K*) = 46.
    prof = profile_job(toy_job(n_layers=12), TOY_INTRA)
    assert prof.k_star == 6
    expected = {1: 96.0, 2: 62.0, 3: 52.0, 4: 48.0, 5: 46.4, 6: 46.0, 8: 47.0, 12: 52.0}
    for k, t in expected.items():
        got = iteration_time(prof.t_comp(k), [1.0] * (k - 1), k, prof.n_micro)
        assert got == pytest.approx(t), k
    # b(K*) = A / t_comp(6) = 2 / 2 = 1 byte/s
    assert prof.min_bandwidth_kstar == pytest.approx(1.0)


def test_k_star_capped_by_layers() -> None:
    # same curve, but a stage holds at least one layer: with 4 layers K* = 4 (t_iter 48)
    assert profile_job(toy_job(n_layers=4), TOY_INTRA).k_star == 4
    assert profile_job(toy_job(n_layers=1), TOY_INTRA).k_star == 1
    assert profile_job(toy_job(n_layers=1), TOY_INTRA).min_bandwidth_kstar == pytest.approx(2 / 12)


def test_k_star_depends_on_reference_intra_bandwidth() -> None:
    # With hops of 0.25 s (intra 8 B/s): t_iter(k)/2 = 0.25 (k-1) + 12 + 3 * 12/k for k <= 12
    # (12/k >= 1 > 0.25). k=12: 2.75 + 12 + 3 = 17.75; k=11: 2.5 + 12 + 3.27 = 17.77; so K* = 12.
    assert profile_job(toy_job(n_layers=12), 8.0).k_star == 12
    # A very slow link (hop 100 s) makes pipelining pointless: K* = 1.
    assert profile_job(toy_job(n_layers=12), 0.02).k_star == 1


def test_k_star_ties_go_to_the_smallest_k() -> None:
    # M = 1, hop ~0: t_iter(k) = 2 * (k * 12/k) = 24 for every k (12/k exact for k <= 4), so
    # the smallest minimiser, 1.
    job = toy_job(n_layers=4, batch=1, samples=1)
    assert profile_job(job, 1e30).k_star == 1


def test_k_star_llama_matches_brute_force() -> None:
    scn = load_scenario("paper")
    ref = scn.cluster.regions[scn.cluster.largest_region].intra_bandwidth
    assert scn.cluster.largest_region == 3  # EA-East, 128 GPUs, 70 Gbps
    assert ref == pytest.approx(70e9 / 8)
    for job in scn.jobs:
        prof = scn.profiles[job.job_id]
        c = job.constants
        a = c.micro_batch * c.seq_len * job.model.hidden * 2
        coeff = 2 * job.model.params * c.micro_batch * c.seq_len / (c.peak_flops * c.mfu)
        m = job.batch // c.micro_batch
        best = min(
            range(1, job.model.n_layers + 1),
            key=lambda k, coeff=coeff, a=a, m=m: (
                2 * ((k - 1) * a / ref + coeff + (m - 1) * max(coeff / k, a / ref)),
                k,
            ),
        )
        assert prof.k_star == best, job.model.name


# ----------------------------------------------------------------------------- placements


def _two_region_cluster() -> Cluster:
    # intra: region 0 at 2 B/s (hop 1 s), region 1 at 1 B/s (hop 2 s);
    # B[0, 1] = 0.5 B/s (hop 4 s), B[1, 0] = 0.25 B/s (hop 8 s); latency 0.5 s / 1.5 s
    return Cluster.from_regions(
        [Region("R0", 4, 0.1, 2.0), Region("R1", 4, 0.2, 1.0)],
        [[0.0, 0.5], [0.25, 0.0]],
        latency=[[0.0, 0.5], [1.5, 0.0]],
        power_kw=0.5,
    )


def test_comm_times_two_region_placement() -> None:
    cluster = _two_region_cluster()
    prof = profile_job(toy_job(), TOY_INTRA)
    # path 0 -> 1, 2 + 1 GPUs: one intra hop in R0 (2/2 = 1 s), one cross hop 2/0.5 + 0.5 = 4.5 s
    assert placement_comm_times(prof, cluster, (0, 1), (2, 1)) == pytest.approx([1.0, 4.5])
    # path 1 -> 0, 2 + 2: intra R1 (2 s), cross 2/0.25 + 1.5 = 9.5 s, intra R0 (1 s)
    assert placement_comm_times(prof, cluster, (1, 0), (2, 2)) == pytest.approx([2.0, 9.5, 1.0])
    # single region, 3 GPUs: two intra hops
    assert placement_comm_times(prof, cluster, (1,), (3,)) == pytest.approx([2.0, 2.0])
    assert placement_comm_times(prof, cluster, (0,), (1,)) == []


def test_execution_time_two_region_placement() -> None:
    cluster = _two_region_cluster()
    prof = profile_job(toy_job(samples=10, batch=4), TOY_INTRA)  # I = 3, M = 4
    comm = placement_comm_times(prof, cluster, (0, 1), (2, 1))
    # L = 3: t_comp = 4, hops [1, 4.5], Delta = 4.5:
    # t_iter = (5.5 + 3 * 4 + 3 * 4.5) * 2 = 62, E = 3 * 62 = 186 s
    assert prof.execution_time(comm, 3) == pytest.approx(186.0)
    # reverse path 1 -> 0 with 2 + 2: t_comp = 3, hops [2, 9.5, 1], Delta = 9.5:
    # t_iter = (12.5 + 12 + 28.5) * 2 = 106, E = 318 s
    comm_r = placement_comm_times(prof, cluster, (1, 0), (2, 2))
    assert prof.execution_time(comm_r, 4) == pytest.approx(318.0)


class _Fixed:
    """Places every job on one fixed placement."""

    name = "fixed"
    pure = True

    def __init__(self, placement: Placement) -> None:
        self.placement = placement

    def place(self, view: object, job_id: int) -> Placement:
        return self.placement


def test_simulator_uses_the_performance_model() -> None:
    # the same two-region placement end to end: E = 186 s, cost per Eq. (4)
    cluster = _two_region_cluster()
    # Eq. 13 reference is the largest region (tie 4/4 -> R0, 2 B/s, hop 1 s): K* = 6 >= 3
    scn = Scenario("toy", cluster, (toy_job(),))
    assert scn.profiles[1].k_star == 6
    sim = Simulator(scn, _Fixed(Placement((0, 1), (2, 1))))
    assert sim.next_decision() == (1,)
    sim.place(1)
    # b(3) = A / t_comp(3) = 2 / 4 = 0.5 B/s reserved on 0 -> 1 only (exactly its capacity)
    np.testing.assert_allclose(sim.reserved_bandwidth, [[0.0, 0.5], [0.0, 0.0]])
    assert sim.network_utilization == pytest.approx(0.5 / 0.75)
    assert sim.next_decision() is None
    rec = sim.result().records[0]
    assert rec.execution == pytest.approx(186.0)
    # C = 186 / 3600 * (2 * 0.1 + 1 * 0.2) * 0.5 = 186 / 3600 * 0.2
    assert rec.cost == pytest.approx(186.0 / 3600 * 0.2)
    assert rec.reserved_bandwidth == pytest.approx(0.5)
    np.testing.assert_allclose(sim.reserved_bandwidth, 0.0)


def test_electricity_cost() -> None:
    # 2 h on 3 GPUs at 0.1 and 1 GPU at 0.3 -> sum n_r P_r = 0.6; 0.3 kW each: 2 * 0.6 * 0.3
    assert electricity_cost(7200.0, 0.6, 0.3) == pytest.approx(0.36)


# ----------------------------------------------------------------------------- gradient bytes


def test_gradient_bytes_are_a_setting_apart_from_activation_bytes() -> None:
    # Default 4-byte (fp32) gradients, Megatron-LM's for bf16 training, against 2-byte
    # activations: one of 8 stages of Llama-3.1-70B holds 4 * 70e9 / 8 = 35e9 bytes of
    # gradients, while its activation stays 1 * 2048 * 8192 * 2 = 33,554,432 bytes.
    assert (A6000.bytes_per_value, A6000.bytes_per_grad) == (2, 4)
    prof = profile_job(Job(1, LLAMA_70B, "d", 100, 128), 1e9)
    assert stage_gradient_bytes(prof, 8) == 35e9
    assert prof.activation_bytes == 33_554_432
    # 4-byte activations leave the gradients alone; 2-byte gradients halve them
    wide = profile_job(
        Job(1, LLAMA_70B, "d", 100, 128, constants=replace(A6000, bytes_per_value=4)), 1e9
    )
    assert stage_gradient_bytes(wide, 8) == 35e9
    bf16 = profile_job(
        Job(1, LLAMA_70B, "d", 100, 128, constants=replace(A6000, bytes_per_grad=2)), 1e9
    )
    assert stage_gradient_bytes(bf16, 8) == 17.5e9


def _dp_world(**constants: object) -> Scenario:
    # tests/core/test_replicas.py's worked example (N = 3e9, 2 layers, M = 4, 1 GFLOP/s GPUs,
    # every link 1e9 B/s; two copies of K* = 2 stages each run 2 micro-batches in 29 s)
    return build_scenario(
        {
            "name": "golden-dp-grad",
            "model": "physical",
            "scheduler_model": "world",
            "recompute": False,
            "ignore_memory": True,
            "constants": {
                "seq_len": 1,
                "micro_batch": 1,
                "peak_tflops": 0.001,
                "mfu": 1.0,
                **constants,
            },
            "regions": [{"name": "R0", "gpus": 4, "price_usd_per_kwh": 0.1, "intra_gbps": 8}],
            "links": {"matrix_gbps": [[0]]},
            "models": [
                {"name": "DP", "params": 3e9, "layers": 2, "hidden": 500_000_000, "batch": 4}
            ],
            "datasets": [{"name": "D", "samples": 400}],
            "jobs": [{"model": "DP", "dataset": "D", "min_replicas": 2, "max_replicas": 2}],
        }
    )


def test_the_all_reduce_moves_fp32_gradients_by_default() -> None:
    """The default 4-byte gradients: a stage's G = 4 * 3e9 / 2 = 6e9 bytes, a chunk G / 2 =
    3e9 bytes takes 3e9 / 1e9 = 3 s, 2 (d - 1) = 2 steps: 6 s (2-byte gradients: 3 s), so an
    iteration is 29 + 6 = 35 s (29 + 3 = 32 s). One copy (d = 1) has no all-reduce: its
    iteration is the very same float whatever the gradient bytes."""
    wide, narrow = _dp_world(), _dp_world(bytes_per_grad=2)
    placement = Placement((0,), (2,), (Placement((0,), (2,)),))
    for scn, allreduce, iteration in ((wide, 6.0, 35.0), (narrow, 3.0, 32.0)):
        prof = scn.profiles[1]
        assert stage_gradient_bytes(prof, 2) == 2 * allreduce * 1e9 / 2
        assert allreduce_time(prof, scn.cluster, placement) == pytest.approx(allreduce, rel=1e-12)
        assert job_iteration_time(prof, scn.cluster, placement) == pytest.approx(
            iteration, rel=1e-12
        )
    one = Placement((0,), (2,))
    assert job_iteration_time(wide.profiles[1], wide.cluster, one) == job_iteration_time(
        narrow.profiles[1], narrow.cluster, one
    )


@pytest.mark.parametrize("value", [0, 17, 2.5])
def test_bytes_per_grad_out_of_range_is_one_line(value: object) -> None:
    with pytest.raises(ScenarioError) as err:
        _dp_world(bytes_per_grad=value)
    assert "constants.bytes_per_grad" in str(err.value) and "\n" not in str(err.value)
