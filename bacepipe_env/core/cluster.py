"""Regions and the multi-region cluster (semantics §2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import ScenarioError
from .limits import LIMITS, check_limit, check_matrix
from .network import offdiag_sum
from .units import gbps_to_bytes_per_s
from .validate import require_square_matrix, require_str

__all__ = ["DEFAULT_GPU_MEMORY_BYTES", "DEFAULT_POWER_KW", "Cluster", "Region"]

DEFAULT_POWER_KW = 0.3  # one A6000's board power (semantics §2)
DEFAULT_GPU_MEMORY_BYTES = 48e9  # one A6000's 48 GB (semantics §3a)

_BYTES_PER_GBIT = gbps_to_bytes_per_s(1.0)
_INTRA = LIMITS["regions.intra_gbps"].scaled(_BYTES_PER_GBIT, "bytes/s")
_MEMORY = LIMITS["regions.gpu_memory_gb"].scaled(1e9, "bytes")
# a link up to where a scenario file's range times its bandwidth_scale range can put it
_LINK = LIMITS["links.gbps"].scaled(_BYTES_PER_GBIT * LIMITS["bandwidth_scale"].high, "bytes/s")
_LINK = _LINK
_LATENCY = LIMITS["latency_ms"].scaled(1e-3, "s")
_POWER = LIMITS["constants.power_kw"]


@dataclass(frozen=True)
class Region:
    """One cloud region: ``gpus`` GPUs at ``price`` $/kWh, ``intra_bandwidth`` bytes/s between
    two pipeline stages inside it, ``gpu_memory`` bytes on each GPU, and the grid's ``carbon``
    intensity in gCO2e/kWh (0 when unknown; the built-in scenarios give their countries')."""

    name: str
    gpus: int
    price: float  # $/kWh
    intra_bandwidth: float  # bytes/s
    gpu_memory: float = DEFAULT_GPU_MEMORY_BYTES  # bytes per GPU
    carbon: float = 0.0  # gCO2e/kWh

    def __post_init__(self) -> None:
        require_str("region.name", self.name)
        where = f"region {self.name!r}"
        for attr, key, limit in (
            ("gpus", "gpus", None),
            ("price", "price_usd_per_kwh", None),
            ("intra_bandwidth", "intra_gbps", _INTRA),
            ("gpu_memory", "gpu_memory_gb", _MEMORY),
            ("carbon", "carbon_g_per_kwh", None),
        ):
            value = check_limit(
                f"regions.{key}", getattr(self, attr), field=f"{where}.{attr}", limit=limit
            )
            object.__setattr__(self, attr, value)


@dataclass(frozen=True, eq=False)
class Cluster:
    """K regions, a directed inter-region bandwidth matrix and an optional latency matrix.

    ``bandwidth[u, v]`` is the capacity of the directed link u -> v in bytes/s (may be
    asymmetric; the diagonal is unused). ``latency[u, v]`` is a one-way delay in seconds added
    to every cross-region hop (default zero, as in the paper).
    """

    regions: tuple[Region, ...]
    bandwidth: np.ndarray  # (K, K) bytes/s
    latency: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (K, K) s
    power_kw: float = DEFAULT_POWER_KW  # per GPU

    def __post_init__(self) -> None:
        regions = tuple(self.regions)
        if not regions:
            raise ScenarioError("regions", [], "a cluster needs at least one region")
        for i, r in enumerate(regions):
            if not isinstance(r, Region):
                raise ScenarioError(f"regions[{i}]", r, "must be a Region")
        names = [r.name for r in regions]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ScenarioError("regions", dupes, "region names must be unique")
        k = len(regions)
        object.__setattr__(self, "regions", regions)
        bandwidth = check_matrix(
            "bandwidth", require_square_matrix("bandwidth", self.bandwidth, k), _LINK
        )
        object.__setattr__(self, "bandwidth", bandwidth)
        lat = self.latency if np.size(self.latency) else np.zeros((k, k))
        latency = check_matrix("latency", require_square_matrix("latency", lat, k), _LATENCY)
        object.__setattr__(self, "latency", latency)
        power = check_limit("constants.power_kw", self.power_kw, field="power_kw", limit=_POWER)
        object.__setattr__(self, "power_kw", power)
        # Read on every scheduling decision: build the tuples once.
        object.__setattr__(self, "_names", tuple(r.name for r in regions))
        object.__setattr__(self, "_capacity", tuple(r.gpus for r in regions))
        object.__setattr__(self, "_prices", tuple(r.price for r in regions))
        object.__setattr__(self, "_gpu_memory", tuple(r.gpu_memory for r in regions))
        object.__setattr__(self, "_carbon", tuple(r.carbon for r in regions))
        rows = tuple(tuple(row) for row in self.bandwidth.tolist())
        object.__setattr__(self, "_bandwidth_rows", rows)
        object.__setattr__(self, "_link_capacity", offdiag_sum(rows))

    @property
    def n_regions(self) -> int:
        """Number of regions K."""
        return len(self.regions)

    @property
    def names(self) -> tuple[str, ...]:
        """Region names in index order."""
        return self._names  # type: ignore[attr-defined, no-any-return]

    @property
    def capacity(self) -> tuple[int, ...]:
        """GPU capacity ``G_r`` per region."""
        return self._capacity  # type: ignore[attr-defined, no-any-return]

    @property
    def prices(self) -> tuple[float, ...]:
        """Electricity price ``P_r`` ($/kWh) per region."""
        return self._prices  # type: ignore[attr-defined, no-any-return]

    @property
    def carbon(self) -> tuple[float, ...]:
        """Grid carbon intensity (gCO2e/kWh) per region, the flat price model's."""
        return self._carbon  # type: ignore[attr-defined, no-any-return]

    @property
    def gpu_memory(self) -> tuple[float, ...]:
        """Memory of one GPU (bytes) per region."""
        return self._gpu_memory  # type: ignore[attr-defined, no-any-return]

    @property
    def bandwidth_rows(self) -> tuple[tuple[float, ...], ...]:
        """``bandwidth`` as nested tuples of floats (bytes/s), row u = links out of u."""
        return self._bandwidth_rows  # type: ignore[attr-defined, no-any-return]

    @property
    def link_capacity(self) -> float:
        """Total directed inter-region capacity (bytes/s), the denominator of Eq. (11)."""
        return self._link_capacity  # type: ignore[attr-defined, no-any-return]

    @property
    def total_gpus(self) -> int:
        """Sum of all regions' GPU capacities."""
        return sum(self.capacity)

    @property
    def largest_region(self) -> int:
        """Index of the region with the most GPUs (ties to the lower index); Eq. (13) uses its
        intra-region bandwidth for every hop when it computes K*."""
        caps = self.capacity
        return caps.index(max(caps))

    def index(self, name: str) -> int:
        """Region index of ``name``; a ScenarioError lists the known names otherwise."""
        try:
            return self.names.index(name)
        except ValueError:
            known = ", ".join(self.names)
            raise ScenarioError("region", name, f"unknown region; known: {known}") from None

    @classmethod
    def from_regions(
        cls,
        regions: Sequence[Region],
        bandwidth: np.ndarray | Sequence[Sequence[float]],
        latency: np.ndarray | Sequence[Sequence[float]] | None = None,
        power_kw: float = DEFAULT_POWER_KW,
    ) -> Cluster:
        """Build a cluster; ``latency`` defaults to zeros."""
        lat = np.zeros((len(regions), len(regions))) if latency is None else latency
        # Validation (and conversion to read-only float arrays) happens in __post_init__.
        return cls(tuple(regions), bandwidth, lat, power_kw)  # type: ignore[arg-type]
