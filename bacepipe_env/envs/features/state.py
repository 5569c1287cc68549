"""What an observation array's function reads of the encoder: :class:`EncoderState`, the
window sizes, scales and the episode's cached arrays that
:class:`~.encoder.ObservationEncoder` fills in. The array modules read this, not the encoder,
so that the encoder can import the table of features that lists them."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config import ObsScales

__all__ = ["EncoderState"]


class EncoderState:
    """The attributes an observation array's function reads (annotations only; the encoder
    sets them: the sizes at construction, the rest at each episode's start or decision)."""

    max_queue: int
    max_regions: int
    preempt_window: int
    announce_window: int
    replica_choices: int
    deadline_features: bool  # the queue and announced rows end with the deadline columns
    scales: ObsScales
    shapes: dict[str, tuple[int, ...]]  # feature name -> its array's shape (every feature)
    k: int  # the episode's regions
    capacity: np.ndarray  # (k,) GPUs, float64
    capacity_list: list[float]  # the same as Python floats
    running_log_scale: np.ndarray  # (3, 1) divisors of the ``running`` array's log columns
    total_gpus: float
    regions_static: np.ndarray  # (max_regions, 5): every column but free_frac
    bandwidth_static: np.ndarray  # (2, max_regions, max_regions): the capacity layer
    bandwidth_rows: object  # the residual rows the cached layer was made from
    bandwidth_obs: np.ndarray  # (2, max_regions, max_regions), the cached array
    job_static: dict[int, tuple[float, float, float]]  # job id -> queue columns 3-5
    job_row: dict[int, int]  # job id -> its row of job_table
    job_table: np.ndarray  # (jobs, 6) float64: E(1), b(K*), queue columns 3-5, K*
    k_star: dict[int, int]  # job id -> K*
    grid_hour: Any  # the tariff hour (and active price changes) grid_obs holds; None: not yet
    grid_obs: np.ndarray  # (max_regions, 2), the cached ``grid`` array
    nominal: np.ndarray  # (k, k) the links' nominal capacity (bytes/s), float64
    healthy_links: np.ndarray  # (1, max_regions, max_regions): ``link_faults`` without faults
    no_outage: np.ndarray  # (max_regions, 1): ``region_faults`` without faults (zeros)
    down_key: object  # the down_regions tuple down_obs was made from (None: not yet)
    down_obs: np.ndarray  # (max_regions, 1), the cached ``region_faults`` array
    links_key: object  # the link_capacity_rows links_obs was made from (None: not yet)
    links_obs: np.ndarray  # (1, max_regions, max_regions), the cached ``link_faults`` array
    running_key: object  # (time, running ids) running_obs was made at (None: not yet)
    running_obs: tuple[np.ndarray, np.ndarray]  # the cached ``running`` and ``release`` arrays
