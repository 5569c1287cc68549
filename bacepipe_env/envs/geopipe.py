"""``GeoPipeEnv``: learned job ordering over the event-driven simulator, a thin Gymnasium adapter.

The simulator owns the dynamics, a generator supplies each episode, :mod:`.features` encodes the
observation, an injected :class:`~.reward.RewardFn` the reward, :mod:`.previews` the placement
previews and :mod:`.render` the frames. See ``docs/environment.md``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..core.admission import AdmissionRule, make_admission
from ..core.elasticity import ElasticityRule, make_elasticity
from ..core.preemption import PreemptionRule, make_preemption
from ..core.scenario import Scenario
from ..core.simulator import PlacementPolicy, Simulator
from ..core.snapshot import QueueSnapshot
from ..core.validate import require_int
from ..errors import ValidationError
from . import config as cfg
from . import features
from .config import ObsScales, RewardConfig, ScenarioSource, make_placement
from .copies import copy_options, default_copies
from .features import (
    QUEUE_FEATURES,
    REGION_FEATURES,
    SUMMARY_FEATURES,
    Decision,
    PreemptionWindow,
)
from .previews import PlacementPreviewer, Preview
from .render import (
    RenderSnapshot,
    capture,
    render_ansi,
    render_rgb,
    rgb_available,
)
from .reward import RewardFn, RewardMeter, RewardScales, RewardTerms, episode_info, make_reward

__all__ = [
    "ARGUMENTS",
    "INFO_LEVELS",
    "QUEUE_FEATURES",
    "REGION_FEATURES",
    "SUMMARY_FEATURES",
    "GeoPipeEnv",
    "make_placement",
]

#: The modes ``metadata`` lists: ``rgb_array`` only where it can render, i.e. with matplotlib
#: (the viz extra), since Gymnasium's check_env renders every listed mode. Found once, at import.
_RENDER_MODES = ("ansi", "rgb_array") if rgb_available() else ("ansi",)
#: The modes the constructor accepts, whatever is installed.
RENDER_MODES = ("ansi", "rgb_array")
_ILLEGAL = ("fallback", "raise")
#: What the first fallback of an env says (once per env instance: a learner that ignores the
#: mask would otherwise warn every step; one fixed text, so Python's filters also show it once).
_ILLEGAL_WARNING = (
    "GeoPipeEnv: an illegal action was replaced by the first legal one; apply the action mask "
    "(MaskablePPO's action_masks, bacepipe_env.train.evaluate_model or sb3_contrib's maskable "
    "evaluate_policy), or pass illegal_action='raise' to make it an error "
    "(info['episode_illegal_actions'] counts them)"
)
_OBSERVATIONS = ("dict", "flat", "masked")
#: ``info=`` levels: ``lean`` (the default) carries what agents and wrappers read, ``full`` adds
#: the reward's parts and scales, the emissions so far, the regions down and the deprecated
#: window arrays (see docs/environment.md, "Info").
INFO_LEVELS = ("lean", "full")


class GeoPipeEnv(gym.Env[Any, np.int64]):
    """Choose which pending job to place next; BACE-Pipe's Pathfinder + Cost-Min (or another
    placement policy) decides where. Rewarded on average JCT and electricity cost (and, with
    a ``carbon_weight``, emissions).

    - **Action**: ``Discrete(max_queue)`` (``* replica_choices`` with copy counts, ``+ 1``
      with ``allow_wait``, ``+ preempt_window`` with preempt actions): a slot of the visible
      window, the first ``max_queue`` candidates in submission order (with each count of
      copies); then the action that waits (there with ``allow_wait`` or preempt actions); then
      one per slot of the preemption window, which preempts that running job.
    - **Observation**: the arrays of :data:`~.features.FEATURES` and ``action_mask``, as a Dict
      or flattened into one Box. **Reward**: ``reward(RewardTerms)`` once per step.
    - **Episode end**: terminated once every job has finished; the registered ids truncate
      through Gymnasium's ``TimeLimit`` (``max_episode_steps``).

    Args:
        scenario: a scenario name or file (a string or any ``os.PathLike``; sampled with a
            seed from ``np_random`` at each reset), ``"random"``, a :class:`Scenario`, or a
            generator ``(Generator) -> Scenario`` with ``max_regions``/``max_jobs`` attributes;
            ``scenario_knobs`` configure a name or a file (any other keyword is a one-line
            ValidationError naming it).
        placement: placement policy name or object (default ``"pathfinder"``).
        admission: ``"greedy"``, ``"finish-aware"``, ``"full"``, ``"announce-aware"`` or a
            rule (default: the scenario's). The mask offers the jobs whose placement fits in
            memory; the rule decides when one is chosen (a declined job waits for the next
            event).
        preemption: ``"none"``, ``"srtf"``, ``"las"`` (with settings, ``"srtf:factor=3"``) or
            a rule (default: the scenario's): the simulator applies it at the end of every
            scheduling pass, as for a policy of the simulator; the agent only orders.
        preempt_window: with ``N > 0`` the agent makes the preemption decisions itself (the
            rule must then be ``none``): the action space adds one action per slot of a window
            of the first ``N`` running jobs in start order, and the observation the
            ``running_jobs`` array. At the end of a scheduling pass where preempting a job of
            the window would let a pending job start, the episode stops at a decision where
            only those preempt actions and waiting are legal (the wait action is there even
            without ``allow_wait``, which then only takes it away at placement decisions).
        preempt_wake_h: with preempt actions, each attempt that has run this long (hours, the
            ``min_run_h`` of the built-in rules) makes a decision point.
        announce_window: with ``N > 0`` the observation adds the ``announced`` array: the
            first ``N`` jobs announced but not yet submitted (the scenario's ``announce_h``
            calendar, a scenario knob; :meth:`~bacepipe_env.core.simulator.Simulator.announced`),
            one row each. 0 (the default) keeps the ids' spaces.
        elasticity: ``"none"``, ``"greedy"`` (with settings) or a rule (default: the
            scenario's): the simulator resizes running jobs' data-parallel copies by it at the
            end of every scheduling pass, as for a policy of the simulator (semantics §3f).
        replica_choices: with ``R > 0`` the agent also picks how many data-parallel copies of
            its pipeline a job starts with (1 .. R, semantics §3e): ``R`` place actions per
            slot (action ``slot * R + d - 1``), masked to the counts in the job's range that
            get a placement now, and the observation adds the ``replicas`` array. 0 (the
            default) starts every job with its ``min_replicas`` and keeps the ids' spaces.
        max_queue: the visible window of candidates (the action space; None: the generator's
            ``max_jobs``, a window no queue can outgrow); ``max_regions``: the
            region axis' padding (default: the generator's).
        allow_wait: add a last action that places nothing until the next event.
        observation: ``"dict"``, ``"flat"`` (one Box, mask included) or ``"masked"``
            (``{"observations": Box, "action_mask": Box}``, the layout of RLlib's action-masking
            module: the features flattened, the mask as float32 0/1).
        illegal_action: ``"fallback"`` (play the first legal action, flag
            ``info["illegal_action"]``, count it in the terminal
            ``info["episode_illegal_actions"]`` and warn once per env) or ``"raise"``.
        reward: a :class:`RewardFn` (default :class:`~.reward.JctCostReward`), or its weights
            as a :class:`RewardConfig` or mapping; ``scales``: :class:`ObsScales` or mapping.
        preview: compute each visible job's placement preview (queue features 7-10, the
            mask); off is faster and zeroes them.
        grid_features: add the ``grid`` array (each region's price and carbon intensity now)
            to the observation; off by default, which keeps the v1 ids' spaces.
        fault_features: add the ``region_faults`` (which regions are down) and
            ``link_faults`` (each link's capacity now / nominal) arrays; off by default
            (every id), which keeps the ids' spaces. Faults themselves come with the scenario
            (``outages=``, ``link_changes=``, ``gpu_failure_rate=``, ... as scenario knobs).
        running_features: add the ``running`` (per region: running jobs, GPUs held, time to
            the first release and what it frees, mean remaining time) and ``release`` (the
            same for the whole cluster) arrays; on in the registered ids, off by default.
        info: ``"lean"`` (default): every ``info`` holds ``action_mask``, ``queue`` and
            ``illegal_action`` (and the terminal step the ``episode_*`` figures); ``"full"``
            adds the reward's parts and scales, ``reward_terms``, ``reward_vector``,
            ``carbon_kg``, ``regions_down`` and the deprecated window arrays. Lean is cheaper,
            most of all through a vector env, which merges every key of every env's info.
        max_steps: truncate after this many steps (default never; ids use ``TimeLimit``).
        render_mode: ``"ansi"`` or ``"rgb_array"`` (its frames need matplotlib, the ``viz``
            extra; ``metadata["render_modes"]`` lists it only then, and without it
            ``render()`` raises a one-line :class:`BacepipeError`).
    """

    metadata = {"render_modes": list(_RENDER_MODES), "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        scenario: ScenarioSource = "paper",
        *,
        placement: str | PlacementPolicy = "pathfinder",
        admission: str | AdmissionRule | None = None,
        max_queue: int | None = 16,
        max_regions: int | None = None,
        allow_wait: bool = False,
        observation: str = "dict",
        illegal_action: str = "fallback",
        reward: RewardFn | RewardConfig | Mapping[str, float] | str | None = None,
        scales: ObsScales | Mapping[str, float] | None = None,
        preview: bool = True,
        grid_features: bool = False,
        fault_features: bool = False,
        running_features: bool = False,
        preemption: str | PreemptionRule | None = None,
        preempt_window: int = 0,
        preempt_wake_h: float = 1.0,
        announce_window: int = 0,
        elasticity: str | ElasticityRule | None = None,
        replica_choices: int = 0,
        info: str = "lean",
        max_steps: int | None = None,
        render_mode: str | None = None,
        **scenario_knobs: Any,
    ) -> None:
        super().__init__()
        cfg.check_keywords(scenario, scenario_knobs, ARGUMENTS)  # a typo: one line, not TypeError
        self.generator = cfg.make_generator(scenario, **scenario_knobs)
        self.placement = make_placement(placement)
        self.admission = None if admission is None else make_admission(admission)
        self.preemption = None if preemption is None else make_preemption(preemption)
        self.preempt_window = require_int(
            "preempt_window", preempt_window, minimum=0, maximum=cfg.MAX_QUEUE, exc=ValidationError
        )
        self.preempt_wake_s = cfg.hours_setting("preempt_wake_h", preempt_wake_h)
        self.announce_window = require_int(
            "announce_window",
            announce_window,
            minimum=0,
            maximum=cfg.MAX_QUEUE,
            exc=ValidationError,
        )
        self.elasticity = None if elasticity is None else make_elasticity(elasticity)
        self.replica_choices = require_int(
            "replica_choices",
            replica_choices,
            minimum=0,
            maximum=cfg.MAX_REPLICA_CHOICES,
            exc=ValidationError,
        )
        if self.preempt_window and self.preemption is not None and self.preemption.name != "none":
            raise ValidationError(
                "preemption",
                self.preemption.name,
                "must be 'none' with preempt_window > 0 (the agent preempts)",
            )

        self.max_queue = cfg.resolve_max_queue(max_queue, self.generator)
        self.max_regions = cfg.resolve_max_regions(max_regions, self.generator)
        self.allow_wait: bool = cfg.require_choice("allow_wait", allow_wait, (True, False))
        self.observation_mode = cfg.require_choice("observation", observation, _OBSERVATIONS)
        self.illegal_action = cfg.require_choice("illegal_action", illegal_action, _ILLEGAL)
        self.reward_fn = make_reward(reward)
        space = self.reward_fn.reward_space
        if space is not None:  # a vector reward: what MO-Gymnasium's wrappers read
            self.reward_space = space
        self.scales = cfg.coerce_config(ObsScales, scales, "scales")
        self.preview: bool = cfg.require_choice("preview", preview, (True, False))
        self.grid_features: bool = cfg.require_choice("grid_features", grid_features, (True, False))
        self.fault_features: bool = cfg.require_choice(
            "fault_features", fault_features, (True, False)
        )
        self.running_features: bool = cfg.require_choice(
            "running_features", running_features, (True, False)
        )
        flags = {
            "grid_features": self.grid_features,
            "fault_features": self.fault_features,
            "running_features": self.running_features,
        }
        enabled = tuple(name for name, on in flags.items() if on)
        if self.preempt_window:
            enabled += ("preempt_window",)
        if self.announce_window:
            enabled += ("announce_window",)
        if self.replica_choices:
            enabled += ("replica_choices",)
        self.info_level = cfg.require_choice("info", info, INFO_LEVELS)
        self._full_info = self.info_level == "full"
        if max_steps is not None:
            max_steps = require_int("max_steps", max_steps, minimum=1, exc=ValidationError)
        self.max_steps = max_steps
        # rgb_array is accepted without matplotlib (Gymnasium warns that metadata does not list
        # it): SB3's make_vec_env asks for it by default and never renders; render() is then
        # the one-line error naming the extra
        self.render_mode = cfg.require_choice("render_mode", render_mode, (None, *RENDER_MODES))

        q, kk, w = self.max_queue, self.max_regions, self.preempt_window
        r = self.replica_choices
        # one action per slot, or per slot and count of copies; the wait after them also
        # declines a preemption: with preempt actions it is there either way
        self.n_place = q * max(1, r)
        self.n_actions = self.n_place + (1 if allow_wait or w else 0) + w
        self.action_space = spaces.Discrete(self.n_actions)
        a = self.announce_window
        self._dict_space = features.observation_space(q, kk, self.n_actions, enabled, w, a, r)
        self.observation_space = features.layout_space(self._dict_space, observation)
        self.encoder = features.ObservationEncoder(q, kk, self.scales, enabled, w, a, r)
        self.previewer = PlacementPreviewer(self.placement)
        self.scenario: Scenario | None = None
        self.sim: Simulator | None = None
        self._illegal_actions = 0  # this episode's fallbacks, for the terminal info
        self._warned_illegal = False  # per instance, across episodes

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode; ``options={"scenario": Scenario}`` overrides the generator."""
        super().reset(seed=seed)
        scenario = cfg.reset_options(options).get("scenario")
        if scenario is None:
            scenario = self.generator(self.np_random)
        self.scenario = scenario = cfg.checked_scenario(scenario, self.max_regions)
        self.sim = Simulator(
            scenario,
            self.placement,
            admission=self.admission,
            preemption=self.preemption,
            preemption_decisions=self.preempt_window > 0,
            preemption_wake_s=self.preempt_wake_s,
            elasticity=self.elasticity,
        )
        self.encoder.start(scenario)
        self._meter = RewardMeter(scenario)
        self._steps = 0
        self._illegal_actions = 0
        self._next_decision()
        return self._observe(self.sim), self._info(RewardTerms())

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Place the job in window slot ``action`` (or wait), run to the next decision.

        ``action`` is one integer, as ``Discrete.contains`` takes it (an int, a numpy integer
        or a 0-d integer array; anything else is a ValidationError naming ``action``); an
        illegal integer falls back or raises as ``illegal_action`` says."""
        sim = self._require_sim()
        if sim.done:
            raise RuntimeError("the episode is over: call reset()")
        a, illegal = cfg.resolve_action(action, self._mask, self.illegal_action == "raise")
        if illegal:
            self._illegal_actions += 1
            if not self._warned_illegal:
                self._warned_illegal = True
                gym.logger.warn(_ILLEGAL_WARNING)
        if a == self.n_place:
            sim.defer()
        elif a > self.n_place:
            assert self._preemption is not None
            sim.preempt(self._preemption.job_ids[a - self.n_place - 1])
        elif self.replica_choices:
            slot, c = divmod(a, self.replica_choices)
            sim.place(self._queue.job_ids[slot], self._copies[slot][c])
        else:
            job = self._queue.job_ids[a]
            sim.place(job, default_copies(sim, job, self._previews[a]))
        self._steps += 1
        self._next_decision()
        terms = self._meter(sim, illegal)
        reward = self.reward_fn(terms)
        terminated = sim.done
        truncated = (
            (not terminated) and self.max_steps is not None and self._steps >= self.max_steps
        )
        info = self._info(terms)
        if terminated:
            info.update(episode_info(sim.result()))
            info["episode_illegal_actions"] = self._illegal_actions
        return self._observe(sim), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Legal actions now (what sb3-contrib's MaskablePPO asks for)."""
        self._require_sim()
        return self._mask.astype(bool)

    @property
    def reward_scales(self) -> RewardScales:
        """This episode's reward scales (``info["jct_scale_s"]``, ``info["cost_scale_usd"]``,
        ``info["carbon_scale_kg"]``)."""
        self._require_sim()
        return self._meter.scales

    @property
    def preemption_window(self) -> PreemptionWindow | None:
        """The preempt actions' window of this decision (also ``info["preemption"]``), with
        the simulator's view at a decision to preempt; None without preempt actions."""
        self._require_sim()
        return self._preemption

    @property
    def slot_actions(self) -> tuple[int, ...]:
        """Per slot of the window, the action that places its job with its default count of
        data-parallel copies (``min_replicas``): the slot itself without ``replica_choices``."""
        self._require_sim()
        r = self.replica_choices
        if not r:
            return tuple(range(len(self._queue)))
        sim = self._require_sim()
        return tuple(i * r + sim.replica_range(j)[0] - 1 for i, j in enumerate(self._queue.job_ids))

    def place_action(self, slot: int, copies: int | None = None) -> int:
        """The action that places the job of window slot ``slot`` with ``copies`` data-parallel
        copies (None: its default); without ``replica_choices`` only the default exists."""
        if copies is None or not self.replica_choices:
            return self.slot_actions[slot]
        return slot * self.replica_choices + copies - 1

    def playable(self, actions: list[Any]) -> list[Any]:
        """The planner actions (``("place", job, copies)`` ...) this env's action space can
        express: a count of copies only with ``replica_choices``, at most that many."""
        r = self.replica_choices
        return [a for a in actions if len(a) < 3 or (r and a[2] <= r)]

    @property
    def queue_snapshot(self) -> QueueSnapshot:
        """The visible window of this decision as a typed snapshot (also ``info["queue"]``)."""
        self._require_sim()
        return self._queue

    def render(self) -> Any:
        """``"ansi"``: a text snapshot; ``"rgb_array"``: a GPU timeline per region."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode= to the env")
            return None
        snap = self.render_snapshot()
        return render_ansi(snap) if self.render_mode == "ansi" else render_rgb(snap)

    def render_snapshot(self) -> RenderSnapshot:
        """What a frame shows now, as plain data."""
        sim = self._require_sim()
        previews = [None if pv is None else pv.placement for pv in self._previews]
        return capture(sim, self._queue.job_ids, previews, self.max_queue)

    # --------------------------------------------------------------- internals
    def _require_sim(self) -> Simulator:
        if self.sim is None:
            raise RuntimeError("call reset() first")
        return self.sim

    def _next_decision(self) -> None:
        """Advance to a state with at least one legal action, or to the end."""
        sim = self._require_sim()
        mask = np.zeros(self.n_actions, dtype=np.int8)
        window: tuple[int, ...] = ()
        previews: list[Preview | None] = []
        copies: list[list[Any]] = []
        preempting: PreemptionWindow | None = None
        r = self.replica_choices
        while (candidates := sim.next_decision()) is not None:
            if not candidates:  # the end of a pass where a preemption lets a job start
                preempting = self._preemption_decision(sim, mask)
                if preempting is not None:
                    break
                sim.defer()  # no job of the window would help: on to the next event
                continue
            window = candidates[: self.max_queue]
            if not self.preview:
                previews = [None] * len(window)
                mask[: len(window)] = 1
                break
            previews = self.previewer(sim, window)
            if r:  # one action per slot and count of copies
                copies = copy_options(sim, window, previews, r)
                legal = [p is not None for row in copies for p in row]
            else:
                legal = [default_copies(sim, j, pv) is not None for j, pv in zip(window, previews)]
            if True in legal:
                mask[: len(legal)] = legal
                break
            sim.decline(window)  # nothing visible can start: it waits for the next event
            window, previews, copies = (), [], []
        if sim.has_future_events and (preempting or (window and self.allow_wait)):
            mask[self.n_place] = 1
        if self.preempt_window and preempting is None and not sim.done:
            running = sim.running[: self.preempt_window]
            preempting = PreemptionWindow(running, self.n_place + 1)
        self._queue = QueueSnapshot.from_view(sim, window)
        self._previews, self._mask, self._preemption = previews, mask, preempting
        self._copies = copies

    def _preemption_decision(self, sim: Simulator, mask: np.ndarray) -> PreemptionWindow | None:
        """The window of a decision to preempt, its legal slots set in ``mask``; None when
        no job of the window has a beneficiary."""
        view = sim.preemption_view().materialize()
        running = sim.running[: self.preempt_window]
        first = self.n_place + 1
        legal = [i for i, job in enumerate(running) if view.beneficiaries(job)]
        if not legal:
            return None
        mask[[first + i for i in legal]] = 1
        return PreemptionWindow(running, first, view)

    def _observe(self, sim: Simulator) -> Any:
        obs = self.encoder.encode(
            Decision(
                sim, self._queue, self._previews, self.previewer, self._preemption, self._copies
            )
        )
        obs["action_mask"] = self._mask.copy()
        return features.layout(obs, self._dict_space, self.observation_mode)

    def _info(self, terms: RewardTerms) -> dict[str, Any]:
        if not self._full_info:
            out = {
                "action_mask": self._mask.astype(bool),
                "queue": self._queue,
                "illegal_action": terms.illegal,
            }
            if self.preempt_window:
                out["preemption"] = self._preemption
            if self.replica_choices:
                out["slot_actions"] = self.slot_actions
            return out
        q, n, scales, sim = self._queue, self.max_queue, self._meter.scales, self._require_sim()
        k, ids = len(q.job_ids), np.full(n, -1, dtype=np.int64)  # the window, -1 padded
        e1, bk, sub = np.zeros(n), np.zeros(n), np.zeros(n)
        ids[:k], e1[:k], bk[:k] = q.job_ids, q.single_gpu_exec, q.min_bandwidth_kstar
        sub[:k] = q.submit_time
        return {
            "action_mask": self._mask.astype(bool),
            "queue": q,
            "queue_job_ids": ids,
            "queue_e1_s": e1,
            "queue_bkstar_Bps": bk,
            "queue_submit_s": sub,
            "pending_e1_max_s": q.pending_e1_max,
            "pending_bkstar_max_Bps": q.pending_bkstar_max,
            "alpha": q.alpha,
            "time_s": q.time,
            "illegal_action": terms.illegal,
            **self.reward_fn.components(terms),
            "reward_vector": np.array([-terms.jct, -terms.cost, -terms.carbon]),
            "reward_terms": terms,
            "jct_scale_s": scales.jct_scale,
            "cost_scale_usd": scales.cost_norm,
            "carbon_scale_kg": scales.carbon_norm,
            "carbon_kg": sim.carbon_accrued,
            "regions_down": sim.down_regions,
            **({"preemption": self._preemption} if self.preempt_window else {}),
            **({"slot_actions": self.slot_actions} if self.replica_choices else {}),
        }


#: The keyword arguments of :class:`GeoPipeEnv` itself (``scenario`` first); any other keyword
#: must be a knob of the scenario.
ARGUMENTS: tuple[str, ...] = tuple(
    name
    for name, p in inspect.signature(GeoPipeEnv.__init__).parameters.items()
    if name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD
)
