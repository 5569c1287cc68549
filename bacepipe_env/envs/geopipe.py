"""``GeoPipeEnv``: learned job ordering over the event-driven simulator.

A thin Gymnasium adapter: the simulator (``bacepipe_env.core``) owns the dynamics, a scenario
generator supplies each episode's cluster and jobs, a placement policy decides where a chosen
job runs, and this module turns decision points into observations, actions and rewards.
See ``docs/environment.md`` for the full description.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..core.admission import AdmissionRule, make_admission
from ..core.perf import preview_iteration_time
from ..core.placement import Placement
from ..core.scenario import Scenario
from ..core.simulator import PlacementPolicy, Simulator
from ..core.units import SECONDS_PER_HOUR
from ..core.validate import require_int
from ..errors import ValidationError
from ..policies.bace_pipe import PathfinderPlacement
from ..policies.baselines import PLACEMENT_RULES, RulePlacement
from ..scenarios.generators import RandomScenarioGenerator, ScenarioSampler
from .config import ObsScales, RewardConfig

__all__ = ["QUEUE_FEATURES", "REGION_FEATURES", "SUMMARY_FEATURES", "GeoPipeEnv", "make_placement"]

REGION_FEATURES = ("present", "free_frac", "capacity", "price", "log_intra_gbps")
QUEUE_FEATURES = (
    "present",
    "intensity",  # Eq. (9): E(1) / max over the pending queue
    "sensitivity",  # Eq. (10): b(K*) / max over the pending queue
    "log_e1_hours",
    "log_bkstar_gbps",
    "k_star",
    "log_wait_hours",
    "preview_gpu_frac",  # GPUs the placement policy would give now / K*
    "preview_regions",  # regions on that path / max_regions
    "preview_log_exec_hours",
    "preview_price",  # average $/kWh of that placement / price scale
)
SUMMARY_FEATURES = (
    "alpha",  # Eq. (11)
    "log_time_hours",
    "pending",  # / max_queue
    "hidden",  # pending jobs beyond the window / max_queue
    "running",  # / max_queue
    "free_gpu_frac",
)

ScenarioSource = str | Scenario | Callable[[np.random.Generator], Scenario]
_EMPTY = Placement((), ())


def make_placement(placement: str | PlacementPolicy) -> PlacementPolicy:
    """A placement policy by name (``pathfinder``, ``pathfinder+partial`` or a rule of
    :data:`~bacepipe_env.policies.baselines.PLACEMENT_RULES`), or the object itself."""
    if not isinstance(placement, str):
        if not hasattr(placement, "place"):
            raise ValidationError("placement", placement, "must have a place(view, job_id) method")
        return placement
    if placement == "pathfinder":
        return PathfinderPlacement()
    if placement == "pathfinder+partial":
        return PathfinderPlacement(partial_take=True)
    if placement in PLACEMENT_RULES:
        return RulePlacement(placement)
    names = ["pathfinder", "pathfinder+partial", *PLACEMENT_RULES]
    raise ValidationError(
        "placement", placement, f"unknown placement; choose from: {', '.join(names)}"
    )


def _as_index(action: Any) -> int:
    """An integer action (Python or numpy int, or a one-element integer array); -1 (illegal)
    for anything else, floats included: 1.5 is not a slot."""
    arr = np.asarray(action)
    if arr.size != 1 or not np.issubdtype(arr.dtype, np.integer):
        return -1
    return int(arr.reshape(-1)[0])


def _config(cls: Any, value: Any, field: str) -> Any:
    """``cls()`` for None, ``cls(**value)`` for a mapping (a JSON config), else ``value``."""
    if value is None:
        return cls()
    if isinstance(value, Mapping):
        try:
            return cls(**value)
        except TypeError as err:
            raise ValidationError(field, dict(value), str(err)) from None
    if not isinstance(value, cls):
        raise ValidationError(field, value, f"must be a {cls.__name__} or a mapping")
    return value


class _Fixed:
    """A generator that always returns the same scenario."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.max_regions = scenario.cluster.n_regions
        self.max_jobs = len(scenario.jobs)

    def __call__(self, rng: np.random.Generator) -> Scenario:
        return self.scenario


class GeoPipeEnv(gym.Env[Any, np.int64]):
    """Choose which pending job to place next; BACE-Pipe's Pathfinder + Cost-Min (or another
    placement policy) decides where. Rewarded on average JCT and electricity cost.

    Args:
        scenario: a built-in scenario name or file path (sampled with a seed drawn from
            ``np_random`` at each reset), ``"random"`` (a :class:`RandomScenarioGenerator`
            whose fields ``scenario_knobs`` may set), a :class:`Scenario`, or a generator
            ``(np.random.Generator) -> Scenario`` with ``max_regions``/``max_jobs`` attributes.
        placement: placement policy name or object (default ``"pathfinder"``).
        admission: admission rule, ``"greedy"``, ``"finish-aware"`` or ``"full"`` (default:
            the scenario's, ``greedy``). The mask offers only jobs whose placement fits in GPU
            memory and that the rule would start now.
        max_queue: size of the visible window of candidate jobs (the action space).
        max_regions: padding of the region axis (default: the generator's ``max_regions``).
        allow_wait: add a last action that places nothing until the next event.
        observation: ``"dict"`` (default) or ``"flat"`` (one Box for ``MlpPolicy``).
        illegal_action: ``"fallback"`` (default: play the first legal action and set
            ``info["illegal_action"]``) or ``"raise"``.
        reward: :class:`RewardConfig` (or a mapping of its fields); ``scales``:
            :class:`ObsScales` (or a mapping).
        preview: compute what the placement policy would give each visible job (observation
            features 7-10 and the mask); off makes steps faster and those features zero.
        max_steps: truncate after this many steps (``None``: never).
        render_mode: ``"ansi"`` or ``"rgb_array"``.
        scenario_knobs: ``bandwidth_scale``, ``gpu_scale``, ``n_jobs``, ``ignore_memory`` for a
            named scenario; the generator's fields for ``"random"``.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        scenario: ScenarioSource = "paper",
        *,
        placement: str | PlacementPolicy = "pathfinder",
        admission: str | AdmissionRule | None = None,
        max_queue: int = 16,
        max_regions: int | None = None,
        allow_wait: bool = False,
        observation: str = "dict",
        illegal_action: str = "fallback",
        reward: RewardConfig | Mapping[str, float] | None = None,
        scales: ObsScales | Mapping[str, float] | None = None,
        preview: bool = True,
        max_steps: int | None = None,
        render_mode: str | None = None,
        **scenario_knobs: Any,
    ) -> None:
        super().__init__()
        self.generator: Callable[[np.random.Generator], Scenario]
        if scenario == "random":
            self.generator = RandomScenarioGenerator(**scenario_knobs)
        elif isinstance(scenario, str):
            self.generator = ScenarioSampler(scenario, **scenario_knobs)
        elif isinstance(scenario, Scenario):
            self.generator = _Fixed(scenario)
        elif callable(scenario):
            self.generator = scenario
        else:
            raise ValidationError("scenario", scenario, "must be a name, a Scenario or a generator")
        if scenario_knobs and not isinstance(scenario, str):
            raise ValidationError(
                "scenario_knobs", sorted(scenario_knobs), "only apply to a named scenario"
            )
        self.placement = make_placement(placement)
        self.admission = None if admission is None else make_admission(admission)
        self.max_queue = require_int("max_queue", max_queue, minimum=1, exc=ValidationError)
        k = max_regions if max_regions is not None else getattr(self.generator, "max_regions", None)
        if k is None:
            raise ValidationError("max_regions", None, "give it for a generator without one")
        self.max_regions = require_int("max_regions", k, minimum=1, exc=ValidationError)
        if not isinstance(allow_wait, bool):
            raise ValidationError("allow_wait", allow_wait, "must be True or False")
        self.allow_wait = allow_wait
        if observation not in ("dict", "flat"):
            raise ValidationError("observation", observation, "must be 'dict' or 'flat'")
        self.observation_mode = observation
        if illegal_action not in ("fallback", "raise"):
            raise ValidationError("illegal_action", illegal_action, "must be 'fallback' or 'raise'")
        self.illegal_action = illegal_action
        self.reward_config = _config(RewardConfig, reward, "reward")
        self.scales = _config(ObsScales, scales, "scales")
        self.preview = bool(preview)
        self.max_steps = (
            None
            if max_steps is None
            else require_int("max_steps", max_steps, minimum=1, exc=ValidationError)
        )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValidationError("render_mode", render_mode, "must be 'ansi' or 'rgb_array'")
        self.render_mode = render_mode

        q, kk = self.max_queue, self.max_regions
        self.n_actions = q + (1 if allow_wait else 0)
        self.action_space = spaces.Discrete(self.n_actions)

        def box(*shape: int) -> spaces.Box:
            return spaces.Box(0.0, np.inf, shape=shape, dtype=np.float32)

        self._dict_space = spaces.Dict(
            {
                "regions": box(kk, len(REGION_FEATURES)),
                "bandwidth": box(2, kk, kk),
                "queue": box(q, len(QUEUE_FEATURES)),
                "summary": box(len(SUMMARY_FEATURES)),
                "action_mask": spaces.MultiBinary(self.n_actions),
            }
        )
        self._flat_size = sum(
            int(np.prod(space.shape or ())) for space in self._dict_space.spaces.values()
        )
        self.observation_space = (
            self._dict_space
            if observation == "dict"
            else spaces.Box(0.0, np.inf, shape=(self._flat_size,), dtype=np.float32)
        )
        self.scenario: Scenario | None = None
        self.sim: Simulator | None = None
        # Preview memo: (hash of (cluster, free, residual), job shape) -> (that state,
        # (placement, t_iter, $/kWh)); a hit is checked against the stored state.
        self._pure = bool(getattr(self.placement, "pure", False))
        self._memo: dict[tuple[Any, ...], tuple[Any, tuple[Placement, float, float]]] = {}
        self._memo_size = 16384

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode; ``options={"scenario": Scenario}`` overrides the generator."""
        super().reset(seed=seed)
        scenario = (options or {}).get("scenario")
        if scenario is None:
            scenario = self.generator(self.np_random)
        if not isinstance(scenario, Scenario):
            raise ValidationError("scenario", scenario, "the generator must return a Scenario")
        if scenario.cluster.n_regions > self.max_regions:
            raise ValidationError(
                "scenario",
                scenario.cluster.n_regions,
                f"has more regions than max_regions = {self.max_regions}",
            )
        self.scenario = scenario
        self.sim = Simulator(scenario, self.placement, admission=self.admission)
        self._setup_episode(scenario)
        self._steps = 0
        self._prev_js = 0.0
        self._prev_cost = 0.0
        self._next_decision()
        return self._observe(), self._info(0.0, 0.0, False)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Place the job in window slot ``action`` (or wait), run to the next decision."""
        sim = self._require_sim()
        if sim.done:
            raise RuntimeError("the episode is over: call reset()")
        a = _as_index(action)
        illegal = not (0 <= a < self.n_actions and self._mask[a])
        if illegal:
            if self.illegal_action == "raise":
                legal = np.flatnonzero(self._mask).tolist()
                raise ValueError(f"illegal action {action!r}; legal actions now: {legal}")
            a = int(np.argmax(self._mask))  # the first legal action
        if a == self.max_queue:
            sim.defer()
        else:
            sim.place(self._window[a], self._previews[a])
        self._steps += 1
        self._next_decision()
        dj = sim.job_seconds - self._prev_js
        dc = sim.cost_accrued - self._prev_cost
        self._prev_js, self._prev_cost = sim.job_seconds, sim.cost_accrued
        jct_term = dj / self._jct_norm
        cost_term = dc / self._cost_norm
        rc = self.reward_config
        reward = -(rc.jct_weight * jct_term + rc.cost_weight * cost_term)
        if illegal:
            reward -= rc.illegal_penalty
        terminated = sim.done
        truncated = (
            (not terminated) and self.max_steps is not None and self._steps >= self.max_steps
        )
        info = self._info(jct_term, cost_term, illegal)
        if terminated:
            result = sim.result()
            info["episode_avg_jct_s"] = result.avg_jct
            info["episode_avg_jct_h"] = result.avg_jct / SECONDS_PER_HOUR
            info["episode_total_cost_usd"] = result.total_cost
            info["episode_makespan_s"] = result.makespan
        return self._observe(), float(reward), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Legal actions now (what sb3-contrib's MaskablePPO asks for)."""
        return self._mask.astype(bool)

    def render(self) -> Any:
        """``"ansi"``: a text snapshot; ``"rgb_array"``: a GPU timeline per region."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode= to the env")
            return None
        from .render import render_ansi, render_rgb, snapshot

        snap = snapshot(self)
        return render_ansi(snap) if self.render_mode == "ansi" else render_rgb(snap)

    # --------------------------------------------------------------- internals
    def _require_sim(self) -> Simulator:
        if self.sim is None:
            raise RuntimeError("call reset() before step()")
        return self.sim

    def _setup_episode(self, scenario: Scenario) -> None:
        """Static per-episode parts of the observation and the reward scales."""
        cl = scenario.cluster
        k, kk, sc = cl.n_regions, self.max_regions, self.scales
        self._k = k
        self._capacity = np.array(cl.capacity, dtype=np.float64)
        self._total_gpus = float(cl.total_gpus)
        regions = np.zeros((kk, len(REGION_FEATURES)), dtype=np.float32)
        regions[:k, 0] = 1.0
        regions[:k, 2] = self._capacity / sc.gpus
        regions[:k, 3] = np.array(cl.prices) / sc.price
        regions[:k, 4] = np.log10(1.0 + np.array([r.intra_bandwidth for r in cl.regions]) * 8e-9)
        regions[:k, 4] /= sc.log_gbps
        self._regions_static = regions
        bw = np.zeros((2, kk, kk), dtype=np.float32)
        bw[1, :k, :k] = np.log10(1.0 + cl.bandwidth * 8e-9) / sc.log_gbps
        self._bw_static = bw
        self._bw_rows: object = None
        self._bw_obs = bw
        profiles = scenario.profiles
        self._job_static = {  # queue features 3-5 never change during an episode
            j: (
                math.log10(1.0 + p.single_gpu_exec / SECONDS_PER_HOUR) / sc.log_hours,
                math.log10(1.0 + p.min_bandwidth_kstar * 8e-9) / sc.log_gbps,
                p.k_star / sc.gpus,
            )
            for j, p in profiles.items()
        }
        # N * jct_scale: the sum of the jobs' ideal execution times (K* GPUs, one region)
        self._jct_norm = math.fsum(p.ideal_execution for p in profiles.values())
        mean_price = sum(cl.prices) / k
        self._cost_norm = (
            math.fsum(p.ideal_execution * p.k_star for p in profiles.values())
            / SECONDS_PER_HOUR
            * mean_price
            * cl.power_kw
        )
        self._jct_norm = max(self._jct_norm, 1e-9)
        self._cost_norm = max(self._cost_norm, 1e-12)

    def _next_decision(self) -> None:
        """Advance to a state with at least one legal action, or to the end."""
        sim = self._require_sim()
        q = self.max_queue
        while True:
            candidates = sim.next_decision()
            if candidates is None:
                self._window: list[int] = []
                self._previews: list[Placement | None] = []
                self._preview_stats: list[tuple[float, float]] = []
                self._mask = np.zeros(self.n_actions, dtype=np.int8)
                self._e_max = self._b_max = 0.0
                return
            window = list(candidates[:q])
            previews: list[Placement | None] = [None] * len(window)
            stats: list[tuple[float, float]] = [(0.0, 0.0)] * len(window)
            if self.preview:
                if not self._pure:
                    self._memo.clear()  # only this decision's state may be reused
                # Jobs of the same shape get the same placement on the same state; a pure
                # placement policy's previews are also remembered across steps and episodes.
                memo = self._memo
                state = (sim.cluster, sim.free_gpus, sim.residual_rows)
                state_hash = hash(state)  # hashed once per decision, not once per job
                prices = sim.cluster.prices
                for i, job in enumerate(window):
                    p = sim.profile(job)
                    key = (
                        state_hash,
                        p.k_star,
                        p.activation_bytes,
                        p.compute_coeff,
                        p.stage_overhead,
                        p.n_micro,
                        sim.memory_floor(job),
                    )
                    hit = memo.get(key)
                    got = hit[1] if hit is not None and hit[0] == state else None
                    if got is None:
                        pl = self.placement.place(sim, job) or _EMPTY
                        t_iter = avg_price = 0.0
                        if pl.path:
                            t_iter = preview_iteration_time(p, sim.cluster, pl.path, pl.gpus)
                            avg_price = sum(g * prices[r] for r, g in zip(pl.path, pl.gpus))
                            avg_price /= pl.n_gpus
                        got = (pl, t_iter, avg_price)
                        memo[key] = (state, got)
                        if len(memo) > self._memo_size:
                            del memo[next(iter(memo))]  # first in, first out
                    pl = got[0]
                    if pl.path and sim.fits(job, pl) and sim.admits(job, pl):
                        previews[i] = pl
                        stats[i] = (got[1] * p.iterations, got[2])  # (E of the preview, $/kWh)
                if all(pv is None for pv in previews):
                    for job in window:  # nothing can start: record the failures, move on
                        sim.place(job, _EMPTY)
                    continue
            mask = np.zeros(self.n_actions, dtype=np.int8)
            for i, pv in enumerate(previews):
                mask[i] = 1 if (pv is not None or not self.preview) else 0
            if self.allow_wait and sim.has_future_events:
                mask[q] = 1
            self._window, self._previews, self._mask = window, previews, mask
            self._preview_stats = stats
            e_max = b_max = 0.0
            for j in sim.pending:  # Eqs. (9)-(10) normalise over the whole pending queue
                p = sim.profile(j)
                e_max = max(e_max, p.single_gpu_exec)
                b_max = max(b_max, p.min_bandwidth_kstar)
            self._e_max, self._b_max = e_max, b_max
            return

    def _observe(self) -> Any:
        sim = self._require_sim()
        sc, k, q = self.scales, self._k, self.max_queue
        regions = self._regions_static.copy()
        regions[:k, 1] = np.asarray(sim.free_gpus, dtype=np.float64) / self._capacity
        rows = sim.residual_rows  # the same object until a reservation changes
        if rows is not self._bw_rows:
            bw = self._bw_static.copy()
            residual = np.maximum(np.asarray(rows, dtype=np.float64), 0.0)
            np.fill_diagonal(residual, 0.0)
            bw[0, :k, :k] = np.log10(1.0 + residual * 8e-9) / sc.log_gbps
            self._bw_rows, self._bw_obs = rows, bw
        bw = self._bw_obs.copy()
        queue = np.zeros((q, len(QUEUE_FEATURES)), dtype=np.float32)
        pending = sim.pending
        e_max, b_max = self._e_max, self._b_max
        now = sim.time
        lh = sc.log_hours
        static = self._job_static
        rows_out = []
        for i, job in enumerate(self._window):
            p = sim.profile(job)
            wait_feature = math.log10(1.0 + (now - p.job.submit_time) / SECONDS_PER_HOUR) / lh
            pv = self._previews[i]
            if pv is None:
                preview = (0.0, 0.0, 0.0, 0.0)
            else:
                exec_s, avg_price = self._preview_stats[i]
                preview = (
                    pv.n_gpus / p.k_star,
                    len(pv.path) / self.max_regions,
                    math.log10(1.0 + exec_s / SECONDS_PER_HOUR) / lh,
                    avg_price / sc.price,
                )
            rows_out.append(
                (
                    1.0,
                    p.single_gpu_exec / e_max if e_max > 0 else 0.0,
                    p.min_bandwidth_kstar / b_max if b_max > 0 else 0.0,
                    *static[job],
                    wait_feature,
                    *preview,
                )
            )
        if rows_out:
            queue[: len(rows_out)] = rows_out
        summary = np.array(
            [
                sim.network_utilization,
                math.log10(1.0 + now / SECONDS_PER_HOUR) / lh,
                len(pending) / q,
                max(0, len(pending) - len(self._window)) / q,
                len(sim.running) / q,
                sum(sim.free_gpus) / self._total_gpus,
            ],
            dtype=np.float32,
        )
        obs = {
            "regions": regions,
            "bandwidth": bw,
            "queue": queue,
            "summary": summary,
            "action_mask": self._mask.copy(),
        }
        if self.observation_mode == "dict":
            return obs
        return np.concatenate([np.ravel(obs[key]).astype(np.float32) for key in self._dict_space])

    def _info(self, jct_term: float, cost_term: float, illegal: bool) -> dict[str, Any]:
        sim = self._require_sim()
        q = self.max_queue
        ids = np.full(q, -1, dtype=np.int64)
        e1 = np.zeros(q)
        bk = np.zeros(q)
        sub = np.zeros(q)
        for i, job in enumerate(self._window):
            p = sim.profile(job)
            ids[i] = job
            e1[i] = p.single_gpu_exec
            bk[i] = p.min_bandwidth_kstar
            sub[i] = p.job.submit_time
        rc = self.reward_config
        return {
            "action_mask": self._mask.astype(bool),
            "queue_job_ids": ids,
            "queue_e1_s": e1,
            "queue_bkstar_Bps": bk,
            "queue_submit_s": sub,
            "pending_e1_max_s": self._e_max,
            "pending_bkstar_max_Bps": self._b_max,
            "alpha": sim.network_utilization,
            "time_s": sim.time,
            "illegal_action": illegal,
            "reward_jct": -rc.jct_weight * jct_term,
            "reward_cost": -rc.cost_weight * cost_term,
            "reward_vector": np.array([-jct_term, -cost_term]),
            "jct_scale_s": self._jct_norm / len(self.scenario.jobs) if self.scenario else 0.0,
            "cost_scale_usd": self._cost_norm,
        }
