"""The render modes as docs/environment.md ("Render modes") states them (issue 44: ``human``
was not documented): the env's own modes, and ``human`` only through Gymnasium's wrapper."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import HumanRendering

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import GeoPipeEnv
from bacepipe_env.envs.render import rgb_available
from bacepipe_env.envs.settings import RENDER_MODES
from bacepipe_env.errors import ValidationError

DOC = Path(__file__).resolve().parents[2] / "docs" / "environment.md"


def _documented_modes() -> list[str]:
    section = DOC.read_text(encoding="utf-8").split("**Render modes.**", 1)[1]
    table = section.split("\n\n", 2)[1]
    return re.findall(r"^\| `(?:\"(\w+)\"|None)`", table, flags=re.MULTILINE)


def test_the_table_lists_each_mode_once() -> None:
    # None's row captures '' (the default); then the env's own modes, then human
    assert _documented_modes() == ["", *RENDER_MODES, "human"]


def test_the_env_itself_refuses_human_with_one_line() -> None:
    with pytest.raises(ValidationError) as err:
        GeoPipeEnv("paper", render_mode="human")
    assert str(err.value) == ("render_mode: must be one of None, 'ansi', 'rgb_array' (got 'human')")


@pytest.mark.skipif(not rgb_available(), reason="needs matplotlib (the viz extra)")
def test_gym_make_human_wraps_the_rgb_array_env() -> None:
    """Made, not reset: showing a frame needs pygame, which this package does not install."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        env = gym.make("bacepipe_env/GeoPipe-v2", render_mode="human")
    assert isinstance(env, HumanRendering) and env.render_mode == "human"
    assert env.unwrapped.render_mode == "rgb_array"
    assert any("HumanRendering" in str(w.message) for w in seen)
    env.unwrapped.reset(seed=0)
    frame = env.unwrapped.render()
    assert isinstance(frame, np.ndarray)
    assert frame.shape == (400, 800, 3) and frame.dtype == np.uint8
