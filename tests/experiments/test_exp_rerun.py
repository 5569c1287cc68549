"""Re-running an experiment into the same folder replaces its TensorBoard sessions, and leaves
another experiment's events alone."""

from __future__ import annotations

from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from bacepipe_env.experiments import run_compare
from bacepipe_env.experiments.tensorboard import ScalarWriter


def _steps(run_dir: Path, tag: str) -> list[int]:
    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    return [e.step for e in acc.Scalars(tag)]


def test_rerun_replaces_points_and_keeps_other_experiments(tmp_path: Path) -> None:
    seeds = [0, 1]
    # A file of the earlier flat layout (tb/<policy>/...compare) goes at the next compare.
    with ScalarWriter(tmp_path / "tb" / "lcf", suffix=".compare") as old:
        old.add_scalar("compare/avg_jct_h", 1.0, 0)
    run_compare("fig1", ["bace-pipe", "lcf"], seeds, tmp_path, name="ablation")
    run_compare("fig1", ["bace-pipe", "lcf", "ldf"], seeds, tmp_path)
    run_compare("fig1", ["bace-pipe", "lcf"], seeds, tmp_path)
    assert not old.path.exists()
    for policy in ("bace-pipe", "lcf"):
        # Two compare runs wrote here, but only the last one's session remains: one point.
        run_dir = tmp_path / "tb" / "compare" / "fig1" / policy
        assert len(list(run_dir.glob("events.out.tfevents.*.compare"))) == 1
        assert _steps(run_dir, "compare/avg_jct_h") == [0]
        # The ablation's events, in their own folder, are untouched.
        assert _steps(tmp_path / "tb" / "ablation" / "fig1" / policy, "ablation/avg_jct_h") == [0]
    # A policy the last compare no longer ran has no session left.
    assert sorted(p.name for p in (tmp_path / "tb" / "compare" / "fig1").iterdir()) == [
        "bace-pipe",
        "lcf",
    ]
