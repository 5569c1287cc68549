"""``benchmarks/bench_large.py`` (``make bench-large``, issue 25) in its tiny form: it builds and
simulates the scenario it names and prints every figure it promises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_large.py"


@pytest.mark.slow  # a child process that loads numba (a few seconds)
def test_the_tiny_form_prints_its_figures() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--jobs", "2000", "--regions", "16"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("bench-large: 2,000 jobs on 16 regions (")
    assert "policy bace-pipe" in out.splitlines()[0]
    figures = {
        "build": r"s CPU",
        "simulate": r"s CPU \(2,000 decisions\)",
        r"CPU \(user\+sys\)": r"s, the warm-up's",
        "wall": r"s",
        "peak RSS": r"MB",
        "RSS before build": r"MB",
        "peak - before": r"bytes per job",
        "memory_estimate": r"MB",
        "makespan": r"h, average JCT",
    }
    for name, unit in figures.items():
        assert re.search(rf"^  {name} +-?[\d,.]+ {unit}", out, flags=re.M), name
