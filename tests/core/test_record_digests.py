"""Speed work on the simulator keeps every record bit-identical: the digests of BACE-Pipe's,
FCFS's and LCF's records on a fixed set of scenarios (benchmarks/record_digests.py) equal the
ones recorded at commit 6c6cd82, before the fast paths (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REFERENCE = json.loads((Path(__file__).parent / "data" / "record_digests.json").read_text())


@pytest.fixture(scope="module")
def digests(benchmark_module: Any) -> Any:
    return benchmark_module("record_digests")


def test_the_reference_covers_the_fixed_set(digests: Any) -> None:
    assert sorted(REFERENCE) == sorted(digests.SCENARIOS)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_records_are_bit_identical_to_the_reference(name: str, digests: Any) -> None:
    assert digests.digest(name) == REFERENCE[name]
