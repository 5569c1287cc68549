"""Invariants under GPU memory (semantics §3a) and every admission rule (semantics §3b), for every
registered policy, on random small scenarios.

Scenarios: 1-5 regions with 4-64 GPUs in all, random prices, link bandwidths (some links
missing), per-region GPU memory (16-80 GB), and 1-6 jobs of small-to-medium models (1-13B
parameters) at staggered arrivals. A job must fit somewhere for every policy to be able to
finish it; single-region policies and Pathfinder may pick any region or path, so a scenario is
kept only if every job's memory floor in *every* region is at most ``min(K*, the largest
region's GPUs)`` (then every policy's idle-cluster answer fits). Everything else is assumed
away, as are scenarios rejected at load (ScenarioError).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bacepipe_env.core import Placement, RunResult, Scenario, Simulator
from bacepipe_env.core.admission import FinishAwareAdmission
from bacepipe_env.core.memory import stage_memory_bytes
from bacepipe_env.errors import ScenarioError
from bacepipe_env.policies.registry import make_policy, policy_info, policy_names
from bacepipe_env.scenarios import build_scenario

REL = 1e-9
RULES = ["greedy", "finish-aware", "full"]
ORACLE_MAX_JOBS = 4
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

MODELS = [
    {"name": "m1b", "params": 1.2e9, "layers": 16, "hidden": 2048},
    {"name": "m3b", "params": 3e9, "layers": 28, "hidden": 3072},
    {"name": "m7b", "params": 7e9, "layers": 32, "hidden": 4096},
    {"name": "m13b", "params": 13e9, "layers": 40, "hidden": 5120},
]


@st.composite
def specs(draw: st.DrawFn, min_jobs: int = 1, max_jobs: int = 6) -> dict[str, Any]:
    k = draw(st.integers(1, 5))
    per_region = max(1, 64 // k)
    gpus = [draw(st.integers(1, per_region)) for _ in range(k)]
    assume(sum(gpus) >= 4)
    names = [f"R{i}" for i in range(k)]
    regions = [
        {
            "name": names[i],
            "gpus": gpus[i],
            "price_usd_per_kwh": draw(st.floats(0.05, 0.5, allow_nan=False)),
            "intra_gbps": draw(st.sampled_from([25, 100, 400])),
            "gpu_memory_gb": draw(st.sampled_from([16, 24, 40, 48, 80])),
        }
        for i in range(k)
    ]
    gbps = st.one_of(st.just(0.0), st.floats(0.1, 100.0, allow_nan=False))
    matrix = [[0.0 if i == j else draw(gbps) for j in range(k)] for i in range(k)]
    micro = draw(st.sampled_from([1, 2]))
    models = [
        {**m, "batch": micro * draw(st.sampled_from([4, 16, 32]))}
        for m in draw(
            st.lists(st.sampled_from(MODELS), min_size=1, max_size=3, unique_by=lambda m: m["name"])
        )
    ]
    jobs = [
        {
            "model": draw(st.sampled_from([m["name"] for m in models])),
            "dataset": draw(st.sampled_from(["small", "medium", "big"])),
            "submit_h": draw(st.sampled_from([0.0, 0.0, 0.5, 2.0])),
        }
        for _ in range(draw(st.integers(min_jobs, max_jobs)))
    ]
    return {
        "name": "random-memory",
        "constants": {
            "seq_len": draw(st.sampled_from([512, 1024, 2048])),
            "micro_batch": micro,
            "power_kw": 0.3,
        },
        "regions": regions,
        "links": {"matrix_gbps": matrix},
        "models": models,
        "datasets": [
            {"name": "small", "samples": 2_000},
            {"name": "medium", "samples": 50_000},
            {"name": "big", "samples": 500_000},
        ],
        "jobs": jobs,
    }


def _scenario(spec: dict[str, Any]) -> Scenario:
    try:
        scn = build_scenario(spec)
    except ScenarioError:
        assume(False)
        raise  # unreachable
    room = max(scn.cluster.capacity)
    for job in scn.jobs:
        k_star = scn.profiles[job.job_id].k_star
        assume(max(scn.memory_floors[job.job_id]) <= min(k_star, room))
    return scn


def _policies(scn: Scenario) -> list[str]:
    # the preemptive policies' attempts have their own invariants (test_preemption_properties)
    names = [n for n in policy_names() if policy_info(n).preemption is None]
    if len(scn.jobs) <= ORACLE_MAX_JOBS:
        names.append("oracle")
    assert "oracle" not in policy_names()
    return names


def _stage_bytes_by_hand(scn: Scenario, job_id: int, n_gpus: int) -> float:
    """semantics §3a written out: ceil(n_layers / L) layers' state + M * A stash + working."""
    job = next(j for j in scn.jobs if j.job_id == job_id)
    c, m = job.constants, job.model
    layers = math.ceil(m.n_layers / n_gpus)
    state = c.bytes_per_param * m.params / m.n_layers
    activation = c.micro_batch * c.seq_len * m.hidden * c.bytes_per_value
    stash = job.batch // c.micro_batch * activation
    working = c.layer_activation_factor * c.micro_batch * c.seq_len * m.hidden
    return layers * state + stash + working


def _check(scn: Scenario, res: RunResult, rule: str, policy: str) -> None:
    where = f"{policy}/{rule}"
    cl = scn.cluster
    jobs = {j.job_id: j for j in scn.jobs}
    # every job finishes exactly once
    ids = [r.job_id for r in res.records]
    assert ids == sorted(jobs), where
    assert res.admission == rule, where
    assert res.ignore_memory == scn.ignore_memory, where
    for rec in res.records:
        job, prof = jobs[rec.job_id], scn.profiles[rec.job_id]
        p = rec.placement
        L = rec.n_gpus
        assert sum(p.gpus) == L and len(set(p.path)) == len(p.path), where
        assert all(g >= 1 for g in p.gpus), where
        # memory: the largest stage fits in the GPU of every region on the path
        layers = math.ceil(job.model.n_layers / L)
        for r in p.path if not scn.ignore_memory else ():
            assert stage_memory_bytes(prof, layers) <= cl.gpu_memory[r], (where, rec)
            assert _stage_bytes_by_hand(scn, rec.job_id, L) <= cl.gpu_memory[r], (where, rec)
            assert scn.memory_floors[rec.job_id][r] <= L, (where, rec)
        assert rec.memory_floor == (
            1 if scn.ignore_memory else min(scn.memory_floors[rec.job_id])
        ), where
        # L <= K*, start >= submit, T = W + E
        assert 1 <= L <= prof.k_star == rec.k_star, where
        assert rec.submit_time == job.submit_time, where
        assert rec.start_time >= rec.submit_time, where
        assert rec.wait == rec.start_time - rec.submit_time, where
        assert math.isclose(rec.jct, rec.wait + rec.execution, rel_tol=REL), where
        assert math.isclose(rec.finish_time, rec.start_time + rec.execution, rel_tol=REL), where
        # Eqs. (1)-(2) from the placement
        c = job.constants
        a = c.micro_batch * c.seq_len * job.model.hidden * c.bytes_per_value
        t_comp = 2 * job.model.params * c.micro_batch * c.seq_len / (L * c.peak_flops * c.mfu)
        comm: list[float] = []
        for i, (r, n) in enumerate(zip(p.path, p.gpus)):
            if i:
                comm.append(a / float(cl.bandwidth[p.path[i - 1], r]))
            comm += [a / cl.regions[r].intra_bandwidth] * (n - 1)
        n_micro = job.batch // c.micro_batch
        t_iter = (sum(comm) + L * t_comp + (n_micro - 1) * max([t_comp, *comm])) * 2
        iters = math.ceil(job.samples / job.batch) * job.epochs
        assert math.isclose(rec.execution, iters * t_iter, rel_tol=REL), where
        # Eq. (4)
        price_sum = sum(n * cl.prices[r] for r, n in zip(p.path, p.gpus))
        cost = rec.execution / 3600.0 * price_sum * cl.power_kw
        assert math.isclose(rec.cost, cost, rel_tol=REL), where
    n = len(res.records)
    assert math.isclose(res.avg_jct, sum(r.jct for r in res.records) / n, rel_tol=REL), where
    assert math.isclose(res.total_cost, sum(r.cost for r in res.records), rel_tol=REL), where
    _check_capacity(scn, res, where)


def _check_capacity(scn: Scenario, res: RunResult, where: str) -> None:
    """No region over its GPUs and no link over its bandwidth at any instant, rebuilt from the
    records (completions before starts at the same instant, as the simulator does)."""
    cl = scn.cluster
    events = []
    for rec in res.records:
        events.append((rec.finish_time, 0, rec))
        events.append((rec.start_time, 1, rec))
    events.sort(key=lambda e: (e[0], e[1]))
    used = [0] * cl.n_regions
    booked: dict[tuple[int, int], float] = {}
    for _, kind, rec in events:
        sign = 1 if kind else -1
        p = rec.placement
        for r, g in zip(p.path, p.gpus):
            used[r] += sign * g
            assert 0 <= used[r] <= cl.capacity[r], (where, used)
        for u, v in itertools.pairwise(p.path):
            booked[(u, v)] = booked.get((u, v), 0.0) + sign * rec.reserved_bandwidth
            assert booked[(u, v)] <= float(cl.bandwidth[u, v]) * (1 + REL) + 1e-6, where
    assert used == [0] * cl.n_regions, where


def _check_full(scn: Scenario, res: RunResult, policy: str) -> None:
    """Under ``full`` every job starts with at least the GPUs it gets on the idle cluster."""
    placement = make_policy(policy).placement
    sim = Simulator(scn, placement, admission="full")
    for rec in res.records:
        assert rec.n_gpus >= sim.full_gpus(rec.job_id), (policy, rec)


def _run(scn: Scenario, policy: str, rule: str) -> RunResult:
    return make_policy(policy, seed=3).simulate(scn, admission=rule)


def _check_all_policies(spec: dict[str, Any], rule: str) -> None:
    scn = _scenario(spec)
    again = build_scenario(spec)
    for policy in _policies(scn):
        res = _run(scn, policy, rule)
        _check(scn, res, rule, policy)
        if rule == "full":
            _check_full(scn, res, policy)
        # determinism: the same scenario again, and a fresh build of the same spec
        assert _run(scn, policy, rule).records == res.records, policy
        assert _run(again, policy, rule).records == res.records, policy


@SETTINGS
@given(spec=specs())
def test_greedy_every_policy(spec: dict[str, Any]) -> None:
    _check_all_policies(spec, "greedy")


@SETTINGS
@given(spec=specs())
def test_finish_aware_every_policy(spec: dict[str, Any]) -> None:
    _check_all_policies(spec, "finish-aware")


@SETTINGS
@given(spec=specs())
def test_full_every_policy(spec: dict[str, Any]) -> None:
    _check_all_policies(spec, "full")


@settings(max_examples=40, deadline=None)
@given(spec=specs(), rule=st.sampled_from(RULES))
def test_ignore_memory_every_policy(spec: dict[str, Any], rule: str) -> None:
    # the paper's semantics: no scenario is rejected, every floor is one, and the other
    # invariants still hold for every policy and rule
    loose = build_scenario({**spec, "ignore_memory": True})
    assert set(loose.memory_floors.values()) == {(1,) * loose.cluster.n_regions}
    for policy in _policies(loose):
        res = _run(loose, policy, rule)
        _check(loose, res, rule, policy)
        assert _run(loose, policy, rule).records == res.records, policy


class _RecordingFinishAware(FinishAwareAdmission):
    """finish-aware, remembering every decline: (job, release time, predicted finish when
    waiting, finish had it started now)."""

    def __init__(self) -> None:
        self.declined: list[tuple[int, float, float, float]] = []

    def admit(self, sim: Simulator, job_id: int, placement: Placement) -> bool:
        ok = super().admit(sim, job_id, placement)
        if not ok:
            release = sim.next_release()
            assert release is not None
            later = sim.placement_on(job_id, release)
            assert later is not None
            waited = release.time + sim.execution_time(job_id, later)
            now = sim.time + sim.execution_time(job_id, placement)
            assert waited < now
            self.declined.append((job_id, release.time, waited, now))
        return ok


@SETTINGS
@given(spec=specs(min_jobs=2, max_jobs=2))
def test_finish_aware_prediction_is_exact_with_two_jobs(spec: dict[str, Any]) -> None:
    # With two jobs a declined job waits for the other one's release, and nothing else can
    # take the released GPUs: it starts exactly then, on exactly the placement predicted.
    scn = _scenario(spec)
    for policy in _policies(scn):
        if policy == "oracle":
            continue
        rule = _RecordingFinishAware()
        res = make_policy(policy, seed=3).simulate(scn, admission=rule)
        _check(scn, res, "finish-aware", policy)
        recs = {r.job_id: r for r in res.records}
        for job_id, release, waited, now in rule.declined:
            rec = recs[job_id]
            assert rec.start_time == release, (policy, rec)
            assert math.isclose(rec.finish_time, waited, rel_tol=REL), (policy, rec)
            assert rec.finish_time < now, (policy, rec)
