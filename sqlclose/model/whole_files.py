"""Files the API writes for the user (a sweep's CSV, a chart, the demo's copies): replaced whole or
not at all."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replaced_whole(path: Path) -> Iterator[Path]:
    """A hidden temporary path beside ``path`` to write, renamed over ``path`` when the block ends
    without error, removed when it fails: a write stopped half-way (a full disk, an interrupt, an
    error while drawing) left a truncated file where the previous one was. A link at ``path`` is
    replaced itself, never followed."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        yield Path(temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
