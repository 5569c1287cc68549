"""Scenario generators: synthetic clusters around the paper's workload, a sampler over a
scenario file, and the randomised generator behind ``GeoPipe-Random-v2``.

A generator is any callable ``(numpy.random.Generator) -> Scenario`` with ``max_regions`` and
``max_jobs`` attributes; the Gymnasium environment calls it at every reset with its own
``np_random``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.cluster import Cluster, Region
from ..core.job import Job
from ..core.limits import HORIZON_H, HORIZON_S, check_limit, check_memory
from ..core.memory import memory_floor
from ..core.perf import ProfileCache, profile_job
from ..core.scenario import Scenario
from ..core.units import SECONDS_PER_HOUR, gbps_to_bytes_per_s
from ..core.validate import require_float, require_int
from ..core.world import World
from ..errors import ScenarioError
from .arrivals import check_arrival_span
from .loader import (
    ScenarioTemplate,
    build_scenario,
    check_knobs,
    compile_scenario,
    load_scenario_spec,
)

__all__ = ["RandomScenarioGenerator", "ScenarioSampler", "synthetic_scenario"]

_GPU_CHOICES = (16, 32, 64, 128)  # the paper's per-region capacities (Section IV-A)


def synthetic_scenario(
    n_regions: int,
    n_jobs: int,
    *,
    seed: int = 0,
    arrival_rate_per_h: float | None = None,
    arrivals: str | None = None,
    load: float | None = None,
    gpu_choices: tuple[int, ...] = _GPU_CHOICES,
    price_range: tuple[float, float] = (0.08, 0.35),
    bandwidth_range_gbps: tuple[float, float] = (25.0, 100.0),
) -> Scenario:
    """A random cluster in the paper's style with the paper's models and datasets.

    Region capacities are drawn from ``gpu_choices``, prices uniformly from ``price_range``
    ($/kWh; the paper cites $0.08-0.35), per-region bandwidth uniformly from
    ``bandwidth_range_gbps`` (AWS EC2 G4's 25-100 Gbps) with ``B[i, j] = (B_i + B_j) / 2``.
    Jobs cycle the Table III models on random datasets; all arrive at t = 0 unless
    ``arrival_rate_per_h`` gives a Poisson arrival rate, or ``arrivals`` names a workload
    arrival process (``"philly"``: the Philly trace's inter-arrival gaps, semantics §12) at
    ``arrival_rate_per_h`` or at the offered ``load`` (the rate that keeps that fraction of the
    GPUs busy).
    """
    n_regions = require_int("n_regions", n_regions, minimum=1)
    n_jobs = check_limit("workload.n_jobs", n_jobs, field="n_jobs")
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
    if arrivals is not None:
        workload["arrivals"] = arrivals
    if arrival_rate_per_h is not None:
        workload["arrival_rate_per_h"] = arrival_rate_per_h
    if load is not None:
        workload["load"] = load
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


class ScenarioSampler:
    """A scenario generator over one scenario file: each call draws a seed from the caller's
    generator and materialises the scenario with it and the fixed sweep knobs.

    For ``paper`` the seed picks each job's dataset (for ``online`` also the arrivals and the
    start hour). The file is parsed and validated once; each call only draws the jobs, and job
    profiles are shared across calls. ``world`` and the knobs are :func:`compile_scenario`'s:
    a :class:`~bacepipe_env.core.world.World` replaces the file's world settings, and each
    knob (a :data:`~bacepipe_env.core.world.KNOBS` name) sets one.
    """

    def __init__(
        self, source: str | os.PathLike[str] = "paper", *, world: World | None = None, **knobs: Any
    ) -> None:
        self.source = source
        if world is not None and not isinstance(world, World):
            raise ScenarioError("world", world, "must be a World (bacepipe_env.World)")
        spec = load_scenario_spec(source)
        self.template = compile_scenario(spec, world=world, **check_knobs(knobs))
        self._profiles = ProfileCache()
        first = self.load(0)
        self.max_regions = first.cluster.n_regions
        # a workload's budget, not seed 0's draw: under a horizon, other seeds may draw more
        workload = self.template.workload
        self.max_jobs = len(first.jobs) if workload is None else workload.n_jobs

    def load(self, seed: int) -> Scenario:
        """The scenario for one seed: the same as ``load_scenario(source, seed=seed, ...)``."""
        return self.template.materialize(seed, profile_cache=self._profiles)

    def __call__(self, rng: np.random.Generator) -> Scenario:
        """Draw a seed from ``rng`` and return that seed's scenario."""
        return self.load(int(rng.integers(2**31 - 1)))


@dataclass(frozen=True)
class RandomScenarioGenerator:
    """Random clusters, workloads and arrivals for training orderers that generalise.

    Per episode: ``n_regions`` regions (uniform in the range) with capacities from
    ``gpu_choices``, prices uniform in ``price_range`` $/kWh and an intra-region bandwidth from
    ``intra_gbps_choices``; each directed inter-region link log-uniform in ``bandwidth_gbps`` (so
    that constraint (6) sometimes binds, as on measured WAN links); ``n_jobs`` jobs drawn from
    the paper's Table III models and datasets; with probability ``p_batch`` all jobs arrive at
    t = 0, otherwise as a Poisson process at a rate uniform in ``arrival_rate_per_h``.

    ``n_jobs`` and ``arrival_rate_per_h`` are ranges inside ``LIMITS["workload.n_jobs"]``
    (at most 10,000,000 jobs) and ``LIMITS["workload.arrival_rate_per_h"]``; a generator whose
    largest, slowest workload would arrive past the simulation horizon
    (:data:`~bacepipe_env.core.limits.HORIZON_H`), or whose largest one the machine's free
    memory cannot hold (:func:`~bacepipe_env.core.limits.check_memory`), is refused when it
    is made, and an episode whose Poisson draw runs past the horizon when it is drawn.

    ``carbon_range`` (gCO2e/kWh), when given, draws each region's flat carbon intensity
    uniformly in it, after every other draw, so that the episodes are otherwise those of the
    default; by default regions carry none (0), as the registered ``GeoPipe-Random-v2`` keeps
    its episode stream. Every GPU holds ``gpu_memory_gb``. Unless ``ignore_memory``, a job's
    model is drawn only among the models whose memory floor fits in the episode's largest
    region, so that every registered policy (single-region LCF and LDF included) can start
    every job. ``preemption``, ``announce_h`` (hours ahead a job is announced, default 0),
    ``model`` (the performance model the world runs by) and ``scheduler_model`` are every
    episode's scenario settings.
    """

    n_regions: tuple[int, int] = (4, 8)
    n_jobs: tuple[int, int] = (6, 16)
    gpu_choices: tuple[int, ...] = (16, 32, 64, 128)
    price_range: tuple[float, float] = (0.08, 0.35)
    intra_gbps_choices: tuple[float, ...] = (25.0, 50.0, 100.0)
    bandwidth_gbps: tuple[float, float] = (2.0, 100.0)
    p_batch: float = 0.3
    arrival_rate_per_h: tuple[float, float] = (0.5, 4.0)
    gpu_memory_gb: float = 48.0
    ignore_memory: bool = False
    admission: str = "greedy"
    carbon_range: tuple[float, float] | None = None
    preemption: str = "none"
    announce_h: float = 0.0
    model: str = "paper"
    scheduler_model: str = "paper"
    _profiles: ProfileCache = field(default_factory=ProfileCache, repr=False, compare=False)
    _world: World = field(default_factory=World, init=False, repr=False, compare=False)
    _paper: ScenarioTemplate = field(
        default_factory=lambda: compile_scenario(load_scenario_spec("paper")),
        repr=False,
        compare=False,
    )

    def __post_init__(self) -> None:
        ranges = ("n_regions", "n_jobs", "price_range", "bandwidth_gbps", "arrival_rate_per_h")
        for name in (*ranges, *(("carbon_range",) if self.carbon_range is not None else ())):
            value = getattr(self, name)
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise ScenarioError(name, value, "must be a (low, high) pair")
        require_int("n_regions[0]", self.n_regions[0], minimum=1)
        require_int("n_regions[1]", self.n_regions[1], minimum=self.n_regions[0])
        # the simulator's job limit, on both ends (the largest is what the memory must hold)
        fewest = check_limit("workload.n_jobs", self.n_jobs[0], field="n_jobs[0]")
        most = check_limit("workload.n_jobs", self.n_jobs[1], field="n_jobs[1]")
        require_int("n_jobs[1]", most, minimum=fewest)
        for name in ("price_range", "bandwidth_gbps"):
            lo, hi = getattr(self, name)
            require_float(f"{name}[0]", lo, minimum=0.0)
            require_float(f"{name}[1]", hi, minimum=lo)
        require_float("bandwidth_gbps[0]", self.bandwidth_gbps[0], positive=True)
        # a rate of 0 would mean no arrivals at all: inter-arrival times of 1 / 0
        slowest, fastest = self.arrival_rate_per_h
        slowest = check_limit("workload.arrival_rate_per_h", slowest, field="arrival_rate_per_h[0]")
        fastest = check_limit("workload.arrival_rate_per_h", fastest, field="arrival_rate_per_h[1]")
        require_float("arrival_rate_per_h[1]", fastest, minimum=slowest)
        require_float("p_batch", self.p_batch, minimum=0.0, maximum=1.0)
        if self.p_batch < 1.0:  # the most jobs at the slowest rate: within the horizon?
            source = ("arrival_rate_per_h[0]", self.arrival_rate_per_h[0])
            check_arrival_span(most, slowest, source=source)
        check_memory(most, self.n_regions[1], field="n_jobs[1]")
        if self.carbon_range is not None:
            lo, hi = self.carbon_range
            require_float("carbon_range[0]", lo, minimum=0.0)
            require_float("carbon_range[1]", hi, minimum=lo)
        for name in ("gpu_choices", "intra_gbps_choices"):
            if not getattr(self, name):
                raise ScenarioError(name, (), "needs at least one value")
        for i, g in enumerate(self.gpu_choices):
            require_int(f"gpu_choices[{i}]", g, minimum=1)
        for i, b in enumerate(self.intra_gbps_choices):
            require_float(f"intra_gbps_choices[{i}]", b, positive=True)
        require_float("gpu_memory_gb", self.gpu_memory_gb, positive=True)
        # every episode's world settings, validated by the World's table
        world = World(
            ignore_memory=self.ignore_memory,
            admission=self.admission,
            preemption=self.preemption,
            announce_h=self.announce_h,
            model=self.model,
            scheduler_model=self.scheduler_model,
        )
        object.__setattr__(self, "_world", world)
        object.__setattr__(self, "preemption", world.preemption)
        object.__setattr__(self, "announce_h", world.announce_h)
        memory = self.gpu_memory_gb * 1e9 - world.reserve_bytes  # what the stages may fill
        floors = {}
        for name, (model, batch) in self._paper.models.items():
            probe = Job(0, model, "probe", 1, batch, constants=self._paper.constants)
            floors[name] = memory_floor(profile_job(probe, 1.0), memory, world.activations)
        object.__setattr__(self, "_floors", floors)

    @property
    def max_regions(self) -> int:
        """The most regions a scenario can have (observation padding)."""
        return self.n_regions[1]

    @property
    def max_jobs(self) -> int:
        """The most jobs a scenario can have."""
        return self.n_jobs[1]

    def __call__(self, rng: np.random.Generator) -> Scenario:
        """One random scenario from ``rng``."""
        k = int(rng.integers(self.n_regions[0], self.n_regions[1] + 1))
        n = int(rng.integers(self.n_jobs[0], self.n_jobs[1] + 1))
        gpus = rng.choice(np.asarray(self.gpu_choices), size=k).tolist()
        prices = rng.uniform(*self.price_range, size=k).tolist()
        intra = rng.choice(np.asarray(self.intra_gbps_choices, dtype=float), size=k).tolist()
        lo, hi = np.log(self.bandwidth_gbps[0]), np.log(self.bandwidth_gbps[1])
        links = np.exp(rng.uniform(lo, hi, size=(k, k))) * gbps_to_bytes_per_s(1.0)  # bytes/s
        paper = self._paper
        model_names = list(paper.models)
        if not self.ignore_memory:  # only models whose memory floor one region can host
            largest = max(gpus)
            floors: dict[str, int] = self._floors  # type: ignore[attr-defined]
            model_names = [m for m in model_names if floors[m] <= largest]
        dataset_names = list(paper.datasets)
        models = rng.integers(len(model_names), size=n).tolist()
        datasets = rng.integers(len(dataset_names), size=n).tolist()
        rate: float | None = None  # batch arrivals: no process to draw a future from
        if rng.random() < self.p_batch:
            submits = [0.0] * n
        else:
            rate = float(rng.uniform(*self.arrival_rate_per_h))
            gaps = rng.exponential(1.0 / rate, size=n)
            gaps[0] = 0.0
            times = np.cumsum(gaps) * SECONDS_PER_HOUR
            if times[-1] > HORIZON_S:  # a draw longer than its mean (the mean was checked)
                raise ScenarioError(
                    "arrival_rate_per_h",
                    rate,
                    f"this episode's {n:,} arrivals end at {times[-1] / 3600:,.0f} h, past the "
                    f"simulation horizon ({HORIZON_H:,.0f} h): raise the rate",
                )
            submits = times.tolist()
        carbon = [0.0] * k
        if self.carbon_range is not None:  # the last draw: the rest of the episode is unchanged
            carbon = rng.uniform(*self.carbon_range, size=k).tolist()
        memory = self.gpu_memory_gb * 1e9
        regions = tuple(
            Region(f"R{i}", gpus[i], prices[i], gbps_to_bytes_per_s(intra[i]), memory, carbon[i])
            for i in range(k)
        )
        cluster = Cluster(regions, links, np.zeros((k, k)), paper.cluster.power_kw)
        jobs = []
        for i in range(n):
            model, batch = paper.models[model_names[models[i]]]
            name = dataset_names[datasets[i]]
            jobs.append(
                Job.trusted(
                    job_id=i + 1,
                    model=model,
                    dataset=name,
                    samples=paper.datasets[name],
                    batch=batch,
                    submit_time=submits[i],
                    epochs=paper.epochs,
                    constants=paper.constants,
                    name="",
                )
            )
        future = (
            None if rate is None else functools.partial(self.future_jobs, rate, tuple(model_names))
        )
        return Scenario(
            "random",
            cluster,
            tuple(jobs),
            self._world,
            f"{k} random regions, {n} random jobs",
            {"generator": "RandomScenarioGenerator", "n_regions": k, "n_jobs": n},
            self._profiles,
            future=future,
        )

    def future_jobs(
        self,
        rate: float,
        model_names: Sequence[str],
        rng: np.random.Generator,
        after: float,
        ids: Sequence[int],
    ) -> tuple[Job, ...]:
        """Jobs ``ids`` drawn afresh as an episode of arrival ``rate`` (per hour) over
        ``model_names`` draws them (:data:`~bacepipe_env.core.scenario.FutureJobs`): models
        and datasets uniformly, then Poisson arrivals after ``after`` (s), the first one gap
        after it (exact: Poisson arrivals are memoryless). What a rollout planner's
        ``sampled`` fork puts in place of the jobs it cannot know yet."""
        paper, m = self._paper, len(ids)
        dataset_names = list(paper.datasets)
        models = rng.integers(len(model_names), size=m).tolist()
        datasets = rng.integers(len(dataset_names), size=m).tolist()
        gaps = rng.exponential(SECONDS_PER_HOUR / rate, size=m)
        first = float(np.nextafter(after, np.inf))
        submits = np.maximum(after + np.cumsum(gaps), first).tolist()
        out = []
        for job_id, mi, di, t in zip(ids, models, datasets, submits):
            model, batch = paper.models[model_names[mi]]
            name = dataset_names[di]
            out.append(
                Job.trusted(
                    job_id=job_id,
                    model=model,
                    dataset=name,
                    samples=paper.datasets[name],
                    batch=batch,
                    submit_time=t,
                    epochs=paper.epochs,
                    constants=paper.constants,
                    name="",
                )
            )
        return tuple(out)
