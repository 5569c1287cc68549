"""docs/extending.md's worked example runs as written: a new ordering in one file, one
registry entry, and the policy works in the simulator and as an environment agent.

The blocks run in a subprocess, so that the registered policy does not leak into the other
tests' registry.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_page_has_the_file_the_registration_and_the_use() -> None:
    blocks = _blocks()
    assert len(blocks) == 6  # the ordering's three, its checks, a preemption rule, a metric
    assert "class LJFOrdering(Ordering)" in blocks[0]
    assert blocks[1].strip().startswith("PolicyInfo(") and blocks[1].count("\n") == 1
    assert "register_policy(" in blocks[2]


def test_the_worked_example_runs_as_written() -> None:
    blocks = _blocks()
    # the file, the out-of-package registration, the use; then checks on what it did
    script = "\n".join([blocks[0], blocks[2], blocks[3]]) + "\n" + CHECKS
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok"]


def test_the_metric_example_runs_as_written() -> None:
    """The metric section's block builds a METRICS row and prints the summary line its comment
    promises: one of fig1's two jobs finishes more than a day after its submission."""
    block = _blocks()[5]
    assert "Metric(" in block
    done = subprocess.run(
        [sys.executable, "-c", block], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert '"  late jobs                   1"' in block
    assert done.stdout.split() == ["late", "jobs", "1"]


def test_the_preemption_rule_example_runs_as_written() -> None:
    block = _blocks()[4]
    assert "class LargestFirst" in block and "preemption=LargestFirst()" in block
    script = block + "\nassert result.n_preemptions > 0\nprint('ok')\n"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok"]


CHECKS = """
import contextlib, io

from bacepipe_env.cli import main
from bacepipe_env.core import Simulator
from bacepipe_env.policies.registry import policy_names

assert policy_names()[-1] == "ljf"
# the first decision on paper seed 3 (all 8 jobs at t = 0) goes to the largest E(1)
sim = Simulator(scenario, make_policy("ljf").placement)
candidates = sim.next_decision()
longest = max(candidates, key=lambda j: scenario.profiles[j].single_gpu_exec)
assert make_policy("ljf").ordering.choose(sim, candidates) == longest
assert result.records != make_policy("sjf").simulate(scenario, admission="finish-aware").records
with contextlib.redirect_stdout(io.StringIO()) as out:
    assert main(["simulate", "--scenario", "paper", "--seed", "3", "--policy", "ljf"]) == 0
assert "policy ljf" in out.getvalue()
print("ok")
"""
