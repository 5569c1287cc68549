"""Scenarios as data: the paper's ``fig1`` and ``paper`` scenarios, loaders and generators."""

from .generators import RandomScenarioGenerator, ScenarioSampler, synthetic_scenario
from .loader import (
    BUILTIN_SCENARIOS,
    build_scenario,
    list_scenarios,
    load_scenario,
    load_scenario_spec,
    scale_gpus,
)

__all__ = [
    "BUILTIN_SCENARIOS",
    "RandomScenarioGenerator",
    "ScenarioSampler",
    "build_scenario",
    "list_scenarios",
    "load_scenario",
    "load_scenario_spec",
    "scale_gpus",
    "synthetic_scenario",
]
