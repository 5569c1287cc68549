"""Plugins from outside the package: a module named with --plugin, and a package installed into
a fresh venv with a `bacepipe_env.plugins` entry point, both run through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: A longest-job-first ordering and a small world of the user's own, registered at import.
PLUGIN = textwrap.dedent(
    '''
    """A user's plugin: a policy and an environment id."""
    from gymnasium.envs.registration import register, registry

    from bacepipe_env.policies.base import Ordering
    from bacepipe_env.policies.registry import PolicyInfo, register_policy


    class LJFOrdering(Ordering):
        name = "ljf"

        def pick(self, queue, legal):
            e1 = queue.single_gpu_exec
            return max(legal, key=lambda i: (e1[i], -i))


    register_policy(PolicyInfo("ljf", "Longest E(1) first", lambda s: LJFOrdering(), "pathfinder"))
    if "myworld/Small-v0" not in registry:
        register(
            id="myworld/Small-v0",
            entry_point="bacepipe_env.envs.geopipe:GeoPipeEnv",
            kwargs={"scenario": "paper", "max_queue": 16, "n_jobs": 4},
        )
    '''
)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "BACEPIPE_PLUGINS"}
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def _run(python: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-m", "bacepipe_env.cli", *args],
        capture_output=True,
        text=True,
        env=_env(**env),
        timeout=300,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("plugin")
    (folder / "ljf_plugin.py").write_text(PLUGIN)
    return folder


def test_without_the_plugin_the_policy_is_unknown(plugin_dir: Path) -> None:
    argv = ["simulate", "--scenario", "paper", "--policy", "ljf"]
    proc = _run(sys.executable, *argv, PYTHONPATH=str(plugin_dir))
    assert proc.returncode == 2 and "unknown policy" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1


def test_a_named_plugin_plays_in_compare_and_evaluate(plugin_dir: Path) -> None:
    path = {"PYTHONPATH": str(plugin_dir)}
    proc = _run(
        sys.executable,
        "compare",
        "--plugin",
        "ljf_plugin",
        "--scenario",
        "paper",
        "--policies",
        "sjf,ljf",
        "--seeds",
        "2",
        **path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ljf" in proc.stdout
    # the user's env id and --env-kwargs, the plugin given after the command's flags
    proc = _run(
        sys.executable,
        "evaluate",
        "--env-id",
        "myworld/Small-v0",
        "--policies",
        "ljf,sjf",
        "--episodes",
        "2",
        "--first-seed",
        "0",
        "--env-kwargs",
        '{"n_jobs": 3}',
        "--json",
        "-",
        "--plugin=ljf_plugin",
        **path,
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    assert [r["policy"] for r in rows] == ["ljf", "ljf", "sjf", "sjf"]
    # the same episodes from Python: the env resets to the 3-job scenario, the simulator runs
    # the plugin's policy on it
    code = textwrap.dedent(
        """
        import json, gymnasium as gym, bacepipe_env, ljf_plugin
        from bacepipe_env.policies.registry import make_policy
        out = []
        for seed in (0, 1):
            env = gym.make("myworld/Small-v0", n_jobs=3)
            env.reset(seed=seed)
            result = make_policy("ljf", seed=seed).simulate(env.unwrapped.scenario)
            out.append(result.avg_jct / 3600)
        print(json.dumps(out))
        """
    )
    expected = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(**path), check=True
    )
    assert [r["avg_jct_h"] for r in rows[:2]] == json.loads(expected.stdout)


def test_a_plugin_env_id_trains_in_subprocess_workers(plugin_dir: Path, tmp_path: Path) -> None:
    """`train learn --n-envs 2` makes the envs in forkserver workers, which start afresh: they
    must load the plugin to know the user's id (BACEPIPE_PLUGINS, set by --plugin)."""
    proc = _run(
        sys.executable,
        "train",
        "learn",
        "--plugin",
        "ljf_plugin",
        "--env-id",
        "myworld/Small-v0",
        "--n-envs",
        "2",
        *("--total-timesteps", "128", "--n-steps", "32", "--batch-size", "32"),
        *("--n-epochs", "1", "--eval-freq", "128", "--n-eval", "1", "--no-progress"),
        *("--logdir", str(tmp_path), "--run-name", "plugin-env"),
        PYTHONPATH=str(plugin_dir),
    )
    assert proc.returncode == 0, proc.stderr
    config = json.loads((tmp_path / "plugin-env" / "config.json").read_text())
    assert config["env_id"] == "myworld/Small-v0"
    assert (tmp_path / "plugin-env" / "model.zip").is_file()
    # two workers of 32 steps a rollout: 128 steps are two rollouts, then the held-out eval
    assert "held-out eval at step 128:" in proc.stdout, proc.stdout


def test_a_plugin_that_does_not_import_is_one_line() -> None:
    proc = _run(sys.executable, "--plugin", "no_such_plugin_module", "policies")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "plugin no_such_plugin_module: cannot import it" in proc.stderr


def test_an_installed_plugin_package_in_a_fresh_venv(
    plugin_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A real venv, a real pip install of a package with a `bacepipe_env.plugins` entry
    point; no --plugin: `bacepipe policies` lists its policy and `compare` plays it."""
    work = tmp_path_factory.mktemp("venv")
    project = work / "bacepipe-ljf"
    project.mkdir()
    (project / "ljf_plugin.py").write_text((plugin_dir / "ljf_plugin.py").read_text())
    (project / "pyproject.toml").write_text(
        textwrap.dedent(
            """
            [build-system]
            requires = ["setuptools"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "bacepipe-ljf"
            version = "0.1"

            [project.entry-points."bacepipe_env.plugins"]
            ljf = "ljf_plugin"

            [tool.setuptools]
            py-modules = ["ljf_plugin"]
            """
        )
    )
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # the new venv sees this checkout's environment (bacepipe_env and its dependencies, as
    # installed here) as a site dir, so that only the plugin is installed into it
    here = sysconfig.get_paths()["purelib"]
    (Path(site) / "bacepipe_here.pth").write_text(f"import site; site.addsitedir({here!r})\n")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
    pip += ["--no-build-isolation", "--target", site, str(project)]
    subprocess.run(pip, check=True, capture_output=True, env=_env())
    listed = _run(python, "policies")
    assert listed.returncode == 0, listed.stderr
    assert any(line.split()[:1] == ["ljf"] for line in listed.stdout.splitlines())
    proc = _run(python, "compare", "--scenario", "paper", "--policies", "sjf,ljf", "--seeds", "1")
    assert proc.returncode == 0, proc.stderr
    assert "ljf" in proc.stdout
    # the checkout's own interpreter has no such package: the policy is unknown there
    argv = ["simulate", "--scenario", "paper", "--policy", "ljf"]
    assert _run(sys.executable, *argv).returncode == 2


# ----------------------------------------------------------- what a plugin may not register

#: Plugins that replace a built-in name, one of each kind of table a plugin can add to, by
#: module name: (the plugin's code, the name the error must give).
SHADOWING = {
    "shadow_policy": (
        'register_policy(PolicyInfo("sjf", "mine", "fcfs", "pathfinder"))',
        "policy: names a built-in policy; a plugin cannot replace it (got 'sjf')",
    ),
    "shadow_rollout": (
        'register_policy(PolicyInfo("rollout:sjf", "mine", "fcfs", "pathfinder"))',
        "policy: names a built-in rollout planner; a plugin cannot replace it (got 'rollout:sjf')",
    ),
    "shadow_ordering": (
        'ORDERINGS["sjf"] = ORDERINGS["fcfs"]',
        "ordering: names a built-in ordering; a plugin cannot replace it (got 'sjf')",
    ),
    "shadow_placement": (
        'PLACEMENTS["pathfinder"] = PLACEMENTS["lcf"]',
        "placement: names a built-in placement; a plugin cannot replace it (got 'pathfinder')",
    ),
    "shadow_admission": (
        'ADMISSION_RULES["full"] = ADMISSION_RULES["greedy"]',
        "admission rule: names a built-in admission rule; a plugin cannot replace it (got 'full')",
    ),
    "shadow_preemption": (
        'preemption._RULES["srtf"] = preemption._RULES["las"]',
        "preemption rule: names a built-in preemption rule; a plugin cannot replace it "
        "(got 'srtf')",
    ),
    "shadow_env": (
        'register(id="bacepipe_env/GeoPipe-v2", entry_point="bacepipe_env.envs.geopipe:GeoPipeEnv",'
        ' kwargs={"scenario": "paper"})',
        "environment id: names a built-in environment; a plugin cannot replace it "
        "(got 'bacepipe_env/GeoPipe-v2')",
    ),
}

#: Plugins that register a name the command line could never select.
UNSELECTABLE = {
    "comma_policy": (
        'register_policy(PolicyInfo("ljf,big", "mine", "fcfs", "pathfinder"))',
        "policy: a name cannot hold ',': it separates the names of a list (--policies a,b) "
        "(got 'ljf,big')",
    ),
    "colon_policy": (
        'register_policy(PolicyInfo("mine:ljf", "mine", "fcfs", "pathfinder"))',
        "policy: a name cannot hold ':'",
    ),
    "setting_policy": (
        'register_policy(PolicyInfo("k=4", "mine", "fcfs", "pathfinder"))',
        "policy: a name cannot hold '='",
    ),
    "space_policy": (
        'register_policy(PolicyInfo("my ljf", "mine", "fcfs", "pathfinder"))',
        "policy: a name cannot hold whitespace",
    ),
    "all_policy": (
        'register_policy(PolicyInfo("all", "mine", "fcfs", "pathfinder"))',
        "policy: a reserved word: --policies all means every policy (got 'all')",
    ),
    "comma_placement": (
        'PLACEMENTS["lcf,x"] = PLACEMENTS["lcf"]',
        "placement: a name cannot hold ','",
    ),
}

#: Plugins that end the process, or pretend to be interrupted, while they load.
STOPPING = {
    "exit_plugin": ("sys.exit(3)", "cannot import it: it called sys.exit(3)"),
    "interrupt_plugin": (
        "raise KeyboardInterrupt",
        "cannot import it: it raised KeyboardInterrupt",
    ),
    "base_plugin": (
        'raise BaseException("boom")',
        "cannot import it: it raised BaseException: boom",
    ),
}

HEADER = textwrap.dedent(
    """
    import sys

    from gymnasium.envs.registration import register

    from bacepipe_env.core import preemption
    from bacepipe_env.core.admission import ADMISSION_RULES
    from bacepipe_env.policies.registry import ORDERINGS, PLACEMENTS, PolicyInfo, register_policy
    """
)


@pytest.fixture(scope="module")
def bad_plugins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bad_plugins")
    for name, (code, _) in {**SHADOWING, **UNSELECTABLE, **STOPPING}.items():
        (folder / f"{name}.py").write_text(HEADER + code + "\n")
    # the same entry registered twice, as a module imported under two names would
    (folder / "twice_plugin.py").write_text(
        HEADER
        + 'entry = PolicyInfo("ljf-twice", "mine", "fcfs", "pathfinder")\n'
        + "register_policy(entry)\nregister_policy(entry)\n"
    )
    return folder


def _error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The one `bacepipe: error:` line of a run refused with status 2."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    line = proc.stderr.rstrip("\n")
    assert line.startswith("bacepipe: error: ") and len(line) < 200, line
    return line


@pytest.mark.parametrize("plugin", [*SHADOWING, *UNSELECTABLE])
def test_a_plugin_cannot_shadow_a_built_in_nor_register_an_unselectable_name(
    bad_plugins: Path, plugin: str
) -> None:
    proc = _run(sys.executable, "--plugin", plugin, "policies", PYTHONPATH=str(bad_plugins))
    line = _error_line(proc)
    _, expected = {**SHADOWING, **UNSELECTABLE}[plugin]
    assert line.startswith(f"bacepipe: error: plugin {plugin}: {expected}"), line
    assert not proc.stdout  # refused before the command ran


@pytest.mark.parametrize("plugin", list(STOPPING))
def test_a_named_plugin_that_exits_on_import_is_one_line(bad_plugins: Path, plugin: str) -> None:
    """sys.exit(3) in a plugin used to end the command with status 3 and no word; a
    KeyboardInterrupt it raised itself, with `bacepipe: interrupted`."""
    proc = _run(sys.executable, "--plugin", plugin, "policies", PYTHONPATH=str(bad_plugins))
    line = _error_line(proc)
    assert line == f"bacepipe: error: plugin {plugin}: {STOPPING[plugin][1]}", line


def test_registering_the_same_entry_twice_is_harmless(bad_plugins: Path) -> None:
    proc = _run(sys.executable, "--plugin", "twice_plugin", "policies", PYTHONPATH=str(bad_plugins))
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    assert [line.split()[0] for line in proc.stdout.splitlines()].count("ljf-twice") == 1


def test_installed_plugins_that_shadow_or_exit_are_skipped_with_a_warning(
    bad_plugins: Path, tmp_path: Path
) -> None:
    """Installed plugins (entry points of a distribution on the path, no --plugin) keep their
    rule: one warning line each and the command goes on, with the built-ins put back."""
    dist = tmp_path / "bacepipe_bad-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: bacepipe-bad\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[bacepipe_env.plugins]\nbye = exit_plugin\nsteal = shadow_placement\n"
    )
    path = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(bad_plugins)])}
    argv = ["simulate", "--scenario", "paper", "--policy", "bace-pipe"]
    proc = _run(sys.executable, *argv, **path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "bacepipe: warning: plugin bye (exit_plugin) skipped: it called sys.exit(3)",
        "bacepipe: warning: plugin steal (shadow_placement) skipped: placement: names a "
        "built-in placement; a plugin cannot replace it (got 'pathfinder')",
    ]
    # BACE-Pipe ran on its own placement, not the plugin's LCF
    assert proc.stdout == _run(sys.executable, *argv).stdout
