"""`python -m train.maskable_ppo`: `train.learn` with `--algo maskable_ppo` as the default."""

import sys

from train.learn import main

if __name__ == "__main__":
    sys.exit(main(defaults={"algo": "maskable_ppo"}, prog="train.maskable_ppo"))
