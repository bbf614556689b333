"""``python -m sqlclose.cli``: the same as the ``sqlclose`` command."""

from . import main

main()
