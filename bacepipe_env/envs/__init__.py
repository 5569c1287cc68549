"""The Gymnasium adapter over the simulator: ``GeoPipeEnv``, its agents and registration."""

from .agents import AGENT_PLACEMENTS, Agent, EpisodeResult, evaluate, make_agent, run_episode
from .config import ObsScales, RewardConfig
from .geopipe import GeoPipeEnv, make_placement
from .registration import ENV_IDS, register_envs

__all__ = [
    "AGENT_PLACEMENTS",
    "ENV_IDS",
    "Agent",
    "EpisodeResult",
    "GeoPipeEnv",
    "ObsScales",
    "RewardConfig",
    "evaluate",
    "make_agent",
    "make_placement",
    "register_envs",
    "run_episode",
]
