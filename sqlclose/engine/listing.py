"""Which files of a folder (or a pattern's matches) are the table's: not those under a path part
Spark, Hive, Databricks and Trino treat as hidden.

A Spark job writes its attempts under ``_temporary/`` and renames them into place when it commits;
a failed or still-running job leaves them there, beside the committed files (the same rows
twice). Those readers skip every path part below the folder that starts with ``.``, or with ``_``
unless it holds ``=`` (``_col=1/`` is a partition folder): Spark's ``shouldFilterOutPathName``.
Read as rows, each person was counted twice and k held for half the people it claimed.

Every other file is the table's, whatever its name, as those readers take it: Hive names its files
``000000_0``; a folder source read ``*.parquet`` alone and skipped ``part-1.pq`` without a word.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sqlclose.model.hidden_parts import hidden_name
from sqlclose.model.spec import GLOB_CHARACTERS
from sqlclose.model.text import special_file


@dataclass(frozen=True)
class FolderFiles:
    """The files below a folder source, each list sorted: ``parquet``, the table's (every file not
    under a hidden path part, told Parquet by its magic bytes, whatever its name: Hive names its
    files ``000000_0``, others ``.pq`` or ``.PARQUET``); ``hidden``, the Parquet files under a hidden
    part (leftovers, not read); ``other``, the files not hidden that are not Parquet (a folder
    source holding one is refused: Spark and Hive would read it, and skipping it could drop rows);
    ``linked``, the links to folders not under a hidden part, which this listing does not enter
    (``Path.rglob``) and pyarrow's, Spark's and DuckDB's readers do: a folder holding one is read
    otherwise by them than by sqlclose, and is refused (review of the ninety-third round);
    ``special``, the pipes (FIFOs), sockets and devices not under a hidden part (a link to one too),
    which the listing skipped as no file, and its readers would try to read (opening a pipe waits
    for a writer): a folder holding one is refused (ninety-sixth round). None is ever opened."""

    parquet: list[Path]
    hidden: list[Path]
    other: list[Path]
    linked: list[Path]
    special: list[Path]


def folder_files(folder: Path) -> FolderFiles:
    """The files below ``folder`` as a folder source reads them (``FolderFiles``)."""
    parquet: list[Path] = []
    hidden: list[Path] = []
    other: list[Path] = []
    linked: list[Path] = []
    special: list[Path] = []
    for path in sorted(folder.rglob("*")):
        is_hidden = any(hidden_name(part) for part in path.relative_to(folder).parts)
        if path.is_dir():
            if path.is_symlink() and not is_hidden:
                linked.append(path)
            continue
        if not path.is_file():  # a link to nothing is no file; a pipe, a socket or a device is told
            if not is_hidden and special_file(path) is not None:
                special.append(path)
            continue
        if is_hidden:
            if is_parquet(path):
                hidden.append(path)
            continue  # Spark's _SUCCESS, its .crc files, _temporary/: never read
        (parquet if is_parquet(path) else other).append(path)
    return FolderFiles(parquet, hidden, other, linked, special)


SPECIAL_FILE_WHY = ("which is no file of a table: its readers (Spark, Hive, sqlclose) take every file not under a "
                    "path part starting with \"_\" or \".\", and would try to read it (opening a pipe waits for a "
                    "writer, for good)")


def special_kind(path: Path) -> str:
    """The kind of a special file (``special_file``) a message gives after its path: ", a pipe (FIFO)"."""
    return f", {special_file(path) or 'no regular file'}"


def special_refusal(special: list[Path], what: str) -> str:
    """What a folder holding ``special`` files (pipes, sockets, devices) is told, after ``what``
    ("source folder x holds", "the folder holds"): the first named, with its kind."""
    more = f" (and {len(special) - 1} other such)" if len(special) > 1 else ""
    return f"{what} {special[0]}{special_kind(special[0])}{more}, {SPECIAL_FILE_WHY}"


def linked_folder_refusal(folder: Path, linked: list[Path], what: str) -> str:
    """The message for a folder (``what``: "source folder", …) holding a link to a folder."""
    return (f"{what} {folder} holds {linked[0]}, a link to a folder, which sqlclose does not follow and other "
            "readers of the folder (pyarrow, Spark, DuckDB's globs) do: they would read rows sqlclose never read; "
            "put the folder's files there instead of the link, or move the link out")


@dataclass(frozen=True)
class FilesBelow:
    """What ``files_below`` finds below a folder at any depth (under hidden parts too), each list
    sorted, nothing opened: ``links``, the symbolic links (a link to a folder listed, not entered);
    ``special``, the pipes (FIFOs), sockets and devices (``special_file``); ``hidden``, the files
    (no link) under a hidden path part (``hidden_name``: ``.notes``, ``_SUCCESS``, ``_temporary/…``,
    ``age=1/.x.crc``), which its readers skip; ``visible``, the regular files (no link) under none.
    sqlclose writes no link, special or hidden file into a release (a Spark run's marker and
    checksum files are removed, a run's own temporaries and lock lie beside the folder), and the
    folder's digest (``files.folder_sha256``: regular files) lists no link or special file: a folder
    release holding one is not the release (``check --against``), nor up to date."""

    links: list[Path]
    special: list[Path]
    hidden: list[Path]
    visible: list[Path]


def files_below(folder: Path) -> FilesBelow:
    """Every link, special, hidden and visible file below ``folder`` (``FilesBelow``), in one walk."""
    links: list[Path] = []
    special: list[Path] = []
    hidden: list[Path] = []
    visible: list[Path] = []
    for root, folders, files in os.walk(folder):  # followlinks=False: a linked folder is listed, not walked
        base = Path(root)
        hidden_root = any(hidden_name(part) for part in base.relative_to(folder).parts)
        links += [base / name for name in folders if os.path.islink(base / name)]
        for name in files:
            path = base / name
            if os.path.islink(path):
                links.append(path)
                continue
            is_hidden = hidden_root or hidden_name(name)
            if is_hidden:
                hidden.append(path)
            if special_file(path) is not None:  # told by stat (no link here), never opened
                special.append(path)
            elif not is_hidden and path.is_file():
                visible.append(path)
    return FilesBelow(sorted(links), sorted(special), sorted(hidden), sorted(visible))


def is_parquet(path: Path) -> bool:
    """Whether a file starts with Parquet's magic bytes (``PAR1``)."""
    try:
        with path.open("rb") as handle:
            return handle.read(4) == b"PAR1"
    except OSError:
        return False


def hidden_match(match: Path, pattern: Path) -> bool:
    """Whether a pattern's ``match`` is under a hidden part that a wildcard matched: a part the
    pattern spells itself (``_staging/*.parquet``, ``.cache/x.parquet``) is read, as it is named."""
    base = _literal_parts(pattern)
    given, found = pattern.parts[base:], match.parts[base:]
    if "**" in given:  # the parts ** matched, between the pattern's head and tail, are all wildcards'
        i = given.index("**")
        head, tail = given[:i], given[i + 1:]
        spelled = [*head, *([None] * (len(found) - len(head) - len(tail))), *tail]
    else:
        spelled = list(given)
    return any(hidden_name(part) and not (spelled_as and spelled_as[0] == part[0])
               for part, spelled_as in zip(found, spelled))


def _literal_parts(pattern: Path) -> int:
    """How many leading parts of ``pattern`` hold no glob character (the folder it searches)."""
    for i, part in enumerate(pattern.parts):
        if any(ch in GLOB_CHARACTERS for ch in part):
            return i
    return len(pattern.parts)
