"""Every named policy as an agent on :class:`GeoPipeEnv`, behind one ``predict`` protocol that
learned agents share, and one evaluation loop for all of them.

A policy is an ordering and a placement. In the environment the placement is the env's own
(``make_env_for``/``agent.placement``); the agent is the ordering, and it reads only what a
learned agent gets: the observation and the step's ``info`` (float64 job features of the
visible window, the pending queue's maxima, alpha). Nothing here touches the simulator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..core.units import SECONDS_PER_HOUR
from ..errors import ValidationError
from ..policies.registry import policy_info, policy_names
from ..scheduling.priority import _priority_scores

__all__ = [
    "AGENT_PLACEMENTS",
    "Agent",
    "EpisodeResult",
    "HeuristicAgent",
    "evaluate",
    "make_agent",
    "run_episode",
]


@runtime_checkable
class Agent(Protocol):
    """What the evaluation loop needs from any orderer, heuristic or learned."""

    name: str
    placement: str  # the placement policy the env must use for this agent

    def predict(
        self, observation: Any, info: Mapping[str, Any] | None = None, *, deterministic: bool = True
    ) -> int:
        """The action (window slot) to play; ``info`` is the env's last info dict."""
        ...

    def reset(self, seed: int | None = None) -> None:
        """Called at the start of every episode."""
        ...


#: Registered policy -> the env placement it needs. The ordering is the agent.
AGENT_PLACEMENTS: dict[str, str] = {
    "bace-pipe": "pathfinder",
    "lcf": "lcf",
    "ldf": "ldf",
    "cr-lcf": "cr-lcf",
    "cr-ldf": "cr-ldf",
    "no-priority": "pathfinder",
    "no-pathfinder": "cr-ldf+cost-min",
    "no-costmin": "pathfinder+even",
    "fcfs": "pathfinder",
    "sjf": "pathfinder",
    "random": "pathfinder",
}
_ORDERING = {
    "bace-pipe": "priority",
    "no-pathfinder": "priority",
    "no-costmin": "priority",
    "sjf": "sjf",
    "random": "random",
}


class HeuristicAgent:
    """A registered policy's ordering, computed from ``info`` exactly as the simulator's
    policy computes it, so that an env episode reproduces the simulator run (when the window
    ``max_queue`` covers the pending queue)."""

    def __init__(self, name: str, seed: int = 0) -> None:
        policy_info(name)  # validates the name
        self.name = name
        self.placement = AGENT_PLACEMENTS[name]
        self.ordering = _ORDERING.get(name, "fcfs")
        self._seed = seed
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the random ordering (others keep no state)."""
        self.rng = np.random.default_rng(self._seed if seed is None else seed)

    def predict(
        self, observation: Any, info: Mapping[str, Any] | None = None, *, deterministic: bool = True
    ) -> int:
        """The slot this policy's ordering picks among the legal ones."""
        if info is None:
            raise ValidationError("info", None, f"agent {self.name!r} reads the env's info dict")
        mask = np.asarray(info["action_mask"], dtype=bool)
        ids = info["queue_job_ids"]
        legal: list[int] = [
            i for i in np.flatnonzero(mask).tolist() if i < len(ids) and ids[i] >= 0
        ]
        if not legal:  # only "wait" is legal
            return int(np.flatnonzero(mask)[0])
        if self.ordering == "fcfs":
            return int(legal[0])
        if self.ordering == "random":
            return int(legal[int(self.rng.integers(len(legal)))])
        e1 = info["queue_e1_s"]
        if self.ordering == "sjf":
            return int(min(legal, key=lambda i: float(e1[i])))
        # Eqs. (9)-(12), normalised over the whole pending queue like the simulator's policy:
        # the pending maxima are prepended so that _priority_scores divides by them.
        e = [float(info["pending_e1_max_s"]), *(float(e1[i]) for i in legal)]
        b = [
            float(info["pending_bkstar_max_Bps"]),
            *(float(info["queue_bkstar_Bps"][i]) for i in legal),
        ]
        scores = _priority_scores(e, b, float(info["alpha"]))[1:]
        best = max(range(len(legal)), key=lambda k: (scores[k], -k))
        return int(legal[best])


def make_agent(name: str, seed: int = 0) -> HeuristicAgent:
    """The agent of a registered policy (``bacepipe policies`` lists them)."""
    if name not in AGENT_PLACEMENTS:
        raise ValidationError(
            "agent", name, f"unknown agent; choose from: {', '.join(policy_names())}"
        )
    return HeuristicAgent(name, seed)


@dataclass(frozen=True)
class EpisodeResult:
    """One evaluated episode."""

    agent: str
    seed: int
    episode_return: float
    avg_jct_h: float
    total_cost_usd: float
    steps: int
    illegal_actions: int


def run_episode(env: Any, agent: Agent, seed: int) -> EpisodeResult:
    """Play one episode of ``env`` (a GeoPipeEnv, possibly wrapped) with ``agent``."""
    agent.reset(seed)
    obs, info = env.reset(seed=seed)
    total, steps, illegal = 0.0, 0, 0
    while True:
        action = agent.predict(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        steps += 1
        illegal += int(bool(info.get("illegal_action", False)))
        if terminated or truncated:
            break
    avg = float(info.get("episode_avg_jct_s", float("nan"))) / SECONDS_PER_HOUR
    cost = float(info.get("episode_total_cost_usd", float("nan")))
    return EpisodeResult(agent.name, seed, total, avg, cost, steps, illegal)


def evaluate(env: Any, agent: Agent, seeds: Sequence[int]) -> list[EpisodeResult]:
    """One episode per seed; the same loop serves heuristics and learned agents."""
    return [run_episode(env, agent, s) for s in seeds]
