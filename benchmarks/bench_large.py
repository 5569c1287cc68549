"""One large simulation: a million jobs on 256 regions under BACE-Pipe (issue 25).

Builds ``synthetic_scenario(regions, jobs, seed, arrivals="philly", load=0.8)`` (a programmatic
scenario through the scenario loader: random regions in the paper's style, the paper's models
and datasets, arrivals in the Philly trace's pattern at the rate that offers 80% of the GPUs),
simulates it with the default policy (``bace_pipe()``) and prints, as figures (no assertions):
the job and region counts, the CPU time to build and to simulate, the process's CPU time
(``resource.getrusage``: user + sys), the wall time, the peak RSS (``ru_maxrss``) and the RSS
before the scenario was built, the peak memory per job, and
:func:`~bacepipe_env.core.limits.memory_estimate` for comparison.

Before the run the process loads what a large run loads anyway (numba's compiled Pathfinder,
when installed) on a small scenario, so that "RSS before" holds the interpreter and the
libraries and "peak - before" is the workload's own memory.

Run: ``make bench-large`` (1,000,000 jobs on 256 regions: minutes, about 2.5 GB) or
``python benchmarks/bench_large.py --jobs 2000 --regions 16`` (a second).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

from bacepipe_env import bace_pipe, synthetic_scenario
from bacepipe_env.core.limits import memory_estimate
from bacepipe_env.errors import BacepipeError
from bacepipe_env.scheduling import compiled as compiled_pathfinder


def _cpu() -> float:
    """The process's CPU seconds so far, user + sys."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rss_mb() -> float:
    """The process's peak RSS in MB (``ru_maxrss`` is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1e6 if sys.platform == "darwin" else peak * 1024 / 1e6


def main(argv: list[str] | None = None) -> int:
    """Build, simulate and print the figures; 0 on success."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000, help="jobs (default 1,000,000)")
    parser.add_argument("--regions", type=int, default=256, help="regions (default 256)")
    parser.add_argument("--load", type=float, default=0.8, help="offered load (default 0.8)")
    parser.add_argument("--seed", type=int, default=0, help="the scenario's seed (default 0)")
    args = parser.parse_args(argv)

    wall0, cpu0 = time.perf_counter(), _cpu()
    if compiled_pathfinder.enabled():  # load numba and the kernel before measuring
        bace_pipe(compiled=True).simulate(synthetic_scenario(16, 20, seed=1))
    before = _rss_mb()
    cpu1 = _cpu()
    try:  # a workload past a limit (the horizon, the memory) is one line, as everywhere
        scenario = synthetic_scenario(
            args.regions, args.jobs, seed=args.seed, arrivals="philly", load=args.load
        )
        cpu2 = _cpu()
        result = bace_pipe().simulate(scenario)
    except BacepipeError as err:
        print(f"bench-large: error: {err}", file=sys.stderr)
        return 2
    cpu3 = _cpu()
    wall = time.perf_counter() - wall0
    peak = _rss_mb()
    n, k = len(scenario.jobs), scenario.cluster.n_regions
    print(
        f"bench-large: {n:,} jobs on {k} regions ({scenario.cluster.total_gpus:,} GPUs), "
        f"Philly arrivals at load {args.load:g}, seed {args.seed}, policy {result.policy}"
    )
    print(f"  build            {cpu2 - cpu1:10.1f} s CPU")
    print(f"  simulate         {cpu3 - cpu2:10.1f} s CPU ({result.n_decisions:,} decisions)")
    print(f"  CPU (user+sys)   {cpu3 - cpu0:10.1f} s, the warm-up's {cpu1 - cpu0:.1f} s included")
    print(f"  wall             {wall:10.1f} s")
    print(f"  peak RSS         {peak:10.0f} MB")
    print(f"  RSS before build {before:10.0f} MB")
    print(f"  peak - before    {(peak - before) * 1e6 / n:10.0f} bytes per job")
    print(f"  memory_estimate  {memory_estimate(n, k) / 1e6:10.0f} MB")
    print(
        f"  makespan         {result.makespan / 3600:10,.0f} h, average JCT "
        f"{result.avg_jct / 3600:,.1f} h"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
