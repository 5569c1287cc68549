"""Configuration of the Gymnasium environment: observation scales and the reward."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.validate import require_float

__all__ = ["ObsScales", "RewardConfig"]


@dataclass(frozen=True)
class ObsScales:
    """Constants that bring observation features to O(1) for any scenario.

    GPU counts are divided by ``gpus``, prices by ``price`` ($/kWh); bandwidth enters as
    ``log10(1 + Gbps) / log_gbps`` and durations as ``log10(1 + hours) / log_hours``, so that
    1 Gbps to 100 Gbps and one hour to 10,000 hours both land in [0, 1]-ish ranges.
    """

    gpus: float = 128.0
    price: float = 0.35
    log_gbps: float = 2.0
    log_hours: float = 4.0

    def __post_init__(self) -> None:
        for name in ("gpus", "price", "log_gbps", "log_hours"):
            object.__setattr__(
                self, name, require_float(f"scales.{name}", getattr(self, name), positive=True)
            )


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the per-step reward.

    ``r_t = -(jct_weight * dJ_t / (N * jct_scale) + cost_weight * dC_t / cost_scale)``
    ``- illegal_penalty * [action was illegal]``, where ``dJ_t`` is the job-seconds spent in the
    system and ``dC_t`` the electricity cost incurred since the previous decision. The episode's
    return is therefore ``-(jct_weight * avg_JCT / jct_scale + cost_weight * total_cost /
    cost_scale) - penalties``. The scales are set per episode from its jobs (see the docs).
    """

    jct_weight: float = 1.0
    cost_weight: float = 0.25
    illegal_penalty: float = 0.0

    def __post_init__(self) -> None:
        for name in ("jct_weight", "cost_weight", "illegal_penalty"):
            object.__setattr__(
                self, name, require_float(f"reward.{name}", getattr(self, name), minimum=0.0)
            )
