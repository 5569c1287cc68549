"""The environment's reward: per-episode scales, typed per-step terms, and reward functions.

Each step the environment measures what the interval since the previous decision cost, as
:class:`RewardTerms` (job-seconds and electricity, divided by the episode's
:class:`RewardScales`), and hands them to its :class:`RewardFn`, called once per step. The
default :class:`JctCostReward` weighs them into one scalar whose episode sum is an affine
function of the paper's two objectives; :class:`VectorReward` returns them unweighted as a
vector (MO-Gymnasium style).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, SupportsFloat

import numpy as np

from ..core.scenario import Scenario
from ..core.simulator import RunResult, Simulator
from ..core.units import SECONDS_PER_HOUR
from ..errors import ValidationError
from .config import RewardConfig, coerce_config

__all__ = [
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
    that way at the cluster's mean price. The one place where jobs that have not arrived yet
    count: the reward's scale, never the observation or the mask.
    """

    jct_norm: float  # s
    cost_norm: float  # $
    n_jobs: int

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
        return cls(max(jct_norm, 1e-9), max(cost_norm, 1e-12), len(scenario.jobs))


@dataclass(frozen=True, slots=True)
class RewardTerms:
    """What one step's interval cost, normalised by the episode's :class:`RewardScales`.

    ``jct`` is ``dJ / jct_norm``, with ``dJ`` the job-seconds spent in the system (jobs submitted
    and not finished, times the elapsed time); ``cost`` is ``dC / cost_norm``, with ``dC`` the
    electricity cost of the running jobs. Both are >= 0 and sum over an episode to
    ``avg_JCT / jct_scale`` and ``total_cost / cost_scale``. ``illegal`` says whether the
    agent's action was replaced by the fallback.
    """

    jct: float = 0.0
    cost: float = 0.0
    illegal: bool = False

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The numeric terms, in order (what :class:`VectorReward` may select)."""
        return tuple(f.name for f in fields(cls) if f.name != "illegal")


class RewardMeter:
    """Measures each step's :class:`RewardTerms` on one episode's simulator: the job-seconds
    and the cost accrued since the previous measurement, divided by the episode's scales."""

    def __init__(self, scenario: Scenario) -> None:
        self.scales = RewardScales.of(scenario)
        self._job_seconds = self._cost = 0.0

    def __call__(self, sim: Simulator, illegal: bool) -> RewardTerms:
        """The terms of the interval since the previous call (or the start)."""
        js, cost = sim.job_seconds, sim.cost_accrued
        terms = RewardTerms(
            (js - self._job_seconds) / self.scales.jct_norm,
            (cost - self._cost) / self.scales.cost_norm,
            illegal,
        )
        self._job_seconds, self._cost = js, cost
        return terms


def episode_info(result: RunResult) -> dict[str, float]:
    """The paper's objectives of a finished episode, for the last step's ``info``."""
    return {
        "episode_avg_jct_s": result.avg_jct,
        "episode_avg_jct_h": result.avg_jct / SECONDS_PER_HOUR,
        "episode_total_cost_usd": result.total_cost,
        "episode_makespan_s": result.makespan,
    }


class RewardFn(abc.ABC):
    """The reward of one step, from its :class:`RewardTerms`; called once per step."""

    @abc.abstractmethod
    def __call__(self, terms: RewardTerms) -> SupportsFloat | np.ndarray:
        """The reward the environment returns for a step whose interval cost ``terms``."""

    def components(self, terms: RewardTerms) -> dict[str, Any]:
        """The reward's parts, for ``info`` (``reward_jct``, ``reward_cost``); unweighted here."""
        return {"reward_jct": -terms.jct, "reward_cost": -terms.cost}


class JctCostReward(RewardFn):
    """``r_t = -(jct_weight * jct + cost_weight * cost) - illegal_penalty * [illegal]``.

    Summed over an episode: ``-(jct_weight * avg_JCT / jct_scale + cost_weight * total_cost /
    cost_scale) - penalties``, exactly up to float rounding. The default reward.
    """

    def __init__(self, config: RewardConfig | None = None) -> None:
        self.config = RewardConfig() if config is None else config
        if not isinstance(self.config, RewardConfig):
            raise ValidationError("reward", config, "must be a RewardConfig")

    def __call__(self, terms: RewardTerms) -> float:
        c = self.config
        reward = -(c.jct_weight * terms.jct + c.cost_weight * terms.cost)
        if terms.illegal:
            reward -= c.illegal_penalty
        return float(reward)

    def components(self, terms: RewardTerms) -> dict[str, Any]:
        """The weighted parts (they add up to the reward, penalty aside)."""
        c = self.config
        return {"reward_jct": -c.jct_weight * terms.jct, "reward_cost": -c.cost_weight * terms.cost}

    def __repr__(self) -> str:
        return f"JctCostReward({self.config!r})"


class VectorReward(RewardFn):
    """The unweighted terms as a vector, ``[-jct, -cost]`` by default (MO-Gymnasium style).

    ``terms`` names the :class:`RewardTerms` fields to return, in order, so that a term added
    there later (carbon) is one name here. No illegal-action penalty: ``info["illegal_action"]``
    carries the flag. Gymnasium's checkers expect a scalar reward; MO-Gymnasium's wrappers (or a
    linear scalarisation) take this one.
    """

    def __init__(self, terms: Sequence[str] = ("jct", "cost")) -> None:
        known = RewardTerms.names()
        names = tuple(terms)
        if not names or any(n not in known for n in names):
            raise ValidationError("reward.terms", list(names), f"choose among {list(known)}")
        self.terms = names

    def __call__(self, terms: RewardTerms) -> np.ndarray:
        return np.array([-getattr(terms, name) for name in self.terms])

    def __repr__(self) -> str:
        return f"VectorReward(terms={self.terms!r})"


def make_reward(reward: RewardFn | RewardConfig | Mapping[str, float] | None) -> RewardFn:
    """``reward`` itself if it is a :class:`RewardFn`, else the default :class:`JctCostReward`
    with its weights (a :class:`RewardConfig`, a mapping of its fields, or None: defaults)."""
    if isinstance(reward, RewardFn):
        return reward
    return JctCostReward(coerce_config(RewardConfig, reward, "reward"))
