"""A run's figures in one place: the :data:`METRICS` table, the twin of
:data:`~bacepipe_env.core.world.KNOBS`, that every output reads.

Each :class:`Metric` row says what a run's figure is (the :class:`~.records.RunResult`
attribute it reads, its unit) and where each output shows it: the summary of ``bacepipe
simulate`` (:func:`~bacepipe_env.experiments.summary.format_run`), the result's JSON
(:meth:`~.records.RunResult.to_dict`), the per-run CSV/JSON rows of the experiments
(:class:`~bacepipe_env.experiments.runner.RunSummary`), the per-policy statistics and the
compare table (:class:`~bacepipe_env.experiments.summary.PolicyStats`), the TensorBoard
HParams metrics, the env's last-step ``info`` (:func:`~bacepipe_env.envs.reward.episode_info`)
and an evaluated episode (:class:`~bacepipe_env.envs.agents.EpisodeResult`). ``show`` says
when the summaries and tables show it.

To add a metric, add a field to :class:`~.records.RunResult` (the simulator computes it) and a
row to :data:`METRICS`; every output then carries it (a :class:`RunSummary` field too when it
has a ``key``: an assertion there says so). Outputs list their metrics in :data:`METRICS`'
order, except where :data:`_LISTED` keeps the order an output had before the table; a metric
an output's list does not name follows the named ones, in table order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .units import hours

#: A :class:`~.records.RunResult` (which reads this module: not imported here).
RunResult = Any

__all__ = ["METRICS", "OUTPUTS", "SHOW", "Metric", "ordered"]

#: When the summaries and tables show a metric: always; when the run charged egress; when
#: attempts could end early (faults configured, or a preemption rule); under a preemption
#: rule; under an elasticity rule; when some job has a deadline (semantics §10, §11, §3c,
#: §3f, §15).
SHOW = ("always", "egress", "faults", "preemption", "elastic", "deadlines")

#: The outputs that read the table (the names :func:`ordered` takes).
OUTPUTS = ("summary", "json", "info", "row", "stats", "column", "tb", "episode")


@dataclass(frozen=True)
class Metric:
    """One run metric: its row of :data:`METRICS`.

    ``name`` is the :class:`~.records.RunResult` attribute (or property) it reads, unless
    ``get`` computes it from the result; ``unit`` is that value's unit (``s``: shown in hours
    wherever a key or label says ``h``; ``fraction``: shown as a percentage in the summary).
    ``label`` and ``fmt`` are the summary's line (empty: not in it) and ``na`` says when the
    summary shows the figure as unknown, and why. ``json`` and ``info`` are the result JSON's
    and the env info's keys: the value in its unit, then, for a time, a second key in hours.
    ``key`` is the per-run row's column and the :class:`RunSummary` field (in hours for a
    time); ``setting`` a run setting those rows write just before it. ``stat`` is the
    :class:`PolicyStats` field of its mean and CI over seeds, ``norm`` (and ``norm_key``,
    ``norm_label``) that of its ratio to the reference policy; ``column`` and ``column_fmt``
    its compare table column; ``tb`` whether TensorBoard's HParams table has it; ``episode``
    whether an evaluated episode carries it (under ``key``)."""

    name: str
    unit: str
    label: str = ""
    fmt: str = ""
    show: str = "always"
    json: tuple[str, ...] = ()
    info: tuple[str, ...] = ()
    key: str = ""
    setting: str = ""
    stat: str = ""
    column: str = ""
    column_fmt: str = ",.2f"
    norm: str = ""
    norm_key: str = ""
    norm_label: str = ""
    tb: bool = False
    episode: bool = False
    get: Callable[[RunResult], float] | None = None
    na: Callable[[RunResult], str] | None = None

    def value(self, result: RunResult) -> Any:
        """The figure of ``result``, in :attr:`unit`."""
        return getattr(result, self.name) if self.get is None else self.get(result)

    def shown(self, value: Any) -> Any:
        """``value`` in the unit the rows and tables show: hours for a time."""
        return hours(value) if self.unit == "s" else value

    def keyed(self, keys: tuple[str, ...], value: Any) -> Iterator[tuple[str, Any]]:
        """``(key, value)`` for the ``json`` or ``info`` keys: the value, then in hours."""
        for i, key in enumerate(keys):
            yield key, value if i == 0 else hours(value)

    def json_items(self, result: RunResult) -> Iterator[tuple[str, Any]]:
        """``(key, value)`` of the result's JSON: the :attr:`setting`, if any, then the
        :attr:`json` keys."""
        if self.setting:
            yield self.setting, getattr(result, self.setting)
        yield from self.keyed(self.json, self.value(result))

    def line(self, result: RunResult) -> str:
        """The summary's line: ``  average JCT      12.34 h``."""
        why = None if self.na is None else self.na(result)
        if why:
            return f"  {self.label:<16} {'n/a':>12} ({why})"
        value = self.value(result)
        unit = {"s": "h", "fraction": "%", "count": ""}.get(self.unit, self.unit)
        value = 100 * value if self.unit == "fraction" else self.shown(value)
        return f"  {self.label:<16} {value:{self.fmt}}" + (f" {unit}" if unit else "")


def _no_carbon(result: RunResult) -> str:
    """Flat carbon intensity of 0 in every region: the scenario carries no carbon data."""
    if result.prices == "flat" and result.total_carbon == 0 and result.records:
        return "the scenario has no carbon data"
    return ""


#: Every run metric, in the per-run rows' order (:class:`RunSummary`'s fields).
METRICS: Mapping[str, Metric] = {
    m.name: m
    for m in (
        Metric(
            "avg_jct",
            "s",
            "average JCT",
            "12.2f",
            json=("avg_jct_s", "avg_jct_h"),
            info=("episode_avg_jct_s", "episode_avg_jct_h"),
            key="avg_jct_h",
            stat="jct_h",
            column="avg JCT h",
            norm="jct_norm",
            norm_key="avg_jct_norm",
            norm_label="JCT",
            tb=True,
            episode=True,
        ),
        Metric(
            "total_cost",
            "$",
            "total cost",
            "12,.2f",
            json=("total_cost_usd",),
            info=("episode_total_cost_usd",),
            key="total_cost_usd",
            stat="cost_usd",
            column="total cost $",
            norm="cost_norm",
            norm_key="total_cost_norm",
            norm_label="cost",
            tb=True,
            episode=True,
        ),
        Metric(
            "makespan",
            "s",
            "makespan",
            "12.2f",
            json=("makespan_s", "makespan_h"),
            info=("episode_makespan_s",),
            key="makespan_h",
        ),
        Metric(
            "gpu_utilization",
            "fraction",
            "GPU utilisation",
            "12.1f",
            json=("gpu_utilization",),
            key="gpu_utilization",
        ),
        Metric(
            "total_carbon",
            "kg CO2e",
            "total carbon",
            "12,.2f",
            json=("total_carbon_kg",),
            info=("episode_carbon_kg",),
            key="carbon_kg",
            stat="carbon_kg",
            column="carbon kg",
            norm="carbon_norm",
            norm_key="carbon_norm",
            norm_label="carbon",
            tb=True,
            episode=True,
            na=_no_carbon,
        ),
        Metric(
            "total_egress_cost",
            "$",
            "egress cost",
            "12,.2f",
            show="egress",
            json=("total_egress_usd",),
            info=("episode_egress_usd",),
            key="egress_usd",
            stat="egress_usd",
            column="egress $",
            tb=True,
        ),
        *(
            Metric(
                f"jct_p{q}",
                "s",
                f"JCT p{q}",
                "12.2f",
                json=(f"jct_p{q}_s",),
                info=(f"episode_jct_p{q}_s",),
                key=f"jct_p{q}_h",
            )
            for q in (50, 95, 99)
        ),
        Metric(
            "mean_slowdown",
            "x",
            "mean slowdown",
            "12.2f",
            json=("mean_slowdown",),
            info=("episode_mean_slowdown",),
            key="mean_slowdown",
        ),
        Metric(
            "jobs",
            "count",
            info=("episode_jobs_completed",),
            key="n_jobs",
            get=lambda result: len(result.records),
        ),
        Metric(
            "n_restarts",
            "count",
            "restarts",
            "12d",
            show="faults",
            json=("n_restarts",),
            info=("episode_restarts",),
            key="n_restarts",
            stat="restarts",
            column="restarts",
            column_fmt=",.1f",
            tb=True,
        ),
        Metric(
            "wasted_gpu_hours",
            "GPU-h",
            "wasted GPU-hours",
            "12,.2f",
            show="faults",
            json=("wasted_gpu_hours",),
            info=("episode_wasted_gpu_hours",),
            key="wasted_gpu_hours",
            stat="wasted_gpu_hours",
            tb=True,
        ),
        Metric(
            "wasted_cost",
            "$",
            "wasted cost",
            "12,.2f",
            show="faults",
            json=("wasted_cost_usd",),
            info=("episode_wasted_cost_usd",),
            key="wasted_cost_usd",
            stat="wasted_cost_usd",
            column="wasted $",
            tb=True,
        ),
        Metric(
            "n_preemptions",
            "count",
            "preemptions",
            "12d",
            show="preemption",
            json=("n_preemptions",),
            key="n_preemptions",
            setting="preemption",
            stat="preemptions",
            column="preemptions",
            column_fmt=",.1f",
        ),
        Metric(
            "n_resizes",
            "count",
            "resizes",
            "12d",
            show="elastic",
            json=("n_resizes",),
            info=("episode_resizes",),
            setting="elasticity",
        ),
        Metric(
            "miss_rate",
            "fraction",
            "deadline misses",
            "12.1f",
            show="deadlines",
            json=("miss_rate",),
            info=("episode_miss_rate",),
            key="miss_rate",
            stat="miss_rate",
            column="missed",
            column_fmt=".1%",
            tb=True,
            episode=True,
        ),
        Metric(
            "total_tardiness",
            "s",
            "total tardiness",
            "12,.2f",
            show="deadlines",
            json=("total_tardiness_s", "total_tardiness_h"),
            info=("episode_total_tardiness_s", "episode_total_tardiness_h"),
            key="total_tardiness_h",
            stat="tardiness_h",
            column="tardiness h",
            column_fmt=",.1f",
            tb=True,
            episode=True,
        ),
        Metric("throughput", "jobs/h", json=("throughput_jobs_per_h",)),
        Metric("gpu_hours", "GPU-h", json=("gpu_hours",)),
        Metric("n_decisions", "count", json=("n_decisions",)),
    )
}

#: The order in which an output listed its metrics before this table, kept so that every
#: output reads as it did byte for byte; an output not here lists them in table order.
_LISTED: Mapping[str, tuple[str, ...]] = {
    "summary": (
        *("avg_jct", "jct_p50", "jct_p95", "jct_p99", "mean_slowdown", "total_cost"),
        *("total_egress_cost", "n_preemptions", "n_resizes", "n_restarts", "wasted_gpu_hours"),
        *("wasted_cost", "total_carbon", "makespan", "gpu_utilization"),
    ),
    "json": (
        *("avg_jct", "total_cost", "total_egress_cost", "total_carbon", "jct_p50", "jct_p95"),
        *("jct_p99", "mean_slowdown", "throughput", "n_restarts", "n_preemptions", "gpu_hours"),
        *("wasted_gpu_hours", "wasted_cost", "makespan", "gpu_utilization", "n_decisions"),
    ),
    "info": (
        *("avg_jct", "total_cost", "makespan", "jobs", "total_carbon", "jct_p50", "jct_p95"),
        *("jct_p99", "mean_slowdown", "total_egress_cost", "n_restarts", "wasted_gpu_hours"),
        "wasted_cost",
    ),
    "column": ("avg_jct", "total_cost", "total_carbon", "total_egress_cost", "n_preemptions"),
}

#: What puts a metric in each output.
_IN: Mapping[str, Callable[[Metric], bool]] = {
    "summary": lambda m: bool(m.label),
    "json": lambda m: bool(m.json),
    "info": lambda m: bool(m.info),
    "row": lambda m: bool(m.key),
    "stats": lambda m: bool(m.stat),
    "column": lambda m: bool(m.column),
    "tb": lambda m: m.tb,
    "episode": lambda m: m.episode,
}


def ordered(output: str, show: frozenset[str] | set[str] | None = None) -> list[Metric]:
    """The metrics ``output`` (one of :data:`OUTPUTS`) shows, in its order; with ``show``,
    only those whose :attr:`Metric.show` is in it."""
    listed = _LISTED.get(output, ())
    rows = [m for m in METRICS.values() if _IN[output](m) and (show is None or m.show in show)]
    rank = {name: i for i, name in enumerate(listed)}
    return sorted(rows, key=lambda m: rank.get(m.name, len(listed)))


assert all(m.show in SHOW for m in METRICS.values()), "a METRICS row's show is not in SHOW"
assert all(set(names) <= set(METRICS) for names in _LISTED.values()), "_LISTED != METRICS"
