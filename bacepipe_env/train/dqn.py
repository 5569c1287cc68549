"""`bacepipe train dqn` (`python -m train.dqn`): `train.learn` with
`--algo dqn` as the default."""

from __future__ import annotations

import sys

from . import learn

__all__ = ["main"]


def main(argv: list[str] | None = None, prog: str = "python -m train.dqn") -> int:
    """Command-line entry point."""
    return learn.main(argv, defaults={"algo": "dqn"}, prog=prog)


if __name__ == "__main__":
    sys.exit(main())
