"""``python -m train.dqn`` from a checkout: :mod:`bacepipe_env.train.dqn`,
installed as ``bacepipe train dqn`` (``train.learn`` with ``--algo dqn`` as the
default)."""

import sys

from bacepipe_env.train.dqn import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
