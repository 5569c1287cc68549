"""Actions, masks, decision points and observations of ``GeoPipeEnv``."""

from __future__ import annotations

import copy
import math
import re

import gymnasium as gym
import numpy as np
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import ENV_IDS, GeoPipeEnv
from bacepipe_env.envs.geopipe import QUEUE_FEATURES, REGION_FEATURES, SUMMARY_FEATURES
from bacepipe_env.errors import ValidationError
from bacepipe_env.scenarios import build_scenario, load_scenario_spec

pytestmark = pytest.mark.filterwarnings("ignore:.*maximum value is infinity.*")

Q_COL = {name: i for i, name in enumerate(QUEUE_FEATURES)}
S_COL = {name: i for i, name in enumerate(SUMMARY_FEATURES)}
R_COL = {name: i for i, name in enumerate(REGION_FEATURES)}


def _started(env):
    """Job ids that have started (running or finished)."""
    sim = env.unwrapped.sim
    return {j.job_id for j in sim.scenario.jobs if sim.job_state(j.job_id)[1] is not None}


def _assert_obs_equal(a, b):
    assert a.keys() == b.keys()
    for key in a:
        assert np.array_equal(a[key], b[key]), key


# ---------------------------------------------------------------- illegal actions: fallback
BAD_ACTIONS = {
    "out-of-range-high": lambda env: env.max_queue + 5,
    "out-of-range-negative": lambda env: -1,
    "empty-slot": lambda env: 12,  # paper has 8 jobs, the window 16 slots
    "wait-without-allow-wait": lambda env: env.max_queue,
}
# an action that is not one integer (a string, None, 1.5, an array) is a ValidationError
# naming ``action`` in every mode, not an illegal action: tests/envs/test_env_arguments.py


@pytest.mark.parametrize("which", list(BAD_ACTIONS))
def test_illegal_action_falls_back_to_slot_zero(which):
    """Two envs in lockstep: A plays the illegal action, B plays action 0; A is flagged and
    does exactly what B does."""
    a = GeoPipeEnv("paper", max_queue=16, info="full")
    b = GeoPipeEnv("paper", max_queue=16, info="full")
    a.reset(seed=0)
    b.reset(seed=0)
    *_, info = a.step(2)  # first a legal move in both, so that the state is not the initial one
    b.step(2)
    assert info["action_mask"][0]
    assert not info["action_mask"][12] and info["queue_job_ids"][12] == -1
    job0 = int(info["queue_job_ids"][0])
    before = _started(a)
    assert job0 not in before
    bad = BAD_ACTIONS[which](a)
    oa, ra, ta, ua, ia = a.step(bad)
    ob, rb, tb, ub, ib = b.step(0)
    assert ia["illegal_action"] is True, f"{bad!r} was not flagged"
    assert ib["illegal_action"] is False
    assert _started(a) == _started(b) == before | {job0}
    assert a.sim.job_state(job0) == b.sim.job_state(job0)
    _assert_obs_equal(oa, ob)
    assert (ra, ta, ua) == (rb, tb, ub)


@pytest.mark.parametrize("action", [1, np.int64(1), np.int32(1), np.array(1)], ids=repr)
def test_integer_actions_of_any_type_are_legal(action):
    a = GeoPipeEnv("paper", info="full")
    b = GeoPipeEnv("paper", info="full")
    _, info = a.reset(seed=0)
    b.reset(seed=0)
    job1 = int(info["queue_job_ids"][1])
    oa, _, _, _, ia = a.step(action)
    ob, _, _, _, _ = b.step(1)
    assert ia["illegal_action"] is False
    assert job1 in _started(a)
    _assert_obs_equal(oa, ob)


def test_illegal_action_raise_mode():
    env = GeoPipeEnv("paper", illegal_action="raise", info="full")
    twin = GeoPipeEnv("paper", info="full")
    _, info = env.reset(seed=0)
    twin.reset(seed=0)
    legal = np.flatnonzero(info["action_mask"]).tolist()
    assert legal == list(range(8))
    for bad in (99, -1, 12, 16):
        with pytest.raises(ValueError, match=re.escape(str(legal))):
            env.step(bad)
    assert _started(env) == set()  # nothing happened
    o1, r1, *_ = env.step(3)
    o2, r2, *_ = twin.step(3)
    _assert_obs_equal(o1, o2)
    assert r1 == r2


def test_gym_make_passes_illegal_action_raise():
    env = gym.make("bacepipe_env/GeoPipe-Fig1-v2", illegal_action="raise", info="full")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"legal actions now: \[0, 1\]"):
        env.step(3)


# ---------------------------------------------------------------------------------- masks
@pytest.mark.parametrize("allow_wait", [False, True])
@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_masks_agree_and_match_the_window(sized, env_id, allow_wait):
    env = gym.make(env_id, allow_wait=allow_wait, info="full", **sized(env_id))
    flat = gym.make(env_id, allow_wait=allow_wait, observation="flat", info="full", **sized(env_id))
    u = env.unwrapped
    q = u.max_queue
    p = u.n_place  # one action per slot, or per slot and count of copies (replica_choices)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        fobs, _ = flat.reset(seed=seed)
        rng = np.random.default_rng(seed)
        while True:
            mask = u.action_masks()
            assert mask.dtype == bool and mask.shape == (u.n_actions,)
            assert np.array_equal(info["action_mask"], mask)
            assert np.array_equal(obs["action_mask"].astype(bool), mask)
            assert env.observation_space.contains(obs)
            assert np.array_equal(fobs, gym.spaces.flatten(env.observation_space, obs))
            window = u.preemption_window
            if window is not None and window.view is not None:  # a decision to preempt:
                assert not mask[:p].any() and mask[p] and mask[p + 1 :].any()  # no window
                a = int(rng.choice(np.flatnonzero(mask)))
                obs, _, term, trunc, info = env.step(a)
                fobs, *_ = flat.step(a)
                if term or trunc:
                    break
                continue
            assert mask[:p].any() or (allow_wait and mask[p])
            ids = info["queue_job_ids"]
            present = obs["queue"][:, Q_COL["present"]]
            n_visible = int(np.sum(ids >= 0))
            assert np.array_equal(present, (ids >= 0).astype(np.float32))
            assert np.all(ids[:n_visible] >= 0) and np.all(ids[n_visible:] == -1)
            assert not obs["queue"][n_visible:].any()  # empty rows are zero
            assert not mask[:p].reshape(q, -1)[n_visible:].any()  # no empty slot is legal
            pending = u.sim.pending
            # the window is the first max_queue candidates: pending jobs not yet tried in this
            # pass whose memory floor the free GPUs together reach (semantics §3a), in submission
            # order
            cands = u.sim.next_decision()  # at a decision point: the same candidates again
            assert cands is not None
            assert list(ids[:n_visible]) == list(cands[:q])
            assert all(min(u.sim.memory_floor(j)) <= sum(u.sim.free_gpus) for j in cands)
            if u.scenario.ignore_memory:  # every pending job is a candidate
                assert n_visible == min(len(pending), q)
            assert list(ids[:n_visible]) == sorted(ids[:n_visible])  # submission order
            assert set(ids[:n_visible].tolist()) <= set(pending)
            a = int(rng.choice(np.flatnonzero(mask)))
            obs, _, term, trunc, info = env.step(a)
            fobs, *_ = flat.step(a)
            assert info["illegal_action"] is False
            if term or trunc:
                break
        assert term and u.sim.done
        assert not info["action_mask"].any()  # the final observation offers nothing


@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_observations_are_finite_and_order_one(sized, env_id):
    """Every value is finite, inside its space (>= 0 but for grid's price_now) and O(1); the
    summary's job counts are per max_queue, so a long online queue takes them past 1, and the
    2023 price spikes (AU-NSW reaches 14 x scales.price for a few hours) are not clipped."""
    env = gym.make(env_id, allow_wait=True, info="full", **sized(env_id))
    counts = [S_COL[c] for c in ("pending", "hidden", "running")]
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        n_jobs, q = len(env.unwrapped.scenario.jobs), env.unwrapped.max_queue
        while True:
            for key, value in obs.items():
                assert np.all(np.isfinite(value)), key
                assert env.observation_space[key].contains(value), key
                if key == "summary":
                    assert value[counts].max() <= n_jobs / q
                    value = np.delete(value, counts)
                bound = 15.0 if key == "grid" else 5.0
                assert value.min() >= -bound and value.max() <= bound, (key, value.max())
            obs, _, term, trunc, info = env.step(rng.choice(np.flatnonzero(info["action_mask"])))
            if term or trunc:
                break


def test_random_scenarios_are_padded_to_max_regions():
    env = gym.make("bacepipe_env/GeoPipe-Random-v2", info="full")
    sizes = set()
    for seed in range(8):
        obs, _ = env.reset(seed=seed)
        k = env.unwrapped.scenario.cluster.n_regions
        sizes.add(k)
        assert obs["regions"].shape == (8, len(REGION_FEATURES))
        assert np.all(obs["regions"][:k, R_COL["present"]] == 1.0)
        assert not obs["regions"][k:].any()
        assert not obs["bandwidth"][:, k:, :].any() and not obs["bandwidth"][:, :, k:].any()
        assert obs["bandwidth"][1, :k, :k].sum() > 0
    assert len(sizes) > 1


def test_preview_off_zeroes_the_preview_features():
    on, off = GeoPipeEnv("paper", info="full"), GeoPipeEnv("paper", preview=False, info="full")
    o_on, _ = on.reset(seed=0)
    o_off, i_off = off.reset(seed=0)
    cols = [Q_COL[c] for c in QUEUE_FEATURES if c.startswith("preview_")]
    assert len(cols) == 4
    assert o_on["queue"][:8, cols].all()
    assert not o_off["queue"][:, cols].any()
    other = [i for i in range(len(QUEUE_FEATURES)) if i not in cols]
    assert np.array_equal(o_on["queue"][:, other], o_off["queue"][:, other])
    assert np.array_equal(i_off["action_mask"][:8], [True] * 8)


# ------------------------------------------------------------------------ decision points
def _event_times(env):
    sim = env.unwrapped.sim
    times = {j.submit_time for j in sim.scenario.jobs}
    for j in sim.scenario.jobs:
        finish = sim.job_state(j.job_id)[2]
        if finish is not None:
            times.add(finish)
    return times


def test_decisions_come_at_once_or_at_the_next_event():
    """After a placement the next observation is at the same instant when a job can still be
    placed, otherwise at an event (arrival or completion)."""
    env = gym.make("bacepipe_env/GeoPipe-Random-v2", info="full")
    u = env.unwrapped
    same_instant = later = 0
    for seed in range(8):
        _, info = env.reset(seed=seed)
        assert info["time_s"] in {j.submit_time for j in u.scenario.jobs}
        while True:
            t0 = info["time_s"]
            _, _, term, _, info = env.step(0)
            if term:
                break
            t1 = info["time_s"]
            assert t1 >= t0
            if t1 == t0:
                same_instant += 1
            else:
                later += 1
                assert t1 in _event_times(env)
            assert info["action_mask"].any()
            assert sum(u.sim.free_gpus) > 0 and u.sim.pending
    assert same_instant > 0 and later > 0


def test_fig1_decisions():
    env = GeoPipeEnv("fig1", max_queue=4, info="full")
    _, info = env.reset(seed=0)
    assert list(info["queue_job_ids"]) == [1, 2, -1, -1]
    _, _, term, _, info = env.step(0)  # P
    assert not term and info["time_s"] == 0.0  # Q can start at once
    assert list(info["queue_job_ids"]) == [2, -1, -1, -1]
    assert list(info["action_mask"]) == [True, False, False, False]
    _, _, term, trunc, info = env.step(0)  # Q
    assert term and not trunc  # nothing left to decide: the simulation ran to the end
    assert env.sim.done
    assert info["time_s"] == max(r.finish_time for r in env.sim.result().records)


def test_fig1_first_observation_by_hand():
    env = GeoPipeEnv("fig1", max_queue=4, info="full")
    obs, info = env.reset(seed=0)
    sim = env.sim
    jobs = {j.job_id: j for j in env.scenario.jobs}
    ids = info["queue_job_ids"]
    assert [jobs[int(i)].name for i in ids[:2]] == ["P", "Q"]
    assert list(ids[2:]) == [-1, -1]
    assert list(obs["action_mask"]) == [1, 1, 0, 0]
    p, q = sim.profile(int(ids[0])), sim.profile(int(ids[1]))
    assert jobs[int(ids[0])].model.name == "Qwen2.5-14B"
    assert jobs[int(ids[1])].model.name == "Llama-3.1-70B"
    e_max = max(p.single_gpu_exec, q.single_gpu_exec)
    b_max = max(p.min_bandwidth_kstar, q.min_bandwidth_kstar)
    queue = obs["queue"]
    assert queue.dtype == np.float32
    for row, prof in ((queue[0], p), (queue[1], q)):
        assert row[Q_COL["present"]] == 1.0
        assert row[Q_COL["intensity"]] == np.float32(prof.single_gpu_exec / e_max)
        assert row[Q_COL["sensitivity"]] == np.float32(prof.min_bandwidth_kstar / b_max)
        assert row[Q_COL["k_star"]] == np.float32(prof.k_star / 128)
        assert row[Q_COL["log_wait_hours"]] == 0.0  # both submitted at t = 0
        assert 0.0 < row[Q_COL["preview_gpu_frac"]] <= 1.0  # Pathfinder gives them something
        assert row[Q_COL["log_e1_hours"]] == np.float32(
            math.log10(1 + prof.single_gpu_exec / 3600) / 4
        )
    # P (smaller E(1)) has intensity < 1, Q is the maximum
    assert 0.0 < queue[0, Q_COL["intensity"]] < 1.0 == queue[1, Q_COL["intensity"]]
    assert info["queue_e1_s"][0] == p.single_gpu_exec
    assert not queue[2:].any()
    summary = obs["summary"]
    assert summary[S_COL["alpha"]] == 0.0
    assert summary[S_COL["pending"]] == np.float32(2 / 4)
    assert summary[S_COL["hidden"]] == 0.0
    assert summary[S_COL["running"]] == 0.0
    assert summary[S_COL["free_gpu_frac"]] == 1.0
    regions = obs["regions"]  # A, B, C, D: 4, 3, 2, 2 GPUs
    assert np.array_equal(regions[:, R_COL["present"]], [1, 1, 1, 1])
    assert np.array_equal(regions[:, R_COL["free_frac"]], [1, 1, 1, 1])
    np.testing.assert_array_equal(
        regions[:, R_COL["capacity"]], np.array([4, 3, 2, 2], dtype=np.float32) / 128
    )
    np.testing.assert_allclose(
        regions[:, R_COL["price"]], np.array([0.230, 0.222, 0.191, 0.291]) / 0.35, rtol=1e-6
    )
    assert obs["bandwidth"].shape == (2, 4, 4)
    # nothing reserved yet: residual == capacity; the A-C link (1000 Mbps) is the widest
    np.testing.assert_array_equal(obs["bandwidth"][0], obs["bandwidth"][1])
    assert np.all(np.diag(obs["bandwidth"][1]) == 0)
    assert obs["bandwidth"][1][0, 2] == obs["bandwidth"][1].max() > 0


# ------------------------------------------------------------------------------- waiting
def _next_event_time(env):
    sim = env.unwrapped.sim
    now = sim.time
    times = [j.submit_time for j in sim.scenario.jobs if j.submit_time > now]
    times += [sim.job_state(j)[2] for j in sim.running]
    return min(times) if times else None


def test_wait_is_illegal_when_no_event_is_to_come():
    """paper: every job arrives at t = 0 and nothing runs yet, so waiting has nothing to wait
    for; playing it falls back to slot 0."""
    env = GeoPipeEnv("paper", allow_wait=True, info="full")
    twin = GeoPipeEnv("paper", allow_wait=True, info="full")
    _, info = env.reset(seed=0)
    twin.reset(seed=0)
    assert env.action_space.n == 17
    assert not info["action_mask"][16] and _next_event_time(env) is None
    oa, _, _, _, ia = env.step(16)
    ob, *_ = twin.step(0)
    assert ia["illegal_action"] is True
    _assert_obs_equal(oa, ob)
    # one job is running now: a completion is to come, so waiting is legal
    assert ia["action_mask"][16] and env.sim.running


def test_wait_is_legal_exactly_while_an_event_is_to_come_and_advances_to_it():
    env = gym.make("bacepipe_env/GeoPipe-Random-v2", allow_wait=True, info="full")
    u = env.unwrapped
    wait = u.max_queue
    waits = 0
    for seed in range(10):
        _, info = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        while True:
            nxt = _next_event_time(env)
            assert bool(info["action_mask"][wait]) == (nxt is not None)
            legal = np.flatnonzero(info["action_mask"][:wait])
            if nxt is not None and (len(legal) == 0 or rng.random() < 0.5):
                started, pending = _started(env), set(u.sim.pending)
                t0 = info["time_s"]
                _, reward, term, trunc, info = env.step(wait)
                assert info["illegal_action"] is False
                assert not term  # jobs are still pending
                assert info["time_s"] == nxt > t0
                assert _started(env) == started  # waiting started nothing
                assert pending <= set(u.sim.pending)
                assert reward < 0.0
                waits += 1
            else:
                _, _, term, trunc, info = env.step(int(rng.choice(legal)))
            if term or trunc:
                break
        assert term
    assert waits >= 10


# ------------------------------------------------------------------ no future information
def _two_scenarios(late_h):
    """fig1's cluster with six jobs at t = 0; the second scenario adds one arriving at
    ``late_h`` hours."""
    spec = copy.deepcopy(load_scenario_spec("fig1"))
    models = ["Qwen2.5-14B", "Llama-3.1-70B"] * 3
    spec["jobs"] = [
        {"name": f"J{i}", "model": m, "dataset": "Alpaca-52k", "submit_h": 0.0}
        for i, m in enumerate(models)
    ]
    base = build_scenario(spec)
    spec["jobs"].append(
        {"name": "LATE", "model": "Qwen2.5-14B", "dataset": "Alpaca-52k", "submit_h": late_h}
    )
    return base, build_scenario(spec)


def _trace(scenario):
    env = GeoPipeEnv(scenario, max_queue=8, info="full")
    obs, info = env.reset(seed=0)
    out = [(info["time_s"], obs, info)]
    while True:
        obs, _, term, _, info = env.step(0)
        if term:
            return out
        out.append((info["time_s"], obs, info))


def test_observations_do_not_reveal_future_arrivals():
    late_h = 10.0
    base, with_late = _two_scenarios(late_h)
    late_s = late_h * 3600
    ta, tb = _trace(base), _trace(with_late)
    before = [x for x in ta if x[0] < late_s]
    assert len(before) >= 4 and before[-1][0] > 0  # several decisions, one after an event
    for (t1, o1, i1), (t2, o2, i2) in zip(before, tb):
        assert t1 == t2
        _assert_obs_equal(o1, o2)
        for key in ("action_mask", "queue_job_ids", "queue_e1_s", "queue_submit_s"):
            assert np.array_equal(i1[key], i2[key]), key
    # the late job does show up once it has arrived
    late_id = len(with_late.jobs)
    seen = [x for x in tb if late_id in x[2]["queue_job_ids"]]
    assert seen and all(t >= late_s for t, _, _ in seen)
    assert len(tb) == len(ta) + 1


# ------------------------------------------------------------------- window and step limit
def test_window_smaller_than_the_queue():
    env = GeoPipeEnv("paper", max_queue=4, n_jobs=16, info="full")
    obs, info = env.reset(seed=0)
    assert len(env.scenario.jobs) == 16
    assert list(info["queue_job_ids"]) == [1, 2, 3, 4]  # the first four in submission order
    assert obs["summary"][S_COL["hidden"]] == np.float32(12 / 4) > 0
    assert obs["summary"][S_COL["pending"]] == np.float32(16 / 4)
    rng = np.random.default_rng(0)
    hidden_seen = []
    steps = 0
    while True:
        hidden = obs["summary"][S_COL["hidden"]]
        hidden_seen.append(hidden)
        n_pending = len(env.sim.pending)
        # the window holds the first four candidates; hidden counts the other pending jobs
        n_visible = int(np.sum(info["queue_job_ids"] >= 0))
        assert n_visible == min(4, len(env.sim.next_decision()))
        assert hidden == np.float32((n_pending - n_visible) / 4)
        obs, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        steps += 1
        assert info["illegal_action"] is False
        if term or trunc:
            break
    assert term and not trunc
    assert steps == 16
    assert len(env.sim.result().records) == 16
    assert hidden_seen[0] > 0 and hidden_seen[-1] == 0


def test_truncation_at_max_steps():
    env = GeoPipeEnv("paper", max_steps=3, info="full")
    _, info = env.reset(seed=0)
    flags = []
    for _ in range(3):
        _, _, term, trunc, info = env.step(0)
        flags.append((term, trunc))
    assert flags == [(False, False), (False, False), (False, True)]
    assert "episode_avg_jct_s" not in info
    # a new episode starts from scratch and counts steps again
    env.reset(seed=0)
    _, _, term, trunc, _ = env.step(0)
    assert (term, trunc) == (False, False)


@pytest.mark.parametrize("limit", ["max_steps", "max_episode_steps"])
def test_registered_step_limit_truncates(limit):
    """``max_episode_steps`` is Gymnasium's TimeLimit; ``max_steps`` (passed through to the env)
    still works too."""
    env = gym.make("bacepipe_env/GeoPipe-v2", **{limit: 2}, info="full")
    env.reset(seed=0)
    _, _, term, trunc, _ = env.step(0)
    assert not (term or trunc)
    _, _, term, trunc, _ = env.step(0)
    assert trunc and not term


def test_termination_at_the_last_step_is_not_a_truncation():
    env = GeoPipeEnv("paper", max_steps=8, info="full")  # paper: exactly 8 placements
    env.reset(seed=0)
    for _ in range(8):
        _, _, term, trunc, info = env.step(0)
    assert term and not trunc
    assert "episode_avg_jct_s" in info


def test_stepping_before_reset_or_after_the_end_raises():
    env = GeoPipeEnv("fig1", max_queue=4, info="full")
    with pytest.raises(RuntimeError):
        env.step(0)
    env.reset(seed=0)
    env.step(0)
    *_, term, _, _ = env.step(0)
    assert term
    with pytest.raises(RuntimeError):
        env.step(0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_queue": 0},
        {"observation": "image"},
        {"illegal_action": "ignore"},
        {"allow_wait": 1},
        {"max_steps": 0},
        {"render_mode": "human"},
        {"placement": "nowhere"},
        {"scenario": "no-such-scenario"},
    ],
)
def test_bad_constructor_arguments_are_rejected(kwargs):
    with pytest.raises(ValueError):
        GeoPipeEnv(**{"scenario": "fig1", **kwargs}, info="full")


def test_knobs_only_apply_to_named_scenarios():
    base, _ = _two_scenarios(1.0)
    with pytest.raises(ValidationError):
        GeoPipeEnv(base, gpu_scale=0.5, info="full")
    env = GeoPipeEnv("paper", gpu_scale=0.5, info="full")
    env.reset(seed=0)
    assert env.scenario.cluster.capacity == (32, 32, 8, 64, 16, 16)
