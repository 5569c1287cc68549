"""A minimal TensorBoard event-file writer (no tensorflow, no torch, no tensorboard).

TensorBoard reads TFRecord files of serialized ``Event`` protocol buffers; the few fields a
scalar, a text summary, an HParams session (``tensorboard.plugins.hparams``) and a
custom-scalars layout (``tensorboard.plugins.custom_scalar``) need are encoded here by hand,
so the simulator's experiments log without the ``train`` extra. Files it writes read back
with ``tensorboard.backend.event_processing.event_accumulator.EventAccumulator``.

:func:`run_component` keeps run-folder names short enough for TensorBoard's sidebar.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import socket
import struct
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from .. import outputs
from ..outputs import remove

__all__ = [
    "HPARAMS_COLUMNS",
    "MAX_RUN_COMPONENT",
    "Category",
    "Chart",
    "ScalarWriter",
    "declare_hparams_table",
    "run_component",
]

#: The longest run-folder name (one path component) TensorBoard's sidebar shows uncut.
MAX_RUN_COMPONENT = 30

#: A value the HParams table holds.
HValue = str | bool | float


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked_crc(data: bytes) -> int:
    crc = _crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint((field << 3) | wire)


def _bytes_field(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def _event(wall_time: float, step: int, *, file_version: str = "", summary: bytes = b"") -> bytes:
    msg = _key(1, 1) + struct.pack("<d", wall_time) + _key(2, 0) + _varint(step)
    if file_version:
        msg += _bytes_field(3, file_version.encode())
    if summary:
        msg += _bytes_field(5, summary)
    return msg


def _scalar_value(tag: str, value: float) -> bytes:
    # Summary.Value{tag = 1, simple_value = 2 (float)}
    return _bytes_field(1, _bytes_field(1, tag.encode()) + _key(2, 5) + struct.pack("<f", value))


def _plugin_value(tag: str, plugin: str, tensor: bytes, content: bytes = b"") -> bytes:
    # Summary.Value{tag = 1, tensor = 8,
    #               metadata = 9 {plugin_data = 1 {plugin_name = 1, content = 2}}}
    plugin_data = _bytes_field(1, plugin.encode())
    if content:
        plugin_data += _bytes_field(2, content)
    return _bytes_field(
        1,
        _bytes_field(1, tag.encode())
        + _bytes_field(9, _bytes_field(1, plugin_data))
        + _bytes_field(8, tensor),
    )


def _string_tensor(payload: bytes) -> bytes:
    # TensorProto{dtype = 1: DT_STRING (7), tensor_shape = 2 {} (a scalar), string_val = 8}
    return _key(1, 0) + _varint(7) + _bytes_field(2, b"") + _bytes_field(8, payload)


#: TensorProto{dtype: DT_FLOAT (1), tensor_shape {dim {size: 0}}}: the empty tensor the HParams
#: plugin's own summaries carry (everything is in the metadata).
_NULL_TENSOR = _key(1, 0) + _varint(1) + _bytes_field(2, _bytes_field(2, b""))


def _text_value(tag: str, text: str) -> bytes:
    return _plugin_value(tag, "text", _string_tensor(text.encode()))


def _double(field: int, value: float) -> bytes:
    return _key(field, 1) + struct.pack("<d", value)


def _proto_value(value: str | bool | float) -> bytes:
    # google.protobuf.Value{number_value = 2 (double), string_value = 3, bool_value = 4}
    if isinstance(value, bool):
        return _key(4, 0) + _varint(int(value))
    if isinstance(value, str):
        return _bytes_field(3, value.encode())
    return _double(2, float(value))


def _hparams_values(hparams: Mapping[str, str | bool | float], start: float) -> list[bytes]:
    # HParamsPluginData{version = 1: 0, session_start_info = 3, session_end_info = 4}
    # SessionStartInfo{hparams = 1 (map<string, Value>), start_time_secs = 5}
    entries = b"".join(
        _bytes_field(1, _bytes_field(1, k.encode()) + _bytes_field(2, _proto_value(v)))
        for k, v in hparams.items()
    )
    start_info = _bytes_field(3, entries + _double(5, start))
    # SessionEndInfo{status = 1: STATUS_SUCCESS (1), end_time_secs = 2}
    end_info = _bytes_field(4, _key(1, 0) + _varint(1) + _double(2, time.time()))
    return [
        _plugin_value("_hparams_/session_start_info", "hparams", _NULL_TENSOR, start_info),
        _plugin_value("_hparams_/session_end_info", "hparams", _NULL_TENSOR, end_info),
    ]


def _experiment(hparams: Mapping[str, Sequence[HValue]], metrics: Sequence[str]) -> bytes:
    # HParamsPluginData{version = 1: 0, experiment = 2: Experiment{
    #   hparam_infos = 4: HParamInfo{name = 1, type = 4 (DataType), differs = 7},
    #   metric_infos = 5: MetricInfo{name = 1: MetricName{group = 1, tag = 2}}}}
    body = b""
    for name, values in hparams.items():
        if all(isinstance(v, bool) for v in values):
            dtype = 2  # DATA_TYPE_BOOL
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            dtype = 3  # DATA_TYPE_FLOAT64
        else:
            dtype = 1  # DATA_TYPE_STRING
        info = _bytes_field(1, name.encode()) + _key(4, 0) + _varint(dtype)
        if len(set(values)) > 1:  # TensorBoard shows the first five, those that differ first
            info += _key(7, 0) + _varint(1)
        body += _bytes_field(4, info)
    for tag in metrics:
        body += _bytes_field(5, _bytes_field(1, _bytes_field(2, tag.encode())))
    return _plugin_value("_hparams_/experiment", "hparams", _NULL_TENSOR, _bytes_field(2, body))


@dataclass(frozen=True)
class Chart:
    """A custom-scalars chart: one line per (run, tag) whose tag matches one of ``tags``
    (regular expressions, searched as TensorBoard does)."""

    title: str
    tags: tuple[str, ...]


@dataclass(frozen=True)
class Category:
    """A collapsible section of the custom-scalars dashboard; categories of the same title
    from several runs are merged by TensorBoard."""

    title: str
    charts: tuple[Chart, ...]
    closed: bool = False


def _layout(categories: Sequence[Category]) -> bytes:
    # Layout{category = 2 {title = 1, chart = 2 {title = 1, multiline = 2 {tag = 1}}, closed = 3}}
    out = b""
    for cat in categories:
        body = _bytes_field(1, cat.title.encode())
        for chart in cat.charts:
            lines = b"".join(_bytes_field(1, t.encode()) for t in chart.tags)
            body += _bytes_field(2, _bytes_field(1, chart.title.encode()) + _bytes_field(2, lines))
        if cat.closed:
            body += _key(3, 0) + _varint(1)
        out += _bytes_field(2, body)
    return out


#: The file, at a logdir's top, listing the HParams columns of every part written there.
HPARAMS_COLUMNS = "hparams-columns.json"
_DECLARATION = ".hparams-table"  # the suffix of the declaring event file, at the same place


def _union(
    tables: Iterable[tuple[Mapping[str, Sequence[HValue | None]], Sequence[str]]],
) -> tuple[dict[str, list[HValue]], list[str]]:
    """Every hyperparameter's distinct values and every metric tag, in first-seen order, over
    ``tables`` of (values by name, tags); None and NaN values are left out, as the HParams
    plugin cannot show them."""
    values: dict[str, list[HValue]] = {}
    tags: list[str] = []
    for hparams, metrics in tables:
        for name, vals in hparams.items():
            column = values.setdefault(name, [])
            for v in vals:
                if v is None or (isinstance(v, float) and math.isnan(v)) or v in column:
                    continue
                column.append(v)
        for tag in metrics:
            if tag not in tags:
                tags.append(tag)
    return values, tags


def declare_hparams_table(
    tb_dir: Path,
    part: Path,
    sessions: Sequence[tuple[Mapping[str, HValue | None], Sequence[str]]],
    metric_order: Callable[[str], tuple[int, str]] | None = None,
    *,
    into: Path,
) -> Path:
    """Declare TensorBoard's HParams table of ``tb_dir``, where ``part`` (a folder inside it)
    now holds these ``sessions`` (each its hyperparameters and metric tags).

    Without a declaration TensorBoard lists the metrics by name and ticks the first five, so
    a total cost after five others is hidden. The declaration must cover every session under
    ``tb_dir``, and other parts may have been written there by earlier commands: their columns
    are kept in :data:`HPARAMS_COLUMNS` at ``tb_dir``'s top (parts whose folder is gone are
    dropped), and the one declaring event file is rewritten, in ``into`` (one of the sessions'
    run folders: a folder of its own would be an empty run in TensorBoard's run list). Metrics
    are ordered by ``metric_order`` (default: by name). Returns the event file's path."""
    manifest_path = tb_dir / HPARAMS_COLUMNS
    try:
        parts = json.loads(manifest_path.read_text(encoding="utf-8"))
        if not isinstance(parts, dict):
            parts = {}
    except (OSError, ValueError):
        parts = {}
    values, tags = _union(({k: [v] for k, v in h.items()}, m) for h, m in sessions)
    parts[part.relative_to(tb_dir).as_posix()] = {"hparams": values, "metrics": tags}
    parts = {
        key: entry
        for key, entry in sorted(parts.items())
        if isinstance(entry, dict)
        and isinstance(entry.get("hparams"), dict)
        and isinstance(entry.get("metrics"), list)
        and (tb_dir / key).is_dir()
    }
    outputs.write_text(manifest_path, json.dumps(parts, indent=1, sort_keys=True) + "\n")

    every, every_tag = _union((entry["hparams"], entry["metrics"]) for entry in parts.values())
    every_tag.sort(key=metric_order or (lambda tag: (0, tag)))
    for old in tb_dir.rglob(f"events.out.tfevents.*{_DECLARATION}"):
        remove(old)
    with ScalarWriter(into, suffix=_DECLARATION) as writer:
        writer.add_experiment(every, every_tag)
    return writer.path


def run_component(text: str, limit: int = MAX_RUN_COMPONENT) -> str:
    """``text`` as one short run-folder name: characters other than letters, digits and
    ``._+=-`` become ``-``, and a name longer than ``limit`` keeps its head and a 5-digit
    digest of the whole, so two long names stay apart (``a-very-long-...~1f2e3``)."""
    name = re.sub(r"[^A-Za-z0-9._+=-]+", "-", text).strip("-.") or "run"
    if len(name) <= limit:
        return name
    digest = hashlib.sha1(text.encode()).hexdigest()[:5]
    return f"{name[: limit - 6].rstrip('-.')}~{digest}"


class ScalarWriter:
    """Append scalars (and text) to a new event file in ``logdir``; one writer = one run.

    ``suffix`` ends the file name (TensorBoard reads any name containing ``tfevents``), so an
    experiment can find and replace its own earlier files.
    Use as a context manager or call :meth:`close`. Values are stored as 32-bit floats, as
    TensorBoard's ``simple_value`` is.
    """

    _counter = 0

    def __init__(self, logdir: str | os.PathLike[str], suffix: str = "") -> None:
        self.logdir = Path(logdir)
        self.logdir.mkdir(parents=True, exist_ok=True)
        ScalarWriter._counter += 1
        name = (
            f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}."
            f"{os.getpid()}.{ScalarWriter._counter}{suffix}"
        )
        self.path = self.logdir / name
        # written beside its place and renamed there by close() (bacepipe_env.outputs)
        self._target = outputs.target(self.path)
        self._file = open(self._target.__enter__(), "wb")  # noqa: SIM115 - closed by close()
        self._write(_event(time.time(), 0, file_version="brain.Event:2"))

    def _write(self, data: bytes) -> None:
        header = struct.pack("<Q", len(data))
        self._file.write(header + struct.pack("<I", _masked_crc(header)))
        self._file.write(data + struct.pack("<I", _masked_crc(data)))

    def add_scalar(self, tag: str, value: float, step: int, wall_time: float | None = None) -> None:
        """Record ``value`` under ``tag`` at ``step``."""
        wt = time.time() if wall_time is None else wall_time
        self._write(_event(wt, int(step), summary=_scalar_value(tag, float(value))))

    def add_summary(self, summary: bytes, step: int = 0) -> None:
        """Record an already serialized ``Summary`` protocol buffer (e.g. TensorBoard's
        hparams plugin's ``hparams_pb(...).SerializeToString()``)."""
        self._write(_event(time.time(), int(step), summary=summary))

    def add_text(self, tag: str, text: str, step: int = 0) -> None:
        """Record a (markdown) text summary, shown in TensorBoard's Text tab."""
        self._write(_event(time.time(), int(step), summary=_text_value(tag, text)))

    def add_hparams(
        self, hparams: Mapping[str, str | bool | float | None], start_time: float | None = None
    ) -> None:
        """Make this run one HParams session (a row of TensorBoard's HParams table) with these
        hyperparameter values, started at ``start_time`` and finished now. The table's metric
        columns are the run's scalars (their last values); ``None`` and NaN values are left
        out, as the plugin cannot show them."""
        clean = {
            k: v
            for k, v in hparams.items()
            if v is not None and not (isinstance(v, float) and math.isnan(v))
        }
        start = time.time() if start_time is None else start_time
        for value in _hparams_values(clean, start):
            self._write(_event(time.time(), 0, summary=value))

    def add_experiment(
        self, hparams: Mapping[str, Sequence[HValue]], metrics: Sequence[str]
    ) -> None:
        """Declare the HParams table: its hyperparameter columns (each with every value the
        sessions take; TensorBoard ticks five, those that differ first) and its metric columns
        in this order (TensorBoard ticks the first five). TensorBoard reads one declaration per
        logdir, so write it in one run only (:func:`declare_hparams_table` does)."""
        self._write(_event(time.time(), 0, summary=_experiment(hparams, metrics)))

    def add_custom_scalars(self, categories: Sequence[Category]) -> None:
        """Record a layout for TensorBoard's Custom Scalars dashboard
        (``#custom_scalars``); layouts of several runs are merged category by category."""
        tensor = _string_tensor(_layout(categories))
        value = _plugin_value("custom_scalars__config__", "custom_scalars", tensor)
        self._write(_event(time.time(), 0, summary=value))

    def flush(self) -> None:
        """Push buffered events to disk."""
        self._file.flush()

    def close(self) -> None:
        """Flush and close the event file, and move it into place."""
        if not self._file.closed:
            self._file.close()
            self._target.__exit__(None, None, None)

    def discard(self) -> None:
        """Close the event file and remove it: the run it recorded did not finish."""
        if not self._file.closed:
            self._file.close()
            with contextlib.suppress(_DiscardedError):
                self._target.__exit__(_DiscardedError, _DiscardedError(), None)

    def __enter__(self) -> ScalarWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()


class _DiscardedError(Exception):
    """Thrown into an event file's :func:`~bacepipe_env.outputs.target` to drop the file."""
