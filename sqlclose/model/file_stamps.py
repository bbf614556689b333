"""What tells a file a run reads where it lies replaced or modified while the run reads it: its device,
inode, size and modification time (ns), its "stamp" — the one such stamp: a release's writers tell
by it, too, whether the file at the output path is still the one found there (``files.identity``).

A source of files (a Parquet file, folder or pattern, a CSV, a DuckDB database file, a view's files) is
stamped when it is opened, before any of its rows is read — the keyed fingerprint's scan included —
and compared before anything made from those rows is written or trusted: the release (``Release.write``,
``to_arrow``), a sweep's figures, a check's. Stamped after the search, as the run did before the
ninety-sixth round, an upstream job's atomic rename during the first part of the run (the fingerprint,
the value scan, the histogram: seconds at 2 M rows) was never seen: the report's fingerprint was the
old file's over the new file's rows, or the node chosen on the old rows was written from the new ones.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from sqlclose.errors import InputError

Stamp = tuple[int, int, int, int]  # device, inode, size, modification time (ns)


def stamp_of(found: os.stat_result) -> Stamp:
    """The stamp of a file's ``stat``: another file renamed into its place has another inode (or
    device), one rewritten in place another size or modification time."""
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns


def file_stamp(path: Path) -> Stamp | None:
    """What tells a file replaced or modified: its ``stamp_of`` (None when it cannot be looked at:
    not there)."""
    try:
        return stamp_of(Path(path).stat())
    except OSError:
        return None


def stamps_of(paths: Iterable[Path]) -> dict[str, Stamp]:
    """The stamps of ``paths`` that exist (a folder's too: a file renamed into it changes its own)."""
    return {str(p): stamp for p in paths if (stamp := file_stamp(Path(p))) is not None}


def first_changed(stamps: Mapping[str, Stamp]) -> str | None:
    """The first file whose stamp is not the one taken (replaced, modified or gone), else None."""
    return next((path for path, stamp in stamps.items() if file_stamp(Path(path)) != stamp), None)


def refuse_changed_files(stamps: Mapping[str, Stamp], label: str, when: str, harm: str) -> None:
    """Refuse (exit 2) when a stamped file changed: ``label`` the source as messages name it,
    ``when`` when it changed as the reader tells it ("after the release was searched"), ``harm`` what
    trusting the rows read would do and what to do instead."""
    moved = first_changed(stamps)
    if moved is not None:
        raise InputError(f"{label} changed {when} ({moved} was replaced or modified): {harm}")
