"""A permutation-equivariant policy for MaskablePPO: one shared scorer per queue slot.

A flat MLP over the window's slots must learn the same rule once per slot ("pick the masked
slot whose feature is smallest"); a shared scorer learns it once. :class:`SlotExtractor`
encodes the context (regions with their running jobs, grid and faults; the bandwidth
matrices; the summary and release arrays) into one vector ``g``, scores every slot with the
same MLP over ``[queue row, wait-preview row, g]``, scores waiting from ``g`` alone, and
summarises the slots (mean over present ones) for the critic. Permuting the window's jobs
permutes their logits and leaves the value unchanged (tested). :class:`SlotPolicy` routes
the scores straight to the action distribution (no linear layer that would mix slots) and
the rest to the value head.

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
        self.region_keys = tuple(k for k in _REGION_KEYS if k in shapes)
        self.global_keys = tuple(k for k in _GLOBAL_KEYS if k in shapes)
        region_width = sum(shapes[k][1] for k in self.region_keys)
        global_width = sum(int(th.tensor(shapes[k]).prod()) for k in self.global_keys)
        super().__init__(observation_space, features_dim=n_actions + 2 * hidden)
        self.n_slots, self.n_actions, self.hidden = n_slots, n_actions, hidden
        self.waits = n_actions > n_slots  # the last action waits
        self.region_net = _mlp([region_width, hidden])
        self.context_net = _mlp([hidden + global_width, hidden, hidden])
        self.slot_net = _mlp([slot_width + hidden, hidden, hidden])
        self.slot_score = nn.Linear(hidden, 1)
        self.wait_net = _mlp([hidden, hidden])
        self.wait_score = nn.Linear(hidden, 1)
        for head in (self.slot_score, self.wait_score):  # start near the uniform policy
            nn.init.orthogonal_(head.weight, gain=0.01)
            nn.init.zeros_(head.bias)

    def forward(self, obs: dict[str, th.Tensor]) -> th.Tensor:
        """Slot logits (and the wait logit), then the critic's context and slot summary."""
        regions = th.cat([obs[k] for k in self.region_keys], dim=-1)  # (B, R, c)
        present = regions[..., :1]  # column 0 of ``regions``: 1 for a real region
        pooled = (self.region_net(regions) * present).sum(1) / present.sum(1).clamp(min=1.0)
        flat = [obs[k].flatten(1) for k in self.global_keys]
        g = self.context_net(th.cat([pooled, *flat], dim=-1))  # (B, hidden)
        queue = th.cat([obs[k] for k in self.slot_keys], dim=-1)  # (B, Q, c); column 0: a job
        g_slots = g.unsqueeze(1).expand(-1, self.n_slots, -1)
        h = self.slot_net(th.cat([queue, g_slots], dim=-1))  # (B, Q, hidden), shared weights
        logits = self.slot_score(h).squeeze(-1)  # (B, Q)
        if self.waits:
            logits = th.cat([logits, self.wait_score(self.wait_net(g))], dim=-1)
        jobs = queue[..., :1]
        summary = (h * jobs).sum(1) / jobs.sum(1).clamp(min=1.0)
        return th.cat([logits, g, summary], dim=-1)


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
        self.mlp_extractor = _Split(ext.n_actions, 2 * ext.hidden)  # type: ignore[assignment]

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()  # a linear layer here would mix the slots
        self.optimizer = self.optimizer_class(
            self.parameters(),
            lr=lr_schedule(1),  # type: ignore[call-arg]
            **self.optimizer_kwargs,
        )
