"""Issue 25: a learned policy's model path the OS cannot read (a name too long, a folder that
cannot be listed) is one line naming the policy, not an OSError traceback; and a policy given
as an ``os.PathLike`` is read as its string."""

from __future__ import annotations

import errno
import os
import pathlib

import pytest

from bacepipe_env import learned
from bacepipe_env.errors import BacepipeError

#: 300 characters: longer than a file name may be (255 on Linux and macOS), so that stat fails
#: with ENAMETOOLONG rather than ENOENT once the folder it is in exists (the test's cwd).
LONG = "x" * 300
POLICY = f"ppo:{LONG}/model.zip"
#: ``POLICY`` as an error line writes it: its first 100 characters and how many more.
SHOWN = "ppo:" + "x" * 96 + "... (214 more chars)"


@pytest.fixture
def long_name(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run in ``tmp_path`` and return the OS's reason for a too-long name (skip elsewhere)."""
    monkeypatch.chdir(tmp_path)
    try:
        os.stat(f"{LONG}/model.zip")
    except OSError as err:
        if err.errno != errno.ENAMETOOLONG:
            pytest.skip(f"this file system reports {err.strerror!r}, not a name too long")
        return str(err.strerror)
    pytest.skip("this file system takes 300-character names")


@pytest.fixture
def fake_registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """An empty loader registry (no entry points read); what each fake loader was given."""
    monkeypatch.setattr(learned, "_loaders", {})
    monkeypatch.setattr(learned, "_discovered", True)
    return {}


def test_a_model_path_too_long_for_the_os_is_one_line(long_name: str) -> None:
    """Through the installed SB3 loader: its ``Path.is_file()`` raised ENAMETOOLONG, a
    4,242-character OSError for a 4,200-character path, out of ``bacepipe compare``."""
    pytest.importorskip("stable_baselines3")
    with pytest.raises(BacepipeError) as err:
        learned.load_learned(POLICY)
    line = str(err.value)
    assert long_name == "File name too long"
    assert line == f"{SHOWN}: cannot read: File name too long"
    assert len(line) == 153 and "\n" not in line
    assert not isinstance(err.value, OSError) and err.value.__cause__ is None


def test_every_oserror_of_a_loader_names_the_policy(fake_registry: dict[str, object]) -> None:
    def unreadable(spec: str) -> learned.LearnedAgent:
        fake_registry["spec"] = spec
        raise PermissionError(errno.EACCES, "Permission denied", spec.split(":", 1)[1])

    learned.register_learned_loader("fake", unreadable)
    with pytest.raises(BacepipeError) as err:
        learned.load_learned(pathlib.PurePosixPath("fake:runs/locked/model.zip"))
    assert str(err.value) == "fake:runs/locked/model.zip: cannot read: Permission denied"
    assert fake_registry["spec"] == "fake:runs/locked/model.zip"  # a PathLike goes on as str


def test_check_model_file(long_name: str) -> None:
    """The check a command runs before loading anything: the file, or one line."""
    with pytest.raises(BacepipeError) as err:
        learned.check_model_file(POLICY)
    assert str(err.value) == f"{SHOWN}: cannot read: {long_name}"
    with pytest.raises(BacepipeError) as err:
        learned.check_model_file("ppo:runs/none/model.zip")
    assert str(err.value) == "ppo:runs/none/model.zip: no model file there"
    pathlib.Path("model.zip").write_bytes(b"PK")
    assert learned.check_model_file("ppo:model.zip") == pathlib.Path("model.zip")
    assert learned.check_model_file(pathlib.Path("ppo:model.zip")) == pathlib.Path("model.zip")


def test_the_other_load_errors_stay_one_line(fake_registry: dict[str, object]) -> None:
    """No loader at all, or an unknown algorithm: the policy written at most 120 characters."""
    with pytest.raises(BacepipeError) as err:
        learned.load_learned(POLICY)
    line = str(err.value)
    assert line == (
        f"{SHOWN}: learned policies need the train extra: pip install 'bacepipe-env[train]'"
    )
    learned.register_learned_loader("fake", lambda spec: pytest.fail("not called"))
    with pytest.raises(BacepipeError) as err:
        learned.load_learned("a2c:" + LONG)
    assert str(err.value) == (
        "a2c:" + "x" * 96 + "... (204 more chars): unknown algorithm 'a2c'; a learned policy is "
        "written algo:path with algo one of: fake"
    )


def test_is_learned_takes_a_pathlike() -> None:
    assert learned.is_learned(pathlib.PurePosixPath("ppo:runs/x/model.zip"))
    assert not learned.is_learned(pathlib.PurePosixPath("bace-pipe"))
