"""The ``bacepipe`` command.

``bacepipe simulate --scenario paper`` runs BACE-Pipe on a scenario and prints a per-job table
and the run's totals in hours and dollars. Every input error prints one line and exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .core.simulator import RunResult
from .core.units import hours
from .errors import BacepipeError
from .policies import bace_pipe
from .scenarios import list_scenarios, load_scenario

__all__ = ["format_run", "main"]


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def _int_at_least(minimum: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bacepipe",
        description="Simulate geo-distributed pipeline-parallel LLM training schedulers "
        "(BACE-Pipe, arXiv 2605.25375).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = sub.add_parser("simulate", help="run BACE-Pipe on a scenario and print every job")
    sim.add_argument(
        "--scenario",
        required=True,
        metavar="NAME|PATH",
        help=f"a built-in scenario ({', '.join(list_scenarios())}) or a .json/.toml file",
    )
    sim.add_argument(
        "--seed",
        type=_int_at_least(0),
        default=0,
        help="seed of the scenario's random draws (default 0)",
    )
    sim.add_argument(
        "--bandwidth-scale",
        type=_positive_float,
        default=1.0,
        metavar="X",
        help="multiply every inter-region link (default 1)",
    )
    sim.add_argument(
        "--gpu-scale",
        type=_positive_float,
        default=1.0,
        metavar="X",
        help="multiply every region's GPUs, rounded, at least 1 (default 1)",
    )
    sim.add_argument(
        "--jobs",
        type=_int_at_least(1),
        default=None,
        metavar="N",
        help="number of jobs (default: the scenario's)",
    )
    sim.add_argument(
        "--partial-take",
        action="store_true",
        help="let Pathfinder take part of a region's free GPUs (not in the paper)",
    )
    sim.add_argument(
        "--json",
        metavar="OUT",
        default=None,
        help="also write the full result as JSON to OUT ('-' for stdout)",
    )

    sub.add_parser("scenarios", help="list the built-in scenarios")
    return parser


def format_run(result: RunResult, names: Sequence[str]) -> str:
    """The per-job table and the totals, in hours and dollars."""
    head = ("job", "model", "dataset", "K*", "GPUs", "path", "wait h", "exec h", "JCT h", "cost $")
    rows = [
        (
            r.name,
            r.model,
            r.dataset,
            str(r.k_star),
            str(r.n_gpus),
            r.placement.describe(names),
            f"{hours(r.wait):.2f}",
            f"{hours(r.execution):.2f}",
            f"{hours(r.jct):.2f}",
            f"{r.cost:,.2f}",
        )
        for r in result.records
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    numeric = {3, 4, 6, 7, 8, 9}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    out = [line(head), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
    out.append("")
    out.append(f"scenario {result.scenario}, policy {result.policy}, {len(rows)} jobs")
    out.append(f"  average JCT      {hours(result.avg_jct):12.2f} h")
    out.append(f"  total cost       {result.total_cost:12,.2f} $")
    out.append(f"  makespan         {hours(result.makespan):12.2f} h")
    out.append(f"  GPU utilisation  {100 * result.gpu_utilization:12.1f} %")
    return "\n".join(out)


def _simulate(args: argparse.Namespace) -> int:
    scenario = load_scenario(
        args.scenario,
        seed=args.seed,
        bandwidth_scale=args.bandwidth_scale,
        gpu_scale=args.gpu_scale,
        n_jobs=args.jobs,
    )
    result = bace_pipe(partial_take=args.partial_take).simulate(scenario)
    names = scenario.cluster.names
    if args.json != "-":
        print(format_run(result, names))
    if args.json is not None:
        payload = {"params": dict(scenario.params), **result.to_dict(names)}
        text = json.dumps(payload, indent=2)
        if args.json == "-":
            print(text)
        else:
            try:
                Path(args.json).write_text(text + "\n", encoding="utf-8")
            except OSError as err:
                raise BacepipeError(f"cannot write {args.json}: {err.strerror}") from None
            print(f"\nwrote {args.json}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bacepipe`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "scenarios":
            for name in list_scenarios():
                print(f"{name:8s} {load_scenario(name).description}")
            return 0
        return _simulate(args)
    except BacepipeError as err:
        print(f"bacepipe: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
