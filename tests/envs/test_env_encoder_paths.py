"""The observation's fast paths give the very arrays of the plain ones (issue 14): the ``queue``
array row by row and column by column, and ``wait_preview`` through the previewer's memo and
through :func:`~bacepipe_env.core.admission.finish_after_release` directly."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import features

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
    default = features.COLUMNS_FROM
    widths = set()
    for enc, d in _decisions(env_id, kwargs):
        widths.add(len(d.queue.job_ids))
        monkeypatch.setattr(features, "COLUMNS_FROM", 0)
        columns = features._queue(enc, d)
        monkeypatch.setattr(features, "COLUMNS_FROM", 10**9)
        rows = features._queue(enc, d)
        assert np.array_equal(columns, rows)  # every float32, exactly
    assert widths - {0}  # some decision had jobs in its window
    if "wide" in case:
        assert max(widths) >= default  # the default switched paths here


@pytest.mark.parametrize("case", sorted(CASES))
def test_wait_preview_through_the_memo_is_the_plain_function(case):
    env_id, kwargs = CASES[case]
    kwargs = {**kwargs, "running_features": True}
    for enc, d in _decisions(env_id, kwargs, steps=200):
        memo = features._wait_preview(enc, d)
        plain = features._wait_preview(enc, d._replace(previewer=None))
        assert np.array_equal(memo, plain)
