"""Hypothesis strategies shared by the test suites, as session-scoped fixtures.

A test module never imports another test module (nor this file): it asks for the strategy as a
fixture and draws from it with ``st.data()``::

    @given(data=st.data())
    def test_something(data, placement_cases):
        profile, cluster, path, gpus = data.draw(placement_cases)

Session scope keeps Hypothesis' function-scoped-fixture health check quiet: a strategy is a
value, not per-example state.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import strategies as st

from bacepipe_env.core import Cluster, Region
from bacepipe_env.core.job import Job, ModelSpec
from bacepipe_env.core.perf import JobProfile

_POSITIVE = {"allow_nan": False, "allow_infinity": False}


@st.composite
def _synthetic_args(draw: st.DrawFn, max_regions: int = 6, max_jobs: int = 12) -> dict[str, object]:
    """Keyword arguments of :func:`bacepipe_env.scenarios.synthetic_scenario`."""
    return {
        "n_regions": draw(st.integers(1, max_regions)),
        "n_jobs": draw(st.integers(1, max_jobs)),
        "seed": draw(st.integers(0, 2**16)),
        "arrival_rate_per_h": draw(st.one_of(st.none(), st.floats(0.5, 5.0, **_POSITIVE))),
    }


@st.composite
def _clusters(draw: st.DrawFn, max_regions: int = 5) -> Cluster:
    """A cluster of 1..max_regions regions with random capacities, prices, intra-region and
    (asymmetric) inter-region bandwidths and latencies."""
    k = draw(st.integers(1, max_regions))
    bw = st.floats(1e6, 1e11, **_POSITIVE)  # bytes/s
    regions = [
        Region(f"R{i}", draw(st.integers(1, 64)), draw(st.floats(0.0, 0.5, **_POSITIVE)), draw(bw))
        for i in range(k)
    ]
    links = np.array([[0.0 if u == v else draw(bw) for v in range(k)] for u in range(k)])
    latency = np.array(
        [
            [0.0 if u == v else draw(st.floats(0.0, 0.1, **_POSITIVE)) for v in range(k)]
            for u in range(k)
        ]
    )
    return Cluster.from_regions(regions, links, latency)


@st.composite
def _profiles(draw: st.DrawFn) -> JobProfile:
    """A job profile with random pipeline constants (A, the t_comp coefficients, M, I)."""
    job = Job(0, ModelSpec("random", 1e9, 8, 1024), "random", 1, 1)
    return JobProfile(
        job=job,
        n_micro=draw(st.integers(1, 64)),
        iterations=draw(st.integers(1, 10_000)),
        activation_bytes=draw(st.floats(1.0, 1e9, **_POSITIVE)),
        compute_coeff=draw(st.floats(1e-4, 100.0, **_POSITIVE)),
        stage_overhead=draw(st.floats(0.0, 1.0, **_POSITIVE)),
        k_star=1,
        min_bandwidth_kstar=1.0,
        single_gpu_exec=1.0,
        ideal_execution=1.0,
    )


@st.composite
def _placement_cases(
    draw: st.DrawFn,
) -> tuple[JobProfile, Cluster, tuple[int, ...], tuple[int, ...]]:
    """``(profile, cluster, path, gpus)``: a random placement (distinct regions in pipeline order,
    at least one GPU each, up to the region's capacity) of a random job on a random cluster."""
    cluster = draw(_clusters())
    k = cluster.n_regions
    path = tuple(draw(st.permutations(range(k)))[: draw(st.integers(1, k))])
    gpus = tuple(draw(st.integers(1, cluster.capacity[r])) for r in path)
    return draw(_profiles()), cluster, path, gpus


@pytest.fixture(scope="session")
def synthetic_args() -> st.SearchStrategy[dict[str, object]]:
    """Arguments of ``synthetic_scenario``: 1-6 regions, 1-12 jobs, arrivals at once or Poisson."""
    return _synthetic_args()


@pytest.fixture(scope="session")
def placement_cases() -> st.SearchStrategy[
    tuple[JobProfile, Cluster, tuple[int, ...], tuple[int, ...]]
]:
    """Random ``(profile, cluster, path, gpus)`` placements."""
    return _placement_cases()


def _tensorboard_plugin(logdir: object, plugin: str, route: str) -> object:
    """A werkzeug client of a TensorBoard plugin's route (``hparams``, ``custom_scalars`` or
    ``core``, whose ``/data/runs`` is the run list in the order the browser colours it),
    served from ``logdir`` the way ``tensorboard --logdir`` reads it (no server, no mocks)."""
    from tensorboard.backend.event_processing.data_provider import MultiplexerDataProvider
    from tensorboard.backend.event_processing.plugin_event_multiplexer import EventMultiplexer
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.core.core_plugin import CorePlugin
    from tensorboard.plugins.custom_scalar.custom_scalars_plugin import CustomScalarsPlugin
    from tensorboard.plugins.hparams.hparams_plugin import HParamsPlugin
    from werkzeug.test import Client
    from werkzeug.wrappers import Response

    mux = EventMultiplexer().AddRunsFromDirectory(str(logdir))
    mux.Reload()
    provider = MultiplexerDataProvider(mux, str(logdir))
    ctx = base_plugin.TBContext(logdir=str(logdir), data_provider=provider, multiplexer=mux)
    cls = {"hparams": HParamsPlugin, "custom_scalars": CustomScalarsPlugin, "core": CorePlugin}[
        plugin
    ]
    return Client(cls(ctx).get_plugin_apps()[route], Response)


@pytest.fixture(scope="session")
def tensorboard_plugin():  # type: ignore[no-untyped-def]
    """:func:`_tensorboard_plugin`, shared by the experiments' and the training's TensorBoard
    tests: ``tensorboard_plugin(logdir, "hparams", "/session_groups")``."""
    return _tensorboard_plugin


def _bacepipe_cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bacepipe_env", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="session")
def bacepipe_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run(*argv, cwd=folder)``: ``python -m bacepipe_env *argv`` in a fresh process from
    ``folder``, its exit status and both streams captured as text (120 s at most)."""
    return _bacepipe_cli


_BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="session")
def benchmark_module() -> Callable[[str], ModuleType]:
    """``load(name)``: the script ``benchmarks/<name>.py`` imported as a module (once per
    session), for the tests that check what the benchmark scripts compute."""
    loaded: dict[str, ModuleType] = {}

    def load(name: str) -> ModuleType:
        if name not in loaded:
            spec = importlib.util.spec_from_file_location(
                f"bacepipe_{name}", _BENCHMARKS / f"{name}.py"
            )
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module  # dataclasses and pickling look modules up here
            spec.loader.exec_module(module)
            loaded[name] = module
        return loaded[name]

    return load


def _useful_iterations(sim: object, record: object) -> float:
    """The iterations a job's attempts computed and kept: each attempt's duration less its
    wasted time, over its placement's Eq. (1) iteration time (constant speeds only)."""
    prof = sim.profile(record.job_id)  # type: ignore[attr-defined]
    kept = 0.0
    for a in record.attempts:  # type: ignore[attr-defined]
        t_iter = sim.execution_time(record.job_id, a.placement) / prof.iterations  # type: ignore[attr-defined]
        kept += (a.duration - a.wasted) / t_iter
    return kept


@pytest.fixture(scope="session")
def useful_iterations() -> Callable[[object, object], float]:
    """``useful_iterations(sim, record)``: what the fault and preemption invariants compare
    with the job's iterations (its work, done exactly once)."""
    return _useful_iterations
