"""``GeoPipeEnv``: learned job ordering over the event-driven simulator, a thin Gymnasium adapter.

The simulator owns the dynamics, a generator supplies each episode, :mod:`.settings` types and
checks the env's keywords, :mod:`.decisions` runs the simulator to the next decision an agent
can act on, :mod:`.features` encodes the observation, an injected :class:`~.reward.RewardFn` the
reward, :mod:`.info` the info dict, :mod:`.previews` the placement previews and :mod:`.render`
the frames. See ``docs/environment.md``.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..core.scenario import Scenario
from ..core.simulator import Simulator
from ..core.snapshot import QueueSnapshot
from . import config as cfg
from . import features
from .config import ScenarioSource, make_placement
from .decisions import next_decision
from .episodes import ARGUMENTS, draw_scenario, episode_source
from .features import QUEUE_FEATURES, REGION_FEATURES, SUMMARY_FEATURES, Decision, PreemptionWindow
from .info import step_info
from .previews import PlacementPreviewer
from .render import LISTED_MODES, RenderSnapshot, capture, render_ansi, render_rgb
from .reward import RewardMeter, RewardScales, RewardTerms, episode_info
from .settings import ILLEGAL_WARNING, INFO_LEVELS, RENDER_MODES, EnvSettings

__all__ = [
    "ARGUMENTS",
    "INFO_LEVELS",
    "QUEUE_FEATURES",
    "REGION_FEATURES",
    "RENDER_MODES",
    "SUMMARY_FEATURES",
    "GeoPipeEnv",
    "make_placement",
]


class GeoPipeEnv(gym.Env[Any, np.int64]):
    """Choose which pending job to place next; BACE-Pipe's Pathfinder + Cost-Min (or another
    placement policy) decides where. Rewarded on average JCT and electricity cost (and, with
    a ``carbon_weight``, emissions).

    - **Action**: ``Discrete(max_queue)`` (``* replica_choices`` with counts of copies, ``+ 1``
      with ``allow_wait``, ``+ preempt_window`` with preempt actions): a slot of the visible
      window, the first ``max_queue`` candidates in submission order (with each count of
      copies); then the wait (with ``allow_wait`` or preempt actions); then one per slot of the
      preemption window, which preempts that running job.
    - **Observation**: the arrays of :data:`~.features.FEATURES` and ``action_mask``, as a Dict
      or flattened into one Box. **Reward**: ``reward(RewardTerms)`` once per step.
    - **Episode end**: terminated once every job has finished; the registered ids truncate
      through Gymnasium's ``TimeLimit`` (``max_episode_steps``).

    Args:
        scenario: a scenario name or file (a string or any ``os.PathLike``; sampled with a
            seed from ``np_random`` at each reset), ``"random"``, a :class:`Scenario`, or a
            generator ``(Generator) -> Scenario`` with ``max_regions``/``max_jobs`` attributes.
        settings: the env's own keywords (:data:`~.settings.SETTINGS`; each documented by
            :func:`~.settings.env_settings`, e.g. ``policy="sjf+finish-aware"``,
            ``allow_wait=True``, ``preempt_window=16``); any other keyword is a knob of the
            scenario (``n_jobs=80``, ``model="physical"``), and a typo is a one-line
            ValidationError naming it. The validated values are :attr:`settings`
            (an :class:`~.settings.EnvSettings`), also readable as attributes of the env.
    """

    # rgb_array only where it can render (matplotlib): Gymnasium's check_env renders every mode
    metadata = {"render_modes": list(LISTED_MODES), "render_fps": 4}  # noqa: RUF012

    def __init__(self, scenario: ScenarioSource = "paper", **settings: Any) -> None:
        super().__init__()
        self.generator, self.settings = episode_source(scenario, **settings)
        s: EnvSettings = self.settings
        for name in EnvSettings.__dataclass_fields__:  # env.placement, env.max_queue, ...
            setattr(self, name, getattr(s, name))
        if s.reward_fn.reward_space is not None:  # a vector reward: MO-Gymnasium reads it
            self.reward_space = s.reward_fn.reward_space
        self.n_place, self.n_actions = s.n_place, s.n_actions
        self.action_space = spaces.Discrete(self.n_actions)
        sizes = (s.max_queue, s.max_regions)
        windows = (s.preempt_window, s.announce_window, s.replica_choices)
        self._dict_space = features.observation_space(*sizes, s.n_actions, s.enabled, *windows)
        self.observation_space = features.layout_space(self._dict_space, s.observation_mode)
        self.encoder = features.ObservationEncoder(*sizes, s.scales, s.enabled, *windows)
        self.previewer = PlacementPreviewer(s.placement)
        self.scenario: Scenario | None = None
        self.sim: Simulator | None = None
        self._illegal_actions = 0  # this episode's fallbacks, for the terminal info
        self._warned_illegal = False  # per instance, across episodes

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode; ``options={"scenario": Scenario}`` overrides the generator."""
        super().reset(seed=seed)
        s = self.settings
        scenario = cfg.reset_options(options).get("scenario")
        if scenario is None:  # the draw scenario_for replays (envs.replay)
            scenario = draw_scenario(self.generator, self.np_random, s.max_regions)
        else:
            scenario = cfg.checked_scenario(scenario, s.max_regions)
        self.scenario = scenario
        self.sim = Simulator(scenario, s.placement, **s.simulator_rules)
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
        sim, s = self._require_sim(), self.settings
        if sim.done:
            raise RuntimeError("the episode is over: call reset()")
        a, illegal = cfg.resolve_action(action, self._mask, s.illegal_action == "raise")
        if illegal:
            self._illegal_actions += 1
            if not self._warned_illegal:
                self._warned_illegal = True
                gym.logger.warn(ILLEGAL_WARNING)
        if a == s.n_place:
            sim.defer()
        elif a > s.n_place:
            assert self._preemption is not None
            sim.preempt(self._preemption.job_ids[a - s.n_place - 1])
        else:  # the placement the decision worked out for this slot and count
            slot, c = divmod(a, max(1, s.replica_choices))
            job = self._queue.job_ids[slot]
            if self._copies:
                sim.place(job, self._copies[slot][c])
            else:  # no previews: the simulator places the job (with c + 1 copies if chosen)
                sim.place(job, None, c + 1 if s.replica_choices else None)
        self._steps += 1
        self._next_decision()
        terms = self._meter(sim, illegal)
        reward = s.reward_fn(terms)
        terminated = sim.done
        truncated = not terminated and s.max_steps is not None and self._steps >= s.max_steps
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
        sim, r = self._require_sim(), self.settings.replica_choices
        if not r:
            return tuple(range(len(self._queue)))
        return tuple(i * r + sim.replica_range(j)[0] - 1 for i, j in enumerate(self._queue.job_ids))

    def place_action(self, slot: int, copies: int | None = None) -> int:
        """The action that places the job of window slot ``slot`` with ``copies`` data-parallel
        copies (None: its default); without ``replica_choices`` only the default exists."""
        r = self.settings.replica_choices
        return self.slot_actions[slot] if copies is None or not r else slot * r + copies - 1

    @property
    def queue_snapshot(self) -> QueueSnapshot:
        """The visible window of this decision as a typed snapshot (also ``info["queue"]``)."""
        self._require_sim()
        return self._queue

    def render(self) -> Any:
        """``"ansi"``: a text snapshot; ``"rgb_array"``: a GPU timeline per region."""
        if self.settings.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode= to the env")
            return None
        snap = self.render_snapshot()
        return render_ansi(snap) if self.settings.render_mode == "ansi" else render_rgb(snap)

    def render_snapshot(self) -> RenderSnapshot:
        """What a frame shows now, as plain data."""
        sim = self._require_sim()
        previews = [None if pv is None else pv.placement for pv in self._previews]
        return capture(sim, self._queue.job_ids, previews, self.settings.max_queue)

    def _require_sim(self) -> Simulator:
        if self.sim is None:
            raise RuntimeError("call reset() first")
        return self.sim

    def _next_decision(self) -> None:
        """Advance to a state with at least one legal action, or to the end."""
        self._point = point = next_decision(self._require_sim(), self.settings, self.previewer)
        self._queue, self._previews, self._copies, self._mask, self._preemption = point

    def _observe(self, sim: Simulator) -> Any:
        d = Decision(
            sim, self._queue, self._previews, self.previewer, self._preemption, self._copies
        )
        obs = self.encoder.encode(d)
        obs["action_mask"] = self._mask.copy()
        return features.layout(obs, self._dict_space, self.settings.observation_mode)

    def _info(self, terms: RewardTerms) -> dict[str, Any]:
        s = self.settings
        full = None
        if s.info_level == "full":
            full = (self._require_sim(), s.reward_fn, self._meter.scales, s.max_queue)
        slots = self.slot_actions if s.replica_choices else None
        return step_info(
            self._point, terms, slot_actions=slots, preemption=s.preempt_window > 0, full=full
        )
