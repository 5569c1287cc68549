"""A job's optional attributes in one place: the :data:`JOB_FIELDS` table, one
:class:`JobField` row per attribute that travels from a scenario file's job row to the
:class:`~bacepipe_env.core.job.Job`, the decision's
:class:`~bacepipe_env.core.snapshot.QueueSnapshot`, the observation and the
:class:`~bacepipe_env.core.records.JobRecord` and its JSON.

A row names the job row's key and how a value is checked there (a one-line
:class:`~bacepipe_env.errors.ScenarioError` naming the field), the Job's attribute, its default
and the file's unit; and, where the field is shown, the snapshot's per-candidate tuple, the
record's attribute and JSON key, and the column of the observation's ``queue`` and
``announced`` arrays. The scenario loader (:mod:`bacepipe_env.scenarios.sections`,
:mod:`~bacepipe_env.scenarios.loader`), :meth:`Job.trusted` and ``Job``'s own checks, the
snapshot, the simulator's records and the observation's feature table all read it.

An attribute that ``Job``, ``QueueSnapshot`` or ``JobRecord`` declares is passed to its
constructor; one that it does not declare rides on the instance (:func:`attach`), so a row
alone carries a field end to end. Declare it on the class for typing and for the classes'
public constructors. The observation's columns are read once, when
:mod:`bacepipe_env.envs.features` is imported. See ``docs/extending.md``, "A job field".
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any, TypeVar

from ..errors import ScenarioError
from .limits import LIMITS, Limit, check_limit
from .units import SECONDS_PER_HOUR
from .validate import require_str

__all__ = [
    "JOB_FIELDS",
    "FieldColumn",
    "JobField",
    "announced_fields",
    "attach",
    "check_job_fields",
    "job_keys",
    "job_row_fields",
    "job_values",
    "queue_fields",
    "record_fields",
    "snapshot_values",
    "split_declared",
]


@dataclass(frozen=True)
class FieldColumn:
    """A column of the observation that shows a job field: its name and description (as the
    feature table lists them), its lower bound, and ``value(x, now, log_hours)``: the float
    of the job's value ``x`` at the decision's time ``now`` (s), given the ``log_hours``
    scale of the time columns."""

    name: str
    description: str
    value: Callable[[Any, float, float], float]
    low: float = 0.0


@dataclass(frozen=True)
class JobField:
    """One job attribute: its row of :data:`JOB_FIELDS`.

    ``attr`` is the Job's attribute and ``default`` its value when the job row does not give
    it (None: optional, no value); ``key`` the scenario file's job row key, whose value is
    checked by ``check`` (value, field) or else by the ``LIMITS`` entry ``limit``, and is
    ``scale`` of the Job's ``unit`` per file unit. ``job_checked`` False leaves a Job's value
    unchecked (a name: the empty default names the job ``J<id>``). ``snapshot`` names the
    :class:`QueueSnapshot`'s per-candidate tuple of it, ``record`` the :class:`JobRecord`'s
    attribute, ``json_key`` its key in the record's JSON and ``json_after`` the key it follows
    there (empty: at the end); empty for a field not shown there. ``queue`` and ``announced``
    are its columns of those observation arrays (a queue column reads the snapshot's tuple)."""

    attr: str
    key: str
    default: Any
    help: str
    limit: str = ""
    scale: float = 1.0
    unit: str = ""
    check: Callable[[Any, str], Any] | None = None
    job_checked: bool = True
    snapshot: str = ""
    record: str = ""
    json_key: str = ""
    json_after: str = ""
    queue: FieldColumn | None = None
    announced: FieldColumn | None = None

    def from_file(self, value: Any, field: str) -> Any:
        """A job row's value, checked, in the file's unit; a one-line ScenarioError naming
        ``field`` otherwise."""
        if self.check is not None:
            return self.check(value, field)
        return check_limit(self.limit, value, field=field)

    def to_job(self, value: Any) -> Any:
        """A checked file value in the Job's unit."""
        if value is None or self.scale == 1.0:
            return value
        return float(value) * self.scale

    @cached_property
    def _job_limit(self) -> Limit:
        lim = LIMITS[self.limit]
        return lim if self.scale == 1.0 else lim.scaled(self.scale, self.unit)

    def check_job(self, value: Any, field: str) -> Any:
        """A Job's value, checked in the Job's unit (None passes where the default is None)."""
        if not self.job_checked or (value is None and self.default is None):
            return value
        if self.check is not None:
            return self.check(value, field)
        return check_limit(self.limit, value, field=field, limit=self._job_limit)


def _wait_hours(submit: float, now: float, log_hours: float) -> float:
    """The wait so far, ``log10(1 + hours) / log_hours``."""
    return math.log10(1.0 + (now - submit) / SECONDS_PER_HOUR) / log_hours


def _until_hours(submit: float, now: float, log_hours: float) -> float:
    """The time until the submission, ``log10(1 + hours) / log_hours``."""
    return math.log10(1.0 + (submit - now) / SECONDS_PER_HOUR) / log_hours


def _name(value: Any, field: str) -> str:
    return require_str(field, value)


#: Every job attribute a scenario's job row may give, in the order they are checked. A job
#: row's ``model``, ``dataset`` and ``batch`` are read by the loader itself: they name
#: entries of the scenario's tables, and the batch's default is its model's.
JOB_FIELDS: dict[str, JobField] = {
    f.attr: f
    for f in (
        JobField(
            "submit_time",
            "submit_h",
            0.0,
            "when the job is submitted, hours after the start (the Job's seconds)",
            limit="jobs.submit_h",
            scale=SECONDS_PER_HOUR,
            unit="s",
            snapshot="submit_time",
            record="submit_time",
            json_key="submit_s",
            json_after="path",
            queue=FieldColumn("log_wait_hours", "wait so far, `log10(1 + hours) / 4`", _wait_hours),
            announced=FieldColumn(
                "log_until_submit_hours",
                "time until it is submitted, `log10(1 + hours) / 4` (> 0: a job submitted now "
                "is in the queue)",
                _until_hours,
            ),
        ),
        JobField(
            "epochs",
            "epochs",
            1,
            "passes over the dataset (default: the scenario's constants.epochs)",
            limit="jobs.epochs",
        ),
        JobField(
            "name",
            "name",
            "",
            "the job's name (default: J<id>)",
            check=_name,
            job_checked=False,
            record="name",
            json_key="name",
            json_after="job_id",
        ),
        JobField(
            "min_replicas",
            "min_replicas",
            1,
            "the fewest data-parallel copies of its pipeline (semantics §3e)",
            limit="jobs.replicas",
        ),
        JobField(
            "max_replicas",
            "max_replicas",
            None,
            "the most data-parallel copies (default: the world's max_replicas)",
            limit="jobs.replicas",
        ),
        JobField(
            "deadline",
            "deadline_h",
            None,
            "when the job is due, hours after the start (after its submit time; semantics §15)",
            limit="jobs.deadline_h",
            scale=SECONDS_PER_HOUR,
            unit="s",
        ),
        JobField(
            "slack",
            "slack",
            None,
            "the job is due its slack times its isolated run time after its submission "
            "(semantics §15; not with deadline_h)",
            limit="jobs.slack",
        ),
    )
}


def job_keys() -> set[str]:
    """The job row keys the table reads."""
    return {f.key for f in JOB_FIELDS.values()}


def _check_relations(values: Mapping[str, Any], where: str, unit: str = "h") -> None:
    """The checks that join two fields: ``max_replicas`` at least ``min_replicas``; a
    deadline after the submit time (both in ``unit``), and not both a deadline and a slack."""
    low, high = values.get("min_replicas", 1), values.get("max_replicas")
    if high is not None and high < low:
        raise ScenarioError(f"{where}.max_replicas", high, f"must be at least min_replicas ({low})")
    due, key = values.get("deadline"), "deadline_h" if unit == "h" else "deadline"
    if due is not None and values.get("slack") is not None:
        raise ScenarioError(f"{where}.{key}", due, "give either a deadline or a slack, not both")
    submit = values.get("submit_time", 0.0)
    if due is not None and due <= submit:
        raise ScenarioError(
            f"{where}.{key}", due, f"must be after the submit time ({submit:g} {unit})"
        )


def job_row_fields(where: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """The fields a scenario file's job ``row`` (named ``where``, ``jobs[3]``) gives, by
    attribute, checked, in the file's units."""
    out = {
        f.attr: f.from_file(row[f.key], f"{where}.{f.key}")
        for f in JOB_FIELDS.values()
        if f.key in row
    }
    _check_relations(out, where)
    return out


def job_values(given: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Checked file values by attribute, in the Job's units."""
    return {attr: JOB_FIELDS[attr].to_job(value) for attr, value in given}


def check_job_fields(job: Any, where: str) -> None:
    """Check every table attribute of a freshly built ``job`` (named ``where``) in the Job's
    units, storing the checked values; a one-line ScenarioError otherwise."""
    for f in JOB_FIELDS.values():
        value = f.check_job(getattr(job, f.attr, f.default), f"{where}.{f.attr}")
        object.__setattr__(job, f.attr, value)
    names = ("min_replicas", "max_replicas", "deadline", "slack", "submit_time")
    _check_relations({f: getattr(job, f) for f in names}, where, "s")


@cache
@functools.cache
def _declared(cls: type) -> frozenset[str]:
    """The field names ``cls`` (a dataclass) declares, worked out once per class: the queue
    snapshot asks at every decision."""
    return frozenset(f.name for f in dataclasses.fields(cls))


def split_declared(cls: type, values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``values`` split into those ``cls`` (a dataclass) declares and the rest."""
    declared = _declared(cls)
    mine = {k: v for k, v in values.items() if k in declared}
    return mine, {k: v for k, v in values.items() if k not in declared}


_T = TypeVar("_T")


def attach(obj: _T, extra: Mapping[str, Any]) -> _T:
    """``obj`` (a frozen dataclass instance) with the attributes of ``extra`` set on it."""
    for name, value in extra.items():
        object.__setattr__(obj, name, value)
    return obj


def snapshot_values(jobs: Iterable[Any]) -> dict[str, tuple[Any, ...]]:
    """The snapshot's per-candidate tuples of ``jobs``, by snapshot name."""
    jobs = list(jobs)
    return {
        f.snapshot: tuple([getattr(j, f.attr) for j in jobs])
        for f in JOB_FIELDS.values()
        if f.snapshot
    }


def record_fields() -> tuple[JobField, ...]:
    """The rows a :class:`JobRecord` carries, in table order."""
    return tuple(f for f in JOB_FIELDS.values() if f.record)


def queue_fields() -> tuple[JobField, ...]:
    """The rows with a column in the ``queue`` array, in table order."""
    return tuple(f for f in JOB_FIELDS.values() if f.queue is not None)


def announced_fields() -> tuple[JobField, ...]:
    """The rows with a column in the ``announced`` array, in table order."""
    return tuple(f for f in JOB_FIELDS.values() if f.announced is not None)
