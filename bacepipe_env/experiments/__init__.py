"""Experiments of the paper's Section IV: compare (Fig. 4), sweeps (Figs. 5-7), ablation
(Fig. 8), with statistics over seeds, CSV/JSON/PNG output and TensorBoard scalars."""

from .experiments import SWEEPS, ExperimentOutcome, reference_policy, run_compare, run_sweep
from .runner import RunSpec, RunSummary, run_all
from .stats import Estimate, estimate
from .summary import PolicyStats, format_table, summarise
from .tensorboard import ScalarWriter

__all__ = [
    "SWEEPS",
    "Estimate",
    "ExperimentOutcome",
    "PolicyStats",
    "RunSpec",
    "RunSummary",
    "ScalarWriter",
    "estimate",
    "format_table",
    "reference_policy",
    "run_all",
    "run_compare",
    "run_sweep",
    "summarise",
]
