"""Why DuckDB's strict CSV reader gave up on a file whose parser "reached an invalid state".

DuckDB's error names neither a line nor a cause. Its reader takes one kind of line ending per
file (told by the first lines): a file whose lines end with LF and then CRLF (two exports joined
with ``cat``, a file edited on another system) stops it, where Python's csv module reads every
row. On that failure alone the file is scanned here for the first line whose ending differs
from the first line's, outside quoted fields, so that the message names the line and the fix.
Nothing of a line but its ending is read into the message.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

INVALID_STATE = "CSV Parser state machine reached an invalid state"
_FILE = re.compile(r"^\s*file = (.+?)\s*$", re.M)  # DuckDB's error lists the file it read
_TOKENS = re.compile(r'"|\r\n|\n|\r')
_ENDINGS = {"\n": "LF (\\n)", "\r\n": "CRLF (\\r\\n)", "\r": "CR (\\r)"}
_CHUNK = 1 << 20


def invalid_state_problem(driver_text: str, path: Path, encoding: str) -> str:
    """The spec's words for DuckDB's invalid-state error on the CSV ``path`` (a pattern's: the file
    DuckDB's message names): the line where the line endings change, or what else to check."""
    named = _FILE.search(driver_text)
    failed = Path(named.group(1)).resolve() if named else path
    change = line_ending_change(failed, encoding) if failed.is_file() else None
    where = f"{failed}, " if named and failed != path.resolve() else ""
    if change is None:
        return ("its CSV could not be parsed (it is not RFC 4180 CSV: say a quote inside a field that is not "
                "quoted, or a quoted field left open); fix the file")
    line, first, other = change
    return (f"{where}line {line} ends with {other} where line 1 ends with {first}; the CSV reader takes one kind "
            "of line ending per file (two files joined, or a file edited on another system): convert the file to "
            "one kind, e.g. with dos2unix (LF) or unix2dos (CRLF)")


def line_ending_change(path: Path, encoding: str) -> tuple[int, str, str] | None:
    """The first line (from 1, as an editor counts them) whose ending is not line 1's, the line
    breaks inside quoted fields passed over, with line 1's ending and that one; None when every
    line ends alike."""
    first: str | None = None
    line = 1
    quoted = False
    for token in _tokens(path, encoding):
        if token == '"':
            quoted = not quoted  # a quote doubled inside a quoted field toggles twice
            continue
        if not quoted:  # a quoted field's line break is its value's, of any kind
            if first is None:
                first = token
            elif token != first:
                return line, _ENDINGS[first], _ENDINGS[token]
        line += 1  # lines as an editor counts them, a quoted field's too
    return None


def _tokens(path: Path, encoding: str, tokens: re.Pattern[str] = _TOKENS) -> Iterator[str]:
    """The quotes and line endings of the file in order (or what ``tokens`` finds besides), read in
    chunks (a CRLF cut between two chunks kept whole); undecodable bytes replaced, never shown."""
    python_encoding = "utf-16-le" if encoding.lower() == "utf-16" else encoding  # as the engine reads it
    carry = ""
    with path.open(encoding=python_encoding, errors="replace", newline="") as handle:
        while chunk := handle.read(_CHUNK):
            text = carry + chunk
            text, carry = (text[:-1], "\r") if text.endswith("\r") else (text, "")
            yield from (m.group() for m in tokens.finditer(text))
    if carry:
        yield carry


def unterminated_quote_problem(driver_text: str, path: Path, encoding: str, delimiter: str, where: str) -> str:
    """The spec's words for DuckDB's "unterminated quote" on the CSV ``path`` (a pattern's: the
    file its message names), which it says of a quote never closed and of a quoted field with text
    after its closing quote (``"ab"c``) alike: the file is scanned for the second (``where``: the
    line DuckDB names, told for the first)."""
    named = _FILE.search(driver_text)
    failed = Path(named.group(1)).resolve() if named else path
    found = text_after_quote(failed, encoding, delimiter) if failed.is_file() and len(delimiter) == 1 else None
    if found is None:
        return (f"{where} opens a quoted field (\") that is never closed, so the rest of the file would be read as "
                "that one field; close the quote, or double a quote inside a field (\"\")")
    opened, closed = found
    field = "a quoted field" if opened == closed else f"a quoted field opened on line {opened}"
    return (f"line {closed} has text after the quote (\") that closes {field}, before the next delimiter "
            f"({delimiter!r}) or the line's end; quote the whole field, doubling each quote inside it (\"\"), or "
            "remove the stray quotes")


def text_after_quote(path: Path, encoding: str, delimiter: str) -> tuple[int, int] | None:
    """The lines (as an editor counts them) where the first quoted field followed by text before
    the next delimiter or line end opens and closes; None when there is none. Spaces after the
    closing quote are let be, as DuckDB lets them."""
    tokens = re.compile(f'"|\r\n|\n|\r|{re.escape(delimiter)}|[^"\r\n {re.escape(delimiter)}]+')
    line, opened, state = 1, 1, "start"  # start of a field, plain text, quoted, closed (quote just ended)
    for token in _tokens(path, encoding, tokens):
        if token in _ENDINGS or token == delimiter:
            line += token in _ENDINGS
            state = "quoted" if state == "quoted" else "start"
        elif token == '"':  # opens at a field's start; in a quoted field, closes or is doubled ("")
            opened = line if state == "start" else opened
            state = {"start": "quoted", "quoted": "closed", "closed": "quoted"}.get(state, state)
        elif state == "closed":
            return opened, line
        elif state == "start":
            state = "plain"
    return None
