"""`bacepipe train ppo` (`python -m train.ppo`): `train.learn` with
`--algo ppo` as the default."""

from __future__ import annotations

import sys

from . import learn

__all__ = ["main"]


def main(argv: list[str] | None = None, prog: str = "python -m train.ppo") -> int:
    """Command-line entry point."""
    return learn.main(argv, defaults={"algo": "ppo"}, prog=prog)


if __name__ == "__main__":
    sys.exit(main())
