"""Helpers the tests/experiments modules share (not a test module)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios.loader import load_scenario


def read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file written by an experiment."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def direct(policy: str, seed: int, **knobs: Any) -> dict[str, float]:
    """The run's totals computed straight from the simulator, in hours and dollars."""
    result = make_policy(policy, seed=seed).simulate(load_scenario("paper", seed=seed, **knobs))
    return {
        "avg_jct_h": result.avg_jct / 3600.0,
        "total_cost_usd": result.total_cost,
        "makespan_h": result.makespan / 3600.0,
        "gpu_utilization": result.gpu_utilization,
    }
