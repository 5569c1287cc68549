"""bacepipe-env: an event-driven simulator and Gymnasium environment for scheduling
pipeline-parallel LLM training across geo-distributed GPU regions (BACE-Pipe,
arXiv 2605.25375).

The core (``bacepipe_env.core``, ``bacepipe_env.scheduling``, ``bacepipe_env.policies``,
``bacepipe_env.scenarios``, ``bacepipe_env.experiments``) imports neither gymnasium nor
torch; ``bacepipe_env.envs`` is the Gymnasium adapter. Importing the package registers the
environment ids (``bacepipe_env/GeoPipe-v2`` and variants) with Gymnasium: at once when
gymnasium is already imported, otherwise right after gymnasium's own import finishes, so that
importing the package never loads gymnasium itself.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

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
    World,
)
from .errors import BacepipeError, PlacementError, ScenarioError, SimulationError, ValidationError
from .policies import Policy, bace_pipe
from .scenarios import list_scenarios, load_scenario, synthetic_scenario

#: The one source of the version; pyproject.toml reads it (``[tool.setuptools.dynamic]``).
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
    "World",
    "__version__",
    "bace_pipe",
    "list_scenarios",
    "load_scenario",
    "register_envs",
    "synthetic_scenario",
]


def register_envs() -> None:
    """Register the environment ids with Gymnasium (idempotent; imports gymnasium)."""
    from .envs.registration import register_envs as register

    register()


class _RegisterLoader(Loader):
    """Gymnasium's own loader, followed by :func:`register_envs` once the module has run."""

    def __init__(self, loader: Loader) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        # Hand the module its real loader back: nothing later should see this wrapper.
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        try:
            register_envs()
        except Exception as err:  # importing gymnasium must not fail because of us
            warnings.warn(
                f"bacepipe_env: could not register the environment ids: {err}",
                RuntimeWarning,
                stacklevel=2,
            )


class _GymnasiumHook(MetaPathFinder):
    """A one-shot post-import hook: wraps gymnasium's loader the first time it is imported.

    Gymnasium 1.x has no plugin entry points, so this is how ``import bacepipe_env`` followed
    later by ``import gymnasium`` still finds the ids registered."""

    def __init__(self) -> None:
        self._looking = False

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname != "gymnasium" or self._looking:
            return None
        self._looking = True  # the lookup below walks sys.meta_path again, this hook included
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._looking = False
        if spec is None or spec.loader is None:
            return None  # not installed: the import fails as it would without the hook
        # Returning a spec ends the import system's walk over sys.meta_path, so removing the
        # hook from that list in place here cannot make it skip another finder.
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _GymnasiumHook)]
        spec.loader = _RegisterLoader(spec.loader)
        return spec


def _register_with_gymnasium() -> None:
    """Register now if gymnasium is loaded, otherwise as soon as it is (at most one hook)."""
    if sys.modules.get("gymnasium") is not None:
        register_envs()
    elif not any(isinstance(f, _GymnasiumHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _GymnasiumHook())


_register_with_gymnasium()
