"""Scenario paths (issue 25): any ``os.PathLike`` loads as its string does, and every error of
the operating system reading the file is one line naming ``scenario``, never a traceback."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from bacepipe_env.cli import main
from bacepipe_env.errors import ScenarioError
from bacepipe_env.policies import bace_pipe
from bacepipe_env.scenarios import load_scenario
from bacepipe_env.scenarios.generators import ScenarioSampler
from bacepipe_env.scenarios.loader import load_scenario_spec

LONG = "/" + "a" * 5000
#: the value as an error line shows it: the first 6 characters and how many more, 30 in all
SHOWN = "'/aaaaaa... (4,995 more chars)"


class _PathLike:
    """An ``os.PathLike`` that is not a ``pathlib.Path``."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __fspath__(self) -> str:
        return self.path


@pytest.fixture
def fig1_file(tmp_path: Path) -> Path:
    path = tmp_path / "fig1 copy.json"
    path.write_text(json.dumps(load_scenario_spec("fig1")), encoding="utf-8")
    return path


def test_a_pathlib_path_gives_the_same_scenario_and_records_as_its_string(
    fig1_file: Path,
) -> None:
    from_path = bace_pipe().simulate(load_scenario(fig1_file, seed=2))
    from_str = bace_pipe().simulate(load_scenario(str(fig1_file), seed=2))
    assert from_path.records == from_str.records
    assert from_path.avg_jct == from_str.avg_jct and from_path.total_cost == from_str.total_cost
    other = bace_pipe().simulate(load_scenario(_PathLike(str(fig1_file)), seed=2))
    assert other.records == from_str.records
    as_bytes = os.fsencode(fig1_file)  # a bytes path, decoded as the OS does
    assert load_scenario_spec(as_bytes) == load_scenario_spec(str(fig1_file))  # type: ignore[arg-type]
    assert ScenarioSampler(fig1_file).load(2).jobs == ScenarioSampler(str(fig1_file)).load(2).jobs


def test_a_path_named_like_a_built_in_is_a_file_not_the_built_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no file called "paper" here
    with pytest.raises(ScenarioError, match=r"^scenario: no built-in scenario or file"):
        load_scenario(Path("paper"))
    assert load_scenario("paper").name == "paper"


def test_a_name_too_long_for_the_os_is_one_line_naming_scenario() -> None:
    reason = os.strerror(errno.ENAMETOOLONG)  # "File name too long" on Linux
    for source in (LONG, Path(LONG), _PathLike(LONG)):
        with pytest.raises(ScenarioError) as err:
            load_scenario(source)
        assert str(err.value) == f"scenario: cannot read: {reason} (got {SHOWN})"
        assert err.value.field == "scenario"
    with pytest.raises(ScenarioError, match=rf"^scenario: cannot read: {reason} "):
        ScenarioSampler(LONG)


def test_a_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"name": "caf\xe9"}')  # byte 13 is not UTF-8
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(
        "scenario: cannot read: not UTF-8 text (invalid continuation byte at byte 13)"
    )


def test_a_source_of_another_type_is_one_line() -> None:
    with pytest.raises(ScenarioError) as err:
        load_scenario(42)  # type: ignore[arg-type]
    assert str(err.value) == (
        "scenario: must be a built-in name, a file path or a parsed mapping (got 42)"
    )


@pytest.mark.parametrize("command", [["simulate"], ["compare", "--seeds", "1"], ["sweep"]])
def test_the_commands_print_one_line_for_a_path_too_long(
    command: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    extra = ["--out", str(tmp_path / "out")] if command[0] != "simulate" else []
    assert main([*command, "--scenario", LONG, *extra]) == 2
    captured = capsys.readouterr()
    reason = os.strerror(errno.ENAMETOOLONG)
    assert captured.err == f"bacepipe: error: scenario: cannot read: {reason} (got {SHOWN})\n"
