"""Environment throughput: env steps per second with random masked actions.

For each registered id, plays random legal actions (uniform over the action mask) for a fixed
time per repeat, resetting at episode ends, and prints the best and median of the repeats.
Timing covers ``step`` and ``reset`` and the action choice, pinned to one core.

Run: ``python benchmarks/bench_env.py [--seconds S] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import gymnasium as gym
import numpy as np

import bacepipe_env  # noqa: F401  (registers the ids)


def _measure(env_id: str, seconds: float, seed: int, **kwargs: object) -> float:
    env = gym.make(env_id, **kwargs).unwrapped  # no wrappers: the env's own cost
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    steps = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        legal = np.flatnonzero(info["action_mask"])
        _, _, terminated, truncated, info = env.step(legal[int(rng.integers(len(legal)))])
        steps += 1
        if terminated or truncated:
            _, info = env.reset()
    return steps / elapsed


def main() -> None:
    """Print steps/s for every registered id, with and without placement previews."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    print(
        f"Python {platform.python_version()} on {platform.machine()}, one core, "
        f"random masked actions, {args.repeats} x {args.seconds:g} s"
    )
    for env_id in (
        "bacepipe_env/GeoPipe-v1",
        "bacepipe_env/GeoPipe-Random-v1",
        "bacepipe_env/GeoPipe-Fig1-v1",
    ):
        for preview in (True, False):
            rates = [
                _measure(env_id, args.seconds, seed, preview=preview)
                for seed in range(args.repeats)
            ]
            print(
                f"{env_id:34s} preview={preview!s:5s}  best {max(rates):8,.0f} steps/s  "
                f"median {statistics.median(rates):8,.0f}"
            )


if __name__ == "__main__":
    main()
