"""The Gymnasium adapter over the simulator: ``GeoPipeEnv``, its parts (features, reward,
previews, render), its agents and registration."""

from .agents import (
    AGENT_ENV,
    AGENT_PLACEMENTS,
    Agent,
    EpisodeResult,
    HeuristicAgent,
    evaluate,
    make_agent,
    run_episode,
)
from .config import ObsScales, RewardConfig
from .features import FEATURES, Feature, ObservationEncoder
from .geopipe import GeoPipeEnv, make_placement
from .previews import PlacementPreviewer, Preview
from .registration import ENV_IDS, MAX_EPISODE_STEPS, register_envs
from .render import RenderSnapshot
from .replay import scenario_for
from .reward import (
    DeadlineReward,
    JctCostReward,
    RewardFn,
    RewardScales,
    RewardTerms,
    VectorReward,
)

__all__ = [
    "AGENT_ENV",
    "AGENT_PLACEMENTS",
    "ENV_IDS",
    "FEATURES",
    "MAX_EPISODE_STEPS",
    "Agent",
    "DeadlineReward",
    "EpisodeResult",
    "Feature",
    "GeoPipeEnv",
    "HeuristicAgent",
    "JctCostReward",
    "ObsScales",
    "ObservationEncoder",
    "PlacementPreviewer",
    "Preview",
    "RenderSnapshot",
    "RewardConfig",
    "RewardFn",
    "RewardScales",
    "RewardTerms",
    "VectorReward",
    "evaluate",
    "make_agent",
    "make_placement",
    "register_envs",
    "run_episode",
    "scenario_for",
]
