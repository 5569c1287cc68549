"""``python -m train.ppo`` from a checkout: :mod:`bacepipe_env.train.ppo`,
installed as ``bacepipe train ppo`` (``train.learn`` with ``--algo ppo`` as the
default)."""

import sys

from bacepipe_env.train.ppo import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
