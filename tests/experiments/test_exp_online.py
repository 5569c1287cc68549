"""``bacepipe online``: the generated block, checked against direct simulation, regenerated
byte for byte, and the block docs/online.md carries."""

from __future__ import annotations

import itertools
import math
import re
import shlex
from pathlib import Path

import pytest
from exp_helpers import PNG_SIGNATURE, header, section, table

from bacepipe_env.cli import main
from bacepipe_env.errors import ValidationError
from bacepipe_env.experiments.online import (
    BEGIN,
    CHARTS,
    END,
    default_policies,
    run_online,
)
from bacepipe_env.experiments.stats import estimate
from bacepipe_env.policies.registry import make_policy, policy_names
from bacepipe_env.scenarios import load_scenario

DOCS = Path(__file__).resolve().parents[2] / "docs" / "online.md"
TINY = {"seeds": [0, 1], "loads": [0.4, 0.8], "n_jobs": 60, "policies": ["bace-pipe", "lcf", "sjf"]}


def block(md: str) -> str:
    """The generated block of a document, markers included."""
    start, end = md.index(BEGIN), md.index(END) + len(END)
    return md[start:end]


def tables_after(md: str, label: str) -> list[list[str]]:
    """The body of the first table after the line ``label``."""
    return table(md[md.index(f"\n{label}\n") :])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("online")
    path = run_online(out, **TINY, progress=False)  # type: ignore[arg-type]
    return path, path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def docs_regenerated(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(the docs' block, the block the documented command writes now)."""
    committed = DOCS.read_text(encoding="utf-8")
    ours = block(committed)
    match = re.search(r"`(bacepipe online --out docs[^`]*)`", ours)
    assert match, "the block names the command that wrote it"
    argv = shlex.split(match.group(1))[1:]
    out = tmp_path_factory.mktemp("online-docs")
    argv[argv.index("--out") + 1] = str(out)
    assert main(argv) == 0
    regenerated = block((out / "online.md").read_text(encoding="utf-8"))
    return ours, regenerated.replace(f"--out {out} ", "--out docs ")


def _unplaced(md: str, out: Path) -> str:
    """``md`` with the ``--out`` folder it names (the one it was written into) as ``OUT``."""
    assert f"--out {out} " in md, "the report names the folder it was written into"
    return md.replace(f"--out {out} ", "--out OUT ")


def test_tiny_report_regenerates_byte_for_byte(tiny: tuple[Path, str], tmp_path: Path) -> None:
    path, md = tiny
    again = run_online(tmp_path, **TINY, workers=2, progress=False)  # type: ignore[arg-type]
    # byte for byte but for the folder each names as --out
    assert _unplaced(again.read_text(encoding="utf-8"), tmp_path) == _unplaced(md, path.parent)
    assert md.count(BEGIN) == md.count(END) == 1
    assert "--seeds 2 --loads 0.4,0.8 --jobs 60 --policies bace-pipe,lcf,sjf`" in md
    for name in CHARTS:
        assert f"](img/{name})" in md
        first = path.parent / "img" / name
        if first.exists():  # matplotlib is the viz extra
            data = first.read_bytes()
            assert data[:8] == PNG_SIGNATURE
            assert (tmp_path / "img" / name).read_bytes() == data


def _direct(policy: str, load: float) -> list[tuple[float, float, float]]:
    """(avg JCT h, cost $, carbon kg) per seed, straight from the simulator."""
    out = []
    for seed in TINY["seeds"]:  # type: ignore[attr-defined]
        sc = load_scenario("online", seed=seed, load=load, n_jobs=TINY["n_jobs"])  # type: ignore[arg-type]
        res = make_policy(policy, seed=seed).simulate(sc)
        out.append((res.avg_jct / 3600, res.total_cost, res.total_carbon))
    return out


def test_ranking_cells_equal_direct_simulation(tiny: tuple[Path, str]) -> None:
    _, md = tiny
    sec = section(md, "### Ranking at offered load 0.8")
    head = header(sec)
    assert head[:4] == ["rank", "policy", "mean JCT h", "JCT / bace-pipe"]
    rows = {r[1].strip("`"): r for r in table(sec)}
    assert set(rows) == set(TINY["policies"])  # type: ignore[arg-type]
    ref = _direct("bace-pipe", 0.8)
    means = {}
    for policy, row in rows.items():
        runs = _direct(policy, 0.8)
        jct = estimate([r[0] for r in runs])
        means[policy] = jct.mean
        assert row[2] == f"{jct.mean:,.1f} ± {jct.ci95:,.1f}"
        ratio = estimate([a[0] / b[0] for a, b in zip(runs, ref)])
        assert row[3] == f"{ratio.mean:.3f} ± {ratio.ci95:.3f}"
        cost = math.fsum(r[1] for r in runs) / len(runs)
        assert row[head.index("cost $")] == f"${cost:,.0f}"
        carbon = math.fsum(r[2] for r in runs) / len(runs)
        assert row[head.index("carbon t")] == f"{carbon / 1000:,.1f}"
    # ranked by mean JCT, 1 the shortest
    for policy, row in rows.items():
        assert int(row[0]) == 1 + sum(m < means[policy] for m in means.values())
    assert [r[0] for r in table(sec)] == sorted((r[0] for r in table(sec)), key=int)


def test_jct_rises_with_load_for_bace_pipe(
    tiny: tuple[Path, str], docs_regenerated: tuple[str, str]
) -> None:
    """A busier cluster makes jobs wait longer: BACE-Pipe's mean JCT over the seeds grows with
    the offered load, in the tiny run and in the documented one."""
    for md in (tiny[1], docs_regenerated[1]):
        row = next(r for r in tables_after(md, "Mean JCT (h):") if r[0] == "`bace-pipe`")
        jcts = [float(c.split(" (")[0].replace(",", "")) for c in row[1:]]
        assert len(jcts) >= 2
        assert all(a < b for a, b in itertools.pairwise(jcts)), jcts


def test_docs_carry_the_block_the_documented_command_writes(
    docs_regenerated: tuple[str, str],
) -> None:
    ours, regenerated = docs_regenerated
    assert regenerated == ours, "run the command in docs/online.md's block (it splices it)"


def test_a_run_into_the_docs_replaces_only_the_block(
    tiny: tuple[Path, str], tmp_path: Path
) -> None:
    committed = DOCS.read_text(encoding="utf-8")
    (tmp_path / "online.md").write_text(committed, encoding="utf-8")
    path = run_online(tmp_path, **TINY, progress=False)  # type: ignore[arg-type]
    spliced = path.read_text(encoding="utf-8")
    old = block(committed)
    before, after = committed.split(old)
    expected = before + _unplaced(block(tiny[1]), tiny[0].parent) + after
    assert _unplaced(spliced, tmp_path) == expected


def test_default_policies_are_registered_and_distinct() -> None:
    names = default_policies()
    assert names[0] == "bace-pipe"
    assert set(names) <= set(policy_names())
    assert len(set(names)) == len(names)
    assert {"lcf", "ldf", "cr-lcf", "cr-ldf", "sjf"} <= set(names)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"seeds": []}, "seeds"),
        ({"seeds": [0, 0]}, "twice"),
        ({"loads": []}, "loads"),
        ({"loads": [0.0]}, "loads"),
        ({"loads": [-0.5]}, "loads"),
        ({"loads": [math.inf]}, "finite"),
        ({"loads": [math.nan]}, "finite"),
        ({"loads": [0.8, 0.8]}, "twice"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"policies": []}, "policies"),
        ({"policies": ["no-such-policy"]}, "unknown policy"),
        ({"policies": ["lcf", "lcf"]}, "twice"),
        ({"workers": 0}, "workers"),
    ],
)
def test_bad_input_is_one_line(change: dict[str, object], needle: str, tmp_path: Path) -> None:
    kwargs: dict[str, object] = {**TINY, **change}
    with pytest.raises(ValidationError) as err:
        run_online(tmp_path / "x", **kwargs, progress=False)  # type: ignore[arg-type]
    assert len(str(err.value).splitlines()) == 1
    assert needle in str(err.value)
    assert not (tmp_path / "x").exists()
