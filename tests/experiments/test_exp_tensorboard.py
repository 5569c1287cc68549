"""The hand-written TensorBoard event writer, read back with TensorBoard's own reader and
its HParams and custom-scalars plugins; and the sessions ``run_compare`` and ``run_sweep``
write with it."""

from __future__ import annotations

import csv
import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bacepipe_env.experiments.tensorboard import (
    MAX_RUN_COMPONENT,
    Category,
    Chart,
    ScalarWriter,
    run_component,
)

EventAccumulator = pytest.importorskip(
    "tensorboard.backend.event_processing.event_accumulator"
).EventAccumulator


def load(logdir: Path) -> EventAccumulator:
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def hparams_sessions(logdir: Path, plugin_app: Any) -> dict[str, dict[str, Any]]:
    """Session name -> its ``hparams`` and ``metrics`` (tag -> value), as TensorBoard's
    HParams table lists them."""
    request = {
        "experimentName": "",
        "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_RUNNING"],
        "colParams": [],
        "startIndex": 0,
        "sliceSize": 1000,
    }
    client = plugin_app(logdir, "hparams", "/session_groups")
    resp = client.post("/", data=json.dumps(request), content_type="application/json")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    out = {}
    for group in resp.get_json()["sessionGroups"]:
        (session,) = group["sessions"]  # one session per row: policies side by side
        assert session["status"] == "STATUS_SUCCESS"
        metrics = {m["name"]["tag"]: m["value"] for m in group["metricValues"]}
        out[session["name"]] = {"hparams": group["hparams"], "metrics": metrics}
    return out


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def test_scalars_at_several_steps_and_tags(tmp_path: Path) -> None:
    loss = {step: 1.0 / (step + 1) for step in (0, 1, 2, 5, 10)}
    reward = {step: -3.25 * step + 0.1 for step in (0, 3, 7)}
    with ScalarWriter(tmp_path / "run") as w:
        # Interleave tags and go back in step between tags: all must be kept.
        for step, v in loss.items():
            w.add_scalar("train/loss", v, step)
        for step, v in reward.items():
            w.add_scalar("eval/reward", v, step, wall_time=1000.0 + step)
        w.add_scalar("big", 123456789.123, 2**40)
        w.add_scalar("int_value", np.int64(7), np.int64(3))
    acc = load(tmp_path / "run")
    assert sorted(acc.Tags()["scalars"]) == ["big", "eval/reward", "int_value", "train/loss"]
    got = {e.step: e.value for e in acc.Scalars("train/loss")}
    assert list(got) == list(loss)
    for step, v in loss.items():
        assert got[step] == pytest.approx(v, rel=1e-6)
        assert got[step] == f32(v)  # stored as float32 exactly
    events = acc.Scalars("eval/reward")
    assert [e.step for e in events] == list(reward)
    assert [e.wall_time for e in events] == [1000.0, 1003.0, 1007.0]
    for e in events:
        assert e.value == pytest.approx(reward[e.step], rel=1e-6)
    (big,) = acc.Scalars("big")
    assert big.step == 2**40
    assert big.value == pytest.approx(123456789.123, rel=1e-6)
    (iv,) = acc.Scalars("int_value")
    assert (iv.step, iv.value) == (3, 7.0)


def test_text_summary_reads_back_as_a_tensor(tmp_path: Path) -> None:
    text = "**bold** policy: dynamic priority — ünïcode"
    with ScalarWriter(tmp_path) as w:
        w.add_text("notes/policy", text)
        w.add_text("notes/later", "second", step=4)
        w.add_scalar("x", 1.5, 0)
    acc = load(tmp_path)
    assert sorted(acc.Tags()["tensors"]) == ["notes/later", "notes/policy"]
    (ev,) = acc.Tensors("notes/policy")
    assert ev.step == 0
    assert ev.tensor_proto.dtype == 7  # DT_STRING
    assert [s.decode("utf-8") for s in ev.tensor_proto.string_val] == [text]
    (later,) = acc.Tensors("notes/later")
    assert later.step == 4
    assert later.tensor_proto.string_val[0] == b"second"
    assert acc.SummaryMetadata("notes/policy").plugin_data.plugin_name == "text"
    assert [e.value for e in acc.Scalars("x")] == [1.5]


def test_two_runs_in_sibling_folders(tmp_path: Path) -> None:
    with ScalarWriter(tmp_path / "a") as wa, ScalarWriter(tmp_path / "b") as wb:
        for step in range(4):
            wa.add_scalar("m", step * 2.0, step)
            wb.add_scalar("m", -step * 0.5, step)
    assert wa.path.parent == tmp_path / "a"
    assert wb.path.parent == tmp_path / "b"
    assert wa.path.name.startswith("events.out.tfevents.")
    assert wa.path.name != wb.path.name
    a, b = load(tmp_path / "a"), load(tmp_path / "b")
    assert [(e.step, e.value) for e in a.Scalars("m")] == [(s, s * 2.0) for s in range(4)]
    assert [(e.step, e.value) for e in b.Scalars("m")] == [(s, -s * 0.5) for s in range(4)]

    # And both as runs of one log directory, as `tensorboard --logdir` sees them.
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer

    mux = EventMultiplexer().AddRunsFromDirectory(str(tmp_path))
    mux.Reload()
    assert sorted(mux.Runs()) == ["a", "b"]
    assert len(mux.Scalars("b", "m")) == 4


def test_flush_makes_events_readable_before_close(tmp_path: Path) -> None:
    w = ScalarWriter(tmp_path)
    w.add_scalar("s", 2.0, 1)
    w.flush()
    assert [e.value for e in load(tmp_path).Scalars("s")] == [2.0]
    w.close()
    w.close()  # idempotent


def test_file_starts_with_a_valid_record(tmp_path: Path) -> None:
    """TFRecord framing: u64 length, masked crc32c of it, payload, masked crc32c of payload
    (checked with TensorBoard's own crc implementation)."""
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    with ScalarWriter(tmp_path) as w:
        w.add_scalar("s", 1.0, 1)
    data = w.path.read_bytes()
    offset, payloads = 0, []
    while offset < len(data):
        header = data[offset : offset + 8]
        (length,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", data[offset + 8 : offset + 12])
        payload = data[offset + 12 : offset + 12 + length]
        (pcrc,) = struct.unpack("<I", data[offset + 12 + length : offset + 16 + length])
        assert hcrc == masked_crc32c(header)
        assert pcrc == masked_crc32c(payload)
        payloads.append(payload)
        offset += 16 + length
    assert offset == len(data)
    assert len(payloads) == 2  # the file-version event and one scalar
    assert b"brain.Event:2" in payloads[0]


@pytest.mark.parametrize("egress", [None, 0.05])
def test_compare_scalars_carry_carbon_and_egress_when_charged(
    egress: float | None, tmp_path: Path, tensorboard_plugin: Any
) -> None:
    """`run_compare`'s sessions, read back: carbon (absolute and over BACE-Pipe's) always, the
    egress charge only when egress is on, each the summary CSV's mean over the seeds; every
    seed's egress in the seeds table, as the runs CSV has it."""
    from bacepipe_env.experiments import run_compare

    knobs: dict[str, Any] = {"prices": "hourly", "start_hour": 2000.0}
    if egress is not None:
        knobs["egress_usd_per_gb"] = egress
    policies, seeds = ["bace-pipe", "cr-lcf"], [0, 1]
    run_compare("paper", policies, seeds, tmp_path, knobs=knobs)
    runs = {(r["policy"], int(r["seed"])): r for r in read_rows(tmp_path / "compare-runs.csv")}
    summary = {r["policy"]: r for r in read_rows(tmp_path / "compare-summary.csv")}
    for p in policies:
        acc = load(tmp_path / "tb" / "compare" / "paper" / p)
        tags = set(acc.Tags()["scalars"])
        assert {"compare/carbon_kg", "compare/carbon_norm"} <= tags
        assert ("compare/egress_usd" in tags) == (egress is not None)
        for metric in ("carbon_kg", "carbon_norm", *(["egress_usd"] if egress else [])):
            (event,) = acc.Scalars(f"compare/{metric}")
            want = float(summary[p][f"{metric}_mean"])
            assert event.value == pytest.approx(want, rel=1e-6), (p, metric)
        (text,) = acc.Tensors("compare/seeds")
        table = text.tensor_proto.string_val[0].decode()
        assert ("egress ($)" in table) == (egress is not None)
        if egress is not None:
            for seed in seeds:
                cells = next(
                    line.split("|")[1:-1]
                    for line in table.splitlines()
                    if line.startswith(f"| {seed} |")
                )
                got = float(cells[-1].replace(",", ""))
                assert got == pytest.approx(float(runs[p, seed]["egress_usd"]), abs=0.006)
    # the world's settings are hparams of every session
    for session in hparams_sessions(tmp_path / "tb", tensorboard_plugin).values():
        assert session["hparams"]["prices"] == "hourly"
        assert session["hparams"]["start_hour"] == 2000.0
        assert session["hparams"].get("egress_usd_per_gb") == egress
    if egress is not None:
        assert any(float(r["egress_usd"]) > 0 for r in runs.values())


def test_hparams_session_reads_back(tmp_path: Path, tensorboard_plugin: Any) -> None:
    """One session with typed values (a string, a number, a boolean); None and NaN, which
    the plugin cannot show, are left out; the run's scalars are its metric columns."""
    from tensorboard.plugins.hparams import metadata as hp_metadata

    with ScalarWriter(tmp_path / "a") as w:
        w.add_hparams(
            {"policy": "bace-pipe", "n": 3, "x": 0.25, "flag": True, "none": None, "nan": math.nan},
            start_time=1000.0,
        )
        w.add_scalar("m/avg_jct_h", 12.5, 0)
    acc = load(tmp_path / "a")
    content = acc.PluginTagToContent("hparams")
    assert sorted(content) == [hp_metadata.SESSION_END_INFO_TAG, hp_metadata.SESSION_START_INFO_TAG]
    start = hp_metadata.parse_session_start_info_plugin_data(
        content[hp_metadata.SESSION_START_INFO_TAG]
    )
    assert start.start_time_secs == 1000.0
    values = {k: v.WhichOneof("kind") for k, v in start.hparams.items()}
    assert values == {
        "policy": "string_value",
        "n": "number_value",
        "x": "number_value",
        "flag": "bool_value",
    }
    assert start.hparams["policy"].string_value == "bace-pipe"
    assert start.hparams["x"].number_value == 0.25
    end = hp_metadata.parse_session_end_info_plugin_data(content[hp_metadata.SESSION_END_INFO_TAG])
    assert end.status == 1  # STATUS_SUCCESS
    (session,) = hparams_sessions(tmp_path, tensorboard_plugin).values()
    assert session["hparams"] == {"policy": "bace-pipe", "n": 3.0, "x": 0.25, "flag": True}
    assert session["metrics"] == {"m/avg_jct_h": 12.5}


def test_custom_scalars_layout_reads_back(tmp_path: Path, tensorboard_plugin: Any) -> None:
    """The layout as TensorBoard's custom-scalars plugin serves it; two runs' layouts merge by
    category title."""
    from tensorboard.plugins.custom_scalar import layout_pb2

    jct = Category("JCT", (Chart("avg JCT (h)", (r"^eval/avg_jct_h$", r"^sim/avg_jct_h$")),))
    cost = Category("Cost", (Chart("cost ($)", (r"^eval/total_cost_usd$",)),), closed=True)
    with ScalarWriter(tmp_path / "a") as w:
        w.add_custom_scalars([jct])
    with ScalarWriter(tmp_path / "b") as w:
        w.add_custom_scalars([jct, cost])
    (event,) = load(tmp_path / "b").Tensors("custom_scalars__config__")
    layout = layout_pb2.Layout.FromString(event.tensor_proto.string_val[0])
    assert [c.title for c in layout.category] == ["JCT", "Cost"]
    assert list(layout.category[0].chart[0].multiline.tag) == list(jct.charts[0].tags)
    assert layout.category[1].closed and not layout.category[0].closed
    served = tensorboard_plugin(tmp_path, "custom_scalars", "/layout").get("/").get_json()
    assert [c["title"] for c in served["category"]] == ["JCT", "Cost"]
    assert len(served["category"][0]["chart"]) == 1  # the same chart twice is merged
    assert served["category"][0]["chart"][0]["multiline"]["tag"] == list(jct.charts[0].tags)


def test_run_component_is_short_and_distinct() -> None:
    assert run_component("bace-pipe") == "bace-pipe"
    assert run_component("sjf+finish-aware") == "sjf+finish-aware"
    assert run_component("gpu_scale=0.5") == "gpu_scale=0.5"
    assert run_component("my scenario/v2") == "my-scenario-v2"
    long_a = "geopipe__maskable_ppo__0__20250101-120000"
    long_b = "geopipe__maskable_ppo__0__20250101-120001"
    a, b = run_component(long_a), run_component(long_b)
    assert len(a) <= MAX_RUN_COMPONENT and len(b) <= MAX_RUN_COMPONENT
    assert a != b and a.startswith("geopipe__maskable_ppo")
    assert run_component(long_a) == a  # the same name every time


def test_learned_policies_get_short_distinct_session_names() -> None:
    from bacepipe_env.experiments.experiments import _session_names

    names = _session_names(
        [
            "bace-pipe",
            "maskable_ppo:runs/geopipe__maskable_ppo__0__20250101-120000/model.zip",
            "ppo:a/x/model.zip",
            "ppo:b/x/model.zip",
            "dqn:models/best.zip",
        ]
    )
    assert names["bace-pipe"] == "bace-pipe"
    assert names["dqn:models/best.zip"] == "dqn-best"
    assert names["ppo:a/x/model.zip"] != names["ppo:b/x/model.zip"]
    assert all(n.startswith("ppo-x") for k, n in names.items() if k.startswith("ppo:"))
    assert len(set(names.values())) == len(names)
    assert all(len(n) <= MAX_RUN_COMPONENT for n in names.values())


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bacepipe_env.experiments import run_compare

    out = tmp_path_factory.mktemp("tb_compare")
    run_compare("fig1", ["bace-pipe", "lcf", "sjf+full"], [0, 1, 2], out)
    return out


def test_compare_puts_one_session_per_policy_in_the_hparams_table(
    compared: Path, tensorboard_plugin: Any
) -> None:
    """TensorBoard's HParams plugin lists one row per policy, named ``compare/<scenario>/<policy>``,
    with the experiment's settings as hparams and the summary's means as metrics."""
    sessions = hparams_sessions(compared / "tb", tensorboard_plugin)
    summary = {r["policy"]: r for r in read_rows(compared / "compare-summary.csv")}
    assert sorted(sessions) == sorted(f"compare/fig1/{p}" for p in summary)
    for name, session in sessions.items():
        policy = name.split("/")[-1]
        assert session["hparams"] == {
            "experiment": "compare",
            "scenario": "fig1",
            "policy": policy,
            "reference": "bace-pipe",
            "seeds": "0-2",
        }
        for tag, value in session["metrics"].items():
            metric = tag.removeprefix("compare/")
            column = metric if metric.endswith("_ci95") else f"{metric}_mean"
            assert value == pytest.approx(float(summary[policy][column]), rel=1e-6), tag
        assert {"compare/avg_jct_h", "compare/total_cost_usd", "compare/carbon_kg"} <= set(
            session["metrics"]
        )
        assert all(len(part) <= MAX_RUN_COMPONENT for part in name.split("/"))


def test_sweep_sessions_have_the_knob_as_an_hparam(tmp_path: Path, tensorboard_plugin: Any) -> None:
    """A sweep: one session per (policy, value), the value an hparam of the session (so the
    HParams views draw each metric against it), the means at that value as metrics; one seed
    gives no CI columns."""
    from bacepipe_env.experiments import run_sweep

    run_sweep("gpu", "paper", ["bace-pipe", "ldf"], [3], tmp_path, values=[0.5, 1.25])
    sessions = hparams_sessions(tmp_path / "tb", tensorboard_plugin)
    summary = {
        (float(r["gpu_scale"]), r["policy"]): r
        for r in read_rows(tmp_path / "sweep-gpu-summary.csv")
    }
    assert sorted(sessions) == sorted(f"sweep-gpu/paper/{p}/gpu_scale={v:g}" for v, p in summary)
    for name, session in sessions.items():
        policy, value = name.split("/")[2], session["hparams"]["gpu_scale"]
        assert session["hparams"] == {
            "experiment": "sweep-gpu",
            "scenario": "paper",
            "policy": policy,
            "reference": "bace-pipe",
            "seeds": "3",
            "gpu_scale": value,
        }
        row = summary[value, policy]
        assert not any(tag.endswith("_ci95") for tag in session["metrics"])
        for tag in ("avg_jct_h", "total_cost_usd", "carbon_kg", "avg_jct_norm"):
            got = session["metrics"][f"sweep/{tag}"]
            assert got == pytest.approx(float(row[f"{tag}_mean"]), rel=1e-6), (name, tag)
        assert all(len(part) <= MAX_RUN_COMPONENT for part in name.split("/"))


def hparams_columns(logdir: Path, plugin_app: Any) -> tuple[list[tuple[str, bool]], list[str]]:
    """The HParams table's columns as TensorBoard's plugin serves them to the browser:
    ``(name, differs)`` per hyperparameter and the metric tags, in order (the browser ticks
    the first five of each, hyperparameters that differ first)."""
    client = plugin_app(logdir, "hparams", "/experiment")
    resp = client.post(
        "/", data=json.dumps({"experimentName": ""}), content_type="application/json"
    )
    assert resp.status_code == 200, resp.get_data(as_text=True)
    exp = resp.get_json()
    hparams = [(h["name"], bool(h.get("differs"))) for h in exp["hparamInfos"]]
    return hparams, [m["name"]["tag"] for m in exp["metricInfos"]]


def test_compare_declares_the_table_with_cost_among_the_ticked_metrics(
    compared: Path, tensorboard_plugin: Any
) -> None:
    """Left to itself TensorBoard lists the metrics by name and ticks five, which put the
    total cost eighth; the declared table leads with the three measures, then two ratios."""
    hparams, metrics = hparams_columns(compared / "tb", tensorboard_plugin)
    assert metrics[:5] == [
        "compare/avg_jct_h",
        "compare/total_cost_usd",
        "compare/carbon_kg",
        "compare/avg_jct_norm",
        "compare/total_cost_norm",
    ]
    # every scalar the sessions logged is a column, once
    logged = {
        tag
        for s in hparams_sessions(compared / "tb", tensorboard_plugin).values()
        for tag in s["metrics"]
    }
    assert sorted(metrics) == sorted(logged) and len(metrics) == len(set(metrics))
    # the policy is the one hyperparameter that differs, so the browser shows it first
    assert [name for name, differs in hparams if differs] == ["policy"]
    assert {name for name, _ in hparams} == {
        "experiment",
        "scenario",
        "policy",
        "reference",
        "seeds",
    }


def test_the_declaration_covers_every_experiment_in_the_folder(
    tmp_path: Path, tensorboard_plugin: Any
) -> None:
    """TensorBoard reads one declaration per logdir, so a sweep written beside a compare
    keeps the compare's columns; an experiment run again is not listed twice, and one whose
    folder was removed is dropped."""
    import shutil

    from bacepipe_env.experiments import run_compare, run_sweep

    run_compare("fig1", ["bace-pipe", "sjf"], [0], tmp_path)
    run_sweep("gpu", "fig1", ["bace-pipe", "sjf"], [0], tmp_path, values=[0.5, 1.25])
    hparams, metrics = hparams_columns(tmp_path / "tb", tensorboard_plugin)
    assert metrics[:4] == [
        "compare/avg_jct_h",
        "sweep/avg_jct_h",
        "compare/total_cost_usd",
        "sweep/total_cost_usd",
    ]
    assert {"experiment", "policy", "gpu_scale"} <= {name for name, _ in hparams}
    assert {"experiment", "policy", "gpu_scale"} == {name for name, d in hparams if d}
    sessions = hparams_sessions(tmp_path / "tb", tensorboard_plugin)
    assert len(sessions) == 2 + 4  # two policies, and two at each of two values
    for name, session in sessions.items():
        prefix = "compare" if name.startswith("compare/") else "sweep"
        assert f"{prefix}/total_cost_usd" in session["metrics"], name

    run_compare("fig1", ["bace-pipe", "sjf"], [0], tmp_path)  # again: nothing doubles
    assert hparams_columns(tmp_path / "tb", tensorboard_plugin) == (hparams, metrics)
    declarations = list((tmp_path / "tb").rglob("events.out.tfevents.*.hparams-table"))
    assert len(declarations) == 1
    assert not list((tmp_path / "tb").glob("events.out.tfevents.*"))  # no run of its own
    columns = json.loads((tmp_path / "tb" / "hparams-columns.json").read_text())
    assert sorted(columns) == ["compare/fig1", "sweep-gpu/fig1"]

    shutil.rmtree(tmp_path / "tb" / "sweep-gpu")
    run_compare("fig1", ["bace-pipe", "sjf"], [0], tmp_path)
    hparams, metrics = hparams_columns(tmp_path / "tb", tensorboard_plugin)
    assert all(tag.startswith("compare/") for tag in metrics)
    assert "gpu_scale" not in {name for name, _ in hparams}
