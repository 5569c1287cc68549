"""``python -m train.learn`` from a checkout: :mod:`bacepipe_env.train.learn`, installed as
``bacepipe train learn`` (same flags)."""

import sys

from bacepipe_env.train.learn import HeldOutEval, eval_seeds, main, make_eval_env, train

__all__ = ["HeldOutEval", "eval_seeds", "main", "make_eval_env", "train"]

if __name__ == "__main__":
    sys.exit(main())
