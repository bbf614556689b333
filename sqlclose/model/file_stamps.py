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

A folder's stamp is that of what its readers take from it (``folder_stamp``), not its own modification
time: DuckDB spills into ``.tmp`` under the working folder, and a run started inside its folder source
made ``.tmp`` there, which changed the folder's time, and was refused as "changed" though no file of the
table was (ninety-seventh round); a file added to a partition folder did not change it, and went unseen.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from sqlclose.errors import InputError
from sqlclose.model.hidden_parts import hidden_name

# A file's: device, inode, size, modification time (ns). A folder's: device, inode, the number of
# entries its readers take, a digest of their paths and stamps (``folder_stamp``).
Stamp = tuple[int, int, int, int]


def stamp_of(found: os.stat_result) -> Stamp:
    """The stamp of a file's ``stat``: another file renamed into its place has another inode (or
    device), one rewritten in place another size or modification time."""
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns


def file_stamp(path: Path) -> Stamp | None:
    """What tells a file replaced or modified: its ``stamp_of``, a folder's ``folder_stamp`` (None
    when it cannot be looked at: not there)."""
    try:
        found = Path(path).stat()
    except OSError:
        return None
    return folder_stamp(Path(path), found) if stat.S_ISDIR(found.st_mode) else stamp_of(found)


def folder_stamp(folder: Path, found: os.stat_result) -> Stamp:
    """What tells a folder's table changed: a file added, removed, replaced or rewritten below it, a
    link or a pipe added, anywhere but under a hidden path part (``hidden_name``: ``.tmp``, which DuckDB
    spills into, ``_temporary``, ``.crc`` files), which its readers skip. Its own modification time is
    left out: a hidden file made or removed in it (DuckDB's spill files) changes it, and no row."""
    digest = hashlib.sha256()
    entries = 0
    for root, folders, names in os.walk(folder):  # a link to a folder is not entered: stamped as a link
        folders[:] = sorted(name for name in folders if not hidden_name(name))
        linked = {name for name in folders if os.path.islink(os.path.join(root, name))}
        for name in sorted(name for name in [*names, *linked] if not hidden_name(name)):
            path = Path(root, name)
            seen = _link_stamp(path) if name in linked else file_stamp(path)
            digest.update(f"{path.relative_to(folder)}\0{seen}\n".encode(errors="surrogateescape"))
            entries += 1
    return found.st_dev, found.st_ino, entries, int.from_bytes(digest.digest()[:8], "big")


def stamps_of(paths: Iterable[Path]) -> dict[str, Stamp]:
    """The stamps of ``paths`` that exist (a folder's too: ``folder_stamp``)."""
    return {str(p): stamp for p in paths if (stamp := file_stamp(Path(p))) is not None}


def _link_stamp(path: Path) -> Stamp | None:
    """A link's own stamp (a link to a folder inside it would stamp the folder again, for good)."""
    try:
        return stamp_of(path.lstat())
    except OSError:
        return None


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
