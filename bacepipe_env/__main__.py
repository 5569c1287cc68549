"""``python -m bacepipe_env``: the ``bacepipe`` command."""

from .cli import run

if __name__ == "__main__":
    run()
