"""The hand-written TensorBoard event writer, read back with TensorBoard's own reader."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from bacepipe_env.experiments.tensorboard import ScalarWriter

EventAccumulator = pytest.importorskip(
    "tensorboard.backend.event_processing.event_accumulator"
).EventAccumulator


def load(logdir: Path) -> EventAccumulator:
    acc = EventAccumulator(str(logdir))
    acc.Reload()
    return acc


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
    egress: float | None, tmp_path: Path
) -> None:
    """`run_compare`'s event files, read back: carbon (absolute and over BACE-Pipe's on the
    same seed) always, the egress charge only when egress is on, each equal to the runs CSV."""
    import csv

    from bacepipe_env.experiments import run_compare

    knobs = {"prices": "hourly", "start_hour": 2000.0}
    if egress is not None:
        knobs["egress_usd_per_gb"] = egress
    policies, seeds = ["bace-pipe", "cr-lcf"], [0, 1]
    run_compare("paper", policies, seeds, tmp_path, knobs=knobs)
    with open(tmp_path / "compare-runs.csv", newline="", encoding="utf-8") as fh:
        runs = {(r["policy"], int(r["seed"])): r for r in csv.DictReader(fh)}
    for p in policies:
        acc = load(tmp_path / "tb" / p)
        tags = set(acc.Tags()["scalars"])
        assert {"compare/carbon_kg", "compare/carbon_norm"} <= tags
        assert ("compare/egress_usd" in tags) == (egress is not None)
        for e in acc.Scalars("compare/carbon_kg"):
            assert e.value == f32(float(runs[p, e.step]["carbon_kg"]))
        for e in acc.Scalars("compare/carbon_norm"):
            ref = float(runs["bace-pipe", e.step]["carbon_kg"])
            assert e.value == pytest.approx(float(runs[p, e.step]["carbon_kg"]) / ref, rel=1e-6)
        if egress is not None:
            events = acc.Scalars("compare/egress_usd")
            assert [e.step for e in events] == seeds
            for e in events:
                assert e.value == f32(float(runs[p, e.step]["egress_usd"]))
    if egress is not None:
        assert any(float(r["egress_usd"]) > 0 for r in runs.values())
