"""`python -m train.ppo`: `train.learn` with `--algo ppo` as the default."""

import sys

from train.learn import main

if __name__ == "__main__":
    sys.exit(main(defaults={"algo": "ppo"}, prog="train.ppo"))
