"""Learned orderers: Stable-Baselines3 models behind the same ``predict`` protocol as the
heuristic agents of :mod:`bacepipe_env.envs.agents`.

The code lives in :mod:`bacepipe_env.train.sb3`, which the wheel installs; this folder keeps
the checkout's ``from agents import load_agent`` working with the very same objects. Needs the
``train`` extra (stable-baselines3, sb3-contrib, torch) to load a model; ``bacepipe_env``
itself reaches it only through the ``bacepipe_env.agents`` entry point.
"""

from bacepipe_env.train.sb3 import (
    ALGOS,
    LAYOUT_KEYS,
    AgentLoadError,
    SB3Agent,
    algo_class,
    is_learned_spec,
    layout_kwargs,
    load_agent,
    register,
)

__all__ = [
    "ALGOS",
    "LAYOUT_KEYS",
    "AgentLoadError",
    "SB3Agent",
    "algo_class",
    "is_learned_spec",
    "layout_kwargs",
    "load_agent",
    "register",
]
