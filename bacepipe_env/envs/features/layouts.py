"""The observation's Gymnasium spaces and layouts: :func:`observation_space` (the Dict of the
active :data:`~.table.FEATURES` and the action mask), and the ``"flat"`` and ``"masked"``
layouts an environment may give instead (:func:`layout_space`, :func:`layout`)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np
from gymnasium import spaces

from .table import active_features

__all__ = ["flat_space", "flatten", "layout", "layout_space", "observation_space"]


def observation_space(
    max_queue: int,
    max_regions: int,
    n_actions: int,
    enabled: Collection[str] = (),
    preempt_window: int = 0,
    announce_window: int = 0,
    replica_choices: int = 0,
) -> spaces.Dict:
    """The Dict space of the active :data:`FEATURES` (see :func:`active_features`, with the
    optional columns of the keywords ``enabled``) plus the action mask."""
    sizes = (max_queue, max_regions, preempt_window, announce_window, replica_choices)
    arrays: dict[str, spaces.Space[Any]] = {
        f.name: f.space(*sizes, enabled) for f in active_features(enabled)
    }
    arrays["action_mask"] = spaces.MultiBinary(n_actions)
    return spaces.Dict(arrays)


def flat_space(space: spaces.Dict) -> spaces.Box:
    """One Box holding every array of ``space`` (for ``MlpPolicy``), in :func:`flatten`'s
    order, with each array's lower bounds (0 for the mask) and no upper bound."""
    parts = space.spaces.values()
    size = int(sum(np.prod(s.shape or ()) for s in parts))
    lows = [
        np.ravel(s.low) if isinstance(s, spaces.Box) else np.zeros(int(np.prod(s.shape or ())))
        for s in parts
    ]
    low = np.concatenate(lows).astype(np.float32) if lows else np.zeros(0, np.float32)
    if not low.any():  # all zero: the scalar-bounded Box the v1 spaces always had
        return spaces.Box(0.0, np.inf, shape=(size,), dtype=np.float32)
    return spaces.Box(low, np.full(size, np.inf, np.float32), dtype=np.float32)


def flatten(obs: dict[str, np.ndarray], space: spaces.Dict) -> np.ndarray:
    """The arrays of ``obs`` raveled and concatenated in ``space``'s key order (alphabetical,
    as :func:`gymnasium.spaces.flatten` does), as float32."""
    return np.concatenate([np.ravel(obs[key]).astype(np.float32) for key in space])


def layout_space(space: spaces.Dict, observation: str) -> spaces.Space[Any]:
    """The observation space of layout ``observation`` (see :func:`layout`)."""
    if observation == "dict":
        return space
    if observation == "flat":
        return flat_space(space)
    n = int(np.prod(space["action_mask"].shape or ()))  # MultiBinary(n_actions)
    arrays = spaces.Dict({k: s for k, s in space.spaces.items() if k != "action_mask"})
    return spaces.Dict(
        {
            "observations": flat_space(arrays),
            "action_mask": spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32),
        }
    )


def layout(obs: dict[str, np.ndarray], space: spaces.Dict, observation: str) -> Any:
    """``obs`` (the Dict of ``space``) in layout ``observation``: ``"dict"`` as it is,
    ``"flat"`` one float32 vector (:func:`flatten`, the mask included), ``"masked"``
    ``{"observations": the features flattened, "action_mask": the mask as float32}``, the
    layout RLlib's action-masking RL module reads."""
    if observation == "dict":
        return obs
    if observation == "flat":
        return flatten(obs, space)
    mask = obs["action_mask"].astype(np.float32)
    parts = [np.ravel(obs[key]).astype(np.float32) for key in space if key != "action_mask"]
    return {"observations": np.concatenate(parts), "action_mask": mask}
