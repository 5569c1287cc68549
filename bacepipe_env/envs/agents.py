"""Every named policy as an agent on :class:`GeoPipeEnv`, behind one ``predict`` protocol that
learned agents share, and one evaluation loop for all of them.

A policy is an ordering and a placement. In the environment the placement is the env's own
(``agent.placement`` names it); the agent is the ordering, the very object the simulator uses
(:func:`~bacepipe_env.policies.registry.make_policy`), deciding from the typed
:class:`~bacepipe_env.core.snapshot.QueueSnapshot` the environment publishes for its visible
window, and the action mask. A preemptive policy's rule either runs inside the env's
simulator (``preemption=``, what :func:`agent_env_kwargs` passes by default) or, on an env
with preempt actions (``preempt_window``), plays them: the agent asks the very rule object
the simulator would, on the :class:`~bacepipe_env.core.preemption.PreemptionView` the env
publishes. Nothing here touches the simulator.

``HeuristicAgent.predict`` has Stable-Baselines3's ``PolicyPredictor`` signature, so
``stable_baselines3.common.evaluation.evaluate_policy`` takes an agent bound to the env it
plays (``agent.bind(env)``; a vector env too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..core.metrics import ordered
from ..core.preemption import PreemptionRule, make_preemption
from ..core.snapshot import QueueSnapshot
from ..errors import ValidationError
from ..policies.base import Ordering
from ..policies.registry import make_planner, make_policy, policy_info, policy_names
from ..policies.rollout import RolloutPlanner, is_rollout, parse_rollout

__all__ = [
    "AGENT_ENV",
    "AGENT_PLACEMENTS",
    "Agent",
    "EpisodeResult",
    "HeuristicAgent",
    "RolloutAgent",
    "agent_env_kwargs",
    "agent_placement",
    "check_plays",
    "evaluate",
    "make_agent",
    "run_episode",
]


@runtime_checkable
class Agent(Protocol):
    """What the evaluation loop needs from any orderer, heuristic or learned."""

    name: str
    placement: str  # the placement policy the env must use for this agent

    def predict(self, observation: Any, *, info: Mapping[str, Any] | None = None) -> Any:
        """The action (window slot) to play, or SB3's ``(action, state)``; ``info`` is the
        env's last info dict."""
        ...

    def reset(self, seed: int | None = None) -> None:
        """Called at the start of every episode."""
        ...


def agent_placement(name: str) -> str:
    """The env placement the agent of policy ``name`` needs: the name of the policy's own
    placement. A ValidationError unless the policy can play as an agent: its ordering must
    decide from a snapshot (the oracle, which needs the whole scenario, cannot)."""
    policy = make_policy(name)  # validates the name
    if policy_info(name).oracle or not isinstance(policy.ordering, Ordering):
        playable = [n for n in policy_names() if isinstance(make_policy(n).ordering, Ordering)]
        raise ValidationError(
            "agent", name, f"cannot play as an agent; choose from: {', '.join(playable)}"
        )
    return policy.placement.name


#: Built-in policy -> the env placement its agent needs (see :func:`agent_placement`).
AGENT_PLACEMENTS: dict[str, str] = {
    n: make_policy(n).placement.name
    for n in policy_names()
    if isinstance(make_policy(n).ordering, Ordering)
}


def agent_env_kwargs(name: str, *, preempt_actions: bool = False) -> dict[str, str]:
    """The env arguments the agent of policy ``name`` needs: its placement, for a waiting
    heuristic its admission rule (the env then declines what the rule declines), for a
    preemptive one its preemption rule (the env's simulator applies it), unless
    ``preempt_actions``: on an env with preempt actions the agent plays the rule itself, and
    for an elastic one (``+elastic``) its elasticity rule (the env's simulator applies it)."""
    out = {"placement": agent_placement(name)}
    info = policy_info(name)
    if info.admission is not None:
        out["admission"] = info.admission
    if info.preemption is not None and not preempt_actions:
        out["preemption"] = info.preemption
    if info.elasticity is not None:
        out["elasticity"] = info.elasticity
    return out


def check_plays(name: str, env: Any) -> None:
    """One line (a ValidationError) unless ``env`` (a GeoPipeEnv, wrapped or not, after its
    reset) plays by what policy ``name`` needs: its placement, and each admission, preemption
    and elasticity rule the policy has of its own. A waiting heuristic on an env without its
    admission rule would silently play as its plain ordering; ``gym.make(id, policy=name)``
    (or ``**agent_env_kwargs(name)``) is the way that carries every part."""
    base = getattr(env, "unwrapped", env)
    sim = getattr(base, "sim", None)
    settings = getattr(base, "settings", None)
    if sim is None or settings is None:
        return  # not a GeoPipeEnv, or before its reset: nothing to read yet
    needs = agent_env_kwargs(name, preempt_actions=settings.preempt_window > 0)
    have = {"placement": settings.placement.name, "admission": sim.admission.name}
    have |= {"preemption": sim.preemption.name, "elasticity": sim.elasticity.name}
    for part, want in needs.items():
        if have[part] != want:
            raise ValidationError(
                "env",
                f"{part}={have[part]}",
                f"{name} plays with {part} {want!r}: make the env with policy={name!r}",
            )


#: Built-in policy -> :func:`agent_env_kwargs`, for ``GeoPipeEnv(..., **AGENT_ENV[name])``.
AGENT_ENV: dict[str, dict[str, str]] = {n: agent_env_kwargs(n) for n in AGENT_PLACEMENTS}


class HeuristicAgent:
    """A registered policy's ordering playing the environment. Its decisions equal the
    simulator's run of the same policy, bit for bit, when the window ``max_queue`` covers the
    pending queue (the ordering is the same object, reading the same numbers)."""

    def __init__(self, name: str, seed: int = 0, env: Any = None) -> None:
        self.placement = agent_placement(name)  # validates the name
        self.admission: str | None = policy_info(name).admission  # a waiting heuristic's rule
        # a preemptive heuristic's rule, which plays an env's preempt actions
        spec = policy_info(name).preemption
        self.preemption: PreemptionRule | None = None if spec is None else make_preemption(spec)
        self.name = name
        self._seed = seed
        self.ordering: Ordering = self._ordering(seed)
        self._env = env
        self._checked: Any = None  # the bound env whose rules were checked

    def _ordering(self, seed: int) -> Ordering:
        ordering = make_policy(self.name, seed=seed).ordering
        assert isinstance(ordering, Ordering)
        return ordering

    @property
    def env_kwargs(self) -> dict[str, str]:
        """The env arguments this agent needs (:func:`agent_env_kwargs`)."""
        return agent_env_kwargs(self.name)

    def reset(self, seed: int | None = None) -> None:
        """A fresh ordering, seeded like the simulator's policy for this episode's seed."""
        self.ordering = self._ordering(self._seed if seed is None else seed)

    def bind(self, env: Any) -> HeuristicAgent:
        """Read the snapshot and mask from ``env`` (a GeoPipeEnv, wrapped or not, or an SB3 /
        Gymnasium vector env of them) when ``predict`` gets no ``info``; returns self."""
        self._env = env
        return self

    def act(
        self,
        queue: QueueSnapshot,
        mask: Any,
        preemption: Any = None,
        slot_actions: Sequence[int] | None = None,
    ) -> int:
        """The slot this policy's ordering picks among the legal ones (``mask``), as the action
        that places its job with its default copies (``slot_actions``, the env's; the slot
        itself without replica actions); at a decision to preempt (``preemption``, the env's
        :class:`~bacepipe_env.envs.features.PreemptionWindow`), the preempt action of the job
        its rule chooses, else the wait."""
        legal_mask = np.asarray(mask, dtype=bool)
        if slot_actions is None:
            slot_actions = range(len(queue))
        legal = [i for i, a in enumerate(slot_actions) if legal_mask[a]]
        if legal:
            return int(slot_actions[int(self.ordering.pick(queue, legal))])
        view = getattr(preemption, "view", None)
        if view is not None and self.preemption is not None:
            victim = self.preemption.choose(view)
            action = None if victim is None else preemption.action(victim)
            if action is not None and legal_mask[action]:
                return int(action)
        return int(np.flatnonzero(legal_mask)[0])  # the wait: it comes before preempt slots

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        *,
        info: Mapping[str, Any] | None = None,
    ) -> tuple[np.ndarray, None]:
        """SB3's ``PolicyPredictor.predict``: the action(s) and no recurrent state. With
        ``info`` (the env's last info dict) it reads ``info["queue"]`` and the mask there;
        otherwise it reads them from the bound env."""
        if info is not None:
            action = self.act(
                info["queue"], info["action_mask"], info.get("preemption"), info.get("slot_actions")
            )
            return np.asarray(action), None
        env = self._env
        if env is None:
            raise ValidationError(
                "agent", self.name, "needs the env's info, or bind it first: agent.bind(env)"
            )
        if hasattr(env, "get_attr") and hasattr(env, "env_method"):  # an SB3 vector env
            queues = env.get_attr("queue_snapshot")
            masks = env.env_method("action_masks")
            windows = env.get_attr("preemption_window")
            slots = env.get_attr("slot_actions")
            acts = [self.act(*args) for args in zip(queues, masks, windows, slots)]
            return np.array(acts), None
        if hasattr(env, "envs"):  # a Gymnasium SyncVectorEnv
            inner = [e.unwrapped for e in env.envs]
            acts = [
                self.act(e.queue_snapshot, e.action_masks(), e.preemption_window, e.slot_actions)
                for e in inner
            ]
            return np.array(acts), None
        base = env.unwrapped
        if base is not self._checked:  # once per env it plays: its rules are its policy's
            check_plays(self.name, base)
            self._checked = base
        action = self.act(
            base.queue_snapshot, base.action_masks(), base.preemption_window, base.slot_actions
        )
        return np.asarray(action), None


class RolloutAgent:
    """A rollout planner (``rollout:<base>``, :mod:`~bacepipe_env.policies.rollout`) playing
    the environment. Unlike a heuristic it reads the env's simulator, which it forks at each
    decision, so it must be bound to the env it plays (:meth:`bind`; ``evaluate`` and
    ``bacepipe headroom`` bind it). It tries the base's top ``k`` slots of the legal window
    and the wait action when the mask offers it, and at a decision to preempt the base rule's
    choice and the other legal preempt actions; ``objective=reward`` scores forks by the
    env's own reward (its weights and this episode's scales)."""

    def __init__(self, name: str, seed: int = 0, env: Any = None) -> None:
        info = policy_info(name)  # validates the name, its base and its settings
        self.settings = parse_rollout(name)
        self.base = self.settings.base  # the heuristic whose rules it plays by
        self.placement = agent_placement(self.settings.base)
        self.admission: str | None = info.admission
        spec = info.preemption
        self.rule: PreemptionRule = make_preemption("none" if spec is None else spec)
        self.name = name
        self._seed = seed
        self._env = env
        self.planner = self._planner(seed)

    def _planner(self, seed: int) -> RolloutPlanner:
        objective = None
        if self.settings.objective == "reward":
            objective = self._reward_objective
        planner = make_planner(self.name, seed, objective)
        planner.reuse = False  # the env decides some steps itself (declines, passes)
        return planner

    def _reward_objective(self, sim: Any) -> tuple[float, ...]:
        """Minus the env's return over the fork (its reward terms summed to the end)."""
        env = self._bound().unwrapped
        config = getattr(env.reward_fn, "config", None)
        if config is None:
            raise ValidationError(
                "rollout objective", "reward", "needs a scalar reward (JctCostReward)"
            )
        sc = env.reward_scales
        return (
            config.jct_weight * sim.job_seconds / sc.jct_norm
            + config.cost_weight * sim.cost_accrued / sc.cost_norm
            + config.carbon_weight * sim.carbon_accrued / sc.carbon_norm,
        )

    @property
    def env_kwargs(self) -> dict[str, str]:
        """The env arguments this agent needs: its base's (:func:`agent_env_kwargs`)."""
        return agent_env_kwargs(self.settings.base)

    def reset(self, seed: int | None = None) -> None:
        """A fresh planner for the episode."""
        self.planner = self._planner(self._seed if seed is None else seed)

    def bind(self, env: Any) -> RolloutAgent:
        """Plan on ``env``'s simulator (a GeoPipeEnv, wrapped or not); returns self."""
        self._env = env
        return self

    def _bound(self) -> Any:
        if self._env is None or not hasattr(self._env, "unwrapped"):
            raise ValidationError(
                "agent", self.name, "plans on the env's simulator: bind it first, agent.bind(env)"
            )
        return self._env

    def act(self, env: Any) -> int:
        """The action the planner takes at ``env``'s current decision."""
        sim, mask = env.sim, env.action_masks()
        queue, window, q = env.queue_snapshot, env.preemption_window, env.n_place
        can_wait = bool(len(mask) > q and mask[q])
        slots = [i for i, a in enumerate(env.slot_actions) if mask[a]]
        planner = self.planner
        if slots:
            jobs = [queue.job_ids[i] for i in slots]
            # the counts of copies the env's actions can express (replica_choices)
            r = env.settings.replica_choices
            actions = planner.placement_actions(sim, jobs, can_wait)
            actions = [a for a in actions if len(a) < 3 or (r and a[2] <= r)]
            chosen = planner.best(sim, actions, self.rule)
            if chosen[0] != "place":
                return int(q)
            return int(env.place_action(queue.job_ids.index(chosen[1]), *chosen[2:]))
        view = getattr(window, "view", None)
        if view is not None:
            options = [j for j in window.job_ids if mask[window.action(j)]]
            actions = planner.preemption_actions(sim, options, self.rule)
            # only what the env offers: the rule may name a job outside the window
            actions = [a for a in actions if a[0] != "preempt" or a[1] in options] or [
                ("decline", -1)
            ]
            kind, job = planner.best(sim, actions, self.rule)[:2]
            if kind == "preempt":
                return int(window.action(job))
        return q if can_wait else int(np.flatnonzero(mask)[0])

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        *,
        info: Mapping[str, Any] | None = None,
    ) -> tuple[np.ndarray, None]:
        """SB3's ``PolicyPredictor.predict`` on the bound env (one env, not a vector)."""
        return np.asarray(self.act(self._bound().unwrapped)), None


def make_agent(name: str, seed: int = 0) -> HeuristicAgent | RolloutAgent:
    """The agent of a registered policy (``bacepipe policies`` lists them) or of a rollout
    planner (``rollout:<base>``, which must then be bound to its env)."""
    if is_rollout(name):
        return RolloutAgent(name, seed)
    return HeuristicAgent(name, seed)


@dataclass(frozen=True, eq=False)
class EpisodeResult:
    """One evaluated episode: its return, steps and illegal actions, and the figures of the
    :data:`~bacepipe_env.core.metrics.METRICS` rows marked ``episode`` (by their ``key``).
    Two results are equal when every field is, a figure the episode lacks (NaN: no deadline
    in a world without deadlines) equal to another lacking one."""

    agent: str
    seed: int
    episode_return: float
    avg_jct_h: float
    total_cost_usd: float
    steps: int
    illegal_actions: int
    carbon_kg: float = float("nan")  # the episode's emissions (kg CO2e)
    miss_rate: float = float("nan")  # deadline misses (NaN: no job had a deadline, §15)
    total_tardiness_h: float = float("nan")  # hours late, summed (NaN: no deadlines)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EpisodeResult):
            return NotImplemented
        return all(_same(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))

    def __hash__(self) -> int:
        return hash((self.agent, self.seed, self.steps))


def _same(a: object, b: object) -> bool:
    """``a == b``, two NaNs counting as the same figure."""
    return a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)


_OWN = {"agent", "seed", "episode_return", "steps", "illegal_actions"}
assert {f.name for f in fields(EpisodeResult)} - _OWN == {m.key for m in ordered("episode")}, (
    "EpisodeResult's figures != the METRICS rows with episode=True"
)


def run_episode(env: Any, agent: Agent, seed: int) -> EpisodeResult:
    """Play one episode of ``env`` (a GeoPipeEnv, possibly wrapped) with ``agent``; a
    heuristic's or a planner's env must play by its policy's rules (:func:`check_plays`)."""
    agent.reset(seed)
    obs, info = env.reset(seed=seed)
    if isinstance(agent, (HeuristicAgent, RolloutAgent)):
        check_plays(agent.name if isinstance(agent, HeuristicAgent) else agent.base, env)
    total, steps, illegal = 0.0, 0, 0
    while True:
        action = agent.predict(obs, info=info)
        if isinstance(action, tuple):  # SB3's (action, state)
            action = action[0]
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        steps += 1
        illegal += int(bool(info.get("illegal_action", False)))
        if terminated or truncated:
            break
    figures = {  # NaN when the env's last info lacks them
        m.key: m.shown(float(info.get(m.info[0], float("nan")))) for m in ordered("episode")
    }
    return EpisodeResult(agent.name, seed, total, steps=steps, illegal_actions=illegal, **figures)


def evaluate(env: Any, agent: Agent, seeds: Sequence[int]) -> list[EpisodeResult]:
    """One episode per seed; the same loop serves heuristics and learned agents."""
    return [run_episode(env, agent, s) for s in seeds]
