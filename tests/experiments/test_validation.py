"""The validation against Sailor's measured runs (docs/validation.md): a hand-worked schedule
prediction, the shipped data, every run accounted for, and the command."""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from bacepipe_env.experiments import validation as v

ROOT = Path(__file__).resolve().parents[2]

# SHA-256 of the files as copied from the data set (bacepipe_env/data/README.md)
DIGESTS = {
    "sailor-validation-runs.csv": (
        "691e3a9dce63d239831cac8b620c6f8dc0946077b4d4a321b6f9673af6143f93"
    ),
    "sailor-profiles.csv": "6584a3d51058c01ea23157d7161447424f4b3a95d3e6f43b2ffd44476104bba4",
    "sailor-network-model.json": (
        "85ab7764b75bdd5481e898bbb32b72aa44138d11171780ef54729554641060fd"
    ),
}


def _data(name: str) -> bytes:
    return resources.files("bacepipe_env").joinpath(f"data/sailor/{name}").read_bytes()


def test_shipped_data_is_the_described_data() -> None:
    for name, digest in DIGESTS.items():
        assert hashlib.sha256(_data(name)).hexdigest() == digest, name
    runs = list(csv.DictReader(io.StringIO(_data("sailor-validation-runs.csv").decode())))
    profiles = list(csv.DictReader(io.StringIO(_data("sailor-profiles.csv").decode())))
    assert (len(runs), len(profiles)) == (76, 406)
    assert len(v.load_runs()) == 76
    assert sum(map(len, v.load_profiles().values())) == 406


def test_golden_clariden_opt350_n2_d1() -> None:
    """Clariden OPT-350 N2_D1 (main, row 18): pp 2, tp 4, micro-batch 8, M = 4, stages 0-11 and
    12-25 on GH-96 nodes; measured 0.65705 s. From sailor-profiles.csv (OPT-350, GH-96, 8, 4):

    stage 1 fwd = 0.000922 (layer 0) + 0.003021 (1) + 10 x 0.002683 (2-11)   = 0.030773
    stage 1 bwd = 0.000001 + 0.006469 + 10 x 0.00647                          = 0.071170
    stage 2 fwd = 13 x 0.002683 (12-24) + 0.004014 (25)                       = 0.038893
    stage 2 bwd = 13 x 0.00647 + 0.005944                                     = 0.090054
    update      = max(12, 14 layers) x 0.000479                               = 0.006706
    hop bytes   = act_output_floats_full(layer 11) 2,097,152 x 8 x 4 B         = 67,108,864
    x = log2(67.108864) = 6.0699; GH-96 4 -> 4 fit (-0.65351182, 11.42553946, 45.25031399):
    bw = 90.52 GB/s, hop = 0.067108864 / 90.52 = 0.000741 s (the same both ways)

    paper    = 2 (hop + 0.030773 + 0.038893 + 3 x 0.038893) + update         = 0.38088 s
    physical = (hop + 0.069666 + 3 x 0.038893) + (hop + 0.161224 + 3 x 0.090054) + update
             = 0.187086 + 0.270162 + 0.006706                                = 0.62592 s
    """
    x = math.log2(67_108_864 / 1e6)
    bw = -0.65351182 * x * x + 11.42553946 * x + 45.25031399
    hop = 0.067108864 / bw
    assert hop == pytest.approx(0.000741, abs=1e-6)
    paper = 2 * (hop + 0.030773 + 0.038893 + 3 * 0.038893) + 0.006706
    physical = (hop + 0.069666 + 3 * 0.038893) + (hop + 0.161224 + 3 * 0.090054) + 0.006706
    assert (paper, physical) == pytest.approx((0.38088, 0.62592), abs=1e-5)

    run = v.load_runs()[17]
    assert (run.name, run.pp, run.tp, run.micro_batch, run.n_micro) == (
        "clariden OPT-350 N2_D1 (main)",
        2,
        4,
        8,
        4,
    )
    pred = v.schedule_prediction(run, v.load_profiles(), v.load_network())
    assert pred.paper_s == pytest.approx(paper, rel=1e-9)
    assert pred.physical_s == pytest.approx(physical, rel=1e-9)
    assert pred.update_s == pytest.approx(0.006706)
    assert pred.error("physical") == pytest.approx(physical / 0.65705 - 1)


def test_every_run_once_with_predictions_or_a_reason() -> None:
    preds = v.predict_all()
    for level in v.LEVELS:
        rows = [p for p in preds if p.level == level]
        assert sorted(p.run.row for p in rows) == list(range(1, 77))
        for p in rows:
            assert (p.paper_s is None) == (p.physical_s is None) == bool(p.reason), p.run.name
            if p.run.dp > 1:
                assert p.reason == (
                    f"not representable: data parallelism (dp = {p.run.dp}) adds a gradient "
                    "all-reduce the model does not have"
                )
    # the suspect rows are shown but not summarised
    suspect = {p.run.row for p in preds if p.run.suspect}
    assert suspect == {8, 30, 34}
    sched = [p for p in preds if p.level == "schedule" and not p.reason]
    summary = {(s.level, s.model): s for s in v.summarise(preds)}
    n_ok = sum(1 for p in sched if not p.run.suspect)
    assert summary["schedule", "paper"].n_runs == summary["schedule", "physical"].n_runs == n_ok


def test_published_points_arithmetic() -> None:
    megatron, playbook = v.published_points()
    # Eq. (1) counts 4N per token against Megatron's 8N: 0.50 at the same rate, and
    # 0.52 x 4 / (0.4 x 8) = 0.65 at the project's MFU 0.4
    assert megatron.paper == "0.50 at the achieved rate; 0.65 at MFU 0.4"
    assert megatron.physical == "1.00 at the achieved rate; 1.30 at MFU 0.4"
    # 39 / 47 - 1 = -17.0%
    assert (playbook.paper, playbook.physical, playbook.measured) == ("-17.0%", "-17.0%", "-14%")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "bacepipe_env.cli", "validation", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_command_writes_page_and_csv(tmp_path: Path) -> None:
    out = tmp_path / "o"
    proc = _cli("--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = (out / "validation.md").read_text(encoding="utf-8")
    assert f"<!-- Generated by `bacepipe validation --out {out}`" in page
    rows = list(csv.DictReader(io.StringIO((out / "validation.csv").read_text())))
    assert len(rows) == len(v.LEVELS) * 76
    # the committed page is what the command writes with --out docs
    docs = _cli("--out", str(tmp_path / "docs"), cwd=tmp_path)
    assert docs.returncode == 0, docs.stderr
    fresh = (tmp_path / "docs" / "validation.md").read_text(encoding="utf-8")
    committed = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    assert fresh.replace(str(tmp_path / "docs"), "docs") == committed
    assert (tmp_path / "docs" / "validation.csv").read_text() == (
        ROOT / "docs" / "validation.csv"
    ).read_text()


def test_bad_out_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for bad in ("", str(tmp_path / "file")):
        proc = _cli("--out", bad, cwd=tmp_path)
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("bacepipe: error: --out"), proc.stderr


def test_a_one_stage_run_on_fp32_peaks_is_slower_by_the_peaks_ratio() -> None:
    # Clariden OPT-350 N1_D1_M4_G1 (pp 1, GH200): no boundary and no optimizer step at the
    # FLOPs level, so the iteration is pure compute and scales with 1 / peak: on the plain
    # fp32 peak (67 TFLOP/s) it takes 989 / 67 = 14.76 times as long as on the bf16 peak.
    preds = v.predict_all()
    run = next(p.run for p in preds if p.run.name == "clariden OPT-350 N1_D1_M4_G1 (main)")
    by_level = {p.level: p for p in preds if p.run is run}
    for model in ("paper_s", "physical_s"):
        ratio = getattr(by_level["flops-fp32"], model) / getattr(by_level["flops"], model)
        assert ratio == pytest.approx(989 / 67, rel=1e-12)
