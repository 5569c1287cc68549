"""The fuzz suite: hostile scenario files, CLI flags and env arguments end in one clear line
or a finite result, never a traceback, a hang or a NaN (issue 13).

Two budgets, both in every CI run:
- ``benchmarks/fuzz.py``'s three families, one subprocess per case with a timeout
  (``FUZZ_CASES`` per family; set ``BACEPIPE_FUZZ_CASES`` / ``BACEPIPE_FUZZ_SEED`` to run
  more or others);
- in-process Hypothesis mutations of the built-in scenarios, loaded and simulated under a
  per-example alarm: every outcome is a :class:`~bacepipe_env.errors.BacepipeError` whose
  message is one short line, or a run whose figures are all finite.
"""

from __future__ import annotations

import copy
import json
import math
import os
import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bacepipe_env.errors import MAX_LINE_CHARS, BacepipeError
from bacepipe_env.policies import bace_pipe
from bacepipe_env.scenarios.loader import BUILTIN_SCENARIOS, load_scenario, load_scenario_spec

FUZZ_CASES = int(os.environ.get("BACEPIPE_FUZZ_CASES", "20"))
FUZZ_SEED = int(os.environ.get("BACEPIPE_FUZZ_SEED", "0"))
CASE_TIMEOUT_S = 30.0  # a built-in scenario simulates in under 2 s on the 2-core machine
EXAMPLE_TIMEOUT_S = 10


@pytest.fixture(scope="session")
def fuzz(benchmark_module: Any) -> Any:
    """``benchmarks/fuzz.py`` as a module."""
    return benchmark_module("fuzz")


@pytest.fixture(scope="module")
def fuzz_results(fuzz: Any) -> dict[str, list[tuple[str, str, str]]]:
    """The fuzzer's outcomes on this run's budget, computed once for the three families."""
    return fuzz.run_cases(FUZZ_CASES, FUZZ_SEED, CASE_TIMEOUT_S)  # type: ignore[no-any-return]


@pytest.mark.parametrize("family", ["scenario files", "CLI flags", "env arguments"])
def test_every_fuzz_case_ends_cleanly(
    family: str, fuzz_results: dict[str, list[tuple[str, str, str]]]
) -> None:
    rows = fuzz_results[family]
    assert len(rows) == FUZZ_CASES
    bad = [row for row in rows if row[1] != "clean"]
    counts = Counter(kind for _, kind, _ in rows)
    assert not bad, f"{family}: {dict(counts)}; first: {bad[:3]}"


def test_the_fuzzer_reaches_both_outcomes(
    fuzz_results: dict[str, list[tuple[str, str, str]]],
) -> None:
    """A fuzzer whose every case fails at the first check would prove little: some cases must
    run to the end (an empty detail) and some must be refused (a one-line error)."""
    details = [detail for rows in fuzz_results.values() for _, _, detail in rows]
    assert any(d == "" for d in details) and any(d.startswith("bacepipe: error:") for d in details)


def test_the_classifier_flags_what_it_must(tmp_path: Path, fuzz: Any) -> None:
    """The fuzzer's judge on known outcomes: a traceback, an over-long error, a hang and a
    NaN printed are each caught (a judge that called everything clean would pass the above)."""
    fuzz.SCRATCH = tmp_path

    def code(body: str) -> str:
        return f"import sys, time\n{body}\n"

    assert fuzz._run([], 10, code=code("raise KeyError('x')"))[0] == "traceback"
    assert fuzz._run([], 10, code=code("sys.stderr.write('x' * 300); sys.exit(2)"))[0] == (
        "long-error"
    )
    assert fuzz._run([], 10, code=code("sys.stderr.write('a\\nb\\n'); sys.exit(2)"))[0] == (
        "long-error"
    )
    assert fuzz._run([], 1, code=code("time.sleep(30)"))[0] == "hang"
    assert fuzz._run([], 10, code=code("print('avg JCT nan h')"))[0] == "non-finite"
    assert fuzz._run([], 10, code=code("sys.stderr.write('x: bad'); sys.exit(2)"))[0] == "clean"


# ----------------------------------------------------------------- in-process mutations

BASES = {name: load_scenario_spec(name) for name in BUILTIN_SCENARIOS if name != "online"}
HOSTILE = st.one_of(
    st.sampled_from([True, False, None, "", "12", [], {}, [[[1]]], "random"]),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1e-300, 1e308, 100_001, 2.5]),
)


@contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    """Fail (not hang) an example that runs longer than ``seconds``."""

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"a case ran over {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    return True


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_mutated_scenario_loads_and_runs_or_fails_in_one_line(
    data: st.DataObject, fuzz: Any
) -> None:
    name = data.draw(st.sampled_from(sorted(BASES)), label="base")
    spec = copy.deepcopy(BASES[name])
    path = data.draw(st.sampled_from(fuzz._paths(spec)), label="path")
    value = data.draw(HOSTILE, label="value")
    node = spec
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with _alarm(EXAMPLE_TIMEOUT_S):
        try:
            scenario = load_scenario(spec, seed=0)
            result = bace_pipe().simulate(scenario)
        except BacepipeError as err:
            msg = str(err)
            assert "\n" not in msg and len(msg) <= MAX_LINE_CHARS, msg
            return
    payload = result.to_dict(scenario.cluster.names)
    assert _finite(payload), path
    json.dumps(payload, allow_nan=False)  # strict JSON, as --json writes it
