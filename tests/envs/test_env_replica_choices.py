"""``replica_choices`` is refused where the scenarios run the paper's model, which has no
data-parallel copies (semantics §3e): every count above one would be an action that is never
legal (issue 44: ``GeoPipe-v2`` with ``replica_choices=2`` added 16 such actions)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import bacepipe_env  # noqa: F401  (registers the ids)
from bacepipe_env.envs import GeoPipeEnv
from bacepipe_env.errors import ValidationError

MESSAGE = (
    "replica_choices: the paper's model has no data-parallel copies; give model='physical' "
    "or 0 (got 2)"
)


@pytest.mark.parametrize(
    "make",
    [
        lambda: gym.make("bacepipe_env/GeoPipe-v2", replica_choices=2),  # a named scenario
        lambda: GeoPipeEnv("random", replica_choices=2),  # "random"'s model, paper by default
        lambda: GeoPipeEnv("fig1", replica_choices=2, model="paper"),
    ],
    ids=["paper-id", "random", "fig1"],
)
def test_replica_choices_on_the_papers_model_is_one_line(make) -> None:
    with pytest.raises(ValidationError) as err:
        make()
    assert str(err.value) == MESSAGE


def test_a_fixed_paper_scenario_is_refused_too(tiny_scenario) -> None:
    assert tiny_scenario.world.model == "paper"
    with pytest.raises(ValidationError, match=r"^replica_choices: the paper's model"):
        GeoPipeEnv(tiny_scenario, replica_choices=2)


def test_the_physical_model_keeps_its_counts() -> None:
    """The same id in the physical world: 16 slots * 2 counts + the wait = 33 actions."""
    env = gym.make("bacepipe_env/GeoPipe-v2", replica_choices=2, model="physical")
    assert env.action_space.n == 16 * 2 + 1
    assert gym.make("bacepipe_env/GeoPipe-v2", replica_choices=0).action_space.n == 16 + 1
