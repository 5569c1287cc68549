"""A screenshot of TensorBoard's Custom Scalars tab: learned curves and heuristic lines.

    python benchmarks/tensorboard_screenshot.py                  # docs/img/tensorboard.png
    python benchmarks/tensorboard_screenshot.py --page hparams \
        --out docs/img/tensorboard-hparams.png                   # the simulator's sessions
    python benchmarks/tensorboard_screenshot.py --logdir runs --out /tmp/runs.png

Without ``--logdir`` it first builds a small logdir (about a minute on two cores) in a
temporary folder (``--workdir`` keeps it):

1. ``bacepipe compare`` of four heuristics on the ``paper`` scenario, 5 seeds
   (``tb/compare/paper/<policy>``: one HParams session per policy);
2. two short ``bacepipe train learn`` runs on GeoPipe-v2, seeds 0 and 1, side by side
   (``tb/learned/geopipe/mppo-s<seed>``);
3. ``bacepipe train compare`` of the same heuristics on their held-out episodes
   (``tb/heuristics/geopipe/<policy>``, with the custom-scalars layout).

Then it starts ``tensorboard --logdir ... --host 127.0.0.1 --port <a free port>`` (this machine
only), waits until TensorBoard serves the layout and the runs' scalars, has headless Chromium
(Debian's ``chromium`` package: ``apt-get install -y chromium``) load the page and save a
``--window-size`` PNG, and stops TensorBoard. It needs the ``train`` extra (the Makefile's
``.venv``). Nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
POLICIES = "bace-pipe,fcfs,lcf,ldf"
ENV_ID = "bacepipe_env/GeoPipe-v2"
STARTUP_S = 90  # bound on TensorBoard's start and first load
CHROMIUM_S = 180  # bound on one Chromium screenshot
#: Dashboard -> the URL fragment that opens it. Smoothing off: the heuristics are flat
#: anyway, and the learned points are then the evaluations themselves.
PAGES = {
    "custom_scalars": "#custom_scalars&_smoothingWeight=0&regexInput=%5E(learned%7Cheuristics)%2F",
    "hparams": "#hparams",
    "scalars": "#timeseries",
}


def _env() -> dict[str, str]:
    """Subprocess environment: one OpenMP thread (two cores, two trainings at once)."""
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _bacepipe(*args: str) -> list[str]:
    """The ``bacepipe`` command of this interpreter (``python -m bacepipe_env`` is it)."""
    return [sys.executable, "-m", "bacepipe_env", *args]


def _check(procs: list[subprocess.Popen[str]]) -> None:
    """Wait for every started command; exit with its stderr when one fails."""
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        if proc.returncode != 0:
            sys.exit(f"{proc.args!r} failed:\n{err or out}")


def build_logdir(work: Path, timesteps: int) -> Path:
    """Run the three commands of the module docstring into ``work``; return the logdir."""
    logdir = work / "tb"

    def start(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            _bacepipe(*args), cwd=work, env=_env(), text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip

    learn = [
        "train", "learn", "--env-id", ENV_ID, "--total-timesteps", str(timesteps),
        "--n-steps", "256", "--batch-size", "64", "--n-envs", "1", "--eval-freq", "256",
        "--n-eval", "4", "--checkpoint-freq", str(timesteps), "--no-progress",
        "--logdir", str(logdir),
    ]  # fmt: skip
    # Two trainings on two cores; the simulator's compare is quick and goes first.
    _check([start("compare", "--seeds", "5", "--policies", POLICIES, "--out", str(work))])
    runs = [f"learned/geopipe/mppo-s{seed}" for seed in (0, 1)]
    _check([start(*learn, "--seed", run[-1], "--run-name", run) for run in runs])
    _check([start("train", "compare", "--logdir", str(logdir), "--policies", POLICIES)])
    return logdir


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read().decode())


def wait_ready(base: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Poll TensorBoard until it serves a custom-scalars layout (when the logdir has one) and
    the same scalar tags twice in a row (its first load of the logdir is over)."""
    deadline = time.monotonic() + STARTUP_S
    last: Any = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"tensorboard exited with {proc.returncode}:\n{log.read_text()}")
        try:
            tags = _get(f"{base}/data/plugin/scalars/tags")
            layout = _get(f"{base}/data/plugin/custom_scalars/layout")
            if tags and tags == last and (layout or not _has_layout(tags)):
                return
            last = tags
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
            pass
        time.sleep(1.0)
    sys.exit(f"TensorBoard at {base} not ready after {STARTUP_S} s:\n{log.read_text()}")


def _has_layout(tags: dict[str, Any]) -> bool:
    """Whether a heuristic run (which carries the layout) is among the runs."""
    return any(run.split("/")[0] == "heuristics" for run in tags)


def chromium_binary(given: str | None) -> str:
    """The Chromium to use: ``--chromium``, else the first of Debian's names on PATH."""
    for name in (given, "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return str(shutil.which(name))
    sys.exit("no Chromium found: apt-get install -y chromium (or give --chromium PATH)")


def screenshot(
    logdir: Path, out: Path, page: str, size: str, budget_ms: int, chromium: str
) -> None:
    """Serve ``logdir`` on 127.0.0.1, photograph ``page`` into ``out``, stop the server."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="tb-shot-") as tmp:
        log = Path(tmp) / "tensorboard.log"
        with open(log, "w") as fh:
            server = subprocess.Popen(
                [
                    sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir),
                    "--host", "127.0.0.1", "--port", str(port),
                ],
                stdout=fh, stderr=subprocess.STDOUT, env=_env(),
            )  # fmt: skip
        try:
            wait_ready(base, server, log)
            out.parent.mkdir(parents=True, exist_ok=True)
            shot = subprocess.run(
                [
                    chromium, "--headless", "--disable-gpu", "--no-sandbox",
                    "--hide-scrollbars", f"--user-data-dir={Path(tmp) / 'profile'}",
                    f"--screenshot={out.resolve()}", f"--window-size={size}",
                    f"--virtual-time-budget={budget_ms}", f"{base}/{PAGES[page]}",
                ],
                capture_output=True, text=True, timeout=CHROMIUM_S,
            )  # fmt: skip
            if shot.returncode != 0 or not out.is_file():
                sys.exit(f"chromium failed ({shot.returncode}):\n{shot.stderr}")
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; prints where the PNG went and the wall time."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logdir", type=Path, help="photograph this logdir (no build)")
    parser.add_argument("--workdir", type=Path, help="build the logdir here and keep it")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "tensorboard.png")
    parser.add_argument("--page", choices=list(PAGES), default="custom_scalars")
    parser.add_argument("--timesteps", type=int, default=4096, help="per training run")
    parser.add_argument("--window-size", default="1600,1000", metavar="W,H")
    parser.add_argument("--budget-ms", type=int, default=20_000, help="Chromium virtual time")
    parser.add_argument("--chromium", help="the Chromium binary (default: found on PATH)")
    args = parser.parse_args(argv)
    chromium = chromium_binary(args.chromium)  # fail before a minute of building
    start = time.perf_counter()
    if args.logdir is not None:
        logdir = args.logdir
        if not logdir.is_dir():
            parser.exit(2, f"{parser.prog}: error: --logdir {logdir}: no such folder\n")
        screenshot(logdir, args.out, args.page, args.window_size, args.budget_ms, chromium)
    else:
        with tempfile.TemporaryDirectory(prefix="tb-logdir-") as tmp:
            work = Path(tmp) if args.workdir is None else args.workdir.resolve()
            work.mkdir(parents=True, exist_ok=True)
            logdir = build_logdir(work, args.timesteps)
            if args.page == "hparams":
                # The simulator's sessions alone: beside SB3's runs, whose HParams experiment
                # TensorBoard takes for the whole logdir, their columns would not show.
                logdir = logdir / "compare"
            screenshot(logdir, args.out, args.page, args.window_size, args.budget_ms, chromium)
    print(f"wrote {args.out} ({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
