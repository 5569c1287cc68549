"""Synthetic scenarios: random regions and links around the paper's workload.

Used by the benchmark (1,000 jobs on 32 regions) and by the property-based tests; the
randomised Gym variant builds on the same generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.scenario import Scenario
from ..core.validate import require_float, require_int
from .loader import build_scenario, load_scenario_spec

__all__ = ["synthetic_scenario"]

_GPU_CHOICES = (16, 32, 64, 128)  # the paper's per-region capacities (Section IV-A)


def synthetic_scenario(
    n_regions: int,
    n_jobs: int,
    *,
    seed: int = 0,
    arrival_rate_per_h: float | None = None,
    gpu_choices: tuple[int, ...] = _GPU_CHOICES,
    price_range: tuple[float, float] = (0.08, 0.35),
    bandwidth_range_gbps: tuple[float, float] = (25.0, 100.0),
) -> Scenario:
    """A random cluster in the paper's style with the paper's models and datasets.

    Region capacities are drawn from ``gpu_choices``, prices uniformly from ``price_range``
    ($/kWh; the paper cites $0.08-0.35), per-region bandwidth uniformly from
    ``bandwidth_range_gbps`` (AWS EC2 G4's 25-100 Gbps) with ``B[i, j] = (B_i + B_j) / 2``.
    Jobs cycle the Table III models on random datasets; all arrive at t = 0 unless
    ``arrival_rate_per_h`` gives a Poisson arrival rate.
    """
    n_regions = require_int("n_regions", n_regions, minimum=1)
    n_jobs = require_int("n_jobs", n_jobs, minimum=1)
    seed = require_int("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    lo_p = require_float("price_range[0]", price_range[0], minimum=0.0)
    hi_p = require_float("price_range[1]", price_range[1], minimum=lo_p)
    lo_b = require_float("bandwidth_range_gbps[0]", bandwidth_range_gbps[0], positive=True)
    hi_b = require_float("bandwidth_range_gbps[1]", bandwidth_range_gbps[1], minimum=lo_b)
    gpus = rng.choice(np.asarray(gpu_choices, dtype=int), size=n_regions)
    prices = np.round(rng.uniform(lo_p, hi_p, size=n_regions), 3)
    bws = np.round(rng.uniform(lo_b, hi_b, size=n_regions), 1)
    paper = load_scenario_spec("paper")
    workload: dict[str, Any] = {"n_jobs": n_jobs, "models": "cycle", "datasets": "random"}
    if arrival_rate_per_h is not None:
        workload["arrival_rate_per_h"] = arrival_rate_per_h
    spec = {
        "name": f"synthetic-{n_regions}r-{n_jobs}j",
        "description": f"{n_regions} random regions, {n_jobs} jobs (seed {seed})",
        "constants": paper["constants"],
        "regions": [
            {
                "name": f"R{i}",
                "gpus": int(gpus[i]),
                "price_usd_per_kwh": float(prices[i]),
                "bandwidth_gbps": float(bws[i]),
            }
            for i in range(n_regions)
        ],
        "links": {"rule": "mean"},
        "models": paper["models"],
        "datasets": paper["datasets"],
        "workload": workload,
    }
    return build_scenario(spec, seed=seed)
