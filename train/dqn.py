"""`python -m train.dqn`: `train.learn` with `--algo dqn` as the default."""

import sys

from train.learn import main

if __name__ == "__main__":
    sys.exit(main(defaults={"algo": "dqn"}, prog="train.dqn"))
