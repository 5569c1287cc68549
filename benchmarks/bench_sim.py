"""Simulator throughput: episodes and scheduling decisions per second.

Prints, for BACE-Pipe on one core:
- the ``paper`` scenario (6 regions, 8 jobs): episodes/s and decisions/s, under each admission
  rule (GPU memory checked), under the paper's literal semantics (memory ignored, greedy) and
  with GPU failures at 2e-4 per GPU-hour (semantics §11: attempts, checkpoints and restarts);
- a synthetic 32-region, 1,000-job scenario, all jobs at t = 0 and with Poisson arrivals:
  wall time to load and profile it, and to simulate it;
- issue 14's heavy load, 64 regions at 4 jobs/h with 1,000 and 10,000 jobs: CPU time (the
  best of 10 and of 3 runs: the machine's noise is up to +-30%) and the growth exponent in N, with
  the default Pathfinder (compiled when numba is installed) and, then, the Python one;
- issue 14's large online run, 100,000 jobs on 128 regions arriving in the Philly trace's
  pattern at load 0.8: CPU time to build and to simulate, and peak memory, in a fresh child
  process (``--large-jobs`` changes the job count), then again on the Python Pathfinder
  (``BACEPIPE_COMPILED=0``) when numba is installed.

CartPole-v1's steps per CPU second, measured at the start and before the large run, show how
fast the machine ran (its speed moves by a third from run to run).

Run: ``make bench`` or ``python benchmarks/bench_sim.py [--seconds S]``.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

from bacepipe_env import bace_pipe, load_scenario, synthetic_scenario
from bacepipe_env.core.admission import ADMISSION_RULES
from bacepipe_env.scheduling import compiled as compiled_pathfinder


def _paper(
    seconds: float, admission: str, ignore_memory: bool = False, gpu_failure_rate: float = 0.0
) -> float:
    scenario = load_scenario(
        "paper",
        seed=0,
        admission=admission,
        ignore_memory=ignore_memory,
        gpu_failure_rate=gpu_failure_rate,
    )
    _ = scenario.profiles  # profiled once, as the Job Parser would
    policy = bace_pipe()
    policy.simulate(scenario)  # warm-up
    n_eps = n_dec = 0
    start = time.process_time()
    while (elapsed := time.process_time() - start) < seconds:
        result = policy.simulate(scenario)
        n_eps += 1
        n_dec += result.n_decisions
    world = "memory ignored" if ignore_memory else "memory checked"
    if gpu_failure_rate > 0:
        world += f", GPU failures at {gpu_failure_rate:g}/GPU-h"
    print(
        f"paper (6 regions, 8 jobs), BACE-Pipe, {admission} admission, {world}: "
        f"{n_eps / elapsed:,.0f} episodes/s, {n_dec / elapsed:,.0f} decisions/s "
        f"({n_eps} episodes in {elapsed:.1f} s CPU)"
    )
    return n_eps / elapsed


def _large(arrivals: float | None) -> None:
    t0 = time.perf_counter()
    scenario = synthetic_scenario(32, 1000, seed=0, arrival_rate_per_h=arrivals)
    _ = scenario.profiles
    t1 = time.perf_counter()
    result = bace_pipe().simulate(scenario)
    t2 = time.perf_counter()
    how = "all at t = 0" if arrivals is None else f"Poisson {arrivals:g}/h"
    print(
        f"synthetic 32 regions x 1,000 jobs ({how}): load+profile {t1 - t0:.2f} s, "
        f"simulate {t2 - t1:.2f} s ({result.n_decisions} decisions, "
        f"{result.n_decisions / (t2 - t1):,.0f} decisions/s)"
    )


def _heavy(compiled: bool = False) -> None:
    """Issue 14's heavy load: 64 regions, Poisson 4 jobs/h (the queue grows into the
    thousands), 1,000 and 10,000 jobs, process CPU time of the simulation (the best of 10 and
    of 3 runs: the short run's noise would dominate the exponent), and the growth exponent
    between the two; the compiled Pathfinder (after its one-time load) or the Python one, as
    ``compiled`` says."""
    how = "compiled Pathfinder" if compiled else "Python Pathfinder"
    cpu = {}
    for n, repeats in ((1_000, 10), (10_000, 3)):
        scenario = synthetic_scenario(64, n, seed=0, arrival_rate_per_h=4.0)
        _ = scenario.profiles
        policy = bace_pipe(compiled=compiled)
        policy.simulate(synthetic_scenario(64, 20, seed=1))  # warm-up: numba's one-time load
        runs = []
        for _ in range(repeats):
            t0 = time.process_time()
            policy.simulate(scenario)
            runs.append(time.process_time() - t0)
        cpu[n] = min(runs)
        verdict = "" if n < 10_000 else f"  (target 1 s: {'met' if cpu[n] <= 1.0 else 'MISSED'})"
        print(
            f"synthetic 64 regions x {n:,} jobs (Poisson 4/h), {how}: simulate "
            f"{cpu[n]:.2f} s CPU, best of {repeats}{verdict}"
        )
    growth = math.log(cpu[10_000] / cpu[1_000]) / math.log(10.0)
    verdict = "met" if growth < 1.15 else "MISSED"
    print(f"  growth from 1,000 to 10,000 jobs: N^{growth:.2f}  (target below N^1.15: {verdict})")


def _yardstick() -> None:
    """CartPole-v1's steps per CPU second now (one env as ``gym.make`` gives it, random
    actions), at the start and the end: how fast the machine runs during this benchmark, the
    scale its other figures move with from run to run."""
    from bench_env import cpu_rate  # the script's folder is on sys.path

    print(f"  yardstick: CartPole-v1 at {cpu_rate('CartPole-v1', 'single', 2.0):,.0f} steps/s")


def _pathfinder() -> str:
    """Which Pathfinder the default policy runs on large clusters, in words."""
    if not compiled_pathfinder.enabled():
        return "Python (numba not installed, or BACEPIPE_COMPILED=0)"
    import numba

    return (
        f"compiled (numba {numba.__version__}) from {compiled_pathfinder.COMPILED_FROM} "
        f"regions, on runs of at least {compiled_pathfinder.COMPILED_WORK:.0e} jobs x regions^2 "
        "or once numba is loaded"
    )


PAPER_TARGET = 5_000.0  # episodes per CPU second, paper under BACE-Pipe
LARGE_TARGET_S = 30.0  # CPU seconds, build and simulation together
LARGE_TARGET_MB = 1024.0


def large_online(n_jobs: int) -> None:
    """One run of ``n_jobs`` jobs x 128 regions, Philly arrivals at load 0.8, under BACE-Pipe:
    prints the CPU time to build and to simulate, and this process's peak memory."""
    t0 = time.process_time()  # from here on: numba's import and cache load count too
    scenario = synthetic_scenario(128, n_jobs, seed=0, arrivals="philly", load=0.8)
    _ = scenario.profiles
    t1 = time.process_time()
    result = bace_pipe().simulate(scenario)
    t2 = time.process_time()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    total = t2 - t0
    cpu_ok = "met" if total <= LARGE_TARGET_S else "MISSED"
    mem_ok = "met" if peak_mb < LARGE_TARGET_MB else "MISSED"
    print(
        f"synthetic 128 regions x {n_jobs:,} jobs (Philly arrivals, load 0.8), "
        f"{'compiled' if compiled_pathfinder.loaded() else 'Python'} Pathfinder: build "
        f"{t1 - t0:.1f} s + simulate {t2 - t1:.1f} s = {total:.1f} s CPU "
        f"(target {LARGE_TARGET_S:g} s: {cpu_ok}); peak memory {peak_mb:,.0f} MB "
        f"(target < 1 GB: {mem_ok}); {result.n_decisions:,} decisions, "
        f"average JCT {result.avg_jct / 3600:,.0f} h"
    )


def clone_cost() -> None:
    """``Simulator.clone()`` at every decision of one episode: the median and the largest CPU
    time (issue 24's targets: under 1 ms on ``paper``, under 20 ms on a 500-job Online
    episode)."""
    from bacepipe_env.core.simulator import Simulator
    from bacepipe_env.policies.registry import make_policy

    for name, knobs, target_ms in (("paper", {}, 1.0), ("online", {}, 20.0)):
        scenario = load_scenario(name, seed=0, **knobs)
        policy = make_policy("sjf+finish-aware+srtf")
        sim = Simulator(scenario, policy.placement, admission="finish-aware", preemption="srtf")
        times = []
        while (cands := sim.next_decision()) is not None:
            start = time.process_time()
            sim.clone()
            times.append(1000 * (time.process_time() - start))
            sim.place(policy.ordering.choose(sim, cands))
        worst = max(times)
        verdict = "met" if worst < target_ms else "MISSED"
        print(
            f"clone on {name} ({len(scenario.jobs)} jobs, sjf+finish-aware+srtf), at each of "
            f"{len(times)} decisions: median {statistics.median(times):.3f} ms, max "
            f"{worst:.3f} ms  (target under {target_ms:g} ms: {verdict})"
        )


def main() -> None:
    """Run the benchmarks and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="time per paper measurement")
    parser.add_argument("--large-jobs", type=int, default=100_000, help="jobs of the large run")
    parser.add_argument("--large-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.large_only:  # the child process of the large run: its peak memory is its own
        large_online(args.large_jobs)
        return
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    print(f"Python {platform.python_version()} on {platform.machine()}, one core")
    _yardstick()
    _paper(args.seconds, "greedy", ignore_memory=True)
    for rule in ADMISSION_RULES:
        rate = _paper(args.seconds, rule)
        if rule == "greedy":  # the paper's world as shipped: issue 14's target
            print(f"  target 5,000 episodes/s: {'met' if rate >= PAPER_TARGET else 'MISSED'}")
    _paper(args.seconds, "greedy", gpu_failure_rate=2e-4)
    clone_cost()
    _large(None)
    _large(2.0)
    print(f"Pathfinder of the default policy: {_pathfinder()}")
    if compiled_pathfinder.enabled():
        _heavy(compiled=True)
    _heavy(compiled=False)  # the pure-Python reference
    _yardstick()
    sys.stdout.flush()
    cmd = [sys.executable, __file__, "--large-only", "--large-jobs", str(args.large_jobs)]
    subprocess.run(cmd, check=True)
    if compiled_pathfinder.enabled():  # the same run on the Python reference
        subprocess.run(cmd, check=True, env={**os.environ, "BACEPIPE_COMPILED": "0"})


if __name__ == "__main__":
    main()
