"""Training throughput: MaskablePPO's environment steps per CPU second on GeoPipe-v2 with 1 and
8 envs in one process (SB3's DummyVecEnv), and the share of that CPU time spent inside the
environments' ``step`` and ``reset`` (issue 14 asks for both, before and after its env work).

The learner is the project's default (``bacepipe train learn``'s MaskablePPO settings: 256
steps per env per rollout, minibatches of 64, 10 epochs, a [64, 64] MLP), on one core with one
torch thread; ``--steps`` environment steps per run.

Run: ``python benchmarks/bench_train.py [--steps N]`` (needs the ``train`` extra).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from typing import Any

import gymnasium as gym
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import DummyVecEnv

import bacepipe_env  # noqa: F401  (registers the ids)

ENV_ID = "bacepipe_env/GeoPipe-v2"


class _Timed(gym.Wrapper):  # type: ignore[type-arg]
    """Counts the process CPU time spent in the wrapped env's ``step`` and ``reset``."""

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self.cpu = 0.0

    def step(self, action: Any) -> Any:
        """The env's step, timed."""
        t0 = time.process_time()
        out = self.env.step(action)
        self.cpu += time.process_time() - t0
        return out

    def reset(self, **kwargs: Any) -> Any:
        """The env's reset, timed."""
        t0 = time.process_time()
        out = self.env.reset(**kwargs)
        self.cpu += time.process_time() - t0
        return out

    def action_masks(self) -> Any:
        """The mask MaskablePPO asks for (timed as env work too)."""
        t0 = time.process_time()
        out = self.env.unwrapped.action_masks()  # type: ignore[attr-defined]
        self.cpu += time.process_time() - t0
        return out


def run(n_envs: int, steps: int) -> tuple[float, float]:
    """(environment steps per CPU second, the envs' share of the CPU time) of one run."""
    wrappers = [_Timed(gym.make(ENV_ID)) for _ in range(n_envs)]
    venv = DummyVecEnv([lambda w=w: w for w in wrappers])  # type: ignore[misc]
    model = MaskablePPO(
        "MultiInputPolicy",
        venv,
        n_steps=256,
        batch_size=64,
        n_epochs=10,
        gamma=1.0,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [64, 64]},
    )
    t0 = time.process_time()
    model.learn(total_timesteps=steps)
    cpu = time.process_time() - t0
    done = model.num_timesteps
    return done / cpu, sum(w.cpu for w in wrappers) / cpu


def main() -> None:
    """Print steps/s and the env's share for 1 and 8 envs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8192, help="environment steps per run")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    torch.set_num_threads(1)
    print(f"Python {platform.python_version()}, torch {torch.__version__}, one core, {ENV_ID}")
    for n in (1, 8):
        rate, share = run(n, args.steps)
        print(
            f"MaskablePPO, {n} env{'s' if n > 1 else ''} in one process (DummyVecEnv): "
            f"{rate:,.0f} env steps per CPU second, {share:.0%} of it in the envs"
        )


if __name__ == "__main__":
    main()
