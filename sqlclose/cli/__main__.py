"""``python -m sqlclose.cli``: the same as the ``sqlclose`` command."""

from sqlclose.cli import run

run()
