"""Registration of the environment ids, done when ``bacepipe_env`` is imported (idempotent)."""

from __future__ import annotations

from typing import Any

__all__ = ["ENV_IDS", "register_envs"]

_ENTRY = "bacepipe_env.envs.geopipe:GeoPipeEnv"

#: id -> kwargs. ``max_steps`` truncates runaway episodes (a learned agent cannot loop: each step
#: places a job or waits for an event, so an episode has at most about 2 x jobs steps).
ENV_IDS: dict[str, dict[str, Any]] = {
    "bacepipe_env/GeoPipe-v1": {"scenario": "paper", "max_queue": 16, "max_steps": 1000},
    "bacepipe_env/GeoPipe-Fig1-v1": {"scenario": "fig1", "max_queue": 4, "max_steps": 100},
    "bacepipe_env/GeoPipe-Random-v1": {
        "scenario": "random",
        "max_queue": 16,
        "max_regions": 8,
        "max_steps": 1000,
    },
}


def register_envs() -> None:
    """Register every id of :data:`ENV_IDS` with Gymnasium, unless already registered."""
    from gymnasium.envs.registration import register, registry

    for env_id, kwargs in ENV_IDS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=_ENTRY, kwargs=dict(kwargs))
