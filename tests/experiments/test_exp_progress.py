"""The progress bar, and ``run_all``/``expand`` that drive it."""

from __future__ import annotations

import io
import re
import time

import pytest

from bacepipe_env.experiments.progress import Progress
from bacepipe_env.experiments.runner import RunSpec, expand, run_all, run_one
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios.loader import load_scenario


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_forced_bar_renders_hashes_and_counts() -> None:
    stream = io.StringIO()
    with Progress(5, "runs", "compare", stream=stream, force=True) as bar:
        bar.update()
        bar.update()
        # 2/5 of a 30-cell bar is 12 cells.
        assert re.fullmatch(r"compare \[#{12}-{18}\] 2/5 runs \d+\.\d s, eta .+ s", bar.render())
        bar.update(3)
    text = stream.getvalue()
    frames = text.split("\r")[1:]
    assert len(frames) == 3
    assert re.match(r"compare \[#{6}-{24}\] 1/5 runs ", frames[0])
    assert re.match(r"compare \[#{12}-{18}\] 2/5 runs ", frames[1])
    assert re.match(r"compare \[#{30}\] 5/5 runs ", frames[2])
    assert text.endswith("\n")


def test_bar_without_label_starts_with_the_bracket() -> None:
    bar = Progress(4, "seeds", force=True, stream=io.StringIO())
    assert bar.render().startswith("[" + "-" * 30 + "] 0/4 seeds")


def test_no_bar_and_no_line_within_30_s_on_a_non_tty_stream() -> None:
    stream = io.StringIO()
    with Progress(3, stream=stream) as bar:
        assert not bar.enabled
        for _ in range(3):
            bar.update()
    assert stream.getvalue() == ""
    assert bar.done == 3


def test_off_a_terminal_a_line_every_interval_even_without_updates() -> None:
    """A unit of work longer than the interval still shows the run is alive: the open bar's
    thread writes the plain line, newline-terminated, with no carriage return."""
    stream = io.StringIO()
    with Progress(4, "episodes", "evaluate", stream=stream, every_s=0.05) as bar:
        time.sleep(0.3)  # no update at all
        bar.update()
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 2, lines
    assert "\r" not in stream.getvalue()
    assert all(line.startswith("evaluate [") for line in lines)
    assert lines[0].split("] ")[1].startswith("0/4 episodes")


def test_off_a_terminal_updates_write_a_line_once_the_interval_passed() -> None:
    stream = io.StringIO()
    bar = Progress(3, "steps", "train", stream=stream, every_s=0.0)  # not a context manager
    bar.update()
    bar.update()
    assert [line.split("] ")[1][:9] for line in stream.getvalue().splitlines()] == [
        "1/3 steps",
        "2/3 steps",
    ]
    bar.close()


def test_quiet_writes_nothing_anywhere() -> None:
    stream = io.StringIO()
    with Progress(2, stream=stream, every_s=0.01) as bar:
        bar.quiet()
        time.sleep(0.05)
        bar.update()
    assert stream.getvalue() == ""


def test_draws_on_a_tty_by_default() -> None:
    stream = FakeTTY()
    with Progress(2, stream=stream) as bar:
        bar.update()
    assert "1/2 runs" in stream.getvalue()


def test_zero_total_renders_full() -> None:
    assert Progress(0, force=True, stream=io.StringIO()).render().startswith("[" + "#" * 30)


def test_expand_puts_policies_outermost() -> None:
    specs = expand(["a", "b"], "paper", [0, 1], {"n_jobs": 8, "gpu_scale": 0.5}, {"v": 1})
    assert [(s.policy, s.seed) for s in specs] == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert all(s.scenario == "paper" for s in specs)
    assert specs[0].knobs == (("gpu_scale", 0.5), ("n_jobs", 8))
    assert specs[0].tag == {"v": 1}


def test_run_all_keeps_order_and_progress_goes_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    specs = expand(["lcf", "bace-pipe"], "paper", [1, 0])
    serial = run_all(specs, progress=True)
    assert [r.spec for r in serial] == specs
    err = capsys.readouterr().err
    assert "4/4 runs" in err and "[" + "#" * 30 + "]" in err

    parallel = run_all(specs, workers=2)  # stderr is not a TTY under capsys: silent
    assert capsys.readouterr().err == ""
    assert [r.row() for r in parallel] == [r.row() for r in serial]


def test_run_one_applies_knobs_and_seed() -> None:
    base = run_one(RunSpec("bace-pipe", "paper", 0))
    fewer = run_one(RunSpec("bace-pipe", "paper", 0, (("n_jobs", 4),)))
    assert base.row()["seed"] == 0
    assert fewer.row()["n_jobs"] == 4
    want = make_policy("bace-pipe", seed=0).simulate(load_scenario("paper", seed=0, n_jobs=4))
    assert fewer.avg_jct_h == pytest.approx(want.avg_jct / 3600.0, rel=1e-12)
    assert fewer.total_cost_usd == pytest.approx(want.total_cost, rel=1e-12)
    assert (fewer.avg_jct_h, fewer.total_cost_usd) != (base.avg_jct_h, base.total_cost_usd)
