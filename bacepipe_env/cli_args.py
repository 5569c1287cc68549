"""The ``bacepipe`` command's arguments: every flag declared once, as data (:data:`FLAGS`,
the world's made from :data:`~bacepipe_env.core.world.KNOBS`), each command a list of those
flags (:data:`COMMANDS`), the parser :func:`build_parser` makes from the two, and the parsers
of the list flags (``--seeds``, ``--loads``, ``--rates``). :mod:`bacepipe_env.cli` runs the
commands.

Every command lists its flags in ``--help`` under the groups they belong to (world, policy,
output, execution: :data:`GROUPS`); a command that runs a world takes the same world flags
as ``simulate``. An unknown command, choice or flag gets a "did you mean" when one is close
(:func:`did_you_mean`), and two output flags naming one file are one line
(:func:`check_outputs`)."""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from . import __version__
from .core.limits import LIMITS, Limit
from .core.world import (
    KNOBS,
    Knob,
    flag_number,
    number_text,
)
from .errors import OneLineParser, ValidationError, shorten
from .experiments import SWEEPS
from .experiments.faults import DEFAULT_POLICIES as FAULT_POLICIES
from .experiments.faults import DEFAULT_RATES as FAULT_RATES
from .experiments.online import DEFAULT_LOADS, DEFAULT_N_JOBS
from .experiments.runner import RAY_HINT
from .policies.registry import (
    ablation_names,
    baseline_names,
)
from .scenarios import list_scenarios

__all__ = [
    "COMMANDS",
    "FLAGS",
    "GROUPS",
    "MAX_SEEDS",
    "WORLD",
    "Command",
    "Flag",
    "build_parser",
    "check_outputs",
    "did_you_mean",
    "parse_loads",
    "parse_rates",
    "parse_seeds",
]

#: The flag groups, in ``--help``'s order, with the line under a group's heading (None: the
#: heading alone; a command may say its own line under ``world``).
GROUPS: dict[str, str | None] = {
    "world": "the scenario and its settings: a flag not given keeps the scenario's",
    "policy": None,
    "output": None,
    "execution": None,
}

#: ``bacepipe online``'s default offered loads.
ONLINE_LOADS = DEFAULT_LOADS  # the experiment's defaults are the command's

#: ``--workers`` at most (a process pool of millions would not start).
MAX_WORKERS = 1_024

#: The most seeds one experiment takes, and the largest seed (numpy's int64 range).
MAX_SEEDS, MAX_SEED = 100_000, 2**63 - 1


def _limited(key: str | Limit) -> Any:
    """An argparse type: :func:`flag_number` for a flag that argparse names itself."""

    def parse(text: str) -> Any:
        try:
            return flag_number("", text, key)
        except ValidationError:
            limit = LIMITS[key] if isinstance(key, str) else key
            raise argparse.ArgumentTypeError(f"{number_text(limit)}, got {text!r}") from None

    return parse


def did_you_mean(got: str, names: Iterable[str]) -> str | None:
    """The name of ``names`` closest to ``got`` (``difflib.get_close_matches``, its default
    cutoff 0.6), or None when none is close: ``simulat`` -> ``simulate``."""
    close = difflib.get_close_matches(got, list(names), n=1)
    return close[0] if close else None


# ------------------------------------------------------------------------------ the flags
@dataclass(frozen=True)
class Flag:
    """One flag, declared once: its text, the group of :data:`GROUPS` that lists it, the
    options ``add_argument`` takes (a command may replace some: :class:`Command`), and whether
    it names a file the command writes (``writes``: :func:`check_outputs` keeps two of those
    from naming one file)."""

    flag: str
    group: str
    options: Mapping[str, Any]
    writes: bool = False


def _flag(flag: str, group: str, *, writes: bool = False, **options: Any) -> Flag:
    """A :class:`Flag` with ``options`` as given to ``add_argument``."""
    return Flag(flag, group, options, writes)


def _knob_options(knob: Knob) -> dict[str, Any]:
    """argparse's options for a world setting's flag: its text is parsed and checked later,
    by :meth:`Knob.from_flag`, so that a bad value is one line naming the flag. A bare
    on/off flag (``--ignore-memory``, ``--no-recompute``) says ``off`` for its default."""
    if isinstance(knob.const, bool) or knob.default in (None, ()):
        default = "off"
    else:
        default = f"{knob.default:g}" if isinstance(knob.default, float) else knob.default
    said = f"default: the scenario's, {default}" if knob.scope == "world" else None
    if said is None:
        said = "default: the scenario's" if knob.default is None else f"default {knob.default:g}"
    options: dict[str, Any] = {"dest": knob.name, "default": None}
    options["help"] = f"{knob.help} ({said})"
    if isinstance(knob.const, bool):
        options.update(action="store_const", const=knob.const)
    elif knob.repeat:
        options.update(action="append", metavar=knob.metavar)
        options["help"] = f"{knob.help} (repeatable)"
    elif knob.const is not None:
        options.update(nargs="?", const=knob.const, metavar=knob.metavar)
    else:
        options.update(metavar=knob.metavar)
    return options


def _knobs(*scopes: str) -> tuple[str, ...]:
    """The world settings with a flag in ``scopes`` (rows of KNOBS), in the table's order."""
    return tuple(k.name for k in KNOBS.values() if k.flag and k.scope in scopes)


_EPISODES = Limit(1, MAX_SEEDS, integer=True)
_SCENARIO = f"a built-in scenario ({', '.join(list_scenarios())}) or a .json/.toml file"
_POLICIES_HELP = (
    "comma-separated policy names or 'all' (default %(default)s); saved models as algo:path, "
    "'pretrained' for the agent shipped for the scenario's env"
)

#: Every flag of the commands but ``--plugin`` and ``--version``, by the name it is stored
#: under (``args.<name>``); the world's are :data:`~bacepipe_env.core.world.KNOBS`' own.
FLAGS: dict[str, Flag] = {
    **{
        name: Flag(KNOBS[name].flag, "world", _knob_options(KNOBS[name]))
        for name in _knobs("simulate", "world")
    },
    "scenario": _flag(
        "--scenario",
        "world",
        default="paper",
        metavar="NAME|PATH",
        help=f"{_SCENARIO} (default %(default)s)",
    ),
    "seed": _flag(
        "--seed",
        "world",
        type=_limited("seed"),
        default=0,
        help="seed of the scenario's random draws (default 0)",
    ),
    "env_id": _flag(
        "--env-id",
        "world",
        required=True,
        metavar="ID",
        help="a GeoPipeEnv environment id: this package's (bacepipe_env/GeoPipe-v2, ...) or "
        "one registered with Gymnasium, e.g. by a --plugin",
    ),
    "env_kwargs": _flag(
        "--env-kwargs",
        "world",
        default=None,
        metavar="JSON",
        help="advanced: GeoPipeEnv keywords over every policy's env, e.g. '{\"reward\": "
        "null}' (every return by the default reward); a world setting is best given by its "
        "flag above",
    ),
    "kind": _flag(
        "--kind",
        "world",
        default="all",
        choices=[*SWEEPS, "all"],
        help="which sweep: the world setting it varies (default all)",
    ),
    "values": _flag(
        "--values",
        "world",
        default=None,
        metavar="LIST",
        help="comma-separated values for one --kind (default: the paper's)",
    ),
    "loads": _flag(
        "--loads",
        "world",
        default=",".join(map(str, ONLINE_LOADS)),
        metavar="LIST",
        help="comma-separated offered loads > 0 (default %(default)s)",
    ),
    "rates": _flag(
        "--rates",
        "world",
        default=",".join(f"{x:g}" for x in FAULT_RATES),
        metavar="LIST",
        help="comma-separated GPU failures per GPU-hour, 0 among them (default %(default)s)",
    ),
    "jobs": _flag(
        "--jobs",
        "world",
        type=_limited("workload.n_jobs"),
        default=None,
        metavar="N",
        help="jobs per episode (default: the env's; e.g. 80 for a short Online episode)",
    ),
    "policy": _flag(
        "--policy",
        "policy",
        default="bace-pipe",
        metavar="NAME",
        help="a registered policy, or one with a suffix (bacepipe policies; default bace-pipe)",
    ),
    "partial_take": _flag(
        "--partial-take",
        "policy",
        action="store_true",
        help="BACE-Pipe with Pathfinder taking part of a region's free GPUs (not in the paper)",
    ),
    "policies": _flag("--policies", "policy", default=None, metavar="LIST", help=_POLICIES_HELP),
    "reference": _flag(
        "--reference",
        "policy",
        default=None,
        metavar="P",
        help="the policy the JCT ratios and wins/ties/losses compare with (default: the first)",
    ),
    "base": _flag(
        "--base",
        "policy",
        default=None,
        metavar="P",
        help="the heuristic the planner finishes its forks with (default: the env's best)",
    ),
    "lookahead": _flag(
        "--lookahead",
        "policy",
        default="submitted",
        metavar="L",
        help="what the planner's forks know: submitted (default), announced:H, sampled:N "
        "(N draws of the world's later arrivals) or clairvoyant (a bound, not a scheduler)",
    ),
    "objective": _flag(
        "--objective",
        "policy",
        choices=("jct", "misses", "tardiness"),
        default="jct",
        help="what the planner scores its forks by and the best heuristic is best at: jct "
        "(default), misses or tardiness (deadlines, semantics §15)",
    ),
    "k": _flag(
        "--k",
        "policy",
        type=_limited(Limit(1, 64, integer=True)),
        default=4,
        metavar="K",
        help="how many of the base's favourite candidates each decision tries (default 4)",
    ),
    "json": _flag(
        "--json",
        "output",
        writes=True,
        default=None,
        metavar="OUT",
        help="also write the full result as JSON to OUT ('-' for stdout)",
    ),
    "csv": _flag(
        "--csv",
        "output",
        writes=True,
        default=None,
        metavar="OUT",
        help="also write every job's attempts as CSV to OUT: times, outcome, GPUs, every "
        "copy's path and the rate booked on each directed link",
    ),
    "plot": _flag(
        "--plot",
        "output",
        writes=True,
        default=None,
        metavar="PATH",
        help="also draw the result as a PNG at PATH (needs the viz extra: matplotlib)",
    ),
    "out": _flag("--out", "output", metavar="DIR", help="output directory (default %(default)s)"),
    "seeds": _flag(
        "--seeds",
        "execution",
        default="10",
        metavar="N|LIST",
        help="a count N (seeds 0..N-1), a list '0,3,7' or a range '0-9' (default %(default)s)",
    ),
    "workers": _flag(
        "--workers",
        "execution",
        type=_limited(Limit(1, MAX_WORKERS, integer=True)),
        default=None,
        metavar="N",
        help="worker processes (default: up to 2 cores)",
    ),
    "backend": _flag(
        "--backend",
        "execution",
        choices=("local", "ray"),
        default="local",
        help="run the grid in local worker processes (default) or as Ray tasks; the outputs "
        f"are the same bit for bit (ray: {RAY_HINT}; docs/scale.md)",
    ),
    "address": _flag(
        "--address",
        "execution",
        default=None,
        metavar="ADDR",
        help="with --backend ray: the Ray cluster to join ('auto', 'ray://HOST:10001'; "
        "default: start a local Ray instance with --workers CPUs)",
    ),
    "episodes": _flag(
        "--episodes",
        "execution",
        type=_limited(_EPISODES),
        required=True,
        metavar="N",
        help="episodes per policy, the same for every policy",
    ),
    "first_seed": _flag(
        "--first-seed",
        "execution",
        type=_limited("seed"),
        required=True,
        metavar="S",
        help="reset seed of the first episode; the episodes are S, S+1, ..., S+N-1",
    ),
}

#: The world flags of one world (``simulate``'s, ``evaluate``'s: every world setting with a
#: flag) and those an experiment takes (``compare``, ``sweep``, ``ablation``: not the ones
#: its runs sweep or set themselves), as names of :data:`FLAGS`.
WORLD = _knobs("simulate", "world")
EXPERIMENT_WORLD = _knobs("world")
EXECUTION = ("seeds", "workers", "backend", "address")


# ------------------------------------------------------------------------------ the commands
@dataclass(frozen=True)
class Command:
    """One command: its line in ``bacepipe --help``, its flags (names of :data:`FLAGS`, in
    ``--help``'s order within their groups; a ``(name, {option: value})`` pair replaces some
    of that flag's options for this command), its usage line (None: argparse's), the line
    under its ``world`` heading, and flags of one group of which exactly one must be given
    (``one_of``: ``("scenario", "env_id")``; their options must not say ``required``)."""

    help: str
    flags: tuple[str | tuple[str, Mapping[str, Any]], ...] = ()
    usage: str | None = None
    world: str | None = GROUPS["world"]
    one_of: tuple[str, ...] = ()

    def options(self) -> dict[str, dict[str, Any]]:
        """Each flag's ``add_argument`` options for this command, in ``--help``'s order."""
        pairs = (f if isinstance(f, tuple) else (f, {}) for f in self.flags)
        return {name: {**FLAGS[name].options, **mine} for name, mine in pairs}


def _help(text: str) -> dict[str, str]:
    """A command's own help line for a flag."""
    return {"help": text}


def _plot(what: str) -> tuple[str, dict[str, str]]:
    """``--plot`` drawing ``what``."""
    return "plot", _help(f"also draw {what} as a PNG at PATH (needs the viz extra: matplotlib)")


def _out(command: str, more: str = "") -> tuple[str, dict[str, str]]:
    """``--out``, by default ``out/<command>``."""
    return "out", {
        "default": f"out/{command}",
        "help": f"output directory (default %(default)s{more})",
    }


def _experiment(command: str, help_: str, policies: Sequence[str], *world: str) -> Command:
    """``compare``, ``sweep`` or ``ablation``: the scenario, ``world`` (``sweep``'s
    ``--kind`` and ``--values``) and the experiments' world flags, ``--policies`` (default
    ``policies``), ``--out`` and the execution flags."""
    kind = " [--kind KIND] [--values LIST]" if world else ""
    mine = ("policies", {"default": ",".join(policies)})
    return Command(
        help_,
        ("scenario", *world, *EXPERIMENT_WORLD, mine, _out(command), *EXECUTION),
        usage=f"%(prog)s [--scenario NAME|PATH]{kind}\n"
        "       [world flags] [--policies LIST] [--out DIR] [--seeds N|LIST]\n"
        "       [--workers N] [--backend {local,ray}] [--address ADDR]",
    )


_ENV_WORLD = "the environment id and its world settings: a flag not given keeps the env's"
#: ``online``'s and ``faults``' --preemption: their runs' rule, not a scenario's.
_RUNS_PREEMPTION = (
    "preemption",
    _help(
        "the preemption rule of every policy without its own: "
        f"{KNOBS['preemption'].range} (default none)"
    ),
)
_DOCS = "; `--out docs` regenerates the docs"

#: Every command, in ``bacepipe --help``'s order.
COMMANDS: dict[str, Command] = {
    "simulate": Command(
        "run a policy (BACE-Pipe) on a scenario, print every job",
        (
            ("scenario", {"default": None, "help": _SCENARIO}),
            (
                "env_id",
                {
                    "required": False,
                    "help": "the scenario an environment id's reset(seed=SEED) draws, with its "
                    "rules (docs/environment.md, Seeds and replay)",
                },
            ),
            (
                "seed",
                _help(
                    "seed of the scenario's random draws; with --env-id, the reset seed (default 0)"
                ),
            ),
            *WORLD,
            "policy",
            "partial_take",
            "json",
            "csv",
            _plot(
                "the GPU timeline of the finished run (which job held how many GPUs of each "
                "region when)"
            ),
        ),
        usage="%(prog)s (--scenario NAME|PATH | --env-id ID) [--seed SEED]\n"
        "       [world flags] [--policy NAME] [--partial-take] [--json OUT] [--csv OUT]\n"
        "       [--plot PATH]",
        one_of=("scenario", "env_id"),
    ),
    "scenarios": Command("list the built-in scenarios"),
    "policies": Command("list the registered policies and the suffixes that compose them"),
    "compare": _experiment(
        "compare", "every policy on the same seeds (the paper's Fig. 4)", baseline_names()
    ),
    "sweep": _experiment(
        "sweep", "sensitivity sweeps (the paper's Figs. 5-7)", baseline_names(), "kind", "values"
    ),
    "ablation": _experiment(
        "ablation", "BACE-Pipe against its ablations (the paper's Fig. 8)", ablation_names()
    ),
    "reproduce": Command(
        "every claim of the paper's Section IV under five semantics and three memory "
        "variants: DIR/reproduction.md and Fig. 4-8 style charts in DIR/img/",
        (_out("reproduce", _DOCS), *EXECUTION),
    ),
    "online": Command(
        "policies on the online world (Philly-trace arrivals, hourly 2023 prices and "
        "carbon) at several offered loads: DIR/online.md and charts in DIR/img/",
        (
            "loads",
            ("jobs", {"default": DEFAULT_N_JOBS, "help": "jobs per episode (default %(default)s)"}),
            _RUNS_PREEMPTION,
            (
                "policies",
                _help(
                    "comma-separated policy names or 'all' (default: the online experiment's "
                    "own set, BACE-Pipe and the paper's baselines among them)"
                ),
            ),
            _out("online"),
            ("seeds", {"default": "5"}),
            *EXECUTION[1:],
        ),
        world="the online world's offered loads, episode size and preemption rule",
    ),
    "faults": Command(
        "policies at several GPU failure rates (semantics §11: checkpoints, restarts, wasted "
        "work): DIR/faults.md and a chart in DIR/img/",
        (
            "scenario",
            "rates",
            _RUNS_PREEMPTION,
            (
                "policies",
                {
                    "default": ",".join(FAULT_POLICIES),
                    "help": "comma-separated policy names or 'all' (default %(default)s)",
                },
            ),
            _out("faults"),
            *EXECUTION,
        ),
        world="the scenario, the failure rates the runs sweep and their preemption rule",
    ),
    "evaluate": Command(
        "heuristics and learned models (algo:path) on the same held-out episodes of an "
        "environment id: mean ± 95%% CI and the paired JCT ratio to a reference",
        (
            "env_id",
            *WORLD,
            "env_kwargs",
            (
                "policies",
                {
                    "required": True,
                    "help": "comma-separated registered policies (bacepipe policies), saved "
                    "models written algo:path (maskable_ppo:runs/x/model.zip) and 'pretrained' "
                    "(the agent shipped for this env)",
                },
            ),
            "reference",
            (
                "json",
                _help("also write every episode and the summary as JSON to OUT ('-' for stdout)"),
            ),
            _plot(
                "each policy's paired JCT and cost ratios to the reference with its wins and "
                "losses, and its mean JCT,"
            ),
            "episodes",
            "first_seed",
        ),
        usage="%(prog)s --env-id ID --policies LIST --episodes N --first-seed S\n"
        "       [world flags] [--env-kwargs JSON] [--reference P] [--json OUT] [--plot PATH]",
        world=_ENV_WORLD,
    ),
    "headroom": Command(
        "the rollout planner against an environment id's best heuristic on the same "
        "episodes: how much room the env's decisions leave (docs/headroom.md)",
        (
            "env_id",
            "jobs",
            "base",
            "lookahead",
            "objective",
            "k",
            ("json", _help("also write the report as JSON to OUT ('-' for stdout)")),
            _plot("every heuristic's mean JCT and the planner's, the best heuristic marked,"),
            ("episodes", _help("episodes, the same for every policy")),
            (
                "first_seed",
                {
                    "required": False,
                    "default": 1_000_000,
                    "help": "reset seed of the first episode (default 1000000: held out from "
                    "training)",
                },
            ),
        ),
        world=_ENV_WORLD,
    ),
    "validation": Command(
        "the performance model (Eq. 1 and its physical form) against 76 measured "
        "training iterations (Sailor, SOSP'25): DIR/validation.md and DIR/validation.csv",
        (_out("validation", _DOCS),),
    ),
    # Listed for --help only: main() hands `bacepipe train ...` to the training command as is.
    "train": Command(
        "train a learned orderer and overlay it with the heuristics (the train extra): "
        "bacepipe train learn|compare ... (bacepipe train --help)"
    ),
}


# ------------------------------------------------------------------------------ the parser
class _Parser(OneLineParser):
    """:class:`OneLineParser` whose unknown command, choice or flag names the closest valid
    one when there is one: ``bacepipe: error: unknown command 'simulat'; did you mean
    'simulate'? (see bacepipe --help)``. A flag it does not know is reported before any
    flag that is missing (``--scenaro`` is a misspelt ``--scenario``, not a missing one)."""

    _argv: Sequence[str] = ()

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """argparse's, remembering the arguments for :meth:`error`."""
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        """The one line and exit status 2, with a suggestion for an invalid choice or flag."""
        found = re.fullmatch(r"argument (\S+): invalid choice: (.*) \(choose from (.*)\)", message)
        if found:
            what, got, options = found.groups()
            if what == "COMMAND":
                self._unknown_flag()  # `--plugn x simulate`: x is no command, --plugn no flag
            names = [o.strip().strip("'") for o in options.split(",")]
            close = did_you_mean(got.strip("'"), names)
            if close is not None:
                noun = "command" if what == "COMMAND" else f"{what} value"
                self._exit_line(f"unknown {noun} {got}; did you mean {close!r}?")
        if message.startswith(
            ("unrecognized arguments", "the following arguments are", "one of the arguments")
        ):
            self._unknown_flag()
        super().error(message)

    def _exit_line(self, line: str, parser: argparse.ArgumentParser | None = None) -> NoReturn:
        prog = (parser or self).prog
        self.exit(2, f"{prog}: error: {shorten(line, 150)} (see {prog} --help)\n")

    def _unknown_flag(self) -> None:
        """Exit with one line for the first flag of the arguments that neither this parser nor
        the command they name knows (nor abbreviates), if there is one."""
        parser: argparse.ArgumentParser = self
        commands = next(
            (a.choices for a in self._actions if isinstance(a, argparse._SubParsersAction)), {}
        )
        for token in self._argv:
            if token == "--":
                return
            if parser is self and token in commands:
                parser = commands[token]
                continue
            name = token.split("=", 1)[0]
            flags = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
            if not name.startswith("--") or sum(s.startswith(name) for s in flags) == 1:
                continue  # a value, or a flag the parser knows (or abbreviates: --scen)
            close = did_you_mean(name, flags)
            hint = "" if close is None else f"; did you mean {close!r}?"
            self._exit_line(f"unknown flag {name!r}{hint}", parser)


def _add_command(sub: Any, name: str, command: Command) -> None:
    """``name``'s parser, its flags under their groups in :data:`GROUPS`' order."""
    p = sub.add_parser(name, help=command.help, usage=command.usage)
    options = command.options()
    used = {FLAGS[flag].group for flag in options}
    groups = {
        g: p.add_argument_group(g, command.world if g == "world" else line)
        for g, line in GROUPS.items()
        if g in used
    }
    if command.one_of:  # exactly one of them, listed in their group
        (group,) = {FLAGS[flag].group for flag in command.one_of}
        one = groups[group].add_mutually_exclusive_group(required=True)
    for flag, opts in options.items():
        where = one if flag in command.one_of else groups[FLAGS[flag].group]
        where.add_argument(FLAGS[flag].flag, **{"dest": flag, **opts})


def build_parser() -> argparse.ArgumentParser:
    """The ``bacepipe`` command's parser (``bacepipe train`` has its own): ``--version``,
    ``--plugin`` and a parser per command of :data:`COMMANDS`."""
    parser = _Parser(
        prog="bacepipe",
        description="Simulate geo-distributed pipeline-parallel LLM training schedulers "
        "(BACE-Pipe, arXiv 2605.25375).",
    )
    parser.add_argument("--version", action="version", version=f"bacepipe {__version__}")
    parser.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE",
        help="import MODULE first: a plugin that registers policies, placements, admission "
        "rules or environment ids (any command, anywhere on the line, repeatable; installed "
        "plugins of the bacepipe_env.plugins entry-point group load by themselves)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        _add_command(sub, name, command)
    return parser


def check_outputs(args: argparse.Namespace) -> None:
    """One line naming both flags when two flags that name a file the command writes
    (``--json``, ``--plot``: :attr:`Flag.writes`) name the same one; stdout (``-``) is no
    file."""
    seen: dict[Path, str] = {}
    for name, flag in FLAGS.items():
        value = getattr(args, name, None)
        if not flag.writes or not isinstance(value, str) or value == "-" or not value.strip():
            continue
        path = Path(value).expanduser().resolve()
        if path in seen:
            raise ValidationError(
                flag.flag, value, f"{seen[path]} writes that file too: give each its own path"
            )
        seen[path] = flag.flag


def parse_seeds(text: str) -> list[int]:
    """``"10"`` -> seeds 0..9; ``"0,3,7"`` -> those; ``"2-5"`` -> 2..5 inclusive."""
    text = text.strip()
    try:
        if text.isdigit():
            count = int(text)
            if count > MAX_SEEDS:
                raise ValidationError("--seeds", text, f"at most {MAX_SEEDS:,} seeds")
            seeds = list(range(count))
        elif "-" in text and "," not in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            if hi - lo + 1 > MAX_SEEDS:
                raise ValidationError("--seeds", text, f"at most {MAX_SEEDS:,} seeds")
            seeds = list(range(lo, hi + 1))
        else:
            seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as err:
        if isinstance(err, ValidationError):
            raise
        raise ValidationError(
            "--seeds", text, "must be a count (10), a list (0,3,7) or a range (0-9)"
        ) from None
    if not seeds:
        raise ValidationError(
            "--seeds", text, "gives no seeds; use a count >= 1, a list or a range"
        )
    if any(s < 0 for s in seeds):
        raise ValidationError("--seeds", text, "seeds must be >= 0")
    if len(seeds) > MAX_SEEDS or any(s > MAX_SEED for s in seeds):
        raise ValidationError(
            "--seeds", text, f"at most {MAX_SEEDS:,} seeds, each at most 2**63 - 1"
        )
    return seeds


def parse_loads(text: str) -> list[float]:
    """``--loads "0.4,0.8"``: offered loads, each a finite number > 0, none twice."""
    loads = [
        flag_number("--loads", x.strip(), "workload.load") for x in text.split(",") if x.strip()
    ]
    if not loads:
        raise ValidationError("--loads", text, "give at least one offered load, e.g. 0.4,0.8")
    if len(set(loads)) != len(loads):
        raise ValidationError("--loads", text, "a load is listed twice")
    return loads


def parse_rates(text: str) -> list[float]:
    """``--rates "0,2e-5,2e-4"``: GPU failure rates, each a finite number >= 0, 0 among them,
    none twice."""
    rates = [
        flag_number("--rates", x.strip(), "gpu_failure_rate") for x in text.split(",") if x.strip()
    ]
    if not rates:
        raise ValidationError("--rates", text, "give at least one rate, e.g. 0,2e-5,2e-4")
    if len(set(rates)) != len(rates):
        raise ValidationError("--rates", text, "a rate is listed twice")
    if 0.0 not in rates:
        raise ValidationError("--rates", text, "must include 0 (the runs are normalised to it)")
    return rates
