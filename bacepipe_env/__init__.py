"""bacepipe-env: an event-driven simulator and Gymnasium environment for scheduling
pipeline-parallel LLM training across geo-distributed GPU regions (BACE-Pipe,
arXiv 2605.25375).

The core (``bacepipe_env.core``, ``bacepipe_env.scheduling``, ``bacepipe_env.policies``,
``bacepipe_env.scenarios``, ``bacepipe_env.experiments``) imports neither gymnasium nor
torch; ``bacepipe_env.envs`` is the Gymnasium adapter. Importing the package registers the
environment ids (``bacepipe_env/GeoPipe-v1`` and variants) with Gymnasium.
"""

from .core import (
    Cluster,
    Job,
    JobRecord,
    ModelSpec,
    Placement,
    Region,
    RunResult,
    Scenario,
    Simulator,
    TrainingConstants,
)
from .envs.registration import register_envs
from .errors import BacepipeError, PlacementError, ScenarioError, SimulationError, ValidationError
from .policies import Policy, bace_pipe
from .scenarios import list_scenarios, load_scenario, synthetic_scenario

register_envs()

__version__ = "0.2.0"

__all__ = [
    "BacepipeError",
    "Cluster",
    "Job",
    "JobRecord",
    "ModelSpec",
    "Placement",
    "PlacementError",
    "Policy",
    "Region",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "SimulationError",
    "Simulator",
    "TrainingConstants",
    "ValidationError",
    "__version__",
    "bace_pipe",
    "list_scenarios",
    "load_scenario",
    "synthetic_scenario",
]
