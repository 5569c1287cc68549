"""The observation encoder: :class:`ObservationEncoder` computes an episode's static arrays
once and, at each decision, runs the ``encode`` function of each of its active
:data:`~.table.FEATURES` (the functions live by concept in :mod:`.cluster`, :mod:`.pending`,
:mod:`.running`, :mod:`.grid`, :mod:`.faults` and :mod:`.announced`; they read and refresh the
caches this class holds)."""

from __future__ import annotations

import math
from collections.abc import Collection

import numpy as np

from ...core.scenario import Scenario
from ...core.units import GBPS_PER_BYTE_PER_S, SECONDS_PER_HOUR
from ..config import ObsScales
from .decision import Decision
from .state import EncoderState
from .table import FEATURES, active_features

__all__ = ["ObservationEncoder"]


def _log_gbps(bytes_per_s: np.ndarray, sc: ObsScales) -> np.ndarray:
    """``log10(1 + Gbps) / log_gbps`` of a float64 array of bytes/s."""
    out: np.ndarray = np.log10(1.0 + bytes_per_s * GBPS_PER_BYTE_PER_S) / sc.log_gbps
    return out


class ObservationEncoder(EncoderState):
    """Turns decisions into observation arrays, following :data:`FEATURES`.

    :meth:`start` computes an episode's static parts (capacities, prices, link capacities,
    per-job constants) once; :meth:`encode` fills in the rest at each decision. Each array is
    allocated at the shape its :class:`~.table.Feature` resolves to (:attr:`shapes`), so the
    table stays the one place a shape is written.
    """

    def __init__(
        self,
        max_queue: int,
        max_regions: int,
        scales: ObsScales,
        enabled: Collection[str] = (),
        preempt_window: int = 0,
        announce_window: int = 0,
        replica_choices: int = 0,
    ) -> None:
        self.max_queue = max_queue
        self.max_regions = max_regions
        self.preempt_window = preempt_window
        self.announce_window = announce_window
        self.replica_choices = replica_choices
        self.scales = scales
        self.deadline_features = "deadline_features" in enabled
        self.shapes = {
            f.name: f.resolve(
                max_queue, max_regions, preempt_window, announce_window, replica_choices, enabled
            )
            for f in FEATURES
        }
        self.features = active_features(enabled)  # the arrays this encoder fills
        self._encoders = tuple((f.name, f.encode) for f in self.features)
        self._cluster: object = None  # the cluster the static arrays were made for
        self._jobs: object = None  # the jobs (with _cluster) the job tables were made for
        self.grid_hour = None
        self.grid_obs = np.zeros(self.shapes["grid"], dtype=np.float32)

    def start(self, scenario: Scenario) -> None:
        """Static parts of an episode's observations."""
        cl, sc = scenario.cluster, self.scales
        same_cluster = cl is self._cluster
        if not same_cluster:  # a named scenario keeps its cluster: so do its arrays
            self._cluster = cl
            k = cl.n_regions
            self.k = k
            self.capacity = np.array(cl.capacity, dtype=np.float64)
            self.capacity_list = [float(c) for c in cl.capacity]
            # the running array's log columns' divisors: log10(1 + jobs) / 2, hours / lh
            self.running_log_scale = np.array([[2.0], [sc.log_hours], [sc.log_hours]])
            self.total_gpus = float(cl.total_gpus)
            regions = np.zeros(self.shapes["regions"], dtype=np.float32)
            regions[:k, 0] = 1.0
            regions[:k, 2] = self.capacity / sc.gpus
            regions[:k, 3] = np.array(cl.prices) / sc.price
            intra = np.array([r.intra_bandwidth for r in cl.regions])
            regions[:k, 4] = np.log10(1.0 + intra * GBPS_PER_BYTE_PER_S)
            regions[:k, 4] /= sc.log_gbps  # in float32, as it always was
            self.regions_static = regions
            bw = np.zeros(self.shapes["bandwidth"], dtype=np.float32)
            bw[1, :k, :k] = _log_gbps(cl.bandwidth, sc)
            self.bandwidth_static = bw
            self.nominal = np.array(cl.bandwidth_rows, dtype=np.float64)
            healthy = np.zeros(self.shapes["link_faults"], dtype=np.float32)
            healthy[0, :k, :k] = 1.0
            healthy[0, range(k), range(k)] = 0.0  # the diagonal
            self.healthy_links = healthy
            self.no_outage = np.zeros(self.shapes["region_faults"], dtype=np.float32)
        self.bandwidth_rows = None
        self.bandwidth_obs = self.bandwidth_static
        self.grid_hour = None  # a new episode: a new tariff, maybe a new start hour
        self.down_key, self.down_obs = None, self.no_outage
        self.links_key, self.links_obs = None, self.healthy_links
        self.running_key = None
        if same_cluster and scenario.jobs is self._jobs:
            return  # a fixed scenario's next episode: the same jobs, so the same job tables
        self._jobs = scenario.jobs
        lg, lh = sc.log_gbps, sc.log_hours
        self.job_static, self.k_star, self.job_row = {}, {}, {}
        for j, p in scenario.profiles.items():  # they never change during an episode
            self.job_static[j] = (
                math.log10(1.0 + p.single_gpu_exec / SECONDS_PER_HOUR) / lh,
                math.log10(1.0 + p.min_bandwidth_kstar * GBPS_PER_BYTE_PER_S) / lg,
                p.k_star / sc.gpus,
            )
            self.k_star[j] = p.k_star
            self.job_row[j] = len(self.job_row)
        # the same per job as float64 arrays, row job_row[j]: E(1), b(K*), then the static
        # queue columns 3-5, then K* (what the queue array gathers with numpy)
        profiles = scenario.profiles
        self.job_table = np.array(
            [
                (p.single_gpu_exec, p.min_bandwidth_kstar, *self.job_static[j], p.k_star)
                for j, p in profiles.items()
            ],
            dtype=np.float64,
        ).reshape(len(profiles), 6)

    def encode(self, d: Decision) -> dict[str, np.ndarray]:
        """The float arrays of this encoder's :data:`FEATURES` at decision ``d``."""
        return {name: encode(self, d) for name, encode in self._encoders}
