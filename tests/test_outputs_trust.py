"""An output folder's manifest, journal and leftovers are trusted only for what they prove
(issue 37): a run never removes or moves a file it cannot prove it wrote inside ``--out``.

Every case keeps a victim file outside the folder (and, where it matters, a user's file inside)
and checks it byte for byte after the run."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from bacepipe_env import outputs
from bacepipe_env.cli import main
from bacepipe_env.errors import BacepipeError

VICTIM = b"the user's own data, outside --out\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _entry(path: object, data: bytes = VICTIM) -> dict[str, object]:
    """A manifest entry that would prove ``data`` (the victim's own hash and size), so that
    only the path rule can save it."""
    return {"path": path, "sha256": _sha(data), "bytes": len(data)}


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """``(out, victim)``: an empty ``out`` folder and a victim file beside it."""
    out = tmp_path / "work" / "out"
    out.mkdir(parents=True)
    victim = tmp_path / "work" / "x"
    victim.write_bytes(VICTIM)
    return out, victim


def _manifest(out: Path, name: str, files: object) -> None:
    (out / f"{name}.manifest.json").write_text(json.dumps({"command": [], "files": files}))


def _one_run(out: Path, name: str = "demo") -> None:
    with outputs.OutputSet(out, name):
        outputs.write_text(out / "new.csv", "new\n")


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("bacepipe: warning:")]


# --- 1. manifest entries that escape --out ---------------------------------------------------


@pytest.mark.parametrize(
    "entry",
    ["../x", "tb/../../x", "ABS", "//ABS", "./../x", "link/x"],
    ids=["dotdot", "nested-dotdot", "absolute", "double-slash-absolute", "dot-dotdot", "symlink"],
)
def test_a_manifest_entry_outside_out_is_left_with_one_warning(world, capsys, entry):
    out, victim = world
    (out / "link").symlink_to(victim.parent, target_is_directory=True)  # out/link/x is x
    path = entry.replace("ABS", str(victim))
    _manifest(out, "demo", [_entry(path)])
    _one_run(out)
    assert victim.read_bytes() == VICTIM
    (line,) = _warnings(capsys.readouterr().err)
    assert repr(path) in line and "left in place" in line and len(line) < 200
    # the new manifest lists only what this run wrote: the warning is not repeated forever
    assert [f["path"] for f in outputs.manifest(out, "demo")["files"]] == ["new.csv"]
    _one_run(out)
    assert _warnings(capsys.readouterr().err) == []


def test_an_escaping_entry_among_valid_ones_is_kept_and_the_valid_ones_go(world, capsys):
    out, victim = world
    with outputs.OutputSet(out, "demo"):
        outputs.write_text(out / "old.csv", "old\n")
        outputs.write_text(out / "img" / "old.png", "png\n")
    m = outputs.manifest(out, "demo")
    m["files"].insert(1, _entry("../x"))
    (out / "demo.manifest.json").write_text(json.dumps(m))
    _one_run(out)
    assert victim.read_bytes() == VICTIM
    assert not (out / "old.csv").exists() and not (out / "img" / "old.png").exists()
    assert len(_warnings(capsys.readouterr().err)) == 1


def test_a_file_inside_out_that_changed_since_the_run_wrote_it_is_kept(world, capsys):
    """The manifest proves a file by its size and SHA-256: the user edited the chart's CSV."""
    out, _ = world
    with outputs.OutputSet(out, "demo"):
        outputs.write_text(out / "old.csv", "old\n")
    (out / "old.csv").write_text("my edits\n")
    _one_run(out)
    assert (out / "old.csv").read_text() == "my edits\n"
    (line,) = _warnings(capsys.readouterr().err)
    assert "'old.csv'" in line and "changed since" in line


def test_a_symlink_inside_out_listed_by_the_manifest_is_neither_followed_nor_removed(world):
    out, victim = world
    (out / "alias.csv").symlink_to(victim)
    _manifest(out, "demo", [_entry("alias.csv")])
    _one_run(out)
    assert victim.read_bytes() == VICTIM and (out / "alias.csv").is_symlink()


def test_validation_through_the_cli_keeps_a_file_outside_out(world, capsys):
    out, victim = world
    _manifest(out, "validation", [_entry("../x"), _entry(str(victim))])
    assert main(["validation", "--out", str(out)]) == 0
    assert victim.read_bytes() == VICTIM
    assert len(_warnings(capsys.readouterr().err)) == 2


def test_a_shipped_manifest_cannot_make_reproduce_like_runs_delete_a_repository_file(
    tmp_path, capsys
):
    """A repository's ``docs/`` with a manifest listing ``../README.md``: ``compare --out docs``
    (the same path as ``reproduce --out docs``) leaves README.md alone."""
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    readme = repo / "README.md"
    readme.write_bytes(VICTIM)
    _manifest(repo / "docs", "compare", [_entry("../README.md")])
    argv = ["compare", "--scenario", "fig1", "--seeds", "1", "--out", str(repo / "docs")]
    assert main(argv) == 0
    assert readme.read_bytes() == VICTIM
    assert any("'../README.md'" in w for w in _warnings(capsys.readouterr().err))


# --- 2. a crafted journal ---------------------------------------------------------------------


def _journal(out: Path, name: str, **fields: object) -> Path:
    path = out / f".{name}.manifest.pending"
    path.write_text(_plan_text(name=name, **fields))
    return path


@pytest.mark.parametrize(
    "fields",
    [
        {"moves": [["stolen", "../x"]]},  # move the victim in
        {"moves": [["stolen", "ABS"]]},
        {"moves": [["../y", ".a-0123456789ab-01234567.tmp"]]},  # move a file out
        {"moves": [["/tmp/evil", ".a-0123456789ab-01234567.tmp"]]},
        {"moves": [["x.csv", ".a-ffffffffffff-01234567.tmp"]]},  # another run's temporary
        {"moves": [["x.csv", "mine.txt"]]},  # not a temporary at all
        {"stale": [_entry("../x")]},
        {"stale": [_entry("ABS")]},
        {"removals": [_entry("../x")]},
        {"removals": [_entry("ABS")]},
        {"removals": [_entry("link/x")]},
    ],
)
def test_a_crafted_journal_moves_and_removes_nothing_outside_out(world, capsys, fields):
    out, victim = world
    (out / "link").symlink_to(victim.parent, target_is_directory=True)
    (out / ".a-0123456789ab-01234567.tmp").write_bytes(b"temporary\n")
    (out / ".a-ffffffffffff-01234567.tmp").write_bytes(b"someone else's\n")
    (out / "mine.txt").write_bytes(b"mine\n")
    text = json.dumps(fields).replace("ABS", str(victim))
    journal = _journal(out, "demo", **json.loads(text))
    _one_run(out, "later")
    assert victim.read_bytes() == VICTIM
    assert not (victim.parent / "y").exists() and not Path("/tmp/evil").exists()
    assert (out / "mine.txt").read_bytes() == b"mine\n"
    assert (out / ".a-ffffffffffff-01234567.tmp").read_bytes() == b"someone else's\n"
    assert not journal.exists() and outputs.manifest(out, "demo") == {"command": [], "files": []}
    assert len(_warnings(capsys.readouterr().err)) == 1


# --- 3. the temporary-file sweep ---------------------------------------------------------------


def test_the_sweep_leaves_a_users_hidden_temporary_files(world):
    out, _ = world
    mine = [out / "notes" / ".draft.tmp.txt", out / ".x.tmp", out / ".b-0123456789ab-aa.tmp"]
    # and a name of this tool's shape with no claim: no run on this folder left it
    mine.append(out / "notes" / ".a-0123456789ab-01234567.tmp.png")
    for path in mine:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"mine\n")
    _one_run(out)
    assert all(p.read_bytes() == b"mine\n" for p in mine)


def test_a_run_on_a_parent_folder_leaves_a_live_run_on_a_subfolder_alone(world):
    out, _ = world
    sub = out / "sub"
    with outputs.OutputSet(sub, "inner"):
        outputs.write_text(sub / "inner.csv", "inner\n")
        outputs.write_text(sub / "tb" / "events.x", "ev\n")
        _one_run(out, "outer")  # a second process would do the same; its lock is its own
    assert (sub / "inner.csv").read_text() == "inner\n"
    assert (sub / "tb" / "events.x").read_text() == "ev\n"
    assert [f["path"] for f in outputs.manifest(sub, "inner")["files"]] == [
        "inner.csv",
        "tb/events.x",
    ]


def test_a_killed_runs_temporaries_are_swept_by_the_next_run(world):
    """A SIGKILL leaves the run's claim and temporaries; the next run on the folder, holding
    the lock, knows that run ended and removes exactly its files."""
    out, _ = world
    token = "00112233aabb"
    (out / f".bacepipe-{token}.run").write_text("{}\n")
    left = [out / f".a-{token}-01234567.tmp.csv", out / "tb" / f".e-{token}-89abcdef.tmp"]
    for path in left:
        path.parent.mkdir(exist_ok=True)
        path.write_text("half\n")
    _one_run(out)
    assert not any(p.exists() for p in left)
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


# --- 4. a manifest that lists a folder ---------------------------------------------------------


@pytest.mark.parametrize("entry", ["subdir", ".", "..", "", "subdir/"])
def test_a_manifest_listing_a_folder_warns_once_and_later_runs_work(world, capsys, entry):
    out, victim = world
    (out / "subdir").mkdir()
    (out / "subdir" / "keep.txt").write_bytes(b"keep\n")
    _manifest(out, "demo", [_entry(entry)])
    _one_run(out)
    (line,) = _warnings(capsys.readouterr().err)
    assert repr(entry) in line
    _one_run(out)
    assert _warnings(capsys.readouterr().err) == []
    assert (out / "subdir" / "keep.txt").read_bytes() == b"keep\n"
    assert victim.read_bytes() == VICTIM


# --- 5. malformed manifests and journals -------------------------------------------------------

MALFORMED_MANIFESTS = {
    "not-json": "{",
    "a-list": "[]",
    "files-a-string": json.dumps({"files": "../x"}),
    "no-files": json.dumps({"command": []}),
    "path-a-number": json.dumps({"files": [_entry(3)]}),
    "path-null": json.dumps({"files": [_entry(None)]}),
    "path-with-nul": json.dumps({"files": [_entry("a\0b")]}),
    "entry-a-string": json.dumps({"files": ["../x"]}),
    "no-hash": json.dumps({"files": [{"path": "a.csv", "bytes": 1}]}),
    "command-a-string": json.dumps({"command": "rm", "files": []}),
}


@pytest.mark.parametrize("text", MALFORMED_MANIFESTS.values(), ids=MALFORMED_MANIFESTS.keys())
def test_a_malformed_manifest_is_one_line_exit_2_and_removes_nothing(world, capsys, text):
    out, victim = world
    (out / "old.csv").write_bytes(b"old\n")
    (out / "validation.manifest.json").write_text(text)
    before = sorted(os.listdir(out))
    assert main(["validation", "--out", str(out)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("bacepipe: error: ") and "validation.manifest.json" in line
    assert "remove it" in line and len(line) < 200
    assert sorted(os.listdir(out)) == before and victim.read_bytes() == VICTIM
    (out / "validation.manifest.json").unlink()  # what the line says to do
    assert main(["validation", "--out", str(out)]) == 0


def _plan_text(**fields: object) -> str:
    """A journal's text: a well-formed plan with ``fields`` replaced."""
    plan = {
        "version": 3,
        "name": "demo",
        "token": "0123456789ab",
        "manifest": json.dumps({"command": [], "files": []}),
        "moves": [],
        "stale": [],
        "removals": [],
        **fields,
    }
    return json.dumps(plan)


MALFORMED_JOURNALS = {
    "not-json": "{",
    "not-an-object": "[]",
    "missing-keys": json.dumps({"name": "demo"}),
    "old-format": json.dumps({"name": "demo", "manifest": "{}", "moves": [], "stale": ["../x"]}),
    "wrong-name": _plan_text(name="other"),
    "moves-not-pairs": _plan_text(moves=[["a"]]),
    "stale-strings": _plan_text(stale=["../x"]),
    "manifest-not-json": _plan_text(manifest="{"),
    "bad-token": _plan_text(token="../../x"),
    "removal-a-number": _plan_text(removals=[1]),
    # version 2 removed a bare path on the journal's word alone (issue 44)
    "removal-a-bare-path": _plan_text(removals=["old.csv"]),
    "version-2": _plan_text(version=2, removals=["old.csv"]),
}


@pytest.mark.parametrize("text", MALFORMED_JOURNALS.values(), ids=MALFORMED_JOURNALS.keys())
def test_a_malformed_journal_is_one_line_exit_2_and_touches_nothing(world, capsys, text):
    out, victim = world
    (out / "old.csv").write_bytes(b"old\n")
    (out / ".demo.manifest.pending").write_text(text)
    before = sorted(os.listdir(out))
    assert main(["validation", "--out", str(out)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert ".demo.manifest.pending" in line and "remove it" in line and len(line) < 200
    assert sorted(os.listdir(out)) == before and victim.read_bytes() == VICTIM
    with pytest.raises(BacepipeError):  # and through the library: the same refusal
        outputs.recover(out)


# --- 6. a journal's removals are proven as a manifest's files are (issue 44) -------------------

MINE = b"the user's own file, inside --out\n"


@pytest.mark.parametrize(
    "proof",
    [_entry("mine.txt"), _entry("mine.txt", b"x" * len(MINE))],
    ids=["other-size-and-hash", "same-size-other-hash"],
)
def test_a_crafted_journals_removal_of_a_users_file_inside_out_is_left(world, capsys, proof):
    """Version 2 removed any plain file inside ``--out`` that a journal's ``removals`` named;
    now the entry must prove the file (its size and SHA-256), or it stays, with one warning."""
    out, victim = world
    (out / "mine.txt").write_bytes(MINE)
    journal = _journal(out, "demo", removals=[proof])
    _one_run(out, "later")
    assert (out / "mine.txt").read_bytes() == MINE
    assert victim.read_bytes() == VICTIM
    (line,) = _warnings(capsys.readouterr().err)
    assert line == (
        "bacepipe: warning: .demo.manifest.pending lists 'mine.txt', which changed since this "
        "tool wrote it; left in place"
    )
    assert not journal.exists() and outputs.manifest(out, "demo") == {"command": [], "files": []}


def test_a_journals_removal_that_proves_its_file_removes_it(world, capsys):
    """The rule cuts both ways: the entry a run journals for its own :func:`remove` (the file's
    size and SHA-256 at the commit) lets the next run finish that removal."""
    out, _ = world
    (out / "old.events").write_bytes(MINE)
    _journal(out, "demo", removals=[_entry("old.events", MINE)])
    _one_run(out, "later")
    assert not (out / "old.events").exists()
    assert _warnings(capsys.readouterr().err) == []


def test_a_removal_cut_short_leaves_a_file_changed_after_the_commit_began(
    world, capsys, monkeypatch
):
    """A run asks to remove ``old.events``; its commit is killed after the journal is written
    (the first rename) and before the removal; the user then edits the file. The journal
    proves the file as it was at the commit, so the next run leaves the edited one."""
    out, _ = world
    (out / "old.events").write_bytes(b"old\n")
    real = os.replace
    calls = {"n": 0}

    def dies_after_the_journal(src, dst):  # type: ignore[no-untyped-def]
        if calls["n"] == 1:
            raise SystemExit("killed")  # as with SIGKILL: nothing after this runs
        calls["n"] += 1
        return real(src, dst)

    with pytest.raises(SystemExit), outputs.OutputSet(out, "demo"):
        outputs.write_text(out / "new.csv", "new\n")
        outputs.remove(out / "old.events")
        monkeypatch.setattr(os, "replace", dies_after_the_journal)
    monkeypatch.setattr(os, "replace", real)
    journal = json.loads((out / ".demo.manifest.pending").read_text())
    assert journal["removals"] == [_entry("old.events", b"old\n")]
    (out / "old.events").write_bytes(MINE)
    _one_run(out, "later")
    assert (out / "old.events").read_bytes() == MINE
    assert (out / "new.csv").read_text() == "new\n"  # the rest of the commit was finished
    (line,) = _warnings(capsys.readouterr().err)
    assert "'old.events'" in line and "left in place" in line
