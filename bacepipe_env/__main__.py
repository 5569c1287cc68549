"""``python -m bacepipe_env``: the ``bacepipe`` command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
