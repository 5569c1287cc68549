"""The pipeline performance model: Eq. (1)-(4), Eq. (13), b(L) and E(1) (semantics §3).

A placement with L GPUs is an ordered path of regions, ``n_r`` GPUs (= stages) in each; the
stages of a region are contiguous, so the L - 1 stage boundaries are ``n_r - 1`` intra-region
hops inside each region and one cross-region hop between consecutive path regions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ScenarioError
from .cluster import Cluster
from .job import Job
from .memory import largest_feasible_gpus, memory_floors
from .placement import Placement
from .units import SECONDS_PER_HOUR

__all__ = [
    "MODELS",
    "SCHEDULER_MODELS",
    "JobProfile",
    "ProfileCache",
    "allreduce_link_bytes",
    "allreduce_time",
    "electricity_cost",
    "iteration_time",
    "job_iteration_time",
    "physical_pipeline_iteration_time",
    "pipeline_iteration_time",
    "placement_comm_times",
    "placement_iteration_time",
    "preview_iteration_time",
    "profile_job",
    "replica_micro_batches",
    "ring_allreduce_bytes",
    "ring_allreduce_time",
    "stage_gradient_bytes",
    "staged_iteration_time",
]


#: The performance models (semantics §3d): the paper's Eq. (1) as printed, and the physical
#: model (forward 2N, backward 4N (+2N recomputed) over the active parameters, the backward
#: pass on the reverse links, latency once per pipeline fill).
MODELS = ("paper", "physical")
#: What the schedulers estimate with: the paper's model whatever the world runs by, or the
#: world's own (semantics §3d: a scheduler's model is never the world).
SCHEDULER_MODELS = ("paper", "world")


def pipeline_iteration_time(
    t_comp: float, hop_sum: float, hop_max: float, n_stages: int, n_micro: int
) -> float:
    """The Eq. (1) kernel, from the sum and the maximum of the L - 1 boundary transfer times:
    ``(hop_sum + L * t_comp + (M - 1) * max(t_comp, hop_max)) * 2`` seconds. Every form of
    Eq. (1) in the project calls this (``hop_max = 0`` when there is no boundary)."""
    return (hop_sum + n_stages * t_comp + (n_micro - 1) * max(t_comp, hop_max)) * 2.0


def physical_pipeline_iteration_time(
    t_fwd: float,
    t_bwd: float,
    n_stages: int,
    n_micro: int,
    fwd_hops: tuple[float, float] = (0.0, 0.0),
    bwd_hops: tuple[float, float] = (0.0, 0.0),
    latency: tuple[float, float] = (0.0, 0.0),
) -> float:
    """The physical model's iteration of L equal stages (semantics §3d): a forward pass of
    ``M`` micro-batches through the stages, then a backward pass back through them, each
    a pipeline of stages and links in series. ``fwd_hops`` and ``bwd_hops`` are the
    ``(sum, max)`` of the L - 1 boundary transfer times on the forward links and on the reverse
    links; ``latency`` the sums of the path's link latencies forward and backward, each paid
    once as the pipeline fills, not once per micro-batch::

        t = fwd_sum + fwd_latency + L * t_fwd + (M - 1) * max(t_fwd, fwd_max)
          + bwd_sum + bwd_latency + L * t_bwd + (M - 1) * max(t_bwd, bwd_max)
    """
    fwd_sum, fwd_max = fwd_hops
    bwd_sum, bwd_max = bwd_hops
    m1 = n_micro - 1
    forward = fwd_sum + latency[0] + n_stages * t_fwd + m1 * max(t_fwd, fwd_max)
    backward = bwd_sum + latency[1] + n_stages * t_bwd + m1 * max(t_bwd, bwd_max)
    return forward + backward


def staged_iteration_time(
    stage_fwd: Sequence[float],
    stage_bwd: Sequence[float] | None,
    hop_fwd: Sequence[float],
    hop_bwd: Sequence[float] | None,
    n_micro: int,
    hop_latency: Sequence[float] = (),
    *,
    model: str = "physical",
) -> float:
    """One iteration of a pipeline whose stages differ (per-stage forward and backward times
    of one micro-batch, per-boundary transfer times and latencies), under ``model``:

    - ``"paper"``: Eq. (1) with each stage's own time, the backward pass a mirror of the
      forward one (``stage_bwd`` and ``hop_bwd`` are ignored) and latency in every hop::

          2 * (sum(hop + lat) + sum(stage_fwd) + (M - 1) * max(max(stage_fwd), max(hop + lat)))

    - ``"physical"``: the forward pass, then the backward pass on its own stage times and
      reverse-link transfer times, latency once per direction::

          sum(hop_fwd) + sum(lat) + sum(stage_fwd) + (M - 1) * max(max(stage_fwd), max(hop_fwd))
        + sum(hop_bwd) + sum(lat) + sum(stage_bwd) + (M - 1) * max(max(stage_bwd), max(hop_bwd))

    With equal stages these are :func:`pipeline_iteration_time` and
    :func:`physical_pipeline_iteration_time`. For the validation against measured runs,
    where per-layer profiles give unequal stages."""
    lat = list(hop_latency) or [0.0] * len(hop_fwd)
    m1 = n_micro - 1
    if model == "paper":
        hops = [h + d for h, d in zip(hop_fwd, lat)]
        worst = max([*stage_fwd, *hops])
        return 2.0 * (math.fsum(hops) + math.fsum(stage_fwd) + m1 * worst)
    if model != "physical":
        raise ValueError(f"unknown model {model!r}")
    assert stage_bwd is not None and hop_bwd is not None
    total = 0.0
    for stage_times, hop_times in ((stage_fwd, hop_fwd), (stage_bwd, hop_bwd)):
        worst = max([*stage_times, *hop_times])
        total += math.fsum(hop_times) + math.fsum(lat) + math.fsum(stage_times) + m1 * worst
    return total


def replica_micro_batches(n_micro: int, replicas: int) -> int:
    """Micro-batches one of ``replicas`` data-parallel replicas runs per iteration when the
    global batch's ``n_micro`` are split among them: ``ceil(M / d)``, the slowest replica's
    share (semantics §3e)."""
    return -(-n_micro // replicas)


def ring_allreduce_bytes(buffer_bytes: float, members: int) -> float:
    """Bytes every edge of a ring all-reduce of a ``buffer_bytes`` buffer among ``members``
    copies carries: ``2 (d - 1) / d`` of the buffer (reduce-scatter, then all-gather, each
    ``d - 1`` steps of one ``1 / d`` chunk); 0 for one member."""
    return 2.0 * (members - 1) * buffer_bytes / members


def ring_allreduce_time(chunk_seconds: float, members: int) -> float:
    """Seconds of a ring all-reduce among ``members`` copies, given ``chunk_seconds``, the
    time the ring's slowest edge takes to send one chunk (``1 / d`` of the buffer): the
    ``2 (d - 1)`` steps run in lockstep, every edge sending one chunk per step, so each step
    lasts as long as the slowest edge's (semantics §3e; 0 for one member)."""
    return 2.0 * (members - 1) * chunk_seconds


def iteration_time(
    t_comp: float, comm_times: Sequence[float], n_stages: int, n_micro: int
) -> float:
    """Eq. (1): one training iteration of a GPipe pipeline, forward plus backward (seconds).

    ``t_iter = (sum(t_comm) + L * t_comp + (M - 1) * Delta) * 2`` with
    ``Delta = max(t_comp, max(t_comm))``. ``comm_times`` holds the L - 1 boundary transfer times.
    """
    hop_max = max(comm_times) if comm_times else 0.0
    return pipeline_iteration_time(t_comp, math.fsum(comm_times), hop_max, n_stages, n_micro)


@dataclass(frozen=True)
class JobProfile:
    """What the Job Parser extracts from a job once: everything a scheduler needs about it.

    ``t_comp(L) = compute_coeff / L + stage_overhead`` is the per-stage, per-micro-batch compute
    time with L stages; ``k_star`` is Eq. (13); ``min_bandwidth_kstar`` is ``b(K*)`` and
    ``single_gpu_exec`` is ``E(1)`` (both used by the priority, Eqs. 9-10);
    ``ideal_execution`` is the execution time on K* GPUs with no cross-region hop.
    """

    job: Job
    n_micro: int  # M = batch / m
    iterations: int  # I = ceil(samples / batch) * epochs
    activation_bytes: float  # A = m * S * h * bytes, sent across each stage boundary
    compute_coeff: float  # 2 N m S / (peak * mfu), seconds
    stage_overhead: float  # c0, seconds
    k_star: int
    min_bandwidth_kstar: float  # b(K*), bytes/s
    single_gpu_exec: float  # E(1), seconds
    ideal_execution: float  # E(K*) with every hop intra-region (Eq. 13's optimum), seconds
    # the performance model these numbers come from (MODELS), and the backward pass's
    # coefficient: under "paper" the backward pass mirrors the forward one (None)
    model: str = "paper"
    backward_coeff: float | None = None

    def t_comp(self, n_gpus: int) -> float:
        """Per-stage compute time of one micro-batch with ``n_gpus`` stages (seconds): the
        forward pass's (Eq. 1's ``t_comp``, which the paper's backward pass mirrors)."""
        return self.compute_coeff / n_gpus + self.stage_overhead

    def t_bwd(self, n_gpus: int) -> float:
        """Per-stage backward time of one micro-batch with ``n_gpus`` stages (seconds):
        ``t_comp`` under the paper's model, its own coefficient under the physical one."""
        coeff = self.compute_coeff if self.backward_coeff is None else self.backward_coeff
        return coeff / n_gpus + self.stage_overhead

    def min_bandwidth(self, n_gpus: int) -> float:
        """``b(L) = A / t_comp(L)``: the bandwidth under which a hop stalls the pipeline."""
        return self.activation_bytes / self.t_comp(n_gpus)

    def execution_time(self, comm_times: Sequence[float], n_gpus: int) -> float:
        """Eq. (2): ``E = I * t_iter(L)`` for a placement whose boundary times are given."""
        return self.iterations * iteration_time(
            self.t_comp(n_gpus), comm_times, n_gpus, self.n_micro
        )


class ProfileCache:
    """Profiles by job shape (model, dataset size, batch, epochs, constants, reference
    bandwidth), so generators that build many scenarios from the same models profile each shape
    once. Owned by whoever builds the scenarios; not shared module state."""

    def __init__(self) -> None:
        self._profiles: dict[tuple[object, ...], JobProfile] = {}
        # (model, batch, constants, GPU memory per region) -> memory floors per region, and
        # (floors, capacities, K*) -> whether a job of those can ever start: pure functions
        # of their keys, remembered so that a generator's every episode does not redo them
        self._floors: dict[tuple[object, ...], tuple[int, ...]] = {}
        self._startable: dict[tuple[object, ...], bool] = {}

    def get(
        self,
        job: Job,
        reference_intra_bandwidth: float,
        model: str = "paper",
        recompute: bool = True,
    ) -> JobProfile:
        """The job's profile under ``model`` (:func:`profile_job`), computed on first sight of
        its shape."""
        key = (
            job.model,
            job.samples,
            job.batch,
            job.epochs,
            job.constants,
            reference_intra_bandwidth,
            model,
            recompute and model == "physical",  # the paper's model ignores it
        )
        prof = self._profiles.get(key)
        if prof is None:
            prof = self._profiles[key] = profile_job(
                job, reference_intra_bandwidth, model, recompute
            )
            return prof
        if prof.job is job:
            return prof
        out = object.__new__(JobProfile)  # a frozen dataclass: copy it with the job swapped
        out.__dict__.update(prof.__dict__, job=job)
        return out

    def memory_floors(
        self, profile: JobProfile, gpu_memory: tuple[float, ...], activations: str = "recompute"
    ) -> tuple[int, ...]:
        """:func:`~bacepipe_env.core.memory.memory_floors`, remembered by job shape, cluster
        memory and what a stage keeps of its activations."""
        job = profile.job
        key = (job.model, job.batch, job.constants, gpu_memory, activations)
        floors = self._floors.get(key)
        if floors is None:
            floors = self._floors[key] = memory_floors(profile, gpu_memory, activations)
        return floors

    def startable(self, floors: tuple[int, ...], capacity: tuple[int, ...], k_star: int) -> bool:
        """Whether some set of regions can hold the job in memory
        (:func:`~bacepipe_env.core.memory.largest_feasible_gpus`'s ``best > 0``), remembered."""
        key = (floors, capacity, k_star)
        ok = self._startable.get(key)
        if ok is None:
            ok = self._startable[key] = largest_feasible_gpus(floors, capacity, k_star)[0] > 0
        return ok

    def __len__(self) -> int:
        return len(self._profiles)


def profile_job(
    job: Job, reference_intra_bandwidth: float, model: str = "paper", recompute: bool = True
) -> JobProfile:
    """Derive a job's :class:`JobProfile` under performance ``model`` (:data:`MODELS`).

    ``reference_intra_bandwidth`` (bytes/s) is the intra-region bandwidth Eq. (13) assumes for
    every hop: the cluster's largest region's (semantics §3). K* is the smallest minimiser of
    ``t_iter(k)`` over ``1 <= k <= n_layers`` (a stage holds at least one layer).

    ``"paper"``: Eq. (1), ``2 N`` FLOPs per token forward over the total parameters N, the
    backward pass its mirror. ``"physical"`` (semantics §3d): ``2 N_a`` forward and ``4 N_a``
    backward over the active parameters N_a, plus ``2 N_a`` more when activations are
    recomputed (``recompute``, which the memory model assumes), the backward pass timed on its
    own (:func:`physical_pipeline_iteration_time`).
    """
    if model not in MODELS:
        raise ScenarioError("model", model, f"unknown model; choose from: {', '.join(MODELS)}")
    c = job.constants
    spec = job.model
    n_micro = job.batch // c.micro_batch
    iterations = math.ceil(job.samples / job.batch) * job.epochs
    activation = float(c.micro_batch * c.seq_len * spec.hidden * c.bytes_per_value)
    physical = model == "physical"
    flop_params = spec.active if physical else spec.params
    coeff = 2.0 * flop_params * c.micro_batch * c.seq_len / (c.peak_flops * c.mfu)
    back = coeff * (3.0 if recompute else 2.0) if physical else None
    hop = activation / reference_intra_bandwidth

    def t_comp(n: int) -> float:
        return coeff / n + c.stage_overhead

    def t_iter(k: int) -> float:  # k equal stages, k - 1 equal intra-region hops
        hops = ((k - 1) * hop, hop if k > 1 else 0.0)
        if back is None:
            return pipeline_iteration_time(t_comp(k), hops[0], hops[1], k, n_micro)
        t_bwd = back / k + c.stage_overhead
        return physical_pipeline_iteration_time(t_comp(k), t_bwd, k, n_micro, hops, hops)

    best_k, best_t = 1, math.inf
    for k in range(1, spec.n_layers + 1):  # Eq. (13)
        t = t_iter(k)
        if t < best_t:
            best_k, best_t = k, t
    single = iterations * t_iter(1)
    if not (math.isfinite(single) and math.isfinite(activation / hop if hop else 0.0)):
        # every input is in its documented range, but a toy FLOP rate or MFU near 0 with a
        # huge model can still overflow: name the job rather than run on infinities
        raise ScenarioError(
            f"job {job.job_id} ({job.model.name})",
            single,
            "its run time overflows: raise constants.peak_tflops or mfu, or shrink the model "
            "or the dataset",
        )
    return JobProfile(
        job=job,
        n_micro=n_micro,
        iterations=iterations,
        activation_bytes=activation,
        compute_coeff=coeff,
        stage_overhead=c.stage_overhead,
        k_star=best_k,
        min_bandwidth_kstar=activation / t_comp(best_k),
        single_gpu_exec=single,
        ideal_execution=iterations * best_t,
        model=model,
        backward_coeff=back,
    )


def placement_comm_times(
    profile: JobProfile,
    cluster: Cluster,
    path: Sequence[int],
    gpus: Sequence[int],
    bandwidth_rows: Sequence[Sequence[float]] | None = None,
) -> list[float]:
    """The L - 1 boundary transfer times of a placement, in pipeline order (seconds).

    Inside region r a hop takes ``A / intra_bandwidth[r]``; between consecutive path regions
    u -> v it takes ``A / B[u, v] + latency[u, v]`` with B the link's nominal capacity
    (reservations are admission control, constraint 6, not rate limits), or its capacity now
    when ``bandwidth_rows`` gives it (a degraded link, semantics §11).
    """
    times, latency = _boundaries(profile, cluster, path, gpus, bandwidth_rows)
    return [t + d for t, d in zip(times, latency)]


def _boundaries(
    profile: JobProfile,
    cluster: Cluster,
    path: Sequence[int],
    gpus: Sequence[int],
    bandwidth_rows: Sequence[Sequence[float]] | None,
    reverse: bool = False,
) -> tuple[list[float], list[float]]:
    """A placement's L - 1 boundaries in pipeline order: each transfer time of ``A`` bytes
    (on the reverse links, ``B[v, u]``, with ``reverse``) and each latency (0 inside a
    region)."""
    a = profile.activation_bytes
    rows = cluster.bandwidth_rows if bandwidth_rows is None else bandwidth_rows
    times: list[float] = []
    latency: list[float] = []
    for i, (r, n) in enumerate(zip(path, gpus)):
        if i:
            u, v = (r, path[i - 1]) if reverse else (path[i - 1], r)
            times.append(a / rows[u][v])
            latency.append(float(cluster.latency[u, v]))
        hop = a / cluster.regions[r].intra_bandwidth
        times.extend([hop] * (n - 1))
        latency.extend([0.0] * (n - 1))
    return times, latency


def placement_iteration_time(
    profile: JobProfile,
    cluster: Cluster,
    path: Sequence[int],
    gpus: Sequence[int],
    bandwidth_rows: Sequence[Sequence[float]] | None = None,
    n_micro: int | None = None,
) -> float:
    """One iteration of ``profile``'s job on a placement (seconds), by the model the profile
    was made under: Eq. (1) on :func:`placement_comm_times` for ``"paper"``; for
    ``"physical"``, :func:`physical_pipeline_iteration_time` with the forward hops on the
    path's links, the backward hops on their reverse links (``A / B[v, u]``) and each
    direction's latencies once. ``bandwidth_rows`` as for :func:`placement_comm_times`;
    ``n_micro`` the micro-batches the pipeline runs (default the job's M; one data-parallel
    copy's share, :func:`replica_micro_batches`, for :func:`job_iteration_time`)."""
    m = profile.n_micro if n_micro is None else n_micro
    if profile.model == "paper":
        comm = placement_comm_times(profile, cluster, path, gpus, bandwidth_rows)
        n = sum(gpus)
        return iteration_time(profile.t_comp(n), comm, n, m)
    fwd, lat_f = _boundaries(profile, cluster, path, gpus, bandwidth_rows)
    bwd, lat_b = _boundaries(profile, cluster, path, gpus, bandwidth_rows, reverse=True)
    n = sum(gpus)
    return physical_pipeline_iteration_time(
        profile.t_comp(n),
        profile.t_bwd(n),
        n,
        m,
        (math.fsum(fwd), max(fwd, default=0.0)),
        (math.fsum(bwd), max(bwd, default=0.0)),
        (math.fsum(lat_f), math.fsum(lat_b)),
    )


def job_iteration_time(
    profile: JobProfile,
    cluster: Cluster,
    placement: Placement,
    bandwidth_rows: Sequence[Sequence[float]] | None = None,
) -> float:
    """One iteration of ``profile``'s job on ``placement`` (seconds), its data-parallel copies
    included (semantics §3e): :func:`placement_iteration_time` of the one pipeline without
    replicas (the very same float); with ``d`` copies, the slowest copy's pipeline running
    ``ceil(M / d)`` micro-batches, then the gradient all-reduce (:func:`allreduce_time`), which
    does not overlap the compute."""
    if not placement.replicas:
        return placement_iteration_time(
            profile, cluster, placement.path, placement.gpus, bandwidth_rows
        )
    m = replica_micro_batches(profile.n_micro, placement.n_replicas)
    slowest = max(
        placement_iteration_time(profile, cluster, p.path, p.gpus, bandwidth_rows, m)
        for p in placement.pipelines
    )
    return slowest + allreduce_time(profile, cluster, placement, bandwidth_rows)


def stage_gradient_bytes(profile: JobProfile, stages: int) -> float:
    """One stage's gradients (bytes) with ``stages`` stages: ``bytes_per_grad * N / L``, in the
    all-reduce's precision (``constants.bytes_per_grad``, 4 by default: the fp32 gradients
    Megatron-LM reduces in bf16 training), the parameters spread evenly over the stages as the
    memory model spreads them (semantics §3a, §3e)."""
    job = profile.job
    return job.constants.bytes_per_grad * job.model.params / stages


def allreduce_time(
    profile: JobProfile,
    cluster: Cluster,
    placement: Placement,
    bandwidth_rows: Sequence[Sequence[float]] | None = None,
) -> float:
    """The gradient all-reduce of one iteration (seconds; 0 for one copy), semantics §3e: every
    stage's ring (:attr:`Placement.ring`) moves one chunk of its gradients
    (:func:`stage_gradient_bytes` / d) along every edge per step, 2 (d - 1) steps
    (:func:`ring_allreduce_time`). An edge inside a region runs at the region's intra
    bandwidth on its own GPUs; the edges of all stages that cross one directed link share it,
    so a step lasts as long as the slowest link's share (its edges' chunks over its capacity,
    or its capacity now when ``bandwidth_rows`` gives it), plus the largest latency of a
    crossed link."""
    d = placement.n_replicas
    if d == 1:
        return 0.0
    cross, intra = placement.ring
    chunk = stage_gradient_bytes(profile, placement.stages) / d
    rows = cluster.bandwidth_rows if bandwidth_rows is None else bandwidth_rows
    step = max((chunk / cluster.regions[r].intra_bandwidth for r in intra), default=0.0)
    latency = 0.0
    for (u, v), edges in cross:
        step = max(step, edges * chunk / rows[u][v])
        latency = max(latency, float(cluster.latency[u, v]))
    return ring_allreduce_time(step + latency, d)


def allreduce_link_bytes(
    profile: JobProfile, placement: Placement
) -> tuple[tuple[tuple[int, int], float], ...]:
    """Bytes the gradient all-reduce sends over each directed cross-region link per iteration
    (its ring edges there times :func:`ring_allreduce_bytes` of one stage's gradients): what it
    books and is billed for (semantics §3e, §10); empty for one copy."""
    d = placement.n_replicas
    if d == 1:
        return ()
    per_edge = ring_allreduce_bytes(stage_gradient_bytes(profile, placement.stages), d)
    return tuple((link, edges * per_edge) for link, edges in placement.ring[0])


def preview_iteration_time(
    profile: JobProfile, cluster: Cluster, path: Sequence[int], gpus: Sequence[int]
) -> float:
    """Eq. (1) for a placement from its hop *types* instead of its L - 1 hops: equal to
    ``iteration_time(t_comp, placement_comm_times(...), L, M)`` up to floating-point rounding
    in the sum. For observation features, where an O(regions) cost matters and the last bit
    does not; the simulator itself uses the exact form. A physical profile is timed exactly
    (:func:`placement_iteration_time`)."""
    if profile.model != "paper":
        return placement_iteration_time(profile, cluster, path, gpus)
    a = profile.activation_bytes
    n = sum(gpus)
    t_comp = profile.t_comp(n)
    total = 0.0
    worst = 0.0
    for i, (r, g) in enumerate(zip(path, gpus)):
        if g > 1:
            hop = a / cluster.regions[r].intra_bandwidth
            total += (g - 1) * hop
            worst = max(worst, hop)
        if i:
            u = path[i - 1]
            hop = a / float(cluster.bandwidth[u, r]) + float(cluster.latency[u, r])
            total += hop
            worst = max(worst, hop)
    return pipeline_iteration_time(t_comp, total, worst, n, profile.n_micro)


def electricity_cost(exec_seconds: float, gpus_price_sum: float, power_kw: float) -> float:
    """Eq. (4): ``C = E * sum_r n_r P_r * power_kw``, E converted to hours; dollars."""
    return exec_seconds / SECONDS_PER_HOUR * gpus_price_sum * power_kw
