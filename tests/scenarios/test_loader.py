"""Scenario loading: the built-in scenarios (semantics §7), sweep knobs, files, bad input."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bacepipe_env.errors import ScenarioError
from bacepipe_env.scenarios import build_scenario, list_scenarios, load_scenario, scale_gpus

GBPS = 1e9 / 8  # bytes/s per Gbps
MBPS = 1e6 / 8

TABLE_II = [
    # name, GPUs, $/kWh, Gbps
    ("EU-West", 64, 0.251, 50),
    ("US-East-2", 64, 0.156, 90),
    ("EU-Central", 16, 0.288, 30),
    ("EA-East", 128, 0.191, 70),
    ("SEA-South", 32, 0.222, 50),
    ("OC-East", 32, 0.295, 70),
]
TABLE_III = [
    # name, params, layers, hidden, batch
    ("FLM-101B", 101e9, 80, 10240, 128),
    ("Solar-Open-100B", 100e9, 48, 4096, 128),
    ("Llama-3.1-70B", 70e9, 80, 8192, 128),
    ("Falcon-40B", 40e9, 60, 8192, 256),
    ("Qwen2.5-32B", 32e9, 64, 5120, 256),
    ("Gemma-3-27B", 27e9, 62, 5376, 256),
    ("Ministral-3-14B", 14e9, 40, 5120, 512),
    ("Qwen2.5-14B", 14e9, 48, 5120, 512),
]
DATASETS = {"Alpaca-52k": 52002, "WikiText-103": 1_810_000, "OpenWebText": 8_010_000}


def _datasets(scn: Any) -> list[str]:
    return [j.dataset for j in scn.jobs]


# ------------------------------------------------------------------------------- built-ins


def test_list_scenarios() -> None:
    assert set(list_scenarios()) >= {"paper", "fig1"}


def test_paper_regions_table_ii() -> None:
    c = load_scenario("paper").cluster
    assert c.n_regions == 6
    assert c.names == tuple(r[0] for r in TABLE_II)
    assert c.capacity == tuple(r[1] for r in TABLE_II)
    assert c.prices == pytest.approx([r[2] for r in TABLE_II])
    assert c.power_kw == pytest.approx(0.3)
    for region, (_, _, _, gbps) in zip(c.regions, TABLE_II):
        assert region.intra_bandwidth == pytest.approx(gbps * GBPS)  # intra = B_i


def test_paper_links_are_the_mean_rule() -> None:
    c = load_scenario("paper").cluster
    bw = [r[3] for r in TABLE_II]
    for i in range(6):
        for j in range(6):
            want = 0.0 if i == j else (bw[i] + bw[j]) / 2 * GBPS
            assert c.bandwidth[i, j] == pytest.approx(want, rel=1e-12), (i, j)
    # e.g. EU-West <-> US-East-2 = 70 Gbps = 8.75e9 B/s
    assert c.bandwidth[0, 1] == pytest.approx(8.75e9)
    np.testing.assert_array_equal(c.bandwidth, c.bandwidth.T)
    np.testing.assert_array_equal(c.latency, np.zeros((6, 6)))


def test_paper_jobs_cycle_table_iii() -> None:
    scn = load_scenario("paper")
    assert len(scn.jobs) == 8
    assert [j.job_id for j in scn.jobs] == list(range(1, 9))
    for job, (name, params, layers, hidden, batch) in zip(scn.jobs, TABLE_III):
        assert job.model.name == name
        assert job.model.params == params
        assert job.model.n_layers == layers
        assert job.model.hidden == hidden
        assert job.batch == batch
        assert job.submit_time == 0.0
        assert job.epochs == 1
        assert job.dataset in DATASETS
        assert job.samples == DATASETS[job.dataset]
        c = job.constants
        assert (c.seq_len, c.micro_batch, c.mfu, c.stage_overhead) == (2048, 1, 0.4, 0.0)
        assert c.peak_flops == pytest.approx(154.8e12)


def test_paper_dataset_draw_is_seeded() -> None:
    draws = {seed: _datasets(load_scenario("paper", seed=seed)) for seed in range(12)}
    # reproducible
    for seed in (0, 5, 11):
        assert _datasets(load_scenario("paper", seed=seed)) == draws[seed]
    # depends on the seed
    assert len({tuple(d) for d in draws.values()}) > 1
    # every dataset shows up somewhere
    assert set().union(*draws.values()) == set(DATASETS)
    # the seed is recorded
    assert load_scenario("paper", seed=7).params["seed"] == 7


def test_fig1() -> None:
    scn = load_scenario("fig1")
    c = scn.cluster
    assert c.names == ("A", "B", "C", "D")
    assert c.capacity == (4, 3, 2, 2)
    assert c.prices == pytest.approx([0.230, 0.222, 0.191, 0.291])
    links = {
        ("A", "C"): 1000,
        ("B", "D"): 200,
        ("A", "B"): 300,
        ("C", "D"): 300,
        ("A", "D"): 700,
        ("B", "C"): 400,
    }
    assert len(links) == 6  # every pair of the 4 regions
    for (a, b), mbps in links.items():
        i, j = c.index(a), c.index(b)
        assert c.bandwidth[i, j] == pytest.approx(mbps * MBPS)
        assert c.bandwidth[j, i] == pytest.approx(mbps * MBPS)
    assert np.all(np.diag(c.bandwidth) == 0.0)
    assert [j.name for j in scn.jobs] == ["P", "Q"]
    p, q = scn.jobs
    assert (p.model.name, q.model.name) == ("Qwen2.5-14B", "Llama-3.1-70B")
    assert p.dataset == q.dataset == "Alpaca-52k"
    assert p.samples == q.samples == 52002
    assert p.submit_time == q.submit_time == 0.0
    assert (p.batch, q.batch) == (512, 128)


# ------------------------------------------------------------------------------- sweep knobs


@pytest.mark.parametrize("scale", [0.3, 0.9, 1.5])
def test_bandwidth_scale_only_scales_inter_region_links(scale: float) -> None:
    base = load_scenario("paper").cluster
    scaled = load_scenario("paper", bandwidth_scale=scale).cluster
    np.testing.assert_allclose(scaled.bandwidth, base.bandwidth * scale, rtol=1e-12)
    assert [r.intra_bandwidth for r in scaled.regions] == [r.intra_bandwidth for r in base.regions]
    assert scaled.capacity == base.capacity
    # Eq. (13) uses intra bandwidth only, so K* does not move
    a, b = load_scenario("paper"), load_scenario("paper", bandwidth_scale=scale)
    assert [a.profiles[j].k_star for j in a.profiles] == [b.profiles[j].k_star for j in b.profiles]


@pytest.mark.parametrize(
    ("scale", "gpus", "ignore_memory"),
    [
        (0.5, (32, 32, 8, 64, 16, 16), False),
        (0.75, (48, 48, 12, 96, 24, 24), False),
        (1.25, (80, 80, 20, 160, 40, 40), False),
        # at least one GPU; the paper's literal semantics: 6 GPUs cannot hold FLM-101B
        (0.01, (1, 1, 1, 1, 1, 1), True),
    ],
)
def test_gpu_scale_paper(scale: float, gpus: tuple[int, ...], ignore_memory: bool) -> None:
    scn = load_scenario("paper", gpu_scale=scale, ignore_memory=ignore_memory)
    assert scn.cluster.capacity == gpus
    if ignore_memory:  # with memory checked, the same cluster is rejected at load time
        with pytest.raises(ScenarioError, match="ignore_memory"):
            load_scenario("paper", gpu_scale=scale)
    np.testing.assert_array_equal(scn.cluster.bandwidth, load_scenario("paper").cluster.bandwidth)


def test_gpu_scale_rounds_half_up() -> None:
    # fig1 (4, 3, 2, 2) x 0.5 = (2, 1.5, 1, 1) -> (2, 2, 1, 1)
    assert load_scenario("fig1", gpu_scale=0.5).cluster.capacity == (2, 2, 1, 1)
    # x 0.25 = (1, 0.75, 0.5, 0.5) -> (1, 1, 1, 1); x 0.1 -> all below 0.5, at least 1
    assert load_scenario("fig1", gpu_scale=0.25).cluster.capacity == (1, 1, 1, 1)
    assert load_scenario("fig1", gpu_scale=0.1).cluster.capacity == (1, 1, 1, 1)
    # 5 x 0.5 = 2.5 -> 3 (not banker's 2); 7 x 0.5 = 3.5 -> 4; 10 x 0.25 = 2.5 -> 3
    spec = _minimal()
    spec["regions"][0]["gpus"] = 5
    spec["regions"][1]["gpus"] = 7
    assert build_scenario(spec, gpu_scale=0.5).cluster.capacity == (3, 4)
    spec["regions"][0]["gpus"] = 10
    assert build_scenario(spec, gpu_scale=0.25).cluster.capacity == (3, 2)  # 2.5, 1.75
    assert scale_gpus(5, 0.5) == 3
    assert scale_gpus(1, 0.49) == 1
    assert scale_gpus(3, 1.0) == 3


@pytest.mark.parametrize("n", [1, 8, 12, 16, 20, 24])
def test_n_jobs_cycles_models(n: int) -> None:
    scn = load_scenario("paper", n_jobs=n)
    assert len(scn.jobs) == n
    assert [j.job_id for j in scn.jobs] == list(range(1, n + 1))
    assert [j.model.name for j in scn.jobs] == [TABLE_III[i % 8][0] for i in range(n)]
    assert all(j.submit_time == 0.0 for j in scn.jobs)
    assert scn.params["n_jobs"] == n


def test_n_jobs_keeps_the_first_draws_reproducible() -> None:
    a = load_scenario("paper", seed=4, n_jobs=20)
    b = load_scenario("paper", seed=4, n_jobs=20)
    assert _datasets(a) == _datasets(b)


def test_n_jobs_on_an_explicit_job_list() -> None:
    scn = load_scenario("fig1", n_jobs=5)
    assert [j.model.name for j in scn.jobs] == ["Qwen2.5-14B", "Llama-3.1-70B"] * 2 + [
        "Qwen2.5-14B"
    ]
    assert [j.job_id for j in scn.jobs] == [1, 2, 3, 4, 5]
    assert len({j.name for j in scn.jobs}) == 5  # cycled copies get distinct names
    assert [j.name for j in load_scenario("fig1", n_jobs=1).jobs] == ["P"]


def test_loading_a_mapping() -> None:
    spec = _minimal()
    a = load_scenario(spec)
    b = build_scenario(spec)
    assert a.cluster.capacity == b.cluster.capacity == (4, 2)
    assert a.jobs == b.jobs


# ------------------------------------------------------------------------------- files


def _minimal() -> dict[str, Any]:
    return {
        "name": "mini",
        "constants": {"power_kw": 0.4, "seq_len": 1024},
        "regions": [
            {"name": "X", "gpus": 4, "price_usd_per_kwh": 0.1, "bandwidth_gbps": 40},
            {
                "name": "Y",
                "gpus": 2,
                "price_usd_per_kwh": 0.2,
                "bandwidth_gbps": 20,
                "intra_gbps": 100,
            },
        ],
        "links": {"pairs": [{"a": "X", "b": "Y", "gbps": 10}]},
        "latency_ms": [[0, 5], [7, 0]],
        "models": [{"name": "tiny", "params": 1e9, "layers": 8, "hidden": 1024, "batch": 16}],
        "datasets": [{"name": "d", "samples": 1000}],
        "jobs": [
            {"model": "tiny", "dataset": "d"},
            {"model": "tiny", "dataset": "d", "submit_h": 0.5, "epochs": 2, "name": "late"},
        ],
    }


def _check_minimal(scn: Any) -> None:
    c = scn.cluster
    assert scn.name == "mini"
    assert c.capacity == (4, 2)
    assert c.prices == pytest.approx([0.1, 0.2])
    assert c.power_kw == pytest.approx(0.4)
    assert c.regions[0].intra_bandwidth == pytest.approx(40 * GBPS)  # defaults to bandwidth
    assert c.regions[1].intra_bandwidth == pytest.approx(100 * GBPS)
    assert c.bandwidth[0, 1] == c.bandwidth[1, 0] == pytest.approx(10 * GBPS)
    assert c.latency[0, 1] == pytest.approx(0.005)
    assert c.latency[1, 0] == pytest.approx(0.007)
    j1, j2 = scn.jobs
    assert j1.constants.seq_len == 1024
    assert j2.submit_time == pytest.approx(1800.0)
    assert j2.epochs == 2
    assert j2.name == "late"
    assert j1.name == "J1"


def test_json_file(tmp_path: Path) -> None:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(_minimal()))
    _check_minimal(load_scenario(path))
    _check_minimal(load_scenario(str(path)))


TOML = """
name = "mini"
latency_ms = [[0, 5], [7, 0]]

[constants]
power_kw = 0.4
seq_len = 1024

[[regions]]
name = "X"
gpus = 4
price_usd_per_kwh = 0.1
bandwidth_gbps = 40

[[regions]]
name = "Y"
gpus = 2
price_usd_per_kwh = 0.2
bandwidth_gbps = 20
intra_gbps = 100

[links]
pairs = [{ a = "X", b = "Y", gbps = 10 }]

[[models]]
name = "tiny"
params = 1e9
layers = 8
hidden = 1024
batch = 16

[[datasets]]
name = "d"
samples = 1000

[[jobs]]
model = "tiny"
dataset = "d"

[[jobs]]
model = "tiny"
dataset = "d"
submit_h = 0.5
epochs = 2
name = "late"
"""


def test_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "mini.toml"
    path.write_text(TOML)
    _check_minimal(load_scenario(path))


def test_workload_rule_in_a_file(tmp_path: Path) -> None:
    spec = _minimal()
    del spec["jobs"]
    spec["workload"] = {
        "n_jobs": 5,
        "models": "tiny",
        "datasets": "random",
        "arrival_rate_per_h": 2.0,
    }
    path = tmp_path / "w.json"
    path.write_text(json.dumps(spec))
    a = load_scenario(path, seed=1)
    b = load_scenario(path, seed=1)
    assert len(a.jobs) == 5
    submits = [j.submit_time for j in a.jobs]
    assert submits == [j.submit_time for j in b.jobs]
    assert submits[0] == 0.0
    assert submits == sorted(submits)
    assert load_scenario(path, seed=2).jobs != a.jobs


def test_asymmetric_pairs_and_matrix() -> None:
    spec = _minimal()
    spec["links"] = {"symmetric": False, "pairs": [{"a": "X", "b": "Y", "mbps": 800}]}
    c = build_scenario(spec).cluster
    assert c.bandwidth[0, 1] == pytest.approx(800 * MBPS)
    assert c.bandwidth[1, 0] == 0.0
    spec["links"] = {"matrix_gbps": [[0, 8], [16, 0]]}
    c = build_scenario(spec).cluster
    assert c.bandwidth[0, 1] == pytest.approx(1e9)
    assert c.bandwidth[1, 0] == pytest.approx(2e9)


# ------------------------------------------------------------------------------- bad input


def _set(spec: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Copy ``spec`` with ``value`` at a dotted ``path`` (``regions.0.gpus``); a value of
    ``_DELETE`` removes the key."""
    out = copy.deepcopy(spec)
    *parents, last = path.split(".")
    node: Any = out
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    key: Any = int(last) if isinstance(node, list) else last
    if value is _DELETE:
        del node[key]
    else:
        node[key] = value
    return out


_DELETE = object()

BAD = [
    # id, path, value, expected field
    ("zero-gpus", "regions.0.gpus", 0, "regions[0].gpus"),
    ("negative-gpus", "regions.1.gpus", -3, "regions[1].gpus"),
    ("fractional-gpus", "regions.0.gpus", 2.5, "regions[0].gpus"),
    ("gpus-as-string", "regions.0.gpus", "4", "regions[0].gpus"),
    ("gpus-missing", "regions.0.gpus", _DELETE, "regions[0].gpus"),
    ("negative-region-bandwidth", "regions.1.bandwidth_gbps", -5, "regions[1].bandwidth_gbps"),
    ("nan-region-bandwidth", "regions.0.bandwidth_gbps", math.nan, "regions[0].bandwidth_gbps"),
    ("zero-intra", "regions.1.intra_gbps", 0, "regions[1].intra_gbps"),
    ("negative-price", "regions.0.price_usd_per_kwh", -0.1, "regions[0].price_usd_per_kwh"),
    ("nan-price", "regions.0.price_usd_per_kwh", math.nan, "regions[0].price_usd_per_kwh"),
    ("price-missing", "regions.1.price_usd_per_kwh", _DELETE, "regions[1].price_usd_per_kwh"),
    ("region-name-missing", "regions.0.name", _DELETE, "regions[0].name"),
    ("region-typo", "regions.0.gpu", 4, "regions[0].gpu"),
    ("top-level-typo", "regoins", [], "scenario.regoins"),
    ("constants-typo", "constants.seqlen", 7, "constants.seqlen"),
    ("negative-pair-bandwidth", "links.pairs.0.gbps", -1, "links.pairs[0].gbps"),
    ("nan-pair-bandwidth", "links.pairs.0.gbps", math.nan, "links.pairs[0].gbps"),
    ("unknown-region-in-pair-a", "links.pairs.0.a", "Z", "links.pairs[0].a"),
    ("unknown-region-in-pair-b", "links.pairs.0.b", "Nowhere", "links.pairs[0].b"),
    ("pair-typo", "links.pairs.0.gpbs", 3, "links.pairs[0].gpbs"),
    ("unknown-model-in-job", "jobs.1.model", "GPT-9", "jobs[1].model"),
    ("unknown-dataset-in-job", "jobs.0.dataset", "nope", "jobs[0].dataset"),
    ("job-model-missing", "jobs.0.model", _DELETE, "jobs[0].model"),
    ("negative-submit", "jobs.1.submit_h", -1.0, "jobs[1].submit_h"),
    ("job-typo", "jobs.0.submit_hours", 1.0, "jobs[0].submit_hours"),
    ("model-layers-missing", "models.0.layers", _DELETE, "models[0].layers"),
    ("model-params-string", "models.0.params", "1e9", "models[0].params"),
    ("model-zero-hidden", "models.0.hidden", 0, "models[0].hidden"),
    ("dataset-zero-samples", "datasets.0.samples", 0, "datasets[0].samples"),
    ("mfu-above-one", "constants.mfu", 1.5, "constants.mfu"),
    ("zero-power", "constants.power_kw", 0, "constants.power_kw"),
    ("regions-missing", "regions", _DELETE, "regions"),
    ("regions-empty", "regions", [], "regions"),
    ("links-missing", "links", _DELETE, "links"),
    ("latency-shape", "latency_ms", [[0, 1, 2], [1, 0, 2]], "latency_ms"),
    ("negative-latency", "latency_ms", [[0, -1], [1, 0]], "latency_ms[0][1]"),
]


@pytest.mark.parametrize(("path", "value", "field"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_names_the_field(path: str, value: Any, field: str) -> None:
    spec = _set(_minimal(), path, value)
    with pytest.raises(ScenarioError) as err:
        build_scenario(spec)
    assert err.value.field == field, str(err.value)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize(
    ("links", "field"),
    [
        ({"matrix_gbps": [[0, 1, 2], [1, 0, 2]]}, "links.matrix_gbps"),  # not square
        ({"matrix_gbps": [[0, 1, 2], [1, 0, 2], [1, 1, 0]]}, "links.matrix_gbps"),  # 3x3 for K=2
        ({"matrix_gbps": [[0, 1], [1]]}, "links.matrix_gbps"),  # ragged
        ({"matrix_gbps": [[0, -1], [1, 0]]}, "links.matrix_gbps[0][1]"),
        ({"matrix_gbps": [[0, 1], [math.nan, 0]]}, "links.matrix_gbps[1][0]"),
        ({"matrix_gbps": [[0, 1], [math.inf, 0]]}, "links.matrix_gbps[1][0]"),
        ({"rule": "median"}, "links.rule"),
        ({}, "links"),
        ({"rule": "mean", "matrix_gbps": [[0, 1], [1, 0]]}, "links"),
        ({"pairs": [{"a": "X", "b": "X", "gbps": 1}]}, "links.pairs[0].b"),
        ({"pairs": [{"a": "X", "b": "Y", "gbps": 1, "mbps": 1}]}, "links.pairs[0]"),
        ({"pairs": [{"a": "X", "b": "Y"}]}, "links.pairs[0]"),
        ({"pairs": [{"a": "X", "b": "Y", "gbps": 1}], "symmetric": "yes"}, "links.symmetric"),
    ],
)
def test_bad_links(links: dict[str, Any], field: str) -> None:
    spec = _set(_minimal(), "links", links)
    with pytest.raises(ScenarioError) as err:
        build_scenario(spec)
    assert err.value.field == field, str(err.value)


def test_mean_rule_needs_region_bandwidth() -> None:
    spec = _set(_minimal(), "links", {"rule": "mean"})
    spec = _set(
        spec, "regions.1", {"name": "Y", "gpus": 2, "price_usd_per_kwh": 0.2, "intra_gbps": 100}
    )
    with pytest.raises(ScenarioError) as err:
        build_scenario(spec)
    assert err.value.field == "regions[1].bandwidth_gbps"


def test_region_without_any_bandwidth() -> None:
    spec = _set(_minimal(), "regions.0.bandwidth_gbps", _DELETE)
    with pytest.raises(ScenarioError) as err:
        build_scenario(spec)
    assert err.value.field == "regions[0].intra_gbps"


def test_duplicate_region_names() -> None:
    # The duplicate is reported at the region itself, before any link pair names it.
    spec = _set(_minimal(), "regions.1.name", "X")
    with pytest.raises(ScenarioError) as err:
        build_scenario(spec)
    assert err.value.field == "regions[1].name"
    assert err.value.value == "X"


def test_both_jobs_and_workload() -> None:
    spec = _minimal()
    spec["workload"] = {"n_jobs": 2}
    with pytest.raises(ScenarioError) as err:
        build_scenario(spec)
    assert err.value.field == "jobs"


def test_neither_jobs_nor_workload() -> None:
    spec = _set(_minimal(), "jobs", _DELETE)
    with pytest.raises(ScenarioError) as err:
        build_scenario(spec)
    assert err.value.field == "jobs"


@pytest.mark.parametrize(
    ("workload", "field"),
    [
        ({}, "workload.n_jobs"),
        ({"n_jobs": 0}, "workload.n_jobs"),
        ({"n_jobs": 2, "models": "nonexistent"}, "workload.models"),
        ({"n_jobs": 2, "datasets": 3}, "workload.datasets"),
        ({"n_jobs": 2, "arrival_rate_per_h": 0}, "workload.arrival_rate_per_h"),
        ({"n_jobs": 2, "jobs": 3}, "workload.jobs"),
    ],
)
def test_bad_workload(workload: dict[str, Any], field: str) -> None:
    spec = _set(_minimal(), "jobs", _DELETE)
    spec["workload"] = workload
    with pytest.raises(ScenarioError) as err:
        build_scenario(spec)
    assert err.value.field == field, str(err.value)


def test_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"name": "x", "regions": [')
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert err.value.field == "scenario"
    assert "JSON" in str(err.value)


def test_invalid_toml(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("name = \n[[regions]")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert err.value.field == "scenario"


def test_json_top_level_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text("[1, 2]")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert err.value.field == "scenario"


def test_nonexistent_file(tmp_path: Path) -> None:
    for source in ("no-such-scenario", str(tmp_path / "missing.json"), tmp_path / "gone.toml"):
        with pytest.raises(ScenarioError) as err:
            load_scenario(source)
        assert err.value.field == "scenario"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"bandwidth_scale": 0}, "bandwidth_scale"),
        ({"bandwidth_scale": -0.5}, "bandwidth_scale"),
        ({"bandwidth_scale": math.nan}, "bandwidth_scale"),
        ({"gpu_scale": 0}, "gpu_scale"),
        ({"gpu_scale": -1}, "gpu_scale"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"n_jobs": -2}, "n_jobs"),
        ({"n_jobs": 2.5}, "n_jobs"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_knobs(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ScenarioError) as err:
        load_scenario("paper", **kwargs)
    assert err.value.field == field
    with pytest.raises(ScenarioError):
        build_scenario(_minimal(), **kwargs)


def test_not_a_mapping() -> None:
    with pytest.raises(ScenarioError) as err:
        build_scenario([1, 2])  # type: ignore[arg-type]
    assert err.value.field == "scenario"


def test_error_message_names_field_and_value() -> None:
    with pytest.raises(ScenarioError) as err:
        build_scenario(_set(_minimal(), "regions.0.gpus", -7))
    msg = str(err.value)
    assert "regions[0].gpus" in msg
    assert "-7" in msg
    assert err.value.value == -7


def test_model_batch_not_a_multiple_of_micro_batch_names_the_file_field() -> None:
    # The model's batch (16) is not a multiple of constants.micro_batch (3). The error should
    # point into the file (errors.ValidationError: "a dotted path to the offending entry"),
    # i.e. models[0].batch or constants.micro_batch -- not the internal "job 1.batch".
    spec = _set(_minimal(), "constants.micro_batch", 3)
    with pytest.raises(ScenarioError) as err:
        build_scenario(spec)
    assert err.value.field in {"models[0].batch", "constants.micro_batch"}, str(err.value)


def test_job_batch_not_a_multiple_of_micro_batch_names_the_file_field() -> None:
    spec = _set(_set(_minimal(), "constants.micro_batch", 2), "jobs.1.batch", 7)
    with pytest.raises(ScenarioError) as err:
        build_scenario(spec)
    assert err.value.field == "jobs[1].batch", str(err.value)


def test_paper_aws_uses_the_measured_throughput_and_table_ii_otherwise() -> None:
    aws = load_scenario("paper-aws")
    paper = load_scenario("paper")
    assert aws.cluster.names == paper.cluster.names
    assert aws.cluster.capacity == paper.cluster.capacity
    assert aws.cluster.prices == paper.cluster.prices
    for a, b in zip(aws.cluster.regions, paper.cluster.regions):
        assert a.intra_bandwidth == b.intra_bandwidth  # Table II's B_i, e.g. 50 Gbps for EU-West
    bw = aws.cluster.bandwidth
    gbps = 1e9 / 8
    # skyplane throughput.csv: eu-west-1 -> us-east-2 4.24 Gbps; ap-southeast-2 -> eu-west-1
    # 2.62 Gbps; ap-northeast-1 -> eu-central-1 2.90 but eu-central-1 -> ap-northeast-1 2.87.
    assert bw[0, 1] == pytest.approx(4.24 * gbps)
    assert bw[5, 0] == pytest.approx(2.62 * gbps)
    assert bw[3, 2] == pytest.approx(2.90 * gbps)
    assert bw[2, 3] == pytest.approx(2.87 * gbps)
    assert np.all(np.diag(bw) == 0.0)
    off = bw[~np.eye(6, dtype=bool)]
    assert off.min() == pytest.approx(2.59 * gbps) and off.max() == pytest.approx(4.66 * gbps)
    assert np.all(aws.cluster.latency == 0.0)


def test_a_template_that_draws_nothing_shares_its_jobs_and_tariff_across_seeds() -> None:
    """fig1 lists its jobs and fixes its start hour: every seed's scenario is the same but for
    params["seed"], so one template hands every seed the same (immutable) jobs and tariff, equal
    to what a fresh template builds; paper draws its datasets and gets fresh jobs per seed."""
    from bacepipe_env.scenarios.loader import compile_scenario, load_scenario_spec

    fig1 = compile_scenario(load_scenario_spec("fig1"))
    a, b = fig1.materialize(1), fig1.materialize(2)
    assert a.jobs is b.jobs and a.tariff is b.tariff
    assert (a.params["seed"], b.params["seed"]) == (1, 2)
    fresh = compile_scenario(load_scenario_spec("fig1")).materialize(2)
    assert fresh.jobs == b.jobs and fresh.params == b.params
    assert fresh.tariff.prices == b.tariff.prices and fresh.tariff.carbon == b.tariff.carbon
    paper = compile_scenario(load_scenario_spec("paper"))
    p1, p2 = paper.materialize(1), paper.materialize(1)
    assert p1.jobs is not p2.jobs and p1.jobs == p2.jobs  # drawn again, the same draw
    assert p1.tariff is p2.tariff  # the fixed start hour's tariff is still shared
