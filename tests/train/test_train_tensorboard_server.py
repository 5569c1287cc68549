"""A real TensorBoard server on 127.0.0.1 against the tiny run's logdir answers its scalars
endpoints with the eval/ tags and the eval.csv numbers, and is stopped afterwards."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pytest
from train_helpers import EVAL_TAGS, ROOT, TinyRun, f32, sub_env

pytest.importorskip("tensorboard")

STARTUP_S = 40  # bound on waiting for the server to list the run
REQUEST_S = 3


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=REQUEST_S) as resp:
        assert resp.status == 200
        return json.loads(resp.read().decode())


def test_tensorboard_serves_the_eval_scalars(tiny: TinyRun, tmp_path: Any) -> None:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(tmp_path / "tensorboard.log", "w+")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tensorboard.main",
            "--logdir",
            str(tiny.logdir),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--load_fast=false",
        ],
        cwd=ROOT,
        env=sub_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        tags: Any = None
        last_error = ""
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log.seek(0)
                pytest.fail(f"tensorboard exited with {proc.returncode}:\n{log.read()}")
            try:
                tags = _get_json(f"{base}/data/plugin/scalars/tags")
                if all(t in tags.get("tiny", {}) for t in EVAL_TAGS):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError) as err:
                last_error = repr(err)
            time.sleep(0.25)
        else:
            log.seek(0)
            pytest.fail(f"no eval/ tags after {STARTUP_S} s: {tags!r} {last_error}\n{log.read()}")

        assert set(tags) == {"tiny"}, tags
        for tag in (*EVAL_TAGS, "eval/illegal_actions"):
            assert tag in tags["tiny"], sorted(tags["tiny"])

        rows = tiny.eval_rows
        for tag in EVAL_TAGS:
            query = urllib.parse.urlencode({"run": "tiny", "tag": tag})
            points = _get_json(f"{base}/data/plugin/scalars/scalars?{query}")
            # [[wall_time, step, value], ...]
            assert [p[1] for p in points] == [int(r["step"]) for r in rows], points
            key = tag.removeprefix("eval/")
            assert [p[2] for p in points] == [f32(r[key]) for r in rows], points
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
    assert proc.returncode is not None
