"""Learned orderers: Stable-Baselines3 models behind the same ``predict`` protocol as the
heuristic agents of :mod:`bacepipe_env.envs.agents`.

Needs the ``train`` extra (stable-baselines3, sb3-contrib, torch); ``bacepipe_env`` itself
never imports this package unless a learned policy is asked for.
"""

from .sb3 import (
    ALGOS,
    LAYOUT_KEYS,
    AgentLoadError,
    SB3Agent,
    is_learned_spec,
    layout_kwargs,
    load_agent,
)

__all__ = [
    "ALGOS",
    "LAYOUT_KEYS",
    "AgentLoadError",
    "SB3Agent",
    "is_learned_spec",
    "layout_kwargs",
    "load_agent",
]
