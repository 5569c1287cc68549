"""Re-running an experiment into the same folder replaces its TensorBoard points, and leaves
another experiment's events alone."""

from __future__ import annotations

from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from bacepipe_env.experiments import run_compare


def _steps(run_dir: Path, tag: str) -> list[int]:
    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    return [e.step for e in acc.Scalars(tag)]


def test_rerun_replaces_points_and_keeps_other_experiments(tmp_path: Path) -> None:
    seeds = [0, 1]
    run_compare("fig1", ["bace-pipe", "lcf"], seeds, tmp_path, name="ablation")
    run_compare("fig1", ["bace-pipe", "lcf"], seeds, tmp_path)
    run_compare("fig1", ["bace-pipe", "lcf"], seeds, tmp_path)
    for policy in ("bace-pipe", "lcf"):
        run_dir = tmp_path / "tb" / policy
        # Two compare runs wrote here, but only the last one's points remain: one per seed.
        assert _steps(run_dir, "compare/avg_jct_h") == seeds
        # The ablation's events, written into the same run folder, are untouched.
        assert _steps(run_dir, "ablation/avg_jct_h") == seeds
