"""One job-count limit for the simulator (issue 25): 10,000,000 jobs (``MAX_JOBS``), the same
for a file's explicit job list (counted before any row is read), a workload rule, the ``n_jobs``
knob, synthetic scenarios and the random generator; and a workload the machine's free memory
cannot hold is refused in one line before a job is built."""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np
import pytest

from bacepipe_env.core import Cluster, Region, Scenario
from bacepipe_env.core import limits as limits_module
from bacepipe_env.core import scenario as scenario_module
from bacepipe_env.core.job import Job, ModelSpec
from bacepipe_env.core.limits import (
    BYTES_PER_JOB,
    BYTES_PER_MEMO_CELL,
    BYTES_PER_REGION_PAIR,
    LIMITS,
    MAX_JOBS,
    MEMO_CELLS,
    MEMORY_MARGIN,
    available_memory,
    check_memory,
    memory_estimate,
)
from bacepipe_env.core.world import World
from bacepipe_env.errors import ScenarioError
from bacepipe_env.scenarios import load_scenario
from bacepipe_env.scenarios.generators import RandomScenarioGenerator, synthetic_scenario
from bacepipe_env.scenarios.loader import compile_scenario, load_scenario_spec

PAPER = load_scenario_spec("paper")
MODEL, DATASET = PAPER["models"][0]["name"], PAPER["datasets"][0]["name"]
TOO_MANY = "must be in [1, 10,000,000] jobs (got 10000001)"


def _listed(rows: list[Any]) -> dict[str, Any]:
    """The paper's world with an explicit job list instead of its workload rule."""
    spec = {k: v for k, v in PAPER.items() if k != "workload"}
    spec["jobs"] = rows
    return spec


def test_the_limit_is_ten_million_jobs() -> None:
    assert MAX_JOBS == 10_000_000
    assert LIMITS["workload.n_jobs"].high == MAX_JOBS
    assert LIMITS["workload.n_jobs"].text() == "[1, 10,000,000]"


def test_a_list_of_10_000_001_jobs_is_refused_before_a_row_is_read() -> None:
    """Every row is the same invalid one (an unknown key): had any row been read, the error
    would name jobs[0]; the count is refused first, in well under a second. The list holds one
    dict 10,000,001 times (80 MB of pointers), the compact form of a huge list."""
    rows = [{"model": MODEL, "dataset": DATASET, "bogus": 1}] * 10_000_001
    start = time.perf_counter()
    with pytest.raises(ScenarioError) as err:
        compile_scenario(_listed(rows))
    assert time.perf_counter() - start < 1.0
    assert str(err.value) == f"jobs: {TOO_MANY}"
    assert err.value.field == "jobs"


def test_a_list_of_100_001_jobs_is_no_longer_refused() -> None:
    """The old limit (the environments' window, 100,000) no longer caps the simulator."""
    rows = [{"model": MODEL, "dataset": DATASET}] * 100_001
    template = compile_scenario(_listed(rows))
    assert template.rows is not None and len(template.rows) == 100_001


@pytest.mark.parametrize(
    ("spec", "knobs", "field"),
    [
        ({**PAPER, "workload": dict(PAPER["workload"], n_jobs=10_000_001)}, {}, "workload.n_jobs"),
        (PAPER, {"n_jobs": 10_000_001}, "n_jobs"),
        (_listed([{"model": MODEL, "dataset": DATASET}]), {"n_jobs": 10_000_001}, "n_jobs"),
    ],
)
def test_every_route_to_more_jobs_meets_the_same_limit(
    spec: dict[str, Any], knobs: dict[str, Any], field: str
) -> None:
    with pytest.raises(ScenarioError) as err:
        compile_scenario(spec, **knobs)
    assert str(err.value) == f"{field}: {TOO_MANY}"


def test_synthetic_scenarios_and_the_random_generator_meet_it_too() -> None:
    with pytest.raises(ScenarioError) as err:
        synthetic_scenario(4, 10_000_001)
    assert str(err.value) == f"n_jobs: {TOO_MANY}"
    with pytest.raises(ScenarioError) as err:
        RandomScenarioGenerator(n_jobs=(1, 10_000_001), p_batch=1.0)
    assert str(err.value) == f"n_jobs[1]: {TOO_MANY}"
    with pytest.raises(ScenarioError) as err:
        RandomScenarioGenerator(n_jobs=(10_000_001, 10_000_002), p_batch=1.0)
    assert str(err.value) == f"n_jobs[0]: {TOO_MANY}"
    with pytest.raises(ScenarioError, match=r"^n_jobs\[1\]: must be >= 8 \(got 4\)$"):
        RandomScenarioGenerator(n_jobs=(8, 4))


def test_a_scenario_built_by_hand_is_held_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Scenario itself is the backstop (with the limit patched to 2, three jobs)."""
    monkeypatch.setattr(scenario_module, "MAX_JOBS", 2)
    cluster = Cluster((Region("R", 4, 0.1, 1e9),), np.zeros((1, 1)))
    jobs = tuple(Job(i, ModelSpec("m", 1e6, 1, 1), "d", 10, 1) for i in (1, 2, 3))
    with pytest.raises(ScenarioError) as err:
        Scenario("three", cluster, jobs, World(ignore_memory=True))
    assert str(err.value) == "jobs: a scenario holds at most 2 jobs (MAX_JOBS) (got 3)"


# ------------------------------------------------------------------------------ memory


def test_the_estimate_is_bytes_per_job_and_per_region_pair_and_the_memo() -> None:
    # 1,000,000 jobs on 256 regions: 1e6 x 3,400 + 65,536 pairs x 128, and the memo full
    # (256e6 values > 4,194,304): 4,194,304 x 48
    assert (BYTES_PER_JOB, BYTES_PER_REGION_PAIR) == (3_400, 128)
    assert (MEMO_CELLS, BYTES_PER_MEMO_CELL) == (4_194_304, 48)
    assert memory_estimate(1_000_000, 256) == 3_400_000_000 + 8_388_608 + 201_326_592
    # 1,000 jobs on 8 regions: 3,400,000 + 64 x 128 + 8,000 values x 48
    assert memory_estimate(1_000, 8) == 3_400_000 + 8_192 + 384_000
    assert memory_estimate(0, 0) == 0
    assert MEMORY_MARGIN == 1.5


def test_available_memory_reads_the_machine() -> None:
    free = available_memory()
    if free is not None:  # Linux: MemAvailable, no more than the machine has
        assert 0 < free <= 2**50


def _small_machine(monkeypatch: pytest.MonkeyPatch, free: int | None) -> None:
    """A machine whose /proc/meminfo says ``free`` bytes are available, with no other limit."""
    monkeypatch.setattr(limits_module, "_meminfo_available", lambda: free)
    monkeypatch.setattr(limits_module, "_address_space_left", lambda: None)
    if free is None:
        monkeypatch.setattr(limits_module, "_sysconf_available", lambda: None)


def test_a_workload_larger_than_the_free_memory_is_refused_before_it_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """1,000,000 jobs on the paper's 6 regions need 3.4e9 + 36 x 128 + 4,194,304 x 48 bytes
    (3.6 GB); with 100 MB available the loader refuses them in one line, before drawing a job
    (so at once)."""
    _small_machine(monkeypatch, 100_000_000)
    need = 3_400_000_000 + 36 * 128 + 4_194_304 * 48
    assert f"{need / 1e9:,.1f}" == "3.6"
    want = (
        f"1,000,000 jobs on 6 regions need about {need / 1e9:,.1f} GB of memory "
        "(core.limits.memory_estimate), 100 MB available; simulate fewer jobs (got 1000000)"
    )
    start = time.perf_counter()
    with pytest.raises(ScenarioError) as err:
        load_scenario("paper", n_jobs=1_000_000)
    assert time.perf_counter() - start < 1.0
    assert str(err.value) == f"n_jobs: {want}"
    spec = copy.deepcopy(PAPER)
    spec["workload"]["n_jobs"] = 1_000_000
    with pytest.raises(ScenarioError) as err:
        load_scenario(spec)
    assert str(err.value) == f"workload.n_jobs: {want}"
    rows = [{"model": MODEL, "dataset": DATASET}] * 1_000_000
    with pytest.raises(ScenarioError) as err:
        load_scenario(_listed(rows))
    assert str(err.value) == f"jobs: {want}"


def test_the_random_generator_checks_its_largest_episode_when_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Up to 200,000 jobs on up to 8 regions: 200,000 x 3,400 x 1.5 = 1.02 GB > 100 MB."""
    _small_machine(monkeypatch, 100_000_000)
    with pytest.raises(ScenarioError, match=r"^n_jobs\[1\]: 200,000 jobs on 8 regions need"):
        RandomScenarioGenerator(n_jobs=(1, 200_000), p_batch=1.0)
    RandomScenarioGenerator(n_jobs=(1, 16))  # a small one fits


def test_the_margin_decides_at_the_edge(monkeypatch: pytest.MonkeyPatch) -> None:
    need = memory_estimate(10_000, 4)
    _small_machine(monkeypatch, int(need * MEMORY_MARGIN))
    check_memory(10_000, 4)  # exactly enough
    _small_machine(monkeypatch, int(need * MEMORY_MARGIN) - 1)
    with pytest.raises(ScenarioError, match=r"^n_jobs: 10,000 jobs on 4 regions need about"):
        check_memory(10_000, 4)


def test_without_a_source_of_free_memory_the_check_is_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _small_machine(monkeypatch, None)
    assert available_memory() is None
    check_memory(MAX_JOBS, 1_000)  # nothing to compare with: no error


def test_an_address_space_limit_caps_the_free_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ulimit -v`` (where a large allocation fails with MemoryError) counts as well."""
    monkeypatch.setattr(limits_module, "_meminfo_available", lambda: 10**12)
    monkeypatch.setattr(limits_module, "_address_space_left", lambda: 5 * 10**8)
    assert available_memory() == 5 * 10**8
