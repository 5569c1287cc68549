"""Arrival streams (bacepipe_env.scenarios.arrivals): batch, Poisson and Philly-trace replay."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bacepipe_env.errors import ScenarioError
from bacepipe_env.scenarios.arrivals import (
    ARRIVAL_PROCESSES,
    arrival_times,
    interarrival_cv,
    philly_gaps,
    philly_rate_per_h,
)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "derive_philly_interarrivals.py"
SOURCE = Path("/work/shared/data/philly-jobs.csv")  # the raw trace, present on some machines
TABLE = "data/philly-interarrivals.csv"
N_GAPS = 82_246  # 82,247 jobs
SOURCE_README_RATE = 31.5  # jobs per hour, as the source data's README states it


def _table_text() -> str:
    return resources.files("bacepipe_env").joinpath(TABLE).read_text(encoding="utf-8")


def _header() -> dict[str, str]:
    pairs = re.findall(r"^# (\w+): (\S+)$", _table_text(), flags=re.MULTILINE)
    return dict(pairs)


def _rate(times: np.ndarray) -> float:
    return (len(times) - 1) / float(times[-1] - times[0])


# ------------------------------------------------------------------------ the shipped table


def test_shipped_table_is_82246_whole_second_gaps() -> None:
    lines = _table_text().splitlines()
    body = [line for line in lines if not line.startswith("#")]
    assert lines[0].startswith("#") and body[0] == "gap_s"
    rows = body[1:]
    assert len(rows) == N_GAPS
    assert all(re.fullmatch(r"\d+", row) for row in rows)  # integers >= 0, no sign, no dot
    gaps = philly_gaps()
    assert gaps.dtype == np.float64 and gaps.shape == (N_GAPS,)
    np.testing.assert_array_equal(gaps, np.array([int(r) for r in rows], dtype=np.float64))
    assert not gaps.flags.writeable
    assert philly_gaps() is gaps  # loaded once
    assert (gaps == 0).any()  # the trace's same-second bursts are kept


def test_shipped_table_rate_and_header_figures() -> None:
    gaps = philly_gaps()
    rate = philly_rate_per_h()
    assert rate == pytest.approx(N_GAPS / gaps.sum() * 3600.0, rel=1e-12)
    assert abs(rate / SOURCE_README_RATE - 1) < 0.01
    cv = float(gaps.std() / gaps.mean())
    assert cv == pytest.approx(15.0, abs=0.5)  # "about 15" in the source data's README
    header = _header()
    assert int(header["n_jobs"]) == N_GAPS + 1
    assert int(header["n_gaps"]) == N_GAPS
    assert float(header["mean_rate_per_h"]) == pytest.approx(rate, abs=5e-5)  # 4 decimals
    assert float(header["interarrival_cv"]) == pytest.approx(cv, abs=5e-5)
    text = _table_text()
    for needle in ("CC-BY-4.0", "petuum/adaptdl", "msr-fiddle/philly-traces", "82,247 jobs"):
        assert needle in text


def test_shipped_table_regenerates_byte_for_byte(tmp_path: Path) -> None:
    if not SOURCE.is_file():
        pytest.skip(f"{SOURCE} not present")
    if not SCRIPT.is_file():
        pytest.skip(f"{SCRIPT} not present (not a checkout)")
    out = tmp_path / "gaps.csv"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(SOURCE), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == resources.files("bacepipe_env").joinpath(TABLE).read_bytes()


# ------------------------------------------------------------------------------ the streams


@pytest.mark.parametrize("seed", [0, 1, 12345])
@pytest.mark.parametrize("start_h", [0.0, 2.5])
def test_poisson_is_bit_identical_to_the_loader_draw(seed: int, start_h: float) -> None:
    rate, n = 3.7, 500
    times = arrival_times("poisson", n, rate, np.random.default_rng(seed), start_h=start_h)
    # ScenarioTemplate._draw's formula, verbatim
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, size=n)
    gaps[0] = 0.0
    expected = start_h + np.cumsum(gaps)
    assert times.tobytes() == expected.tobytes()


def test_batch_puts_every_job_at_start_and_ignores_rate() -> None:
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    for rate in (None, 5.0, -1.0, float("nan")):
        times = arrival_times("batch", 7, rate, rng, start_h=1.5)
        np.testing.assert_array_equal(times, np.full(7, 1.5))
    assert rng.bit_generator.state == state  # no randomness drawn


@pytest.mark.parametrize("seed", [0, 7, 99])
def test_philly_replays_the_trace_from_a_seeded_offset(seed: int) -> None:
    gaps, n, rate = philly_gaps(), 300, 4.0
    offset = int(np.random.default_rng(seed).integers(len(gaps)))
    times = arrival_times("philly", n, rate, np.random.default_rng(seed), start_h=3.0)
    idx = [(offset + i) % len(gaps) for i in range(n - 1)]
    window = gaps[idx]
    # One factor stretches the window to (n - 1) / rate hours: 299 gaps at 4 per hour.
    scaled = window * ((n - 1) * 3600.0 / rate / float(window.sum()))
    expected = 3.0 + np.cumsum(np.concatenate(([0.0], scaled))) / 3600.0
    np.testing.assert_array_equal(times, expected)
    assert times[-1] - times[0] == pytest.approx(299 / 4.0, rel=1e-12)
    assert ((np.diff(times) == 0) == (gaps[idx] == 0)).all()  # bursts stay bursts


def test_philly_wraps_around_the_end_of_the_trace() -> None:
    gaps = philly_gaps()
    n = len(gaps) + 11  # longer than the trace: must wrap whatever the offset
    times = arrival_times("philly", n, philly_rate_per_h(), np.random.default_rng(3))
    seconds = np.diff(times) * 3600.0
    window = np.concatenate((np.roll(gaps, -_offset(3)), np.roll(gaps, -_offset(3))[:10]))
    factor = window.sum() / seconds.sum()  # the one stretch factor, close to 1 here
    assert factor == pytest.approx(1.0, rel=1e-3)
    np.testing.assert_allclose(seconds * factor, window, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(seconds[len(gaps) :], seconds[:10], rtol=1e-8)  # diff of hours


def _offset(seed: int) -> int:
    return int(np.random.default_rng(seed).integers(len(philly_gaps())))


@pytest.mark.parametrize("process", ARRIVAL_PROCESSES)
def test_streams_are_deterministic_under_a_seed(process: str) -> None:
    a = arrival_times(process, 1000, 2.0, np.random.default_rng(42))
    b = arrival_times(process, 1000, 2.0, np.random.default_rng(42))
    assert a.tobytes() == b.tobytes()


def test_different_seeds_give_different_offsets_and_streams() -> None:
    offsets = {_offset(seed) for seed in range(10)}
    assert len(offsets) == 10
    streams = {
        arrival_times("philly", 200, 2.0, np.random.default_rng(s)).tobytes() for s in range(10)
    }
    assert len(streams) == 10
    poisson = {
        arrival_times("poisson", 200, 2.0, np.random.default_rng(s)).tobytes() for s in range(10)
    }
    assert len(poisson) == 10


# ---------------------------------------------------------------------- rate and burstiness


@pytest.mark.parametrize("target", [0.1, 1.0, 31.5])
def test_philly_full_cycle_has_exactly_the_target_rate_and_the_trace_cv(target: float) -> None:
    # n = len + 1 arrivals replay every gap once (rotated), so the span is the trace's span
    # scaled by philly_rate / target whatever the offset: the rate is exact up to rounding.
    n = len(philly_gaps()) + 1
    for seed in (0, 1, 2):
        times = arrival_times("philly", n, target, np.random.default_rng(seed))
        assert _rate(times) == pytest.approx(target, rel=1e-9)
        cv = interarrival_cv(times)
        assert cv == pytest.approx(float(_header()["interarrival_cv"]), abs=1e-3)
        assert cv > 3


def _window_spans(window: int) -> np.ndarray:
    """The span (s) of ``window`` consecutive unscaled gaps starting at every offset (cyclic)."""
    gaps = philly_gaps()
    csum = np.concatenate(([0.0], np.cumsum(np.concatenate((gaps, gaps[:window])))))
    starts = np.arange(len(gaps))
    spans: np.ndarray = csum[starts + window] - csum[starts]
    return spans


@pytest.mark.parametrize(("target", "first_seed"), [(0.1, 0), (1.0, 1000), (31.5, 2000)])
@pytest.mark.parametrize("n", [50, 500, 5000])
def test_philly_every_window_has_the_target_rate(target: float, first_seed: int, n: int) -> None:
    # Unnormalised, a 5,000-arrival window's span would vary with the offset from 0.18x to
    # 5.4x its mean (computed below over all 82,246 offsets): the trace's own rate drifts over
    # weeks. Each window is stretched to exactly (n - 1) / target hours instead, so every
    # seed's stream has the target rate up to rounding.
    spans = _window_spans(4999)
    assert spans.min() / spans.mean() < 0.25 and spans.max() / spans.mean() > 4
    for seed in range(first_seed, first_seed + 20):
        times = arrival_times("philly", n, target, np.random.default_rng(seed))
        assert _rate(times) == pytest.approx(target, rel=1e-9)


def test_philly_is_much_burstier_than_poisson() -> None:
    # Every 5,000-gap window of the trace, from any offset, has a CV above 1.2 (computed over
    # all offsets below); Poisson windows sit near 1 (the CV of n exponential gaps has
    # standard error about 1 / sqrt(n): 0.007 for n = 20,000, so 0.05 is > 5 of them).
    window = 4999
    gaps = philly_gaps()
    csum2 = np.concatenate(([0.0], np.cumsum(np.concatenate((gaps, gaps[:window])) ** 2)))
    starts = np.arange(len(gaps))
    mean = _window_spans(window) / window
    var = (csum2[starts + window] - csum2[starts]) / window - mean**2
    assert float(np.min(np.sqrt(np.maximum(var, 0.0)) / mean)) > 1.2
    for seed in range(10):
        philly = arrival_times("philly", window + 1, 2.0, np.random.default_rng(seed))
        assert interarrival_cv(philly) > 1.2
        poisson = arrival_times("poisson", 20_000, 2.0, np.random.default_rng(seed))
        assert abs(interarrival_cv(poisson) - 1) < 0.05
        assert abs(_rate(poisson) / 2.0 - 1) < 0.05  # sd 1 / sqrt(20,000) = 0.007


# ------------------------------------------------------------------------- horizon and shape


@pytest.mark.parametrize("process", ["poisson", "philly"])
def test_horizon_keeps_the_prefix_before_the_cut(process: str) -> None:
    full = arrival_times(process, 2000, 5.0, np.random.default_rng(8), start_h=10.0)
    cut = arrival_times(process, 2000, 5.0, np.random.default_rng(8), start_h=10.0, horizon_h=24.0)
    assert 1 <= len(cut) < len(full)
    np.testing.assert_array_equal(cut, full[: len(cut)])
    assert cut[-1] < 34.0 <= full[len(cut)]
    tiny = arrival_times(
        process, 2000, 5.0, np.random.default_rng(8), start_h=10.0, horizon_h=1e-12
    )
    assert tiny.tolist() == [10.0]
    huge = arrival_times(process, 50, 5.0, np.random.default_rng(8), start_h=10.0, horizon_h=1e9)
    assert len(huge) == 50


def test_batch_horizon_keeps_all() -> None:
    times = arrival_times("batch", 5, None, np.random.default_rng(0), start_h=4.0, horizon_h=0.5)
    assert times.tolist() == [4.0] * 5


@settings(max_examples=150, deadline=None)
@given(
    process=st.sampled_from(ARRIVAL_PROCESSES),
    n=st.integers(1, 400),
    rate=st.floats(1e-3, 1e4),
    seed=st.integers(0, 2**32 - 1),
    start_h=st.floats(0.0, 1e4),
    horizon_h=st.one_of(st.none(), st.floats(1e-6, 1e4)),
)
def test_streams_are_monotone_from_start(
    process: str, n: int, rate: float, seed: int, start_h: float, horizon_h: float | None
) -> None:
    times = arrival_times(
        process, n, rate, np.random.default_rng(seed), start_h=start_h, horizon_h=horizon_h
    )
    assert times.dtype == np.float64 and times.ndim == 1
    assert 1 <= len(times) <= n
    assert times[0] == start_h
    assert np.isfinite(times).all()
    assert (np.diff(times) >= 0).all()
    if horizon_h is None:
        assert len(times) == n
    else:
        assert (times[1:] < start_h + horizon_h).all()


# ------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"process": "hawkes"}, "process"),
        ({"process": None}, "process"),
        ({"rate_per_h": -1.0}, "rate_per_h"),
        ({"rate_per_h": 0.0}, "rate_per_h"),
        ({"rate_per_h": float("nan")}, "rate_per_h"),
        ({"rate_per_h": float("inf")}, "rate_per_h"),
        ({"rate_per_h": None}, "rate_per_h"),
        ({"rate_per_h": None, "process": "poisson"}, "rate_per_h"),
        ({"rate_per_h": 0.0, "process": "poisson"}, "rate_per_h"),
        ({"n": 0}, "n"),
        ({"n": -3}, "n"),
        ({"n": 2.5}, "n"),
        ({"horizon_h": 0.0}, "horizon_h"),
        ({"horizon_h": -1.0}, "horizon_h"),
        ({"horizon_h": float("nan")}, "horizon_h"),
        ({"start_h": -1.0}, "start_h"),
        ({"rng": 0}, "rng"),
    ],
)
def test_bad_input_raises_one_line(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {
        "process": "philly",
        "n": 10,
        "rate_per_h": 2.0,
        "rng": np.random.default_rng(0),
        **kwargs,
    }
    with pytest.raises(ScenarioError) as info:
        arrival_times(
            args.pop("process"),  # type: ignore[arg-type]
            args.pop("n"),  # type: ignore[arg-type]
            args.pop("rate_per_h"),  # type: ignore[arg-type]
            args.pop("rng"),  # type: ignore[arg-type]
            **args,  # type: ignore[arg-type]
        )
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{field}: ")
    assert info.value.field == field
    if field == "process":
        assert all(name in message for name in ARRIVAL_PROCESSES)


def test_interarrival_cv_values_and_errors() -> None:
    assert interarrival_cv(np.array([0.0, 1.0, 2.0, 3.0])) == 0.0
    assert interarrival_cv(np.array([0.0, 1.0, 3.0])) == pytest.approx(1 / 3)  # gaps 1, 2
    assert interarrival_cv(np.array([5.0, 5.0, 6.0])) == pytest.approx(1.0)  # gaps 0, 1
    bad = [
        np.array([0.0, 1.0]),
        np.array([2.0, 2.0, 2.0]),
        np.array([0.0, 2.0, 1.0]),
        np.array([0.0, np.nan, 1.0]),
        np.zeros((3, 3)),
    ]
    for times in bad:
        with pytest.raises(ScenarioError) as info:
            interarrival_cv(times)
        assert "\n" not in str(info.value)
