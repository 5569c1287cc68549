"""Speed work on the simulator keeps every record bit-identical: the digests of BACE-Pipe's,
FCFS's and LCF's records on a fixed set of scenarios (benchmarks/record_digests.py) equal the
ones recorded at commit 6c6cd82, before the fast paths (issue 14)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = json.loads((Path(__file__).parent / "data" / "record_digests.json").read_text())


def _digests() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bacepipe_record_digests", ROOT / "benchmarks" / "record_digests.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bacepipe_record_digests"] = module
    spec.loader.exec_module(module)
    return module


DIGESTS = _digests()


def test_the_reference_covers_the_fixed_set() -> None:
    assert sorted(REFERENCE) == sorted(DIGESTS.SCENARIOS)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_records_are_bit_identical_to_the_reference(name: str) -> None:
    assert DIGESTS.digest(name) == REFERENCE[name]
