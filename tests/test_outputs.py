"""Outputs are whole or absent, a run's set never mixes two runs, and one folder has one
writer at a time (issue 25): :mod:`bacepipe_env.outputs`, alone and through the commands."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bacepipe_env import outputs
from bacepipe_env.cli import main
from bacepipe_env.errors import BacepipeError, ValidationError


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _visible(folder: Path) -> set[str]:
    """Every file under ``folder`` a user sees (no hidden temporaries, no manifests)."""
    return {
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not p.name.startswith(".") and not p.name.endswith(".manifest.json")
    }


def _hidden(folder: Path) -> list[Path]:
    return [p for p in folder.rglob(".*") if p.is_file()]


def test_without_a_set_a_file_is_renamed_into_place_and_no_temporary_is_left(tmp_path):
    path = outputs.write_text(tmp_path / "a" / "report.md", "hello\n")
    assert path.read_text() == "hello\n"
    assert os.listdir(tmp_path / "a") == ["report.md"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    old = outputs.write_text(tmp_path / "x.txt", "old\n")
    with pytest.raises(RuntimeError), outputs.target(old) as tmp:
        tmp.write_text("half")
        raise RuntimeError("stopped while writing")
    assert old.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["x.txt"]


def test_a_temporary_keeps_the_suffix_that_names_the_format(tmp_path):
    with outputs.target(tmp_path / "chart.png") as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".png" and tmp.name.startswith(".")
        tmp.write_bytes(b"png")


def test_a_set_moves_its_files_in_at_the_commit_and_writes_the_manifest_last(tmp_path):
    out = tmp_path / "out"
    with outputs.OutputSet(out, "demo", ["bacepipe", "demo"]):
        outputs.write_text(out / "a.csv", "a\n")
        outputs.write_text(out / "img" / "b.png", "b\n")
        assert _visible(out) == set()  # nothing is in place before the commit
    assert _visible(out) == {"a.csv", "img/b.png"}
    m = outputs.manifest(out, "demo")
    assert m is not None and m["command"] == ["bacepipe", "demo"]
    assert {f["path"]: f["sha256"] for f in m["files"]} == {
        "a.csv": _sha(out / "a.csv"),
        "img/b.png": _sha(out / "img" / "b.png"),
    }
    assert _hidden(out) == []


def test_an_interrupted_set_leaves_the_folder_as_it_was(tmp_path):
    out = tmp_path / "out"
    with outputs.OutputSet(out, "demo"):
        outputs.write_text(out / "a.csv", "first\n")
    before = (out / "a.csv").read_text(), outputs.manifest(out, "demo")
    with pytest.raises(KeyboardInterrupt), outputs.OutputSet(out, "demo"):
        outputs.write_text(out / "a.csv", "second\n")
        outputs.write_text(out / "b.csv", "second\n")
        outputs.remove(out / "a.csv")
        raise KeyboardInterrupt
    assert ((out / "a.csv").read_text(), outputs.manifest(out, "demo")) == before
    assert _visible(out) == {"a.csv"} and _hidden(out) == []


def test_a_rerun_removes_the_files_its_previous_run_wrote_and_it_did_not(tmp_path):
    """The 200-seed run beside the 2-seed run's chart: the chart of the older run goes."""
    out = tmp_path / "out"
    with outputs.OutputSet(out, "compare"):
        outputs.write_text(out / "compare.csv", "old\n")
        outputs.write_text(out / "compare.png", "old chart\n")
    (out / "notes.txt").write_text("the user's own file\n")
    with outputs.OutputSet(out, "other"):  # another experiment's files stay
        outputs.write_text(out / "other.csv", "other\n")
    with outputs.OutputSet(out, "compare"):
        outputs.write_text(out / "compare.csv", "new\n")  # no chart this time
    assert _visible(out) == {"compare.csv", "notes.txt", "other.csv"}
    assert (out / "compare.csv").read_text() == "new\n"


def test_each_named_commit_is_its_own_set(tmp_path):
    """``sweep --kind all``: every kind's files are committed under its own manifest."""
    out = tmp_path / "out"
    with outputs.OutputSet(out, "sweep") as written:
        outputs.write_text(out / "sweep-a.csv", "a\n")
        written.commit("sweep-a")
        outputs.write_text(out / "sweep-b.csv", "b\n")
        written.commit("sweep-b")
    assert [f["path"] for f in outputs.manifest(out, "sweep-a")["files"]] == ["sweep-a.csv"]
    assert [f["path"] for f in outputs.manifest(out, "sweep-b")["files"]] == ["sweep-b.csv"]
    assert outputs.manifest(out, "sweep") is None  # nothing was left for the default name


def test_a_second_writer_on_the_folder_is_refused_while_the_first_runs(tmp_path):
    out = tmp_path / "out"
    with outputs.OutputSet(out, "one"):
        with pytest.raises(ValidationError) as err, outputs.OutputSet(out, "two"):
            pass
        assert str(err.value).startswith("--out: another bacepipe run is writing there")
    with outputs.OutputSet(out, "two"):  # free again once the first is done
        pass


@pytest.mark.parametrize("cut", range(5))  # the journal, 3 files, the manifest
def test_a_commit_cut_short_is_finished_by_the_next_run(tmp_path, monkeypatch, cut):
    """A SIGKILL inside the commit, at each of its renames: the journal lets the next run
    finish it, and the folder ends as the complete new set."""
    out = tmp_path / "out"
    with outputs.OutputSet(out, "demo"):
        for name in ("a", "b", "c"):
            outputs.write_text(out / f"{name}.csv", f"old {name}\n")
    real = os.replace
    calls = {"n": 0}

    def dies_at_the_cut(src, dst):  # type: ignore[no-untyped-def]
        if calls["n"] == cut:
            raise SystemExit("killed")  # nothing after this point runs, as with SIGKILL
        calls["n"] += 1
        return real(src, dst)

    with pytest.raises(SystemExit), outputs.OutputSet(out, "demo"):
        for name in ("a", "b", "c"):
            outputs.write_text(out / f"{name}.csv", f"new {name}\n")
        monkeypatch.setattr(os, "replace", dies_at_the_cut)
    monkeypatch.setattr(os, "replace", real)
    with outputs.OutputSet(out, "later"):  # the next run on the folder recovers it
        pass
    texts = {n: (out / f"{n}.csv").read_text() for n in ("a", "b", "c")}
    m = outputs.manifest(out, "demo")
    # the journal (written by the 1st replace) decides: before it, the old set stays whole;
    # after it, the new set is completed
    new = cut >= 1
    assert texts == {n: f"{'new' if new else 'old'} {n}\n" for n in ("a", "b", "c")}
    assert m is not None
    assert {f["path"]: f["sha256"] for f in m["files"]} == {
        f"{n}.csv": _sha(out / f"{n}.csv") for n in ("a", "b", "c")
    }
    assert _hidden(out) == []


def test_an_unwritable_or_impossible_out_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    for folder, reason in (
        (blocker / "out", "cannot create or open: Not a directory"),
        (tmp_path / ("a" * 300), "cannot create or open: File name too long"),
    ):
        with pytest.raises(ValidationError) as err, outputs.OutputSet(folder, "x"):
            pass
        assert reason in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(BacepipeError, match="cannot write"):
        outputs.write_text(blocker / "x.txt", "x")


# --- through the commands -------------------------------------------------------------------


def _compare(out: Path, seeds: str) -> list[str]:
    return ["compare", "--scenario", "paper", "--seeds", seeds, "--out", str(out)]


def _check_one_complete_set(out: Path, commands: list[list[str]]) -> list[str]:
    """The folder holds exactly the files of one manifest, with its hashes; returns the
    command that manifest records, which must be one of ``commands``."""
    m = outputs.manifest(out, "compare")
    assert m is not None
    files = {f["path"]: f["sha256"] for f in m["files"]}
    assert _visible(out) == set(files)
    assert all(_sha(out / p) == h for p, h in files.items())
    assert m["command"][1:] in commands
    return m["command"][1:]


def test_compare_writes_a_manifest_and_a_second_writer_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(_compare(out, "2")) == 0
    _check_one_complete_set(out, [_compare(out, "2")])
    with outputs.locked(out):
        assert main(_compare(out, "2")) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("bacepipe: error: --out: another bacepipe run is writing there")


def test_a_run_killed_at_random_moments_leaves_the_old_set_or_the_new_one(tmp_path):
    """SIGTERM and SIGKILL at 8 moments spread over a run that replaces a complete earlier
    set: what is left (after the next run's recovery, for SIGKILL) is one whole set."""
    out = tmp_path / "out"
    first, second = _compare(out, "2"), [*_compare(out, "0-39"), "--workers", "1"]
    assert main(first) == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "bacepipe_env", *second]
    start = time.monotonic()
    subprocess.run(command, capture_output=True, env=env, check=True)  # how long a run takes
    whole = time.monotonic() - start
    assert main(first) == 0
    rng = random.Random(25)
    outcomes = []
    # 10 kills spread over 0-1.25 runs; on a loaded machine a run can take longer than the
    # one timed above, so up to 6 more, later each time, until one lands after the commit
    trial = 0
    while trial < 10 or ("new" not in outcomes and trial < 16):
        sig = signal.SIGTERM if trial % 2 else signal.SIGKILL
        proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )
        time.sleep(whole * (trial + rng.random()) / 8)
        proc.send_signal(sig)
        proc.wait(timeout=30)
        if sig == signal.SIGKILL:
            outputs.recover(out)  # what the next run on the folder does first
        assert _hidden(out) == []
        left = _check_one_complete_set(out, [first, second])
        outcomes.append("new" if left == second else "old")
        if left == second:  # put the old set back, so that every trial replaces it
            assert main(first) == 0
        trial += 1
    # the kills landed on both sides of the commit
    assert sorted(set(outcomes)) == ["new", "old"], outcomes


def test_json_outputs_are_atomic_and_name_their_flag(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    argv = ["simulate", "--scenario", "fig1", "--json", str(blocker / "run.json")]
    assert main(argv) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("bacepipe: error: --json: cannot write: File exists"), line
    good = tmp_path / "run.json"
    assert main(["simulate", "--scenario", "fig1", "--json", str(good)]) == 0
    assert json.loads(good.read_text())["jobs"]
    assert sorted(os.listdir(tmp_path)) == ["file", "run.json"]
