"""``python -m train.maskable_ppo`` from a checkout: :mod:`bacepipe_env.train.maskable_ppo`,
installed as ``bacepipe train maskable_ppo`` (``train.learn`` with ``--algo maskable_ppo`` as the
default)."""

import sys

from bacepipe_env.train.maskable_ppo import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
