"""Environment throughput: env steps per second with random masked actions, and the CPU time of
a 1,000-job GeoPipe-Online-v1 episode beside CartPole-v1's for 1,000 random steps.

For each registered id, plays random legal actions (uniform over the action mask) for a fixed
time per repeat, resetting at episode ends, and prints the best and median of the repeats.
Timing covers ``step`` and ``reset`` and the action choice, pinned to one core.

Then the long-horizon measurement: ``gym.make("bacepipe_env/GeoPipe-Online-v1", n_jobs=1000)``
played to its end with random legal actions (sampled from the mask), CPU time
(``time.process_time``) per episode including ``reset``, the median over ``--episodes`` seeds;
and, measured in the same run, the CPU time of 1,000 random steps of ``CartPole-v1`` (resetting
when a pole falls), the median over as many repeats. The target is 0.5 s per 1,000-job episode.

Last, every id's environment steps per second of process CPU time as a fraction of CartPole-v1's,
measured in the same run: one env as ``gym.make`` gives it, ``gym.make_vec`` of 8 sync envs,
and SB3's ``DummyVecEnv`` of 8 (issue 14's target: at least 0.15 everywhere).

Run: ``python benchmarks/bench_env.py [--seconds S] [--repeats R] [--episodes E]
[--profile] [--phases] [--ids A,B]`` (``--profile`` prints cProfile's top functions of one
1,000-job episode; ``--phases`` prints only where a step's time goes, per id: its phases and
each observation array, in microseconds per step; ``--ids`` limits the tables or the phases to
those ids, beside CartPole-v1).
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import os
import platform
import pstats
import statistics
import time
from typing import Any

import gymnasium as gym
import numpy as np

import bacepipe_env  # noqa: F401  (registers the ids)

ONLINE_ID = "bacepipe_env/GeoPipe-Online-v1"
ONLINE_JOBS = 1000
CARTPOLE_STEPS = 1000
TARGET_S = 0.5  # CPU seconds per 1,000-job Online episode


def _measure(env_id: str, seconds: float, seed: int, **kwargs: Any) -> float:
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


def online_episode(env: gym.Env[Any, Any], seed: int) -> tuple[float, int, int]:
    """CPU seconds (reset included), steps and jobs completed of one episode of ``env`` played
    with random legal actions, sampled from the mask by the action space."""
    env.action_space.seed(seed)
    start = time.process_time()
    _, info = env.reset(seed=seed)
    steps = 0
    while True:
        action = env.action_space.sample(mask=info["action_mask"].astype(np.int8))
        _, _, terminated, truncated, info = env.step(action)
        steps += 1
        if terminated or truncated:
            break
    cpu = time.process_time() - start
    return cpu, steps, int(info.get("episode_jobs_completed", -1))


def cartpole_steps(seed: int, n: int = CARTPOLE_STEPS) -> float:
    """CPU seconds of ``n`` random steps of CartPole-v1 (reset included, and on every end)."""
    env = gym.make("CartPole-v1")
    env.action_space.seed(seed)
    start = time.process_time()
    env.reset(seed=seed)
    for _ in range(n):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    return time.process_time() - start


IDS = (
    "bacepipe_env/GeoPipe-v2",
    "bacepipe_env/GeoPipe-Random-v2",
    "bacepipe_env/GeoPipe-Fig1-v2",
    ONLINE_ID,
    "bacepipe_env/GeoPipe-Online-Preempt-v1",
    "bacepipe_env/GeoPipe-Online-Announced-v0",
    "bacepipe_env/GeoPipe-Online-Announced-Preempt-v0",
    "bacepipe_env/GeoPipe-Online-Elastic-v0",
)
N_VEC = 8
TARGET_RATIO = 0.15  # issue 14: every id at least 0.15 x CartPole-v1's steps/s, CPU time


def _legal(rng: np.random.Generator, mask: np.ndarray) -> int:
    """A random legal action; 0 when none is (an ended episode, which the vector env's
    next-step autoreset resets whatever the action)."""
    legal = np.flatnonzero(mask)
    return int(legal[int(rng.integers(len(legal)))]) if len(legal) else 0


def cpu_rate(env_id: str, how: str, seconds: float, seed: int = 0) -> float:
    """Environment steps per second of process CPU time over ``seconds`` of it, random
    (masked) actions: one env (``single``, wrappers included, as ``gym.make`` gives it),
    ``gym.make_vec`` of 8 sync envs (``make_vec``) or SB3's ``DummyVecEnv`` of 8 (``dummy``,
    the masks asked through ``env_method("action_masks")`` as MaskablePPO asks them)."""
    rng = np.random.default_rng(seed)
    masked = env_id != "CartPole-v1"
    steps = 0
    if how == "single":
        env = gym.make(env_id)
        _, info = env.reset(seed=seed)
        start = time.process_time()
        while time.process_time() - start < seconds:
            a = _legal(rng, info["action_mask"]) if masked else int(rng.integers(2))
            _, _, terminated, truncated, info = env.step(a)
            steps += 1
            if terminated or truncated:
                _, info = env.reset()
    elif how == "make_vec":
        venv = gym.make_vec(env_id, num_envs=N_VEC, vectorization_mode="sync")
        _, info = venv.reset(seed=seed)
        start = time.process_time()
        while time.process_time() - start < seconds:
            if masked:
                acts = np.array([_legal(rng, m) for m in info["action_mask"]])
            else:
                acts = rng.integers(2, size=N_VEC)
            _, _, _, _, info = venv.step(acts)  # next-step autoreset
            steps += N_VEC
    else:
        from stable_baselines3.common.vec_env import DummyVecEnv

        dummy = DummyVecEnv([lambda: gym.make(env_id)] * N_VEC)
        dummy.seed(seed)
        dummy.reset()
        start = time.process_time()
        while time.process_time() - start < seconds:
            if masked:
                masks = dummy.env_method("action_masks")
                acts = np.array([_legal(rng, m) for m in masks])
            else:
                acts = rng.integers(2, size=N_VEC)
            dummy.step(acts)  # resets finished envs itself
            steps += N_VEC
    return steps / (time.process_time() - start)


def versus_cartpole(seconds: float, ids: tuple[str, ...] = IDS) -> None:
    """Every id's (of ``ids``) steps/s as a fraction of CartPole-v1's, one env and 8
    vectorised two ways, all measured in this run on process CPU time."""
    print(f"\nsteps per CPU second beside CartPole-v1, this run ({seconds:g} s each):")
    hows = ("single", "make_vec", "dummy")
    pole = {how: cpu_rate("CartPole-v1", how, seconds) for how in hows}
    print(f"{'CartPole-v1':34s} " + "  ".join(f"{how} {pole[how]:9,.0f}" for how in hows))
    for env_id in ids:
        cells = []
        for how in hows:
            rate = cpu_rate(env_id, how, seconds)
            ratio = rate / pole[how]
            mark = "" if ratio >= TARGET_RATIO else " (< 0.15)"
            cells.append(f"{how} {rate:7,.0f} = {ratio:.3f}x{mark}")
        print(f"{env_id:34s} " + "  ".join(cells))


class _Timed:
    """Calls ``inner`` and adds the wall time to ``acc[label]``; other attributes pass
    through (so a wrapped previewer still serves the ``wait_preview`` memo)."""

    def __init__(self, inner: Any, label: str, acc: collections.Counter[str]) -> None:
        self._inner, self._label, self._acc = inner, label, acc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        out = self._inner(*args, **kwargs)
        self._acc[self._label] += time.perf_counter() - t0
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def phases(env_id: str, steps: int = 20_000, seed: int = 0) -> None:
    """Microseconds per step (resets included, counted as their own phase) of ``env_id``'s
    parts, random masked actions: the whole step, the next decision (simulator and
    previews), the placement previews alone, the observation and each of its arrays, and
    ``info``. Instance attributes wrap the env's own parts; nothing global is patched."""
    acc: collections.Counter[str] = collections.Counter()
    env = gym.make(env_id)
    base = env.unwrapped
    base._next_decision = _Timed(base._next_decision, "next decision", acc)
    base._observe = _Timed(base._observe, "observation", acc)
    base._info = _Timed(base._info, "info", acc)
    base.previewer = _Timed(base.previewer, "  previews", acc)
    enc = base.encoder
    enc._encoders = tuple((n, _Timed(f, f"  obs {n}", acc)) for n, f in enc._encoders)
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    for _ in range(2000):  # warm-up: the memos and the imports
        _, _, terminated, truncated, info = env.step(_legal(rng, info["action_mask"]))
        if terminated or truncated:
            _, info = env.reset()
    acc.clear()
    reset_s = 0.0
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, info = env.step(_legal(rng, info["action_mask"]))
        if terminated or truncated:
            t0 = time.perf_counter()
            _, info = env.reset()
            reset_s += time.perf_counter() - t0
    total = time.perf_counter() - start
    print(f"\n{env_id}: {total / steps * 1e6:.1f} us per step, {steps:,} steps")
    print(f"  {'reset (its decision and observation too)':42s} {reset_s / steps * 1e6:7.1f}")
    order = ["next decision", "  previews", "observation"]
    order += sorted(k for k in acc if k.startswith("  obs"))
    for label in [*order, "info"]:
        print(f"  {label:42s} {acc[label] / steps * 1e6:7.1f}")


def main() -> None:
    """Print steps/s for every registered id, with and without placement previews, then the
    1,000-job Online episode's CPU time beside CartPole-v1's, then every id's steps/s beside
    CartPole-v1's, one env and 8 vectorised."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=5, help="1,000-job Online episodes")
    parser.add_argument("--profile", action="store_true", help="cProfile one Online episode")
    parser.add_argument("--phases", action="store_true", help="only where a step's time goes")
    parser.add_argument(
        "--ids", default=None, help="only these ids (comma-separated), beside CartPole-v1"
    )
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    chosen = IDS
    if args.ids:
        chosen = tuple(i.strip() for i in args.ids.split(",") if i.strip())
        unknown = [i for i in chosen if i not in IDS]
        if unknown:
            raise SystemExit(f"unknown ids {unknown}; known: {list(IDS)}")
    if args.phases:
        for env_id in chosen:
            phases(env_id)
        return
    if args.ids:  # a subset: the steps/s tables and CartPole-v1, not the long episode
        for env_id in chosen:
            for preview in (True, False):
                rates = [
                    _measure(env_id, args.seconds, seed, preview=preview)
                    for seed in range(args.repeats)
                ]
                print(f"{env_id:34s} preview={preview!s:5s}  best {max(rates):8,.0f} steps/s")
        versus_cartpole(args.seconds, chosen)
        return
    print(
        f"Python {platform.python_version()} on {platform.machine()}, one core, "
        f"random masked actions, {args.repeats} x {args.seconds:g} s"
    )
    for env_id in IDS:
        for preview in (True, False):
            rates = [
                _measure(env_id, args.seconds, seed, preview=preview)
                for seed in range(args.repeats)
            ]
            print(
                f"{env_id:34s} preview={preview!s:5s}  best {max(rates):8,.0f} steps/s  "
                f"median {statistics.median(rates):8,.0f}"
            )

    env = gym.make(ONLINE_ID, n_jobs=ONLINE_JOBS)
    online_episode(env, 10_000)  # warm-up: the scenario file, the hourly series, the imports
    runs = [online_episode(env, seed) for seed in range(args.episodes)]
    cpu = [c for c, _, _ in runs]
    assert all(done == ONLINE_JOBS for _, _, done in runs), runs  # every episode finished
    cartpole_steps(10_000)  # warm-up
    pole = [cartpole_steps(seed) for seed in range(args.episodes)]
    median, pole_median = statistics.median(cpu), statistics.median(pole)
    verdict = "met" if median <= TARGET_S else "MISSED"
    print(
        f"\n{ONLINE_ID} n_jobs={ONLINE_JOBS}, random legal actions, CPU per episode "
        f"(reset included), {args.episodes} seeds:\n"
        f"  median {median:.3f} s  (min {min(cpu):.3f}, max {max(cpu):.3f}; "
        f"{statistics.median(s for _, s, _ in runs):,.0f} steps)  "
        f"target {TARGET_S} s: {verdict}\n"
        f"CartPole-v1, {CARTPOLE_STEPS:,} random steps, same run:\n"
        f"  median {pole_median:.4f} s  -> the Online episode costs "
        f"{median / pole_median:.0f} x as much CPU"
    )
    versus_cartpole(args.seconds)
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        online_episode(env, 0)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
