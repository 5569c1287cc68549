"""A mutation fuzzer over bacepipe's inputs that counts how each case ends.

Three families of cases, each run in its own subprocess with a timeout:

- **scenario files**: a scenario's JSON with one field (a leaf or a whole section) replaced by
  a hostile value (huge, tiny, negative, NaN, a bool, a numeric string, a deep list) or
  deleted, simulated with ``bacepipe simulate --scenario FILE --json OUT``. The bases are the
  built-in scenarios and three made here from them: one with fault events, a GPU failure rate
  and checkpoints (``faults``), one with hourly prices, an egress matrix and an admission rule
  (``tariff``), and one whose jobs are an explicit arrival trace (``trace``);
- **CLI flags**: one ``bacepipe simulate`` / ``compare`` / ``sweep`` / ``online`` /
  ``faults`` flag set to a hostile value (the experiments on a one-seed budget);
- **env arguments**: ``GeoPipeEnv(**{name: value})`` (or ``reset(options=value)``, or a
  method before ``reset``), stepped a few times.

Every case is classified: ``clean`` (exit 2 with one line of at most 200 characters, or, for
env cases, a ``ValueError``/``TypeError``/``RuntimeError`` whose message is one line that
names the argument; or a normal exit whose output is finite, valid JSON where JSON was asked
for), ``traceback``, ``hang`` (over the timeout), ``non-finite`` (``nan``/``inf`` printed or
written), ``long-error`` (an error over 200 characters or several lines) and ``other``.

    python benchmarks/fuzz.py [--cases N] [--seed S] [--timeout S] [--json OUT]

prints the counts per family and the first few cases of each bad kind. ``tests/test_fuzz.py``
runs it on a small budget in every CI run (:func:`run_cases`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bacepipe_env" / "scenarios" / "data"
HOSTILE: list[Any] = [
    1e308,
    -1e308,
    1e-300,
    0,
    -1,
    10**23,
    1e9,
    True,
    False,
    "12",
    "",
    None,
    [],
    {},
    [[[[[[[[[[1]]]]]]]]]],
    float("nan"),  # written as NaN, which Python's json reads and the standard does not
    float("inf"),
    2.5,
    100_001,
    10**400,
    "random",
    "x" * 300,
]
DELETE = object()  # a mutation that removes the key
FLAG_VALUES = [
    "1e308",
    "-1",
    "0",
    "nan",
    "inf",
    "1e9",
    "100000000",
    "x",
    "",
    "1" * 23,
    "1e11",
    "2.5",
    "EU-West:1:nan",
    "EU-West:US-East-2:2:1:3",
    "a,b,,c",
]
FLAGS = {
    "simulate": [
        "--seed",
        "--bandwidth-scale",
        "--gpu-scale",
        "--jobs",
        "--start-hour",
        "--load",
        "--gpu-failure-rate",
        "--checkpoint-interval-s",
        "--restart-s",
        "--egress",
        "--policy",
        "--admission",
        "--preemption",
        "--preempt-checkpoint",
        "--max-preemptions",
        "--prices",
        "--outage",
        "--link-degrade",
        "--json",
    ],
    "compare": [
        "--seeds",
        "--policies",
        "--workers",
        "--out",
        "--admission",
        "--preemption",
        "--prices",
    ],
    "sweep": ["--values", "--seeds"],
    "online": ["--loads", "--jobs", "--seeds", "--policies"],
    "faults": ["--rates", "--seeds", "--scenario", "--policies"],
    "train learn": [
        "--learning-rate",
        "--n-envs",
        "--gamma",
        "--net-arch",
        "--env-kwargs",
        "--seed",
        "--n-eval",
    ],
}
#: What each command runs with besides the fuzzed flag: one seed and a small world, so that a
#: valid value finishes well inside the timeout (a long run is not a hang).
QUICK: dict[str, list[tuple[str, ...]]] = {
    "compare": [("--seeds", "2")],
    "sweep": [("--kind", "jobs"), ("--seeds", "1")],
    "online": [("--seeds", "1"), ("--loads", "0.5"), ("--jobs", "6"), ("--policies", "bace-pipe")],
    "faults": [("--seeds", "1"), ("--rates", "0,1e-4"), ("--policies", "bace-pipe")],
    "train learn": [
        ("--total-timesteps", "64"),
        ("--n-steps", "32"),
        ("--batch-size", "32"),
        ("--n-envs", "1"),
        ("--eval-freq", "64"),
        ("--n-eval", "1"),
        ("--checkpoint-freq", "64"),
        ("--no-progress",),
    ],
}
ENV_ARGS = [
    "max_queue",
    "max_regions",
    "allow_wait",
    "observation",
    "illegal_action",
    "preview",
    "grid_features",
    "running_features",
    "max_steps",
    "admission",
    "placement",
    "n_jobs",
    "scales",
    "reward",
    "fault_features",
    "render_mode",
    "preemption",
    "preempt_window",
    "preempt_wake_h",
]
#: Arguments of the random env (``GeoPipeEnv("random", ...)``).
RANDOM_ARGS = ["n_jobs", "n_regions", "max_regions", "arrival_rate_per_h", "price_range"]
NONFINITE = re.compile(r"\b(nan|inf|NaN|Infinity|-inf)\b")


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path in a JSON value below its root: leaves and whole sections."""
    here = [prefix] if prefix else []
    if isinstance(node, dict):
        return here + [p for k, v in node.items() for p in _paths(v, (*prefix, k))]
    if isinstance(node, list):
        return here + [p for i, v in enumerate(node) for p in _paths(v, (*prefix, i))]
    return here


def _set(node: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        node = node[key]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value


def bases() -> dict[str, Any]:
    """The scenario documents the mutations start from: the built-ins and three made from
    them that hold what the built-ins lack (fault events, a tariff, an explicit trace)."""
    docs = {p.stem: json.loads(p.read_text()) for p in sorted(DATA.glob("*.json"))}
    faults = json.loads(json.dumps(docs["paper"]))
    faults.update(
        events=[
            {"type": "outage", "region": "EU-West", "start_h": 1, "end_h": 3},
            {
                "type": "link",
                "src": "EU-West",
                "dst": "US-East-2",
                "factor": 0.5,
                "start_h": 0,
                "end_h": 5,
                "symmetric": True,
            },
            {"type": "price", "region": "US-East-2", "factor": 2.0, "start_h": 2, "end_h": 4},
        ],
        gpu_failure_rate=1e-3,
        checkpoint_interval_s=1800,
        restart_s=300,
    )
    tariff = json.loads(json.dumps(docs["paper"]))
    k = len(tariff["regions"])
    tariff.update(
        prices="hourly",
        start_hour=100,
        admission="finish-aware",
        egress_usd_per_gb=[[0.0 if i == j else 0.02 for j in range(k)] for i in range(k)],
    )
    trace = json.loads(json.dumps(docs["online"]))
    del trace["workload"]
    models, datasets = [m["name"] for m in trace["models"]], [d["name"] for d in trace["datasets"]]
    trace["jobs"] = [
        {
            "model": models[i % len(models)],
            "dataset": datasets[i % len(datasets)],
            "submit_h": round(0.37 * i, 2),
            "name": f"t{i}",
        }
        for i in range(12)
    ]
    return {**docs, "faults": faults, "tariff": tariff, "trace": trace}


MEMORY_BYTES = 3 * 2**30
SCRATCH = Path(tempfile.gettempdir())  # replaced by main's temporary folder


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def _run(argv: list[str], timeout: float, code: str | None = None) -> tuple[str, str]:
    """(kind, detail) of one subprocess case."""
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "bacepipe_env", *argv]
    # its own process group, so that a timeout ends the case's worker processes too, and at
    # most MEMORY_BYTES of address space per process, so that a runaway case cannot take the
    # machine with it (it fails with a MemoryError instead)
    child = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a scratch folder: a relative --out (``--out nan``) must not land in the checkout;
        # this checkout's package first on the path
        cwd=SCRATCH,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        start_new_session=True,
        preexec_fn=_limit_memory,
    )
    try:
        stdout, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        return "hang", " ".join(argv)[:160]
    proc = subprocess.CompletedProcess(cmd, child.returncode, stdout, stderr)
    err = proc.stderr.strip()
    if "Traceback" in err:
        return "traceback", err.splitlines()[-1][:160]
    if proc.returncode == 2:
        lines = err.splitlines()
        if len(lines) == 1 and len(lines[0]) <= 200:
            return "clean", lines[0][:160]
        return "long-error", f"{len(lines)} lines, {len(err)} chars"
    if proc.returncode == 0:
        # the printed figures, not the lines that echo a path (``--out nan`` is a folder)
        shown = [ln for ln in proc.stdout.splitlines() if not ln.startswith(("wrote", "Tensor"))]
        if any(NONFINITE.search(ln) for ln in shown):
            return "non-finite", proc.stdout[:160]
        if "--json" in argv:  # what it wrote must be strict JSON
            out = Path(argv[argv.index("--json") + 1])
            if out.is_file() and NONFINITE.search(out.read_text()):
                return "non-finite", f"{out.name} holds NaN or Infinity"
        return "clean", ""
    return "other", f"exit {proc.returncode}: {err[:160]}"


def scenario_cases(rng: random.Random, n: int, tmp: Path) -> list[tuple[str, list[str]]]:
    """``n`` mutated scenario files, as simulate command lines."""
    docs = bases()
    out = []
    for i in range(n):
        name = rng.choice(sorted(docs))
        doc = json.loads(json.dumps(docs[name]))
        path = rng.choice(_paths(doc))
        value = rng.choice([*HOSTILE, DELETE])
        _set(doc, path, value)
        f = tmp / f"case{i}.json"
        f.write_text(json.dumps(doc))
        shown = "(deleted)" if value is DELETE else json.dumps(value)[:30]
        label = f"{name}:{'/'.join(map(str, path))}={shown}"
        out.append((label, ["simulate", "--scenario", str(f), "--json", str(tmp / f"o{i}.json")]))
    return out


def flag_cases(rng: random.Random, n: int, tmp: Path) -> list[tuple[str, list[str]]]:
    """``n`` CLI command lines with one hostile flag value."""
    out = []
    for i in range(n):
        command = rng.choice(sorted(FLAGS))
        flag = rng.choice(FLAGS[command])
        value = rng.choice(FLAG_VALUES)
        argv = [*command.split(), flag, value]
        for option in QUICK.get(command, []):  # the fuzzed flag replaces its quick value
            if option[0] != flag:
                argv += option
        if command == "train learn":
            argv += ["--logdir", str(tmp / f"runs{i}")]
        elif command != "simulate" and flag != "--out":
            argv += ["--out", str(tmp / f"{command}{i}")]
        if command == "simulate" and flag != "--scenario":
            argv += ["--scenario", "paper"]
        out.append((" ".join(argv[:3]), argv))
    return out


_ENV_CODE = """
import numpy as np
from bacepipe_env.envs.geopipe import GeoPipeEnv
kwargs = {kwargs}
mode = {mode!r}
try:
    env = GeoPipeEnv("paper", **kwargs) if mode != "random" else GeoPipeEnv("random", **kwargs)
    if mode == "before-reset":
        env.action_masks()
    options = {options}
    obs, info = env.reset(seed=0, options=options) if options is not None else env.reset(seed=0)
    for _ in range(5):
        legal = np.flatnonzero(info["action_mask"])
        obs, r, term, trunc, info = env.step(int(legal[0]))
        if not np.all(np.isfinite(np.asarray(r, dtype=float))):
            print("nan reward")
        if term or trunc:
            break
except (ValueError, TypeError, RuntimeError, KeyError) as err:
    import sys
    msg = str(err)
    if {name!r} and {name!r} not in msg:
        msg = "does not name the argument: " + msg
        sys.stderr.write(msg + "\\n")
        sys.exit(3)
    sys.stderr.write(msg + "\\n")
    sys.exit(2)
"""


def _py(value: Any) -> str:
    """``value`` as Python source (``repr`` writes NaN as ``nan``, which is no literal)."""
    if isinstance(value, float) and value != value:
        return "float('nan')"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return f"float('{value}')"
    return repr(value)


def env_cases(rng: random.Random, n: int) -> list[tuple[str, str]]:
    """``n`` env constructions with one hostile argument (or call order)."""
    out = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.1:
            out.append(
                (
                    "action_masks() before reset",
                    _ENV_CODE.format(
                        kwargs="{}", mode="before-reset", options="None", name="reset"
                    ),
                )
            )
            continue
        if roll < 0.2:
            value = rng.choice([*HOSTILE, "x"])
            out.append(
                (
                    f"reset(options={value!r})",
                    _ENV_CODE.format(kwargs="{}", mode="paper", options=_py(value), name="options"),
                )
            )
            continue
        mode = "random" if roll < 0.4 else "paper"
        name = rng.choice(RANDOM_ARGS if mode == "random" else ENV_ARGS)
        value = rng.choice([*HOSTILE, "no", (1,), (0, 0), (5, 1), 7])
        label = f"{mode}: {name}={value!r}"[:60]
        kwargs = f"{{{name!r}: {_py(value)}}}"
        code = _ENV_CODE.format(kwargs=kwargs, mode=mode, options="None", name=name)
        out.append((label, code))
    return out


def run_cases(
    cases: int, seed: int = 0, timeout: float = 20.0
) -> dict[str, list[tuple[str, str, str]]]:
    """``cases`` cases of each family drawn from ``seed``: family -> (label, kind, detail)."""
    global SCRATCH
    rng = random.Random(seed)
    results: dict[str, list[tuple[str, str, str]]] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = SCRATCH = Path(d)
        families: dict[str, list[tuple[str, list[str] | str]]] = {
            "scenario files": list(scenario_cases(rng, cases, tmp)),
            "CLI flags": list(flag_cases(rng, cases, tmp)),
            "env arguments": list(env_cases(rng, cases)),
        }
        for family, todo in families.items():
            rows = []
            for label, case in todo:
                if isinstance(case, str):
                    kind, detail = _run([], timeout, code=case)
                else:
                    kind, detail = _run(case, timeout)
                rows.append((label, kind, detail))
            results[family] = rows
    return results


def main() -> None:
    """Run the cases and print the counts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=60, help="cases per family")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per case")
    parser.add_argument("--json", default="", help="write every case's outcome here")
    args = parser.parse_args()
    results = run_cases(args.cases, args.seed, args.timeout)
    total: Counter[str] = Counter()
    for family, rows in results.items():
        counts = Counter(kind for _, kind, _ in rows)
        total.update(counts)
        print(f"{family}: {len(rows)} cases, " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        for kind in ("traceback", "hang", "non-finite", "long-error", "other"):
            for label, _k, detail in [r for r in rows if r[1] == kind][:3]:
                print(f"  {kind}: {label} -> {detail}")
    print("all: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items())))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
