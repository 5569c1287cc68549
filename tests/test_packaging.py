"""The package as a dependency: clean imports, lazy Gymnasium registration, the version, the
wheel's contents, and learned policies injected through the loader registry.

Subprocesses start from a scratch folder (not the source tree), without PYTHONPATH, so that
what they import is the installed package; several run side by side to keep this file fast.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import bacepipe_env
from bacepipe_env import learned
from bacepipe_env.errors import BacepipeError

ROOT = Path(__file__).resolve().parents[1]
HINT = "pip install 'bacepipe-env[train]'"
IDS = (
    "bacepipe_env/GeoPipe-v2",
    "bacepipe_env/GeoPipe-Fig1-v2",
    "bacepipe_env/GeoPipe-Random-v2",
    "bacepipe_env/GeoPipe-Online-v1",
    "bacepipe_env/GeoPipe-Online-Preempt-v1",
    "bacepipe_env/GeoPipe-Online-Announced-v0",
    "bacepipe_env/GeoPipe-Online-Announced-Preempt-v0",
    "bacepipe_env/GeoPipe-Online-Elastic-v0",
    "bacepipe_env/GeoPipe-Online-Deadline-v0",
    "bacepipe_env/GeoPipe-Online-Announced-Deadline-v0",
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["OMP_NUM_THREADS"] = "1"
    return env


def _start(args: Sequence[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        list(args),
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run_all(
    commands: Sequence[Sequence[str]], cwd: Path
) -> list[subprocess.CompletedProcess[str]]:
    """Run the commands two at a time (the machine has two cores), results in order."""
    done: list[subprocess.CompletedProcess[str]] = []
    for i in range(0, len(commands), 2):
        procs = [(c, _start(c, cwd)) for c in commands[i : i + 2]]
        for cmd, proc in procs:
            out, err = proc.communicate(timeout=180)
            done.append(subprocess.CompletedProcess(list(cmd), proc.returncode, out, err))
    return done


def _python(script: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(script)]


def _last_json(proc: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert proc.returncode == 0, proc.stderr
    data: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return data


def _bacepipe() -> str:
    script = Path(sys.executable).with_name("bacepipe")
    found = str(script) if script.is_file() else shutil.which("bacepipe")
    if found is None:
        pytest.skip("the bacepipe console script is not installed")
    return found


# ------------------------------------------------------------------------- clean imports


def test_core_scheduling_and_experiments_load_neither_gymnasium_nor_torch(tmp_path: Path) -> None:
    script = """
        import json, sys
        import {module}
        heavy = ("gymnasium", "torch", "stable_baselines3", "sb3_contrib", "tensorboard")
        print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
    """
    modules = [
        "bacepipe_env.core",
        "bacepipe_env.scheduling",
        "bacepipe_env.experiments",
        "bacepipe_env.cli",
        "bacepipe_env.learned",
        "bacepipe_env.train",  # evaluate_model imports gymnasium only when it plays
    ]
    procs = _run_all([_python(script.format(module=m)) for m in modules], tmp_path)
    for module, proc in zip(modules, procs):
        assert proc.returncode == 0, (module, proc.stderr)
        assert json.loads(proc.stdout.strip().splitlines()[-1]) == [], module


# ------------------------------------------------------------ registration, any import order

_ORDERS = {
    "module prefix in gym.make": """
        import gymnasium as gym
        assert "bacepipe_env" not in sys.modules
        env = gym.make("bacepipe_env:bacepipe_env/GeoPipe-v2")
    """,
    "bacepipe_env, then gymnasium": """
        import bacepipe_env
        assert "gymnasium" not in sys.modules
        import gymnasium as gym
        env = gym.make("bacepipe_env/GeoPipe-v2")
    """,
    "gymnasium, then bacepipe_env": """
        import gymnasium as gym
        import bacepipe_env
        env = gym.make("bacepipe_env/GeoPipe-v2")
    """,
    "bacepipe_env.envs, which imports gymnasium half-way": """
        import bacepipe_env.envs
        import gymnasium as gym
        env = gym.make("bacepipe_env/GeoPipe-v2")
    """,
    "bacepipe_env, then a gymnasium submodule": """
        import bacepipe_env
        import gymnasium.spaces
        import gymnasium as gym
        env = gym.make("bacepipe_env/GeoPipe-v2")
    """,
}


@pytest.mark.parametrize("order", list(_ORDERS))
def test_every_import_order_registers_the_ids(order: str, tmp_path: Path) -> None:
    script = (
        "import json, sys\n"
        + textwrap.dedent(_ORDERS[order])
        + textwrap.dedent(
            """
            from importlib.machinery import SourceFileLoader
            obs, info = env.reset(seed=0)
            env.step(int(info["action_mask"].argmax()))
            print(json.dumps({
                "ids": [i for i in gym.registry if i.startswith("bacepipe_env/")],
                "contains": bool(env.observation_space.contains(obs)),
                "hooks": [
                    type(f).__name__ for f in sys.meta_path if "Gymnasium" in type(f).__name__
                ],
                "real_loader": isinstance(gym.__spec__.loader, SourceFileLoader)
                    and gym.__loader__ is gym.__spec__.loader,
            }))
            """
        )
    )
    # -W error: the hook warns (RuntimeWarning) when registering fails
    out = _last_json(_run_all([[sys.executable, "-W", "error", "-c", script]], tmp_path)[0])
    assert sorted(out["ids"]) == sorted(IDS)  # type: ignore[arg-type]
    assert out["contains"] is True
    assert out["hooks"] == []  # the post-import hook removed itself (or was never needed)
    assert out["real_loader"] is True  # gymnasium keeps its own loader


def test_make_vec_from_a_fresh_process(tmp_path: Path) -> None:
    """Async workers started with spawn import nothing of ours up front."""
    script = """
        import json
        import bacepipe_env
        import gymnasium as gym

        if __name__ == "__main__":
            envs = gym.make_vec(
                "bacepipe_env/GeoPipe-Fig1-v2",
                num_envs=2,
                vectorization_mode="async",
                vector_kwargs={"context": "spawn"},
            )
            obs, info = envs.reset(seed=0)
            envs.close()
            print(json.dumps({"n": int(info["action_mask"].shape[0])}))
    """
    path = tmp_path / "vec.py"
    path.write_text(textwrap.dedent(script))
    out = _last_json(_run_all([[sys.executable, str(path)]], tmp_path)[0])
    assert out == {"n": 2}


def test_registering_again_is_harmless() -> None:
    gym = pytest.importorskip("gymnasium")
    specs = {i: gym.spec(i) for i in IDS}
    bacepipe_env.register_envs()
    bacepipe_env.register_envs()
    assert {i: gym.spec(i) for i in IDS} == specs


# ------------------------------------------------------------------------------ the version


def test_version_from_the_command_and_python_m(tmp_path: Path) -> None:
    script, module = _run_all(
        [[_bacepipe(), "--version"], [sys.executable, "-m", "bacepipe_env", "--version"]],
        tmp_path,
    )
    for proc in (script, module):
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == f"bacepipe {bacepipe_env.__version__}\n"
    assert bacepipe_env.__version__ == "0.2.0"
    # the installed metadata carries the same version (read outside the checkout, where an
    # old bacepipe_env.egg-info may lie)
    (meta,) = _run_all(
        [_python("import importlib.metadata as m; print(m.version('bacepipe-env'))")], tmp_path
    )
    assert meta.stdout.strip() == bacepipe_env.__version__, meta.stderr


def test_python_m_bacepipe_env_is_the_bacepipe_command(tmp_path: Path) -> None:
    script, module = _run_all(
        [[_bacepipe(), "scenarios"], [sys.executable, "-m", "bacepipe_env", "scenarios"]],
        tmp_path,
    )
    assert script.returncode == module.returncode == 0, (script.stderr, module.stderr)
    assert script.stdout == module.stdout and "paper" in script.stdout


# -------------------------------------------------------------------------------- the wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    """The wheel built from a copy of the sources (nothing is written into the checkout)."""
    pytest.importorskip("setuptools", minversion="77")  # the dev extra has it
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "bacepipe_env", src / "bacepipe_env", ignore=shutil.ignore_patterns("__pycache__")
    )
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"),
            *("-w", str(tmp / "dist"), str(src)),
        ],
        cwd=tmp,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (path,) = (tmp / "dist").glob("*.whl")
    with zipfile.ZipFile(path) as zf:
        yield zf


def test_wheel_installs_only_bacepipe_names(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    top = {n.split("/")[0] for n in names}
    dist_info = f"bacepipe_env-{bacepipe_env.__version__}.dist-info"
    assert top == {"bacepipe_env", dist_info}, top
    assert all(t.startswith("bacepipe") for t in top)
    # the learned agents and the training commands ship inside the package
    for module in ("train/sb3.py", "train/learn.py", "train/compare.py", "learned.py"):
        assert f"bacepipe_env/{module}" in names, module
    assert "bacepipe_env/py.typed" in names
    assert "bacepipe_env/__main__.py" in names
    assert {f"bacepipe_env/scenarios/data/{s}.json" for s in ("paper", "fig1")} <= set(names)
    # the prose of `bacepipe reproduce`, read at run time
    assert "bacepipe_env/experiments/templates/reproduction.md" in names
    # the measured runs of docs/validation.md, their licence and the page's prose
    assert "bacepipe_env/experiments/templates/validation.md" in names
    sailor = ("sailor-validation-runs.csv", "sailor-profiles.csv", "sailor-network-model.json")
    assert {f"bacepipe_env/data/sailor/{f}" for f in (*sailor, "LICENSE.txt")} <= set(names)
    # the pretrained agents: one model and its settings per registered env
    for slug in ("geopipe", "geopipe-fig1", "geopipe-random", "geopipe-online"):
        assert {f"bacepipe_env/pretrained/{slug}.{ext}" for ext in ("zip", "json")} <= set(names)


def test_wheel_metadata_licence_urls_and_entry_points(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    (licence,) = [n for n in names if n.endswith("/LICENSE")]
    text = wheel.read(licence).decode()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert text == (ROOT / "LICENSE").read_text()
    (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    meta = wheel.read(meta_name).decode()
    assert "\nLicense-Expression: Apache-2.0\n" in meta
    assert "\nLicense-File: LICENSE\n" in meta
    assert f"\nVersion: {bacepipe_env.__version__}\n" in meta
    for label in ("Homepage", "Documentation", "Issues"):
        assert f"\nProject-URL: {label}, https://github.com/bacepipe-env/bacepipe-env" in meta
    (ep_name,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    entry_points = wheel.read(ep_name).decode()
    assert "bacepipe = bacepipe_env.cli:run" in entry_points
    assert f"[{learned.AGENT_ENTRY_POINTS}]" in entry_points
    for command in ("learn", "compare", "imitate", "maskable_ppo", "ppo", "dqn"):
        assert f"{command} = bacepipe_env.train.{command}:main" in entry_points


# ---------------------------------------------------------------- learned-policy injection


def _block(*modules: str) -> str:
    """Python that makes importing ``modules`` fail, as when they are not installed."""
    return "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)


def _cli(prelude: str, *argv: str) -> list[str]:
    return _python(
        prelude + "from bacepipe_env.cli import main\n" + f"sys.exit(main({list(argv)!r}))\n"
    )


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def test_learned_policy_without_a_loader_is_one_line(tmp_path: Path) -> None:
    """No loader registered (the training module missing), and SB3 and torch missing: either
    way `bacepipe compare` and `bacepipe train` say which extra to install, in one line."""
    model = tmp_path / "model.zip"
    model.write_bytes(b"")
    compare = ("compare", "--seeds", "1", "--policies", f"bace-pipe,maskable_ppo:{model}")
    no_loader = _block("bacepipe_env.train")
    no_sb3 = _block("sb3_contrib", "stable_baselines3", "torch")
    empty, missing_sb3, train_missing, train_no_torch = _run_all(
        [
            _cli(no_loader, *compare, "--out", str(tmp_path / "a")),
            _cli(no_sb3, *compare, "--out", str(tmp_path / "b")),
            _cli(no_loader, "train", "learn", "--total-timesteps", "8"),
            _cli(no_sb3, "train", "learn", "--total-timesteps", "8"),
        ],
        tmp_path,
    )
    line = _one_line(empty)
    assert line == (
        f"bacepipe: error: maskable_ppo:{model}: learned policies need the train extra: {HINT}"
    )
    assert HINT in _one_line(missing_sb3)
    assert HINT in _one_line(train_missing)
    line = _one_line(train_no_torch)
    assert line.startswith("bacepipe: error: bacepipe train learn needs the train extra"), line
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.fixture
def empty_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(learned, "_loaders", {})
    monkeypatch.setattr(learned, "_discovered", True)


@pytest.mark.usefixtures("empty_registry")
def test_registry_empty_then_a_registered_loader() -> None:
    with pytest.raises(BacepipeError, match=r"need the train extra: pip install"):
        learned.load_learned("ppo:model.zip")

    class Fake:
        name, placement, env_kwargs = "fake:x", "pathfinder", {}

        def predict(self, observation: object, info: object = None, **_: object) -> int:
            return 0

        def reset(self, seed: int | None = None) -> None:
            pass

        def check_env(self, env: object) -> None:
            pass

    learned.register_learned_loader("fake", lambda spec: Fake())
    agent = learned.load_learned("fake:x")
    assert isinstance(agent, learned.LearnedAgent) and agent.name == "fake:x"
    assert learned.learned_prefixes() == ["fake"]
    with pytest.raises(BacepipeError, match=r"unknown algorithm 'a2c'.*fake"):
        learned.load_learned("a2c:model.zip")
    with pytest.raises(ValueError, match="prefix"):
        learned.register_learned_loader("a:b", lambda spec: Fake())


def test_installed_entry_points_register_the_sb3_loaders(monkeypatch: pytest.MonkeyPatch) -> None:
    from bacepipe_env.train.sb3 import load_agent

    def mine(spec: str) -> learned.LearnedAgent:
        raise BacepipeError("mine")

    monkeypatch.setattr(learned, "_loaders", {})
    monkeypatch.setattr(learned, "_discovered", False)
    learned.register_learned_loader("ppo", mine)  # registered here: the entry point keeps off
    assert learned.learned_prefixes() == ["dqn", "maskable_ppo", "ppo", "pretrained"]
    assert learned._loaders["maskable_ppo"] is load_agent
    with pytest.raises(BacepipeError, match="mine"):
        learned.load_learned("ppo:model.zip")
    assert set(learned.train_commands()) == {
        "learn",
        "compare",
        "imitate",
        "maskable_ppo",
        "ppo",
        "dqn",
    }


def test_checkout_aliases_are_the_installed_objects() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import agents
    import agents.sb3
    import train.compare
    import train.config
    from bacepipe_env.train import compare, config, sb3

    assert agents.load_agent is agents.sb3.load_agent is sb3.load_agent
    assert agents.AgentLoadError is sb3.AgentLoadError
    assert train.config.TrainConfig is config.TrainConfig
    assert train.compare.learned_runs is compare.learned_runs
    assert sb3.layout_kwargs is learned.layout_kwargs


def test_bacepipe_train_has_the_flags_of_python_m_train() -> None:
    pytest.importorskip("torch")
    names = ("learn", "compare")
    procs = _run_all(
        [*([sys.executable, "-m", f"train.{n}", "--help"] for n in names)]
        + [[_bacepipe(), "train", n, "--help"] for n in names],
        ROOT,  # `python -m train.<name>` runs from a checkout
    )
    for name, theirs, ours in zip(names, procs[:2], procs[2:]):
        assert ours.returncode == theirs.returncode == 0, (ours.stderr, theirs.stderr)
        assert f"usage: bacepipe train {name}" in ours.stdout
        assert f"usage: python -m train.{name}" in theirs.stdout
        flags = {w for w in ours.stdout.split() if w.startswith("--")}
        assert flags and flags == {w for w in theirs.stdout.split() if w.startswith("--")}
