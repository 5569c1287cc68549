"""Restructuring keeps every observation bit-identical: the digests of seeded plays of every
registered id, and of ids given world settings (benchmarks/observation_digests.py), equal the
ones recorded at commit df3ba3f, before the typed World and the fault events (issue 26)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REFERENCE = json.loads((Path(__file__).parent / "data" / "observation_digests.json").read_text())


@pytest.fixture(scope="module")
def digests(benchmark_module: Any) -> Any:
    return benchmark_module("observation_digests")


def test_the_reference_covers_every_registered_id(digests: Any) -> None:
    assert sorted(REFERENCE) == sorted(digests.PLAYS)
    assert set(digests.ENV_IDS) <= set(REFERENCE)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_observations_are_bit_identical_to_the_reference(name: str, digests: Any) -> None:
    assert digests.digest(name) == REFERENCE[name]
