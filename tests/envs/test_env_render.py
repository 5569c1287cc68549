"""Rendering of GeoPipeEnv: the text frame, the GPU timeline image and its slot layout."""

from __future__ import annotations

import itertools
import re
import sys
import warnings

import numpy as np
import pytest

from bacepipe_env.envs import GeoPipeEnv
from bacepipe_env.envs.render import (
    RenderSnapshot,
    RunningRow,
    TimelineEntry,
    assign_slots,
    render_ansi,
    render_rgb,
    rgb_available,
    snapshot,
)
from bacepipe_env.errors import BacepipeError, ValidationError


def _play_to_end(env: GeoPipeEnv) -> int:
    steps = 0
    terminated = False
    while not terminated:
        _, _, terminated, truncated, _ = env.step(0)
        assert not truncated
        steps += 1
        assert steps < 10_000
    return steps


def _n_colours(img: np.ndarray) -> int:
    return len(np.unique(img.reshape(-1, 3), axis=0))


# ------------------------------------------------------------------------------ ansi
def test_ansi_after_reset_shows_regions_queue_and_time() -> None:
    env = GeoPipeEnv("fig1", render_mode="ansi")
    env.reset(seed=0)
    sim = env.sim
    assert sim is not None
    text = env.render()
    assert isinstance(text, str)
    lines = text.splitlines()
    assert re.search(r"t = 0\.00 h", lines[0])
    assert f"0/{sim.n_jobs}" in lines[0]
    for name, cap in zip(sim.cluster.names, sim.cluster.capacity):
        assert re.search(rf"^\s+{re.escape(name)}\s+{cap}/{cap}\s", text, re.MULTILINE)
    window = env.queue_snapshot.job_ids
    assert window, "fig1 offers jobs right after reset"
    for job_id in window:
        job = sim.profile(job_id).job
        row = next(line for line in lines if re.search(rf"\s{re.escape(job.name)}\s", line))
        assert job.model.name in row
        assert job.dataset in row
        assert str(sim.profile(job_id).k_star) in row
    # the preview of slot 0 (what the placement policy offers it now) is written as
    # "Region:gpus > ..."
    pv = sim.offer(window[0])
    assert pv is not None
    assert pv.describe(sim.cluster.names) in text
    assert env.render_snapshot().queue[0].preview == pv.describe(sim.cluster.names)
    assert all(line == line.rstrip() for line in lines)
    assert "(none)" in text  # nothing runs yet


def test_ansi_reports_running_then_all_done() -> None:
    env = GeoPipeEnv("fig1", render_mode="ansi")
    env.reset(seed=0)
    sim = env.sim
    assert sim is not None
    env.step(0)
    text = env.render()
    assert isinstance(text, str)
    assert sim.running
    for job_id in sim.running:
        _, placement, _ = sim.job_state(job_id)
        assert placement is not None
        assert placement.describe(sim.cluster.names) in text
    _play_to_end(env)
    text = env.render()
    assert isinstance(text, str)
    header = text.splitlines()[0]
    assert f"jobs done {sim.n_jobs}/{sim.n_jobs}" in header
    assert "2/2" in header
    assert "(empty)" in text
    assert all(line == line.rstrip() for line in text.splitlines())


def test_snapshot_is_plain_data_and_consistent() -> None:
    env = GeoPipeEnv("paper")
    env.reset(seed=0)
    sim = env.sim
    assert sim is not None
    env.step(0)
    env.step(0)
    snap = snapshot(env)
    assert snap.time == sim.time
    assert snap.region_names == sim.cluster.names
    assert snap.free == sim.free_gpus
    assert snap.capacity == sim.cluster.capacity
    assert snap == env.render_snapshot()
    assert tuple(q.job_id for q in snap.queue) == env.queue_snapshot.job_ids
    assert [r.job_id for r in snap.running] == list(sim.running)
    assert snap.finished + len(snap.running) == len(snap.timeline)
    assert snap.total_jobs == sim.n_jobs == len(sim.scenario.jobs)
    for e in snap.timeline:  # GPU counts per region index match the placement
        _, placement, _ = sim.job_state(e.job_id)
        assert placement is not None
        assert sum(e.gpus) == placement.n_gpus
        assert all(e.gpus[r] == g for r, g in placement.allocation.items())
    # busy GPUs of the running jobs = capacity - free, per region
    busy = np.sum([e.gpus for e in snap.timeline if e.finish > snap.time], axis=0)
    assert tuple(np.subtract(snap.capacity, snap.free)) == tuple(busy)
    _play_to_end(env)
    end = snapshot(env)
    assert end.queue == () and end.running == () and end.n_pending == 0
    assert end.finished == end.total_jobs == len(end.timeline)
    assert all(e.finish <= end.time for e in end.timeline)


def test_render_before_reset_raises_and_no_mode_returns_none() -> None:
    env = GeoPipeEnv("fig1", render_mode="ansi")
    with pytest.raises(RuntimeError, match="reset"):
        env.render()
    quiet = GeoPipeEnv("fig1")
    quiet.reset(seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert quiet.render() is None
    assert any("render_mode" in str(w.message) for w in caught)


# ------------------------------------------------------------------------------- rgb
@pytest.mark.slow  # matplotlib draws two full frames
def test_rgb_frames_have_stable_shape_and_content() -> None:
    env = GeoPipeEnv("paper", render_mode="rgb_array")
    env.reset(seed=0)
    first = env.render()
    assert isinstance(first, np.ndarray)
    assert first.dtype == np.uint8
    assert first.ndim == 3 and first.shape[2] == 3
    _play_to_end(env)
    last = env.render()
    assert isinstance(last, np.ndarray)
    assert last.dtype == np.uint8
    assert last.shape == first.shape
    assert _n_colours(last) > 5
    # the jobs' bars add colours (and pixels) the empty timeline at reset does not have
    assert _n_colours(last) > _n_colours(first)
    assert np.count_nonzero(np.any(last != first, axis=2)) > 0.05 * last.shape[0] * last.shape[1]


def _hand_snapshot(n_jobs: int) -> RenderSnapshot:
    """Two regions (4 and 2 GPUs) and n_jobs one-hour jobs of one GPU back to back."""
    timeline = tuple(
        TimelineEntry(job_id=i, name=f"J{i}", gpus=(1, 0), start=3600.0 * i, finish=3600.0 * i + 1)
        for i in range(n_jobs)
    )
    return RenderSnapshot(
        scenario="hand",
        time=3600.0 * n_jobs,
        region_names=("North", "South"),
        capacity=(4, 2),
        free=(4, 1),
        prices=(0.2, 0.3),
        alpha=0.25,
        queue=(),
        n_pending=0,
        max_queue=4,
        running=(RunningRow(0, "R", "South:1", 1.0, 9.0),),
        finished=n_jobs,
        total_jobs=n_jobs + 1,
        timeline=(
            *timeline,
            TimelineEntry(99, "R", (0, 1), 3600.0, 9 * 3600.0),  # still running
        ),
    )


@pytest.mark.parametrize("n_jobs", [3, 40])  # with and without the legend
def test_rgb_of_a_hand_built_snapshot(n_jobs: int) -> None:
    img = render_rgb(_hand_snapshot(n_jobs))
    assert img.dtype == np.uint8 and img.shape == (400, 800, 3)
    assert _n_colours(img) > 5
    text = render_ansi(_hand_snapshot(n_jobs))
    assert "North" in text and "South" in text and "South:1" in text
    assert f"{n_jobs}/{n_jobs + 1}" in text
    assert "alpha = 0.250" in text


def test_rgb_without_matplotlib_raises_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(BacepipeError, match=r"bacepipe-env\[viz\]"):
        render_rgb(_hand_snapshot(1))


def test_rgb_available_is_false_when_matplotlib_cannot_be_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what a blocked import looks like
    assert not rgb_available()


def test_rgb_array_without_matplotlib_is_accepted_and_a_frame_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # metadata lists rgb_array only with matplotlib; asking for it anyway (SB3's make_vec_env
    # does by default) makes an env that plays, and only a frame is the one-line error
    # (test_env_checkers runs a real base install)
    import bacepipe_env.envs.geopipe as geopipe

    monkeypatch.setattr(geopipe.GeoPipeEnv, "metadata", {"render_modes": ["ansi"], "render_fps": 4})
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # what a blocked import looks like
    env = GeoPipeEnv("fig1", render_mode="rgb_array")
    env.reset(seed=0)
    env.step(int(np.flatnonzero(env.action_masks())[0]))
    with pytest.raises(BacepipeError, match=r"^rendering rgb_array needs matplotlib: .*\[viz\]'$"):
        env.render()
    with pytest.raises(ValidationError, match="render_mode"):
        GeoPipeEnv("fig1", render_mode="human")


# ------------------------------------------------------------------------ slot layout
def test_assign_slots_reuses_the_lowest_freed_slots() -> None:
    # One 4-GPU region: A holds slots 0-1 over [0, 2), B slots 2-3 over [0, 5); after A
    # finishes, C (2 GPUs, from t = 3) must get slots 0-1.
    runs = assign_slots(
        [4],
        {"A": (0.0, 2.0, [2]), "B": (0.0, 5.0, [2]), "C": (3.0, 6.0, [2])},
    )
    assert runs == {"A": [(0, 0, 2)], "B": [(0, 2, 2)], "C": [(0, 0, 2)]}


def test_assign_slots_splits_a_job_over_non_contiguous_free_runs() -> None:
    # Six GPUs: A 0-1 and C 4-5 finish at t = 1 while B keeps 2-3; D (3 GPUs at t = 2) gets
    # the lowest free slots 0, 1 and 4: two runs.
    runs = assign_slots(
        [6],
        {
            "A": (0.0, 1.0, [2]),
            "B": (0.0, 9.0, [2]),
            "C": (0.0, 1.0, [2]),
            "D": (2.0, 4.0, [3]),
        },
    )
    assert runs["B"] == [(0, 2, 2)]
    assert runs["C"] == [(0, 4, 2)]
    assert runs["D"] == [(0, 0, 2), (0, 4, 1)]


def test_assign_slots_multi_region_and_same_instant_handover() -> None:
    # A finishes exactly when E starts: finishes are replayed first, so E reuses A's slots.
    # Region 1 is untouched by A; E spans both regions.
    runs = assign_slots(
        [3, 2],
        {"A": (0.0, 2.0, [3, 0]), "E": (2.0, 3.0, [2, 2]), "Z": (2.0, 2.0, [1, 0])},
    )
    assert runs["A"] == [(0, 0, 3)]
    assert runs["E"] == [(0, 0, 2), (1, 0, 2)]
    assert runs["Z"] == [(0, 2, 1)]  # a zero-length job still gets (and frees) a slot


def test_assign_slots_rejects_overbooking() -> None:
    with pytest.raises(ValueError, match="needs 3 slots"):
        assign_slots([4], {"A": (0.0, 5.0, [2]), "B": (1.0, 2.0, [3])})


def test_assign_slots_on_a_real_episode_never_overlaps() -> None:
    env = GeoPipeEnv("paper")
    env.reset(seed=0)
    _play_to_end(env)
    snap = snapshot(env)
    runs = assign_slots(
        snap.capacity, {e.job_id: (e.start, e.finish, e.gpus) for e in snap.timeline}
    )
    by_id = {e.job_id: e for e in snap.timeline}
    cells: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for job_id, job_runs in runs.items():
        e = by_id[job_id]
        got = [0] * len(snap.capacity)
        for r, first, n in job_runs:
            assert first >= 0 and first + n <= snap.capacity[r]
            got[r] += n
            for s in range(first, first + n):
                cells.setdefault((r, s), []).append((e.start, e.finish))
        assert tuple(got) == e.gpus
    for spans in cells.values():  # a slot is never held by two jobs at once
        spans.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
