"""Where a :class:`~bacepipe_env.envs.geopipe.GeoPipeEnv` stops: the next decision with a legal
action, and what it shows there (the window, its placement previews and counts of copies, the
mask, the preemption window). The simulator decides what a decision is; this module only
runs it to one the agent can act on."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core.placement import Placement
from ..core.simulator import Simulator
from ..core.snapshot import QueueSnapshot
from .copies import copy_options, default_copies
from .features import PreemptionWindow
from .previews import PlacementPreviewer, Preview
from .settings import EnvSettings

__all__ = ["DecisionPoint", "next_decision"]


class DecisionPoint(NamedTuple):
    """What the agent sees at one decision (all empty at the episode's end)."""

    queue: QueueSnapshot  # the visible window
    previews: list[Preview | None]  # per slot: the placement it would start on, or None
    # per slot, the placement per count of copies (1 .. replica_choices), or its default
    # count's alone without replica_choices; empty without previews
    copies: list[list[Placement | None]]
    mask: np.ndarray  # int8, one per action
    preemption: PreemptionWindow | None  # the preempt actions' window (preempt_window)


def next_decision(sim: Simulator, s: EnvSettings, previewer: PlacementPreviewer) -> DecisionPoint:
    """Advance ``sim`` to a state with at least one legal action, or to the end. A pass where
    nothing visible can start is declined (the simulator moves on to the next event); the end
    of a pass where preempting a job of the window would let a pending job start is a decision
    to preempt (with ``preempt_window``)."""
    mask = np.zeros(s.n_actions, dtype=np.int8)
    window: tuple[int, ...] = ()
    previews: list[Preview | None] = []
    copies: list[list[Placement | None]] = []
    preempting: PreemptionWindow | None = None
    r = s.replica_choices
    while (candidates := sim.next_decision()) is not None:
        if not candidates:  # the end of a pass where a preemption lets a job start
            preempting = _preemption_decision(sim, s, mask)
            if preempting is not None:
                break
            sim.defer()  # no job of the window would help: on to the next event
            continue
        window = candidates[: s.max_queue]
        if not s.preview:  # every slot (and count in the job's range) untested: legal
            previews = [None] * len(window)
            if r:
                ranges = [sim.replica_range(j) for j in window]
                legal = [lo <= d <= hi for lo, hi in ranges for d in range(1, r + 1)]
                mask[: len(legal)] = legal
            else:
                mask[: len(window)] = 1
            break
        previews = previewer(sim, window)
        if r:  # one action per slot and count of copies
            copies = copy_options(sim, window, previews, r)
        else:  # one per slot: its default count
            copies = [[default_copies(sim, j, pv)] for j, pv in zip(window, previews)]
        legal = [p is not None for row in copies for p in row]
        if True in legal:
            mask[: len(legal)] = legal
            break
        sim.decline(window)  # nothing visible can start: it waits for the next event
        window, previews, copies = (), [], []
    if sim.has_future_events and (preempting or (window and s.allow_wait)):
        mask[s.n_place] = 1
    if s.preempt_window and preempting is None and not sim.done:
        preempting = PreemptionWindow(sim.running[: s.preempt_window], s.n_place + 1)
    return DecisionPoint(QueueSnapshot.from_view(sim, window), previews, copies, mask, preempting)


def _preemption_decision(
    sim: Simulator, s: EnvSettings, mask: np.ndarray
) -> PreemptionWindow | None:
    """The window of a decision to preempt, its legal slots set in ``mask``; None when no job
    of the window has a beneficiary."""
    view = sim.preemption_view().materialize()
    running = sim.running[: s.preempt_window]
    first = s.n_place + 1
    legal = [i for i, job in enumerate(running) if view.beneficiaries(job)]
    if not legal:
        return None
    mask[[first + i for i in legal]] = 1
    return PreemptionWindow(running, first, view)
