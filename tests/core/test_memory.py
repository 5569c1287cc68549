"""The GPU memory model and memory floors (semantics §3a), worked out by hand.

One stage (one GPU) holding ``n`` whole layers needs

    n * state_per_layer + stash + working        bytes, with
    state_per_layer = bytes_per_param * N / n_layers        (16 bytes per parameter)
    stash           = M * A,  M = batch / m,  A = m * S * h * 2   (GPipe input stash)
    working         = 34 * m * S * h                         (one layer recomputed)

``layers_per_stage = floor((gpu_memory - stash - working) / state_per_layer)`` (capped at
``n_layers``, 0 if not even one layer fits), and the memory floor is
``ceil(n_layers / layers_per_stage)`` (``n_layers + 1`` when no layer fits).

The paper's constants: S = 2048, m = 1, 48 GB A6000s.

A toy model used below, so that every byte can be counted: N = 6, 4 layers, h = 1, batch 4,
S = m = 1, peak 1 FLOP/s, mfu 1:
    state_per_layer = 16 * 6 / 4 = 24 B; A = 1 * 1 * 1 * 2 = 2 B; stash = 4 * 2 = 8 B;
    working = 34 * 1 * 1 * 1 = 34 B; overhead = 8 + 34 = 42 B.
    A GPU of 138 B holds 4 layers (42 + 96), floor 1; 90 B holds 2 (42 + 48), floor 2;
    66 B holds 1 (42 + 24), floor 4; 65 B holds none, floor 5.
    t_comp(L) = 2 * 6 / L = 12 / L s; with a 2 B/s intra link every hop is A / 2 = 1 s, so
    Eq. (1) with M = 4 gives t_iter(1..4) = 96, 62, 52, 48 and K* = 4.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from bacepipe_env.cli import format_run
from bacepipe_env.core import (
    Cluster,
    Job,
    ModelSpec,
    Placement,
    Region,
    Scenario,
    Simulator,
    TrainingConstants,
)
from bacepipe_env.core.memory import (
    largest_feasible_gpus,
    layers_per_stage,
    memory_floor,
    memory_floors,
    stage_memory_bytes,
    stage_overhead_bytes,
    state_bytes_per_layer,
)
from bacepipe_env.core.world import World
from bacepipe_env.errors import PlacementError, ScenarioError, SimulationError, ValidationError
from bacepipe_env.policies import PathfinderPlacement, bace_pipe
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import build_scenario, load_scenario
from bacepipe_env.scheduling.baselines import cr_lcf, lcf, ldf

GB = 1e9
A6000 = 48e9  # bytes

# ---------------------------------------------------------------------------------------------
# Table III models at the paper's constants
# ---------------------------------------------------------------------------------------------

# (model, state bytes per layer, stage overhead = stash + working, layers per 48 GB, floor)
TABLE_III = [
    # Llama-3.1-70B: N = 70e9, 80 layers, h = 8192, batch 128 -> M = 128.
    #   state = 16 * 70e9 / 80 = 14e9 B per layer.
    #   A = 1 * 2048 * 8192 * 2 = 33,554,432 B; stash = 128 * A = 4,294,967,296 B.
    #   working = 34 * 1 * 2048 * 8192 = 570,425,344 B; overhead = 4,865,392,640 B.
    #   room = 48e9 - 4,865,392,640 = 43,134,607,360 B; / 14e9 = 3.08 -> 3 layers.
    #   floor = ceil(80 / 3) = 27 (semantics §3a's example).
    ("Llama-3.1-70B", 14e9, 4_865_392_640, 3, 27),
    # FLM-101B: N = 101e9, 80 layers, h = 10240, batch 128.
    #   state = 16 * 101e9 / 80 = 20.2e9 B.
    #   A = 2048 * 10240 * 2 = 41,943,040 B; stash = 128 * A = 5,368,709,120 B.
    #   working = 34 * 2048 * 10240 = 713,031,680 B; overhead = 6,081,740,800 B.
    #   room = 41,918,259,200 B; / 20.2e9 = 2.08 -> 2 layers; floor = ceil(80 / 2) = 40.
    ("FLM-101B", 20.2e9, 6_081_740_800, 2, 40),
    # Qwen2.5-14B: N = 14e9, 48 layers, h = 5120, batch 512.
    #   state = 16 * 14e9 / 48 = 4.667e9 B.
    #   A = 2048 * 5120 * 2 = 20,971,520 B; stash = 512 * A = 10,737,418,240 B.
    #   working = 34 * 2048 * 5120 = 356,515,840 B; overhead = 11,093,934,080 B.
    #   room = 36,906,065,920 B; / 4.667e9 = 7.91 -> 7 layers; floor = ceil(48 / 7) = 7.
    ("Qwen2.5-14B", 16 * 14e9 / 48, 11_093_934_080, 7, 7),
    # Solar-Open-100B: N = 100e9, 48 layers, h = 4096, batch 128.
    #   state = 16 * 100e9 / 48 = 33.33e9 B.
    #   A = 2048 * 4096 * 2 = 16,777,216 B; stash = 128 * A = 2,147,483,648 B.
    #   working = 34 * 2048 * 4096 = 285,212,672 B; overhead = 2,432,696,320 B.
    #   room = 45,567,303,680 B; / 33.33e9 = 1.37 -> 1 layer; floor = ceil(48 / 1) = 48.
    ("Solar-Open-100B", 16 * 100e9 / 48, 2_432_696_320, 1, 48),
    # Falcon-40B: N = 40e9, 60 layers, h = 8192, batch 256.
    #   state = 16 * 40e9 / 60 = 10.667e9 B.
    #   stash = 256 * 33,554,432 = 8,589,934,592 B; working = 570,425,344 B;
    #   overhead = 9,160,359,936 B; room = 38,839,640,064 B; / 10.667e9 = 3.64 -> 3 layers;
    #   floor = ceil(60 / 3) = 20.
    ("Falcon-40B", 16 * 40e9 / 60, 9_160_359_936, 3, 20),
]


def _paper_profiles() -> dict[str, Any]:
    scn = load_scenario("paper", seed=0)  # 8 jobs cycling Table III: one job per model
    return {j.model.name: scn.profiles[j.job_id] for j in scn.jobs}


@pytest.mark.parametrize("model,state,overhead,layers,floor", TABLE_III)
def test_table_iii_memory_floor(
    model: str, state: float, overhead: int, layers: int, floor: int
) -> None:
    prof = _paper_profiles()[model]
    assert state_bytes_per_layer(prof) == pytest.approx(state, rel=1e-12)
    assert stage_overhead_bytes(prof) == overhead  # integers in floats: exact
    assert layers_per_stage(prof, A6000) == layers
    assert memory_floor(prof, A6000) == floor
    # the largest stage of a floor-sized pipeline fits; one layer more does not
    assert stage_memory_bytes(prof, layers) <= A6000 < stage_memory_bytes(prof, layers + 1)
    assert stage_memory_bytes(prof, layers) == pytest.approx(layers * state + overhead, rel=1e-12)
    n_layers = prof.job.model.n_layers
    assert math.ceil(n_layers / floor) <= layers
    # one GPU fewer than the floor puts more layers on its largest stage than fit
    assert math.ceil(n_layers / (floor - 1)) > layers


def test_floors_in_the_scenario_records_and_the_cli_table() -> None:
    scn = load_scenario("paper", seed=0)
    expect = {m: f for m, *_, f in TABLE_III}
    for job in scn.jobs:
        if job.model.name in expect:
            # six Table II regions, all 48 GB: the same floor everywhere
            assert scn.memory_floors[job.job_id] == (expect[job.model.name],) * 6
    res = bace_pipe().simulate(scn)
    assert not res.ignore_memory
    rows = {}
    table = format_run(res, scn.cluster.names).splitlines()
    head = re.split(r"\s{2,}", table[0].strip())
    assert head[3:6] == ["K*", "floor", "GPUs"]
    for line in table[2 : 2 + len(res.records)]:
        cells = re.split(r"\s{2,}", line.strip())
        rows[cells[1]] = (int(cells[4]), int(cells[5]))
    for rec in res.records:
        if rec.model in expect:
            assert rec.memory_floor == expect[rec.model]
            assert rows[rec.model] == (expect[rec.model], rec.n_gpus)
        assert rec.n_gpus >= rec.memory_floor


def test_ignore_memory_floors_are_one() -> None:
    scn = load_scenario("paper", seed=0, ignore_memory=True)
    assert scn.ignore_memory
    assert set(scn.memory_floors.values()) == {(1,) * 6}
    res = bace_pipe().simulate(scn)
    assert res.ignore_memory
    assert {r.memory_floor for r in res.records} == {1}


# ---------------------------------------------------------------------------------------------
# The toy model: every byte by hand
# ---------------------------------------------------------------------------------------------

TOY_CONST = TrainingConstants(seq_len=1, micro_batch=1, peak_flops=1.0, mfu=1.0)
TOY4 = ModelSpec("toy4", 6.0, 4, 1)
TOY3 = ModelSpec("toy3", 6.0, 3, 1)


def _toy_job(job_id: int, model: ModelSpec = TOY4, samples: int = 4) -> Job:
    return Job(job_id, model, "d", samples, 4, constants=TOY_CONST)


def _toy_scenario(
    memories: list[float],
    gpus: list[int] | None = None,
    jobs: tuple[Job, ...] | None = None,
    *,
    prices: list[float] | None = None,
    intra: float = 2.0,
    ignore_memory: bool = False,
) -> Scenario:
    k = len(memories)
    gpus = gpus or [4] * k
    prices = prices or [0.1 * (i + 1) for i in range(k)]
    regions = tuple(Region(f"R{i}", gpus[i], prices[i], intra, memories[i]) for i in range(k))
    bw = np.full((k, k), intra) - np.diag([intra] * k)
    return Scenario(
        "toy",
        Cluster(regions, bw),
        jobs or (_toy_job(1),),
        World(ignore_memory=ignore_memory),
    )


def _toy_profile() -> Any:
    return _toy_scenario([A6000]).profiles[1]


@pytest.mark.parametrize(
    "memory,layers,floor",
    [
        (1e6, 4, 1),  # far more than 42 + 4 * 24 = 138: capped at the 4 layers there are
        (138.0, 4, 1),  # exactly 42 + 96
        (137.0, 3, 2),  # (137 - 42) / 24 = 3.96 -> 3; ceil(4 / 3) = 2
        (90.0, 2, 2),  # exactly 42 + 48
        (89.0, 1, 4),  # (89 - 42) / 24 = 1.96 -> 1; ceil(4 / 1) = 4
        (66.0, 1, 4),  # exactly 42 + 24
        (65.0, 0, 5),  # not one layer: n_layers + 1
        (10.0, 0, 5),  # not even the overhead
    ],
)
def test_toy_layers_and_floor(memory: float, layers: int, floor: int) -> None:
    prof = _toy_profile()  # the profile does not depend on the GPUs' memory
    assert state_bytes_per_layer(prof) == 24.0
    assert stage_overhead_bytes(prof) == 42.0  # stash 4 * 2 + working 34
    assert stage_memory_bytes(prof, 2) == 90.0
    assert layers_per_stage(prof, memory) == layers
    assert memory_floor(prof, memory) == floor


def test_memory_floors_per_region() -> None:
    prof = _toy_profile()
    assert memory_floors(prof, [138.0, 90.0, 66.0, 65.0, 90.0]) == (1, 2, 4, 5, 2)


def test_bytes_per_param_and_activation_factor_are_knobs() -> None:
    # bytes_per_param 8: state 8 * 6 / 4 = 12 B per layer; factor 0: working 0, overhead 8 B.
    # 90 B holds (90 - 8) / 12 = 6.8 -> 6, capped at 4 -> floor 1; 30 B holds 1 -> floor 4.
    c = TrainingConstants(
        seq_len=1,
        micro_batch=1,
        peak_flops=1.0,
        mfu=1.0,
        bytes_per_param=8.0,
        layer_activation_factor=0.0,
    )
    job = Job(1, TOY4, "d", 4, 4, constants=c)
    prof = Scenario("knobs", _toy_scenario([A6000]).cluster, (job,)).profiles[1]
    assert state_bytes_per_layer(prof) == 12.0
    assert stage_overhead_bytes(prof) == 8.0
    assert (layers_per_stage(prof, 90.0), memory_floor(prof, 90.0)) == (4, 1)
    assert (layers_per_stage(prof, 30.0), memory_floor(prof, 30.0)) == (1, 4)


# ---------------------------------------------------------------------------------------------
# Per-region GPU memory
#
#   Big 20 GPUs at 80 GB ($0.30), Std 30 GPUs at the 48 GB default ($0.20), Small 8 GPUs at
#   24 GB ($0.10), Tiny 4 GPUs at 16 GB ($0.05); 100 Gbps inside, 10 Gbps between regions.
#   One job: Llama-3.1-70B (14e9 B per layer, 4,865,392,640 B overhead, see TABLE_III).
#     Big:   (80e9 - 4.865e9) / 14e9 = 5.37 -> 5 layers, floor ceil(80 / 5) = 16
#     Std:   3 layers, floor 27
#     Small: (24e9 - 4.865e9) / 14e9 = 1.37 -> 1 layer, floor 80
#     Tiny:  16e9 - 4.865e9 = 11.1e9 < 14e9: not one layer, floor 81 (never)
# ---------------------------------------------------------------------------------------------


def _region(name: str, gpus: int, price: float, memory_gb: float | None) -> dict[str, Any]:
    row: dict[str, Any] = {"name": name, "gpus": gpus, "price_usd_per_kwh": price}
    row["intra_gbps"] = 100
    if memory_gb is not None:
        row["gpu_memory_gb"] = memory_gb
    return row


NAMES = ["Big", "Std", "Small", "Tiny"]
HETERO: dict[str, Any] = {
    "name": "hetero-memory",
    "constants": {"gpu_memory_gb": 48},
    "regions": [
        _region("Big", 20, 0.30, 80),
        _region("Std", 30, 0.20, None),
        _region("Small", 8, 0.10, 24),
        _region("Tiny", 4, 0.05, 16),
    ],
    "links": {
        "symmetric": True,
        "pairs": [
            {"a": a, "b": b, "gbps": 10} for i, a in enumerate(NAMES) for b in NAMES[i + 1 :]
        ],
    },
    "models": [
        {"name": "Llama-3.1-70B", "params": 70e9, "layers": 80, "hidden": 8192, "batch": 128}
    ],
    "datasets": [{"name": "Alpaca-52k", "samples": 52002}],
    "jobs": [{"name": "Q", "model": "Llama-3.1-70B", "dataset": "Alpaca-52k"}],
}


def test_per_region_floors_differ() -> None:
    scn = build_scenario(HETERO)
    assert scn.cluster.gpu_memory == (80e9, 48e9, 24e9, 16e9)
    prof = scn.profiles[1]
    assert prof.k_star == 80
    assert [layers_per_stage(prof, m) for m in scn.cluster.gpu_memory] == [5, 3, 1, 0]
    assert scn.memory_floors[1] == (16, 27, 80, 81)
    # Tiny cannot hold one layer: no pipeline there fits, not even the whole model's 80 stages
    assert stage_memory_bytes(prof, 1) > 16e9


def test_largest_feasible_gpus_hetero() -> None:
    # Regions with floor <= K* = 80: Big (16, 20 GPUs), Std (27, 30), Small (80, 8);
    # largest = min(80, 20 + 30 + 8) = 58. By floor: {Big} 20 >= 16 -> 20;
    # {Big, Std} 50 >= 27 -> 50; {Big, Std, Small} 58 < 80 -> still 50.
    scn = build_scenario(HETERO)
    floors = scn.memory_floors[1]
    assert largest_feasible_gpus(floors, scn.cluster.capacity, 80) == (50, 58)


@pytest.mark.parametrize(
    "floors,capacity,k_star,expect",
    [
        # both 16-GPU regions together reach the floor 27: (32, 32)
        ((27, 27), (16, 16), 80, (32, 32)),
        # 10 < 16 and 10 + 10 = 20 < 27: nothing fits; largest 20 (the 81 region is unusable)
        ((16, 27, 81), (10, 10, 100), 80, (0, 20)),
        # {R0} 20 >= 16 -> 20; {R0, R1} min(30, 60) = 30 >= 27 -> 30
        ((16, 27), (20, 40), 30, (30, 30)),
        # {R0} 6 >= 4 -> 6; {R0, R1} 16 < 20 -> best stays 6; largest 16
        ((4, 20), (6, 10), 30, (6, 16)),
        # the floor is above K*: the region is unusable
        ((27,), (100,), 20, (0, 0)),
        # memory ignored: floors of one, K* caps the pipeline
        ((1, 1, 1), (4, 3, 2), 5, (5, 5)),
    ],
)
def test_largest_feasible_gpus(
    floors: tuple[int, ...], capacity: tuple[int, ...], k_star: int, expect: tuple[int, int]
) -> None:
    assert largest_feasible_gpus(floors, capacity, k_star) == expect


def test_a_placement_must_reach_the_floor_of_every_region_on_its_path() -> None:
    scn = build_scenario(HETERO)
    sim = Simulator(scn, make_policy("lcf").placement)
    big, std, small, tiny = range(4)
    assert sim.fits(1, Placement((big,), (16,)))
    assert not sim.fits(1, Placement((big,), (15,)))
    assert not sim.fits(1, Placement((std,), (26,)))
    assert sim.fits(1, Placement((std,), (27,)))
    # 16 + 10 = 26: enough for Big (16), not for Std (27)
    assert not sim.fits(1, Placement((big, std), (16, 10)))
    assert sim.fits(1, Placement((big, std), (20, 7)))  # 27
    assert sim.fits(1, Placement((std, big), (7, 20)))  # order does not matter
    # with Small on the path 80 GPUs are needed; the cluster's 20 + 30 + 8 = 58 are not enough
    assert not sim.fits(1, Placement((big, std, small), (20, 30, 8)))
    # Tiny never fits
    assert not sim.fits(1, Placement((big, std, tiny), (20, 30, 4)))


def test_a_placement_below_the_floor_is_a_placement_error() -> None:
    scn = build_scenario(HETERO)
    sim = Simulator(scn, make_policy("lcf").placement)
    assert sim.next_decision() == (1,)
    with pytest.raises(PlacementError, match="memory floor 27"):
        sim.place(1, Placement((0, 1), (16, 10)))


def test_lcf_ldf_cr_lcf_on_per_region_memory() -> None:
    # LCF: by price Tiny (floor 81), Small (8 free < 80), Std (30 >= 27) -> Std:30.
    # LDF: the most free GPUs among the regions that can host their floor: Std 30 -> Std:30.
    # CR-LCF walks by price; every 10 Gbps hop A / 1.25e9 = 0.0268 s is below t_comp(80) =
    #   2 * 70e9 * 2048 / (80 * 154.8e12 * 0.4) = 0.0579 s, so each walk takes every region:
    #   from Tiny: 4 + 8 + 30 + 20 = 62 < Tiny's 81 -> restart;
    #   from Small: 8 + 30 + 20 = 58 < Small's 80 -> restart;
    #   from Std: 30 + 20 = 50 >= 27 (Std) and >= 16 (Big) -> Std:30 > Big:20.
    scn = build_scenario(HETERO)
    got = {}
    for name in ("lcf", "ldf", "cr-lcf"):
        rec = make_policy(name).simulate(scn).records[0]
        got[name] = rec.placement
        assert rec.memory_floor == 16  # the fewest GPUs the job fits in: Big's floor
        assert rec.start_time == 0.0
    assert got == {
        "lcf": Placement((1,), (30,)),
        "ldf": Placement((1,), (30,)),
        "cr-lcf": Placement((1, 0), (30, 20)),
    }


def test_pathfinder_policies_cannot_start_a_job_whose_widest_path_crosses_small_gpus() -> None:
    # The limitation docs/model.md states: the load-time check ignores the placement rules.
    # Pathfinder (phase 2, no region holds K* = 80) grows every start along equal 10 Gbps links,
    # so each path takes all four regions (4 + 8 + 30 + 20 = 62 GPUs): the most GPUs, and a
    # path through Tiny, whose floor is 81, so no path it builds ever fits and nothing runs.
    # LCF, LDF and CR-LCF (above) start the same job on Std:30 at t = 0.
    scn = build_scenario(HETERO)
    sim = Simulator(scn, PathfinderPlacement())
    assert sim.next_decision() == (1,)
    assert sim.placement_policy.place(sim, 1) is not None  # an answer, but below Tiny's floor
    assert sim.offer(1) is None
    for name in ("bace-pipe", "fcfs", "no-costmin", "cr-ldf"):
        with pytest.raises(SimulationError, match="can never start"):
            make_policy(name).simulate(scn)


def test_gpu_memory_must_be_positive() -> None:
    with pytest.raises(ScenarioError, match="gpu_memory"):
        Region("R", 4, 0.1, 1e9, 0.0)
    with pytest.raises(ScenarioError, match="gpu_memory"):
        Region("R", 4, 0.1, 1e9, -48e9)
    for where in ("region", "constants"):
        spec = {**HETERO, "regions": [dict(r) for r in HETERO["regions"]]}
        if where == "region":
            spec["regions"][1]["gpu_memory_gb"] = 0
            field = "regions[1].gpu_memory_gb"
        else:
            spec["constants"] = {"gpu_memory_gb": -1}
            field = "constants.gpu_memory_gb"
        with pytest.raises(ScenarioError) as err:
            build_scenario(spec)
        assert err.value.field == field


def test_constants_gpu_memory_is_the_default_of_every_region() -> None:
    # constants.gpu_memory_gb = 80: Std now holds 5 layers too -> floor 16 everywhere but the
    # regions that set their own
    spec = {**HETERO, "constants": {"gpu_memory_gb": 80}}
    scn = build_scenario(spec)
    assert scn.cluster.gpu_memory == (80e9, 80e9, 24e9, 16e9)
    assert scn.memory_floors[1] == (16, 16, 80, 81)
    # no gpu_memory_gb anywhere: the A6000's 48 GB
    plain = {**HETERO, "constants": {}, "regions": [_region(n, 30, 0.1, None) for n in NAMES]}
    assert build_scenario(plain).cluster.gpu_memory == (48e9,) * 4


# ---------------------------------------------------------------------------------------------
# Load-time rejection of a job no set of regions can ever hold
# ---------------------------------------------------------------------------------------------


def test_fig1_with_memory_is_rejected_in_one_line() -> None:
    # Q = Llama-3.1-70B needs 27 GPUs (3 of its 80 layers per 48 GB GPU); fig1 has
    # 4 + 3 + 2 + 2 = 11 GPUs, so the largest placement is min(K* = 80, 11) = 11.
    with pytest.raises(ScenarioError) as err:
        load_scenario("fig1", ignore_memory=False)
    msg = str(err.value)
    assert "\n" not in msg
    assert err.value.field == "job Q"
    assert "needs 27 GPUs" in msg
    assert "3 of 80 layers per 48 GB GPU" in msg
    assert "largest placement possible is 11 GPUs" in msg
    assert "ignore_memory" in msg
    # fig1 as shipped ignores memory: it loads, every floor is one
    scn = load_scenario("fig1")
    assert scn.ignore_memory
    assert scn.memory_floors == {1: (1,) * 4, 2: (1,) * 4}


def test_toy_rejection_names_job_floor_and_largest_placement() -> None:
    # 66 B GPUs hold one toy layer: floor 4; three GPUs in the cluster, K* = 4 -> largest 3
    with pytest.raises(ScenarioError) as err:
        _toy_scenario([66.0], [3], (Job(7, TOY4, "d", 4, 4, constants=TOY_CONST, name="big"),))
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("job big:")
    assert "needs 4 GPUs" in msg and "largest placement possible is 3 GPUs" in msg
    # four GPUs are enough; ignore_memory loads the three-GPU one too
    assert _toy_scenario([66.0], [4]).memory_floors[1] == (4,)
    assert _toy_scenario([66.0], [3], ignore_memory=True).memory_floors[1] == (1,)


def test_hetero_rejection_message_is_consistent() -> None:
    # Big 10 GPUs at 80 GB (floor 16) + Std 10 GPUs at 48 GB (floor 27): {Big} 10 < 16,
    # {Std} 10 < 27, {Big, Std} 20 < 27: no set of regions holds Q. The one line must explain
    # why: the GPU count it says the job needs must exceed the largest placement it reports
    # (a message "needs 16 GPUs ... the largest placement possible is 20 GPUs" contradicts
    # itself: 20 GPUs on Big + Std need 27).
    spec = {
        **HETERO,
        "regions": [_region("Big", 10, 0.3, 80), _region("Std", 10, 0.2, None)],
        "links": {"symmetric": True, "pairs": [{"a": "Big", "b": "Std", "gbps": 10}]},
    }
    with pytest.raises(ScenarioError) as err:
        build_scenario(spec)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("job Q:")
    found = re.search(r"needs (\d+) GPUs.*largest placement possible is (\d+) GPUs", msg)
    assert found, msg
    needs, largest = int(found[1]), int(found[2])
    assert needs > largest, msg


# ---------------------------------------------------------------------------------------------
# LCF / LDF / CR-LCF with memory floors (scheduling.baselines)
# ---------------------------------------------------------------------------------------------


def test_lcf_chooses_among_regions_that_can_host_the_floor() -> None:
    free, price = [2, 8, 5], [0.1, 0.3, 0.2]
    # the paper's rule: the cheapest region with a free GPU, min(2, K* = 6) GPUs there
    assert lcf(free, price, 6) == ([0], {0: 2})
    # floor 4: R0 (2 free) cannot host it; the cheapest of R1 (0.3) and R2 (0.2) -> R2:5
    assert lcf(free, price, 6, 4) == ([2], {2: 5})
    # per-region floors: R0 needs 10 (> 8 free), R1 needs 4
    assert lcf([8, 8], [0.1, 0.2], 8, [10, 4]) == ([1], {1: 8})
    # nothing can host it
    assert lcf(free, price, 6, 9) == ([], {})


def test_ldf_chooses_among_regions_that_can_host_the_floor() -> None:
    free, price = [2, 8, 5], [0.1, 0.3, 0.2]
    assert ldf(free, price, 6) == ([1], {1: 6})  # most free: R1, min(8, 6)
    # R1 needs 9 > 8 free: the most free among the rest is R2 (5 >= 4) -> all 5
    assert ldf(free, price, 6, [1, 9, 4]) == ([2], {2: 5})
    assert ldf(free, price, 6, [3, 9, 6]) == ([], {})


def test_lcf_ldf_skip_a_region_whose_floor_is_above_k_star() -> None:
    # A job never gets more than K* = 3 GPUs, so R0 with floor 5 can never host it, however
    # many GPUs are free there; R1 (floor 2) can: both rules must answer R1:3.
    assert lcf([8, 8], [0.1, 0.2], 3, [5, 2]) == ([1], {1: 3})
    assert ldf([8, 4], [0.1, 0.2], 3, [5, 2]) == ([1], {1: 3})


def test_lcf_ldf_simulations_skip_a_region_whose_floor_is_above_k_star() -> None:
    # Toy model with 0.5 B/s links: every hop takes A / 0.5 = 4 s and Eq. (13) gives
    #   t_iter(k) = 2 ((k - 1) * 4 + 12 + 3 * max(12 / k, 4)) = 96, 68, 64, 72 -> K* = 3.
    # R0 ($0.1, 4 GPUs) has 66 B GPUs: 1 layer, floor 4 > K*; R1 ($0.2, 4 GPUs) has 90 B:
    # 2 layers, floor 2. The only placements that fit are on R1: R1:3, t_iter(3) = 64, E = 64.
    scn = _toy_scenario([66.0, 90.0], prices=[0.1, 0.2], intra=0.5)
    assert scn.profiles[1].k_star == 3
    assert scn.memory_floors[1] == (4, 2)
    for name in ("lcf", "ldf", "cr-lcf"):
        rec = make_policy(name).simulate(scn).records[0]
        assert rec.placement == Placement((1,), (3,)), name
        assert rec.execution == pytest.approx(64.0, rel=1e-12), name


def test_cr_lcf_restarts_when_a_walk_ends_below_the_floor() -> None:
    # Prices R0 0.1 < R1 0.2 < R2 0.3; free [2, 6, 4]; K* = 8; A = 1 B, t_comp(g) = 12 / g.
    # Links from R0 are 0.1 B/s: A / 0.1 = 10 s > t_comp(g') for any g' >= 2, so a walk from R0
    # appends nothing. R1 <-> R2 is 10 B/s: 0.1 s <= t_comp(8) = 1.5 s.
    bw = np.array([[0.0, 0.1, 0.1], [0.1, 0.0, 10.0], [0.1, 10.0, 0.0]])
    free, price = [2, 6, 4], [0.1, 0.2, 0.3]

    def t_comp(g: int) -> float:
        return 12 / g

    # no floor: the walk from R0 ends at [R0] with 2 GPUs and that is the answer
    assert cr_lcf(free, price, bw, 8, 1.0, t_comp) == ([0], {0: 2})
    # floor 5: [R0] has 2 < 5 -> restart from R1: 6, + R2 -> min(10, 8) = 8 >= 5;
    # GPUs in path order: R1 6, R2 2
    assert cr_lcf(free, price, bw, 8, 1.0, t_comp, 5) == ([1, 2], {1: 6, 2: 2})
    # per-region floors: R1's 7 and R2's 8 are both reached by 8
    assert cr_lcf(free, price, bw, 8, 1.0, t_comp, [5, 7, 8]) == ([1, 2], {1: 6, 2: 2})
    # floor 9 > K*: no walk reaches it
    assert cr_lcf(free, price, bw, 8, 1.0, t_comp, 9) == ([], {})


@pytest.mark.parametrize("bad", [0, -1, [1, 0, 1], [1, 1]])
def test_min_gpus_is_validated(bad: Any) -> None:
    with pytest.raises(ValidationError, match="min_gpus"):
        lcf([2, 8, 5], [0.1, 0.3, 0.2], 6, bad)
    with pytest.raises(ValidationError, match="min_gpus"):
        ldf([2, 8, 5], [0.1, 0.3, 0.2], 6, bad)


# ---------------------------------------------------------------------------------------------
# Pathfinder below the floor: no placement, the job stays pending
#
#   Scenario P: one region, 4 GPUs of 90 B at $0.1, 2 B/s inside (hop 1 s). A = toy3
#   (3 layers: state 16 * 6 / 3 = 32 B per layer, (90 - 42) / 32 = 1.5 -> 1 layer, floor 3;
#   K* = 3 since t_iter(1..3) = 96, 62, 52); B = toy4 (floor 2, K* = 4). Both at t = 0, one
#   iteration each.
# ---------------------------------------------------------------------------------------------


def _pending_scenario(ignore_memory: bool = False) -> Scenario:
    jobs = (_toy_job(1, TOY3), _toy_job(2, TOY4))
    return _toy_scenario([90.0], [4], jobs, ignore_memory=ignore_memory)


def test_a_job_whose_floor_exceeds_the_free_gpus_waits_for_a_release() -> None:
    scn = _pending_scenario()
    assert scn.memory_floors == {1: (3,), 2: (2,)}
    policy = make_policy("fcfs")  # FCFS order, Pathfinder + Cost-Min placement
    sim = Simulator(scn, policy.placement)
    assert sim.next_decision() == (1, 2)
    # A: phase 1, the region has 4 >= K* = 3 free -> R0:3 (3 >= floor 3)
    assert sim.place(1) == Placement((0,), (3,))
    # B: Pathfinder's answer is R0:1 (the one free GPU), below B's floor 2 -> no placement
    raw = policy.placement.place(sim, 2)
    assert raw == Placement((0,), (1,))
    assert not sim.fits(2, raw)
    assert sim.offer(2) is None
    assert sim.pending == (2,)
    assert sim.running == (1,)
    assert sim.free_gpus == (1,)
    # one free GPU cannot reach B's floor 2: the next decision is A's completion at
    # t_iter(3) = 52 s, where B gets all 4
    assert sim.next_decision() == (2,)
    assert sim.time == pytest.approx(52.0, rel=1e-12)
    assert sim.offer(2) == Placement((0,), (4,))
    assert sim.place(2) == Placement((0,), (4,))
    assert sim.next_decision() is None
    res = sim.result("fcfs")
    # B: start 52, t_iter(4) = 48, finish 100, JCT 100
    r1, r2 = res.records
    assert (r1.start_time, r1.finish_time) == pytest.approx((0.0, 52.0), rel=1e-12)
    assert (r2.start_time, r2.execution, r2.jct) == pytest.approx((52.0, 48.0, 100.0), rel=1e-12)
    assert policy.simulate(scn).records == res.records


def test_ignore_memory_starts_the_job_below_the_floor() -> None:
    # the paper's semantics: B starts at once on the free GPU, t_iter(1) = 96
    res = make_policy("fcfs").simulate(_pending_scenario(ignore_memory=True))
    r1, r2 = res.records
    assert r1.placement == Placement((0,), (3,))
    assert r2.placement == Placement((0,), (1,))
    assert (r2.start_time, r2.execution) == pytest.approx((0.0, 96.0), rel=1e-12)


# Scenario S: two regions R0 ($0.1) and R1 ($0.2), 2 GPUs of 90 B each, 2 B/s inside (hop 1 s),
# a 0.1 B/s link between them (hop 2 / 0.1 = 20 s). Jobs: T1, T2 = "tiny" (N = 1, 1 layer:
# 16 + 42 = 58 B <= 90, floor 1; t_comp = 2 s, K* = 1, t_iter(1) = 2 (2 + 3 * 2) = 16 s) and
# B = toy4 (floor 2, K* = 4), all at t = 0, one iteration each. T1 is put on R0:1 and T2 on
# R1:1, so B sees one free GPU in each region: two together reach its floor, but Pathfinder
# cannot join them: from R0, g' = 2 needs A / 0.1 = 20 s <= t_comp(2) = 6 s, which fails, and
# the same from R1. Both single-GPU paths tie on g = 1; R0's is cheaper -> R0:1, below 2.
TINY = ModelSpec("tiny", 1.0, 1, 1)


def _split_scenario(ignore_memory: bool = False) -> Scenario:
    regions = (Region("R0", 2, 0.1, 2.0, 90.0), Region("R1", 2, 0.2, 2.0, 90.0))
    bw = np.array([[0.0, 0.1], [0.1, 0.0]])
    jobs = (_toy_job(1, TINY), _toy_job(2, TINY), _toy_job(3, TOY4))
    return Scenario("split", Cluster(regions, bw), jobs, World(ignore_memory=ignore_memory))


def test_pathfinder_below_the_floor_leaves_the_job_pending() -> None:
    scn = _split_scenario()
    assert scn.memory_floors == {1: (1, 1), 2: (1, 1), 3: (2, 2)}
    assert [scn.profiles[j].k_star for j in (1, 2, 3)] == [1, 1, 4]
    policy = make_policy("fcfs")
    sim = Simulator(scn, policy.placement)
    assert sim.next_decision() == (1, 2, 3)
    assert sim.place(1, Placement((0,), (1,))) == Placement((0,), (1,))
    assert sim.place(2, Placement((1,), (1,))) == Placement((1,), (1,))
    # two GPUs are free, B's floor is 2: B is a candidate
    assert sim.next_decision() == (3,)
    assert sim.free_gpus == (1, 1)
    assert policy.placement.place(sim, 3) == Placement((0,), (1,))
    assert sim.offer(3) is None
    assert sim.place(3) is None
    assert sim.pending == (3,)
    assert sim.running == (1, 2)
    assert sim.free_gpus == (1, 1)  # nothing was taken
    # offered again after the next event: T1 and T2 both finish at 16 s. Pathfinder: no region
    # has K* = 4 free; from R0 g = 2, R1 cannot be joined (20 s > t_comp(4) = 3 s) -> R0:2,
    # from R1 -> R1:2; tie on g, R0 cheaper -> R0:2 (2 >= floor 2).
    assert sim.next_decision() == (3,)
    assert sim.time == pytest.approx(16.0, rel=1e-12)
    assert sim.place(3) == Placement((0,), (2,))
    assert sim.next_decision() is None
    rec = sim.result("fcfs").records[2]
    # t_iter(2) = 2 (1 + 2 * 6 + 3 * 6) = 62 s; start 16, finish 78
    assert (rec.start_time, rec.execution, rec.finish_time) == pytest.approx(
        (16.0, 62.0, 78.0), rel=1e-12
    )
    assert rec.wait == pytest.approx(16.0, rel=1e-12)


def test_pathfinder_below_the_floor_is_taken_when_memory_is_ignored() -> None:
    # the same state under ignore_memory: B starts at once on R0:1, t_iter(1) = 96 s
    sim = Simulator(_split_scenario(ignore_memory=True), make_policy("fcfs").placement)
    assert sim.next_decision() == (1, 2, 3)
    sim.place(1, Placement((0,), (1,)))
    sim.place(2, Placement((1,), (1,)))
    assert sim.next_decision() == (3,)
    assert sim.offer(3) == Placement((0,), (1,))
    assert sim.place(3) == Placement((0,), (1,))
    assert sim.next_decision() is None
    rec = sim.result().records[2]
    assert (rec.start_time, rec.execution) == pytest.approx((0.0, 96.0), rel=1e-12)
