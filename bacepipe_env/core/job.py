"""Models and training jobs (semantics §3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ScenarioError
from .job_fields import JOB_FIELDS, check_job_fields
from .limits import LIMITS, check_limit
from .validate import require_int, require_str

_PEAK_FLOPS = LIMITS["constants.peak_tflops"].scaled(1e12, "FLOP/s")

__all__ = ["Job", "ModelSpec", "TrainingConstants"]


@dataclass(frozen=True)
class ModelSpec:
    """A transformer model: ``params`` parameters N, ``n_layers`` layers, hidden size ``hidden``;
    ``active_params`` the parameters one token passes through (a mixture of experts routes
    each token to a few experts; None: all of them, a dense model). Memory holds all ``params``;
    the physical model's compute counts the active ones (semantics §3d)."""

    name: str
    params: float  # N
    n_layers: int
    hidden: int
    active_params: float | None = None  # N_a; None: N

    def __post_init__(self) -> None:
        require_str("model.name", self.name)
        where = f"model {self.name!r}"
        for attr, key in (("params", "params"), ("n_layers", "layers"), ("hidden", "hidden")):
            value = check_limit(f"models.{key}", getattr(self, attr), field=f"{where}.{attr}")
            object.__setattr__(self, attr, value)
        if self.active_params is not None:
            active = check_limit(
                "models.params", self.active_params, field=f"{where}.active_params"
            )
            if active > self.params:
                raise ScenarioError(
                    f"{where}.active_params", active, f"must be at most params ({self.params:g})"
                )
            object.__setattr__(self, "active_params", active)

    @property
    def active(self) -> float:
        """The parameters a token's forward pass multiplies by: ``active_params``, else all."""
        return self.params if self.active_params is None else self.active_params


@dataclass(frozen=True)
class TrainingConstants:
    """The per-job constants of the performance model (semantics §3); all are scenario knobs.

    Defaults: sequence length 2048, micro-batch 1, A6000 dense bf16 peak 154.8 TFLOP/s, model
    FLOP utilisation 0.4, zero per-stage overhead, 2-byte (16-bit) activations and 4-byte (fp32)
    gradients in the data-parallel all-reduce: Megatron-LM all-reduces the gradients of bf16
    training in fp32 unless told otherwise (``megatron/training/arguments.py``: "bfloat16
    requires gradient accumulation and all-reduce to be done in fp32"; ``--grad-reduce-in-bf16``
    turns it off). The memory model
    (semantics §3a, :mod:`bacepipe_env.core.memory`) uses 16 bytes of training state per
    parameter and 34 bytes per token per hidden unit for one layer's working activations.
    """

    seq_len: int = 2048  # S, tokens
    micro_batch: int = 1  # m, samples
    peak_flops: float = 154.8e12  # FLOP/s per GPU
    mfu: float = 0.4
    stage_overhead: float = 0.0  # c0, seconds per stage per micro-batch
    bytes_per_value: int = 2  # 16-bit activations at the stage boundaries
    bytes_per_grad: int = 4  # fp32 gradients in the data-parallel all-reduce (Megatron-LM, bf16)
    bytes_per_param: float = 16.0  # bf16 weights + grads, fp32 master weights + Adam m, v
    layer_activation_factor: float = 34.0  # bytes per token per hidden unit, one layer

    def __post_init__(self) -> None:
        for attr, key, limit in (
            ("seq_len", "seq_len", None),
            ("micro_batch", "micro_batch", None),
            ("peak_flops", "peak_tflops", _PEAK_FLOPS),
            ("mfu", "mfu", None),
            ("stage_overhead", "stage_overhead_s", None),
            ("bytes_per_value", "bytes_per_value", None),
            ("bytes_per_grad", "bytes_per_grad", None),
            ("bytes_per_param", "bytes_per_param", None),
            ("layer_activation_factor", "layer_activation_factor", None),
        ):
            value = check_limit(
                f"constants.{key}", getattr(self, attr), field=f"constants.{attr}", limit=limit
            )
            object.__setattr__(self, attr, value)


@dataclass(frozen=True)
class Job:
    """One LLM training job: a model trained with global batch ``batch`` (samples) for
    ``epochs`` passes over a dataset of ``samples`` samples, submitted at ``submit_time`` s.

    ``min_replicas`` and ``max_replicas`` bound the data-parallel copies of its pipeline it may
    run (semantics §3e); ``max_replicas`` None takes the world's (``max_replicas``, 1 unless
    set: one pipeline, the paper's jobs). ``deadline`` (s from time 0) or ``slack`` (a multiple
    of its isolated run time after its submission) say when it is due, at most one of them
    (semantics §15); None: no deadline."""

    job_id: int
    model: ModelSpec
    dataset: str
    samples: int
    batch: int
    submit_time: float = 0.0  # s
    epochs: int = 1
    constants: TrainingConstants = field(default_factory=TrainingConstants)
    name: str = ""
    min_replicas: int = 1
    max_replicas: int | None = None
    deadline: float | None = None  # s
    slack: float | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "job_id", require_int("job.job_id", self.job_id, minimum=0))
        where = f"job {self.job_id}"
        if not isinstance(self.model, ModelSpec):
            raise ScenarioError(f"{where}.model", self.model, "must be a ModelSpec")
        require_str(f"{where}.dataset", self.dataset)
        set_(
            self, "samples", check_limit("datasets.samples", self.samples, field=f"{where}.samples")
        )
        set_(self, "batch", check_limit("jobs.batch", self.batch, field=f"{where}.batch"))
        if not isinstance(self.constants, TrainingConstants):
            raise ScenarioError(f"{where}.constants", self.constants, "must be TrainingConstants")
        if self.batch % self.constants.micro_batch:
            raise ScenarioError(
                f"{where}.batch",
                self.batch,
                f"must be a multiple of the micro-batch size {self.constants.micro_batch}",
            )
        check_job_fields(self, where)  # submit time, epochs, replicas: their JOB_FIELDS rows
        if not self.name:
            set_(self, "name", f"J{self.job_id}")

    @classmethod
    def trusted(
        cls,
        *,
        job_id: int,
        model: ModelSpec,
        dataset: str,
        samples: int,
        batch: int,
        constants: TrainingConstants,
        **fields: Any,
    ) -> Job:
        """Build a job from values already validated (by a compiled scenario template),
        skipping the checks of ``__post_init__`` (what makes resets cheap). ``fields`` are
        attributes of :data:`~bacepipe_env.core.job_fields.JOB_FIELDS` (submit_time, epochs,
        name, min_replicas, max_replicas, ...), in the Job's units; the rest take the table's
        defaults."""
        job = object.__new__(cls)
        set_ = object.__setattr__
        set_(job, "job_id", job_id)
        set_(job, "model", model)
        set_(job, "dataset", dataset)
        set_(job, "samples", samples)
        set_(job, "batch", batch)
        set_(job, "constants", constants)
        for attr, row in JOB_FIELDS.items():
            set_(job, attr, fields.pop(attr, row.default))
        if fields:
            raise TypeError(f"Job.trusted() got unknown job fields {sorted(fields)}")
        if not job.name:
            set_(job, "name", f"J{job_id}")
        return job
