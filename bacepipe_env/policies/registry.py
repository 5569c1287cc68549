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

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core import preemption as _preemption
from ..core.admission import ADMISSION_RULES, make_admission
from ..core.preemption import PREEMPTION_RULES, check_preemption, make_preemption
from ..core.simulator import OrderingPolicy, PlacementPolicy
from ..errors import ValidationError, choices
from ..plugins import after_each_plugin, load_plugins
from .bace_pipe import PathfinderPlacement, PriorityOrdering
from .base import FCFSOrdering, Policy
from .baselines import PLACEMENT_RULES, RandomOrdering, RulePlacement, SJFOrdering
from .deadline import EDFOrdering, EDFTriageOrdering, LSFOrdering
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
    "ELASTIC_SUFFIX",
    "ORDERINGS",
    "PLACEMENTS",
    "PREEMPTION_RULES",
    "PolicyInfo",
    "ablation_names",
    "baseline_names",
    "check_name",
    "check_plugin_names",
    "elastic_names",
    "make_admission",
    "make_ordering",
    "make_placement",
    "make_planner",
    "make_policy",
    "make_preemption",
    "policy_info",
    "policy_names",
    "policy_suffixes",
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
    "edf": lambda seed: EDFOrdering(),
    "lsf": lambda seed: LSFOrdering(),
    "edf-triage": lambda seed: EDFTriageOrdering(),
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
    elasticity: str | None = None

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
        return cls(self.name, order, placement, self.admission, self.preemption, self.elasticity)


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
    # Deadline heuristics (semantics §15): with no deadlines each orders as FCFS.
    PolicyInfo(
        "edf",
        "Earliest deadline first (no deadline last) + BACE-Pipe placement",
        "edf",
        "pathfinder",
    ),
    PolicyInfo(
        "edf+finish-aware",
        "EDF that waits when the next release would let a job finish sooner",
        "edf",
        "pathfinder",
        admission="finish-aware",
    ),
    PolicyInfo(
        "edf+deadline-aware",
        "edf+finish-aware that also defers a job past hope for a blocked job still on time",
        "edf",
        "pathfinder",
        admission="deadline-aware",
    ),
    PolicyInfo(
        "edf+srtf",
        "EDF that preempts as sjf+srtf does",
        "edf",
        "pathfinder",
        preemption="srtf",
    ),
    PolicyInfo(
        "lsf", "Least slack first (deadline - now - E*) + BACE-Pipe placement", "lsf", "pathfinder"
    ),
    PolicyInfo(
        "lsf+finish-aware",
        "LSF that waits when the next release would let a job finish sooner",
        "lsf",
        "pathfinder",
        admission="finish-aware",
    ),
    PolicyInfo(
        "edf-triage",
        "EDF among jobs that can still make it, the hopeless ones last by SJF",
        "edf-triage",
        "pathfinder",
    ),
    PolicyInfo(
        "edf-triage+finish-aware",
        "edf-triage that waits when the next release would let a job finish sooner",
        "edf-triage",
        "pathfinder",
        admission="finish-aware",
    ),
    PolicyInfo(
        "edf-triage+deadline-aware",
        "edf-triage+finish-aware that also defers a job past hope for a blocked job on time",
        "edf-triage",
        "pathfinder",
        admission="deadline-aware",
    ),
    PolicyInfo(
        "edf-triage+srtf",
        "edf-triage that preempts as sjf+srtf does",
        "edf-triage",
        "pathfinder",
        preemption="srtf",
    ),
    PolicyInfo(
        "sjf+deadline-aware",
        "sjf+finish-aware that also defers a job past hope for a blocked job still on time",
        "sjf",
        "pathfinder",
        admission="deadline-aware",
    ),
    PolicyInfo(
        "edf+deadline-plan",
        "EDF that holds a job when a reservation plan of queue and calendar misses fewer",
        "edf",
        "pathfinder",
        admission="deadline-plan",
    ),
    PolicyInfo(
        "lsf+deadline-plan",
        "LSF that holds a job when a reservation plan of queue and calendar misses fewer",
        "lsf",
        "pathfinder",
        admission="deadline-plan",
    ),
    PolicyInfo(
        "edf-triage+deadline-plan",
        "edf-triage that holds a job when a reservation plan misses fewer",
        "edf-triage",
        "pathfinder",
        admission="deadline-plan",
    ),
    PolicyInfo(
        "edf+deadline-plan+srtf",
        "edf+deadline-plan that preempts as sjf+srtf does",
        "edf",
        "pathfinder",
        admission="deadline-plan",
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


#: What a name may not hold: the policy-string grammar reads each as something else, so a name
#: holding one could never be selected (``split_policies``, ``parse_rollout``, ``is_learned``,
#: ``make_preemption``). ``+`` is no such character: it is part of names (``sjf+full``).
_GRAMMAR = (
    (",", "it separates the names of a list (--policies a,b)"),
    (":", "it starts settings or a model path (srtf:factor=3, ppo:PATH)"),
    ("=", "it writes a setting (k=4)"),
)
#: Policy names a list of policies reads as something else.
_RESERVED = {
    "all": "--policies all means every policy",
    "pretrained": "it names the agent shipped for the env",
}


def check_name(kind: str, name: object) -> str:
    """``name`` if a ``kind`` (``policy``, ``placement``, ...) may be registered under it: a
    non-empty string the command line can select, that is no built-in's (the names the package
    ships, rollout planners included); a one-line ValidationError naming ``kind`` otherwise."""
    if not isinstance(name, str) or not name:
        raise ValidationError(kind, name, "a name must be a non-empty string")
    builtin = name in _BUILTIN.get(kind, {})
    if builtin or (kind == "policy" and is_rollout(name)):
        what = kind if builtin else "rollout planner"
        raise ValidationError(kind, name, f"names a built-in {what}; a plugin cannot replace it")
    if any(c.isspace() for c in name):
        raise ValidationError(kind, name, "a name cannot hold whitespace: lists are cut at it")
    for char, why in _GRAMMAR:
        if char in name:
            raise ValidationError(kind, name, f"a name cannot hold {char!r}: {why}")
    if kind == "policy" and name in _RESERVED:
        raise ValidationError(kind, name, f"a reserved word: {_RESERVED[name]}")
    return name


def register_policy(info: PolicyInfo) -> None:
    """Add a policy from outside the package (e.g. your own baseline), after the built-ins:
    every command, experiment and agent then finds it by name. The name must be new and one
    the command line can select (:func:`check_name`: no built-in's, no ``,``, ``:``, ``=`` or
    whitespace); registering the same entry again (an equal PolicyInfo, e.g. from a module
    imported twice) changes nothing, another entry under a taken name is refused."""
    if not isinstance(info, PolicyInfo):
        raise ValidationError("policy", info, "must be a PolicyInfo")
    check_name("policy", info.name)
    if info.name in _BY_NAME:
        if _BY_NAME[info.name] == info:
            return
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


def _tables() -> dict[str, dict[str, Any]]:
    """Every table of names a plugin can add to, by kind: the policies (through
    :func:`register_policy`), and the orderings, placements, admission and preemption rules
    (by adding an entry to the table)."""
    return {
        "policy": _BY_NAME,
        "ordering": ORDERINGS,
        "placement": PLACEMENTS,
        "admission rule": ADMISSION_RULES,
        "preemption rule": _preemption._RULES,
    }


def check_plugin_names() -> None:
    """After a plugin ran: every built-in entry of every table is still the package's own, and
    every name added can be selected (:func:`check_name`). What breaks the rule is undone (the
    built-in put back, the name removed) and the first problem raised as one ValidationError
    line; :func:`~bacepipe_env.plugins.load_plugins` names the plugin in front of it."""
    problems: list[ValidationError] = []
    for kind, table in _tables().items():
        builtin = _BUILTIN[kind]
        for name, entry in builtin.items():
            if table.get(name) is not entry:
                table[name] = entry
                problems.append(
                    ValidationError(
                        kind, name, f"names a built-in {kind}; a plugin cannot replace it"
                    )
                )
        for name in [n for n in table if n not in builtin]:
            try:
                check_name(kind, name)
            except ValidationError as err:
                problems.append(err)
                removed = table.pop(name)
                if kind == "policy":
                    _POLICIES[:] = [e for e in _POLICIES if e is not removed]
    if problems:
        raise problems[0]


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


#: The suffix that makes any registered heuristic elastic (semantics §3f): ``sjf+elastic`` is
#: SJF whose jobs' data-parallel copies the ``greedy`` rule resizes.
ELASTIC_SUFFIX = "+elastic"
_ELASTIC: dict[str, PolicyInfo] = {}


def _elastic_info(name: str) -> PolicyInfo:
    """The entry of ``<heuristic>+elastic`` (made on first use, not listed: every heuristic
    has one): the heuristic with the ``greedy`` elasticity rule."""
    got = _ELASTIC.get(name)
    if got is None:
        base = policy_info(name.removesuffix(ELASTIC_SUFFIX))
        if base.oracle or base.build is not None or base.elasticity is not None:
            raise ValidationError(
                "policy", name, "+elastic follows a registered heuristic (sjf+elastic)"
            )
        got = _ELASTIC[name] = dataclasses.replace(
            base,
            name=name,
            description=f"{base.name} whose jobs' data-parallel copies the greedy rule resizes",
            elasticity="greedy",
        )
    return got


def elastic_names(names: list[str]) -> list[str]:
    """``<name>+elastic`` of every heuristic among ``names`` that has one."""
    return [f"{n}{ELASTIC_SUFFIX}" for n in names if not n.endswith(ELASTIC_SUFFIX)]


def policy_suffixes() -> dict[str, list[str]]:
    """Every suffix that composes a policy from another: the last ``+part`` of each registered
    ``<registered name>+part`` (``+srtf`` of ``sjf+srtf``), with the names it follows, in
    registration order, and :data:`ELASTIC_SUFFIX`, which follows any heuristic (``[]``)."""
    out: dict[str, list[str]] = {}
    for name in policy_names():
        base, plus, part = name.rpartition("+")
        if plus and base in _BY_NAME:
            out.setdefault(f"+{part}", []).append(base)
    out[ELASTIC_SUFFIX] = []
    return out


def _closest(name: str, names: list[str]) -> list[str]:
    """The registered name closest to ``name`` (``difflib``'s default cutoff), as a list of at
    most one; a registered name with a misspelt suffix gets the closest suffix that follows it
    (``bace-pipe+elastc`` -> ``bace-pipe+elastic``, not the nearer whole name ``+srtf``); a
    known suffix after a name it does not follow is matched as a whole name."""
    import difflib

    base, plus, part = name.rpartition("+")
    suffixes = policy_suffixes()
    if plus and base in _BY_NAME and f"+{part}" not in suffixes:
        fits = [s for s, after in suffixes.items() if not after or base in after]
        close = difflib.get_close_matches(f"+{part}", fits, n=1)
        if close:
            return [base + close[0]]
    return difflib.get_close_matches(name, names, n=1)


def policy_info(name: str) -> PolicyInfo:
    """The registry entry of ``name`` (a rollout planner's, ``rollout:<base>,...``, and an
    elastic heuristic's, ``<heuristic>+elastic``, are made on first use); a ValidationError
    lists the valid names otherwise."""
    try:
        return _BY_NAME[name]
    except KeyError:
        if is_rollout(name):
            return _rollout_info(name)
        if name.endswith(ELASTIC_SUFFIX) and name != ELASTIC_SUFFIX:
            return _elastic_info(name)
        if load_plugins():  # an installed or named plugin may register it
            return policy_info(name)
        names = policy_names(include_oracles=True)
        close = _closest(name, names) if isinstance(name, str) else []
        raise ValidationError(
            "policy",
            name,
            f"unknown policy; did you mean {close[0]!r}? (`bacepipe policies` lists them)"
            if close
            else "unknown policy; choose from: "
            + choices(names, 60)
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
                inner.elasticity,
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
            elasticity=base.elasticity,
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


#: The package's own entries of every table (:func:`_tables`), as shipped: a plugin adds names,
#: it never replaces these (:func:`check_name`, :func:`check_plugin_names`).
_BUILTIN: dict[str, dict[str, Any]] = {kind: dict(table) for kind, table in _tables().items()}
after_each_plugin(check_plugin_names)
