"""The one registry of orderings, placements, admission and preemption rules and the named
policies built from them.

- ``make_policy(name, seed=...)`` returns a fresh :class:`Policy`; ``policy_names()`` lists
  them in the order tables show them (``bacepipe policies`` prints the same list).
- ``make_ordering``, ``make_placement`` and ``make_admission`` build the parts by name; the
  simulator, the Gymnasium environment and the heuristic agents all get them here.

A policy is one entry of :data:`_POLICIES`: its name, a description, an ordering and a
placement. Adding a baseline is one file with its ordering or placement and one entry here
(``docs/extending.md`` walks through an example).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..core.admission import ADMISSION_RULES, make_admission
from ..core.preemption import PREEMPTION_RULES, check_preemption, make_preemption
from ..core.simulator import OrderingPolicy, PlacementPolicy
from ..errors import ValidationError, choices
from .bace_pipe import PathfinderPlacement, PriorityOrdering
from .base import FCFSOrdering, Policy
from .baselines import PLACEMENT_RULES, RandomOrdering, RulePlacement, SJFOrdering
from .oracle import OraclePolicy, StaticOrdering
from .rollout import PREFIX as ROLLOUT_PREFIX
from .rollout import (
    Objective,
    RolloutPlanner,
    RolloutPolicy,
    describe,
    is_rollout,
    parse_rollout,
)

__all__ = [
    "ADMISSION_RULES",
    "ORDERINGS",
    "PLACEMENTS",
    "PREEMPTION_RULES",
    "PolicyInfo",
    "ablation_names",
    "baseline_names",
    "make_admission",
    "make_ordering",
    "make_placement",
    "make_planner",
    "make_policy",
    "make_preemption",
    "policy_info",
    "policy_names",
    "register_policy",
    "split_policies",
]

OrderingFactory = Callable[[int], OrderingPolicy]  # seed -> a fresh ordering
PlacementFactory = Callable[[], PlacementPolicy]

#: Ordering name -> factory of a fresh ordering (the seed seeds ``random``).
ORDERINGS: dict[str, OrderingFactory] = {
    "priority": lambda seed: PriorityOrdering(),
    "fcfs": lambda seed: FCFSOrdering(),
    "sjf": lambda seed: SJFOrdering(),
    "random": lambda seed: RandomOrdering(seed),
}


def _rule(name: str) -> PlacementFactory:
    return lambda: RulePlacement(name)


#: Placement name -> factory. "cr-ldf+cost-min" is the w/o Pathfinder ablation's placement,
#: "pathfinder+even" the w/o Cost-Min ablation's.
PLACEMENTS: dict[str, PlacementFactory] = {
    "pathfinder": PathfinderPlacement,
    "pathfinder+partial": lambda: PathfinderPlacement(partial_take=True),
    **{name: _rule(name) for name in PLACEMENT_RULES},
}


@dataclass(frozen=True)
class PolicyInfo:
    """A registry entry: the policy's name, a one-line description, its ordering (by name in
    :data:`ORDERINGS`, or a factory) and placement (by name in :data:`PLACEMENTS`, or a
    factory), the admission rule it waits by (None: the scenario's, semantics §3b) and the
    preemption rule it stops running jobs by (None: the scenario's, semantics §3c)."""

    name: str
    description: str
    ordering: str | OrderingFactory
    placement: str | PlacementFactory
    oracle: bool = False  # sees what a scheduler cannot (future arrivals); not in "all"
    admission: str | None = None
    preemption: str | None = None
    build: Callable[[int], Policy] | None = None  # seed -> the policy, when not the pair's

    def make_ordering(self, seed: int) -> OrderingPolicy:
        """A fresh ordering of this policy; ``seed`` seeds one with randomness."""
        ordering = self.ordering
        return ORDERINGS[ordering](seed) if isinstance(ordering, str) else ordering(seed)

    def factory(self, seed: int) -> Policy:
        """A fresh policy; ``seed`` seeds an ordering with randomness."""
        if self.build is not None:
            return self.build(seed)
        order = self.make_ordering(seed)
        place = self.placement
        placement = PLACEMENTS[place]() if isinstance(place, str) else place()
        cls = OraclePolicy if self.oracle else Policy
        return cls(self.name, order, placement, self.admission, self.preemption)


_POLICIES = [
    PolicyInfo(
        "bace-pipe", "BACE-Pipe: dynamic priority + Pathfinder + Cost-Min", "priority", "pathfinder"
    ),
    PolicyInfo(
        "lcf", "Lowest-Cost-First: FCFS, the cheapest region with a free GPU", "fcfs", "lcf"
    ),
    PolicyInfo(
        "ldf", "Lowest-Delay-First: FCFS, the region with the most free GPUs", "fcfs", "ldf"
    ),
    PolicyInfo("cr-lcf", "Cross-Region LCF: FCFS, regions by ascending price", "fcfs", "cr-lcf"),
    PolicyInfo(
        "cr-ldf", "Cross-Region LDF: FCFS, largest region then widest links", "fcfs", "cr-ldf"
    ),
    PolicyInfo(
        "no-priority", "Ablation w/o Priority: FCFS + Pathfinder + Cost-Min", "fcfs", "pathfinder"
    ),
    PolicyInfo(
        "no-pathfinder",
        "Ablation w/o Pathfinder: priority + CR-LDF path + Cost-Min",
        "priority",
        "cr-ldf+cost-min",
    ),
    PolicyInfo(
        "no-costmin",
        "Ablation w/o Cost-Min: priority + Pathfinder + even spread",
        "priority",
        "pathfinder+even",
    ),
    PolicyInfo(
        "fcfs", "FCFS order + BACE-Pipe placement (same pair as no-priority)", "fcfs", "pathfinder"
    ),
    PolicyInfo("sjf", "Shortest E(1) first + BACE-Pipe placement", "sjf", "pathfinder"),
    PolicyInfo("random", "Random order (seeded) + BACE-Pipe placement", "random", "pathfinder"),
    # Waiting heuristics: they leave GPUs idle rather than start a job on a poor placement.
    PolicyInfo(
        "sjf+full",
        "SJF that waits until a job gets its full placement (min(K*, the idle cluster's))",
        "sjf",
        "pathfinder",
        admission="full",
    ),
    PolicyInfo(
        "sjf+finish-aware",
        "SJF that waits when the next release would let a job finish sooner",
        "sjf",
        "pathfinder",
        admission="finish-aware",
    ),
    PolicyInfo(
        "bace-pipe+full",
        "BACE-Pipe that waits until a job gets its full placement",
        "priority",
        "pathfinder",
        admission="full",
    ),
    PolicyInfo(
        "bace-pipe+finish-aware",
        "BACE-Pipe that waits when the next release would let a job finish sooner",
        "priority",
        "pathfinder",
        admission="finish-aware",
    ),
    # Preemptive heuristics (semantics §3c): a pending job may stop a running one.
    PolicyInfo(
        "sjf+srtf",
        "SJF that preempts the longest-remaining job for a job with half its remaining time",
        "sjf",
        "pathfinder",
        preemption="srtf",
    ),
    PolicyInfo(
        "sjf+finish-aware+srtf",
        "sjf+finish-aware that preempts as sjf+srtf does",
        "sjf",
        "pathfinder",
        admission="finish-aware",
        preemption="srtf",
    ),
    PolicyInfo(
        "bace-pipe+srtf",
        "BACE-Pipe that preempts as sjf+srtf does",
        "priority",
        "pathfinder",
        preemption="srtf",
    ),
    PolicyInfo(
        "sjf+las",
        "SJF that preempts the most-served job for a job below 500 GPU-h (size-blind LAS)",
        "sjf",
        "pathfinder",
        preemption="las",
    ),
    PolicyInfo(
        "sjf+finish-aware+las",
        "sjf+finish-aware that preempts as sjf+las does",
        "sjf",
        "pathfinder",
        admission="finish-aware",
        preemption="las",
    ),
    # Announced jobs (the scenario's announce_h calendar): holding GPUs for a planned run.
    PolicyInfo(
        "sjf+announce",
        "sjf+finish-aware that also holds GPUs for an announced job it would block when that "
        "lowers the pair's predicted JCT",
        "sjf",
        "pathfinder",
        admission="announce-aware",
    ),
    PolicyInfo(
        "sjf+announce+srtf",
        "sjf+announce that preempts as sjf+srtf does",
        "sjf",
        "pathfinder",
        admission="announce-aware",
        preemption="srtf",
    ),
    PolicyInfo(
        "oracle",
        "Oracle: the best static job order (sees future arrivals; at most 8 jobs, ~10 s)",
        lambda seed: StaticOrdering(()),
        "pathfinder",
        oracle=True,
    ),
]
_BY_NAME = {e.name: e for e in _POLICIES}
_ROLLOUTS: dict[str, PolicyInfo] = {}
_SETTING = re.compile(r"[a-z_]+=")  # a setting of the name before it, in a list of names


def register_policy(info: PolicyInfo) -> None:
    """Add a policy from outside the package (e.g. your own baseline), after the built-ins:
    every command, experiment and agent then finds it by name. Names must be new."""
    if not isinstance(info, PolicyInfo):
        raise ValidationError("policy", info, "must be a PolicyInfo")
    if info.name in _BY_NAME:
        raise ValidationError("policy", info.name, "is already registered")
    for kind, part, table in (
        ("ordering", info.ordering, ORDERINGS),
        ("placement", info.placement, PLACEMENTS),
    ):
        if isinstance(part, str) and part not in table:
            raise ValidationError(kind, part, f"unknown {kind}; choose from: {', '.join(table)}")
    if info.admission is not None and info.admission not in ADMISSION_RULES:
        rules = ", ".join(ADMISSION_RULES)
        raise ValidationError("admission", info.admission, f"unknown rule; choose from: {rules}")
    if info.preemption is not None:
        check_preemption(info.preemption)
    _POLICIES.append(info)
    _BY_NAME[info.name] = info


def policy_names(include_oracles: bool = False) -> list[str]:
    """Registered policy names in display order; oracles only when asked for."""
    return [e.name for e in _POLICIES if include_oracles or not e.oracle]


def split_policies(text: str) -> list[str]:
    """A comma-separated list of policy names as a list. A planner's settings are commas too
    (``rollout:sjf,k=2,lookahead=clairvoyant``): an item that starts ``key=`` continues the
    name before it (no registered name has an ``=``)."""
    out: list[str] = []
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        if out and _SETTING.match(item):
            out[-1] += "," + item
        else:
            out.append(item)
    return out


def baseline_names() -> list[str]:
    """BACE-Pipe and the four baselines of the paper's Fig. 4."""
    return ["bace-pipe", "lcf", "ldf", "cr-lcf", "cr-ldf"]


def ablation_names() -> list[str]:
    """BACE-Pipe and its three ablations (the paper's Fig. 8)."""
    return ["bace-pipe", "no-priority", "no-pathfinder", "no-costmin"]


def policy_info(name: str) -> PolicyInfo:
    """The registry entry of ``name`` (a rollout planner's, ``rollout:<base>,...``, is made on
    first use); a ValidationError lists the valid names otherwise."""
    try:
        return _BY_NAME[name]
    except KeyError:
        if is_rollout(name):
            return _rollout_info(name)
        from ..plugins import load_plugins

        if load_plugins():  # an installed or named plugin may register it
            return policy_info(name)
        raise ValidationError(
            "policy",
            name,
            "unknown policy; choose from: "
            + choices(policy_names(include_oracles=True), 60)
            + f", or {ROLLOUT_PREFIX}<one of them> (`bacepipe policies` lists them)",
        ) from None


def _rollout_info(name: str) -> PolicyInfo:
    """The entry of a rollout planner over a registered heuristic (policies/rollout.py),
    remembered (not listed: a planner is a family, one per base and settings)."""
    got = _ROLLOUTS.get(name)
    if got is None:
        settings = parse_rollout(name)
        base = policy_info(settings.base)  # one line for an unknown base
        if base.oracle:
            raise ValidationError("rollout base", settings.base, "must be a registered heuristic")

        def build(seed: int) -> Policy:
            inner = base.factory(seed)
            return RolloutPolicy(
                name,
                inner.ordering,
                inner.placement,
                inner.admission,
                inner.preemption,
                settings=settings,
                seed=seed,
                base_ordering=base.make_ordering,
            )

        got = _ROLLOUTS[name] = PolicyInfo(
            name,
            describe(settings),
            base.ordering,
            base.placement,
            admission=base.admission,
            preemption=base.preemption,
            build=build,
        )
    return got


def make_planner(name: str, seed: int = 0, objective: Objective | None = None) -> RolloutPlanner:
    """The :class:`RolloutPlanner` of the planner policy ``name`` (``rollout:<base>,...``),
    what its env agent decides with; ``objective`` scores forks (default: job-seconds)."""
    info = policy_info(name)  # validates the name, the base and the settings
    settings = parse_rollout(name)
    base = policy_info(settings.base)
    rule = None if base.preemption is None else make_preemption(base.preemption)
    return RolloutPlanner(settings, info.make_ordering, rule, seed, objective)


def make_policy(name: str, *, seed: int = 0) -> Policy:
    """A fresh policy by name; ``seed`` seeds policies with randomness (``random``)."""
    return policy_info(name).factory(seed)


def make_ordering(name: str, *, seed: int = 0) -> OrderingPolicy:
    """A fresh ordering by name (:data:`ORDERINGS`)."""
    try:
        return ORDERINGS[name](seed)
    except KeyError:
        raise ValidationError(
            "ordering", name, f"unknown ordering; choose from: {', '.join(ORDERINGS)}"
        ) from None


def make_placement(placement: str | PlacementPolicy) -> PlacementPolicy:
    """A placement policy by name (:data:`PLACEMENTS`), or the object itself."""
    if not isinstance(placement, str):
        if not callable(getattr(placement, "place", None)):
            raise ValidationError("placement", placement, "must have a place(view, job_id) method")
        if not isinstance(getattr(placement, "pure", None), bool):
            raise ValidationError(
                "placement",
                placement,
                "must declare pure = True or False (may previews be memoised?)",
            )
        try:
            hash(getattr(placement, "memo_key", None))
        except TypeError:
            raise ValidationError(
                "placement",
                placement,
                "has a memo_key that cannot be hashed (it names the policy's answers)",
            ) from None
        return placement
    try:
        return PLACEMENTS[placement]()
    except KeyError:
        raise ValidationError(
            "placement", placement, f"unknown placement; choose from: {', '.join(PLACEMENTS)}"
        ) from None
