"""``bacepipe faults``: the generated block, checked against direct simulation, regenerated
byte for byte, and the block docs/faults.md carries."""

from __future__ import annotations

import math
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from exp_helpers import PNG_SIGNATURE

from bacepipe_env.cli import main
from bacepipe_env.core.units import hours
from bacepipe_env.errors import ValidationError
from bacepipe_env.experiments.faults import BEGIN, CHART, END, run_faults
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import load_scenario

DOCS = Path(__file__).resolve().parents[2] / "docs" / "faults.md"
TINY = {"seeds": [0, 1], "rates": [0.0, 2e-4], "policies": ["bace-pipe", "lcf"]}


def block(md: str) -> str:
    """The generated block of a document, markers included."""
    start, end = md.index(BEGIN), md.index(END) + len(END)
    return md[start:end]


def rows(md: str) -> dict[tuple[str, str], list[str]]:
    """The table's body by (policy, rate)."""
    out = {}
    for line in block(md).splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            out[(cells[0].strip("`"), cells[1])] = cells
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("faults")
    path = run_faults(out, **TINY, progress=False)  # type: ignore[arg-type]
    return path, path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def docs_regenerated(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(the docs' block, the block the documented command writes now)."""
    ours = block(DOCS.read_text(encoding="utf-8"))
    match = re.search(r"`(bacepipe faults --out docs[^`]*)`", ours)
    assert match, "the block names the command that wrote it"
    argv = shlex.split(match.group(1))[1:]
    out = tmp_path_factory.mktemp("faults-docs")
    argv[argv.index("--out") + 1] = str(out)
    assert main([*argv, "--workers", "1"]) == 0
    regenerated = block((out / "faults.md").read_text(encoding="utf-8"))
    return ours, regenerated.replace(f"--out {out} ", "--out docs ")


def _unplaced(md: str, out: Path) -> str:
    """``md`` with the ``--out`` folder it names (the one it was written into) as ``OUT``."""
    assert f"--out {out} " in md, "the report names the folder it was written into"
    return md.replace(f"--out {out} ", "--out OUT ")


def test_tiny_report_regenerates_byte_for_byte(tiny: tuple[Path, str], tmp_path: Path) -> None:
    path, md = tiny
    assert (path.parent / "img" / CHART).read_bytes()[:8] == PNG_SIGNATURE
    again = run_faults(tmp_path, **TINY, progress=False)  # type: ignore[arg-type]
    # byte for byte but for the folder each names as --out
    assert _unplaced(again.read_text(encoding="utf-8"), tmp_path) == _unplaced(md, path.parent)
    assert set(rows(md)) == {(p, r) for p in ("bace-pipe", "lcf") for r in ("0", "2e-4")}


def test_cells_equal_direct_simulation(tiny: tuple[Path, str]) -> None:
    table = rows(tiny[1])
    for policy in ("bace-pipe", "lcf"):
        jct = {}
        for rate, label in ((0.0, "0"), (2e-4, "2e-4")):
            results = [
                make_policy(policy, seed=s).simulate(
                    load_scenario("paper", seed=s, gpu_failure_rate=rate)
                )
                for s in (0, 1)
            ]
            jct[rate] = [hours(r.avg_jct) for r in results]
            cells = table[(policy, label)]
            assert cells[2].startswith(f"{sum(jct[rate]) / 2:,.1f} ± ")
            assert cells[4] == f"{sum(r.n_restarts for r in results) / 2:.1f}"
            assert cells[5] == f"{sum(r.n_preemptions for r in results) / 2:.1f}" == "0.0"
            assert cells[6] == f"{sum(r.wasted_gpu_hours for r in results) / 2:,.0f}"
        ratio = sum(a / b for a, b in zip(jct[2e-4], jct[0.0])) / 2
        assert table[(policy, "2e-4")][8].startswith(f"{ratio:.3f}")
        assert table[(policy, "0")][8] == "1.000 ± 0.000"


def test_docs_carry_the_block_the_documented_command_writes(
    docs_regenerated: tuple[str, str],
) -> None:
    ours, regenerated = docs_regenerated
    assert regenerated == ours, "run the command in docs/faults.md's block (it splices it)"


def test_the_table_shows_the_documented_rates(docs_regenerated: tuple[str, str]) -> None:
    table = rows(docs_regenerated[0])
    assert {r for _, r in table} == {"0", "2e-5", "2e-4"}
    for (policy, rate), cells in table.items():
        assert cells[5] == "0.0", policy  # no preemption on paper, even for the srtf policies
        if rate == "0":
            assert cells[4] == "0.0" and cells[6] == "0", policy
        else:
            assert float(cells[4]) > 0, (policy, rate)


def test_waste_grows_with_the_rate(docs_regenerated: tuple[str, str]) -> None:
    table = rows(docs_regenerated[0])
    for policy in {p for p, _ in table}:
        wasted = [float(table[(policy, r)][6].replace(",", "")) for r in ("0", "2e-5", "2e-4")]
        assert wasted == sorted(wasted) and wasted[-1] > wasted[0], policy


def test_failures_cost_more_but_can_re_place_a_job_locked_onto_a_poor_placement() -> None:
    """What docs/faults.md reads off the table, checked run by run: on `paper` failures raise
    bace-pipe's cost (mean over 10 seeds), yet they shorten its mean JCT, because no job is
    ever preempted there. On seed 0 FLM-101B starts on the 40 GPUs free at t = 0; a failure
    returns it to the queue once the short jobs are done, and it completes on more GPUs,
    sooner than without failures."""

    def run(seed: int, rate: float) -> Any:
        return make_policy("bace-pipe", seed=seed).simulate(
            load_scenario("paper", seed=seed, gpu_failure_rate=rate)
        )

    base = [run(s, 0.0) for s in range(10)]
    faulty = [run(s, 2e-4) for s in range(10)]
    assert math.fsum(f.total_cost for f in faulty) > math.fsum(b.total_cost for b in base)
    assert math.fsum(f.avg_jct for f in faulty) < math.fsum(b.avg_jct for b in base)
    flm = next(r for r in faulty[0].records if r.model == "FLM-101B")
    flm0 = next(r for r in base[0].records if r.model == "FLM-101B")
    assert flm.restarts > 0
    first, last = flm.attempts[0], flm.attempts[-1]
    assert last.placement.n_gpus > first.placement.n_gpus == flm0.n_gpus  # type: ignore[attr-defined]
    assert flm.jct < flm0.jct


def test_a_run_into_the_docs_replaces_only_the_block(
    tiny: tuple[Path, str], tmp_path: Path
) -> None:
    prose = DOCS.read_text(encoding="utf-8")
    (tmp_path / "faults.md").write_text(prose, encoding="utf-8")
    path = run_faults(tmp_path, **TINY, progress=False)  # type: ignore[arg-type]
    new = path.read_text(encoding="utf-8")
    assert _unplaced(block(new), tmp_path) == _unplaced(block(tiny[1]), tiny[0].parent)
    assert new.replace(block(new), "") == prose.replace(block(prose), "")


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"rates": [2e-4]}, "must include 0"),
        ({"rates": [0.0, -1.0]}, "rates"),
        ({"rates": [0.0, 0.0]}, "twice"),
        ({"policies": ["nope"]}, "nope"),
        ({"seeds": []}, "seed"),
        ({"scenario": "nowhere"}, "scenario"),
    ],
)
def test_bad_input_is_one_line(change: dict[str, object], needle: str, tmp_path: Path) -> None:
    kwargs: dict[str, object] = {**TINY, **change}
    with pytest.raises(Exception) as info:
        run_faults(tmp_path / "x", progress=False, **kwargs)  # type: ignore[arg-type]
    assert isinstance(info.value, ValidationError)
    assert needle in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "x").exists()


def test_cli_bad_rates_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for rates in ("2e-4", "0,x", "0,0"):
        assert main(["faults", "--out", str(tmp_path), "--rates", rates]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--rates" in err[0]
