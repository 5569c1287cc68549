"""GPU memory: what one pipeline stage holds, and each job's memory floor (semantics §3a).

The paper is silent on memory; physics is not. A stage is one GPU holding contiguous whole
layers; with ``L`` stages the largest holds ``ceil(n_layers / L)`` layers. One stage needs

- **training state** ``bytes_per_param * N / n_layers`` bytes per layer it holds (default 16:
  bf16 weights and gradients, fp32 master weights and Adam's two moments; the embedding and
  output layers are spread evenly over the layers);
- **stashed activations**: GPipe with re-materialisation (Huang et al., 2019) keeps only each
  stage's input for every in-flight micro-batch until its backward pass, and all ``M``
  micro-batches are in flight before the first backward, so ``M * A`` bytes with ``A`` the
  boundary activation of Eq. (1);
- **working activations** of the one layer being recomputed for one micro-batch:
  ``layer_activation_factor * m * S * h`` bytes (default 34, the per-layer activation bytes per
  token per hidden unit of Korthikanti et al., 2022, with the attention-score term dropped as
  fused attention kernels do).

The *memory floor* of a job on a region is the smallest ``L`` whose largest stage fits in that
region's GPU; a placement fits when its GPU count reaches the floor of every region on its
path. Llama-3.1-70B: 14.0 GB of state per layer, 4.29 GB stashed, 0.57 GB working, so three
layers fit in 48 GB and the floor is ``ceil(80 / 3) = 27`` GPUs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from .job import Job

__all__ = [
    "ACTIVATIONS",
    "MODEL_RESERVE_GB",
    "StageProfile",
    "largest_feasible_gpus",
    "layer_bytes",
    "layers_per_stage",
    "memory_floor",
    "memory_floors",
    "stage_memory_bytes",
    "stage_overhead_bytes",
    "state_bytes_per_layer",
]


#: GPU memory per GPU out of the model's reach (GB), by performance model: none in the
#: paper's world (its published floors are unchanged); 2 GB in the physical one, for the CUDA
#: context and kernels' workspace (about 0.5-1 GB), NCCL's communication buffers and the
#: caching allocator's fragmentation, which PyTorch training runs measure in the 1-3 GB range
#: (an assumption stated as data; ``gpu_reserve_gb`` sets it).
MODEL_RESERVE_GB: dict[str, float] = {"paper": 0.0, "physical": 2.0}


class StageProfile(Protocol):
    """What the memory model reads of a job's profile: the job (its model and training
    constants), its micro-batches ``M`` and its boundary activation ``A`` (bytes).
    :class:`~bacepipe_env.core.perf.JobProfile` is one; the performance model builds on this
    module, not the other way round."""

    @property
    def job(self) -> Job: ...
    @property
    def n_micro(self) -> int: ...
    @property
    def activation_bytes(self) -> float: ...


def state_bytes_per_layer(profile: StageProfile) -> float:
    """Training state of one layer: ``bytes_per_param * N / n_layers`` bytes."""
    job = profile.job
    return job.constants.bytes_per_param * job.model.params / job.model.n_layers


def _working_bytes(profile: StageProfile) -> float:
    """One layer's working activations for one micro-batch (bytes)."""
    c = profile.job.constants
    return c.layer_activation_factor * c.micro_batch * c.seq_len * profile.job.model.hidden


#: What a stage keeps of its activations (semantics §3a, §3d): ``"recompute"`` (the default)
#: only each in-flight micro-batch's stage input, plus one layer's working set, the rest
#: recomputed in the backward pass; ``"all"`` every layer's activations for every in-flight
#: micro-batch (no recomputation); ``"none"`` nothing (state-only floors, a variant for
#: checking how a claim depends on the memory model).
ACTIVATIONS = ("recompute", "all", "none")


def layer_bytes(profile: StageProfile, activations: str = "recompute") -> float:
    """What each layer of a stage adds (bytes): its training state, and when every layer
    keeps its activations (``"all"``) those of every in-flight micro-batch as well."""
    state = state_bytes_per_layer(profile)
    if activations == "all":
        return state + profile.n_micro * _working_bytes(profile)
    return state


def stage_overhead_bytes(profile: StageProfile, activations: str = "recompute") -> float:
    """What a stage holds besides its layers' state: with recomputation, ``M * A`` stashed
    boundary activations plus one layer's working activations for one micro-batch (bytes);
    otherwise nothing more (``"all"``: every layer keeps its own, :func:`layer_bytes`)."""
    if activations != "recompute":
        return 0.0
    return profile.n_micro * profile.activation_bytes + _working_bytes(profile)


def stage_memory_bytes(profile: StageProfile, layers: int, activations: str = "recompute") -> float:
    """Memory of a stage holding ``layers`` layers (bytes)."""
    return layers * layer_bytes(profile, activations) + stage_overhead_bytes(profile, activations)


def layers_per_stage(
    profile: StageProfile, gpu_memory: float, activations: str = "recompute"
) -> int:
    """The most layers one stage can hold in ``gpu_memory`` bytes (0 if not even one fits),
    capped at the model's layer count."""
    room = gpu_memory - stage_overhead_bytes(profile, activations)
    if room < 0.0:
        return 0
    return min(profile.job.model.n_layers, math.floor(room / layer_bytes(profile, activations)))


def memory_floor(profile: StageProfile, gpu_memory: float, activations: str = "recompute") -> int:
    """The smallest pipeline size whose largest stage fits in ``gpu_memory`` bytes; the layer
    count plus one (no pipeline can fit) when a single layer does not fit."""
    n_layers = profile.job.model.n_layers
    fit = layers_per_stage(profile, gpu_memory, activations)
    if fit < 1:
        return n_layers + 1
    return math.ceil(n_layers / fit)


def memory_floors(
    profile: StageProfile, gpu_memory: Sequence[float], activations: str = "recompute"
) -> tuple[int, ...]:
    """:func:`memory_floor` per region, for a cluster whose GPUs hold ``gpu_memory`` bytes
    (less any runtime reserve: the caller's)."""
    by_size: dict[float, int] = {}
    out = []
    for mem in gpu_memory:
        floor = by_size.get(mem)
        if floor is None:
            floor = by_size[mem] = memory_floor(profile, mem, activations)
        out.append(floor)
    return tuple(out)


def largest_feasible_gpus(
    floors: Sequence[int], capacity: Sequence[int], k_star: int
) -> tuple[int, int]:
    """``(best, largest)`` over every set of regions, ignoring bandwidth: ``largest`` is the
    biggest pipeline any set could host (at most K*, on regions where one layer fits), and
    ``best`` the biggest one that also reaches the floor of every region in its set (0 if
    none). A job with ``best == 0`` can never start."""
    usable = [(f, c) for f, c in zip(floors, capacity) if f <= k_star]
    largest = min(k_star, sum(c for _, c in usable))
    best = 0
    total = 0
    for f, c in sorted(usable):  # regions by floor: each prefix is the best set at that floor
        total += c
        g = min(k_star, total)
        if g >= f:
            best = max(best, g)
    return best, largest
