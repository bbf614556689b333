"""Where a CSV file's line endings change, and the words that say so (both engines' refusal).

DuckDB's CSV reader takes one kind of line ending per file, told by its first lines, and gives up on
a file whose lines end with LF and then CRLF (two exports joined with ``cat``, a file edited on
another system), "reached an invalid state", naming no line (``prepare.csv_lines``). Spark's reader,
told one ending (its ``lineSep``), read such a file on: the lines of the other ending left a value
ending in "\\r", released so, or were read as one row. The file is scanned here for the first line
whose ending differs from line 1's, outside quoted fields, so that either engine's message names the
line and the fix. Nothing of a line but its ending is read into the message.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ENDINGS = {"\n": "LF (\\n)", "\r\n": "CRLF (\\r\\n)", "\r": "CR (\\r)"}
CHUNK = 1 << 20
_TOKENS = re.compile(r'"|\r\n|\n|\r')


def line_ending_change(path: Path, encoding: str, delimiter: str | None = None) -> tuple[int, str, str] | None:
    """The first line (from 1, as an editor counts them) whose ending is not line 1's, the line
    breaks inside quoted fields passed over, with line 1's ending and that one; None when every
    line ends alike. Given the (one-character) ``delimiter``, only a quote at a field's start opens a
    quoted field, as the engines read one: a stray quote inside a name (``no"te``) is text, and was
    taken to quote the rest of the file, whose change of ending was then never found."""
    single = delimiter is not None and len(delimiter) == 1
    found = tokens(path, encoding, _field_tokens(delimiter) if single else _TOKENS)
    first: str | None = None
    line = 1
    state = "start"  # of a field: start, plain (text, a quote in it is text), quoted, closed (a quote just ended it)
    for token in found:
        if token == '"':
            # opens at a field's start (any quote, delimiter unknown); closes a quoted field, or is doubled in it
            state = {"start": "quoted", "quoted": "closed", "closed": "quoted"}.get(state, "plain" if delimiter
                                                                                   else "quoted")
            continue
        if state == "quoted":
            line += token in ENDINGS  # a quoted field's line break is its value's, of any kind
            continue
        if token not in ENDINGS:
            state = "start" if token == delimiter else "plain"
            continue
        if first is None:
            first = token
        elif token != first:
            return line, ENDINGS[first], ENDINGS[token]
        line += 1  # lines as an editor counts them, a quoted field's too
        state = "start"
    return None


def line_ending_change_words(change: tuple[int, str, str], where: str = "") -> str:
    """What is wrong with a file whose line endings change (``line_ending_change``), and the fix;
    ``where``: the file, named before the line (``people.csv, ``) where the message names another."""
    line, first, other = change
    return (f"{where}line {line} ends with {other} where line 1 ends with {first}; the CSV reader takes one kind "
            "of line ending per file (two files joined, or a file edited on another system): convert the file to "
            "one kind, e.g. with dos2unix (LF) or unix2dos (CRLF)")


def breaks_all(path: Path, encoding: str, ending: str) -> bool:
    """Whether every line break of the file (a quoted one too) is ``ending``, told by counting its
    bytes at C speed (``bytes.count``), never decoding it: the cheap question asked before
    ``line_ending_change``'s scan, which tokenizes the file in Python. False sends the file to that
    scan, which passes over quoted breaks."""
    python_encoding = "utf-16-le" if encoding.lower() == "utf-16" else encoding  # as the engine reads it
    cr, lf = "\r".encode(python_encoding), "\n".encode(python_encoding)
    crs = lfs = pairs = 0
    last = b""
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):  # an even size: a UTF-16 unit is never cut
            crs, lfs = crs + chunk.count(cr), lfs + chunk.count(lf)
            pairs += chunk.count(cr + lf) + (last == cr and chunk.startswith(lf))  # a CRLF cut between chunks
            last = chunk[-len(cr):]
    return {"\n": crs == 0, "\r": lfs == 0, "\r\n": crs == lfs == pairs}[ending]


def _field_tokens(delimiter: str) -> re.Pattern[str]:
    """Quotes, line breaks, the delimiter, and the runs of other text between them."""
    return re.compile(f'"|\r\n|\n|\r|{re.escape(delimiter)}|[^"\r\n{re.escape(delimiter)}]+')


def tokens(path: Path, encoding: str, pattern: re.Pattern[str] = _TOKENS) -> Iterator[str]:
    """The quotes and line endings of the file in order (or what ``pattern`` finds besides), read in
    chunks (a CRLF cut between two chunks kept whole); undecodable bytes replaced, never shown."""
    python_encoding = "utf-16-le" if encoding.lower() == "utf-16" else encoding  # as the engine reads it
    carry = ""
    with path.open(encoding=python_encoding, errors="replace", newline="") as handle:
        while chunk := handle.read(CHUNK):
            text = carry + chunk
            text, carry = (text[:-1], "\r") if text.endswith("\r") else (text, "")
            yield from (m.group() for m in pattern.finditer(text))
    if carry:
        yield carry
