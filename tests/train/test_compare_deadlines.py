"""A heuristic's TensorBoard run (train compare, the overlay callback) carries the deadline
miss rate where the episodes have deadlines (semantics §15), and only there: a real event file
read back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from train_helpers import accumulator, f32

from bacepipe_env.train.compare import evaluate_heuristic, write_heuristic

DEADLINE_ID = "bacepipe_env/GeoPipe-Online-Deadline-v0"


def test_a_heuristic_run_logs_the_miss_rate_only_with_deadlines(tmp_path: Path) -> None:
    seeds = [3_000_000, 3_000_001]
    for env_id, deadlines in ((DEADLINE_ID, True), ("bacepipe_env/GeoPipe-Online-v1", False)):
        placement, values = evaluate_heuristic(env_id, "edf+finish-aware", {"n_jobs": 12}, seeds)
        run = tmp_path / env_id.split("/")[1]
        write_heuristic(run, "edf+finish-aware", placement, env_id, seeds, values, [0, 100])
        tags = accumulator(run).Tags()["scalars"]
        assert ("eval/miss_rate" in tags) == deadlines
        assert "eval/avg_jct_h" in tags
        if deadlines:
            rates = values["miss_rate"]
            assert all(0.0 <= r <= 1.0 for r in rates)
            logged = [e.value for e in accumulator(run).Scalars("eval/miss_rate")]
            assert logged == [f32(float(np.mean(rates)))] * 2
