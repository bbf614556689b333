"""``python -m sqlclose.cli``: the same as the ``sqlclose`` command."""

from sqlclose.cli import main

main()
