"""The observation's fast paths give the very arrays of the plain ones (issue 14): the ``queue``
array row by row and column by column, and ``wait_preview`` through the previewer's memo and
through :func:`~bacepipe_env.core.admission.finish_after_release` directly."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import features
from bacepipe_env.envs.features import pending, running

pytestmark = pytest.mark.filterwarnings("ignore:.*maximum value is infinity.*")

CASES = {
    "online, wide windows": ("bacepipe_env/GeoPipe-Online-v1", {"n_jobs": 300, "load": 1.5}),
    "online, GPU failures": (
        "bacepipe_env/GeoPipe-Online-v1",
        {"n_jobs": 80, "gpu_failure_rate": 1e-3},
    ),
    "random clusters": ("bacepipe_env/GeoPipe-Random-v2", {}),
    "paper": ("bacepipe_env/GeoPipe-v2", {}),
}


def _decisions(env_id: str, kwargs: dict, steps: int = 300):
    """(encoder, Decision) at each of ``steps`` random-action steps (new episodes included)."""
    env = gym.make(env_id, **kwargs)
    base = env.unwrapped
    rng = np.random.default_rng(7)
    _, info = env.reset(seed=7)
    for _ in range(steps):
        yield base.encoder, features.Decision(base.sim, base._queue, base._previews, base.previewer)
        legal = np.flatnonzero(info["action_mask"])
        _, _, terminated, truncated, info = env.step(int(legal[rng.integers(len(legal))]))
        if terminated or truncated:
            _, info = env.reset()


@pytest.mark.parametrize("case", sorted(CASES))
def test_queue_rows_and_columns_agree(case, monkeypatch):
    env_id, kwargs = CASES[case]
    default = pending.COLUMNS_FROM
    widths = set()
    for enc, d in _decisions(env_id, kwargs):
        widths.add(len(d.queue.job_ids))
        monkeypatch.setattr(pending, "COLUMNS_FROM", 0)
        columns = pending.encode_queue(enc, d)
        monkeypatch.setattr(pending, "COLUMNS_FROM", 10**9)
        rows = pending.encode_queue(enc, d)
        assert np.array_equal(columns, rows)  # every float32, exactly
    assert widths - {0}  # some decision had jobs in its window
    if "wide" in case:
        assert max(widths) >= default  # the default switched paths here


@pytest.mark.parametrize("case", sorted(CASES))
def test_wait_preview_through_the_memo_is_the_plain_function(case):
    env_id, kwargs = CASES[case]
    kwargs = {**kwargs, "running_features": True}
    for enc, d in _decisions(env_id, kwargs, steps=200):
        memo = pending.encode_wait_preview(enc, d)
        plain = pending.encode_wait_preview(enc, d._replace(previewer=None))
        assert np.array_equal(memo, plain)


def test_idle_running_arrays_are_the_full_pass():
    """With nothing running (every reset's first decision), the shortcut's zeros are the
    arrays the pass over running jobs computes: log10(1 + 0) = 0 and 0 / capacity = 0."""
    idle = 0
    for case in ("paper", "random clusters", "online, GPU failures"):
        env_id, kwargs = CASES[case]
        for enc, d in _decisions(env_id, {**kwargs, "running_features": True}, steps=120):
            if d.sim.running:
                continue
            idle += 1
            enc.running_key = None
            short = running.running_state(enc, d)
            full = running.running_arrays(enc, d)
            for a, b in zip(short, full):
                assert a.dtype == b.dtype and np.array_equal(a, b)
                assert not np.signbit(b).any()  # no -0.0 either way
    assert idle >= 3  # each case reset at least once
