"""The physical model's world (semantics §3d), audited from the outside: on random scenarios
and policies, no GPU, GPU memory or link direction is ever over its capacity with the
backward pass's reverse traffic counted, and every run time is the physical model's,
recomputed here from the job's figures, not from the code under test."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from bacepipe_env.core import RunResult, Scenario
from bacepipe_env.errors import ScenarioError, SimulationError
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import RandomScenarioGenerator, load_scenario

REL = 1e-9
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
POLICIES = ("bace-pipe", "fcfs", "sjf", "cr-ldf", "lcf")


@st.composite
def worlds(draw: st.DrawFn) -> tuple[Scenario, str]:
    """A random scenario of the physical world (the paper's or a random cluster, whose
    links may differ each way), and a policy."""
    knobs = {"model": "physical", "scheduler_model": draw(st.sampled_from(["paper", "world"]))}
    try:
        if draw(st.booleans()):
            scn = load_scenario(
                "paper",
                seed=draw(st.integers(0, 2**16)),
                n_jobs=draw(st.integers(1, 12)),
                gpu_scale=draw(st.floats(0.3, 2.0)),
                bandwidth_scale=draw(st.floats(0.01, 2.0)),
                recompute=draw(st.booleans()),
                **knobs,
            )
        else:  # every directed link drawn on its own: the two ways differ
            gen = RandomScenarioGenerator(n_regions=(2, 5), n_jobs=(1, 10), **knobs)
            scn = gen(np.random.default_rng(draw(st.integers(0, 2**16))))
    except ScenarioError as exc:  # a job no set of regions can hold in GPU memory
        assert "GPU memory" in str(exc) or "layers fits" in str(exc), exc
        reject()
    return scn, draw(st.sampled_from(POLICIES))


def _run(scn: Scenario, policy: str) -> RunResult:
    try:
        return make_policy(policy, seed=0).simulate(scn)
    except SimulationError as exc:  # no placement that fits, ever: not a valid example
        assert "never start" in str(exc), exc
        reject()


def _physical_iteration(scn: Scenario, rec: object) -> tuple[float, float]:
    """The physical model's iteration time of a record's placement and its booking b(L),
    from the job's figures: forward 2 N_a and backward 4 N_a (+2 N_a recomputed) FLOPs per
    token, the forward hops on the path's links, the backward hops on the reverse links,
    each direction's latencies once."""
    job = next(j for j in scn.jobs if j.job_id == rec.job_id)  # type: ignore[attr-defined]
    c, m = job.constants, job.model
    cl, p = scn.cluster, rec.placement  # type: ignore[attr-defined]
    n = p.n_gpus
    active = m.params if m.active_params is None else m.active_params
    flops = 2 * active * c.micro_batch * c.seq_len / (c.peak_flops * c.mfu)
    t_f = flops / n + c.stage_overhead
    t_b = (3 if scn.world.recompute else 2) * flops / n + c.stage_overhead
    a = c.micro_batch * c.seq_len * m.hidden * c.bytes_per_value
    fwd, bwd, lat = [], [], 0.0
    for i, (r, g) in enumerate(zip(p.path, p.gpus)):
        if i:
            u = p.path[i - 1]
            fwd.append(a / float(cl.bandwidth[u, r]))
            bwd.append(a / float(cl.bandwidth[r, u]))
            lat += float(cl.latency[u, r]) + float(cl.latency[r, u])
        fwd += [a / cl.regions[r].intra_bandwidth] * (g - 1)
        bwd += [a / cl.regions[r].intra_bandwidth] * (g - 1)
    mb = job.batch // c.micro_batch
    t = (
        sum(fwd)
        + sum(bwd)
        + lat
        + n * (t_f + t_b)
        + (mb - 1) * (max([t_f, *fwd]) + max([t_b, *bwd]))
    )
    return t, a / t_f


@SETTINGS
@given(worlds())
def test_nothing_is_ever_over_capacity_in_the_physical_world(world: tuple[Scenario, str]) -> None:
    scn, policy = world
    res = _run(scn, policy)
    cl = scn.cluster
    k = cl.n_regions
    reserve = 2e9  # the physical model's runtime reserve per GPU, bytes
    events: list[tuple[float, int, object]] = []
    for rec in res.records:
        t_iter, need = _physical_iteration(scn, rec)
        job = next(j for j in scn.jobs if j.job_id == rec.job_id)
        iters = math.ceil(job.samples / job.batch) * job.epochs
        assert math.isclose(rec.execution, iters * t_iter, rel_tol=REL), (policy, rec.job_id)
        cross = len(rec.placement.path) > 1
        assert math.isclose(rec.reserved_bandwidth, need if cross else 0.0, rel_tol=REL)
        # memory: the largest stage's state, stash and working set within the usable memory
        c, m = job.constants, job.model
        n_layers = math.ceil(m.n_layers / rec.n_gpus)
        state = c.bytes_per_param * m.params / m.n_layers
        work = c.layer_activation_factor * c.micro_batch * c.seq_len * m.hidden
        mb = job.batch // c.micro_batch
        if scn.world.recompute:
            a = c.micro_batch * c.seq_len * m.hidden * c.bytes_per_value
            stage = n_layers * state + mb * a + work
        else:
            stage = n_layers * (state + mb * work)
        for r in rec.placement.path:
            assert stage <= cl.regions[r].gpu_memory - reserve, (rec.job_id, r)
        events.append((rec.start_time, 1, rec))
        events.append((rec.finish_time, 0, rec))  # ends before starts at one instant
    gpus = [0] * k
    links = [[0.0] * k for _ in range(k)]
    for _, kind, rec in sorted(events, key=lambda e: (e[0], e[1])):
        sign = 1 if kind else -1
        p = rec.placement  # type: ignore[attr-defined]
        for r, g in zip(p.path, p.gpus):
            gpus[r] += sign * g
            assert 0 <= gpus[r] <= cl.capacity[r]
        for u, v in zip(p.path, p.path[1:]):  # the forward hop and the backward's reverse one
            for a, b in ((u, v), (v, u)):
                links[a][b] += sign * rec.reserved_bandwidth  # type: ignore[attr-defined]
                assert links[a][b] <= float(cl.bandwidth[a, b]) * (1 + 1e-6), (a, b, policy)


def test_the_paper_world_is_unchanged_by_the_knobs_it_ignores() -> None:
    """Under the paper's model the published numbers stand: 160.63 h and $2,950.15 for
    BACE-Pipe on the paper scenario (seed 0), the README's figures; the physical knobs are
    not read there."""
    res = make_policy("bace-pipe", seed=0).simulate(load_scenario("paper", seed=0))
    assert f"{res.avg_jct / 3600:.2f} {res.total_cost:.2f}" == "160.63 2950.15"
    same = make_policy("bace-pipe", seed=0).simulate(
        load_scenario("paper", seed=0, scheduler_model="world")
    )
    assert same.records == res.records


def test_the_moe_model_is_cheaper_to_compute_only_in_the_physical_world() -> None:
    # Solar-Open-100B: 100e9 parameters, 12e9 active. E(1) per iteration on one GPU with
    # M micro-batches: paper 2 * M * 2N mS / (peak mfu); physical M * (2 + 6) N_a mS /
    # (peak mfu) with recomputation, so physical / paper = 8 N_a / (4 N) = 8 * 12 / 400 = 0.24
    paper = load_scenario("paper", seed=0)
    physical = load_scenario("paper", seed=0, model="physical", scheduler_model="world")
    solar = next(j.job_id for j in paper.jobs if j.model.name == "Solar-Open-100B")
    llama = next(j.job_id for j in paper.jobs if j.model.name == "Llama-3.1-70B")
    ratio = physical.profiles[solar].single_gpu_exec / paper.profiles[solar].single_gpu_exec
    assert math.isclose(ratio, 0.24, rel_tol=1e-12)
    # a dense model: (2 + 6) N / (4 N) = 2
    ratio = physical.profiles[llama].single_gpu_exec / paper.profiles[llama].single_gpu_exec
    assert math.isclose(ratio, 2.0, rel_tol=1e-12)
    # the schedulers' estimates stay the paper's unless asked for the world's
    blind = load_scenario("paper", seed=0, model="physical")
    assert blind.profiles[solar] == paper.profiles[solar]
    assert blind.world_profiles[solar] == physical.profiles[solar]


def test_the_overbooking_audit_counts_reverse_traffic(benchmark_module) -> None:  # type: ignore[no-untyped-def]
    """benchmarks/physical.py's audit, in a tiny form: on random clusters whose links differ
    each way, the paper's world overbooks some reverse links (it books the forward direction
    only); the physical world none."""
    bench = benchmark_module("physical")
    counts = {}
    for model in ("paper", "physical"):
        gen = RandomScenarioGenerator(model=model)
        over = total = 0
        for seed in range(8):
            scn = gen(np.random.default_rng(seed))
            res = make_policy("bace-pipe", seed=0).simulate(scn)
            o, n = bench.overbooking(scn, res)
            over, total = over + o, total + n
        counts[model] = (over, total)
    assert counts["paper"][0] > 0 and counts["paper"][1] > 0, counts
    assert counts["physical"][0] == 0 and counts["physical"][1] > 0, counts


def test_a_load_is_the_share_of_gpus_busy_in_the_world_that_runs() -> None:
    """``load`` sets the arrival rate from the world's own model: a physical job holds its
    GPUs about twice as long (8N against 4N FLOPs per token), so the same load arrives at
    about half the rate, and the template still reports the load asked for."""
    from bacepipe_env.scenarios.loader import compile_scenario, load_scenario_spec

    spec = load_scenario_spec("online")
    paper = compile_scenario(spec, load=0.8)
    physical = compile_scenario(spec, load=0.8, model="physical")
    assert math.isclose(paper.offered_load(), 0.8, rel_tol=1e-12)
    assert math.isclose(physical.offered_load(), 0.8, rel_tol=1e-12)
    assert paper.workload is not None and physical.workload is not None
    ratio = physical.workload.rate / paper.workload.rate
    assert 0.3 < ratio < 0.7, ratio


def test_the_memory_variants_move_the_knife_edge_floors() -> None:
    """FLM-101B on 48 GB A6000s (the paper's Table III; M = 128 micro-batches of 2,048 tokens):
    - state per layer: 16 B x 101e9 / 80 = 20.2 GB;
    - with recomputation a stage also holds M x A = 128 x 2,048 x 10,240 x 2 B = 5.37 GB of
      stashed inputs and 34 x 2,048 x 10,240 B = 0.71 GB of working set: 6.08 GB;
    - two layers take 40.4 + 6.08 = 46.5 GB of 48 (96.9% full): floor ceil(80 / 2) = 40;
    - less a 2 GB reserve (46 GB) only one layer fits: floor 80;
    - counting the state only, two layers (40.4 GB) fit in 48 GB: floor 40, and with 18 B
      a parameter 22.7 GB a layer, still two (45.5 GB): floor 40.
    Llama-3.1-70B: 14.0 GB a layer and 4.29 + 0.57 GB besides; three layers take 46.9 GB
    (97.6% full): floor ceil(80 / 3) = 27; with the reserve two fit: floor 40."""

    def floors(**knobs: object) -> dict[str, int]:
        scn = load_scenario("paper", seed=0, n_jobs=8, **knobs)  # type: ignore[arg-type]
        names = {j.job_id: j.model.name for j in scn.jobs}
        return {names[j]: min(f) for j, f in scn.memory_floors.items()}

    base = floors()
    assert (base["FLM-101B"], base["Llama-3.1-70B"]) == (40, 27)
    reserve = floors(gpu_reserve_gb=2.0)
    assert (reserve["FLM-101B"], reserve["Llama-3.1-70B"]) == (80, 40)
    assert floors(model="physical") == reserve  # the physical model's 2 GB reserve
    state = floors(state_only_floors=True)
    assert (state["FLM-101B"], state["Llama-3.1-70B"]) == (40, 27)


def test_jobs_the_world_books_differently_are_not_one_placement_shape() -> None:
    """Placements are remembered by job shape (the planner's forks and the env's previews
    share them). Two models alike for the schedulers' Eq. (1) but not for the physical world
    (a dense 100B and a mixture of experts with 12B active, same layers, hidden size and
    batch) must not share an answer the world may refuse for one of them."""
    from bacepipe_env.core import Simulator
    from bacepipe_env.policies import PathfinderPlacement
    from bacepipe_env.scenarios.loader import load_scenario_spec

    spec = load_scenario_spec("paper")
    solar = next(m for m in spec["models"] if m["name"] == "Solar-Open-100B")
    dense = {**solar, "name": "Dense-100B", "active_params": solar["params"]}
    spec = {**spec, "models": [solar, dense], "workload": {**spec["workload"], "n_jobs": 2}}
    spec["workload"]["models"] = "cycle"
    shapes = {}
    for model in ("paper", "physical"):
        scn = load_scenario(spec, seed=0, model=model)
        sim = Simulator(scn, PathfinderPlacement())
        by_model = {j.model.name: sim.placement_shape(j.job_id) for j in scn.jobs}
        shapes[model] = by_model["Solar-Open-100B"] == by_model["Dense-100B"]
    assert shapes == {"paper": True, "physical": False}


def test_a_job_the_blind_policy_can_never_place_in_the_world_is_named() -> None:
    """paper-aws at GPUs x0.5, seed 5, in the physical world: CR-LCF's path for
    Solar-Open-100B passes its Eq. (1) estimate of b(L), but the world books 8.3x as much (12B
    active parameters compute 8.3x faster, so activations leave 8.3x as fast), and the idle
    cluster offers nothing else. The run stops naming the job and the world's links; told the
    world's model, CR-LCF places it."""
    import pytest

    blind = load_scenario("paper-aws", seed=5, model="physical", gpu_scale=0.5)
    solar = next(j.job_id for j in blind.jobs if j.model.name == "Solar-Open-100B")
    with pytest.raises(SimulationError, match=rf"^jobs {solar} can never start: .*world's links"):
        make_policy("cr-lcf", seed=0).simulate(blind)
    told = load_scenario(
        "paper-aws", seed=5, model="physical", gpu_scale=0.5, scheduler_model="world"
    )
    assert len(make_policy("cr-lcf", seed=0).simulate(told).records) == len(told.jobs)


def test_bad_physical_inputs_are_one_line_naming_the_field() -> None:
    import pytest

    from bacepipe_env.scenarios.loader import load_scenario_spec

    spec = load_scenario_spec("paper")
    spec["models"][1]["active_params"] = 2e11  # Solar-Open-100B has 1e11 in all
    with pytest.raises(ScenarioError, match=r"^models\[1\]\.active_params: must be at most"):
        load_scenario(spec, seed=0)
    # a reserve that leaves a 48 GB GPU 0.01 GB: the message says where the memory went
    with pytest.raises(ScenarioError, match=r"after a 47\.99 GB runtime reserve"):
        load_scenario("paper", seed=0, gpu_reserve_gb=47.99)
