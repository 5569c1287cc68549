"""The command line's parser (issue 44, items 4 and 7): every flag declared once as data in
typed groups the commands share, ``evaluate`` taking ``simulate``'s world flags, a "did you
mean" for a misspelt flag and a misspelt policy suffix, two outputs to one path refused, and
a closed stdout ending in one line rather than a traceback."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bacepipe_env import cli
from bacepipe_env.cli import main
from bacepipe_env.cli_args import COMMANDS, FLAGS, GROUPS, build_parser, check_outputs
from bacepipe_env.core.world import KNOBS
from bacepipe_env.errors import BacepipeError

FIG1 = "bacepipe_env/GeoPipe-Fig1-v2"
EVAL = ["evaluate", "--env-id", FIG1, "--policies", "sjf", "--episodes", "1", "--first-seed", "0"]


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert "Traceback" not in captured.err
    return line


def _commands() -> dict[str, Any]:
    """The parser's command -> its parser."""
    parser = build_parser()
    return dict(next(a for a in parser._actions if a.dest == "command").choices or {})


def _option_strings(command: str) -> dict[str, list[str]]:
    """``command``'s flags by the --help group that lists them."""
    sub = _commands()[command]
    return {
        group.title: [s for a in group._group_actions for s in a.option_strings]
        for group in sub._action_groups
    }


# ------------------------------------------------------------------------------ declared once
def test_build_parser_is_short_and_made_from_the_table() -> None:
    lines = inspect.getsource(build_parser).splitlines()
    assert len(lines) <= 150, len(lines)
    # every command of the table has a parser, in the table's order
    assert list(_commands()) == list(COMMANDS)


def test_every_flag_sits_in_its_declared_group_on_every_command() -> None:
    for name, command in COMMANDS.items():
        groups = _option_strings(name)
        for dest in command.options():
            flag = FLAGS[dest]
            assert flag.group in GROUPS
            assert flag.flag in groups[flag.group], (name, flag.flag)


def test_a_world_setting_is_one_declaration_for_every_command() -> None:
    # the --preemption of simulate, evaluate, online and faults is KNOBS' one row
    assert FLAGS["preemption"].flag == KNOBS["preemption"].flag == "--preemption"
    for command in ("simulate", "evaluate", "online", "faults"):
        assert "--preemption" in _option_strings(command)["world"], command


def test_evaluate_takes_every_world_flag_of_simulate() -> None:
    sim = set(_option_strings("simulate")["world"]) - {"--scenario", "--seed", "--env-id"}
    ev = _option_strings("evaluate")["world"]
    assert sim <= set(ev)
    assert {"--env-id", "--env-kwargs"} <= set(ev)
    assert len(sim) == sum(1 for k in KNOBS.values() if k.flag)  # every knob with a flag


def test_one_of_two_flags_is_one_declaration(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that takes either of two flags lists both in their group and needs one."""
    import bacepipe_env.cli_args as cli_args

    either = cli_args.Command(
        "a scenario or an env id",
        ("scenario", ("env_id", {"required": False}), "seed"),
        one_of=("scenario", "env_id"),
    )
    monkeypatch.setitem(cli_args.COMMANDS, "either", either)
    parser = build_parser()
    assert parser.parse_args(["either", "--env-id", FIG1]).scenario == "paper"
    assert parser.parse_args(["either", "--scenario", "fig1"]).env_id is None
    assert _option_strings("either")["world"] == ["--scenario", "--env-id", "--seed"]
    for argv in (["either"], ["either", "--scenario", "fig1", "--env-id", FIG1]):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)


def test_a_bare_on_off_flag_shows_no_empty_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = capsys.readouterr().out
    assert "--no-recompute []" not in text and "  --no-recompute " in text
    args = build_parser().parse_args(["simulate", "--scenario", "fig1", "--no-recompute"])
    assert args.recompute is False


def test_the_world_flags_reach_evaluate_as_env_keywords(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake(env_id: str, policies: list[str], *args: Any, **kwargs: Any) -> Any:
        seen.update(kwargs, env_id=env_id, policies=policies)
        raise BacepipeError("stop here")

    monkeypatch.setattr(cli, "evaluate_policies", fake)
    argv = ["evaluate", "--env-id", "bacepipe_env/GeoPipe-v2", "--policies", "sjf"]
    argv += ["--episodes", "1", "--first-seed", "0", "--jobs", "4", "--egress"]
    argv += ["--admission", "full", "--preemption", "srtf:factor=3", "--elasticity", "none"]
    argv += ["--env-kwargs", '{"reward": null}']
    assert main(argv) == 2
    # world settings go to every env; the policy parts only where a policy has none of its own
    assert seen["env_kwargs"] == {"n_jobs": 4, "egress_usd_per_gb": 0.02, "reward": None}
    assert seen["defaults"] == {"admission": "full", "elasticity": "none"}
    assert seen["preemption"] == "srtf:factor=3"


def test_evaluate_jobs_is_env_kwargs_n_jobs(tmp_path: Path) -> None:
    base = ["evaluate", "--env-id", "bacepipe_env/GeoPipe-v2", "--policies", "sjf,lcf"]
    base += ["--episodes", "2", "--first-seed", "3"]
    flag, kwargs = tmp_path / "flag.json", tmp_path / "kwargs.json"
    assert main([*base, "--jobs", "3", "--json", str(flag)]) == 0
    assert main([*base, "--env-kwargs", '{"n_jobs": 3}', "--json", str(kwargs)]) == 0
    assert flag.read_text(encoding="utf-8") == kwargs.read_text(encoding="utf-8")


def test_evaluate_admission_is_the_world_rule_a_policy_of_its_own_overrides(
    tmp_path: Path,
) -> None:
    """sjf under --admission full plays as sjf+full (the same ordering, placement and rule);
    sjf+finish-aware keeps its own rule, as in ``bacepipe simulate``."""

    def jcts(*argv: str) -> dict[str, float]:
        out = tmp_path / "e.json"
        base = ["evaluate", "--env-id", "bacepipe_env/GeoPipe-v2", "--episodes", "2"]
        assert main([*base, "--first-seed", "0", "--json", str(out), *argv]) == 0
        import json

        rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
        return {f"{r['policy']}/{r['episode_seed']}": r["avg_jct_h"] for r in rows}

    full = jcts("--policies", "sjf,sjf+finish-aware", "--admission", "full")
    plain = jcts("--policies", "sjf+full,sjf+finish-aware")
    assert full["sjf/0"] == plain["sjf+full/0"] and full["sjf/1"] == plain["sjf+full/1"]
    assert full["sjf+finish-aware/0"] == plain["sjf+finish-aware/0"]


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (
            ["--env-id", "bacepipe_env/GeoPipe-Random-v2", "--jobs", "4"],
            "bacepipe: error: --jobs: does not apply to bacepipe_env/GeoPipe-Random-v2: its "
            "'random' episodes have no such setting (got '4')",
        ),
        (
            ["--env-id", FIG1, "--jobs", "4", "--env-kwargs", '{"n_jobs": 5}'],
            "bacepipe: error: --env-kwargs: sets n_jobs, as --jobs does (got '{\"n_jobs\": 5}')",
        ),
        (
            ["--env-id", "bacepipe_env/GeoPipe-Online-Preempt-v1", "--preemption", "srtf"],
            "bacepipe: error: --preemption: bacepipe_env/GeoPipe-Online-Preempt-v1's agents "
            "make the preemptions themselves (got 'srtf')",
        ),
    ],
)
def test_a_world_flag_an_env_cannot_take_is_one_line(
    extra: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["evaluate", "--policies", "sjf", "--episodes", "1", "--first-seed", "0", *extra]
    assert main(argv) == 2
    assert _one_line(capsys) == line


# ------------------------------------------------------------------------------ did you mean
@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["simulate", "--scenaro", "paper"],
            "bacepipe simulate: error: unknown flag '--scenaro'; did you mean '--scenario'? "
            "(see bacepipe simulate --help)",
        ),
        (
            ["simulate", "--scenario", "fig1", "--polcy=sjf"],
            "bacepipe simulate: error: unknown flag '--polcy'; did you mean '--policy'? "
            "(see bacepipe simulate --help)",
        ),
        (
            ["compare", "--polices", "sjf"],
            "bacepipe compare: error: unknown flag '--polices'; did you mean '--policies'? "
            "(see bacepipe compare --help)",
        ),
        (
            ["evaluate", "--env-id", FIG1, "--episodes", "1", "--first-seed", "0", "--preemtion"],
            "bacepipe evaluate: error: unknown flag '--preemtion'; did you mean '--preemption'? "
            "(see bacepipe evaluate --help)",
        ),
        (
            ["--plugn", "x", "simulate"],
            "bacepipe: error: unknown flag '--plugn'; did you mean '--plugin'? "
            "(see bacepipe --help)",
        ),
        (
            ["simulate", "--scenario", "fig1", "--zzzz"],
            "bacepipe simulate: error: unknown flag '--zzzz' (see bacepipe simulate --help)",
        ),
    ],
)
def test_a_misspelt_flag_is_named_with_the_closest_one(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert _one_line(capsys) == line


def test_an_abbreviated_flag_still_parses() -> None:
    args = build_parser().parse_args(["simulate", "--scen", "fig1", "--pol", "sjf"])
    assert (args.scenario, args.policy) == ("fig1", "sjf")


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("bace-pipe+elastc", "bace-pipe+elastic"),  # not the nearer whole name bace-pipe+srtf
        ("sjf+elastik", "sjf+elastic"),
        ("sjf+finish-aware+lass", "sjf+finish-aware+las"),
        ("sjf+srft", "sjf+srtf"),
    ],
)
def test_a_misspelt_suffix_is_matched_against_the_suffixes(
    typo: str, meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--scenario", "fig1", "--policy", typo]) == 2
    assert _one_line(capsys) == (
        f"bacepipe: error: policy: unknown policy; did you mean {meant!r}? "
        f"(`bacepipe policies` lists them) (got {typo!r})"
    )


# ------------------------------------------------------------------------------ outputs
@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--scenario", "fig1", "--plot", "o.png", "--json", "o.png"],
        ["simulate", "--scenario", "fig1", "--plot", "o.png", "--json", "./sub/../o.png"],
        [*EVAL, "--json", "o.png", "--plot", "o.png"],
        ["headroom", "--env-id", FIG1, "--episodes", "1", "--json", "o.png", "--plot", "o.png"],
    ],
)
def test_two_outputs_to_one_path_are_one_line(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bacepipe_cli: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    proc = bacepipe_cli(*argv, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("bacepipe: error: --plot: --json writes that file too: ")
    assert len(proc.stderr.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]  # nothing ran


def test_stdout_and_two_files_are_distinct_outputs() -> None:
    parser = build_parser()
    for json_out in ("-", "a.json"):
        args = parser.parse_args(["simulate", "--scenario", "fig1", "--json", json_out])
        args.plot = "a.png"
        check_outputs(args)  # no error


# ------------------------------------------------------------------------------ closed stdout
@pytest.mark.parametrize(
    "argv", [["policies"], ["simulate", "--scenario", "fig1"], ["scenarios", "--help"]]
)
def test_a_closed_stdout_is_one_line(argv: list[str], tmp_path: Path) -> None:
    proc = subprocess.run(
        ["sh", "-c", '"$0" -m bacepipe_env "$@" >&-', sys.executable, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "bacepipe: error: stdout is closed: send it somewhere, e.g. > out.txt or > /dev/null\n"
    )
