"""Helpers the tests/experiments modules share (not a test module)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios.loader import load_scenario

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


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


def section(md: str, heading: str) -> str:
    """The text from ``heading`` to the next heading of the same or a higher level."""
    level = heading.split(" ", 1)[0]
    lines = md.splitlines()
    start = lines.index(heading)
    end = next(
        (
            i
            for i in range(start + 1, len(lines))
            if lines[i].startswith("#") and len(lines[i].split(" ", 1)[0]) <= len(level)
        ),
        len(lines),
    )
    return "\n".join(lines[start:end])


def table(text: str) -> list[list[str]]:
    """The body rows of the first markdown table in ``text``, as stripped cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    rows = lines[start:end]
    return [[c.strip() for c in r.strip("|").split("|")] for r in rows[2:]]


def header(text: str) -> list[str]:
    """The header cells of the first markdown table in ``text``."""
    line = next(line for line in text.splitlines() if line.startswith("|"))
    return [c.strip() for c in line.strip("|").split("|")]
