"""The ``bacepipe`` command.

``bacepipe simulate --scenario paper`` runs BACE-Pipe on a scenario and prints a per-job table
and the run's totals in hours, dollars and kg CO2e. Every input error prints one line and exits
2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import outputs
from .cli_args import (
    build_parser,
    check_outputs,
    parse_loads,
    parse_rates,
    parse_seeds,
)
from .core.records import attempt_rows
from .core.units import hours
from .core.world import (
    KNOBS,
)
from .errors import BacepipeError, ValidationError, choices, shorten
from .experiments import SWEEPS, format_table, run_compare, run_sweep
from .experiments.evaluate import evaluate_policies, learned_display_name
from .experiments.faults import run_faults
from .experiments.online import run_online
from .experiments.progress import Progress
from .experiments.reproduce import CLAIMS, run_reproduce, verdict
from .experiments.runner import RayBackend, default_workers
from .experiments.summary import format_run, write_csv
from .learned import (
    INSTALL_HINT,
    PRETRAINED,
    LearnedPolicyError,
    check_model_file,
    is_learned,
    resolve_pretrained,
    scenario_env_id,
    train_command,
    train_commands,
)
from .plugins import ENV_VAR as PLUGIN_ENV_VAR
from .plugins import load_plugins, plugin_modules
from .policies import bace_pipe
from .policies.registry import (
    ELASTIC_SUFFIX,
    make_policy,
    policy_info,
    policy_names,
    policy_suffixes,
    split_policies,
)
from .policies.rollout import check_lookahead
from .scenarios import list_scenarios, load_scenario
from .signals import exit_status, handle_signals

__all__ = ["format_run", "main"]

_TRAIN_USAGE = """usage: bacepipe train COMMAND [ARGS ...]

Train a learned job orderer with Stable-Baselines3 and compare it with the heuristics
(the same commands as python -m train.<COMMAND> from a checkout).

commands: {commands}

`bacepipe train COMMAND --help` lists a command's flags.
"""


def _train(argv: Sequence[str]) -> int:
    """``bacepipe train COMMAND ARGS``: the ``bacepipe_env.train`` entry point's ``main``."""
    commands = train_commands()
    if not commands:
        raise BacepipeError(f"bacepipe train needs the train extra: {INSTALL_HINT}")
    if not argv:
        print(
            f"bacepipe train: error: give a command: {', '.join(commands)} "
            "(see bacepipe train --help)",
            file=sys.stderr,
        )
        return 2
    if argv[0] in ("-h", "--help"):
        print(_TRAIN_USAGE.format(commands=", ".join(commands)), end="")
        return 0
    name, *rest = argv
    command = train_command(name)
    return int(command(rest, prog=f"bacepipe train {name}"))


def _world(args: argparse.Namespace) -> dict[str, Any]:
    """The world flags given (one per row of KNOBS: --admission, --prices, --outage, ...) as
    load_scenario keywords, each parsed and checked by its row; flags not given are left
    out, so that the scenario file's own fields apply. List values are tuples (RunSpec knobs
    are hashable)."""
    knobs: dict[str, Any] = {}
    for knob in KNOBS.values():
        text = getattr(args, knob.name, None) if knob.flag else None
        if text is not None:
            knobs[knob.name] = knob.from_flag(text)
    return knobs


def _check_plot(path: str | None) -> None:
    """``--plot PATH`` names a PNG and matplotlib can be imported (the ``viz`` extra), checked
    before any run; else one line naming the flag."""
    if path is None:
        return
    from .envs.render import rgb_available  # the env package loads gymnasium: only here

    if Path(path).suffix.lower() != ".png" or not Path(path).stem.strip():
        raise ValidationError("--plot", path, "must name a .png file")
    if not rgb_available():
        raise ValidationError("--plot", path, "needs matplotlib: pip install 'bacepipe-env[viz]'")


def _wrote_plot(args: argparse.Namespace, path: Path) -> None:
    """Say where ``--plot`` went (not when stdout carries the JSON, ``--json -``)."""
    if args.json != "-":
        print(f"\nwrote {path}")


def _simulate(args: argparse.Namespace) -> int:
    _check_plot(args.plot)
    knobs = _world(args)
    if args.partial_take and args.policy != "bace-pipe":
        raise ValidationError("--partial-take", args.policy, "applies to --policy bace-pipe only")
    policy = (
        bace_pipe(partial_take=True)
        if args.partial_take
        else make_policy(args.policy, seed=args.seed)
    )
    if args.env_id is not None:  # the episode gym.make(ID).reset(seed=SEED) plays
        from .envs.registration import check_env_id  # the env package loads gymnasium
        from .envs.replay import scenario_for

        scenario = scenario_for(check_env_id("--env-id", args.env_id), args.seed, **knobs)
    else:
        scenario = load_scenario(args.scenario, seed=args.seed, **knobs)
    _check_copies(args, policy.elasticity, scenario)
    result = policy.simulate(scenario)
    names = scenario.cluster.names
    if args.json != "-":
        faults = scenario.faults is not None and scenario.faults.active
        print(format_run(result, names, faults=faults))
    if args.plot is not None:
        from .envs.render import run_snapshot, save_timeline

        title = (
            f"{result.scenario}, {result.policy}: {len(result.records)} jobs, makespan "
            f"{hours(result.makespan):.2f} h, GPU utilisation {100 * result.gpu_utilization:.1f} %"
        )
        _wrote_plot(args, save_timeline(run_snapshot(result, scenario.cluster), args.plot, title))
    if args.json is not None:
        payload = {"params": dict(scenario.params), **result.to_dict(names)}
        # the run's figures are finite
        _write_json(args.json, json.dumps(payload, indent=2, allow_nan=False))
    if args.csv is not None:
        write_csv(args.csv, attempt_rows(result, names), field="--csv")
        print(f"\nwrote {args.csv}")
    return 0


def _check_copies(args: argparse.Namespace, own: str | None, scenario: Any) -> None:
    """One line naming ``--max-replicas`` when the run's elasticity rule (the policy's own,
    ``+elastic``, else the world's) resizes jobs' copies but no job of ``scenario`` may run a
    second one: the run would play as the plain policy, resizing nothing."""
    rule = own if own is not None else scenario.world.elasticity
    if rule == "none" or any(high > 1 for _, high in scenario.replica_ranges.values()):
        return
    flag, value = ("--policy", args.policy) if own is not None else ("--elasticity", rule)
    if own is None and args.elasticity is None:
        flag = "elasticity"  # the scenario file's own rule
    model = "" if scenario.world.model == "physical" else " and --model physical"
    raise ValidationError(
        flag,
        value,
        "no job may run a second copy of its pipeline, so nothing would be resized: "
        f"give --max-replicas 2 or more{model}",
    )


def _policies(text: str) -> list[str]:
    names = policy_names() if text.strip() == "all" else split_policies(text)
    if not names:
        raise ValidationError(
            "--policies", text, f"give at least one of: {choices(policy_names())}"
        )
    for name in names:
        # learned models (algo:path) are checked when loaded, ``pretrained`` once the env is known
        if not is_learned(name) and name != PRETRAINED:
            policy_info(name)
    return names


def _with_pretrained(policies: list[str], scenario: str) -> list[str]:
    """``pretrained`` spelled out as the agent shipped for the id that plays ``scenario``."""
    if PRETRAINED not in policies:
        return policies
    env_id = scenario_env_id(scenario)
    if env_id is None:
        raise ValidationError(
            "--policies", PRETRAINED, f"no registered env plays scenario {scenario!r}"
        )
    return resolve_pretrained(policies, env_id)


def _workers(args: argparse.Namespace) -> int | RayBackend:
    """``--workers`` processes, or the Ray backend of ``--backend ray [--address]``."""
    if args.backend == "ray":
        return RayBackend(args.address, args.workers or default_workers())
    if args.address is not None:
        raise ValidationError("--address", args.address, "needs --backend ray")
    return int(args.workers or default_workers())


def _check_out(out: str) -> None:
    """``--out`` names a folder: an empty one would write into the current directory."""
    if not out.strip():
        raise ValidationError("--out", out, "give an output directory")


def _experiment(args: argparse.Namespace) -> int:
    _check_out(args.out)
    knobs = _world(args)
    seeds = parse_seeds(args.seeds)
    policies = _with_pretrained(_policies(args.policies), args.scenario)
    workers = _workers(args)
    out = Path(args.out)
    outcomes: list[Any] = []
    with outputs.OutputSet(out, args.command, args.argv) as written:
        _run_experiment(args, policies, seeds, knobs, workers, out, outcomes, written)
    for outcome in outcomes:
        for warning in outcome.warnings:
            print(f"note: {warning}", file=sys.stderr)
    files = [f for o in outcomes for f in o.files if "tfevents" not in f.name]
    print(f"\nwrote {len(files)} files to {out}/: {', '.join(f.name for f in files)}")
    if any("tfevents" in f.name for o in outcomes for f in o.files):
        # compare, ablation and every sweep write HParams sessions there (the HParams tab)
        print(f"TensorBoard: tensorboard --logdir {out / 'tb'}")
    return 0


def _run_experiment(
    args: argparse.Namespace,
    policies: list[str],
    seeds: list[int],
    knobs: dict[str, Any],
    workers: int | RayBackend,
    out: Path,
    outcomes: list[Any],
    written: outputs.OutputSet,
) -> None:
    """compare, ablation or sweep, its outcomes appended to ``outcomes``; each sweep kind's
    files are committed as one set as soon as that kind is done."""
    if args.command in ("compare", "ablation"):
        title = None if args.command == "compare" else f"ablation: {args.scenario}"
        outcome = run_compare(
            args.scenario,
            policies,
            seeds,
            out,
            name=args.command,
            title=title,
            knobs=knobs,
            workers=workers,
        )
        print(format_table(outcome.stats[None], outcome.reference))
        outcomes.append(outcome)
    else:
        kinds = list(SWEEPS) if args.kind == "all" else [args.kind]
        values = None
        if args.values is not None:
            if len(kinds) != 1:
                raise ValidationError("--values", args.values, "needs a single --kind")
            try:
                values = [float(v) for v in args.values.split(",") if v.strip()]
            except ValueError:
                raise ValidationError("--values", args.values, "must be numbers") from None
        for kind in kinds:
            outcome = run_sweep(
                kind,
                args.scenario,
                policies,
                seeds,
                out,
                values=values,
                knobs=knobs,
                workers=workers,
            )
            written.commit(f"sweep-{kind}")
            knob = SWEEPS[kind][0]
            for value, stats in outcome.stats.items():
                print(f"\n{kind} sweep, {knob} = {value:g}")
                print(format_table(stats, outcome.reference))
            outcomes.append(outcome)


def _reproduce(args: argparse.Namespace) -> int:
    _check_out(args.out)
    seeds = parse_seeds(args.seeds)
    workers = _workers(args)
    with outputs.OutputSet(args.out, "reproduction", args.argv):
        outcome = run_reproduce(Path(args.out), seeds, workers=workers)
    for warning in outcome.warnings:
        print(f"note: {warning}", file=sys.stderr)
    n = len(CLAIMS)
    for row in [*outcome.rows, *outcome.variants]:
        vs = [verdict(c, row) for c in CLAIMS]
        print(
            f"{row.semantics.name:24s} {row.scenario:10s} "
            f"{sum(v.direction for v in vs):2d}/{n} in direction, "
            f"{sum(v.significant for v in vs):2d}/{n} with the CI excluding zero, "
            f"{sum(v.reproduced for v in vs):2d}/{n} reproduced"
        )
    if outcome.failing:
        print(f"no row reproduces: {', '.join(c.id for c in outcome.failing)}")
    img = outcome.report.parent / "img"
    print(f"\nwrote {outcome.report} and {len(outcome.images)} charts to {img}/")
    return 0


def _online(args: argparse.Namespace) -> int:
    _check_out(args.out)
    seeds = parse_seeds(args.seeds)
    loads = parse_loads(args.loads)
    policies = None if args.policies is None else _policies(args.policies)
    workers = _workers(args)
    out = Path(args.out)
    rule = _preemption_flag(args.preemption or "none")
    with outputs.OutputSet(out, "online", args.argv):
        path = run_online(
            out,
            seeds=seeds,
            loads=loads,
            n_jobs=args.jobs,
            policies=policies,  # None: the experiment's own default set
            workers=workers,
            preemption=rule,
        )
    print(f"wrote {path}")
    return 0


def _faults_experiment(args: argparse.Namespace) -> int:
    _check_out(args.out)
    seeds = parse_seeds(args.seeds)
    rates = parse_rates(args.rates)
    policies = _policies(args.policies)
    workers = _workers(args)
    preemption = _preemption_flag(args.preemption or "none")
    with outputs.OutputSet(args.out, "faults", args.argv):
        path = run_faults(
            Path(args.out),
            seeds=seeds,
            rates=rates,
            policies=policies,
            scenario=args.scenario,
            workers=workers,
            preemption=preemption,
        )
    print(f"wrote {path}")
    return 0


def _preemption_flag(text: str) -> str:
    """``--preemption``: a rule spec, canonical (``srtf:factor=3``), else one line."""
    return str(KNOBS["preemption"].from_flag(text))


def _json_object(flag: str, text: str | None) -> dict[str, Any] | None:
    """``text`` read as a JSON object (None stays None); else one line."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValidationError(flag, text, f"not JSON: {err.msg}") from None
    if not isinstance(value, dict):
        raise ValidationError(flag, text, "must be a JSON object of GeoPipeEnv keywords")
    return value


#: The world settings that are parts of a policy: a policy's own rule wins over the flag's.
_POLICY_PARTS = ("admission", "preemption", "elasticity")


def _env_world(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """``evaluate``'s world flags (``simulate``'s) and ``--env-kwargs``, as GeoPipeEnv
    keywords: those for every policy's env, and the rules (admission, preemption, elasticity)
    for every policy without its own. A flag the env id's scenario cannot take, or a keyword
    of ``--env-kwargs`` that a flag also sets, is one line."""
    from .envs.config import scenario_knob_names
    from .envs.registration import geopipe_kwargs
    from .envs.settings import SETTINGS

    knobs = _world(args)
    scenario = geopipe_kwargs(args.env_id).get("scenario", "paper")
    takes = {*SETTINGS, *(scenario_knob_names(scenario) if scenario != "random" else ())}
    for name in knobs:
        if name not in takes:
            raise ValidationError(
                KNOBS[name].flag,
                getattr(args, name),
                f"does not apply to {args.env_id}: its {scenario!r} episodes have no such setting",
            )
    given = _json_object("--env-kwargs", args.env_kwargs) or {}
    for name in knobs.keys() & given.keys():
        raise ValidationError(
            "--env-kwargs", args.env_kwargs, f"sets {name}, as {KNOBS[name].flag} does"
        )
    rules = {name: knobs.pop(name) for name in _POLICY_PARTS if name in knobs}
    return {**knobs, **given}, rules


def _evaluate(args: argparse.Namespace) -> int:
    from .envs.registration import check_env_id  # the env package loads gymnasium: only here

    policies = split_policies(args.policies)
    if not policies:
        raise ValidationError(
            "--policies", args.policies, f"give at least one of: {choices(policy_names())}"
        )
    check_env_id("--env-id", args.env_id)
    _check_plot(args.plot)
    policies = resolve_pretrained(policies, args.env_id)  # pretrained: the env's own agent
    for name in policies:  # unknown names and missing files fail before any model loads
        if not is_learned(name):
            policy_info(name)
        elif name.startswith(f"{PRETRAINED}:"):
            continue  # in the package: its loader names the shipped ones if it is not there
        else:
            try:
                check_model_file(name)
            except LearnedPolicyError as err:
                raise ValidationError("--policies", name, err.reason) from None
    if args.reference is not None and args.reference.strip() not in (
        *policies,
        *(learned_display_name(p) for p in policies if is_learned(p)),
    ):
        raise ValidationError(
            "--reference", args.reference, f"not among --policies: {', '.join(policies)}"
        )
    reference = None if args.reference is None else args.reference.strip()
    env_kwargs, rules = _env_world(args)
    with Progress(len(policies) * args.episodes, "episodes", "evaluate") as bar:
        try:
            report = evaluate_policies(
                args.env_id,
                policies,
                args.episodes,
                args.first_seed,
                reference,
                progress=bar,
                preemption=rules.pop("preemption", None),
                env_kwargs=env_kwargs,
                defaults=rules,
            )
        except ValidationError as err:
            if err.field != "preemption":
                raise
            raise ValidationError("--preemption", err.value, err.reason) from None
    if args.json != "-":
        print(report.format_table())
    if args.plot is not None:
        from .experiments.plots import evaluation_chart

        _wrote_plot(args, evaluation_chart(report, args.plot))
    if args.json is not None:
        _write_json(args.json, report.to_json())
    return 0


def _headroom(args: argparse.Namespace) -> int:
    from .envs.registration import check_env_id  # the env package loads gymnasium: only here
    from .experiments.headroom import headroom_steps, run_headroom

    check_env_id("--env-id", args.env_id)
    _check_plot(args.plot)
    try:
        check_lookahead(args.lookahead)
    except ValidationError as err:
        raise ValidationError("--lookahead", args.lookahead, err.reason) from None
    with Progress(headroom_steps(args.env_id, args.episodes), "runs", "headroom") as bar:
        report = run_headroom(
            args.env_id,
            args.episodes,
            args.first_seed,
            base=args.base,
            lookahead=args.lookahead,
            k=args.k,
            progress=bar,
            n_jobs=args.jobs,
            objective=args.objective,
        )
    if args.json != "-":
        print(report.format())
    if args.plot is not None:
        from .experiments.plots import headroom_chart

        _wrote_plot(args, headroom_chart(report, args.plot))
    if args.json is not None:
        _write_json(args.json, report.to_json())
    return 0


def _validation(args: argparse.Namespace) -> int:
    from .experiments.validation import run_validation

    _check_out(args.out)
    out = Path(args.out)
    with outputs.OutputSet(out, "validation", args.argv):
        files = run_validation(out, " ".join(args.argv))
    print(f"wrote {', '.join(str(f) for f in files)}")
    return 0


def _write_json(path: str, text: str) -> None:
    """``text`` to stdout (``-``) or to ``path``, whole or not at all (a temporary file
    renamed into place), with a one-line error naming ``--json`` when it cannot be written."""
    if path == "-":
        print(text)
        return
    outputs.write_text(path, text + "\n", field="--json")
    print(f"\nwrote {path}")


def _error(err: BacepipeError) -> None:
    """Print ``err`` as the one ``bacepipe: error:`` line, under 200 characters whatever it
    holds (a ValidationError already is; a SimulationError listing many jobs is cut)."""
    text = str(err).replace("\r", " ").replace("\n", " ")
    _say(f"bacepipe: error: {shorten(text, 200 - len('bacepipe: error: '))}")


def _say(line: str) -> None:
    """``line`` on stderr, if stderr can still be written (a hung-up terminal cannot)."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def _stop_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush cannot fail again."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


#: What the one line says for each signal; the exit status is 128 + the signal's number.
_STOPPED = {
    signal.SIGINT: "bacepipe: interrupted",
    signal.SIGTERM: "bacepipe: terminated (SIGTERM)",
}
if hasattr(signal, "SIGHUP"):  # not on Windows
    _STOPPED[signal.SIGHUP] = "bacepipe: hung up (SIGHUP)"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bacepipe`` console script; returns the exit status.

    Every way a run can end is one line at most: an error a user can cause (status 2), an
    output that cannot be written (status 2, naming it), Ctrl-C (``bacepipe: interrupted``,
    130), SIGTERM (143) and SIGHUP (129); worker processes and Ray tasks stop with the run."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        with handle_signals():
            return _dispatch(argv)
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM / SIGHUP as Terminated
        for s in _STOPPED:  # a second signal while the line is printed changes nothing
            signal.signal(s, signal.SIG_IGN)
        status = exit_status(stop)
        _say(_STOPPED[signal.Signals(status - 128)])
        return status


def run() -> NoReturn:
    """The ``bacepipe`` console script: :func:`main`'s status. A run stopped by a signal has
    already cleaned up (workers stopped, outputs committed or discarded) when main returns,
    so it leaves at once, without the interpreter's teardown (up to 2 s with torch loaded)."""
    status = main()
    if status >= 128:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(status)
    sys.exit(status)


def _dispatch(argv: list[str]) -> int:
    """Run the command ``argv`` names; errors a user can cause become one line and status 2,
    a closed stdout (``>&-``) among them."""
    if sys.stdout is None:  # Python's stand-in for a closed file descriptor 1
        _error(BacepipeError("stdout is closed: send it somewhere, e.g. > out.txt or > /dev/null"))
        return 2
    try:
        status = _command(argv)
        sys.stdout.flush()  # a full device (`> /dev/full`) fails here, not at exit
        return status
    except BacepipeError as err:
        _error(err)
        return 2
    except BrokenPipeError:  # the reader went away (`bacepipe ... | head`): stop quietly
        _stop_stdout()
        return 0
    except MemoryError:
        _error(BacepipeError("out of memory: try fewer jobs, seeds or --workers"))
        return 2
    except OSError as err:  # a write to stdout or a file the run did not name
        where = "stdout" if err.filename is None else str(err.filename)
        _stop_stdout()
        _error(BacepipeError(f"cannot write {shorten(where, 60)}: {err.strerror or err}"))
        return 2


#: What each built-in suffix adds to the name it follows (``bacepipe policies``); a suffix
#: a plugin registers is described by the rule it adds.
_SUFFIXES = {
    "+full": "waits until a job gets its full placement",
    "+finish-aware": "waits when the next GPU release would let a job finish sooner",
    "+announce": "finish-aware that also holds GPUs for an announced job it would block",
    "+deadline-aware": "finish-aware that also defers a job past hope for a blocked job on time",
    "+srtf": "preempts the longest-remaining job for a pending one with half its time left",
    "+las": "preempts the most-served job for a pending one below 500 GPU-h (size-blind)",
    ELASTIC_SUFFIX: "resizes jobs' data-parallel copies; needs --max-replicas 2+, --model physical",
}


def _suffix_rule(suffix: str, after: list[str]) -> str:
    """The rule ``suffix`` adds to the first name it follows, e.g. ``preemption srtf``."""
    if not after:
        return "elasticity greedy"
    mine, base = policy_info(after[0] + suffix), policy_info(after[0])
    parts = ("admission", "preemption", "elasticity")
    changed = [f"{p} {getattr(mine, p)}" for p in parts if getattr(mine, p) != getattr(base, p)]
    return ", ".join(changed) or mine.description


def _list_policies() -> None:
    """``bacepipe policies``: every registered policy, the suffixes that compose a policy from
    another (``<base>+srtf``), and the rollout family, each with one line."""
    names = policy_names(include_oracles=True)
    suffixes = {f"<base>{s}": (s, after) for s, after in policy_suffixes().items()}
    width = max(map(len, [*names, *suffixes]))
    for name in names:
        print(f"{name:{width}s}  {policy_info(name).description}")
    for family, (suffix, after) in suffixes.items():
        rule = _suffix_rule(suffix, after)
        where = "any heuristic" if not after else ", ".join(after)
        print(f"{family:{width}s}  {_SUFFIXES.get(suffix, rule)} ({rule}; base: {where})")
    family = "rollout:<base>"
    print(
        f"{family:{width}s}  Rollout planner over any heuristic above "
        "(settings: ,k=4,lookahead=submitted|announced:H|sampled:N|clairvoyant,"
        "objective=jct|misses|tardiness; docs/headroom.md)"
    )


def _take_plugins(argv: list[str]) -> tuple[list[str], list[str]]:
    """``argv`` without its ``--plugin MODULE`` / ``--plugin=MODULE`` options (on any command,
    anywhere), and those modules."""
    rest: list[str] = []
    modules: list[str] = []
    items = iter(argv)
    for item in items:
        if item == "--plugin":
            module = next(items, None)
            if module is None or not module.strip():
                raise ValidationError("--plugin", module, "give a module to import")
            modules.append(module.strip())
        elif item.startswith("--plugin="):
            modules.append(item.split("=", 1)[1].strip())
        else:
            rest.append(item)
    return rest, modules


def _command(argv: list[str]) -> int:
    argv, modules = _take_plugins(argv)
    if modules:  # worker processes import them too (they read the variable)
        os.environ[PLUGIN_ENV_VAR] = ",".join([*plugin_modules(), *modules])
    load_plugins()  # the named modules, then every installed plugin
    if argv[:1] == ["train"]:
        return _train(argv[1:])
    args = build_parser().parse_args(argv)
    args.argv = ["bacepipe", *argv]
    check_outputs(args)
    if args.command == "scenarios":
        names = list_scenarios()
        width = max(map(len, names))
        for name in names:
            print(f"{name:{width}s}  {load_scenario(name).description}")
        return 0
    if args.command == "policies":
        _list_policies()
        return 0
    if args.command in ("compare", "sweep", "ablation"):
        return _experiment(args)
    if args.command == "reproduce":
        return _reproduce(args)
    if args.command == "online":
        return _online(args)
    if args.command == "faults":
        return _faults_experiment(args)
    if args.command == "evaluate":
        return _evaluate(args)
    if args.command == "headroom":
        return _headroom(args)
    if args.command == "validation":
        return _validation(args)
    return _simulate(args)


if __name__ == "__main__":  # pragma: no cover
    run()
