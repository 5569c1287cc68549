"""The environment's reward: per-episode scales, typed per-step terms, and reward functions.

Each step the environment measures what the interval since the previous decision cost, as
:class:`RewardTerms` (job-seconds, dollars and kg CO2e, divided by the episode's
:class:`RewardScales`; and, when jobs have deadlines, the jobs that became certain to miss
theirs and the tardiness accrued), and hands them to its :class:`RewardFn`, called once per
step. The default :class:`JctCostReward` weighs them into one scalar whose episode sum is an
affine function of the paper's two objectives and the emissions (weight 0 by default);
:class:`VectorReward` returns them unweighted as a vector (MO-Gymnasium style);
:class:`DeadlineReward` pays for the misses or the tardiness alone (semantics §15). The
names a ``reward=`` string may give are :data:`REWARDS`.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, SupportsFloat

import numpy as np

from ..core.deadlines import lateness
from ..core.metrics import ordered
from ..core.scenario import Scenario
from ..core.simulator import RunResult, Simulator
from ..core.units import SECONDS_PER_HOUR
from ..errors import ValidationError
from .config import RewardConfig, coerce_config

__all__ = [
    "REWARDS",
    "DeadlineReward",
    "DeadlineTally",
    "JctCostReward",
    "RewardFn",
    "RewardMeter",
    "RewardScales",
    "RewardTerms",
    "VectorReward",
    "episode_info",
    "make_reward",
]


@dataclass(frozen=True)
class RewardScales:
    """What one episode's reward terms are divided by, set from that episode's jobs.

    ``jct_norm`` is ``N * jct_scale``: the sum over jobs of the execution time on K* GPUs in one
    region (the best each job could do alone). ``cost_norm`` is the cost of running every job
    that way at the cluster's mean (Table II) price, ``carbon_norm`` its emissions at the mean
    of the regions' flat carbon intensities: ``sum(K* * ideal E) / 3600 * mean(carbon) *
    power_kw / 1000`` kg. The one place where jobs that have not arrived yet count: the
    reward's scale, never the observation or the mask. ``tardiness_norm`` is an hour times
    the number of jobs with a deadline (an hour without any): the tardiness term sums to the
    mean tardiness in hours of the jobs that have a deadline (semantics §15).
    """

    jct_norm: float  # s
    cost_norm: float  # $
    n_jobs: int
    carbon_norm: float = 1e-12  # kg CO2e
    tardiness_norm: float = SECONDS_PER_HOUR  # s: 1 h * jobs with a deadline

    @property
    def jct_scale(self) -> float:
        """The mean ideal execution time (s): ``jct_norm / N``."""
        return self.jct_norm / self.n_jobs

    @classmethod
    def of(cls, scenario: Scenario) -> RewardScales:
        """The scales of an episode of ``scenario``."""
        cl = scenario.cluster
        profiles = scenario.profiles.values()
        jct_norm = math.fsum(p.ideal_execution for p in profiles)
        mean_price = sum(cl.prices) / cl.n_regions
        gpu_hours = math.fsum(p.ideal_execution * p.k_star for p in profiles) / SECONDS_PER_HOUR
        cost_norm = gpu_hours * mean_price * cl.power_kw
        mean_carbon = sum(cl.carbon) / cl.n_regions  # gCO2e/kWh
        carbon_norm = gpu_hours * mean_carbon * cl.power_kw / 1000.0  # kg
        return cls(
            max(jct_norm, 1e-9),
            max(cost_norm, 1e-12),
            len(scenario.jobs),
            max(carbon_norm, 1e-12),
            SECONDS_PER_HOUR * max(1, len(scenario.deadlines)),
        )


@dataclass(frozen=True, slots=True)
class RewardTerms:
    """What one step's interval cost, normalised by the episode's :class:`RewardScales`.

    ``jct`` is ``dJ / jct_norm``, with ``dJ`` the job-seconds spent in the system (jobs submitted
    and not finished, times the elapsed time); ``cost`` is ``dC / cost_norm``, with ``dC`` the
    cost of the running jobs (electricity, plus egress when the tariff charges it); ``carbon``
    is ``dG / carbon_norm``, with ``dG`` their emissions (kg CO2e). All are >= 0 and sum over
    an episode to ``avg_JCT / jct_scale``, ``(total_cost + total_egress_cost) / cost_scale``
    and ``total_carbon / carbon_scale``. ``illegal`` says whether the agent's action was
    replaced by the fallback. ``carbon`` is keyword-only, so that ``RewardTerms(jct, cost,
    illegal)`` keeps its meaning; so are the deadline terms (semantics §15; 0 when no job has
    a deadline): ``misses``, the jobs whose deadline passed in the interval with the job not
    finished by then (each now certain to miss it, counted once: they sum to the episode's
    misses), and ``tardiness``, ``dT / tardiness_norm`` with ``dT`` the tardiness the jobs
    accrued in the interval (every job past its deadline and unfinished accrues the elapsed
    time), summing to ``total_tardiness / tardiness_norm``.
    """

    jct: float = 0.0
    cost: float = 0.0
    illegal: bool = False
    carbon: float = field(default=0.0, kw_only=True)
    misses: float = field(default=0.0, kw_only=True)
    tardiness: float = field(default=0.0, kw_only=True)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The numeric terms, in order (what :class:`VectorReward` may select)."""
        return tuple(f.name for f in fields(cls) if f.name != "illegal")


class DeadlineTally:
    """The misses and the tardiness one episode's jobs have accrued so far (semantics §15),
    read from the simulator at each measurement: when each job is due (the scenario's
    deadlines) and whether and when it finished (:meth:`Simulator.job_state`).

    A job is counted as a miss at the first measurement after its deadline passes unless it
    finished by then (a job that finishes late within one interval counts there); it then
    accrues tardiness, ``now - due``, until it finishes, when its tardiness is the record's,
    ``finish - due``. So at the end the misses are the run's and the tardiness its total."""

    def __init__(self, scenario: Scenario) -> None:
        due = scenario.deadlines
        self._due = due
        self._order = sorted(due, key=lambda j: (due[j], j))  # by due time
        self._next = 0  # the first job of _order whose deadline has not passed yet
        self._overdue: dict[int, float] = {}  # past due and unfinished: job -> due
        self._late = 0.0  # the finished overdue jobs' tardiness, s
        self.misses = 0

    def __call__(self, sim: Simulator) -> float:
        """Update at the simulator's time; the tardiness accrued so far (s)."""
        now, order, due = sim.time, self._order, self._due
        if self._overdue or (self._next < len(order) and due[order[self._next]] < now):
            running = set(sim.running)
            for j, finish in [(j, self._finish(sim, j, running)) for j in self._overdue]:
                if finish is not None:  # finished since: its tardiness is the record's
                    self._late += lateness(self._overdue.pop(j), finish)[0]
            while self._next < len(order) and due[order[self._next]] < now:
                j = order[self._next]
                self._next += 1
                finish = self._finish(sim, j, running)
                if finish is None:  # its deadline passed unmet: certain to miss it
                    self._overdue[j] = due[j]
                    self.misses += 1
                else:  # it finished in this interval, on time or late
                    tardiness, missed = lateness(due[j], finish)
                    self._late += tardiness
                    self.misses += missed
        return self._late + math.fsum(now - d for d in self._overdue.values())

    @staticmethod
    def _finish(sim: Simulator, job: int, running: set[int]) -> float | None:
        """When ``job`` finished, None while it has not (pending or running)."""
        if job in running:
            return None
        _, placement, finish = sim.job_state(job)
        return None if placement is None else finish


class RewardMeter:
    """Measures each step's :class:`RewardTerms` on one episode's simulator: the job-seconds,
    the cost and the emissions accrued since the previous measurement, divided by the
    episode's scales; and, when some job has a deadline, the new misses and the tardiness
    accrued (:class:`DeadlineTally`)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scales = RewardScales.of(scenario)
        self._job_seconds = self._cost = self._carbon = 0.0
        self._deadlines = DeadlineTally(scenario) if scenario.deadlines else None
        self._misses, self._tardiness = 0, 0.0

    def __call__(self, sim: Simulator, illegal: bool) -> RewardTerms:
        """The terms of the interval since the previous call (or the start)."""
        js, cost, carbon, sc = sim.job_seconds, sim.cost_accrued, sim.carbon_accrued, self.scales
        misses = tardiness = 0.0
        tally = self._deadlines
        if tally is not None:
            late = tally(sim)
            misses = float(tally.misses - self._misses)
            tardiness = (late - self._tardiness) / sc.tardiness_norm
            self._misses, self._tardiness = tally.misses, late
        terms = RewardTerms(
            (js - self._job_seconds) / sc.jct_norm,
            (cost - self._cost) / sc.cost_norm,
            illegal,
            carbon=(carbon - self._carbon) / sc.carbon_norm,
            misses=misses,
            tardiness=tardiness,
        )
        self._job_seconds, self._cost, self._carbon = js, cost, carbon
        return terms


def episode_info(result: RunResult) -> dict[str, float | int]:
    """The figures of a finished episode, for the last step's ``info``: every
    :data:`~bacepipe_env.core.metrics.METRICS` row's ``episode_*`` keys (the paper's average
    JCT and total electricity cost, the makespan, the jobs completed, the emissions, the JCT
    percentiles, the mean slowdown, the egress charge, what faults cost, semantics §11, and
    the resizes of jobs' data-parallel copies, semantics §3f; 0 where the world has none;
    the deadline misses and tardiness, semantics §15, only when some job has a deadline)."""
    shown = [m for m in ordered("info") if m.show != "deadlines" or result.deadlines]
    return {k: v for m in shown for k, v in m.keyed(m.info, m.value(result))}


class RewardFn(abc.ABC):
    """The reward of one step, from its :class:`RewardTerms`; called once per step."""

    @abc.abstractmethod
    def __call__(self, terms: RewardTerms) -> SupportsFloat | np.ndarray:
        """The reward the environment returns for a step whose interval cost ``terms``."""

    @property
    def reward_space(self) -> Any:
        """A vector reward's Box (the env's ``reward_space``, which MO-Gymnasium reads);
        None for a scalar reward."""
        return None

    def components(self, terms: RewardTerms) -> dict[str, Any]:
        """The reward's parts, for ``info`` (``reward_jct``, ``reward_cost``,
        ``reward_carbon``); unweighted here."""
        return {
            "reward_jct": -terms.jct,
            "reward_cost": -terms.cost,
            "reward_carbon": -terms.carbon,
        }


class JctCostReward(RewardFn):
    """``r_t = -(jct_weight * jct + cost_weight * cost + carbon_weight * carbon)``
    ``- illegal_penalty * [illegal]``.

    Summed over an episode: ``-(jct_weight * avg_JCT / jct_scale + cost_weight * total_cost /
    cost_scale + carbon_weight * total_carbon / carbon_scale) - penalties``, exactly up to
    float rounding (``total_cost`` includes egress when the tariff charges it). The default
    reward; its default ``carbon_weight`` is 0, which leaves the paper's reward bit for bit.
    """

    def __init__(self, config: RewardConfig | None = None) -> None:
        self.config = RewardConfig() if config is None else config
        if not isinstance(self.config, RewardConfig):
            raise ValidationError("reward", config, "must be a RewardConfig")

    def __call__(self, terms: RewardTerms) -> float:
        c = self.config
        # + 0.0 * carbon (the default) changes no bit of the paper's two-term reward
        reward = -(
            c.jct_weight * terms.jct + c.cost_weight * terms.cost + c.carbon_weight * terms.carbon
        )
        if terms.illegal:
            reward -= c.illegal_penalty
        return float(reward)

    def components(self, terms: RewardTerms) -> dict[str, Any]:
        """The weighted parts (they add up to the reward, penalty aside)."""
        c = self.config
        return {
            "reward_jct": -c.jct_weight * terms.jct,
            "reward_cost": -c.cost_weight * terms.cost,
            "reward_carbon": -c.carbon_weight * terms.carbon,
        }

    def __repr__(self) -> str:
        return f"JctCostReward({self.config!r})"


class VectorReward(RewardFn):
    """The unweighted terms as a vector, ``[-jct, -cost, -carbon]`` by default (MO-Gymnasium
    style).

    ``terms`` names the :class:`RewardTerms` fields to return, in order (``("jct", "cost")``
    for the paper's two objectives alone). No illegal-action penalty: ``info["illegal_action"]``
    carries the flag. Gymnasium's checkers expect a scalar reward; MO-Gymnasium's wrappers (or a
    linear scalarisation) take this one.
    """

    def __init__(self, terms: Sequence[str] = ("jct", "cost", "carbon")) -> None:
        known = RewardTerms.names()
        names = tuple(terms)
        if not names or any(n not in known for n in names):
            raise ValidationError("reward.terms", list(names), f"choose among {list(known)}")
        self.terms = names

    def __call__(self, terms: RewardTerms) -> np.ndarray:
        return np.array([-getattr(terms, name) for name in self.terms])

    @property
    def reward_space(self) -> Any:
        """``Box(-inf, 0, (len(terms),))``: every term is a cost, so each entry is <= 0."""
        from gymnasium import spaces  # the core stays free of gymnasium; this is env-side

        return spaces.Box(-np.inf, 0.0, shape=(len(self.terms),), dtype=np.float64)

    def __repr__(self) -> str:
        return f"VectorReward(terms={self.terms!r})"


class DeadlineReward(RewardFn):
    """Minus one deadline term of :class:`RewardTerms` (semantics §15): ``"misses"``, -1 for
    each job at the step where its deadline passes with the job unfinished (or where it
    finishes late, when that comes within the same interval), so that an episode's rewards sum
    to minus its misses; or ``"tardiness"``, minus the tardiness the jobs accrued during the
    step in hours over the jobs with a deadline (``RewardScales.tardiness_norm``), so that they
    sum to minus the episode's total tardiness in hours over those jobs (the mean tardiness).
    No illegal-action penalty, as :class:`VectorReward`. 0 at every step of an episode
    without deadlines."""

    TERMS = ("misses", "tardiness")

    def __init__(self, term: str = "misses") -> None:
        if term not in self.TERMS:
            raise ValidationError("reward.term", term, f"choose among {list(self.TERMS)}")
        self.term = term

    def __call__(self, terms: RewardTerms) -> float:
        return -float(getattr(terms, self.term))

    def components(self, terms: RewardTerms) -> dict[str, Any]:
        """The unweighted parts, and this reward's own (``reward_misses`` or
        ``reward_tardiness``)."""
        return {**super().components(terms), f"reward_{self.term}": self(terms)}

    def __repr__(self) -> str:
        return f"DeadlineReward({self.term!r})"


#: The rewards a string names: ``reward="vector"``, ``"misses"`` or ``"tardiness"``.
REWARDS: dict[str, Callable[[], RewardFn]] = {
    "vector": VectorReward,
    "misses": lambda: DeadlineReward("misses"),
    "tardiness": lambda: DeadlineReward("tardiness"),
}


def make_reward(
    reward: RewardFn | RewardConfig | Mapping[str, float] | str | None,
) -> RewardFn:
    """``reward`` itself if it is a :class:`RewardFn`, a name of :data:`REWARDS` that reward
    (``"vector"``: :class:`VectorReward` of JCT, cost and carbon; ``"misses"``,
    ``"tardiness"``: :class:`DeadlineReward`), else the default :class:`JctCostReward` with
    its weights (a :class:`RewardConfig`, a mapping of its fields, or None: defaults)."""
    if isinstance(reward, RewardFn):
        return reward
    if isinstance(reward, str):
        make = REWARDS.get(reward)
        if make is None:
            names = ", ".join(repr(name) for name in REWARDS)
            raise ValidationError("reward", reward, f"a string reward must be one of {names}")
        return make()
    return JctCostReward(coerce_config(RewardConfig, reward, "reward"))
