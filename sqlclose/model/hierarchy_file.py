"""The rows of a hierarchy file (ARX format: ``leaf;level1;…;top``), read as CSV is written.

A quoted field is kept as written (RFC 4180): ``"F "`` is the text ``F `` with its space, ``""`` the
empty text, ``"G\\n1"`` a label holding a line break, ``""`` inside quotes one ``"``. An unquoted
field loses the spaces around it (``a ; x ;*`` reads as ``a``, ``x``, ``*``), as hand-aligned files
expect; an empty unquoted field is a label left out. Python's csv module told none of this apart:
every field was stripped, so no file could list a value with a space around it, or the empty text.

Rows are numbered by the physical line they start on, the line an editor shows; a quote never
closed is named by the line it opens on, not read as the rest of the file.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from sqlclose.errors import HierarchyError

QUOTE = '"'


@dataclass
class FileRows:
    """A file's rows (blank lines left out), the line each starts on, and the leaves written with
    spaces around them and unquoted: row index → the leaf as written."""

    rows: list[tuple[str, ...]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    trimmed_leaves: dict[int, str] = field(default_factory=dict)


def read_rows(text: str, delimiter: str, origin: str) -> FileRows:
    """The rows of a hierarchy file's ``text``. Lines without a quote are split as they stand (a
    ZIP hierarchy's 100 k lines); the others are read field by field, over the lines they span."""
    lines = io.StringIO(text, newline="").readlines()  # \n, \r\n and \r end a line, as csv's reader
    read = FileRows()
    i = 0
    while i < len(lines):
        if QUOTE in lines[i]:
            fields, quoted, written, after = _quoted_record(lines, i, delimiter, origin)
        else:
            split = lines[i].rstrip("\r\n").split(delimiter)
            fields, quoted, after = tuple([f.strip() for f in split]), (), i + 1
            written = split[0] if split[0] != fields[0] else None
        if "" in fields and _blank_or_refuse(fields, quoted, f"{origin}, line {i + 1}", delimiter):
            i = after
            continue  # blank lines are harmless
        if written is not None:
            read.trimmed_leaves[len(read.rows)] = written
        read.rows.append(fields)
        read.lines.append(i + 1)
        i = after
    return read


def _blank_or_refuse(fields: tuple[str, ...], quoted: tuple[bool, ...], where: str, delimiter: str) -> bool:
    """True for a blank line (every field empty, none quoted); raise for a label left out: an empty
    field not quoted (``b;;*``, or ``F;*;`` padded by a spreadsheet). The empty text is a leaf
    written quoted, ``"";*``. False for a row whose empty fields are all quoted."""
    unquoted = [level for level, f in enumerate(fields) if not f and not (quoted and quoted[level])]
    if len(unquoted) == len(fields):
        return True
    if not unquoted:
        return False
    level = unquoted[0]
    if level == len(fields) - 1:
        hint = f"; the line ends with the delimiter {delimiter!r}: remove it"
    elif level == 0:
        hint = '; a leaf that is the empty text is written quoted: "";…'
    else:
        hint = ""
    raise HierarchyError(f"{where}: empty label at level {level} for leaf {fields[0]!r}{hint}")


def _quoted_record(lines: list[str], first: int, delimiter: str,
                   origin: str) -> tuple[tuple[str, ...], tuple[bool, ...], str | None, int]:
    """The record starting on line ``first`` (0-based) that holds a quote: its fields, which were
    quoted, its leaf as written when unquoted spaces around it were dropped, and the line after it."""
    text, pos, last = lines[first], 0, first
    fields: list[str] = []
    quoted: list[bool] = []
    written = None
    while True:
        start = _skip_spaces(text, pos, delimiter)
        if start < len(text) and text[start] == QUOTE:
            value, pos, text, last = _quoted_field(lines, text, start, last, delimiter, origin, len(fields) + 1)
            fields.append(value)
            quoted.append(True)
        else:
            end = _field_end(text, start, delimiter)
            fields.append(text[start:end].strip())
            quoted.append(False)
            if len(fields) == 1 and text[pos:end] != fields[0]:
                written = text[pos:end]
            pos = end
        if pos < len(text) and text[pos] == delimiter:
            pos += 1
            continue
        return tuple(fields), tuple(quoted), written, last + 1


def _quoted_field(lines: list[str], text: str, start: int, last: int, delimiter: str, origin: str,
                  number: int) -> tuple[str, int, str, int]:
    """A quoted field opening at ``text[start]``: its value, the position after it (spaces after
    the closing quote skipped), and the record's text and last line, grown by the lines it spans."""
    opened = last + 1
    pos = start + 1
    while True:
        close = text.find(QUOTE, pos)
        if close < 0:
            if last + 1 >= len(lines):
                raise HierarchyError(f"{origin}, line {opened}: the quote opening field {number} is never closed; "
                                     "close it (a quote inside a quoted label is written twice: \"\")")
            last += 1
            text += lines[last]
            continue
        if text.startswith(QUOTE * 2, close):
            pos = close + 2
            continue
        after = _skip_spaces(text, close + 1, delimiter)
        if after < len(text) and text[after] not in (delimiter, "\r", "\n"):
            raise HierarchyError(f"{origin}, line {last + 1}: field {number} has text after its closing quote; "
                                 "quote the whole label (a quote inside it is written twice: \"\")")
        return text[start + 1:close].replace(QUOTE * 2, QUOTE), after, text, last


def _skip_spaces(text: str, pos: int, delimiter: str) -> int:
    while pos < len(text) and text[pos] in " \t" and text[pos] != delimiter:
        pos += 1
    return pos


def _field_end(text: str, pos: int, delimiter: str) -> int:
    """Where an unquoted field ends: at the delimiter or the line break (a quote inside is text)."""
    ends = [i for i in (text.find(delimiter, pos), text.find("\r", pos), text.find("\n", pos)) if i >= 0]
    return min(ends, default=len(text))
