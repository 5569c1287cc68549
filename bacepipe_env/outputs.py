"""Files that are whole or absent, and a run's outputs that never mix two runs.

Every file the package writes goes through this module:

- :func:`write_text` and :func:`target` write to a temporary name in the destination's own
  folder (``.compare-<token>.tmp.png``) and rename it into place, so a reader never sees a
  half-written file, whatever stops the writer.
- Inside an :class:`OutputSet` (what the command line opens around every run that writes an
  ``--out`` folder) the renames wait for :meth:`OutputSet.commit`. A run that is interrupted,
  killed or fails leaves the folder as it was; a run that finishes replaces its files all at
  once and then writes ``<name>.manifest.json`` last: the command and each file's SHA-256. Files
  the run's previous manifest listed and this run did not write are removed, so the folder
  never mixes the new CSV with an older run's chart.
- The commit blocks SIGINT, SIGTERM and SIGHUP while it renames (a few milliseconds), and
  journals itself in ``.<name>.manifest.pending`` first: after a SIGKILL in that window,
  :func:`recover` (which the next run on the folder calls) finishes it.
- An :class:`OutputSet` holds an exclusive lock on its folder for the whole run: a second run
  writing to the same folder is refused with one line while the first is running.

Without an open :class:`OutputSet` (the library used from Python), each file is renamed into
place as soon as it is written.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import fcntl
import hashlib
import json
import os
import secrets
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from .errors import BacepipeError, ValidationError

__all__ = [
    "OutputSet",
    "locked",
    "manifest",
    "recover",
    "remove",
    "save_figure",
    "target",
    "write_text",
]

_ACTIVE: contextvars.ContextVar[OutputSet | None] = contextvars.ContextVar(
    "bacepipe_output_set", default=None
)
_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
_TMP_MARK = ".tmp"


def _temp_name(path: Path) -> Path:
    """A fresh hidden name beside ``path`` that keeps its suffix (matplotlib and SB3 read the
    format from it): ``out/compare.png`` -> ``out/.compare-3f9a1c.tmp.png``."""
    return path.with_name(f".{path.stem}-{secrets.token_hex(4)}{_TMP_MARK}{path.suffix}")


def _is_temp(path: Path) -> bool:
    return path.name.startswith(".") and _TMP_MARK in path.name


def _cannot(path: Path, err: OSError, field: str | None = None) -> BacepipeError:
    if field is not None:
        return ValidationError(field, str(path), f"cannot write: {err.strerror or err}")
    return BacepipeError(f"cannot write {path}: {err.strerror or err}")


@contextlib.contextmanager
def target(path: str | os.PathLike[str], *, field: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write; when the block ends without an error
    it becomes ``path`` (at once, or at the open :class:`OutputSet`'s commit); otherwise it
    is removed. An ``OSError`` becomes one line naming ``path``, or the argument ``field``
    (``--json``) that gave it, as a ValidationError."""
    final = Path(path)
    tmp = _temp_name(final)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        _place(tmp, final)
    except OSError as err:
        _unlink(tmp)
        raise _cannot(final, err, field) from None
    except BaseException:
        _unlink(tmp)
        raise


def write_text(path: str | os.PathLike[str], text: str, *, field: str | None = None) -> Path:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all (see :func:`target`, which
    ``field`` is passed to); returns ``path`` as a Path."""
    with target(path, field=field) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def save_figure(figure: Any, path: str | os.PathLike[str]) -> Path:
    """Save a matplotlib ``figure`` to ``path`` whole or not at all (the format from the
    suffix, as ``savefig``'s); returns ``path`` as a Path."""
    with target(path) as tmp:
        figure.savefig(tmp)
    return Path(path)


def remove(path: str | os.PathLike[str]) -> None:
    """Remove ``path`` now, or at the open :class:`OutputSet`'s commit (so that an
    interrupted run removes nothing)."""
    active = _ACTIVE.get()
    if active is not None and active.holds(Path(path)):
        active._removals.append(Path(path))
    else:
        _unlink(Path(path))


def _place(tmp: Path, final: Path) -> None:
    active = _ACTIVE.get()
    if active is not None and active.holds(final):
        active._add(tmp, final)
    else:
        os.replace(tmp, final)


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        path.unlink()


def _exists(path: Path) -> bool:
    """``path.exists()``, False for a name the system refuses (too long, say)."""
    try:
        return path.exists()
    except OSError:
        return False


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest(folder: str | os.PathLike[str], name: str) -> dict[str, Any] | None:
    """The manifest ``<name>.manifest.json`` in ``folder`` (``{"command", "files": [{"path",
    "sha256", "bytes"}]}``), or None if there is none."""
    path = Path(folder) / f"{name}.manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise BacepipeError(f"cannot read {path}: {err}") from None
    return data if isinstance(data, dict) else None


def recover(folder: str | os.PathLike[str]) -> None:
    """Finish every commit in ``folder`` that a SIGKILL cut short (from its journal) and
    remove the temporary files of runs that never reached their commit. Call it only while
    no other run writes there (an :class:`OutputSet` does, under its lock)."""
    root = Path(folder)
    if not root.is_dir():
        return
    for journal in sorted(root.glob(".*.manifest.pending")):
        try:
            plan = json.loads(journal.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # cut short while the journal itself was written
            _unlink(journal)
            continue
        _apply(root, plan, journal)
    for path in root.rglob(f".*{_TMP_MARK}*"):
        if path.is_file() and _is_temp(path):
            _unlink(path)


def _apply(root: Path, plan: dict[str, Any], journal: Path) -> None:
    """Carry out a journalled commit: old manifest out, files in, stale files out, manifest
    in. Every step can be repeated, so a commit cut short and finished later ends the same."""
    name = plan["name"]
    _unlink(root / f"{name}.manifest.json")
    for rel, tmp in plan["moves"]:
        src, dst = root / tmp, root / rel
        if src.exists():
            os.replace(src, dst)
    for rel in plan["stale"]:
        _unlink(root / rel)
    (root / f".{name}.manifest.tmp.json").write_text(plan["manifest"], encoding="utf-8")
    os.replace(root / f".{name}.manifest.tmp.json", root / f"{name}.manifest.json")
    _unlink(journal)


def _lock(folder: Path, field: str) -> int:
    """Create ``folder`` if missing and lock it for this process (``flock`` on the folder
    itself: the kernel drops the lock when the process ends, however it ends); returns the
    descriptor that holds the lock. One line naming ``field`` if the folder cannot be made
    or written, or if another run holds it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as err:
        raise ValidationError(
            field, str(folder), f"cannot create or open: {err.strerror}"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        os.close(fd)
        if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise ValidationError(field, str(folder), f"cannot lock: {err.strerror}") from None
        raise ValidationError(
            field,
            str(folder),
            "another bacepipe run is writing there; wait for it or choose another",
        ) from None
    if not os.access(folder, os.W_OK):
        os.close(fd)
        raise ValidationError(field, str(folder), "is not writable")
    return fd


@contextlib.contextmanager
def locked(folder: str | os.PathLike[str], field: str = "--out") -> Iterator[Path]:
    """Hold ``folder`` (created if missing) for the block: a second run that asks for it
    meanwhile is refused with one line naming ``field``. Files are still written as
    :func:`target` writes them (at once, when no :class:`OutputSet` is open)."""
    fd = _lock(Path(folder), field)
    try:
        yield Path(folder)
    finally:
        os.close(fd)


class OutputSet:
    """One run's outputs in ``folder``: written beside their places, moved in together by
    :meth:`commit`, with ``<name>.manifest.json`` last (see the module docs).

    Args:
        folder: the run's ``--out`` folder (created if missing).
        name: the run's outputs' name (``compare``, ``sweep-bandwidth``, ``reproduction``):
            the manifest's name, and which earlier files this run replaces.
        command: the command line, recorded in the manifest.
        field: how errors name the folder (``--out``).

    Use as a context manager: entering locks the folder (a ValidationError if another run
    holds it) and finishes any interrupted commit; leaving without an error commits, leaving
    with one discards this run's files.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        name: str,
        command: Sequence[str] = (),
        *,
        field: str = "--out",
    ) -> None:
        self.folder = Path(folder)
        self.name = name
        self.command = list(command)
        self.field = field
        self.written: dict[Path, Path] = {}  # final -> temporary
        self._removals: list[Path] = []
        self._lock: int | None = None
        self._created: list[Path] = []
        self._token: contextvars.Token[OutputSet | None] | None = None

    def holds(self, path: Path) -> bool:
        """Whether ``path`` lies inside this set's folder."""
        try:
            path.resolve().relative_to(self.folder.resolve())
        except ValueError:
            return False
        return True

    def _add(self, tmp: Path, final: Path) -> None:
        old = self.written.get(final)
        if old is not None:
            _unlink(old)
        self.written[final] = tmp

    def __enter__(self) -> OutputSet:
        # the folders this run creates: a run refused or stopped before its commit removes
        # them again (when empty), so that bad input leaves nothing behind
        self._created = [d for d in (self.folder, *self.folder.parents) if not _exists(d)]
        self._lock = _lock(self.folder, self.field)
        recover(self.folder)
        self._token = _ACTIVE.set(self)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if kind is None:
                if self.written or self._removals:
                    self.commit()
            else:
                self.discard()
        finally:
            if self._token is not None:
                _ACTIVE.reset(self._token)
                self._token = None
            self._release()

    def _release(self) -> None:
        if self._lock is not None:
            os.close(self._lock)  # closing the descriptor drops the lock
            self._lock = None

    def discard(self) -> None:
        """Remove this run's temporary files; the folder stays as it was."""
        for tmp in self.written.values():
            _unlink(tmp)
        self.written.clear()
        self._removals.clear()
        for folder in self._created:
            if not folder.is_dir() or any(folder.iterdir()):
                break
            with contextlib.suppress(OSError):
                folder.rmdir()

    def commit(self, name: str | None = None) -> list[Path]:
        """Move the files written so far into place, remove what the previous manifest of
        ``name`` (default: the set's) listed and this run did not write (and what
        :func:`remove` was asked to), then write the manifest ``<name>.manifest.json``;
        returns the files' final paths. SIGINT, SIGTERM and SIGHUP wait until it is done. A
        run that writes several sets (``sweep --kind all``) commits each under its name."""
        name = self.name if name is None else name
        root = self.folder.resolve()
        rel = {final: final.resolve().relative_to(root).as_posix() for final in self.written}
        files = [
            {"path": rel[final], "sha256": _sha256(tmp), "bytes": tmp.stat().st_size}
            for final, tmp in sorted(self.written.items(), key=lambda kv: rel[kv[0]])
        ]
        kept = {f["path"] for f in files}
        before = manifest(root, name) or {"files": []}
        stale = sorted(
            {f["path"] for f in before.get("files", []) if f.get("path") not in kept}
            | {p.resolve().relative_to(root).as_posix() for p in self._removals if self.holds(p)}
            - kept
        )
        text = json.dumps({"command": self.command, "files": files}, indent=2) + "\n"
        plan = {
            "name": name,
            "manifest": text,
            "moves": [
                [rel[final], tmp.resolve().relative_to(root).as_posix()]
                for final, tmp in self.written.items()
            ],
            "stale": stale,
        }
        journal = root / f".{name}.manifest.pending"
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            try:
                tmp_journal = root / f".{name}.manifest.pending.tmp"
                tmp_journal.write_text(json.dumps(plan), encoding="utf-8")
                os.replace(tmp_journal, journal)
                _apply(root, plan, journal)
            except OSError as err:
                raise _cannot(root, err) from None
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        placed = sorted(self.written, key=lambda p: rel[p])
        self.written.clear()
        self._removals.clear()
        return placed
