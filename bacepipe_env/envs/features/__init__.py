"""The observation as a feature table: one entry per array, read by the encoder, the spaces,
the docs and the tests.

:data:`FEATURES` lists the observation's float arrays (``regions``, ``bandwidth``, ``queue``,
``summary``, and the optional ``grid``, ``region_faults``, ``link_faults``, ``running``,
``release``, ``wait_preview``, ``running_jobs`` and ``announced``). The package keeps one concept
per module:

- :mod:`.table`: the table itself (:class:`Feature`, :class:`Column`, every array's columns,
  :data:`FEATURES`), :func:`active_features` and :func:`markdown_table`, which writes the
  Observation tables of ``docs/environment.md``;
- :mod:`.encoder`: :class:`ObservationEncoder`, which runs the active arrays' functions at each
  :class:`Decision` (:mod:`.decision`);
- the arrays' functions by concept: :mod:`.cluster` (``regions``, ``bandwidth``, ``summary``),
  :mod:`.pending` (``queue``, ``wait_preview``), :mod:`.running` (``running``, ``release``,
  ``running_jobs``), :mod:`.grid`, :mod:`.faults` and :mod:`.announced`, and :mod:`.deadlines`
  (the optional deadline columns of the ``queue`` and ``announced`` rows);
- :mod:`.layouts`: the Gymnasium spaces (:func:`observation_space`, :func:`flat_space`) and the
  ``"flat"`` and ``"masked"`` layouts.

Every value is float32, brought to O(1) by :class:`~bacepipe_env.envs.config.ObsScales`, and
>= 0 except ``grid``'s ``price_now``: an hourly electricity price can be negative, so that
column's Box bound is ``-inf``; and, with ``deadline_features``, the time to a deadline and the
slack, which are negative once a job is late or cannot make it (Box bound ``-inf`` too).
The observation holds only what a real scheduler knows: no future arrivals (but the announced
ones, the scenario's calendar), no future prices, no future faults.
"""

from __future__ import annotations

from .decision import Decision, PreemptionWindow
from .encoder import ObservationEncoder
from .layouts import flat_space, flatten, layout, layout_space, observation_space
from .table import (
    ANNOUNCED_FEATURES,
    BANDWIDTH_LAYERS,
    DEADLINE_FEATURES,
    FEATURES,
    GRID_FEATURES,
    LINK_FAULT_LAYERS,
    OPTIONAL_FEATURES,
    QUEUE_FEATURES,
    REGION_FAULT_FEATURES,
    REGION_FEATURES,
    RELEASE_FEATURES,
    RUNNING_FEATURES,
    RUNNING_JOB_FEATURES,
    SUMMARY_FEATURES,
    WAIT_PREVIEW_FEATURES,
    Column,
    Feature,
    active_features,
    feature,
    markdown_table,
)

__all__ = [
    "ANNOUNCED_FEATURES",
    "BANDWIDTH_LAYERS",
    "DEADLINE_FEATURES",
    "FEATURES",
    "GRID_FEATURES",
    "LINK_FAULT_LAYERS",
    "OPTIONAL_FEATURES",
    "QUEUE_FEATURES",
    "REGION_FAULT_FEATURES",
    "REGION_FEATURES",
    "RELEASE_FEATURES",
    "RUNNING_FEATURES",
    "RUNNING_JOB_FEATURES",
    "SUMMARY_FEATURES",
    "WAIT_PREVIEW_FEATURES",
    "Column",
    "Decision",
    "Feature",
    "ObservationEncoder",
    "PreemptionWindow",
    "active_features",
    "feature",
    "flat_space",
    "flatten",
    "layout",
    "layout_space",
    "markdown_table",
    "observation_space",
]
