"""A minimal TensorBoard event-file writer for scalars and text (no tensorflow, no torch).

TensorBoard reads TFRecord files of serialized ``Event`` protocol buffers; the few fields a
scalar or a text summary needs are encoded here by hand. Files it writes read back with
``tensorboard.backend.event_processing.event_accumulator.EventAccumulator``.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from pathlib import Path
from types import TracebackType

__all__ = ["ScalarWriter"]


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


def _text_value(tag: str, text: str) -> bytes:
    # Summary.Value{tag = 1, metadata = 9 {plugin_data = 1 {plugin_name = 1: "text"}},
    #               tensor = 8 {dtype = 1: DT_STRING (7), tensor_shape = 2 {}, string_val = 8}}
    metadata = _bytes_field(1, _bytes_field(1, b"text"))
    tensor = _key(1, 0) + _varint(7) + _bytes_field(2, b"") + _bytes_field(8, text.encode())
    return _bytes_field(
        1, _bytes_field(1, tag.encode()) + _bytes_field(9, metadata) + _bytes_field(8, tensor)
    )


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
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close()
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

    def flush(self) -> None:
        """Push buffered events to disk."""
        self._file.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> ScalarWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
