"""Registration of the environment ids, done when ``bacepipe_env`` is imported (idempotent).

Each id registers its constructor kwargs and a step limit, ``max_episode_steps``, that
Gymnasium's ``TimeLimit`` wrapper enforces (``truncated`` comes from it, as for Gymnasium's own
environments). The limit only guards against runaway episodes: each step places a job or waits
for an event, so an episode needs at most about one step per job plus one per wait.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ENTRY_POINT", "ENV_IDS", "MAX_EPISODE_STEPS", "register_envs"]

ENTRY_POINT = "bacepipe_env.envs.geopipe:GeoPipeEnv"

#: id -> the kwargs ``gym.make(id)`` passes to :class:`~bacepipe_env.envs.geopipe.GeoPipeEnv`.
ENV_IDS: dict[str, dict[str, Any]] = {
    "bacepipe_env/GeoPipe-v1": {"scenario": "paper", "max_queue": 16},
    "bacepipe_env/GeoPipe-Fig1-v1": {"scenario": "fig1", "max_queue": 4},
    "bacepipe_env/GeoPipe-Random-v1": {"scenario": "random", "max_queue": 16, "max_regions": 8},
}

#: id -> Gymnasium's ``max_episode_steps`` (the ``TimeLimit`` of ``gym.make(id)``).
MAX_EPISODE_STEPS: dict[str, int] = {
    "bacepipe_env/GeoPipe-v1": 1000,
    "bacepipe_env/GeoPipe-Fig1-v1": 100,
    "bacepipe_env/GeoPipe-Random-v1": 1000,
}


def register_envs() -> None:
    """Register every id of :data:`ENV_IDS` with Gymnasium, unless already registered."""
    from gymnasium.envs.registration import register, registry

    for env_id, kwargs in ENV_IDS.items():
        if env_id not in registry:
            register(
                id=env_id,
                entry_point=ENTRY_POINT,
                kwargs=dict(kwargs),
                max_episode_steps=MAX_EPISODE_STEPS[env_id],
            )
