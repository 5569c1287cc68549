"""Releasable: `python -m build` makes an sdist and a wheel that pass `twine check`, and the
sdist, installed into a fresh venv, imports, registers its ids and runs the README's first
command (a smoke test of what a user who downloads it gets)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("build")  # the dev extra has them
pytest.importorskip("twine")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BACEPIPE_PLUGINS")}
    env["OMP_NUM_THREADS"] = "1"
    return env


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sdist and wheel built from a copy of the tracked files (the checkout stays clean)."""
    tmp = tmp_path_factory.mktemp("release")
    src = tmp / "src"
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    files = [f for f in listed.split("\0") if f and (ROOT / f).is_file()]
    if not files:  # not a git checkout: the package and the project files
        pytest.skip("needs a git checkout to list the tracked files")
    for name in files:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    out = tmp / "dist"
    proc = _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), ".", cwd=src)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


def test_build_makes_an_sdist_and_a_wheel_that_twine_accepts(dist: Path) -> None:
    names = sorted(p.name for p in dist.iterdir())
    assert [n.endswith(".tar.gz") or n.endswith(".whl") for n in names] == [True, True], names
    proc = _run(
        sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir()), cwd=dist
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("PASSED") == 2, proc.stdout


def test_the_sdist_installs_into_a_fresh_venv_and_runs(
    dist: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A fresh venv gets the sdist (built there by pip) and sees this environment's
    dependencies as a plain path (not its site hooks, so not the checkout's editable
    install); it imports the installed copy and prints the README's first result."""
    (sdist,) = dist.glob("*.tar.gz")
    work = tmp_path_factory.mktemp("fresh")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = _run(
        python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=work
    ).stdout.strip()
    deps = sysconfig.get_paths()["purelib"]
    (Path(site) / "deps.pth").write_text(deps + "\n")  # a path line: its .pth hooks do not run
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    proc = _run(*pip, "--target", site, str(sdist), cwd=work)
    assert proc.returncode == 0, proc.stderr[-2000:]
    smoke = (
        "import json, gymnasium as gym, bacepipe_env\n"
        "from gymnasium.utils.env_checker import check_env\n"
        "from bacepipe_env.learned import pretrained_names\n"
        "check_env(gym.make('bacepipe_env/GeoPipe-v2').unwrapped)\n"
        "print(json.dumps({'file': bacepipe_env.__file__, 'version': bacepipe_env.__version__,"
        " 'pretrained': pretrained_names()}))\n"
    )
    proc = _run(python, "-c", smoke, cwd=work)
    assert proc.returncode == 0, proc.stderr[-2000:]
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert info["file"].startswith(site), info  # the installed copy, not the checkout
    assert info["version"] == sdist.name.removeprefix("bacepipe_env-").removesuffix(".tar.gz")
    assert "geopipe" in info["pretrained"]  # the package data came along
    proc = _run(
        python, "-m", "bacepipe_env", "simulate", "--scenario", "paper", "--seed", "0", cwd=work
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "  average JCT            160.63 h" in proc.stdout  # the README's figure
