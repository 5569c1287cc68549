"""benchmarks/learned.py: docs/learned.md carries the table of the committed results."""

from __future__ import annotations

import json


def test_the_docs_carry_the_table_of_the_committed_results(benchmark_module) -> None:
    bench = benchmark_module("learned")
    data = json.loads(bench.LEARNED_JSON.read_text())
    from benchmarks.tables import between  # importable once the script put the root on sys.path

    assert between(bench.DOCS, "learned-table") == "\n" + bench.markdown(data["summary"]), (
        "docs/learned.md: run python benchmarks/learned.py table"
    )
