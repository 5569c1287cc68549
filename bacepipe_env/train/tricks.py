"""Training-time wrappers for PPO on GeoPipe, from the learned schedulers that beat heuristics
elsewhere (Decima, Mao et al. 2019; "Variance reduction for reinforcement learning in
input-driven environments", Mao et al. 2019):

- :class:`RelativeReward`: the episode's return minus a heuristic's return on the same
  episode, so that what the agent is paid for is beating the heuristic on this arrival
  sequence, not the sequence's own difficulty;
- :class:`RepeatArrivals`: each arrival sequence (reset seed) is played several times in a
  row, so that the rollouts of one sequence can be compared with each other;
- :class:`Curriculum`: episodes of growing length, as job counts by stage.

``bacepipe train learn --relative-to sjf+finish-aware --repeat-arrivals 4 --curriculum
20,40,80`` applies them to the training environments only: the held-out evaluation plays the
plain env.
"""

from __future__ import annotations

import dataclasses
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from ..errors import ValidationError
from ..policies.registry import make_policy
from ..scenarios.generators import RandomScenarioGenerator, ScenarioSampler

__all__ = ["Curriculum", "RelativeReward", "RepeatArrivals", "baseline_return"]


def baseline_return(env: Any, policy: Any) -> float:
    """``policy``'s return on ``env``'s current episode, in the env's own reward: its jobs'
    summed JCT, cost (electricity and egress) and carbon, weighted and scaled as the env's
    :class:`~bacepipe_env.envs.reward.JctCostReward` weights and scales them; under a
    :class:`~bacepipe_env.envs.reward.DeadlineReward` (semantics §15) minus its misses
    (``"misses"``) or its total tardiness over the env's ``tardiness_norm`` (``"tardiness"``),
    what that reward sums to over an episode. The simulator plays the policy on the episode's
    scenario (its own admission and preemption rules)."""
    from ..envs.reward import DeadlineReward

    base = env.unwrapped
    if isinstance(base.reward_fn, DeadlineReward):
        result = policy.simulate(base.scenario)
        if base.reward_fn.term == "misses":
            return -float(sum(r.missed for r in result.records))
        return -float(result.total_tardiness / base.reward_scales.tardiness_norm)
    config = getattr(base.reward_fn, "config", None)
    if config is None or not hasattr(config, "jct_weight"):
        raise ValidationError(
            "relative_to", policy, "needs the env's scalar JctCostReward or a deadline reward"
        )
    result = policy.simulate(base.scenario)
    sc = base.reward_scales
    jct = sum(r.jct for r in result.records)
    cost = result.total_cost + result.total_egress_cost
    return -float(
        config.jct_weight * jct / sc.jct_norm
        + config.cost_weight * cost / sc.cost_norm
        + config.carbon_weight * result.total_carbon / sc.carbon_norm
    )


class RelativeReward(gym.Wrapper[Any, Any, Any, Any]):
    """The env's rewards, and at the episode's last step (``terminated``) minus the return of
    the heuristic ``baseline`` on the same episode: an episode's return becomes the agent's
    return minus the heuristic's (0 when the agent plays as the heuristic does). A truncated
    episode gets no correction (its heuristic return would be of a whole episode)."""

    def __init__(self, env: gym.Env[Any, Any], baseline: str) -> None:
        super().__init__(env)
        self.baseline = baseline
        self._policy = make_policy(baseline)  # a one-line error for an unknown name
        self._offset = 0.0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Reset, and play the heuristic on the new episode."""
        obs, info = self.env.reset(**kwargs)
        self._offset = baseline_return(self.env, self._policy)
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """The env's step; at the last step the heuristic's return is subtracted."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated:
            reward = float(reward) - self._offset
            info["baseline_return"] = self._offset
        return obs, reward, terminated, truncated, info


class RepeatArrivals(gym.Wrapper[Any, Any, Any, Any]):
    """Each arrival sequence ``times`` times in a row: a reset without a seed reuses the last
    reset seed until it has been played ``times`` times, then draws the next from its own
    generator (seeded by the first explicit reset seed, or ``seed``)."""

    def __init__(self, env: gym.Env[Any, Any], times: int, seed: int = 0) -> None:
        super().__init__(env)
        if not isinstance(times, int) or isinstance(times, bool) or not 1 <= times <= 1000:
            raise ValidationError("repeat_arrivals", times, "must be a whole number in [1, 1000]")
        self.times = times
        self._rng = np.random.default_rng(seed)
        self._left = 0
        self._seed = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset with the current sequence's seed (a new one every ``times`` resets)."""
        if seed is not None:  # a new stream, as Gymnasium's seeding is
            self._rng = np.random.default_rng(seed)
            self._left = 0
        if self._left == 0:
            self._seed = int(self._rng.integers(2**31 - 1))
            self._left = self.times
        self._left -= 1
        return self.env.reset(seed=self._seed, options=options)


class Curriculum(gym.Wrapper[Any, Any, Any, Any]):
    """Episodes of ``stages[i]`` jobs once this env has taken ``i * stage_steps`` steps (the
    last stage stays): short episodes first, the full length last. The env's generator is
    rebuilt for each stage from its own scenario and world (a named scenario or file, or the
    random generator), so its window and spaces stay as built."""

    def __init__(self, env: gym.Env[Any, Any], stages: list[int], stage_steps: int) -> None:
        super().__init__(env)
        if not stages:
            raise ValidationError("curriculum", stages, "needs at least one job count")
        self.stages, self.stage_steps = list(stages), max(1, int(stage_steps))
        self.steps = 0
        self.stage = -1
        self._base = getattr(env.unwrapped, "generator", None)

    def _generator(self, n_jobs: int) -> Any:
        base = self._base
        if isinstance(base, ScenarioSampler):
            return ScenarioSampler(base.source, world=base.template.world, n_jobs=n_jobs)
        if isinstance(base, RandomScenarioGenerator):
            return dataclasses.replace(base, n_jobs=(n_jobs, n_jobs))
        raise ValidationError("curriculum", self.stages, "needs a named scenario, a file or random")

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Reset in the stage this env's step count has reached."""
        stage = min(self.steps // self.stage_steps, len(self.stages) - 1)
        if stage != self.stage:
            self.stage = stage
            self.env.unwrapped.generator = self._generator(self.stages[stage])  # type: ignore[attr-defined]
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """The env's step, counted."""
        self.steps += 1
        return self.env.step(action)
