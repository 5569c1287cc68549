"""A job's ``min_replicas`` the world cannot give is a one-line error naming the job and the
limit (issue 44): it used to run fewer copies than its minimum, exit 0."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bacepipe_env.cli import main
from bacepipe_env.errors import ScenarioError, ValidationError
from bacepipe_env.scenarios import build_scenario

# One region of 8 GPUs; model DP has batch 4 and micro_batch 1, so 4 micro-batches.
CONSTANTS = {"seq_len": 1, "micro_batch": 1, "peak_tflops": 0.001, "mfu": 1.0, "power_kw": 0.5}
MODEL = {"name": "DP", "params": 3e9, "layers": 2, "hidden": 500_000_000, "batch": 4}


def _spec(job: dict[str, Any], *, max_replicas: int, batch: int = 4) -> dict[str, Any]:
    return {
        "name": "dp-min",
        "model": "physical",
        "scheduler_model": "world",
        "recompute": False,
        "ignore_memory": True,
        "max_replicas": max_replicas,
        "constants": CONSTANTS,
        "regions": [{"name": "R0", "gpus": 8, "price_usd_per_kwh": 0.1, "intra_gbps": 8}],
        "links": {"matrix_gbps": [[0]]},
        "models": [{**MODEL, "batch": batch}],
        "datasets": [{"name": "D", "samples": 400}],
        "jobs": [{"model": "DP", "dataset": "D", **job}],
    }


WORLD_CAP = (
    "job 1.min_replicas: must be at most the world's max_replicas (2), which the job takes "
    "as it declares none (got 3)"
)
# batch 2 / micro_batch 1 = 2 micro-batches, under a world cap of 8 that does not bind
MICRO_CAP = (
    "job 1.min_replicas: must be at most the job's 2 micro-batches (batch 2 / micro_batch 1); "
    "a copy runs at least one (got 4)"
)


@pytest.mark.parametrize(
    ("job", "world", "batch", "message"),
    [
        ({"min_replicas": 3}, 2, 4, WORLD_CAP),
        ({"min_replicas": 4}, 8, 2, MICRO_CAP),
        ({"min_replicas": 4, "max_replicas": 4}, 2, 2, MICRO_CAP),  # its own max: same cap
    ],
)
def test_a_minimum_above_the_limit_is_one_validation_error(job, world, batch, message) -> None:
    with pytest.raises(ScenarioError) as err:
        build_scenario(_spec(job, max_replicas=world, batch=batch))
    assert isinstance(err.value, ValidationError)
    assert str(err.value) == message


def test_the_cli_refuses_it_with_one_line_and_exit_2(tmp_path, capsys) -> None:
    path = tmp_path / "dp3.json"
    path.write_text(json.dumps(_spec({"min_replicas": 3}, max_replicas=2)))
    assert main(["simulate", "--scenario", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [f"bacepipe: error: {WORLD_CAP}"]
    # the same file with a world that allows 3 copies runs, and the flag is the world's
    assert main(["simulate", "--scenario", str(path), "--max-replicas", "3"]) == 0


def test_minimums_the_world_can_give_are_kept() -> None:
    """Its own ``max_replicas`` overrides the world's (semantics §3e): 3 copies under a world
    cap of 2 is allowed; a minimum at the cap is kept as it is."""
    own = build_scenario(_spec({"min_replicas": 3, "max_replicas": 3}, max_replicas=2))
    assert own.replica_ranges == {1: (3, 3)}
    at_cap = build_scenario(_spec({"min_replicas": 2}, max_replicas=2))
    assert at_cap.replica_ranges == {1: (2, 2)}
    # a maximum above the micro-batches is cut to them (4), a cap rather than a promise
    cut = build_scenario(_spec({"max_replicas": 8}, max_replicas=1))
    assert cut.replica_ranges == {1: (1, 4)}
