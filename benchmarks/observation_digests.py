"""Digests of the observations, masks, rewards and ends of every registered env id under a
fixed seeded play: the reference that keeps restructuring of the simulator and the env honest
(issue 26: "the observation digests stay bit-identical").

    python benchmarks/observation_digests.py > tests/envs/data/observation_digests.json

was run at commit df3ba3f, before the typed ``World`` and the fault events (the digest of
``GeoPipe-Online-Elastic-v0``, registered later, was added when the id was, before the env's
restructuring of issue 39, and recorded again at issue 44, when the all-reduce's gradients
became 4 bytes, ``constants.bytes_per_grad``: with 2 the old digest is reproduced);
``tests/envs/test_observation_digests.py`` recomputes the digests with the current code and
compares. A digest is the SHA-256 of every observation array's bytes (with its dtype and
shape), every action mask, every reward (``float.hex``) and every ``terminated`` /
``truncated`` flag, so one changed bit anywhere changes it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import gymnasium as gym
import numpy as np

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs.registration import ENV_IDS

#: Steps played per episode, and the seeds of the episodes: enough to cross arrivals,
#: releases and (on the fault and preemption ids) failures and preemptions.
MAX_STEPS = 400
SEEDS = (0, 3)

#: Plays beyond the registered ids: an id with world settings given to ``gym.make``
#: (hourly prices from a random hour, egress, GPU failures, an outage and a price event).
EXTRA: dict[str, tuple[str, dict[str, Any]]] = {
    "online-world": (
        "bacepipe_env/GeoPipe-Online-v1",
        {
            "n_jobs": 60,
            "prices": "hourly",
            "start_hour": "random",
            "egress_usd_per_gb": 0.02,
            "gpu_failure_rate": 2e-3,
            "outages": [("EU-West", 5.0, 20.0)],
            "admission": "finish-aware",
        },
    ),
    "paper-degraded": (
        "bacepipe_env/GeoPipe-v2",
        {"bandwidth_scale": 0.5, "gpu_scale": 1.5, "ignore_memory": True},
    ),
}

#: Every play: the registered ids, then :data:`EXTRA`.
PLAYS: dict[str, tuple[str, dict[str, Any]]] = {
    **{env_id: (env_id, {}) for env_id in ENV_IDS},
    **EXTRA,
}


def _feed(h: Any, value: Any) -> None:
    if isinstance(value, dict):
        for key in sorted(value):
            h.update(key.encode())
            _feed(h, value[key])
        return
    array = np.ascontiguousarray(value)
    h.update(f"{array.dtype.str}{array.shape}".encode())
    h.update(array.tobytes())


def digest(name: str) -> str:
    """The SHA-256 of play ``name`` (a key of :data:`PLAYS`): at each step the action is a
    seeded draw among the legal ones (so the play explores more than the first legal one)."""
    env_id, kwargs = PLAYS[name]
    h = hashlib.sha256()
    env = gym.make(env_id, **kwargs)
    try:
        for seed in SEEDS:
            rng = np.random.default_rng(seed)
            obs, _ = env.reset(seed=seed)
            _feed(h, obs)
            for _ in range(MAX_STEPS):
                mask = np.asarray(env.unwrapped.action_masks())
                _feed(h, mask)
                legal = np.flatnonzero(mask)
                action = int(rng.choice(legal))
                obs, reward, terminated, truncated, _ = env.step(action)
                _feed(h, obs)
                h.update(float(reward).hex().encode())
                h.update(bytes([terminated, truncated]))
                if terminated or truncated:
                    break
    finally:
        env.close()
    return h.hexdigest()


def main() -> None:
    """Print every play's digest as JSON."""
    print(json.dumps({name: digest(name) for name in PLAYS}, indent=1))


if __name__ == "__main__":
    main()
