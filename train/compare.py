"""``python -m train.compare`` from a checkout: :mod:`bacepipe_env.train.compare`, installed as
``bacepipe train compare`` (same flags)."""

import sys

from bacepipe_env.train.compare import HEURISTICS, compare, learned_runs, main

__all__ = ["HEURISTICS", "compare", "learned_runs", "main"]

if __name__ == "__main__":
    sys.exit(main())
