"""The permutation-equivariant slot policy: equivariance of the scores, invariance of the
value, and a real tiny ``train learn --policy slot`` run whose model loads and plays legally."""

from __future__ import annotations

import json

import numpy as np
import pytest
from train_helpers import ENV_ID, TINY, run

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO  # noqa: E402

from bacepipe_env.envs.agents import evaluate  # noqa: E402
from bacepipe_env.envs.geopipe import GeoPipeEnv  # noqa: E402
from bacepipe_env.envs.registration import ENV_IDS  # noqa: E402
from bacepipe_env.train.config import TrainConfig  # noqa: E402
from bacepipe_env.train.sb3 import load_agent  # noqa: E402
from bacepipe_env.train.slot import SlotExtractor, SlotPolicy  # noqa: E402


def _batch(obs: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(np.asarray(v, dtype=np.float32))[None] for k, v in obs.items()}


@pytest.fixture(scope="module")
def decision() -> tuple[GeoPipeEnv, dict[str, np.ndarray]]:
    """A Random-v2 decision with several jobs in the window and a job running."""
    env = GeoPipeEnv(**ENV_IDS["bacepipe_env/GeoPipe-Random-v2"])
    for seed in range(50):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            if int(obs["queue"][:, 0].sum()) >= 3 and env.sim.running:
                return env, obs
            obs, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    raise AssertionError("no decision with 3 jobs waiting and one running")


def test_permuting_the_window_permutes_the_logits_and_keeps_the_value(decision):
    env, obs = decision
    torch.manual_seed(0)
    ext = SlotExtractor(env.observation_space, hidden=16)
    for p in ext.parameters():  # larger weights than the near-uniform init: a real test
        torch.nn.init.normal_(p, std=0.5)
    q = env.max_queue
    perm = np.random.default_rng(0).permutation(q)
    moved = dict(obs)
    for key in ("queue", "wait_preview"):  # the per-slot arrays move with their jobs
        moved[key] = obs[key][perm]
    moved["action_mask"] = np.concatenate([obs["action_mask"][:q][perm], obs["action_mask"][q:]])
    with torch.no_grad():
        a, b = ext(_batch(obs))[0], ext(_batch(moved))[0]
    n = env.n_actions
    assert a[:q].std() > 1e-3  # the slots score differently
    torch.testing.assert_close(b[:q], a[:q][perm], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(b[q:n], a[q:n])  # the wait logit
    torch.testing.assert_close(b[n:], a[n:], rtol=1e-5, atol=1e-6)  # the critic's input


def test_the_policy_routes_the_slot_scores_to_the_distribution(decision):
    env, obs = decision
    model = MaskablePPO(SlotPolicy, env, n_steps=32, batch_size=16, seed=0, device="cpu")
    assert isinstance(model.policy.action_net, torch.nn.Identity)
    with torch.no_grad():
        feats = model.policy.extract_features(_batch(obs))
        dist = model.policy.get_distribution(_batch(obs))
    logits = dist.distribution.logits[0]
    expected = torch.log_softmax(feats[0, : env.n_actions], dim=-1)
    torch.testing.assert_close(logits, expected)
    # near-uniform at initialisation (the score heads start at gain 0.01)
    assert float(expected.exp().max() - expected.exp().min()) < 0.05


def test_slot_needs_maskable_ppo_on_the_dict_observation():
    with pytest.raises(ValueError, match="slot"):
        TrainConfig(algo="ppo", policy="slot")
    with pytest.raises(ValueError, match="policy"):
        TrainConfig(policy="attention")


def test_a_tiny_slot_run_saves_a_model_that_loads_and_plays_legally(tmp_path):
    proc = run(
        "-m",
        "train.learn",
        *TINY,
        "--policy",
        "slot",
        "--slot-hidden",
        "16",
        "--logdir",
        str(tmp_path),
        "--run-name",
        "slot",
    )
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "slot"
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["train"]["policy"] == "slot" and saved["train"]["slot_hidden"] == 16
    agent = load_agent(f"maskable_ppo:{run_dir / 'model.zip'}")
    assert type(agent.model.policy).__name__ == "SlotPolicy"
    env = GeoPipeEnv(**ENV_IDS[ENV_ID])
    agent.check_env(env)
    results = evaluate(env, agent, [11, 12])
    assert all(r.illegal_actions == 0 for r in results)
    assert all(np.isfinite(r.avg_jct_h) and r.avg_jct_h > 0 for r in results)


@pytest.fixture(scope="module")
def announced_preempt() -> tuple[GeoPipeEnv, dict[str, np.ndarray]]:
    """An Online-Announced-Preempt-v0 decision with jobs waiting, running and announced."""
    env = GeoPipeEnv(**{**ENV_IDS["bacepipe_env/GeoPipe-Online-Announced-Preempt-v0"]}, n_jobs=60)
    for seed in range(20):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            waiting = int(obs["queue"][:, 0].sum())
            running = int(obs["running_jobs"][:, 0].sum())
            announced = int(obs["announced"][:, 0].sum())
            if waiting >= 2 and running >= 3 and announced >= 2:
                return env, obs
            obs, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    raise AssertionError("no decision with jobs waiting, running and announced")


def test_running_and_announced_jobs_move_with_their_rows(announced_preempt):
    """Permuting the preemption window's rows permutes the preempt logits; permuting the
    announced rows changes no logit; neither changes the critic's input."""
    env, obs = announced_preempt
    torch.manual_seed(1)
    ext = SlotExtractor(env.observation_space, hidden=16)
    for p in ext.parameters():
        torch.nn.init.normal_(p, std=0.5)
    q, w, n = env.max_queue, env.preempt_window, env.n_actions
    assert ext.n_running == w and ext.waits and n == q + 1 + w
    rng = np.random.default_rng(1)
    perm_r, perm_a = rng.permutation(w), rng.permutation(obs["announced"].shape[0])
    moved = dict(obs)
    moved["running_jobs"] = obs["running_jobs"][perm_r]
    moved["announced"] = obs["announced"][perm_a]
    moved["action_mask"] = np.concatenate(
        [obs["action_mask"][: q + 1], obs["action_mask"][q + 1 :][perm_r]]
    )
    with torch.no_grad():
        a, b = ext(_batch(obs))[0], ext(_batch(moved))[0]
    assert a[q + 1 : n].std() > 1e-3  # the running jobs score differently
    torch.testing.assert_close(b[: q + 1], a[: q + 1], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(b[q + 1 : n], a[q + 1 : n][perm_r], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(b[n:], a[n:], rtol=1e-5, atol=1e-6)
    # the announced jobs do reach the context: removing them changes the slot scores
    gone = dict(obs, announced=np.zeros_like(obs["announced"]))
    with torch.no_grad():
        c = ext(_batch(gone))[0]
    assert not torch.allclose(c[:q], a[:q])


def test_the_shipped_agents_network_is_unchanged_without_the_new_arrays(decision):
    env, _ = decision
    ext = SlotExtractor(env.observation_space, hidden=8)
    names = {name.split(".")[0] for name, _ in ext.named_parameters()}
    assert names == {
        "region_net",
        "context_net",
        "slot_net",
        "slot_score",
        "wait_net",
        "wait_score",
    }


@pytest.fixture(scope="module")
def copies() -> tuple[GeoPipeEnv, dict[str, np.ndarray]]:
    """A GeoPipe-Online-Elastic-v0 decision with several jobs in the window, some of which may
    start with more than one copy."""
    env = GeoPipeEnv(**{**ENV_IDS["bacepipe_env/GeoPipe-Online-Elastic-v0"], "n_jobs": 30})
    for seed in range(20):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            counts = obs["replicas"][:, :, 0]  # legal counts per slot
            if int(obs["queue"][:, 0].sum()) >= 3 and counts[:, 1:].sum() >= 2:
                return env, obs
            obs, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    raise AssertionError("no decision with 3 jobs waiting and counts of copies to choose")


def test_a_slot_scores_each_count_of_copies_and_moves_with_its_job(copies):
    """One logit per slot and count (slot-major, as the env's actions): permuting the window
    permutes the slots' blocks of logits, the counts inside a block stay, the value stays."""
    env, obs = copies
    torch.manual_seed(2)
    ext = SlotExtractor(env.observation_space, hidden=16)
    for p in ext.parameters():
        torch.nn.init.normal_(p, std=0.5)
    q, r, n = env.max_queue, env.replica_choices, env.n_actions
    assert ext.n_copies == r and ext.waits and n == q * r + 1
    perm = np.random.default_rng(2).permutation(q)
    moved = dict(obs)
    for key in ("queue", "wait_preview", "replicas"):
        moved[key] = obs[key][perm]
    place = obs["action_mask"][: q * r].reshape(q, r)
    moved["action_mask"] = np.concatenate([place[perm].ravel(), obs["action_mask"][q * r :]])
    with torch.no_grad():
        a, b = ext(_batch(obs))[0], ext(_batch(moved))[0]
    blocks = a[: q * r].reshape(q, r)
    assert blocks[0].std() > 1e-3  # the counts of one slot score differently
    torch.testing.assert_close(b[: q * r].reshape(q, r), blocks[perm], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(b[q * r : n], a[q * r : n])  # the wait logit
    torch.testing.assert_close(b[n:], a[n:], rtol=1e-5, atol=1e-6)
