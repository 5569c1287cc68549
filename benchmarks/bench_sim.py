"""Simulator throughput: episodes and scheduling decisions per second.

Prints, for BACE-Pipe on one core:
- the ``paper`` scenario (6 regions, 8 jobs): episodes/s and decisions/s, under each admission
  rule (GPU memory checked), under the paper's literal semantics (memory ignored, greedy) and
  with GPU failures at 2e-4 per GPU-hour (SPEC 11: attempts, checkpoints and restarts);
- a synthetic 32-region, 1,000-job scenario, all jobs at t = 0 and with Poisson arrivals:
  wall time to load and profile it, and to simulate it;
- issue 14's heavy load, 64 regions at 4 jobs/h with 1,000 and 10,000 jobs: CPU time and
  the growth exponent in N.

Run: ``make bench`` or ``python benchmarks/bench_sim.py [--seconds S]``.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time

from bacepipe_env import bace_pipe, load_scenario, synthetic_scenario
from bacepipe_env.core.admission import ADMISSION_RULES


def _paper(
    seconds: float, admission: str, ignore_memory: bool = False, gpu_failure_rate: float = 0.0
) -> None:
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
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        result = policy.simulate(scenario)
        n_eps += 1
        n_dec += result.n_decisions
    world = "memory ignored" if ignore_memory else "memory checked"
    if gpu_failure_rate > 0:
        world += f", GPU failures at {gpu_failure_rate:g}/GPU-h"
    print(
        f"paper (6 regions, 8 jobs), BACE-Pipe, {admission} admission, {world}: "
        f"{n_eps / elapsed:,.0f} episodes/s, {n_dec / elapsed:,.0f} decisions/s "
        f"({n_eps} episodes in {elapsed:.1f} s)"
    )


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


def _heavy() -> None:
    """Issue 14's heavy load: 64 regions, Poisson 4 jobs/h (the queue grows into the
    thousands), 1,000 and 10,000 jobs, process CPU time of the simulation, and the growth
    exponent between the two."""
    cpu = {}
    for n in (1_000, 10_000):
        scenario = synthetic_scenario(64, n, seed=0, arrival_rate_per_h=4.0)
        _ = scenario.profiles
        t0 = time.process_time()
        bace_pipe().simulate(scenario)
        cpu[n] = time.process_time() - t0
        print(f"synthetic 64 regions x {n:,} jobs (Poisson 4/h): simulate {cpu[n]:.2f} s CPU")
    growth = math.log(cpu[10_000] / cpu[1_000]) / math.log(10.0)
    print(f"  growth from 1,000 to 10,000 jobs: N^{growth:.2f}")


def main() -> None:
    """Run the benchmarks and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="time per paper measurement")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    print(f"Python {platform.python_version()} on {platform.machine()}, one core")
    _paper(args.seconds, "greedy", ignore_memory=True)
    for rule in ADMISSION_RULES:
        _paper(args.seconds, rule)
    _paper(args.seconds, "greedy", gpu_failure_rate=2e-4)
    _large(None)
    _large(2.0)
    _heavy()


if __name__ == "__main__":
    main()
