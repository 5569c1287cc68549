"""The ``info`` dict of a :class:`~bacepipe_env.envs.geopipe.GeoPipeEnv` step (docs/environment.md,
"Info"): ``lean`` (the default) holds what agents and wrappers read; ``full`` adds the reward's
parts and scales, the emissions so far, the regions down and the deprecated window arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.simulator import Simulator
from .decisions import DecisionPoint
from .reward import RewardFn, RewardScales, RewardTerms

__all__ = ["step_info"]


def step_info(
    point: DecisionPoint,
    terms: RewardTerms,
    *,
    slot_actions: tuple[int, ...] | None,
    preemption: bool,
    full: tuple[Simulator, RewardFn, RewardScales, int] | None = None,
) -> dict[str, Any]:
    """A step's info at decision ``point``: the mask, the window, whether the action was
    illegal, the preemption window (with ``preemption``: preempt actions) and each slot's
    default action (``slot_actions``, with copy actions); ``full`` = ``(sim, reward function,
    scales, max_queue)`` adds the rest."""
    out: dict[str, Any] = {
        "action_mask": point.mask.astype(bool),
        "queue": point.queue,
        "illegal_action": terms.illegal,
    }
    if full is not None:
        out.update(_full(point, terms, *full))
    if preemption:
        out["preemption"] = point.preemption
    if slot_actions is not None:
        out["slot_actions"] = slot_actions
    return out


def _full(
    point: DecisionPoint,
    terms: RewardTerms,
    sim: Simulator,
    reward_fn: RewardFn,
    scales: RewardScales,
    n: int,
) -> dict[str, Any]:
    q = point.queue
    k, ids = len(q.job_ids), np.full(n, -1, dtype=np.int64)  # the window, -1 padded
    e1, bk, sub = np.zeros(n), np.zeros(n), np.zeros(n)
    ids[:k], e1[:k], bk[:k] = q.job_ids, q.single_gpu_exec, q.min_bandwidth_kstar
    sub[:k] = q.submit_time
    return {
        "queue_job_ids": ids,
        "queue_e1_s": e1,
        "queue_bkstar_Bps": bk,
        "queue_submit_s": sub,
        "pending_e1_max_s": q.pending_e1_max,
        "pending_bkstar_max_Bps": q.pending_bkstar_max,
        "alpha": q.alpha,
        "time_s": q.time,
        **reward_fn.components(terms),
        "reward_vector": np.array([-terms.jct, -terms.cost, -terms.carbon]),
        "reward_terms": terms,
        "jct_scale_s": scales.jct_scale,
        "cost_scale_usd": scales.cost_norm,
        "carbon_scale_kg": scales.carbon_norm,
        "carbon_kg": sim.carbon_accrued,
        "regions_down": sim.down_regions,
    }
