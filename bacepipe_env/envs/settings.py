"""Every setting of a :class:`~bacepipe_env.envs.geopipe.GeoPipeEnv`, typed and validated once:
:class:`EnvSettings`, made by :func:`env_settings` from the env's keywords.

The keywords group into what a policy plays by (``policy``, or its parts ``placement``,
``admission``, ``preemption``, ``elasticity``), the decision space (``max_queue``,
``allow_wait``, ``preempt_window``, ``preempt_wake_h``, ``replica_choices``), the observation
(``observation``, ``scales``, ``preview`` and the switches of the optional arrays and
columns, ``grid_features``, ``fault_features``, ``running_features``, ``announce_window``,
``deadline_features``, with ``max_regions`` the padding), the reward (``reward``) and the
env's manners (``illegal_action``, ``info``, ``max_steps``, ``render_mode``).
docs/environment.md's "Registered variants" table gives every registered id's value of each.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.admission import AdmissionRule, make_admission
from ..core.elasticity import ElasticityRule, make_elasticity
from ..core.preemption import PreemptionRule, make_preemption
from ..core.simulator import PlacementPolicy
from ..core.validate import require_int
from ..errors import ValidationError
from . import config as cfg
from .config import ObsScales, make_placement
from .reward import RewardFn, make_reward

__all__ = [
    "ILLEGAL_ACTIONS",
    "ILLEGAL_WARNING",
    "INFO_LEVELS",
    "OBSERVATIONS",
    "RENDER_MODES",
    "SETTINGS",
    "EnvSettings",
    "env_settings",
]

#: ``observation=`` layouts, ``illegal_action=`` behaviours, ``info=`` levels and the render
#: modes the constructor accepts (whatever is installed; ``rgb_array`` draws with matplotlib).
OBSERVATIONS = ("dict", "flat", "masked")
ILLEGAL_ACTIONS = ("fallback", "raise")
INFO_LEVELS = ("lean", "full")
RENDER_MODES = ("ansi", "rgb_array")
#: What the first fallback of an env says (once per env instance: a learner that ignores the
#: mask would otherwise warn every step; one fixed text, so Python's filters also show it once).
ILLEGAL_WARNING = (
    "GeoPipeEnv: an illegal action was replaced by the first legal one; apply the action mask "
    "(MaskablePPO's action_masks, bacepipe_env.train.evaluate_model or sb3_contrib's maskable "
    "evaluate_policy), or pass illegal_action='raise' to make it an error "
    "(info['episode_illegal_actions'] counts them)"
)
#: The policy parts a ``policy=`` sets, which then may not be given apart with another value.
_POLICY_PARTS = ("placement", "admission", "preemption", "elasticity")


@dataclass(frozen=True)
class EnvSettings:
    """One env's settings, validated (see :func:`env_settings` for each keyword)."""

    placement: PlacementPolicy
    admission: AdmissionRule | None
    preemption: PreemptionRule | None
    elasticity: ElasticityRule | None
    max_queue: int
    max_regions: int
    allow_wait: bool
    observation_mode: str
    illegal_action: str
    reward_fn: RewardFn
    scales: ObsScales
    preview: bool
    grid_features: bool
    fault_features: bool
    running_features: bool
    preempt_window: int
    preempt_wake_s: float
    announce_window: int
    deadline_features: bool
    replica_choices: int
    info_level: str
    max_steps: int | None
    render_mode: str | None
    policy: str | None = None

    @property
    def simulator_rules(self) -> dict[str, Any]:
        """The :class:`~bacepipe_env.core.simulator.Simulator` keywords of these settings: the
        admission, preemption and elasticity rules, and whether the agent preempts."""
        return {
            "admission": self.admission,
            "preemption": self.preemption,
            "preemption_decisions": self.preempt_window > 0,
            "preemption_wake_s": self.preempt_wake_s,
            "elasticity": self.elasticity,
        }

    @property
    def n_place(self) -> int:
        """The place actions: one per window slot, or per slot and count of copies."""
        return self.max_queue * max(1, self.replica_choices)

    @property
    def n_actions(self) -> int:
        """Every action: the place actions, the wait (with ``allow_wait``, or to decline a
        preemption with preempt actions), then one per slot of the preemption window."""
        w = self.preempt_window
        return self.n_place + (1 if self.allow_wait or w else 0) + w

    @property
    def enabled(self) -> tuple[str, ...]:
        """The keywords that add optional observation arrays or columns
        (``features.OPTIONAL_FEATURES``)."""
        flags = {
            "grid_features": self.grid_features,
            "fault_features": self.fault_features,
            "running_features": self.running_features,
            "preempt_window": self.preempt_window > 0,
            "announce_window": self.announce_window > 0,
            "replica_choices": self.replica_choices > 0,
            "deadline_features": self.deadline_features,
        }
        return tuple(name for name, on in flags.items() if on)


def env_settings(
    generator: object,
    *,
    policy: str | None = None,
    placement: str | PlacementPolicy | None = None,
    admission: str | AdmissionRule | None = None,
    preemption: str | PreemptionRule | None = None,
    elasticity: str | ElasticityRule | None = None,
    max_queue: int | None = 16,
    max_regions: int | None = None,
    allow_wait: bool = False,
    observation: str = "dict",
    illegal_action: str = "fallback",
    reward: RewardFn | Mapping[str, float] | str | None = None,
    scales: ObsScales | Mapping[str, float] | None = None,
    preview: bool = True,
    grid_features: bool = False,
    fault_features: bool = False,
    running_features: bool = False,
    preempt_window: int = 0,
    preempt_wake_h: float = 1.0,
    announce_window: int = 0,
    deadline_features: bool = False,
    replica_choices: int = 0,
    info: str = "lean",
    max_steps: int | None = None,
    render_mode: str | None = None,
) -> EnvSettings:
    """The settings of an env drawing its episodes from ``generator``, each keyword checked
    (a one-line ValidationError naming it):

    - ``policy``: a registered heuristic whose placement, admission, preemption and elasticity
      rules the env plays by (``"sjf+finish-aware"``): the one way that carries all of them,
      what its agent needs (:func:`~bacepipe_env.envs.agents.agent_env_kwargs`). A part given
      too must agree with it.
    - ``placement``: a placement policy name or object (default ``"pathfinder"``).
    - ``admission``: ``"greedy"``, ``"finish-aware"``, ``"full"``, ``"announce-aware"`` or a
      rule (default: the scenario's). The mask offers the jobs whose placement fits in memory;
      the rule decides when one is chosen (a declined job waits for the next event).
    - ``preemption``: ``"none"``, ``"srtf"``, ``"las"`` (with settings) or a rule (default: the
      scenario's), applied by the simulator at the end of every pass; with
      ``preempt_window=N > 0`` the agent preempts instead (the rule must then be ``none``):
      one action per slot of a window of the first N running jobs, offered at the end of a
      pass where a preemption would let a pending job start. ``preempt_wake_h``: each attempt
      that has run this long (hours) makes a decision point there.
    - ``elasticity``: ``"none"``, ``"greedy"`` (with settings) or a rule (default: the
      scenario's), by which the simulator resizes running jobs' data-parallel copies.
      ``replica_choices=R > 0``: the agent also picks how many copies (1 .. R) a job starts
      with: R place actions per slot (``slot * R + d - 1``) and the ``replicas`` array
      (physical model only: the paper's has no copies, and R > 0 there is an error).
    - ``max_queue``: the visible window of candidates (None: the generator's ``max_jobs``);
      ``max_regions``: the region axis' padding (default: the generator's). ``allow_wait``:
      a last action that places nothing until the next event.
    - ``observation``: ``"dict"``, ``"flat"`` or ``"masked"`` (RLlib's action-masking layout);
      ``scales``: :class:`~bacepipe_env.envs.config.ObsScales` or a mapping; ``preview``: the
      placement previews (queue features 7-10, the ``replicas`` array and the mask; off is
      faster, zeros there, and every slot and count in the job's range legal); the optional
      arrays: ``grid_features`` (prices and carbon now), ``fault_features`` (regions down,
      links' capacity now), ``running_features`` (the running jobs and the next release) and
      ``announce_window=N`` (the first N announced jobs of the scenario's calendar); and the
      optional columns: ``deadline_features`` (each ``queue`` and ``announced`` row ends with
      whether the job has a deadline, the time to it and its slack; semantics §15).
    - ``reward``: a :class:`~bacepipe_env.envs.reward.RewardFn`, its weights, or the name of
      one (:data:`~bacepipe_env.envs.reward.REWARDS`: ``"vector"``, ``"misses"``,
      ``"tardiness"``).
    - ``illegal_action``: ``"fallback"`` (play the first legal action, flag and count it, warn
      once per env) or ``"raise"``; ``info``: ``"lean"`` or ``"full"``; ``max_steps``:
      truncate after that many steps (ids use ``TimeLimit``); ``render_mode``: ``"ansi"`` or
      ``"rgb_array"`` (its frames need matplotlib).
    """
    given: dict[str, Any] = {"placement": placement, "admission": admission}
    given |= {"preemption": preemption, "elasticity": elasticity}
    if policy is not None:
        given = _policy_parts(policy, given, preempt_window > 0)
    pre = None if given["preemption"] is None else make_preemption(given["preemption"])
    window = require_int(
        "preempt_window", preempt_window, minimum=0, maximum=cfg.MAX_QUEUE, exc=ValidationError
    )
    if window and pre is not None and pre.name != "none":
        raise ValidationError(
            "preemption", pre.name, "must be 'none' with preempt_window > 0 (the agent preempts)"
        )
    elastic = None if given["elasticity"] is None else make_elasticity(given["elasticity"])
    if max_steps is not None:
        max_steps = require_int("max_steps", max_steps, minimum=1, exc=ValidationError)
    flags = {"allow_wait": allow_wait, "preview": preview, "grid_features": grid_features}
    flags |= {"fault_features": fault_features, "running_features": running_features}
    flags |= {"deadline_features": deadline_features}
    for name, value in flags.items():
        cfg.require_choice(name, value, (True, False))
    return EnvSettings(
        placement=make_placement(given["placement"] or "pathfinder"),
        admission=None if given["admission"] is None else make_admission(given["admission"]),
        preemption=pre,
        elasticity=elastic,
        max_queue=cfg.resolve_max_queue(max_queue, generator),
        max_regions=cfg.resolve_max_regions(max_regions, generator),
        allow_wait=allow_wait,
        observation_mode=cfg.require_choice("observation", observation, OBSERVATIONS),
        illegal_action=cfg.require_choice("illegal_action", illegal_action, ILLEGAL_ACTIONS),
        reward_fn=make_reward(reward),
        scales=cfg.coerce_config(ObsScales, scales, "scales"),
        preview=preview,
        grid_features=grid_features,
        fault_features=fault_features,
        running_features=running_features,
        preempt_window=window,
        preempt_wake_s=cfg.hours_setting("preempt_wake_h", preempt_wake_h),
        announce_window=require_int(
            "announce_window",
            announce_window,
            minimum=0,
            maximum=cfg.MAX_QUEUE,
            exc=ValidationError,
        ),
        deadline_features=deadline_features,
        replica_choices=cfg.resolve_replica_choices(replica_choices, generator),
        info_level=cfg.require_choice("info", info, INFO_LEVELS),
        max_steps=max_steps,
        # rgb_array is accepted without matplotlib: SB3's make_vec_env asks for it by default
        # and never renders; render() is then the one-line error naming the extra
        render_mode=cfg.require_choice("render_mode", render_mode, (None, *RENDER_MODES)),
        policy=policy,
    )


def _policy_parts(policy: str, given: dict[str, Any], preempt_actions: bool) -> dict[str, Any]:
    """The rules ``policy`` plays by, with the parts given apart checked against them."""
    from .agents import agent_env_kwargs  # the registry's view of a policy as an agent

    if not isinstance(policy, str):
        raise ValidationError("policy", policy, "must be a registered policy's name")
    parts = agent_env_kwargs(policy, preempt_actions=preempt_actions)
    out = dict(given)
    for part in _POLICY_PARTS:  # a part the policy leaves open (no rule of its own) composes
        mine, theirs = given[part], parts.get(part)
        if theirs is None:
            continue
        if mine is not None and _name(mine) != theirs:
            raise ValidationError(
                part, _name(mine), f"{policy} plays with {part} {theirs!r}: give policy alone"
            )
        out[part] = theirs
    return out


def _name(rule: Any) -> str:
    return rule if isinstance(rule, str) else str(getattr(rule, "name", rule))


#: The env keywords :func:`env_settings` takes, in its order (``GeoPipeEnv``'s own keywords
#: besides ``scenario``).
SETTINGS: tuple[str, ...] = tuple(
    name
    for name, p in inspect.signature(env_settings).parameters.items()
    if p.kind is inspect.Parameter.KEYWORD_ONLY
)
