"""Every registered GeoPipe id survives ``pickle`` and ``copy.deepcopy`` at every decision point
of an episode, and the copy goes on exactly as the original does (issue 37, item 6).

The preempt ids used to refuse both at most decisions: their simulator cached a
:class:`~bacepipe_env.core.preemption.PreemptionView` that still computed through it (closures
over the simulator), and such a view refuses to be copied. A copied simulator now leaves that
view out and makes its own when asked; a materialised view (the one the env publishes at a
decision to preempt) travels as it is.

The episodes are small (the online ids play 14 jobs; seed 1 gives the preempt ids five
decisions to preempt and four preemptions under random legal actions), since a deep copy of an
online env takes about 0.1 s.
"""

from __future__ import annotations

import copy
import math
import pickle
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import ENV_IDS
from bacepipe_env.envs.config import scenario_knob_names
from bacepipe_env.envs.registration import geopipe_kwargs

pytestmark = pytest.mark.filterwarnings("ignore:.*maximum value is infinity.*")

#: Every GeoPipe id Gymnasium knows (this package's, registered at import).
GEOPIPE_IDS = sorted(
    env_id for env_id, spec in gym.registry.items() if spec.name.startswith("GeoPipe")
)
SEED = 1
ONLINE_JOBS = 14

Copier = Callable[[Any], Any]
COPIERS: dict[str, Copier] = {
    "pickle": lambda env: pickle.loads(pickle.dumps(env)),
    "deepcopy": copy.deepcopy,
}


def _small(env_id: str) -> dict[str, Any]:
    """Keywords that keep the id's episode short: the online ids' 500 jobs cut to
    ``ONLINE_JOBS`` (the paper, fig1 and random episodes are short already)."""
    scenario = geopipe_kwargs(env_id).get("scenario")
    if scenario == "online" and "n_jobs" in scenario_knob_names(scenario):
        return {"n_jobs": ONLINE_JOBS}
    return {}


def _make(env_id: str) -> Any:
    return gym.make(env_id, info="full", **_small(env_id))


def _same(a: Any, b: Any, where: str) -> None:
    """``a`` and ``b`` equal to the bit: arrays by dtype, shape and value, floats with NaN
    equal to NaN, mappings and plain sequences item by item, anything else by ``==``."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), where
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            _same(a[key], b[key], f"{where}[{key!r}]")
    elif type(a) in (tuple, list):  # a plain sequence (reset's pair), item by item
        assert type(b) is type(a) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert type(a) is type(b), where
        assert a == b or (math.isnan(a) and math.isnan(b)), where
    else:
        assert type(a) is type(b) and a == b, where


def _same_step(got: tuple[Any, ...], want: tuple[Any, ...], where: str) -> None:
    for name, g, w in zip(("obs", "reward", "terminated", "truncated", "info"), got, want):
        _same(g, w, f"{where}: {name}")


def _same_decision(c: Any, env: Any, where: str) -> None:
    """The copy stands at the original's decision: same mask, window and preempt window,
    and shares no mutable state with it."""
    cu, eu = c.unwrapped, env.unwrapped
    assert c is not env and cu is not eu and cu.sim is not eu.sim, where
    assert cu.sim._running is not eu.sim._running and cu.sim._heap is not eu.sim._heap, where
    _same(cu.action_masks(), eu.action_masks(), f"{where}: mask")
    assert cu.queue_snapshot == eu.queue_snapshot, where
    if eu.preempt_window:
        assert cu.preemption_window == eu.preemption_window, where


def _lazy_view_cached(env: Any) -> bool:
    """Whether the simulator holds a preemption view that still computes through it: what
    used to make the copies fail."""
    cached = env.unwrapped.sim._caches.view
    return cached is not None and not cached[1].materialized


def test_the_registry_lists_every_id() -> None:
    assert set(ENV_IDS) <= set(GEOPIPE_IDS)


@pytest.mark.parametrize("env_id", GEOPIPE_IDS)
def test_round_trips_at_every_decision_continue_like_the_original(env_id: str) -> None:
    env = _make(env_id)
    rng = np.random.default_rng(SEED)
    _, info = env.reset(seed=SEED)
    preempts = bool(env.unwrapped.preempt_window)
    # copies kept to the end, stepped beside the original: one made where the simulator held
    # a lazy preemption view, one at the first decision to preempt (or both at the first
    # decision, for an id that never preempts)
    twins: dict[str, Any] = {}
    n = lazy = to_preempt = preempted = 0
    while True:
        where = f"{env_id} step {n}"
        if _lazy_view_cached(env):
            lazy += 1
            twins.setdefault("pickled where lazy", COPIERS["pickle"](env))
        window = env.unwrapped.preemption_window if preempts else None
        if window is not None and window.view is not None:
            to_preempt += 1
            assert window.view.materialized
            twins.setdefault("deep-copied at a decision to preempt", copy.deepcopy(env))
        if not preempts and n == 0:
            twins = {name: f(env) for name, f in COPIERS.items()}
        copies = {name: f(env) for name, f in COPIERS.items()}
        for name, c in (*copies.items(), *twins.items()):
            _same_decision(c, env, f"{where} ({name})")
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        preempted += action > env.unwrapped.max_queue
        want = env.step(action)  # the original first: a copy sharing its state would drift
        for name, c in (*copies.items(), *twins.items()):
            _same_step(c.step(action), want, f"{where} ({name})")
        n += 1
        _, _, terminated, truncated, info = want
        if terminated or truncated:
            break
    assert terminated and not truncated
    assert "episode_avg_jct_s" in info
    if preempts:  # the episode met what used to fail, and the decisions to preempt
        assert lazy > 0 and to_preempt > 0 and preempted > 0, (lazy, to_preempt, preempted)
    # a finished episode copies too, and its next (unseeded) episode starts the same
    ends = {name: f(env) for name, f in COPIERS.items()}
    result = env.unwrapped.sim.result()
    for name, c in ends.items():
        assert c.unwrapped.sim.result() == result, name
    first = env.reset()
    for name, c in ends.items():
        _same(c.reset(), first, f"{env_id} reset ({name})")


@pytest.mark.parametrize(
    "env_id", [e for e in GEOPIPE_IDS if geopipe_kwargs(e).get("preempt_window")]
)
def test_a_copy_makes_its_own_preemption_view(env_id: str) -> None:
    """A copy's simulator computes its own view, equal to the original's; the original's lazy
    view is left as it was, still lazy and still its own."""
    env = _make(env_id)
    rng = np.random.default_rng(SEED)
    _, info = env.reset(seed=SEED)
    while not _lazy_view_cached(env):
        info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))[4]
    sim = env.unwrapped.sim
    view = sim._caches.view[1]
    copies = [f(sim) for f in COPIERS.values()]
    assert sim._caches.view[1] is view and not view.materialized
    with pytest.raises(TypeError):
        pickle.dumps(view)  # a lone lazy view still refuses: it would compute on the original
    with pytest.raises(TypeError):
        copy.deepcopy(view)
    want = sim.clone().preemption_view().materialize()
    for other in copies:
        got = other.preemption_view()
        assert got is not view and not got.materialized
        assert got.materialize() == want
    assert view.materialize() == want
