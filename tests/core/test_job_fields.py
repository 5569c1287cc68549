"""A job attribute has one home, the ``JOB_FIELDS`` table (issue 45): a row registered there
travels from a scenario file's job row to the Job, the decision's queue snapshot and the
record's JSON with no other change, and the fields already there keep their keys, checks,
observation columns and JSON positions."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from bacepipe_env.core.job import Job, ModelSpec
from bacepipe_env.core.job_fields import JOB_FIELDS, FieldColumn, JobField, attach
from bacepipe_env.core.snapshot import QueueSnapshot
from bacepipe_env.errors import ScenarioError
from bacepipe_env.policies.base import Ordering
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import build_scenario

H = 3600.0


def _spec(*jobs: dict[str, Any]) -> dict[str, Any]:
    """One region of 8 GPUs and a small model: the jobs queue behind each other."""
    return {
        "name": "fields",
        "ignore_memory": True,
        "regions": [{"name": "R0", "gpus": 8, "price_usd_per_kwh": 0.1, "intra_gbps": 8}],
        "links": {"matrix_gbps": [[0]]},
        "models": [{"name": "M", "params": 1e9, "layers": 8, "hidden": 2048, "batch": 8}],
        "datasets": [{"name": "D", "samples": 800}],
        "jobs": [{"model": "M", "dataset": "D", **job} for job in jobs],
    }


def _grade(value: Any, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 9:
        raise ScenarioError(field, value, "must be an integer in [0, 9]")
    return value


#: A field no class declares: the job row's ``grade`` (0-9), the Job's ``grade``, the
#: snapshot's ``grade`` tuple and the record JSON's ``grade``, at the end.
GRADE = JobField(
    "grade",
    "grade",
    0,
    "a test field",
    check=_grade,
    snapshot="grade",
    record="grade",
    json_key="grade",
)


class _Recorder(Ordering):
    """FCFS that keeps every snapshot it is handed."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[QueueSnapshot] = []

    def pick(self, queue: QueueSnapshot, legal: Sequence[int]) -> int:
        self.seen.append(queue)
        return legal[0]


@pytest.fixture
def grade(monkeypatch: pytest.MonkeyPatch) -> JobField:
    monkeypatch.setitem(JOB_FIELDS, "grade", GRADE)
    return GRADE


def test_a_registered_row_goes_from_the_job_row_to_the_record_json(grade: JobField) -> None:
    spec = _spec({"grade": 7}, {}, {"grade": 2, "submit_h": 0.5})
    scenario = build_scenario(spec)
    assert [j.grade for j in scenario.jobs] == [7, 0, 2]  # type: ignore[attr-defined]
    recorder = _Recorder()
    policy = dataclasses.replace(make_policy("fcfs"), ordering=recorder)
    result = policy.simulate(scenario)
    # the first decision, at time 0, has jobs 1 and 2 (job 3 comes at 0.5 h)
    first = recorder.seen[0]
    assert first.job_ids[:2] == (1, 2)
    assert first.grade[:2] == (7, 0)  # type: ignore[attr-defined]
    assert all(len(q.grade) == len(q.job_ids) for q in recorder.seen)  # type: ignore[attr-defined]
    assert copy.deepcopy(first) is first  # immutable: itself, as without the field
    listy = attach(QueueSnapshot([1], [1.0], [1.0], [0.0], 1.0, 1.0, 0.0, 0.0), {"grade": [3]})
    copied = copy.deepcopy(listy)
    assert copied.grade == [3] and copied.grade is not listy.grade  # type: ignore[attr-defined]
    rows = [r.to_dict(["R0"]) for r in result.records]
    assert [row["grade"] for row in rows] == [7, 0, 2]
    assert list(rows[0])[-1] == "grade"  # json_after "" puts it at the end


def test_a_registered_row_checks_its_values_with_one_line_errors(grade: JobField) -> None:
    with pytest.raises(ScenarioError) as err:
        build_scenario(_spec({}, {"grade": 12}))
    assert str(err.value) == "jobs[1].grade: must be an integer in [0, 9] (got 12)"
    # a field the Job does not declare: its public constructor gives it the default (declare
    # it on Job to take a value there); the loader's path, Job.trusted, takes any row's value
    model = ModelSpec("M", 1e9, 8, 2048)
    job = Job(1, model, "D", 800, 8)
    assert job.grade == 0  # type: ignore[attr-defined]
    built = Job.trusted(
        job_id=1, model=model, dataset="D", samples=800, batch=8, constants=job.constants, grade=4
    )
    assert built.grade == 4  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="unknown job fields"):
        Job.trusted(
            job_id=1, model=model, dataset="D", samples=800, batch=8, constants=job.constants, x=1
        )


def test_without_the_row_its_key_is_unknown() -> None:
    with pytest.raises(ScenarioError, match=r"^jobs\[0\]\.grade: unknown key; allowed: "):
        build_scenario(_spec({"grade": 7}))


def test_the_ported_fields_keep_their_keys_checks_and_positions() -> None:
    assert [(f.attr, f.key) for f in JOB_FIELDS.values()] == [
        ("submit_time", "submit_h"),
        ("epochs", "epochs"),
        ("name", "name"),
        ("min_replicas", "min_replicas"),
        ("max_replicas", "max_replicas"),
        ("deadline", "deadline_h"),
        ("slack", "slack"),
    ]
    scenario = build_scenario(
        _spec({"submit_h": 0.25, "name": "a", "epochs": 2}, {"min_replicas": 1, "max_replicas": 1})
    )
    a, b = scenario.jobs
    assert (a.submit_time, a.name, a.epochs) == (0.25 * H, "a", 2)  # 900 s
    assert (b.submit_time, b.name, b.epochs, b.max_replicas) == (0.0, "J2", 1, 1)
    with pytest.raises(ScenarioError) as err:
        build_scenario(_spec({"min_replicas": 2, "max_replicas": 1}))
    assert str(err.value) == "jobs[0].max_replicas: must be at least min_replicas (2) (got 1)"
    with pytest.raises(ScenarioError, match=r"^job 1\.submit_time: "):
        Job(1, ModelSpec("M", 1e9, 8, 2048), "D", 800, 8, submit_time=-1.0)
    keys = list(make_policy("fcfs").simulate(scenario).records[0].to_dict(["R0"]))
    # name after job_id, submit_s after path, as before the table
    assert keys[:10] == [
        "job_id", "name", "model", "dataset", "k_star", "memory_floor", "gpus", "path",
        "submit_s", "start_s",
    ]  # fmt: skip


def test_the_observation_columns_come_from_the_rows() -> None:
    from bacepipe_env.envs.features import ANNOUNCED_FEATURES, QUEUE_FEATURES

    submit = JOB_FIELDS["submit_time"]
    assert isinstance(submit.queue, FieldColumn) and isinstance(submit.announced, FieldColumn)
    assert QUEUE_FEATURES[6] == submit.queue.name == "log_wait_hours"
    assert ANNOUNCED_FEATURES[-1] == submit.announced.name == "log_until_submit_hours"
    # 2 h of wait at log_hours 4: log10(1 + 2) / 4 = 0.11928...; 2 h to go, likewise
    assert submit.queue.value(0.0, 2 * H, 4.0) == pytest.approx(0.1192803)
    assert submit.announced.value(2 * H, 0.0, 4.0) == pytest.approx(0.1192803)
