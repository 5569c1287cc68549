"""The registered environments pass Gymnasium's and Stable-Baselines3's checkers, registration
is idempotent, and the ids work from a fresh interpreter outside the source tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import bacepipe_env
from bacepipe_env.envs import ENV_IDS, MAX_EPISODE_STEPS, GeoPipeEnv, register_envs

# Design choices the checkers only warn about: the Box spaces are unbounded above (features
# are O(1) but not clipped), grid's price_now is unbounded below (hourly prices go negative)
# and the (2, K, K) bandwidth tensor looks like an image to SB3.
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*maximum value is infinity.*"),
    pytest.mark.filterwarnings("ignore:.*minimum value is -infinity.*"),
    pytest.mark.filterwarnings("ignore:.*image.*"),
    pytest.mark.filterwarnings("ignore:.*unconventional shape.*"),
    pytest.mark.filterwarnings("ignore:.*minimal resolution.*"),
]

MODES = {  # the ids wait by default: the no-wait modes take the action away
    "dict": {},
    "flat": {"observation": "flat"},
    "masked": {"observation": "masked"},
    "dict-nowait": {"allow_wait": False},
    "flat-nowait": {"observation": "flat", "allow_wait": False},
}
EXPECTED_SCENARIO = {
    "bacepipe_env/GeoPipe-v2": "paper",
    "bacepipe_env/GeoPipe-Fig1-v2": "fig1",
    "bacepipe_env/GeoPipe-Random-v2": "random",
    "bacepipe_env/GeoPipe-Online-v1": "online",
    "bacepipe_env/GeoPipe-Online-Preempt-v1": "online",
    "bacepipe_env/GeoPipe-Online-Announced-v0": "online",
    "bacepipe_env/GeoPipe-Online-Announced-Preempt-v0": "online",
    "bacepipe_env/GeoPipe-Online-Deadline-v0": "online",
    "bacepipe_env/GeoPipe-Online-Announced-Deadline-v0": "online",
    "bacepipe_env/GeoPipe-Online-Elastic-v0": "online",
}


def _place_actions(env_id: str, max_queue: int) -> int:
    """One action per window slot, or per slot and count of copies (``replica_choices``)."""
    return max_queue * max(1, ENV_IDS[env_id].get("replica_choices", 0))


def test_the_ids_are_registered_on_import():
    assert set(ENV_IDS) == set(EXPECTED_SCENARIO) == set(MAX_EPISODE_STEPS)
    for env_id in ENV_IDS:
        assert env_id in gym.registry
        spec = gym.spec(env_id)
        assert spec.entry_point == "bacepipe_env.envs.geopipe:GeoPipeEnv"
        assert spec.kwargs == ENV_IDS[env_id]
        # the step limit is Gymnasium's, enforced by TimeLimit, not an env argument
        assert spec.max_episode_steps == MAX_EPISODE_STEPS[env_id] > 0
        assert "max_steps" not in spec.kwargs


def _wrappers(env):
    while isinstance(env, gym.Wrapper):
        yield env
        env = env.env


@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_registered_id_builds_its_scenario(env_id):
    env = gym.make(env_id)
    assert isinstance(env.unwrapped, GeoPipeEnv)
    env.reset(seed=0)
    assert env.unwrapped.scenario.name == EXPECTED_SCENARIO[env_id]
    # None: the window holds the whole job budget (the generator's max_jobs)
    expected_queue = ENV_IDS[env_id]["max_queue"] or env.unwrapped.generator.max_jobs
    assert env.unwrapped.max_queue == expected_queue
    assert env.unwrapped.max_steps is None  # the TimeLimit wrapper truncates instead
    assert isinstance(env, gym.wrappers.TimeLimit) or any(
        isinstance(w, gym.wrappers.TimeLimit) for w in _wrappers(env)
    )
    assert env.spec.max_episode_steps == MAX_EPISODE_STEPS[env_id]
    # every id lets the agent wait: the action after the window (then the preempt actions)
    preempt = ENV_IDS[env_id].get("preempt_window", 0)
    place = _place_actions(env_id, env.unwrapped.max_queue)
    assert env.action_space == gym.spaces.Discrete(place + 1 + preempt)
    env.close()


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_gymnasium_env_checker(env_id, mode):
    kwargs = MODES[mode]
    env = gym.make(env_id, **kwargs)
    # The render check needs bacepipe_env.envs.render (tested in test_env_render.py and in
    # test_gymnasium_env_checker_full below); here the API alone.
    gym_check_env(env.unwrapped, skip_render_check=True)
    waits = kwargs.get("allow_wait", ENV_IDS[env_id]["allow_wait"])
    preempt = ENV_IDS[env_id].get("preempt_window", 0)
    # the wait action is there with allow_wait, or to decline a preemption
    n = _place_actions(env_id, env.unwrapped.max_queue) + (1 if waits or preempt else 0) + preempt
    assert env.action_space == gym.spaces.Discrete(n)
    observation = MODES[mode].get("observation")
    if observation == "flat":
        assert isinstance(env.observation_space, gym.spaces.Box)
        assert len(env.observation_space.shape) == 1
    elif observation == "masked":  # RLlib's action-masking layout
        assert set(env.observation_space.spaces) == {"observations", "action_mask"}
        assert env.observation_space["action_mask"].shape == (n,)
    else:
        assert isinstance(env.observation_space, gym.spaces.Dict)
        grid = {"grid"} if ENV_IDS[env_id].get("grid_features") else set()
        if ENV_IDS[env_id].get("fault_features"):
            grid |= {"region_faults", "link_faults"}
        if ENV_IDS[env_id].get("running_features"):
            grid |= {"running", "release", "wait_preview"}
        if preempt:
            grid |= {"running_jobs"}
        if ENV_IDS[env_id].get("announce_window"):
            grid |= {"announced"}
        if ENV_IDS[env_id].get("replica_choices"):
            grid |= {"replicas"}
        assert set(env.observation_space.spaces) == {
            "regions",
            "bandwidth",
            "queue",
            "summary",
            "action_mask",
            *grid,
        }
        assert env.observation_space["action_mask"] == gym.spaces.MultiBinary(n)
    env.close()


@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_gymnasium_env_checker_full(env_id):
    """The default check_env, render modes included (with matplotlib here, metadata lists
    ansi and rgb_array; test_checker_passes_without_matplotlib covers a base install)."""
    assert GeoPipeEnv.metadata["render_modes"] == ["ansi", "rgb_array"]
    gym_check_env(gym.make(env_id).unwrapped)


# A base install (no viz extra) in a fresh interpreter: a meta-path finder refuses matplotlib
# before bacepipe_env is imported, as if it were not installed. check_env renders every mode
# metadata lists, so rgb_array must not be listed there; asking for it is accepted (SB3's
# make_vec_env does by default) and a frame is one line.
_NO_MATPLOTLIB = """
import json, sys, warnings

class NoMatplotlib:
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoMatplotlib())
import gymnasium as gym
from gymnasium.utils.env_checker import check_env

import bacepipe_env
from bacepipe_env.envs import ENV_IDS, GeoPipeEnv

rows = []
for env_id in ENV_IDS:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(gym.make(env_id).unwrapped)  # render check included
    rows.append([env_id, "ok", len(caught)])
    print(env_id, "ok", len(caught), file=sys.stderr)
# SB3's make_vec_env asks for rgb_array by default: the env is made and plays, and only a
# frame is the one-line error
from stable_baselines3.common.env_util import make_vec_env

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # gymnasium warns that the mode is not listed
    venv = make_vec_env("bacepipe_env/GeoPipe-v2", n_envs=1, seed=0)
venv.reset()
venv.step([int(venv.env_method("action_masks")[0].argmax())])
try:
    venv.envs[0].unwrapped.render()
    error = ""
except Exception as exc:
    error = f"{type(exc).__name__}: {exc}"
print(json.dumps({
    "file": bacepipe_env.__file__,
    "render_modes": GeoPipeEnv.metadata["render_modes"],
    "matplotlib_loaded": "matplotlib" in sys.modules,
    "rows": rows,
    "vec_render_mode": venv.envs[0].unwrapped.render_mode,
    "error": error,
}))
"""


def test_checker_passes_without_matplotlib():
    root = os.path.dirname(os.path.dirname(bacepipe_env.__file__))
    # run in the package's checkout, so the interpreter imports this copy of bacepipe_env
    out = _run_fresh(_NO_MATPLOTLIB, root)
    assert out["file"] == bacepipe_env.__file__
    assert "rgb_array" not in out["render_modes"] and "ansi" in out["render_modes"]
    assert not out["matplotlib_loaded"]
    assert [row[:2] for row in out["rows"]] == [[env_id, "ok"] for env_id in ENV_IDS]
    assert out["vec_render_mode"] == "rgb_array"  # what make_vec_env asked for, accepted
    assert out["error"].startswith("BacepipeError: ") and "\n" not in out["error"]
    assert "bacepipe-env[viz]" in out["error"]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_sb3_env_checker(env_id, mode):
    import torch
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    torch.set_num_threads(1)
    env = gym.make(env_id, **MODES[mode])
    sb3_check_env(env, warn=True, skip_render_check=True)
    env.close()


def test_registering_again_is_harmless():
    specs = {env_id: gym.spec(env_id) for env_id in ENV_IDS}
    n_registered = len(gym.registry)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # gymnasium warns when an id is overridden
        register_envs()
        register_envs()
        bacepipe_env.envs.register_envs()
    assert len(gym.registry) == n_registered
    for env_id, spec in specs.items():
        assert gym.spec(env_id) is spec
        assert gym.spec(env_id).kwargs == ENV_IDS[env_id]
    env = gym.make("bacepipe_env/GeoPipe-Fig1-v2")
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert info["action_mask"].any()


def _run_fresh(script: str, cwd) -> dict:
    """Run ``script`` in a new interpreter in ``cwd`` (not the source tree) and parse the JSON
    it prints last."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["OMP_NUM_THREADS"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # a fresh interpreter
def test_make_with_module_prefix_in_a_fresh_process(tmp_path):
    out = _run_fresh(
        """
        import json, sys
        import gymnasium as gym
        assert "bacepipe_env" not in sys.modules
        env = gym.make("bacepipe_env:bacepipe_env/GeoPipe-v2")
        obs, info = env.reset(seed=0)
        steps, done = 0, False
        while not done:
            a = int(info["action_mask"].argmax())
            obs, r, term, trunc, info = env.step(a)
            steps += 1
            done = term or trunc
        import bacepipe_env
        print(json.dumps({
            "file": bacepipe_env.__file__,
            "contains": bool(env.observation_space.contains(obs)),
            "terminated": bool(term),
            "steps": steps,
            "jct": info["episode_avg_jct_s"],
        }))
        """,
        tmp_path,
    )
    assert out["file"] == bacepipe_env.__file__  # the installed package, not a stray copy
    assert not out["file"].startswith(str(tmp_path))
    assert out["contains"] and out["terminated"]
    assert out["steps"] == 8  # the paper scenario's eight jobs, one placement each
    assert out["jct"] > 0


@pytest.mark.slow  # a fresh interpreter
def test_make_vec_sync_in_a_fresh_process(tmp_path):
    out = _run_fresh(
        """
        import json
        import gymnasium as gym
        import numpy as np
        import bacepipe_env  # registers the ids
        venv = gym.make_vec("bacepipe_env/GeoPipe-v2", num_envs=2, vectorization_mode="sync")
        obs, infos = venv.reset(seed=[0, 1])
        rng = np.random.default_rng(0)
        illegal = 0
        episodes = 0
        shapes = [list(infos["action_mask"].shape)]
        for _ in range(40):
            masks = infos["action_mask"]
            actions = np.array([
                rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks
            ])
            obs, rew, term, trunc, infos = venv.step(actions)
            if "illegal_action" in infos:
                illegal += int(np.sum(infos["illegal_action"] & infos["_illegal_action"]))
            episodes += int(np.sum(term | trunc))
        print(json.dumps({
            "illegal": illegal,
            "episodes": episodes,
            "shapes": shapes,
            "obs_ok": bool(venv.observation_space.contains(obs)),
        }))
        """,
        tmp_path,
    )
    assert out["shapes"] == [[2, 17]]  # 16 slots and the wait action
    assert out["illegal"] == 0
    assert out["episodes"] >= 2  # paper episodes are 8 steps: both envs finished some
    assert out["obs_ok"]


def test_flat_and_dict_spaces_agree_in_size():
    d = GeoPipeEnv("fig1", max_queue=4)
    f = GeoPipeEnv("fig1", max_queue=4, observation="flat")
    assert f.observation_space.shape == (gym.spaces.flatdim(d.observation_space),)
    obs, _ = f.reset(seed=0)
    assert obs.dtype == np.float32
