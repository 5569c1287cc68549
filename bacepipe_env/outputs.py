"""Files that are whole or absent, and a run's outputs that never mix two runs.

Every file the package writes goes through this module:

- :func:`write_text` and :func:`target` write to a temporary name in the destination's own
  folder (``.compare-<token>-<random>.tmp.png``) and rename it into place, so a reader never
  sees a half-written file, whatever stops the writer.
- Inside an :class:`OutputSet` (what the command line opens around every run that writes an
  ``--out`` folder) the renames wait for :meth:`OutputSet.commit`. A run that is interrupted,
  killed or fails leaves the folder as it was; a run that finishes replaces its files all at
  once and then writes ``<name>.manifest.json`` last: the command and each file's SHA-256 and
  size. Files the run's previous manifest listed and this run did not write are removed, so the
  folder never mixes the new CSV with an older run's chart.
- The commit blocks SIGINT, SIGTERM and SIGHUP while it renames (a few milliseconds), and
  journals itself in ``.<name>.manifest.pending`` first: after a SIGKILL in that window,
  :func:`recover` (which the next run on the folder calls) finishes it.
- An :class:`OutputSet` holds an exclusive lock on its folder for the whole run: a second run
  writing to the same folder is refused with one line while the first is running.

What a manifest or a journal says is trusted only as far as it can be proved, as a careful user
of ``rsync --delete`` would expect (docs/cli.md, "Stopping a run, and its outputs"):

- a listed file is removed only if it is a plain file strictly inside the folder, reached
  without a symbolic link, and its size and SHA-256 are still those the manifest recorded;
  anything else (``../x``, an absolute path, a folder, a path through a link, a file changed
  since) is left in place with one warning line naming it;
- a journal moves only this tool's temporary files of the run that wrote it into places inside
  the folder, by the same rule, and removes a file (one the previous manifest listed, or one
  the run asked to remove with :func:`remove`) only by the manifest's rule: the size and
  SHA-256 it records, taken when the run committed, must still be the file's;
- the temporary files swept at the start of a run are only those whose name carries the token
  of a run on this folder that is known to have ended (its ``.bacepipe-<token>.run`` claim is
  there while no run holds the folder): a user's ``notes/.draft.tmp.txt`` and a live run's
  files in a subfolder are never touched;
- a manifest or journal that is not in the format this tool writes is one line naming the file
  and what to do (a :class:`~bacepipe_env.errors.BacepipeError`); nothing is removed on its word.

Without an open :class:`OutputSet` (the library used from Python), each file is renamed into
place as soon as it is written. The folder lock uses ``fcntl.flock`` on the folder itself (the
kernel drops it however the process ends, and no lock file is left in the folder); on a system
without ``fcntl`` runs are not kept apart, which the first run says once.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import json
import os
import re
import secrets
import signal
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from .errors import BacepipeError, ValidationError, shorten

try:  # Unix; elsewhere runs on one folder are not kept apart (said once, by _lock)
    import fcntl
except ImportError:  # pragma: no cover - exercised in a subprocess by tests/test_portability.py
    fcntl = None  # type: ignore[assignment]

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
_SIGNALS = {
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
}
#: The token of this process family's writes outside an OutputSet (forked workers share it).
_PROCESS_TOKEN = secrets.token_hex(6)
#: ``.<stem>-<token>-<random>.tmp<suffix>``: only names of this shape are this tool's temporaries.
_TEMP = re.compile(r"^\..*-(?P<token>[0-9a-f]{12})-[0-9a-f]{8}\.tmp(?:\.[^./]*)?$")
#: ``.bacepipe-<token>.run``: a run's claim on its folder, there from its start to its end.
_CLAIM = re.compile(r"^\.bacepipe-(?P<token>[0-9a-f]{12})\.run$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_JOURNAL_VERSION = 3  # 3: removals carry size and SHA-256, like stale
_warned_no_lock = False


def _temp_name(path: Path, token: str | None = None) -> Path:
    """A fresh hidden name beside ``path`` that keeps its suffix (matplotlib and SB3 read the
    format from it) and carries the writing run's token: ``out/compare.png`` ->
    ``out/.compare-<token>-3f9a1c2b.tmp.png``."""
    if token is None:
        active = _ACTIVE.get()
        token = active.token if active is not None else _PROCESS_TOKEN
    return path.with_name(f".{path.stem}-{token}-{secrets.token_hex(4)}.tmp{path.suffix}")


def _warn(text: str) -> None:
    """One ``bacepipe: warning:`` line on stderr (under 200 characters)."""
    line = shorten(" ".join(text.split()), 180)
    with contextlib.suppress(OSError, ValueError):
        print(f"bacepipe: warning: {line}", file=sys.stderr, flush=True)


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
    interrupted run removes nothing). Inside a set, only a plain file strictly inside its
    folder, reached without a symbolic link, is removed, and only if it is still the file it
    was at the commit (its size and SHA-256, journalled then); anything else stays, with a
    warning."""
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


# --- what a manifest or journal may name ----------------------------------------------------


def _relative_parts(rel: str) -> list[str] | None:
    """The components of ``rel`` if it is a plain relative path (``a/b.csv``: no absolute
    path, no empty, ``.`` or ``..`` component, no backslash), else None."""
    if not rel or rel.startswith("/") or os.path.isabs(rel) or "\\" in rel:
        return None
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    return parts


def _place_inside(root: Path, rel: str) -> Path | str:
    """``root / rel`` if every folder on the way is a real folder strictly inside ``root``
    (none a symbolic link), else why not. ``root`` is resolved."""
    parts = _relative_parts(rel)
    if parts is None:
        return "is not a relative path strictly inside the folder"
    here = root
    for part in parts[:-1]:
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            return root.joinpath(*parts)  # nothing there yet: a move creates the folders
        except OSError as err:
            return f"cannot be read ({err.strerror})"
        if stat.S_ISLNK(mode):
            return "passes through a symbolic link"
        if not stat.S_ISDIR(mode):
            return "passes through something that is not a folder"
    return here / parts[-1]


def _plain_file(root: Path, rel: str) -> Path | str | None:
    """``root / rel`` if it is a plain file strictly inside ``root`` reached without a link;
    None if nothing is there; else why it is not one."""
    place = _place_inside(root, rel)
    if isinstance(place, str):
        return place
    try:
        mode = os.lstat(place).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        return f"cannot be read ({err.strerror})"
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if not stat.S_ISREG(mode):
        return "is not a plain file" + (" (a folder)" if stat.S_ISDIR(mode) else "")
    return place


def _remove_proven(root: Path, entry: dict[str, Any], source: Path) -> None:
    """Remove the manifest ``entry``'s file if it is provably the one this tool wrote there
    (a plain file strictly inside ``root``, reached without a link, with the recorded size
    and SHA-256); otherwise leave it, with one warning naming it and ``source``."""
    rel = entry["path"]
    found = _plain_file(root, rel)
    if found is None:
        return  # already gone
    if isinstance(found, str):
        _warn(f"{source.name} lists {rel!r}, which {found}; left in place")
        return
    try:
        same = found.stat().st_size == entry["bytes"] and _sha256(found) == entry["sha256"]
    except OSError as err:
        _warn(f"{source.name} lists {rel!r}, which cannot be read ({err.strerror}); left in place")
        return
    if not same:
        _warn(f"{source.name} lists {rel!r}, which changed since this tool wrote it; left in place")
        return
    _unlink(found)


def _proof(root: Path, rel: str, source: str) -> dict[str, Any] | None:
    """The manifest entry (``path``, ``sha256``, ``bytes``) that proves the file ``rel`` as it
    is now, for the run to journal its removal (:func:`remove`); None if nothing is there, or
    if it is not a plain file strictly inside ``root`` reached without a link (then it stays,
    with one warning naming ``source``)."""
    found = _plain_file(root, rel)
    if isinstance(found, str):
        _warn(f"{source}: not removing {rel!r}, which {found}")
        return None
    if found is None:
        return None
    try:
        return {"path": rel, "sha256": _sha256(found), "bytes": found.stat().st_size}
    except OSError as err:
        _warn(f"{source}: not removing {rel!r}, which cannot be read ({err.strerror})")
        return None


# --- reading what is on disk ----------------------------------------------------------------


class _MalformedError(Exception):
    """What is wrong with a manifest or journal (becomes one BacepipeError line)."""


def _shown(path: Path, limit: int = 60) -> str:
    """``path`` in at most ``limit`` characters, keeping its end (the file's name)."""
    text = str(path)
    return text if len(text) <= limit else "..." + text[-(limit - 3) :]


def _malformed(path: Path, what: str, problem: str, todo: str) -> BacepipeError:
    """One line (under 180 characters): the file, what is wrong, what to do."""
    rest = f" is not a {what} this tool wrote ({shorten(problem, 60)}); {todo}"
    return BacepipeError(_shown(path, max(30, 180 - len(rest))) + rest)


def _check_files(files: Any, where: str) -> list[dict[str, Any]]:
    """A manifest's ``files``: a list of ``{"path": str, "sha256": hex, "bytes": int}``."""
    if not isinstance(files, list):
        raise _MalformedError(f"{where} is not a list")
    for i, entry in enumerate(files):
        here = f"{where}[{i}]"
        if not isinstance(entry, dict):
            raise _MalformedError(f"{here} is not an object")
        path = entry.get("path")
        if not isinstance(path, str):
            raise _MalformedError(f"{here}.path is not a string")
        if "\0" in path:
            raise _MalformedError(f"{here}.path holds a NUL character")
        digest = entry.get("sha256")
        if not isinstance(digest, str) or not _SHA256.match(digest):
            raise _MalformedError(f"{here}.sha256 is not a SHA-256 in hex")
        size = entry.get("bytes")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise _MalformedError(f"{here}.bytes is not a size in bytes")
    return files


def _parse_manifest(text: str, where: str = "files") -> dict[str, Any]:
    data = json.loads(text)
    if not isinstance(data, dict):
        raise _MalformedError("not a JSON object")
    _check_files(data.get("files"), where)
    command = data.get("command", [])
    if not isinstance(command, list) or not all(isinstance(c, str) for c in command):
        raise _MalformedError("command is not a list of strings")
    return data


def manifest(folder: str | os.PathLike[str], name: str) -> dict[str, Any] | None:
    """The manifest ``<name>.manifest.json`` in ``folder`` (``{"command", "files": [{"path",
    "sha256", "bytes"}]}``), or None if there is none. One line (a BacepipeError) naming the
    file if it is not a manifest this tool wrote."""
    path = Path(folder) / f"{name}.manifest.json"
    todo = "remove it (its files stay) or choose another --out"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise _malformed(path, "manifest", "it is a folder", todo) from None
    except OSError as err:
        raise BacepipeError(f"cannot read {_shown(path)}: {err.strerror}") from None
    except ValueError:
        raise _malformed(path, "manifest", "not UTF-8 text", todo) from None
    try:
        return _parse_manifest(text)
    except ValueError:
        raise _malformed(path, "manifest", "not JSON", todo) from None
    except _MalformedError as err:
        raise _malformed(path, "manifest", str(err), todo) from None


@dataclass(frozen=True)
class _Plan:
    """A journalled commit: what :func:`_apply` carries out, checked on reading."""

    name: str
    token: str
    manifest: str
    moves: list[tuple[str, str]]  # (final, temporary), relative to the folder
    stale: list[dict[str, Any]]  # the previous manifest's entries to remove, if proven
    removals: list[dict[str, Any]]  # what the run asked to remove (remove()), as entries

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": _JOURNAL_VERSION,
                "name": self.name,
                "token": self.token,
                "manifest": self.manifest,
                "moves": [list(m) for m in self.moves],
                "stale": self.stale,
                "removals": self.removals,
            }
        )


def _journal_name(journal: Path) -> str:
    return journal.name[1 : -len(".manifest.pending")]


def _read_journal(journal: Path) -> _Plan:
    """The plan in ``journal``, or one line naming it if it is not a journal this tool wrote."""
    todo = "remove it and run again (that run's files are lost)"
    try:
        text = journal.read_text(encoding="utf-8")
        data = json.loads(text)
    except IsADirectoryError:
        raise _malformed(journal, "journal", "it is a folder", todo) from None
    except OSError as err:
        raise BacepipeError(f"cannot read {_shown(journal)}: {err.strerror}") from None
    except ValueError:
        raise _malformed(journal, "journal", "not JSON", todo) from None
    try:
        if not isinstance(data, dict):
            raise _MalformedError("not a JSON object")
        if data.get("version") != _JOURNAL_VERSION:
            raise _MalformedError(f"version is not {_JOURNAL_VERSION}")
        if data.get("name") != _journal_name(journal):
            raise _MalformedError("its name is not the file's")
        token = data.get("token")
        if not isinstance(token, str) or not re.fullmatch(r"[0-9a-f]{12}", token):
            raise _MalformedError("token is not a run token")
        kept = data.get("manifest")
        if not isinstance(kept, str):
            raise _MalformedError("manifest is not a string")
        try:
            _parse_manifest(kept, "manifest.files")
        except ValueError:
            raise _MalformedError("manifest is not JSON") from None
        moves = data.get("moves")
        if not isinstance(moves, list) or not all(
            isinstance(m, list) and len(m) == 2 and all(isinstance(p, str) for p in m)
            for m in moves
        ):
            raise _MalformedError("moves is not a list of [final, temporary] pairs")
        if any("\0" in p for m in moves for p in m):
            raise _MalformedError("a move holds a NUL character")
        stale = _check_files(data.get("stale"), "stale")
        removals = _check_files(data.get("removals"), "removals")
    except _MalformedError as err:
        raise _malformed(journal, "journal", str(err), todo) from None
    return _Plan(data["name"], token, kept, [(a, b) for a, b in moves], stale, removals)


def _walk_files(root: Path) -> Iterator[Path]:
    """Every file under ``root``, never following a symbolic link to a folder."""
    for here, folders, files in os.walk(root, followlinks=False):
        folders.sort()
        for name in sorted(files):
            yield Path(here) / name


def recover(folder: str | os.PathLike[str]) -> None:
    """Finish every commit in ``folder`` that a SIGKILL cut short (from its journal), then
    remove the temporary files of the runs on ``folder`` that ended without reaching their
    commit (those whose claim is still there). Call it only while no other run writes there
    (an :class:`OutputSet` does, under its lock). A journal that is not this tool's is one
    line (a BacepipeError) naming it, before anything is moved or removed."""
    root = Path(folder)
    if not root.is_dir():
        return
    root = root.resolve()
    journals = sorted(root.glob(".*.manifest.pending"))
    plans = [(_read_journal(journal), journal) for journal in journals]  # all checked first
    for plan, journal in plans:
        _apply(root, plan, journal)
    claims = [c for c in root.iterdir() if _CLAIM.match(c.name)]
    ended = {m["token"] for c in claims if (m := _CLAIM.match(c.name))}
    if ended:
        for path in _walk_files(root):
            found = _TEMP.match(path.name)
            if found and found["token"] in ended and path.is_file() and not path.is_symlink():
                _unlink(path)
    for claim in claims:
        _unlink(claim)


def _apply(root: Path, plan: _Plan, journal: Path) -> None:
    """Carry out a journalled commit: old manifest out, files in, stale files out, manifest
    in. Every step can be repeated, so a commit cut short and finished later ends the same.
    Only this run's temporaries move, only to places inside ``root``; a stale file, or one the
    run asked to remove, is removed only when proven (see :func:`_remove_proven`)."""
    manifest_path = root / f"{plan.name}.manifest.json"
    _unlink(manifest_path)
    for rel, tmp in plan.moves:
        found = _TEMP.match(Path(tmp).name)
        src = _plain_file(root, tmp)
        if src is None:
            continue  # moved already
        if isinstance(src, str) or not found or found["token"] != plan.token:
            _warn(f"{journal.name}: not moving {tmp!r}, which is not this run's temporary file")
            continue
        dst = _place_inside(root, rel)
        if isinstance(dst, str):
            _warn(f"{journal.name}: not moving a file to {rel!r}, which {dst}")
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dst)
    for entry in plan.stale:
        _remove_proven(root, entry, manifest_path)
    for entry in plan.removals:
        _remove_proven(root, entry, journal)
    tmp_manifest = _temp_name(manifest_path, plan.token)
    tmp_manifest.write_text(plan.manifest, encoding="utf-8")
    os.replace(tmp_manifest, manifest_path)
    _unlink(journal)


# --- the folder lock ------------------------------------------------------------------------


def _lock(folder: Path, field: str) -> int | None:
    """Create ``folder`` if missing and lock it for this process (``flock`` on the folder
    itself: the kernel drops the lock when the process ends, however it ends); returns the
    descriptor that holds the lock (None where the system has no ``flock``). One line naming
    ``field`` if the folder cannot be made or written, or if another run holds it."""
    global _warned_no_lock
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = (
            os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            if fcntl is not None
            else None
        )
    except OSError as err:
        raise ValidationError(
            field, str(folder), f"cannot create or open: {err.strerror}"
        ) from None
    if fd is None:
        if not _warned_no_lock:
            _warned_no_lock = True
            _warn("this system has no fcntl: two runs on one output folder are not kept apart")
    else:
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
        if fd is not None:
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
        if fd is not None:
            os.close(fd)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP wait until the block is done (where the system can)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


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
    holds it), finishes any interrupted commit, checks the manifests this run may replace
    (``<name>*.manifest.json``: a malformed one is one line before any work is done) and
    claims the folder with ``.bacepipe-<token>.run``; leaving without an error commits,
    leaving with one discards this run's files. Either way the claim goes.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        name: str,
        command: Sequence[str] = (),
        *,
        field: str = "--out",
    ) -> None:
        if not name or "/" in name or "\0" in name or name.startswith("."):
            raise ValueError(f"an output set's name is a plain file name, not {name!r}")
        self.folder = Path(folder)
        self.name = name
        self.command = list(command)
        self.field = field
        #: this run's token: in its temporaries' names and its claim
        self.token = secrets.token_hex(6)
        self.written: dict[Path, Path] = {}  # final -> temporary
        self._removals: list[Path] = []
        self._lock: int | None = None
        self._claim: Path | None = None
        self._pending = False  # a journalled commit is under way
        self._created: list[Path] = []
        self._ctx: contextvars.Token[OutputSet | None] | None = None

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
        try:
            try:
                recover(self.folder)
            except OSError as err:
                raise _cannot(self.folder, err, self.field) from None
            for path in sorted(self.folder.glob(f"{_glob_escape(self.name)}*.manifest.json")):
                manifest(self.folder, path.name[: -len(".manifest.json")])
            claim = self.folder / f".bacepipe-{self.token}.run"
            try:
                claim.write_text(json.dumps({"pid": os.getpid()}) + "\n", encoding="utf-8")
            except OSError as err:
                raise _cannot(self.folder, err, self.field) from None
            self._claim = claim
        except BaseException:
            self.discard()
            self._release()
            raise
        self._ctx = _ACTIVE.set(self)
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
        except BaseException:
            if not self._pending:
                self.discard()
            raise
        finally:
            if self._ctx is not None:
                _ACTIVE.reset(self._ctx)
                self._ctx = None
            self._unclaim()
            self._release()

    def _release(self) -> None:
        if self._lock is not None:
            os.close(self._lock)  # closing the descriptor drops the lock
            self._lock = None

    def _unclaim(self) -> None:
        if self._claim is not None and not self._pending:
            _unlink(self._claim)
            self._claim = None

    def discard(self) -> None:
        """Remove this run's temporary files and its claim; the folder stays as it was (the
        folders the run created go again while empty)."""
        for tmp in self.written.values():
            _unlink(tmp)
        self.written.clear()
        self._removals.clear()
        self._unclaim()
        for folder in self._created:
            if not folder.is_dir() or any(folder.iterdir()):
                break
            with contextlib.suppress(OSError):
                folder.rmdir()

    def commit(self, name: str | None = None) -> list[Path]:
        """Move the files written so far into place, remove what the previous manifest of
        ``name`` (default: the set's) listed and this run did not write, where proven to be
        the tool's own (and what :func:`remove` was asked to), then write the manifest
        ``<name>.manifest.json``; returns the files' final paths. SIGINT, SIGTERM and SIGHUP
        wait until it is done. A run that writes several sets (``sweep --kind all``) commits
        each under its name."""
        name = self.name if name is None else name
        root = self.folder.resolve()
        before = manifest(root, name) or {"files": []}
        rel = {final: final.resolve().relative_to(root).as_posix() for final in self.written}
        files = [
            {"path": rel[final], "sha256": _sha256(tmp), "bytes": tmp.stat().st_size}
            for final, tmp in sorted(self.written.items(), key=lambda kv: rel[kv[0]])
        ]
        kept = {f["path"] for f in files}
        stale = [entry for entry in before["files"] if entry["path"] not in kept]
        asked = sorted(
            {p.resolve().relative_to(root).as_posix() for p in self._removals if self.holds(p)}
            - kept
        )
        # proven as a manifest's files are: a file changed between now and the removal (or a
        # crafted journal's entry) is left with a warning
        source = f".{name}.manifest.pending"
        removals = [e for r in asked if (e := _proof(root, r, source)) is not None]
        text = json.dumps({"command": self.command, "files": files}, indent=2) + "\n"
        moves = [
            (rel[final], tmp.resolve().relative_to(root).as_posix())
            for final, tmp in self.written.items()
        ]
        plan = _Plan(name, self.token, text, moves, stale, removals)
        journal = root / f".{name}.manifest.pending"
        with _signals_held():
            tmp_journal = _temp_name(journal, self.token)
            try:
                tmp_journal.write_text(plan.to_json(), encoding="utf-8")
                os.replace(tmp_journal, journal)
            except BaseException as err:
                _unlink(tmp_journal)
                if isinstance(err, OSError):
                    raise _cannot(root, err) from None
                raise
            # from here the journal holds the commit: if it is cut short, the temporaries and
            # the claim stay for the next run's recover() to finish it
            self._pending = True
            try:
                _apply(root, plan, journal)
            except OSError as err:
                raise _cannot(root, err) from None
            self._pending = False
        placed = sorted(self.written, key=lambda p: rel[p])
        self.written.clear()
        self._removals.clear()
        return placed


def _glob_escape(text: str) -> str:
    """``text`` with glob's special characters matched literally."""
    return re.sub(r"([*?\[])", r"[\1]", text)
