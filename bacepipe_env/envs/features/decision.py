"""What the observation encoder reads at one decision: the :class:`Decision` the environment
hands it, and the :class:`PreemptionWindow` of the running jobs its preempt actions cover."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ...core.placement import Placement
from ...core.preemption import PreemptionView
from ...core.simulator import Simulator
from ...core.snapshot import QueueSnapshot
from ..previews import PlacementPreviewer, Preview

__all__ = ["Decision", "PreemptionWindow"]


@dataclass(frozen=True)
class PreemptionWindow:
    """The running jobs an agent may preempt at one decision: the first ``preempt_window``
    running jobs in start order (``job_ids``, slot order), the action of slot 0
    (``first_action``; slot i is ``first_action + i``), and, at a decision to preempt (the end
    of a scheduling pass), the simulator's :class:`~bacepipe_env.core.preemption.PreemptionView`
    with every beneficiary computed (None at a decision to place a job)."""

    job_ids: tuple[int, ...]
    first_action: int
    view: PreemptionView | None = None

    def action(self, job_id: int) -> int | None:
        """The action that preempts ``job_id``, or None if it is outside the window."""
        try:
            return self.first_action + self.job_ids.index(job_id)
        except ValueError:
            return None


class Decision(NamedTuple):
    """What the encoder reads at one decision point."""

    sim: Simulator
    queue: QueueSnapshot  # the visible window's jobs, in slot order
    previews: Sequence[Preview | None]  # per window slot; None: no placement that can start
    previewer: PlacementPreviewer | None = None  # its memo serves ``wait_preview``
    preemption: PreemptionWindow | None = None  # the preempt actions' window (if any)
    # per window slot, the placement with 1, 2, ... data-parallel copies (None: not legal; its
    # default count's alone without replica actions); empty without previews
    copies: Sequence[Sequence[Placement | None]] = ()
