"""Fixtures of the environment tests: a tiny hand-made scenario whose numbers are easy to derive
by hand (the ``DummyGenerator`` of Jumanji's tests).

Two regions, X (index 0) and Y (index 1), each with 2 GPUs; X costs $0.20/kWh and has 8 Gbps
(1e9 B/s) between its stages, Y $0.10/kWh and 4 Gbps (5e8 B/s); the link X <-> Y carries 8 Gbps
(1e9 B/s) each way, no latency; one GPU draws 1 kW. Memory is ignored.

Every model has hidden size 2.5e8, so with ``seq_len = micro_batch = 1`` and 2-byte values a
stage boundary sends ``A = 1 * 1 * 2.5e8 * 2 = 5e8`` bytes: 0.5 s inside X or across the link,
1 s inside Y. With ``peak_flops = mfu = 1`` the compute of one micro-batch on L stages is
``t_comp(L) = 2 N / L`` seconds (N = params). Every job has batch 4, so M = 4 micro-batches, and
``samples = 4 * I`` for I iterations. Eq. (13) uses X's intra-region bandwidth (the largest
region, ties to the lower index): 0.5 s per hop. Eq. (1): ``t_iter = (sum(hops) + L t_comp +
(M - 1) max(t_comp, max(hops))) * 2``.

- job 1, "A", tiny-3L (N = 1, 3 layers), I = 3600, submitted at 0:
  ``t_iter(1) = (2 + 3 * 2) * 2 = 16``, ``t_iter(2) = (0.5 + 2 + 3 * 1) * 2 = 11``,
  ``t_iter(3) = (1 + 2 + 3 * 2/3) * 2 = 10``: K* = 3, ideal E = 10 h, E(1) = 16 h,
  ``b(K*) = A / t_comp(3) = 7.5e8`` B/s (6 Gbps).
- job 2, "B", tiny-1L (N = 0.5, 1 layer), I = 900, submitted at 0: K* = 1,
  ``t_iter(1) = (1 + 3 * 1) * 2 = 8``: ideal E = E(1) = 2 h, ``b(K*) = 5e8`` B/s (4 Gbps).
- job 3, "C", tiny-2L (N = 1, 2 layers), I = 1800, submitted at 1 h: K* = 2, ideal
  ``t_iter = 11``: ideal E = 5.5 h, E(1) = 16 * 1800 s = 8 h, ``b(K*) = 5e8`` B/s (4 Gbps).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bacepipe_env.core import Cluster, Region, Scenario
from bacepipe_env.core.job import Job, ModelSpec, TrainingConstants
from bacepipe_env.core.world import World

TINY_CONSTANTS = TrainingConstants(seq_len=1, micro_batch=1, peak_flops=1.0, mfu=1.0)


def make_tiny_scenario() -> Scenario:
    """The scenario described in this module's docstring."""
    hidden = 250_000_000
    tiny3 = ModelSpec("tiny-3L", params=1.0, n_layers=3, hidden=hidden)
    tiny1 = ModelSpec("tiny-1L", params=0.5, n_layers=1, hidden=hidden)
    tiny2 = ModelSpec("tiny-2L", params=1.0, n_layers=2, hidden=hidden)
    cluster = Cluster.from_regions(
        [Region("X", 2, 0.2, 1e9), Region("Y", 2, 0.1, 5e8)],
        [[0.0, 1e9], [1e9, 0.0]],
        power_kw=1.0,
    )

    def job(job_id: int, model: ModelSpec, iterations: int, submit: float, name: str) -> Job:
        return Job(
            job_id, model, "tiny", 4 * iterations, 4, submit, constants=TINY_CONSTANTS, name=name
        )

    jobs = (
        job(1, tiny3, 3600, 0.0, "A"),
        job(2, tiny1, 900, 0.0, "B"),
        job(3, tiny2, 1800, 3600.0, "C"),
    )
    return Scenario("tiny", cluster, jobs, World(ignore_memory=True))


@pytest.fixture
def tiny_scenario() -> Scenario:
    """A fresh copy of the tiny hand-made scenario."""
    return make_tiny_scenario()


#: The ids whose generic tests play 100 of their 500 jobs (see :func:`sized`).
SIZED_IDS = (
    "bacepipe_env/GeoPipe-Online-Preempt-v1",
    "bacepipe_env/GeoPipe-Online-Announced-v0",
    "bacepipe_env/GeoPipe-Online-Announced-Preempt-v0",
    "bacepipe_env/GeoPipe-Online-Deadline-v0",
    "bacepipe_env/GeoPipe-Online-Announced-Deadline-v0",
)


def _sized(env_id: str) -> dict[str, int]:
    return {"n_jobs": 100} if env_id in SIZED_IDS else {}


@pytest.fixture(scope="session")
def sized() -> Callable[[str], dict[str, int]]:
    """Extra kwargs that keep a per-id test short: the preempt ids' random episodes take about
    4,000 steps at their 500 jobs (a step per preemption decision), so their generic tests play
    100 jobs, and so do the announced ids' and the deadline ids' (Online-v1 with a calendar or
    deadlines, whose 500-job episodes Online-v1's tests already play); their full episodes are
    tested in test_env_preemption.py, test_env_announced.py and test_deadline_env.py."""
    return _sized
