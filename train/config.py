"""``train.config`` from a checkout: the same objects as :mod:`bacepipe_env.train.config`."""

from bacepipe_env.train.config import TrainConfig, parse_config

__all__ = ["TrainConfig", "parse_config"]
