"""``--plot PATH`` of ``simulate``, ``evaluate`` and ``headroom`` writes a real PNG (one line
naming the viz extra without matplotlib), and the online chart tells every policy apart
(issue 39, item 5)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.image import imread

import bacepipe_env
from bacepipe_env.cli import main
from bacepipe_env.envs.render import run_snapshot, save_timeline
from bacepipe_env.experiments import online
from bacepipe_env.experiments.headroom import env_heuristics
from bacepipe_env.experiments.plots import TAB10, series_styles
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios import load_scenario

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
FIG1 = "bacepipe_env/GeoPipe-Fig1-v2"


def _png(path: Path) -> np.ndarray:
    """The PNG at ``path`` as matplotlib reads it back (rows, columns, RGBA floats)."""
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    image = imread(path)
    assert image.ndim == 3 and image.shape[2] == 4
    return image


def _has(image: np.ndarray, colour: str) -> int:
    """How many pixels of ``image`` are exactly ``colour`` (``#rrggbb``)."""
    rgb = np.round(image[..., :3] * 255).astype(int)
    want = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    return int((rgb == want).all(axis=2).sum())


def test_simulate_plot_is_the_runs_gpu_timeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "fig1.png"
    assert main(["simulate", "--scenario", "fig1", "--plot", str(path)]) == 0
    assert capsys.readouterr().out.endswith(f"\nwrote {path}\n")
    image = _png(path)
    assert image.shape == (400, 800, 4)  # render_rgb's frame: 8 x 4 in at 100 dpi
    # fig1 under BACE-Pipe: job 1 (P) on A:4 for 6.76 h, job 2 (Q) on B:3 > C:2 for 27.79 h,
    # both from time 0; a job's colour is tab10's by its id: P orange, Q green
    plot = image[:, : int(0.80 * 800)]  # the axes, left of the legend
    orange = (np.round(plot[..., :3] * 255).astype(int) == [255, 127, 14]).all(axis=2)
    green = (np.round(plot[..., :3] * 255).astype(int) == [44, 160, 44]).all(axis=2)
    p_wide, q_wide = orange.any(axis=0).sum(), green.any(axis=0).sum()
    assert abs(p_wide / q_wide - 6.76 / 27.79) < 0.02, (p_wide, q_wide)
    # P holds all 4 of A's GPUs, Q all 3 of B's and both of C's: of 11 GPU rows, 4 and 5
    p_tall, q_tall = orange.any(axis=1).sum(), green.any(axis=1).sum()
    assert abs(q_tall / p_tall - 5 / 4) < 0.05, (p_tall, q_tall)


def test_a_finished_runs_timeline_has_every_attempt(tmp_path: Path) -> None:
    # srtf preempts and GPU failures restart: jobs run more than once
    scenario = load_scenario("online", seed=0, n_jobs=40, preemption="srtf", gpu_failure_rate=2e-4)
    result = make_policy("bace-pipe", seed=0).simulate(scenario)
    snap = run_snapshot(result, scenario.cluster)
    assert len(snap.timeline) == sum(max(1, len(r.attempts)) for r in result.records)
    assert len(snap.timeline) > len(result.records)
    assert snap.finished == snap.total_jobs == 40 and snap.free == snap.capacity
    assert snap.time == max(r.finish_time for r in result.records)
    for entry in snap.timeline:  # every attempt's GPUs, per region, within the region
        assert all(0 <= g <= c for g, c in zip(entry.gpus, snap.capacity)) and sum(entry.gpus)
    _png(save_timeline(snap, tmp_path / "online.png", title="online, 40 jobs"))


def test_evaluate_plot_is_each_policys_paired_ratio_and_mean_jct(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "evaluate.png"
    argv = ["evaluate", "--env-id", FIG1, "--policies", "bace-pipe,sjf,lcf"]
    argv += ["--episodes", "3", "--first-seed", "0", "--plot", str(path)]
    assert main(argv) == 0
    assert f"\nwrote {path}\n" in capsys.readouterr().out
    image = _png(path)
    # 11 in wide; 1.9 in, 0.2 for the title's second line and 0.2 per label line (each
    # policy's name, then its ratio and record): 1.9 + 0.2 + 0.2 x 6 = 3.3 in, at 120 dpi
    assert image.shape[:2] == (396, 1320)
    assert _has(image, "#d62728") > 20  # the reference, bace-pipe, marked in red
    assert _has(image, "#4c72b0") > 20  # the other two


def test_headroom_plot_marks_the_best_heuristic_and_the_planner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "headroom.png"
    assert main(["headroom", "--env-id", FIG1, "--episodes", "2", "--plot", str(path)]) == 0
    assert f"\nwrote {path}\n" in capsys.readouterr().out
    image = _png(path)
    rows = len(env_heuristics(FIG1)) + 1  # every heuristic and the planner
    assert image.shape[1] == 840 and abs(image.shape[0] - (1.4 + 0.3 * rows) * 120) <= 1
    assert _has(image, "#d62728") > 20 and _has(image, "#2ca02c") > 20  # best, planner


def test_plot_must_name_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--scenario", "fig1", "--plot", str(tmp_path / "t.jpg")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("bacepipe: error: --plot: must name a .png file (got ")
    assert list(tmp_path.iterdir()) == []


# A base install (no viz extra): matplotlib cannot be imported in a fresh interpreter.
_NO_MATPLOTLIB = """
import sys
sys.modules["matplotlib"] = None  # what a blocked import looks like
from bacepipe_env.cli import main
status = main(sys.argv[1:])
assert "matplotlib" not in [m.split(".")[0] for m in sys.modules if sys.modules[m] is not None]
sys.exit(status)
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--scenario", "fig1"],
        ["evaluate", "--env-id", FIG1, "--policies", "sjf", "--episodes", "1", "--first-seed", "0"],
        ["headroom", "--env-id", FIG1, "--episodes", "1"],
    ],
    ids=lambda argv: argv[0],
)
def test_plot_without_matplotlib_is_one_line(argv: list[str], tmp_path: Path) -> None:
    root = Path(bacepipe_env.__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", _NO_MATPLOTLIB, *argv, "--plot", "t.png"],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr == (
        "bacepipe: error: --plot: needs matplotlib: pip install 'bacepipe-env[viz]' (got 't.png')\n"
    )
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- online chart
def test_series_styles_never_repeat() -> None:
    styles = series_styles(120)
    assert len({(s["color"], s["linestyle"], s["marker"]) for s in styles}) == 120
    assert len({(s["color"], s["linestyle"]) for s in styles[:40]}) == 40
    # the 11th series: the first colour again, dashed, with the 11th marker
    assert styles[10] == {"color": TAB10[0], "linestyle": "--", "marker": "*"}


def test_the_online_chart_draws_every_default_policy_differently() -> None:
    policies = online.default_policies()
    assert len(policies) == 14  # more than matplotlib's 10 default colours
    data = online._run([0], [0.8], 8, policies, 1, False)
    fig = online._figure(data, "jct")
    try:
        means = fig.axes[0].get_lines()
        ratios = [bars.lines[0] for bars in fig.axes[1].containers]  # each errorbar's line
        assert [line.get_label() for line in means] == policies
        for lines in (means, ratios):
            styles = {(to_hex(x.get_color()), x.get_marker(), x.get_linestyle()) for x in lines}
            assert len(styles) == len(lines) == len(policies)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
