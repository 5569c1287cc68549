"""Ordering and placement policies, and the (ordering, placement) pairs that make a policy.

``make_policy(name, seed=...)`` builds any named policy (``"bace-pipe"``, ``"sjf"``,
``"sjf+finish-aware"``, ...) and ``policy_names()`` lists them. Both live in
:mod:`bacepipe_env.policies.registry`, the one registry of the parts, and are read from it on
first use: the registry loads the plugins' machinery (``importlib.metadata``, 44 modules),
which ``import bacepipe_env`` need not pay for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .bace_pipe import PathfinderPlacement, PriorityOrdering, bace_pipe
from .base import FCFSOrdering, Policy

if TYPE_CHECKING:
    from .registry import make_policy, policy_names

__all__ = [
    "FCFSOrdering",
    "PathfinderPlacement",
    "Policy",
    "PriorityOrdering",
    "bace_pipe",
    "make_policy",
    "policy_names",
]

#: The names read from :mod:`.registry` when first asked for.
_FROM_REGISTRY = ("make_policy", "policy_names")


def __getattr__(name: str) -> Any:
    """``make_policy`` and ``policy_names``, from :mod:`bacepipe_env.policies.registry`."""
    if name in _FROM_REGISTRY:
        from . import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names, the registry's re-exports included."""
    return sorted({*globals(), *_FROM_REGISTRY})
