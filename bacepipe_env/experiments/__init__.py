"""Experiments of the paper's Section IV: compare (Fig. 4), sweeps (Figs. 5-7), ablation
(Fig. 8), with statistics over seeds, CSV/JSON/PNG output and TensorBoard scalars; and
``reproduce``, every claim of Section IV under five simulator semantics and three memory
variants as one report."""

from .experiments import SWEEPS, ExperimentOutcome, reference_policy, run_compare, run_sweep
from .reproduce import CLAIMS, SEMANTICS, ReproduceOutcome, run_reproduce
from .runner import RayBackend, RunSpec, RunSummary, run_all
from .stats import Estimate, estimate
from .summary import PolicyStats, format_table, summarise
from .tensorboard import ScalarWriter

__all__ = [
    "CLAIMS",
    "SEMANTICS",
    "SWEEPS",
    "Estimate",
    "ExperimentOutcome",
    "PolicyStats",
    "RayBackend",
    "ReproduceOutcome",
    "RunSpec",
    "RunSummary",
    "ScalarWriter",
    "estimate",
    "format_table",
    "reference_policy",
    "run_all",
    "run_compare",
    "run_reproduce",
    "run_sweep",
    "summarise",
]
