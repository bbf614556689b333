"""Which files of a folder (or a pattern's matches) are the table's: not those under a path part
Spark, Hive, Databricks and Trino treat as hidden.

A Spark job writes its attempts under ``_temporary/`` and renames them into place when it commits;
a failed or still-running job leaves them there, beside the committed files (the same rows
twice). Those readers skip every path part below the folder that starts with ``.``, or with ``_``
unless it holds ``=`` (``_col=1/`` is a partition folder): Spark's ``shouldFilterOutPathName``.
Read as rows, each person was counted twice and k held for half the people it claimed.
"""

from __future__ import annotations

from pathlib import Path

from sqlclose.model.spec import GLOB_CHARACTERS


def hidden_name(name: str) -> bool:
    """A file or folder name Spark's and Hive's readers skip (``_temporary``, ``.staging``, ``_x.parquet``)."""
    return name.startswith(".") or (name.startswith("_") and "=" not in name)


def visible_parquet_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """The ``.parquet`` files below ``folder`` that are the table's, and those under a hidden path
    part (leftovers): each sorted."""
    visible, hidden = [], []
    for path in sorted(p for p in folder.rglob("*.parquet") if p.is_file()):
        parts = path.relative_to(folder).parts
        (hidden if any(hidden_name(part) for part in parts) else visible).append(path)
    return visible, hidden


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
