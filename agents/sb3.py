"""``agents.sb3`` from a checkout: the same module objects as :mod:`bacepipe_env.train.sb3`."""

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
