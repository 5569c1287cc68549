"""The rollout planner: a policy that measures how much room a world's decisions leave.

``rollout:<base>`` plays the registered heuristic ``<base>`` with one step of lookahead. At each
decision it takes the base ordering's ``k`` favourite candidates, plus waiting until the next
event when an event is still to come, and for each one forks the simulation
(:meth:`~bacepipe_env.core.simulator.Simulator.clone`), plays that action, finishes the episode
with the base (its ordering, admission rule and preemption rule) and keeps the action whose
finished fork scores best. When the base preempts, the planner also decides each preemption
the same way: the base rule's choice, the ``k - 1`` other running jobs with the most remaining
time whose preemption lets a pending job start, and declining.

Settings follow the name after commas: ``rollout:sjf+finish-aware,k=4,lookahead=announced:24``.

- ``k`` (default 4): how many of the base's candidates are tried.
- ``lookahead`` (default ``submitted``): what a fork knows of the future
  (:func:`check_lookahead`): only the jobs submitted by now, those submitted within H hours
  (``announced:H``), every job (``clairvoyant``, a bound that no scheduler reaches, labelled
  as such wherever it is reported), or what a scheduler knows now and, in place of the jobs it
  cannot know, a draw of the world's own arrivals (``sampled:N``, :mod:`~bacepipe_env.core.
  sampling`): each action is scored by the mean of N forks (``sampled`` is ``sampled:1``),
  the N draws the same for every action of a decision (common random numbers, from the
  planner's seed and the count of the first decision at that instant, so that decisions at
  one instant draw alike and the chosen fork's score is reused as with ``submitted``). A fork
  that is not clairvoyant also draws the GPU failures still to come afresh.
- ``objective`` (default ``jct``): average JCT (the sum of the known jobs' time in the system,
  then their cost and emissions); ``misses``: the jobs that missed their deadline, then their
  summed tardiness, then as ``jct``; ``tardiness``: the summed tardiness, then the misses,
  then as ``jct`` (semantics §15; without deadlines both order forks as ``jct`` does);
  ``reward``, the env's own reward, is for the planner as an env agent.
- ``copies`` (default ``all``): in a world of data-parallel copies (semantics §3e), each of
  the ``k`` candidates is also tried with every other count of copies that gets a placement;
  ``default`` tries only the count the base starts a job with (what the decision of the count
  is worth is the difference).

With ``clairvoyant`` the planner is never worse than a deterministic base on average JCT: the
fork of the base's own first choice at each decision continues the fork chosen at the previous
one, so the chosen fork's score can only fall (a property test checks it on random episodes).
A decision costs ``k + 1`` simulations of the rest of the episode (``N (k + 1)`` with
``sampled:N``); ``headroom`` reports the milliseconds per decision.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.admission import AdmissionRule
from ..core.preemption import PreemptionRule, make_preemption
from ..core.sampling import deadline_totals, sampled_clone
from ..core.scenario import Scenario
from ..core.simulator import OrderingPolicy, RunResult, Simulator, lookahead_horizon
from ..core.snapshot import QueueSnapshot
from ..errors import ValidationError
from .base import Ordering, Policy

__all__ = [
    "COPIES",
    "OBJECTIVES",
    "PREFIX",
    "Action",
    "Objective",
    "RolloutPlanner",
    "RolloutPolicy",
    "RolloutSettings",
    "check_lookahead",
    "describe",
    "is_rollout",
    "parse_rollout",
]

#: The name prefix of the planner's policies.
PREFIX = "rollout:"
#: The objectives a fork is scored by (lower is better).
OBJECTIVES = ("jct", "misses", "tardiness", "reward")
#: The most forks a ``sampled:N`` lookahead plays per action.
MAX_DRAWS = 64
#: Which counts of data-parallel copies a placement decision tries (``copies=``).
COPIES = ("all", "default")
#: An action: ("place", job), ("wait", -1), ("preempt", job) or ("decline", -1); a job placed
#: with another count of data-parallel copies than its default is ("place", job, copies).
Action = tuple[str, int] | tuple[str, int, int]
#: Scores a finished fork (lower is better).
Objective = Callable[[Simulator], tuple[float, ...]]

_WAIT: Action = ("wait", -1)
_DECLINE: Action = ("decline", -1)


def is_rollout(name: object) -> bool:
    """Whether ``name`` names a rollout planner (``rollout:<base>...``)."""
    return isinstance(name, str) and name.startswith(PREFIX)


@dataclass(frozen=True)
class RolloutSettings:
    """A planner's base heuristic and settings, as its name spells them."""

    base: str
    k: int = 4
    lookahead: str = "submitted"
    objective: str = "jct"
    copies: str = "all"

    @property
    def name(self) -> str:
        """The canonical name: the base, then each setting that is not the default."""
        parts = [self.base]
        for f in dataclasses.fields(self)[1:]:
            value = getattr(self, f.name)
            if value != f.default:
                parts.append(f"{f.name}={value}")
        return PREFIX + ",".join(parts)

    @property
    def clairvoyant(self) -> bool:
        """True when the forks see every future job (a bound, not a scheduler)."""
        return self.lookahead == "clairvoyant"

    @property
    def draws(self) -> int:
        """The forks per action of a ``sampled:N`` lookahead (N), 0 for any other."""
        name, _, n = self.lookahead.partition(":")
        return (int(n) if n else 1) if name == "sampled" else 0


def check_lookahead(value: str) -> str:
    """A planner's ``lookahead`` in its canonical form: ``submitted``, ``announced:H`` and
    ``clairvoyant`` as :func:`~bacepipe_env.core.simulator.lookahead_horizon` takes them,
    ``sampled:N`` (N draws per action, 1 to 64; ``sampled`` and ``sampled:1`` are
    ``sampled``); a one-line ValidationError otherwise."""
    name, sep, n = str(value).partition(":")
    if name != "sampled":
        try:
            lookahead_horizon(value)
        except ValidationError:
            raise ValidationError("lookahead", value, _LOOKAHEADS) from None
        return value
    try:
        draws = int(n) if sep else 1
    except ValueError:
        draws = 0
    if not 1 <= draws <= MAX_DRAWS or (sep and not n.isdigit()):
        raise ValidationError("lookahead", value, _LOOKAHEADS)
    return "sampled" if draws == 1 else f"sampled:{draws}"


_LOOKAHEADS = (
    "choose submitted, announced:H (hours, 0-1e6), sampled:N (N draws per action, "
    f"1-{MAX_DRAWS}) or clairvoyant"
)


def parse_rollout(name: str) -> RolloutSettings:
    """The settings of ``rollout:<base>[,k=N][,lookahead=L][,objective=O][,copies=C]``; a
    one-line ValidationError for a bad setting (the registry checks the base)."""
    if not is_rollout(name):
        raise ValidationError("policy", name, f"a rollout planner's name starts with {PREFIX!r}")
    base, *settings = name[len(PREFIX) :].split(",")
    if is_rollout(base):
        raise ValidationError("rollout base", base, "must be a registered heuristic")
    values: dict[str, object] = {}
    for setting in settings:
        key, sep, value = setting.partition("=")
        if not sep or key in values:
            raise ValidationError(
                "rollout setting",
                setting,
                "write each once as key=value: k, lookahead, objective, copies",
            )
        if key == "k":
            try:
                k = int(value)
            except ValueError:
                k = 0
            if not 1 <= k <= 64:
                raise ValidationError("rollout k", value, "must be a whole number from 1 to 64")
            values["k"] = k
        elif key == "lookahead":
            values["lookahead"] = check_lookahead(value)  # one line for a bad one
        elif key == "objective":
            if value not in OBJECTIVES:
                raise ValidationError(
                    "rollout objective", value, "choose jct, misses, tardiness or reward"
                )
            values["objective"] = value
        elif key == "copies":
            if value not in COPIES:
                raise ValidationError("rollout copies", value, "choose all or default")
            values["copies"] = value
        else:
            raise ValidationError(
                "rollout setting", key, "unknown; choose from: k, lookahead, objective, copies"
            )
    return RolloutSettings(base, **values)  # type: ignore[arg-type]


def jct_objective(sim: Simulator) -> tuple[float, ...]:
    """A finished fork's job-seconds (its jobs' summed JCT), then its cost and emissions."""
    return (sim.job_seconds, sim.cost_accrued, sim.carbon_accrued)


def misses_objective(sim: Simulator) -> tuple[float, ...]:
    """A finished fork's jobs that missed their deadline, their summed tardiness (s), then
    :func:`jct_objective`'s (semantics §15; its jobs' records)."""
    misses, tardiness = deadline_totals(sim)
    return (misses, tardiness, sim.job_seconds, sim.cost_accrued, sim.carbon_accrued)


def tardiness_objective(sim: Simulator) -> tuple[float, ...]:
    """A finished fork's summed tardiness (s), its misses, then :func:`jct_objective`'s."""
    misses, tardiness = deadline_totals(sim)
    return (tardiness, misses, sim.job_seconds, sim.cost_accrued, sim.carbon_accrued)


#: The objectives a planner computes itself (``reward`` needs the env: the caller's).
_OBJECTIVES: dict[str, Objective] = {
    "jct": jct_objective,
    "misses": misses_objective,
    "tardiness": tardiness_objective,
}


class RolloutPlanner:
    """The planner's decisions on a live :class:`Simulator` (see the module docstring), for
    :class:`RolloutPolicy` and for the planner's env agent. ``seed`` seeds the base ordering
    of every fork (a random base), the failure redraws of forks that are not clairvoyant and
    the draws of ``sampled`` forks; ``planned`` counts the decisions it planned (more than
    one action to try). ``objective`` scores a finished fork (default: the settings'
    objective; ``reward`` has none without the env)."""

    def __init__(
        self,
        settings: RolloutSettings,
        base_ordering: Callable[[int], OrderingPolicy],
        rule: PreemptionRule | None = None,
        seed: int = 0,
        objective: Objective | None = None,
    ) -> None:
        if objective is None and settings.objective not in _OBJECTIVES:
            raise ValidationError(
                "rollout objective",
                settings.objective,
                "the env's reward needs the env: play the planner as an env agent "
                "(bacepipe evaluate or headroom)",
            )
        self.settings = settings
        self.seed = seed
        self.objective: Objective = (
            _OBJECTIVES[settings.objective] if objective is None else objective
        )
        self._make_base = base_ordering
        self._base = self.base_ordering()
        self.rule = rule  # the base's preemption rule (None: it never preempts)
        self.planned = 0  # decisions with more than one action to try
        # (time, score) of the fork chosen last; reuse it only while every action taken since
        # is the base's own (True when the planner plays every decision of the episode)
        self._last: tuple[float, tuple[float, ...]] | None = None
        self.reuse = True
        self._instant: tuple[float, int] | None = None  # (time, seed) of a sampled decision

    def base_ordering(self) -> OrderingPolicy:
        """A fresh ordering of the base (each fork gets its own: a seeded one draws anew)."""
        return self._make_base(self.seed)

    # ------------------------------------------------------------------ decisions
    def top(self, sim: Simulator, candidates: Sequence[int]) -> list[int]:
        """The base ordering's ``k`` favourite candidates, best first."""
        left = list(candidates)
        order = self._base
        out: list[int] = []
        if isinstance(order, Ordering) and len(left) > 1:
            queue = QueueSnapshot.from_view(sim, left)
            legal = list(range(len(left)))
            while legal and len(out) < self.settings.k:
                i = order.pick(queue, legal)
                out.append(left[i])
                legal.remove(i)
            return out
        while left and len(out) < self.settings.k:
            job = order.choose(sim, tuple(left))
            out.append(job)
            left.remove(job)
        return out

    def placement_actions(
        self, sim: Simulator, candidates: Sequence[int], can_wait: bool
    ) -> list[Action]:
        """What a placement decision tries: the base's top ``k``, each also with every other
        count of data-parallel copies that gets a placement now (semantics §3e; a job of one
        pipeline has none), then waiting."""
        actions: list[Action] = []
        every = self.settings.copies == "all"
        for j in self.top(sim, candidates):
            actions.append(("place", j))
            low, high = sim.replica_range(j)
            if every and high > low:
                actions += [("place", j, d) for d in range(low + 1, high + 1) if sim.offer(j, d)]
        if can_wait:
            actions.append(_WAIT)
        return actions

    def preemption_actions(
        self, sim: Simulator, options: Sequence[int], rule: PreemptionRule
    ) -> list[Action]:
        """What a decision to preempt tries: the rule's choice (or declining), the other
        ``options`` with the most remaining time, then declining."""
        view = sim.preemption_view()
        first = rule.choose(view)
        actions: list[Action] = [_DECLINE if first is None else ("preempt", first)]
        remaining = {r.job_id: r.remaining for r in view.running}
        rest = sorted((j for j in options if j != first), key=lambda j: (-remaining[j], j))
        actions += [("preempt", j) for j in rest[: self.settings.k - 1]]
        if first is not None:
            actions.append(_DECLINE)
        return actions

    def best(self, sim: Simulator, actions: Sequence[Action], rule: PreemptionRule) -> Action:
        """The action whose fork, finished by the base, scores lowest (ties: the earlier
        action, the base's own choice first)."""
        if len(actions) == 1:
            return actions[0]  # the base's own action: the last chosen fork still holds
        self.planned += 1
        seed = None if self.settings.clairvoyant else self._decision_seed(sim.time)
        known = self._continued(sim)
        # a sampled lookahead's N futures, drawn once for every action of the decision
        futures = None if seed is None or not self.settings.draws else self.futures(sim, rule, seed)
        scores = [
            known if i == 0 and known is not None else self.score(sim, a, rule, seed, futures)
            for i, a in enumerate(actions)
        ]
        i = min(range(len(actions)), key=scores.__getitem__)
        self._last = (sim.time, scores[i]) if self.reuse else None
        return actions[i]

    def _decision_seed(self, now: float) -> int:
        """The seed of a decision's forks (their failure redraws, a sampled lookahead's
        draws): from the planner's seed and the count of planned decisions, except that every
        decision at the instant of a sampled lookahead's previous one takes that one's seed, so
        that it draws the same futures (what the reuse of :meth:`_continued` needs)."""
        instant = self._instant
        if self.settings.draws and instant is not None and instant[0] == now:
            return instant[1]
        seed = (self.seed * 1_000_003 + self.planned) % 2**31
        self._instant = (now, seed)
        return seed

    def _continued(self, sim: Simulator) -> tuple[float, ...] | None:
        """The score of the base's own action now when the fork chosen at the previous planned
        decision already played it: every action since was the base's, and that fork knew
        what this one would (every job, or the same jobs at the same instant, with the same
        failures). Saves one fork in ``k + 1``."""
        last = self._last
        if last is None or not math.isfinite(last[1][0]):
            return None
        if self.settings.clairvoyant:
            return last[1]
        faults = sim.faults
        if sim.time == last[0] and (faults is None or faults.gpu_failure_rate <= 0):
            return last[1]
        return None

    def futures(self, sim: Simulator, rule: PreemptionRule, seed: int) -> list[Simulator]:
        """A ``sampled:N`` lookahead's N forks of ``sim`` before any action
        (:func:`~bacepipe_env.core.sampling.sampled_clone`): draw ``i`` takes its arrivals
        and its failures from ``SeedSequence([seed, i])`` alone."""
        out = []
        for i in range(self.settings.draws):
            arrivals, failures = np.random.SeedSequence([seed, i]).spawn(2)
            fail_seed = int(failures.generate_state(1)[0]) % 2**31
            rng = np.random.default_rng(arrivals)
            out.append(sampled_clone(sim, rng, seed=fail_seed, preemption=rule))
        return out

    def score(
        self,
        sim: Simulator,
        action: Action,
        rule: PreemptionRule,
        seed: int | None,
        futures: Sequence[Simulator] | None = None,
    ) -> tuple[float, ...]:
        """The objective of the fork that plays ``action`` now and the base after it; with
        ``sampled:N``, the element-wise mean of the objectives of a copy of each of the N
        ``futures`` (default: :meth:`futures` of ``seed``) that plays it: every action of a
        decision is scored on the same N futures (common random numbers)."""
        if not self.settings.draws:
            fork = sim.clone(self.settings.lookahead, seed=seed, preemption=rule)
            return self._play(fork, action)
        if futures is None:
            assert seed is not None
            futures = self.futures(sim, rule, seed)
        scores = []
        for future in futures:  # a copy of each: the futures serve every action
            got = self._play(future.clone(preemption=rule), action)
            if not math.isfinite(got[0]):
                return got
            scores.append(got)
        return tuple(math.fsum(column) / len(scores) for column in zip(*scores))

    def _play(self, fork: Simulator, action: Action) -> tuple[float, ...]:
        """Play ``action`` on ``fork``, finish it with the base and score it."""
        fork.validate = False  # the planner's own decisions are validated, not its forks'
        if action[0] in ("wait", "decline") and not fork.has_future_events:
            # nothing the fork knows of is still to happen (a later arrival is beyond its
            # lookahead): waiting would wait for ever, so it cannot be the better action
            return (math.inf,)
        apply(fork, action)
        fork.play(self.base_ordering())
        return self.objective(fork)


def apply(sim: Simulator, action: Action) -> None:
    """Play one planner action on ``sim``."""
    kind, job = action[0], action[1]
    if kind == "place":
        sim.place(job, replicas=action[2] if len(action) > 2 else None)
    elif kind == "preempt":
        sim.preempt(job)
    else:  # waiting, or declining to preempt: nothing more until the next event
        sim.defer()


@dataclass(frozen=True)
class RolloutPolicy(Policy):
    """``rollout:<base>`` as a policy of the simulator (``simulate``, ``compare``, sweeps).

    Its admission rule is the base's, and so is its preemption rule, which the planner plays
    decision by decision (the forks apply it)."""

    settings: RolloutSettings | None = None
    seed: int = 0  # the planner's (see RolloutPlanner)
    base_ordering: Callable[[int], OrderingPolicy] | None = None  # seed -> the base's ordering

    def simulate(
        self,
        scenario: Scenario,
        *,
        admission: str | AdmissionRule | None = None,
        validate: bool = True,
        preemption: str | PreemptionRule | None = None,
    ) -> RunResult:
        """One episode with the planner deciding (see the module docstring)."""
        assert self.settings is not None and self.base_ordering is not None
        rule = self.admission if admission is None else admission
        stop = self.preemption if preemption is None else preemption
        preempt_rule = make_preemption(scenario.preemption if stop is None else stop)
        planner = RolloutPlanner(self.settings, self.base_ordering, preempt_rule, self.seed)
        decides = preempt_rule.name != "none"
        sim = Simulator(
            scenario,
            self.placement,
            admission=rule,
            validate=validate,
            preemption="none",
            preemption_decisions=decides,
            preemption_wake_s=float(getattr(preempt_rule, "min_run_s", 0.0)),
            elasticity=self.elasticity,
        )
        while (candidates := sim.next_decision()) is not None:
            if candidates:
                actions = planner.placement_actions(sim, candidates, sim.has_future_events)
            else:
                options = sim.preemption_view().options()
                actions = planner.preemption_actions(sim, options, preempt_rule)
            apply(sim, planner.best(sim, actions, preempt_rule))
        return dataclasses.replace(sim.result(self.name), preemption=preempt_rule.name)


def describe(settings: RolloutSettings) -> str:
    """A planner's one-line description."""
    bound = " (a bound: sees every future job)" if settings.clairvoyant else ""
    if settings.draws:
        n = settings.draws
        bound = f" (the mean of {n} draw{'s' if n > 1 else ''} of the world's later arrivals)"
    copies = "" if settings.copies == "all" else ", the default count of copies only"
    return (
        f"Rollout planner over {settings.base}: its top {settings.k} + wait, each finished by "
        f"{settings.base}, lookahead {settings.lookahead}{bound}, objective {settings.objective}"
        f"{copies}"
    )
