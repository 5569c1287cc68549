"""The ``bacepipe`` command's arguments: its parser, with the world's flags made from
:data:`~bacepipe_env.core.world.KNOBS`, and the parsers of its list flags (``--seeds``,
``--loads``, ``--rates``). :mod:`bacepipe_env.cli` runs the commands.

``simulate``, ``compare``, ``sweep`` and ``ablation`` list their flags in four groups (world,
policy, output, execution); an unknown command or choice gets a "did you mean" when one is
close (:func:`did_you_mean`)."""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterable
from typing import Any, NoReturn

from . import __version__
from .core.limits import LIMITS, Limit
from .core.preemption import PREEMPTION_RULES
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
    "GROUPS",
    "MAX_SEEDS",
    "build_parser",
    "did_you_mean",
    "parse_loads",
    "parse_rates",
    "parse_seeds",
]

#: The flag groups of ``simulate``, ``compare``, ``sweep`` and ``ablation``, in ``--help``'s
#: order, with the line under a group's heading (None: the heading alone).
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


class _Parser(OneLineParser):
    """:class:`OneLineParser` whose unknown command or choice names the closest valid one
    when there is one: ``bacepipe: error: unknown command 'simulat'; did you mean 'simulate'?
    (see bacepipe --help)``."""

    def error(self, message: str) -> NoReturn:
        """The one line and exit status 2, with a suggestion for an invalid choice."""
        found = re.fullmatch(r"argument (\S+): invalid choice: (.*) \(choose from (.*)\)", message)
        if found:
            what, got, options = found.groups()
            names = [o.strip().strip("'") for o in options.split(",")]
            close = did_you_mean(got.strip("'"), names)
            if close is not None:
                noun = "command" if what == "COMMAND" else f"{what} value"
                line = f"unknown {noun} {got}; did you mean {close!r}?"
                self.exit(2, f"{self.prog}: error: {shorten(line, 150)} (see {self.prog} --help)\n")
        super().error(message)


def _groups(p: argparse.ArgumentParser, *names: str) -> dict[str, Any]:
    """``p``'s flag groups ``names`` (keys of :data:`GROUPS`), in that order in ``--help``."""
    return {name: p.add_argument_group(name, GROUPS[name]) for name in names}


def _flag_options(knob: Knob) -> dict[str, Any]:
    """argparse's options for a world setting's flag: its text is parsed and checked later,
    by :meth:`Knob.from_flag`, so that a bad value is one line naming the flag."""
    if knob.scope == "world":
        default = (
            "off"
            if knob.default in (None, ())
            else f"{knob.default:g}"
            if isinstance(knob.default, float)
            else knob.default
        )
        said = f"default: the scenario's, {default}"
    else:
        said = "default: the scenario's" if knob.default is None else f"default {knob.default:g}"
    options: dict[str, Any] = {"help": f"{knob.help} ({said})"}
    if knob.const is True:
        options.update(action="store_const", const=True)
    elif knob.repeat:
        options.update(action="append", metavar=knob.metavar)
        options["help"] = f"{knob.help} (repeatable)"
    elif knob.const is not None:
        options.update(nargs="?", const=knob.const, metavar=knob.metavar)
    else:
        options.update(metavar=knob.metavar)
    return options


def build_parser() -> argparse.ArgumentParser:
    """The ``bacepipe`` command's parser (``bacepipe train`` has its own)."""
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

    def world(p: Any, *scopes: str) -> None:
        """The world's flags, one per row of KNOBS in ``scopes`` (default ``world``), added to
        ``p`` (a parser or one of its groups)."""
        for knob in KNOBS.values():
            if knob.flag and knob.scope in (scopes or ("world",)):
                p.add_argument(knob.flag, dest=knob.name, default=None, **_flag_options(knob))

    def plot(p: Any, what: str) -> None:
        """``--plot PATH``: a PNG of ``what``, written whole or not at all."""
        p.add_argument(
            "--plot",
            default=None,
            metavar="PATH",
            help=f"also draw {what} as a PNG at PATH (needs the viz extra: matplotlib)",
        )

    sim = sub.add_parser(
        "simulate",
        help="run a policy (BACE-Pipe) on a scenario, print every job",
        usage="%(prog)s (--scenario NAME|PATH | --env-id ID) [--seed SEED]\n"
        "       [world flags] [--policy NAME] [--partial-take] [--json OUT] [--plot PATH]",
    )
    sim_groups = _groups(sim, "world", "policy", "output")
    source = sim_groups["world"].add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--scenario",
        metavar="NAME|PATH",
        help=f"a built-in scenario ({', '.join(list_scenarios())}) or a .json/.toml file",
    )
    source.add_argument(
        "--env-id",
        metavar="ID",
        help="the scenario an environment id's reset(seed=SEED) draws, with its rules "
        "(docs/environment.md, Seeds and replay)",
    )
    sim_groups["world"].add_argument(
        "--seed",
        type=_limited("seed"),
        default=0,
        help="seed of the scenario's random draws; with --env-id, the reset seed (default 0)",
    )
    sim_groups["policy"].add_argument(
        "--policy",
        default="bace-pipe",
        metavar="NAME",
        help="a registered policy (bacepipe policies; default bace-pipe)",
    )
    sim_groups["policy"].add_argument(
        "--partial-take",
        action="store_true",
        help="BACE-Pipe with Pathfinder taking part of a region's free GPUs (not in the paper)",
    )
    world(sim_groups["world"], "simulate", "world")
    sim_groups["output"].add_argument(
        "--json",
        metavar="OUT",
        default=None,
        help="also write the full result as JSON to OUT ('-' for stdout)",
    )
    plot(
        sim_groups["output"],
        "the GPU timeline of the finished run (which job held how many GPUs of each region when)",
    )

    def seeds_and_workers(p: Any, default_seeds: int = 10) -> None:
        """``--seeds``, ``--workers``, ``--backend`` and ``--address``, added to ``p`` (a
        parser or one of its groups)."""
        p.add_argument(
            "--seeds",
            default=str(default_seeds),
            metavar="N|LIST",
            help="a count N (seeds 0..N-1), a list '0,3,7' or a range '0-9' "
            f"(default {default_seeds})",
        )
        p.add_argument(
            "--workers",
            type=_limited(Limit(1, MAX_WORKERS, integer=True)),
            default=None,
            metavar="N",
            help="worker processes (default: up to 2 cores)",
        )
        p.add_argument(
            "--backend",
            choices=("local", "ray"),
            default="local",
            help="run the grid in local worker processes (default) or as Ray tasks; the "
            f"outputs are the same bit for bit (ray: {RAY_HINT}; docs/scale.md)",
        )
        p.add_argument(
            "--address",
            default=None,
            metavar="ADDR",
            help="with --backend ray: the Ray cluster to join ('auto', 'ray://HOST:10001'; "
            "default: start a local Ray instance with --workers CPUs)",
        )

    sub.add_parser("scenarios", help="list the built-in scenarios")
    sub.add_parser("policies", help="list the registered policies")

    def experiment(
        cmd: str, help_: str, default_policies: str, sweeps: bool = False
    ) -> argparse.ArgumentParser:
        """``compare``, ``sweep`` (``sweeps``: with ``--kind`` and ``--values``) or
        ``ablation``, its flags in the world, policy, output and execution groups."""
        kind = " [--kind KIND] [--values LIST]" if sweeps else ""
        p = sub.add_parser(
            cmd,
            help=help_,
            usage=f"%(prog)s [--scenario NAME|PATH]{kind}\n"
            "       [world flags] [--policies LIST] [--out DIR] [--seeds N|LIST]\n"
            "       [--workers N] [--backend {local,ray}] [--address ADDR]",
        )
        groups = _groups(p, "world", "policy", "output", "execution")
        groups["world"].add_argument(
            "--scenario",
            default="paper",
            metavar="NAME|PATH",
            help="built-in scenario or file (default paper)",
        )
        if sweeps:
            groups["world"].add_argument(
                "--kind",
                default="all",
                choices=[*SWEEPS, "all"],
                help="which sweep: the world setting it varies (default all)",
            )
            groups["world"].add_argument(
                "--values",
                default=None,
                metavar="LIST",
                help="comma-separated values for one --kind (default: the paper's)",
            )
        world(groups["world"])
        seeds_and_workers(groups["execution"])
        groups["policy"].add_argument(
            "--policies",
            default=default_policies,
            metavar="LIST",
            help=f"comma-separated policy names or 'all' (default {default_policies}); saved "
            "models as algo:path, 'pretrained' for the agent shipped for the scenario's env",
        )
        groups["output"].add_argument(
            "--out",
            default=f"out/{cmd}",
            metavar="DIR",
            help=f"output directory (default out/{cmd})",
        )
        return p

    experiment(
        "compare", "every policy on the same seeds (the paper's Fig. 4)", ",".join(baseline_names())
    )
    experiment(
        "sweep",
        "sensitivity sweeps (the paper's Figs. 5-7)",
        ",".join(baseline_names()),
        sweeps=True,
    )
    experiment(
        "ablation",
        "BACE-Pipe against its ablations (the paper's Fig. 8)",
        ",".join(ablation_names()),
    )
    rep = sub.add_parser(
        "reproduce",
        help="every claim of the paper's Section IV under five semantics and three memory "
        "variants: DIR/reproduction.md and Fig. 4-8 style charts in DIR/img/",
    )
    rep.add_argument(
        "--out",
        default="out/reproduce",
        metavar="DIR",
        help="output directory (default out/reproduce; `--out docs` regenerates the docs)",
    )
    seeds_and_workers(rep)
    onl = sub.add_parser(
        "online",
        help="policies on the online world (Philly-trace arrivals, hourly 2023 prices and "
        "carbon) at several offered loads: DIR/online.md and charts in DIR/img/",
    )
    onl.add_argument(
        "--out", default="out/online", metavar="DIR", help="output directory (default out/online)"
    )
    seeds_and_workers(onl, default_seeds=5)
    onl.add_argument(
        "--loads",
        default=",".join(map(str, ONLINE_LOADS)),
        metavar="LIST",
        help=f"comma-separated offered loads > 0 (default {','.join(map(str, ONLINE_LOADS))})",
    )
    onl.add_argument(
        "--jobs",
        type=_limited("workload.n_jobs"),
        default=DEFAULT_N_JOBS,
        metavar="N",
        help="jobs per episode (default 500)",
    )
    onl.add_argument(
        "--policies",
        default=None,
        metavar="LIST",
        help="comma-separated policy names or 'all' (default: the online experiment's own "
        "set, BACE-Pipe and the paper's baselines among them)",
    )
    flt = sub.add_parser(
        "faults",
        help="policies at several GPU failure rates (semantics §11: checkpoints, restarts, wasted "
        "work): DIR/faults.md and a chart in DIR/img/",
    )
    flt.add_argument(
        "--out", default="out/faults", metavar="DIR", help="output directory (default out/faults)"
    )
    seeds_and_workers(flt)
    flt.add_argument(
        "--rates",
        default=",".join(f"{x:g}" for x in FAULT_RATES),
        metavar="LIST",
        help="comma-separated GPU failures per GPU-hour, 0 among them "
        f"(default {','.join(f'{x:g}' for x in FAULT_RATES)})",
    )
    for p in (onl, flt):
        p.add_argument(
            "--preemption",
            default="none",
            metavar="RULE",
            help=f"the preemption rule of every policy without its own: "
            f"{', '.join(PREEMPTION_RULES)}, with settings (default none)",
        )
    flt.add_argument(
        "--policies",
        default=",".join(FAULT_POLICIES),
        metavar="LIST",
        help=f"comma-separated policy names or 'all' (default {','.join(FAULT_POLICIES)})",
    )
    flt.add_argument(
        "--scenario",
        default="paper",
        metavar="NAME|PATH",
        help="built-in scenario or file (default paper)",
    )
    ev = sub.add_parser(
        "evaluate",
        help="heuristics and learned models (algo:path) on the same held-out episodes of an "
        "environment id: mean ± 95%% CI and the paired JCT ratio to a reference",
    )
    ev.add_argument(
        "--env-id",
        required=True,
        metavar="ID",
        help="a GeoPipeEnv environment id: this package's (bacepipe_env/GeoPipe-v2, ...) or "
        "one registered with Gymnasium, e.g. by a --plugin",
    )
    ev.add_argument(
        "--env-kwargs",
        default=None,
        metavar="JSON",
        help="GeoPipeEnv keywords over every policy's env, e.g. '{\"n_jobs\": 80}' (a world "
        "setting) or '{\"reward\": null}' (every return by the default reward)",
    )
    ev.add_argument(
        "--policies",
        required=True,
        metavar="LIST",
        help="comma-separated registered policies (bacepipe policies), saved models "
        "written algo:path (maskable_ppo:runs/x/model.zip) and 'pretrained' (the agent "
        "shipped for this env)",
    )
    ev.add_argument(
        "--episodes",
        type=_limited(Limit(1, MAX_SEEDS, integer=True)),
        required=True,
        metavar="N",
        help="episodes per policy, the same for every policy",
    )
    ev.add_argument(
        "--first-seed",
        type=_limited("seed"),
        required=True,
        metavar="S",
        help="reset seed of the first episode; the episodes are S, S+1, ..., S+N-1",
    )
    ev.add_argument(
        "--preemption",
        default=None,
        metavar="RULE",
        help="the rule the env's simulator applies for every policy without its own: "
        f"{', '.join(PREEMPTION_RULES)} (default: the env's scenario's, none)",
    )
    ev.add_argument(
        "--reference",
        default=None,
        metavar="P",
        help="the policy the JCT ratios and wins/ties/losses compare with (default: the first)",
    )
    ev.add_argument(
        "--json",
        default=None,
        metavar="OUT",
        help="also write every episode and the summary as JSON to OUT ('-' for stdout)",
    )
    plot(ev, "each policy's mean JCT with its 95%% interval, the reference marked")
    hr = sub.add_parser(
        "headroom",
        help="the rollout planner against an environment id's best heuristic on the same "
        "episodes: how much room the env's decisions leave (docs/headroom.md)",
    )
    hr.add_argument(
        "--env-id",
        required=True,
        metavar="ID",
        help="a bacepipe_env environment id, e.g. bacepipe_env/GeoPipe-v2",
    )
    hr.add_argument(
        "--episodes",
        type=_limited(Limit(1, MAX_SEEDS, integer=True)),
        required=True,
        metavar="N",
        help="episodes, the same for every policy",
    )
    hr.add_argument(
        "--first-seed",
        type=_limited("seed"),
        default=1_000_000,
        metavar="S",
        help="reset seed of the first episode (default 1000000: held out from training)",
    )
    hr.add_argument(
        "--base",
        default=None,
        metavar="P",
        help="the heuristic the planner finishes its forks with (default: the env's best)",
    )
    hr.add_argument(
        "--lookahead",
        default="submitted",
        metavar="L",
        help="what the planner's forks know: submitted (default), announced:H or "
        "clairvoyant (a bound, not a scheduler)",
    )
    hr.add_argument(
        "--k",
        type=_limited(Limit(1, 64, integer=True)),
        default=4,
        metavar="K",
        help="how many of the base's favourite candidates each decision tries (default 4)",
    )
    hr.add_argument(
        "--jobs",
        type=_limited("workload.n_jobs"),
        default=None,
        metavar="N",
        help="jobs per episode (default: the env's; e.g. 80 for a short Online episode)",
    )
    hr.add_argument(
        "--json",
        default=None,
        metavar="OUT",
        help="also write the report as JSON to OUT ('-' for stdout)",
    )
    plot(hr, "every heuristic's mean JCT and the planner's, the best heuristic marked")
    val = sub.add_parser(
        "validation",
        help="the performance model (Eq. 1 and its physical form) against 76 measured "
        "training iterations (Sailor, SOSP'25): DIR/validation.md and DIR/validation.csv",
    )
    val.add_argument(
        "--out",
        default="out/validation",
        metavar="DIR",
        help="output directory (default out/validation; `--out docs` regenerates the docs)",
    )
    # Listed for --help only: main() hands `bacepipe train ...` to the training command as is.
    sub.add_parser(
        "train",
        help="train a learned orderer and overlay it with the heuristics (the train extra): "
        "bacepipe train learn|compare ... (bacepipe train --help)",
    )
    return parser


#: The most seeds one experiment takes, and the largest seed (numpy's int64 range).
MAX_SEEDS, MAX_SEED = 100_000, 2**63 - 1


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
