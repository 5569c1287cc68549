"""Run many (policy, scenario, seed) simulations, optionally across worker processes."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from ..core.metrics import ordered
from ..core.scenario import Scenario
from ..core.validate import require_int
from ..errors import BacepipeError, SimulationError, ValidationError
from ..learned import is_learned, layout_kwargs, load_learned
from ..policies.registry import make_policy
from ..scenarios.generators import RandomScenarioGenerator
from ..scenarios.loader import load_scenario, load_scenario_spec
from ..signals import Terminated, descendants, reclaim_signals, stop_pids, worker_pool
from .progress import Progress
from .stats import Estimate, estimate

__all__ = [
    "RANDOM",
    "RayBackend",
    "RunGrid",
    "RunSpec",
    "RunSummary",
    "check_workers",
    "default_workers",
    "expand",
    "is_learned",  # re-exported from bacepipe_env.learned
    "load_learned",  # re-exported from bacepipe_env.learned
    "run_all",
    "run_one",
    "run_or_fail",
    "spec_scenario",
    "with_constants",
]

#: What ``pip`` installs to run the grid on Ray.
RAY_HINT = "pip install 'bacepipe-env[ray]'"
#: A RunSpec scenario that names the random generator (GeoPipe-Random-v2's world): seed ``s``
#: is ``RandomScenarioGenerator(**knobs)(numpy.random.default_rng(s))``.
RANDOM = "random"


@dataclass(frozen=True)
class RayBackend:
    """Run an experiment's (policy, seed, knob) grid as Ray tasks instead of local worker
    processes: on the cluster at ``address`` (``"auto"``, ``"ray://host:10001"``, ...), or on a
    local Ray instance of ``num_cpus`` CPUs when ``address`` is None. Pass it where the
    experiments take ``workers``; the outputs are the local backend's, bit for bit (every run
    is the same deterministic :func:`run_one`, gathered back in grid order)."""

    address: str | None = None
    num_cpus: int | None = None


def check_workers(workers: Any) -> None:
    """A ValidationError unless ``workers`` is a count >= 1 or a :class:`RayBackend`."""
    if not isinstance(workers, RayBackend):
        require_int("workers", workers, minimum=1, exc=ValidationError)


@dataclass(frozen=True)
class RunSpec:
    """One simulation to run: a registered policy on a scenario with sweep knobs and a seed."""

    policy: str
    scenario: str
    seed: int
    knobs: tuple[tuple[str, Any], ...] = ()  # (name, value) pairs for load_scenario
    tag: dict[str, Any] = field(default_factory=dict, compare=False)  # carried to the result
    # (name, value) pairs that replace entries of the scenario file's "constants" section
    # (``bytes_per_param`` 18, say): a variant of the file rather than a world setting
    constants: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class RunSummary:
    """The totals of one run, in the units tables show (hours, dollars, kg CO2e).

    ``total_cost_usd`` is the electricity (Eq. 8); ``egress_usd`` the cross-region traffic,
    0 unless the scenario's tariff charges it (semantics §10). ``faults`` says whether the
    scenario configured any fault (semantics §11); ``n_restarts``, ``wasted_gpu_hours`` and
    ``wasted_cost_usd`` (part of ``total_cost_usd``) count what they and preemptions cost.
    ``preemption`` names the run's preemption rule and ``n_preemptions`` counts its
    preemptions (semantics §3c). ``deadlines`` says whether some job had a deadline;
    ``miss_rate`` and ``total_tardiness_h`` are then its misses and lateness (semantics §15)."""

    spec: RunSpec
    avg_jct_h: float
    total_cost_usd: float
    makespan_h: float
    gpu_utilization: float
    carbon_kg: float = 0.0
    egress_usd: float = 0.0
    jct_p50_h: float = 0.0
    jct_p95_h: float = 0.0
    jct_p99_h: float = 0.0
    mean_slowdown: float = 1.0
    n_jobs: int = 0
    faults: bool = False
    n_restarts: int = 0
    wasted_gpu_hours: float = 0.0
    wasted_cost_usd: float = 0.0
    preemption: str = "none"
    n_preemptions: int = 0
    miss_rate: float = 0.0
    total_tardiness_h: float = 0.0
    deadlines: bool = False  # some job had a deadline (semantics §15)
    error: str = ""  # why the run could not finish (run_all(keep_going=True)); metrics NaN

    @classmethod
    def failed(cls, spec: RunSpec, error: str) -> RunSummary:
        """A run that could not finish: every metric NaN, ``error`` saying why."""
        nan: dict[str, Any] = dict.fromkeys(_NAN, math.nan)
        return cls(spec, **nan, error=error)

    @property
    def interrupted(self) -> bool:
        """Whether attempts could end early: faults configured or a preemption rule."""
        return self.faults or self.preemption != "none"

    def row(self) -> dict[str, Any]:
        """A flat dict for CSV/JSON: the run, then the figures of
        :data:`~bacepipe_env.core.metrics.METRICS` that have a ``key``; those shown under
        faults (the restarts, the wasted GPU-hours and cost) only when the scenario configured
        faults or the run a preemption rule, those shown under preemption (after the rule)
        only under one."""
        out: dict[str, Any] = {
            "policy": self.spec.policy,
            "scenario": self.spec.scenario,
            "seed": self.spec.seed,
            **dict(self.spec.knobs),
            **dict(self.spec.constants),
            **self.spec.tag,
        }
        for metric in ordered("row", self.shows()):
            if metric.setting:
                out[metric.setting] = getattr(self, metric.setting)
            out[metric.key] = getattr(self, metric.key)
        return out

    def shows(self) -> set[str]:
        """The :data:`~bacepipe_env.core.metrics.SHOW` conditions this run's rows show:
        always and egress (its charge, 0 when not charged), faults when attempts could end
        early, preemption under a preemption rule, deadlines when some job had one."""
        out = {"always", "egress"}
        if self.interrupted:
            out.add("faults")
        if self.preemption != "none":
            out.add("preemption")
        if self.deadlines:
            out.add("deadlines")
        return out


#: RunSummary's fields that are not metrics.
_OWN = ("spec", "faults", "preemption", "deadlines", "error")
assert [f.name for f in fields(RunSummary) if f.name not in _OWN] == [
    m.key for m in ordered("row")
], "RunSummary's metric fields != METRICS' keys (in order)"
#: A failed run's NaNs: the real-valued figures every run row shows (its counts and the
#: figures shown under faults or preemption keep their defaults).
_ALWAYS = {m.key for m in ordered("row", {"always", "egress"})}
_NAN = [f.name for f in fields(RunSummary) if f.name in _ALWAYS and f.type == "float"]


class RunGrid:
    """Runs keyed by ``(x, policy, seed)``, x a swept value (an offered load, a failure rate),
    and the per-seed statistics of one cell. Subclasses are frozen dataclasses with ``seeds``
    and ``runs`` fields."""

    seeds: tuple[int, ...]
    runs: dict[tuple[float, str, int], RunSummary]

    def values(self, x: float, policy: str, metric: Callable[[RunSummary], float]) -> list[float]:
        """``metric`` of the policy's run on every seed at ``x``, in seed order."""
        return [metric(self.runs[(x, policy, s)]) for s in self.seeds]

    def mean(self, x: float, policy: str, metric: Callable[[RunSummary], float]) -> float:
        """The mean of ``metric`` over the seeds."""
        return math.fsum(self.values(x, policy, metric)) / len(self.seeds)

    def est(self, x: float, policy: str, metric: Callable[[RunSummary], float]) -> Estimate:
        """Mean ± 95% CI of ``metric`` over the seeds."""
        return estimate(self.values(x, policy, metric))


def _run_learned(spec: RunSpec, scenario: Any) -> Any:
    from ..envs.agents import run_episode
    from ..envs.geopipe import GeoPipeEnv

    agent = load_learned(spec.policy)
    env = GeoPipeEnv(scenario, **layout_kwargs(agent.env_kwargs))
    agent.check_env(env)
    run_episode(env, agent, spec.seed)
    assert env.sim is not None
    return env.sim.result(spec.policy)


def spec_scenario(spec: RunSpec) -> Scenario:
    """The scenario of ``spec``: the named scenario or file at its seed and knobs, or, for
    :data:`RANDOM`, the random generator's episode for its seed (its knobs the generator's)."""
    if spec.scenario == RANDOM:
        import numpy as np

        return RandomScenarioGenerator(**dict(spec.knobs))(np.random.default_rng(spec.seed))
    source = with_constants(spec.scenario, spec.constants)
    return load_scenario(source, seed=spec.seed, **dict(spec.knobs))


def with_constants(scenario: str, constants: Iterable[tuple[str, float]]) -> str | dict[str, Any]:
    """The named scenario or file, or, with ``constants``, its parsed mapping with those
    entries of its ``constants`` section replaced (the loader validates them as the file's)."""
    override = dict(constants)
    if not override:
        return scenario
    spec = load_scenario_spec(scenario)
    return {**spec, "constants": {**spec.get("constants", {}), **override}}


def run_one(spec: RunSpec) -> RunSummary:
    """Load the scenario with the spec's knobs and seed, simulate the policy, summarise.

    A learned policy (``algo:path``) plays the scenario through :class:`GeoPipeEnv` with the
    observation layout and placement it was trained with."""
    scenario = spec_scenario(spec)
    if is_learned(spec.policy):
        result = _run_learned(spec, scenario)
    else:
        result = make_policy(spec.policy, seed=spec.seed).simulate(scenario)
    return RunSummary(
        spec,
        **{m.key: m.shown(m.value(result)) for m in ordered("row")},
        faults=scenario.faults is not None and scenario.faults.active,
        preemption=result.preemption,
        deadlines=result.deadlines,
    )


def run_or_fail(spec: RunSpec) -> RunSummary:
    """:func:`run_one`, or :meth:`RunSummary.failed` when the simulation cannot finish (a job
    that no placement of the policy fits, say)."""
    try:
        return run_one(spec)
    except SimulationError as err:
        return RunSummary.failed(spec, str(err))


def default_workers() -> int:
    """Worker processes to use by default: the cores this process may run on, at most 2."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(2, cores))


def run_all(
    specs: Sequence[RunSpec],
    *,
    workers: int | RayBackend = 1,
    label: str = "",
    progress: bool | None = None,
    keep_going: bool = False,
) -> list[RunSummary]:
    """Run every spec; results come back in the order of ``specs`` whatever ``workers`` is.
    With ``keep_going`` a run whose simulation cannot finish is a :meth:`RunSummary.failed`
    record instead of an error (:func:`run_or_fail`).

    With ``workers > 1`` runs are spread over that many processes in chunks (not when a learned
    policy is among them: those run here); with a :class:`RayBackend`, over Ray tasks.
    ``progress`` forces the progress bar on or off (default: on when stderr is a terminal).
    """
    bar = Progress(len(specs), "runs", label, force=progress is True)
    if progress is False:
        bar.quiet()
    results: list[RunSummary] = []
    run = run_or_fail if keep_going else run_one
    if isinstance(workers, RayBackend):
        with bar:
            return _run_ray(specs, workers, bar, keep_going)
    with bar:
        # A learned policy means torch: its thread pools do not survive a fork, so those
        # runs stay in this process (inference is cheap next to the simulation).
        if workers <= 1 or len(specs) < 2 or any(is_learned(s.policy) for s in specs):
            for spec in specs:
                results.append(run(spec))
                bar.update()
            return results
        chunk = max(1, len(specs) // (workers * 8))
        with worker_pool(workers) as pool:
            for summary in pool.map(run, specs, chunksize=chunk):
                results.append(summary)
                bar.update()
    return results


def _run_chunk(specs: Sequence[RunSpec], keep_going: bool = False) -> list[RunSummary]:
    """One Ray task: a few runs, so that a task's overhead is paid once per chunk."""
    run = run_or_fail if keep_going else run_one
    return [run(spec) for spec in specs]


def _probe(address: str | None, timeout_s: float = 5.0) -> None:
    """A one-line error if ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``) does not accept a
    connection within ``timeout_s``; Ray itself would retry for minutes."""
    if address is None or address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ValidationError("--address", address, "must be 'auto', HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as err:
        raise BacepipeError(f"cannot reach Ray at {address}: {err.strerror or err}") from None


def _run_ray(
    specs: Sequence[RunSpec], backend: RayBackend, bar: Progress, keep_going: bool = False
) -> list[RunSummary]:
    """The grid as Ray tasks of a few runs each, gathered back in the order of ``specs``."""
    # Ray's C++ failure handler would print a stack trace on SIGTERM (read at import time)
    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
    try:
        import ray
    except ModuleNotFoundError:
        raise BacepipeError(f"the ray backend needs Ray: {RAY_HINT}") from None
    started = not ray.is_initialized()
    waiting: list[Any] = []
    leftovers: set[int] = set()
    try:
        if started:
            _init_ray(ray, backend)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        size = max(1, len(specs) // (cpus * 8))  # about 8 tasks per CPU, as the local pool
        chunks = [list(specs[i : i + size]) for i in range(0, len(specs), size)]
        task = ray.remote(num_cpus=1)(_run_chunk)
        refs = [task.remote(chunk, keep_going) for chunk in chunks]
        sizes = {ref: len(chunk) for ref, chunk in zip(refs, chunks)}
        waiting = list(refs)
        while waiting:
            # a short timeout: signal handlers run between the calls, not after a whole task
            ready, waiting = ray.wait(waiting, num_returns=1, timeout=0.1)
            for ref in ready:
                bar.update(sizes[ref])
        return [summary for ref in refs for summary in ray.get(ref)]
    except BaseException:  # Ctrl-C, SIGTERM, an error: stop the tasks still running
        if started:  # the local instance's processes, which a Ctrl-C reached too
            leftovers = descendants()
        for ref in waiting:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        raise
    finally:
        if started:
            ray.shutdown()
            # what outlives the shutdown (Ray's agents, after a Ctrl-C) was asked to stop once
            stop_pids(leftovers, grace_s=0.0)


def _init_ray(ray: Any, backend: RayBackend) -> None:
    """Start a local Ray instance or connect to ``backend.address``; one line if it fails."""
    where = "a local Ray instance" if backend.address is None else backend.address
    _probe(backend.address)
    try:
        ray.init(
            address=backend.address,
            num_cpus=backend.num_cpus if backend.address is None else None,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
            configure_logging=False,
        )
    except (ConnectionError, RuntimeError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise BacepipeError(f"cannot start or reach {where}: {first}") from None
    except SystemExit as stop:  # ray.init's own SIGTERM handler exits with the signal
        if stop.code == signal.SIGTERM:
            raise Terminated(signal.SIGTERM) from None
        raise
    reclaim_signals()  # Ray's driver has put in its own SIGTERM handler


def expand(
    policies: Iterable[str],
    scenario: str,
    seeds: Iterable[int],
    knobs: dict[str, Any] | None = None,
    tag: dict[str, Any] | None = None,
    constants: Iterable[tuple[str, float]] = (),
) -> list[RunSpec]:
    """Every (policy, seed) pair as a RunSpec, policies outermost."""
    kn = tuple(sorted((knobs or {}).items()))
    cs = tuple(constants)
    return [RunSpec(p, scenario, s, kn, dict(tag or {}), cs) for p in policies for s in seeds]
