"""The parts the environment is made of, and their contracts: injected reward functions with
typed terms, the typed queue snapshot, the step limit from registration, argument errors, and
rendering from a typed snapshot without an import cycle."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.core.snapshot import QueueSnapshot
from bacepipe_env.envs import (
    ENV_IDS,
    MAX_EPISODE_STEPS,
    GeoPipeEnv,
    JctCostReward,
    RenderSnapshot,
    RewardConfig,
    RewardFn,
    RewardTerms,
    VectorReward,
)
from bacepipe_env.errors import ScenarioError, ValidationError

pytestmark = pytest.mark.filterwarnings("ignore:.*maximum value is infinity.*")

ENVS = Path(__file__).resolve().parents[2] / "bacepipe_env" / "envs"


def _play(env, seed, pick=lambda info, rng: int(rng.choice(np.flatnonzero(info["action_mask"])))):
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    out = []
    while True:
        obs, reward, term, trunc, info = env.step(pick(info, rng))
        out.append((obs, reward, info))
        if term or trunc:
            return out


# ----------------------------------------------------------------------------- reward
class _Recording(RewardFn):
    """Returns -jct and records every call."""

    def __init__(self) -> None:
        self.calls: list[RewardTerms] = []

    def __call__(self, terms: RewardTerms) -> float:
        self.calls.append(terms)
        return -terms.jct


def test_an_injected_reward_is_called_once_per_step_with_the_steps_terms():
    fn = _Recording()
    env = GeoPipeEnv("paper", reward=fn, info="full")
    steps = _play(env, seed=0)
    assert len(fn.calls) == len(steps)
    for terms, (_, reward, info) in zip(fn.calls, steps):
        assert info["reward_terms"] is terms
        assert reward == -terms.jct
        assert info["reward_jct"] == -terms.jct and info["reward_cost"] == -terms.cost
        assert info["reward_carbon"] == -terms.carbon
        assert np.array_equal(info["reward_vector"], [-terms.jct, -terms.cost, -terms.carbon])
    last = steps[-1][2]
    total_jct = math.fsum(t.jct for t in fn.calls)
    assert total_jct == pytest.approx(last["episode_avg_jct_s"] / last["jct_scale_s"], rel=1e-9)


@pytest.mark.parametrize(
    "reward",
    [None, RewardConfig(), {"jct_weight": 1.0}, JctCostReward(), JctCostReward(RewardConfig())],
    ids=["none", "config", "mapping", "fn", "fn-config"],
)
def test_the_default_reward_in_every_spelling_gives_the_same_floats(reward):
    base = _play(GeoPipeEnv("paper", info="full"), seed=4)
    other = _play(GeoPipeEnv("paper", reward=reward, info="full"), seed=4)
    assert [r for _, r, _ in base] == [r for _, r, _ in other]


def test_jct_cost_reward_is_the_weighted_terms_minus_the_penalty():
    fn = JctCostReward(RewardConfig(jct_weight=0.5, cost_weight=2.0, illegal_penalty=3.0))
    terms = RewardTerms(jct=0.2, cost=0.1, illegal=True, carbon=7.0)
    assert fn(terms) == -(0.5 * 0.2 + 2.0 * 0.1) - 3.0  # carbon_weight defaults to 0
    assert fn(RewardTerms(0.2, 0.1)) == -(0.5 * 0.2 + 2.0 * 0.1)
    assert fn.components(terms) == {
        "reward_jct": -0.5 * 0.2,
        "reward_cost": -2.0 * 0.1,
        "reward_carbon": -0.0,
    }
    green = JctCostReward(RewardConfig(jct_weight=0.5, cost_weight=2.0, carbon_weight=0.25))
    assert green(terms) == -(0.5 * 0.2 + 2.0 * 0.1 + 0.25 * 7.0)
    assert green.components(terms)["reward_carbon"] == -0.25 * 7.0


def test_reward_terms_keep_their_positional_meaning():
    """``carbon`` is keyword-only: ``RewardTerms(jct, cost, illegal)`` means what it did."""
    terms = RewardTerms(0.2, 0.1, True)
    assert terms.illegal is True and terms.carbon == 0.0
    assert terms.misses == terms.tardiness == 0.0  # the deadline terms are keyword-only too
    assert RewardTerms.names() == ("jct", "cost", "carbon", "misses", "tardiness")
    with pytest.raises(TypeError):
        RewardTerms(0.2, 0.1, False, 0.3)  # type: ignore[misc]


def test_vector_reward_returns_the_unweighted_terms():
    env = GeoPipeEnv("paper", reward=VectorReward(), info="full")
    scalar = _play(GeoPipeEnv("paper", info="full"), seed=2)
    steps = _play(env, seed=2)
    assert len(steps) == len(scalar)
    for (_, vec, info), (_, r, _) in zip(steps, scalar):
        assert isinstance(vec, np.ndarray) and vec.shape == (3,)  # jct, cost, carbon
        assert np.array_equal(vec, info["reward_vector"])
        assert r == pytest.approx(-(-vec[0] * 1.0 + -vec[1] * 0.25), abs=1e-15)
    assert VectorReward(("cost",))(RewardTerms(1.0, 2.0)).tolist() == [-2.0]
    assert VectorReward(("jct", "cost"))(RewardTerms(1.0, 2.0, carbon=3.0)).tolist() == [-1, -2]
    assert VectorReward()(RewardTerms(1.0, 2.0, carbon=3.0)).tolist() == [-1.0, -2.0, -3.0]
    assert VectorReward().terms == RewardTerms.names()[:3] == ("jct", "cost", "carbon")
    assert VectorReward(("jct", "misses"))(RewardTerms(1.0, misses=2.0)).tolist() == [-1, -2]
    for bad in ((), ("co2",), ("illegal",)):
        with pytest.raises(ValidationError, match="terms"):
            VectorReward(bad)


def test_vector_reward_through_gym_make():
    env = gym.make(
        "bacepipe_env/GeoPipe-Fig1-v2", reward=VectorReward(), disable_env_checker=True, info="full"
    )
    env.reset(seed=0)
    _, reward, *_, info = env.step(0)
    assert np.array_equal(reward, info["reward_vector"])


def test_reward_terms_are_frozen():
    terms = RewardTerms(0.1, 0.2, False)
    with pytest.raises(AttributeError):
        terms.jct = 1.0  # type: ignore[misc]


# ----------------------------------------------------------------------- queue snapshot
@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_the_queue_snapshot_is_the_window_and_agrees_with_the_old_info_keys(env_id):
    env = gym.make(env_id, allow_wait=True, info="full")
    u = env.unwrapped
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    while True:
        q = info["queue"]
        assert isinstance(q, QueueSnapshot) and q is u.queue_snapshot
        k = len(q)
        assert q == QueueSnapshot.from_view(u.sim, q.job_ids)
        assert list(info["queue_job_ids"][:k]) == list(q.job_ids)
        assert np.all(info["queue_job_ids"][k:] == -1)
        assert list(info["queue_e1_s"][:k]) == list(q.single_gpu_exec)
        assert list(info["queue_bkstar_Bps"][:k]) == list(q.min_bandwidth_kstar)
        assert list(info["queue_submit_s"][:k]) == list(q.submit_time)
        assert info["pending_e1_max_s"] == q.pending_e1_max
        assert info["pending_bkstar_max_Bps"] == q.pending_bkstar_max
        assert info["alpha"] == q.alpha and info["time_s"] == q.time
        place = info["action_mask"][: u.n_place].reshape(u.max_queue, -1)
        assert not place[k:].any()  # only the window is legal
        _, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if term or trunc:
            assert len(info["queue"]) == 0
            break


def test_the_queue_snapshot_is_read_only_and_needs_a_reset():
    env = GeoPipeEnv("fig1", info="full")
    with pytest.raises(RuntimeError, match="reset"):
        _ = env.queue_snapshot
    env.reset(seed=0)
    with pytest.raises(AttributeError):
        env.queue_snapshot = env.queue_snapshot  # type: ignore[misc]


# ----------------------------------------------------------------------------- dynamics
def test_the_env_leaves_the_dynamics_to_the_simulator(monkeypatch):
    """The env only places the job the agent chose (on its preview) or waits; a window none of
    whose jobs can start is handed back with ``Simulator.decline``, not placed on nothing."""
    from bacepipe_env.core.simulator import Simulator

    placed, declined = [], []
    place, decline = Simulator.place, Simulator.decline

    def spy_place(self, job_id, placement=None):
        placed.append(placement)
        return place(self, job_id, placement)

    def spy_decline(self, job_ids):
        declined.append(tuple(job_ids))
        return decline(self, job_ids)

    monkeypatch.setattr(Simulator, "place", spy_place)
    monkeypatch.setattr(Simulator, "decline", spy_decline)
    # fragmented regions and thin links: the free GPUs reach a floor that no path does
    env = GeoPipeEnv("paper", gpu_scale=0.5, bandwidth_scale=0.01, info="full")
    for seed in range(3):
        _play(env, seed)
    assert declined, "no window was declined: pick a scenario where one is"
    assert placed and all(p is not None and p.path for p in placed)


# -------------------------------------------------------------------------- step limit
@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_the_registered_step_limit_is_timelimits(env_id):
    env = gym.make(env_id, info="full")
    assert env.spec.max_episode_steps == MAX_EPISODE_STEPS[env_id]
    assert env.unwrapped.max_steps is None
    short = gym.make(env_id, max_episode_steps=1, info="full")
    short.reset(seed=0)
    _, _, term, trunc, _ = short.step(0)
    # fig1 ends after two placements, so one step is never the end
    assert trunc and not term
    assert short.unwrapped.max_steps is None  # TimeLimit truncated, not the env


def test_max_steps_still_truncates_a_directly_built_env():
    env = GeoPipeEnv("fig1", max_steps=1, info="full")
    env.reset(seed=0)
    _, _, term, trunc, _ = env.step(0)
    assert trunc and not term


# ------------------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_queue": 0},
        {"max_queue": 2.5},
        {"max_regions": 0},
        {"observation": "image"},
        {"illegal_action": "ignore"},
        {"allow_wait": 1},
        {"max_steps": 0},
        {"render_mode": "human"},
        {"placement": "nowhere"},
        {"reward": 3},
        {"reward": {"jct_weight": -1.0}},
        {"reward": {"weight": 1.0}},
        {"scales": {"gpus": 0.0}},
        {"scales": "big"},
        {"bandwidth_scale": 0.5, "scenario": None},
    ],
    ids=repr,
)
def test_bad_arguments_raise_validation_errors_not_scenario_errors(kwargs):
    args = {"scenario": "fig1", **kwargs}
    if args["scenario"] is None:
        from bacepipe_env.scenarios import load_scenario

        args["scenario"] = load_scenario("fig1")
    with pytest.raises(ValidationError) as err:
        GeoPipeEnv(**args, info="full")
    assert not isinstance(err.value, ScenarioError), err.value
    assert err.value.field  # names the argument


def test_a_scenario_with_too_many_regions_is_rejected_at_reset():
    from bacepipe_env.scenarios import load_scenario

    env = GeoPipeEnv("fig1", max_regions=4, info="full")
    with pytest.raises(ValidationError, match="max_regions"):
        env.reset(options={"scenario": load_scenario("paper")})
    with pytest.raises(ValidationError, match="Scenario"):
        GeoPipeEnv(lambda rng: "not a scenario", max_regions=2, info="full").reset(seed=0)


# ------------------------------------------------------------------------------ render
def test_render_takes_a_typed_snapshot_and_does_not_import_the_env():
    tree = ast.parse((ENVS / "render.py").read_text())
    imported = [
        (node.module or "") + ":" + ",".join(a.name for a in node.names)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    ]
    assert not [m for m in imported if "geopipe" in m], imported
    env = GeoPipeEnv("fig1", render_mode="ansi", info="full")
    env.reset(seed=0)
    snap = env.render_snapshot()
    assert isinstance(snap, RenderSnapshot)
    with pytest.raises(AttributeError):
        snap.time = 1.0  # type: ignore[misc]
    assert [row.job_id for row in snap.queue] == list(env.queue_snapshot.job_ids)
    from bacepipe_env.envs.render import render_ansi

    assert env.render() == render_ansi(snap)


def test_no_test_module_imports_another():
    """No test module imports another one (shared strategies and fixtures live in conftest)."""
    tests = Path(__file__).resolve().parents[1]
    for path in sorted(tests.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else ["." + (node.module or "")]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                assert not name.lstrip(".").startswith(("test_", "tests", "conftest")), (path, name)


def test_a_snapshot_deep_copies_to_itself_unless_it_holds_lists():
    """SB3's DummyVecEnv deep-copies every info at every step: the env's snapshot (tuples of
    numbers, immutable) copies to itself; one a user built from lists gets a real copy."""
    import copy

    env = gym.make("bacepipe_env/GeoPipe-v2")
    _, info = env.reset(seed=0)
    q = info["queue"]
    assert copy.deepcopy(q) is q
    assert copy.deepcopy(info)["queue"] is q
    listy = QueueSnapshot([1, 2], [3.0, 4.0], [5.0, 6.0], [0.0, 0.0], 4.0, 6.0, 0.1, 0.0)
    twin = copy.deepcopy(listy)
    assert twin == listy and twin is not listy and twin.job_ids is not listy.job_ids
