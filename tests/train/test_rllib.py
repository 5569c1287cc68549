"""docs/rllib.md's example runs as written: PPO on RLlib's new API stack with its
action-masking RLModule on ``GeoPipeEnv(observation="masked")``.

The page's marked code blocks are executed in order in one namespace: ``init`` (a local Ray
instance, in the fixture), ``build``, ``train`` (one tiny iteration), ``rollout`` (a greedy
episode of GeoPipe-v2) and ``stop``. The checks come from outside the page: the result's
counters, the module's weights before and after, and each greedy action against the
environment's own ``action_masks()``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("ray.rllib")
torch = pytest.importorskip("torch")

import ray  # noqa: E402
from ray.rllib.utils.metrics import (  # noqa: E402
    ENV_RUNNER_RESULTS,
    LEARNER_RESULTS,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED,
)

pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parents[2] / "docs" / "rllib.md"
# the name marker may be followed by other comment lines (the docs-block test's "not run")
BLOCK = re.compile(r"<!-- rllib-test: (\w+) -->\n(?:<!--[^\n]*-->\n)*```python\n(.*?)```", re.S)


def doc_blocks() -> dict[str, str]:
    """The page's marked Python blocks, by name."""
    return dict(BLOCK.findall(DOC.read_text(encoding="utf-8")))


class MaskAudit(gym.Wrapper):
    """Records, for every step, whether the action was legal by the environment's own mask
    (read before the step) and whether the environment had to replace it."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.legal: list[bool] = []
        self.replaced: list[bool] = []
        self.terminated = False

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Check ``action`` against ``action_masks()``, then step."""
        mask = self.env.unwrapped.action_masks()
        self.legal.append(bool(mask[int(action)]))
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.replaced.append(bool(info["illegal_action"]))
        self.terminated = terminated
        return obs, reward, terminated, truncated, info


@pytest.fixture
def page(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The namespace the page's blocks run in, after its ``init`` block has started a local
    Ray instance; Ray is shut down afterwards, whatever the test did."""
    # no usage report from a test (the machine has no network anyway), unless asked for
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", os.environ.get("RAY_USAGE_STATS_ENABLED", "0"))
    ns: dict[str, Any] = {}
    exec(doc_blocks()["init"], ns)
    try:
        yield ns
    finally:
        ray.shutdown()


def test_the_page_has_the_blocks_in_order() -> None:
    """The page marks the five blocks, in the order the example runs them."""
    assert list(doc_blocks()) == ["init", "build", "train", "rollout", "stop"]


def _weights(module: Any) -> torch.Tensor:
    """The module's parameters as one flat copy."""
    return torch.nn.utils.parameters_to_vector(module.parameters()).detach().clone()


def test_ppo_with_action_masking_trains_and_plays_legal_actions(page: dict[str, Any]) -> None:
    """One PPO iteration samples and trains, and the trained module's greedy actions are
    legal at every step of a full GeoPipe-v2 episode."""
    blocks, ns = doc_blocks(), page
    assert ray.is_initialized()
    exec(blocks["build"], ns)
    algo = ns["algo"]
    module = algo.get_module()
    # the env's masked Dict is the module's space; its networks see the features alone
    env_space = ns["make_env"]({}).observation_space
    assert module.observation_space == env_space
    assert set(env_space.spaces) == {"observations", "action_mask"}
    before = _weights(module)

    exec(blocks["train"], ns)
    result = ns["result"]
    sampled = result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED]
    assert sampled >= 64  # the train batch (RLlib completes it)
    assert result[NUM_ENV_STEPS_SAMPLED_LIFETIME] == sampled  # the first iteration
    learner = result[LEARNER_RESULTS]["default_policy"]
    assert learner[NUM_MODULE_STEPS_TRAINED] > 0
    assert np.isfinite(learner["policy_loss"])
    after = _weights(algo.get_module())
    assert not torch.equal(before, after)  # the update reached the sampling module

    audits: list[MaskAudit] = []

    def audited_env(env_config: dict[str, Any]) -> MaskAudit:
        """The page's env, audited."""
        audits.append(MaskAudit(make_env(env_config)))
        return audits[-1]

    make_env = ns["make_env"]
    ns["make_env"] = audited_env  # the rollout block builds its env through this name
    exec(blocks["rollout"], ns)
    (audit,) = audits
    assert audit.terminated  # a full episode: every job finished
    assert len(audit.legal) >= 8  # GeoPipe-v2's eight jobs: one placement each at least
    assert all(audit.legal), audit.legal
    assert not any(audit.replaced)
    assert ns["info"]["episode_jobs_completed"] == 8

    # the masked logits: illegal actions are pushed to RLlib's FLOAT_MIN, legal ones are not
    env = make_env({})
    obs, _ = env.reset(seed=1)
    batch = {ns["Columns"].OBS: {k: torch.as_tensor(v)[None] for k, v in obs.items()}}
    with torch.no_grad():
        out = ns["module"].forward_inference(batch)
    logits = out[ns["Columns"].ACTION_DIST_INPUTS][0].numpy()
    legal = env.unwrapped.action_masks()
    assert 0 < legal.sum() < legal.size  # the check below means something
    assert np.all(logits[~legal] < -1e30) and np.all(logits[legal] > -1e30)

    exec(blocks["stop"], ns)
    assert not ray.is_initialized()
