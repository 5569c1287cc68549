"""Every named policy of the paper's evaluation, behind stable names.

``make_policy(name, seed=...)`` returns a fresh :class:`Policy`; ``policy_names()`` lists
them in the order tables show them. ``bacepipe policies`` prints the same list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ValidationError
from .bace_pipe import PathfinderPlacement, PriorityOrdering
from .base import FCFSOrdering, Policy
from .baselines import RandomOrdering, RulePlacement, SJFOrdering
from .oracle import OraclePolicy, StaticOrdering

__all__ = [
    "PolicyInfo",
    "ablation_names",
    "baseline_names",
    "make_policy",
    "policy_info",
    "policy_names",
]


@dataclass(frozen=True)
class PolicyInfo:
    """A registry entry: the policy's name, a one-line description and its factory."""

    name: str
    description: str
    factory: Callable[[int], Policy]
    oracle: bool = False  # sees what a scheduler cannot (future arrivals); not in "all"


def _pair(
    name: str, ordering: Callable[[int], object], placement: Callable[[], object]
) -> Callable[[int], Policy]:
    def make(seed: int) -> Policy:
        return Policy(name, ordering(seed), placement())  # type: ignore[arg-type]

    return make


_ENTRIES = [
    PolicyInfo(
        "bace-pipe",
        "BACE-Pipe: dynamic priority + Pathfinder + Cost-Min",
        _pair("bace-pipe", lambda s: PriorityOrdering(), PathfinderPlacement),
    ),
    PolicyInfo(
        "lcf",
        "Lowest-Cost-First: FCFS, the cheapest region with a free GPU",
        _pair("lcf", lambda s: FCFSOrdering(), lambda: RulePlacement("lcf")),
    ),
    PolicyInfo(
        "ldf",
        "Lowest-Delay-First: FCFS, the region with the most free GPUs",
        _pair("ldf", lambda s: FCFSOrdering(), lambda: RulePlacement("ldf")),
    ),
    PolicyInfo(
        "cr-lcf",
        "Cross-Region LCF: FCFS, regions by ascending price",
        _pair("cr-lcf", lambda s: FCFSOrdering(), lambda: RulePlacement("cr-lcf")),
    ),
    PolicyInfo(
        "cr-ldf",
        "Cross-Region LDF: FCFS, largest region then widest links",
        _pair("cr-ldf", lambda s: FCFSOrdering(), lambda: RulePlacement("cr-ldf")),
    ),
    PolicyInfo(
        "no-priority",
        "Ablation w/o Priority: FCFS + Pathfinder + Cost-Min",
        _pair("no-priority", lambda s: FCFSOrdering(), PathfinderPlacement),
    ),
    PolicyInfo(
        "no-pathfinder",
        "Ablation w/o Pathfinder: priority + CR-LDF path + Cost-Min",
        _pair(
            "no-pathfinder", lambda s: PriorityOrdering(), lambda: RulePlacement("cr-ldf+cost-min")
        ),
    ),
    PolicyInfo(
        "no-costmin",
        "Ablation w/o Cost-Min: priority + Pathfinder + even spread",
        _pair("no-costmin", lambda s: PriorityOrdering(), lambda: RulePlacement("pathfinder+even")),
    ),
    PolicyInfo(
        "fcfs",
        "FCFS order + BACE-Pipe placement (same pair as no-priority)",
        _pair("fcfs", lambda s: FCFSOrdering(), PathfinderPlacement),
    ),
    PolicyInfo(
        "sjf",
        "Shortest E(1) first + BACE-Pipe placement",
        _pair("sjf", lambda s: SJFOrdering(), PathfinderPlacement),
    ),
    PolicyInfo(
        "random",
        "Random order (seeded) + BACE-Pipe placement",
        _pair("random", lambda s: RandomOrdering(s), PathfinderPlacement),
    ),
    PolicyInfo(
        "oracle",
        "Oracle: the best static job order (sees future arrivals; at most 8 jobs, ~10 s)",
        lambda s: OraclePolicy("oracle", StaticOrdering(()), PathfinderPlacement()),
        oracle=True,
    ),
]
_BY_NAME = {e.name: e for e in _ENTRIES}


def policy_names(include_oracles: bool = False) -> list[str]:
    """Registered policy names in display order; oracles only when asked for."""
    return [e.name for e in _ENTRIES if include_oracles or not e.oracle]


def baseline_names() -> list[str]:
    """BACE-Pipe and the four baselines of the paper's Fig. 4."""
    return ["bace-pipe", "lcf", "ldf", "cr-lcf", "cr-ldf"]


def ablation_names() -> list[str]:
    """BACE-Pipe and its three ablations (the paper's Fig. 8)."""
    return ["bace-pipe", "no-priority", "no-pathfinder", "no-costmin"]


def policy_info(name: str) -> PolicyInfo:
    """The registry entry of ``name``; a ValidationError lists the valid names otherwise."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValidationError(
            "policy",
            name,
            f"unknown policy; choose from: {', '.join(policy_names(include_oracles=True))}",
        ) from None


def make_policy(name: str, *, seed: int = 0) -> Policy:
    """A fresh policy by name; ``seed`` seeds policies with randomness (``random``)."""
    return policy_info(name).factory(seed)
