"""A permutation-equivariant policy for MaskablePPO: one shared scorer per queue slot.

A flat MLP over the window's slots must learn the same rule once per slot ("pick the masked
slot whose feature is smallest"); a shared scorer learns it once. :class:`SlotExtractor`
encodes the context (regions with their running jobs, grid and faults; the bandwidth
matrices; the summary and release arrays; and, on the announced ids, the announced jobs, each
row through one shared encoder and pooled) into one vector ``g``, scores every slot with the
same MLP over ``[queue row, wait-preview row, g]``, scores waiting from ``g`` alone, and, with
preempt actions, scores every running job of the preemption window with one shared MLP over
``[running-job row, g]``. On an id where the agent also picks a job's count of data-parallel
copies (``replica_choices``), the slot scorer reads the slot's ``replicas`` row too and gives
one logit per count. It summarises the slots and the running jobs (means over present
rows) for the critic. Permuting the window's jobs, the announced jobs or the running jobs
permutes their logits (the announced ones have none) and leaves the value unchanged (tested).
:class:`SlotPolicy` routes the scores straight to the action distribution (no linear layer
that would mix slots) and the rest to the value head. On an observation without the
``announced`` and ``running_jobs`` arrays the network is the one the shipped agents were
trained with, parameter for parameter.

    bacepipe train learn --policy slot          # MaskablePPO on the Dict observation

Both classes live in this importable module, so a saved model loads anywhere the package is
installed (SB3 stores the policy class by its import path).
"""

from __future__ import annotations

import itertools
from typing import Any

import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

__all__ = ["SlotExtractor", "SlotPolicy"]

#: Per-region arrays of the observation (each ``(max_regions, c)``), concatenated per region.
_REGION_KEYS = ("regions", "grid", "region_faults", "running")
#: Per-slot arrays (each ``(max_queue, c)``), concatenated per slot: ``queue`` first.
_SLOT_KEYS = ("queue", "wait_preview")
#: Arrays seen whole: the link matrices (flattened) and the system-wide vectors.
_GLOBAL_KEYS = ("bandwidth", "link_faults", "summary", "release")


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in itertools.pairwise(sizes):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers)


class SlotExtractor(BaseFeaturesExtractor):
    """Features ``[slot logits (n_actions), critic latent (2 * hidden)]`` of a GeoPipe Dict
    observation.

    Args:
        observation_space: the env's Dict space (``observation="dict"``); ``queue`` and
            ``action_mask`` are required, the other arrays are used when present.
        hidden: width of every hidden layer (the context, the slot and the wait scorers).
    """

    def __init__(self, observation_space: spaces.Dict, hidden: int = 64) -> None:
        shapes = {k: tuple(s.shape or ()) for k, s in observation_space.spaces.items()}
        if "queue" not in shapes or "action_mask" not in shapes:
            raise ValueError("the slot policy needs the Dict observation (queue, action_mask)")
        n_slots = shapes["queue"][0]
        n_actions = shapes["action_mask"][0]
        self.slot_keys = tuple(k for k in _SLOT_KEYS if k in shapes)
        slot_width = sum(shapes[k][1] for k in self.slot_keys)
        copies = shapes.get("replicas")  # (Q, R, c): one logit per slot and count of copies
        self.n_copies = copies[1] if copies else 0
        if copies:
            slot_width += copies[1] * copies[2]
        self.region_keys = tuple(k for k in _REGION_KEYS if k in shapes)
        self.global_keys = tuple(k for k in _GLOBAL_KEYS if k in shapes)
        region_width = sum(shapes[k][1] for k in self.region_keys)
        global_width = sum(int(th.tensor(shapes[k]).prod()) for k in self.global_keys)
        announced = shapes.get("announced")
        running = shapes.get("running_jobs")
        n_running = running[0] if running else 0
        critic = 2 * hidden + (hidden if running else 0)
        super().__init__(observation_space, features_dim=n_actions + critic)
        self.n_slots, self.n_actions, self.hidden = n_slots, n_actions, hidden
        self.n_running = n_running  # preempt actions: the last n_running, one per row
        n_place = n_slots * max(1, self.n_copies)
        self.waits = n_actions - n_running > n_place  # the action after the slots waits
        self.region_net = _mlp([region_width, hidden])
        pooled_width = hidden * (2 if announced else 1)
        self.context_net = _mlp([pooled_width + global_width, hidden, hidden])
        self.slot_net = _mlp([slot_width + hidden, hidden, hidden])
        self.slot_score = nn.Linear(hidden, max(1, self.n_copies))
        self.wait_net = _mlp([hidden, hidden])
        self.wait_score = nn.Linear(hidden, 1)
        heads = [self.slot_score, self.wait_score]
        if announced:  # one encoder shared by every announced row, pooled into the context
            self.announced_net = _mlp([announced[1], hidden, hidden])
        if running:  # one scorer shared by every running job of the preemption window
            self.running_net = _mlp([running[1] + hidden, hidden, hidden])
            self.preempt_score = nn.Linear(hidden, 1)
            heads.append(self.preempt_score)
        self.announced = bool(announced)
        for head in heads:  # start near the uniform policy
            nn.init.orthogonal_(head.weight, gain=0.01)
            nn.init.zeros_(head.bias)

    def forward(self, obs: dict[str, th.Tensor]) -> th.Tensor:
        """Slot logits (and the wait logit), then the critic's context and slot summary."""
        regions = th.cat([obs[k] for k in self.region_keys], dim=-1)  # (B, R, c)
        present = regions[..., :1]  # column 0 of ``regions``: 1 for a real region
        pooled = (self.region_net(regions) * present).sum(1) / present.sum(1).clamp(min=1.0)
        flat = [obs[k].flatten(1) for k in self.global_keys]
        parts = [pooled]
        if self.announced:
            rows = obs["announced"]  # (B, A, c); column 0: an announced job
            here = rows[..., :1]
            parts.append((self.announced_net(rows) * here).sum(1) / here.sum(1).clamp(min=1.0))
        g = self.context_net(th.cat([*parts, *flat], dim=-1))  # (B, hidden)
        queue = th.cat([obs[k] for k in self.slot_keys], dim=-1)  # (B, Q, c); column 0: a job
        g_slots = g.unsqueeze(1).expand(-1, self.n_slots, -1)
        slot_in = [queue, g_slots]
        if self.n_copies:  # each slot's counts of copies, flattened into its row
            slot_in.insert(1, obs["replicas"].flatten(2))
        h = self.slot_net(th.cat(slot_in, dim=-1))  # (B, Q, hidden), shared weights
        logits = self.slot_score(h).flatten(1)  # (B, Q) or (B, Q * R), slot-major
        if self.waits:
            logits = th.cat([logits, self.wait_score(self.wait_net(g))], dim=-1)
        jobs = queue[..., :1]
        summary = (h * jobs).sum(1) / jobs.sum(1).clamp(min=1.0)
        if not self.n_running:
            return th.cat([logits, g, summary], dim=-1)
        rows = obs["running_jobs"]  # (B, W, c); column 0: a running job in the window
        g_rows = g.unsqueeze(1).expand(-1, self.n_running, -1)
        r = self.running_net(th.cat([rows, g_rows], dim=-1))  # (B, W, hidden), shared weights
        logits = th.cat([logits, self.preempt_score(r).squeeze(-1)], dim=-1)
        here = rows[..., :1]
        held = (r * here).sum(1) / here.sum(1).clamp(min=1.0)
        return th.cat([logits, g, summary, held], dim=-1)


class _Split(nn.Module):
    """The policy's "MLP extractor": the logits to the actor, the rest to the critic."""

    def __init__(self, n_actions: int, critic_width: int) -> None:
        super().__init__()
        self.n_actions = n_actions
        self.latent_dim_pi = n_actions
        self.latent_dim_vf = critic_width

    def forward(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        return features[:, : self.n_actions]

    def forward_critic(self, features: th.Tensor) -> th.Tensor:
        return features[:, self.n_actions :]


class SlotPolicy(MaskableMultiInputActorCriticPolicy):
    """MaskablePPO's Dict policy with :class:`SlotExtractor`: the slot scores are the action
    logits (the action net is the identity), the value head reads the context and the slot
    summary. ``hidden`` (policy_kwargs ``features_extractor_kwargs``) sets the width."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("features_extractor_class", SlotExtractor)
        kwargs.setdefault("ortho_init", False)  # the extractor initialises its own heads
        kwargs.setdefault("share_features_extractor", True)
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        ext = self.features_extractor
        assert isinstance(ext, SlotExtractor)
        critic = ext.features_dim - ext.n_actions
        self.mlp_extractor = _Split(ext.n_actions, critic)  # type: ignore[assignment]

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()  # a linear layer here would mix the slots
        self.optimizer = self.optimizer_class(
            self.parameters(),
            lr=lr_schedule(1),  # type: ignore[call-arg]
            **self.optimizer_kwargs,
        )
