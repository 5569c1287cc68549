"""The placements a job could start on with each count of data-parallel copies of its pipeline
(semantics §3e): what :class:`~bacepipe_env.envs.geopipe.GeoPipeEnv`'s ``replica_choices``
actions offer. The first copy is the placement preview's; the others are placed by the
simulator's placement policy (:meth:`~bacepipe_env.core.state.SimulationState.replicate`),
once per job shape and count at a decision."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.placement import Placement
from ..core.simulator import Simulator
from .previews import Preview

__all__ = ["copy_options", "default_copies"]


def copy_options(
    sim: Simulator, window: Sequence[int], previews: Sequence[Preview | None], choices: int
) -> list[list[Placement | None]]:
    """Per slot of ``window``, the placement with 1 .. ``choices`` copies, None where the job
    may not run that many (outside its range) or they get no placement now."""
    memo: dict[tuple[object, ...], Placement | None] = {}
    out: list[list[Placement | None]] = []
    for job, pv in zip(window, previews):
        low, high = sim.replica_range(job)
        row: list[Placement | None] = []
        for d in range(1, choices + 1):
            if pv is None or not low <= d <= high:
                row.append(None)
            elif d == 1:
                row.append(pv.placement)
            else:
                key = (sim.placement_shape(job), sim.profile(job).job.model.params, d)
                if key not in memo:
                    memo[key] = sim.replicate(job, pv.placement, d)
                row.append(memo[key])
        out.append(row)
    return out


def default_copies(sim: Simulator, job: int, preview: Preview | None) -> Placement | None:
    """The placement ``job`` starts on by default: its preview, with its ``min_replicas``
    copies (semantics §3e; the preview itself for a job of one pipeline)."""
    if preview is None:
        return None
    low = sim.replica_range(job)[0]
    return preview.placement if low == 1 else sim.replicate(job, preview.placement, low)
