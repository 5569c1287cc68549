"""Ctrl-C, ``kill`` and a hang-up stop a run with one line and its exit status, and no process
of the run outlives it (issue 25). Each test starts a real multi-worker run in its own
session, signals it as a terminal or ``kill`` would, and reads the process table."""

from __future__ import annotations

import signal
import time

import pytest
from process_table import BOUND_S, start, stop

from bacepipe_env.signals import Terminated, exit_status

COMPARE = ["compare", "--scenario", "online", "--seeds", "0-59", "--workers", "2"]


@pytest.mark.parametrize(
    ("sig", "group", "status", "line"),
    [
        (signal.SIGINT, True, 130, "bacepipe: interrupted"),
        (signal.SIGTERM, False, 143, "bacepipe: terminated (SIGTERM)"),
        (signal.SIGHUP, False, 129, "bacepipe: hung up (SIGHUP)"),
        (signal.SIGHUP, True, 129, "bacepipe: hung up (SIGHUP)"),  # the terminal closed
    ],
)
def test_a_signal_stops_compare_and_its_workers(sig, group, status, line, tmp_path):
    out = tmp_path / "out"
    proc = start([*COMPARE, "--out", str(out)], workers=2)
    code, err, took, left = stop(proc, sig, group=group)
    assert (code, err.strip().splitlines()) == (status, [line])
    assert left == set() and took < BOUND_S, took
    assert not out.exists()  # the folder it made for its outputs is gone with them


@pytest.mark.parametrize(
    "argv",
    [
        ["sweep", "--kind", "all", "--scenario", "online", "--seeds", "5"],
        ["reproduce"],
        ["online"],
        ["faults", "--workers", "2"],
    ],
    ids=["sweep", "reproduce", "online", "faults"],
)
def test_ctrl_c_stops_every_experiment_at_once(argv, tmp_path):
    proc = start([*argv, "--out", str(tmp_path / "out")], workers=1)
    code, err, took, left = stop(proc, signal.SIGINT, group=True)
    assert (code, err.strip().splitlines()) == (130, ["bacepipe: interrupted"])
    assert left == set() and took < BOUND_S, took


@pytest.mark.slow
def test_ctrl_c_stops_training_and_its_env_workers(tmp_path):
    """``train learn``'s SubprocVecEnv workers come from multiprocessing's fork server; the
    workers, the server and its resource tracker all end with the run."""
    pytest.importorskip("stable_baselines3")
    argv = ["train", "learn", "--total-timesteps", "100000", "--n-envs", "2"]
    argv += ["--logdir", str(tmp_path), "--run-name", "stopped"]
    proc = start(argv, workers=4)  # the tracker, the fork server and two env workers
    time.sleep(2.0)  # into the rollouts
    code, err, took, left = stop(proc, signal.SIGINT, group=True)
    assert (code, err.strip().splitlines()[-1:]) == (130, ["bacepipe: interrupted"]), err
    assert left == set() and took < BOUND_S, took


def test_the_exit_status_is_128_plus_the_signal():
    assert exit_status(KeyboardInterrupt()) == 130
    assert exit_status(Terminated(signal.SIGTERM)) == 143
    assert exit_status(Terminated(signal.SIGHUP)) == 129
