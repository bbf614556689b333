"""Why DuckDB's strict CSV reader gave up on a file whose parser "reached an invalid state".

DuckDB's error names neither a line nor a cause. Its reader takes one kind of line ending per
file (told by the first lines): a file whose lines end with LF and then CRLF (two exports joined
with ``cat``, a file edited on another system) stops it, where Python's csv module reads every
row. On that failure alone the file is scanned for the first line whose ending differs from the
first line's, outside quoted fields (``engine.line_endings``, which Spark's read shares), so that the
message names the line and the fix. Nothing of a line but its ending is read into the message.

DuckDB's other CSV errors name a record (``CSV Error on Line: N`` counts records, not lines); the
line an editor shows is found by ``csv_records`` and named instead (``editor_lines``).

A CSV's header record (read whole where a quoted name holds a line break) and the line ending after
it, which the engines' readers are told, are found here too (``header_record``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from sqlclose.engine.duckdb import RECORDS_COUNTED
from sqlclose.engine.line_endings import CHUNK as _CHUNK
from sqlclose.engine.line_endings import ENDINGS as _ENDINGS
from sqlclose.engine.line_endings import line_ending_change, line_ending_change_words
from sqlclose.engine.line_endings import tokens as _tokens
from sqlclose.prepare.csv_records import open_quote_line, record_lines

INVALID_STATE = "CSV Parser state machine reached an invalid state"
_FILE = re.compile(r"^\s*file = (.+?)\s*$", re.M)  # DuckDB's error lists the file it read
_RECORD = re.compile(r"CSV Error on Line: (\d+)")  # a record's number, the header's 1


def invalid_state_problem(driver_text: str, path: Path, encoding: str, delimiter: str | None = None) -> str:
    """The spec's words for DuckDB's invalid-state error on the CSV ``path`` (a pattern's: the file
    DuckDB's message names): the line where the line endings change, or what else to check."""
    failed = failed_file(driver_text, path)
    change = line_ending_change(failed, encoding, delimiter) if failed.is_file() else None
    if change is None:
        return ("its CSV could not be parsed (it is not RFC 4180 CSV: say a quote inside a field that is not "
                "quoted, or a quoted field left open); fix the file")
    return line_ending_change_words(change, f"{failed}, " if failed != path.resolve() else "")


def failed_file(driver_text: str, path: Path) -> Path:
    """The file DuckDB's CSV error names (one of a pattern's), else ``path``."""
    named = _FILE.search(driver_text)
    return Path(named.group(1)).resolve() if named else path


def editor_lines(driver_text: str, path: Path, encoding: str, delimiter: str) -> str | None:
    """Where DuckDB's CSV error is, in the lines an editor shows: ``line 5``, or ``the record on
    lines 5–7`` for one that spans lines (a pattern's file named first); None when the error names
    no record. DuckDB numbers records, so past a quoted field holding a line break its number was
    short of the line."""
    record = _RECORD.search(driver_text)
    if record is None:
        return None
    failed = failed_file(driver_text, path)
    lines = record_lines(failed, encoding, delimiter, int(record.group(1))) if failed.is_file() else None
    where = lines.words() if lines else f"record {record.group(1)} {RECORDS_COUNTED}"
    return where if failed == path.resolve() else f"{failed}, {where}"  # one of a pattern's files


_LISTED = re.compile(r"^  (\w+) = (.*?)(?: \((?:Auto-Detected|Set By User)\))?$", re.M)  # its options


def query_editor_lines(driver_text: str, folder: Path | None) -> str | None:
    """Where a source query's ``read_csv`` failed, in the lines an editor shows (``editor_lines``),
    the file and how it was read taken from the options DuckDB's error lists (a name relative to
    ``folder``, where the query's files are looked up); None when the error names no record. Read
    without quotes, a file's records are its lines. A reading this scan does not follow (another
    quote character, rows skipped, comments, a delimiter past ASCII) is told as DuckDB's record
    number, said to be one."""
    record = _RECORD.search(driver_text)
    if record is None:
        return None
    listed = dict(_LISTED.findall(driver_text))
    if listed.get("quote") == "(empty)" and listed.get("skip_rows") == "0" and listed.get("comment") == "(empty)":
        return f"line {record.group(1)}"  # read without quotes: every line is a record
    file = Path(listed.get("file", ""))
    file = file if file.is_absolute() or folder is None else folder / file
    delimiter = listed.get("delimiter", "")
    followed = (listed.get("quote") == '"' and listed.get("escape") in ('"', "(empty)") and
                listed.get("skip_rows") == "0" and listed.get("comment") == "(empty)" and
                len(delimiter) == 1 and delimiter.isascii() and file.is_file())
    lines = record_lines(file, _encoding_by_mark(file), delimiter, int(record.group(1))) if followed else None
    return lines.words() if lines else f"record {record.group(1)} {RECORDS_COUNTED}"


def _encoding_by_mark(path: Path) -> str:
    """UTF-16 for a file that starts with its byte-order mark; else UTF-8 (or Latin-1, which puts
    quotes, line breaks and an ASCII delimiter at the same bytes)."""
    with path.open("rb") as handle:
        return "utf-16" if handle.read(2) == b"\xff\xfe" else "utf-8"


def with_editor_lines(message: str, driver_text: str, path: Path, encoding: str, delimiter: str) -> str:
    """``message`` (DuckDB's words) with its ``CSV Error on Line: N`` told as the line an editor shows."""
    where = editor_lines(driver_text, path, encoding, delimiter)
    return message if where is None else _RECORD.sub(lambda _: f"CSV error on {where}", message)


def unterminated_quote_problem(driver_text: str, path: Path, encoding: str, delimiter: str, where: str) -> str:
    """The spec's words for DuckDB's "unterminated quote" on the CSV ``path`` (a pattern's: the
    file its message names), which it says of a quote never closed and of a quoted field with text
    after its closing quote (``"ab"c``) alike: the file is scanned for the second, and else for the
    line of the quote left open (``where``: the record DuckDB names, told when the scan finds none)."""
    failed = failed_file(driver_text, path)
    found = text_after_quote(failed, encoding, delimiter) if failed.is_file() and len(delimiter) == 1 else None
    if found is None:
        opened = open_quote_line(failed, encoding, delimiter) if failed.is_file() else None
        return never_closed_words(where if opened is None else f"line {opened}")
    return text_after_quote_words(*found, delimiter)


def never_closed_words(where: str) -> str:
    """What is wrong with a quote never closed that ``where`` (``line 4``) opens, and the fix."""
    return (f"{where} opens a quoted field (\") that is never closed, so the rest of the file would be read as "
            "that one field; close the quote, or double a quote inside a field (\"\")")


def text_after_quote_words(opened: int, closed: int, delimiter: str, where: str = "") -> str:
    """What is wrong with text after the quote closing a field opened on line ``opened`` and closed
    on line ``closed`` (``where``: words after the line's number, `` (the header)``), and the fix."""
    field = "a quoted field" if opened == closed else f"a quoted field opened on line {opened}"
    return (f"line {closed}{where} has text after the quote (\") that closes {field}, before the next delimiter "
            f"({delimiter!r}) or the line's end; quote the whole field, doubling each quote inside it (\"\"), or "
            "remove the stray quotes")


def text_after_quote(path: Path, encoding: str, delimiter: str) -> tuple[int, int] | None:
    """The lines (as an editor counts them) where the first quoted field followed by text before
    the next delimiter or line end opens and closes; None when there is none. Spaces after the
    closing quote are let be, as DuckDB lets them."""
    return _scan_quotes(_tokens(path, encoding, _field_tokens(delimiter)), delimiter)[0]


def header_quote_problem(path: Path, line: str, encoding: str, delimiter: str) -> str | None:
    """What is wrong with the quotes of the CSV ``path``'s header ``line`` (line 1, its line break
    left off): text after a quote that closes a field (``"d"x``), or a quote it opens that the
    file never closes; else None. Read alone, the header came out of Python's lenient csv reader
    as names (``dx``), and DuckDB's strict reader then found no rows (review rv28)."""
    found, ends_quoted = _scan_quotes((m.group() for m in _field_tokens(delimiter).finditer(line)), delimiter)
    if found is not None:
        return text_after_quote_words(*found, delimiter, " (the header)")
    # A quoted name may span lines: the file alone tells whether its quote is ever closed.
    if ends_quoted and open_quote_line(path, encoding, delimiter) == 1:
        return never_closed_words("line 1 (the header)")
    return None


def _field_tokens(delimiter: str) -> re.Pattern[str]:
    """Quotes, line breaks, the delimiter, and the runs of other text (spaces apart) between them."""
    return re.compile(f'"|\r\n|\n|\r|{re.escape(delimiter)}|[^"\r\n {re.escape(delimiter)}]+')


def _scan_quotes(tokens: Iterator[str], delimiter: str) -> tuple[tuple[int, int] | None, bool]:
    """Over the ``tokens`` of ``_field_tokens`` (a file's, or one line's): the lines where the first
    quoted field followed by text opens and closes (``text_after_quote``), else None; and whether
    the tokens end inside a quoted field."""
    line, opened, state = 1, 1, "start"  # start of a field, plain text, quoted, closed (quote just ended)
    for token in tokens:
        if token in _ENDINGS or token == delimiter:
            line += token in _ENDINGS
            state = "quoted" if state == "quoted" else "start"
        elif token == '"':  # opens at a field's start; in a quoted field, closes or is doubled ("")
            opened = line if state == "start" else opened
            state = {"start": "quoted", "quoted": "closed", "closed": "quoted"}.get(state, state)
        elif state == "closed":
            return (opened, line), False
        elif state == "start":
            state = "plain"
    return None, state == "quoted"


def header_record(line: str, rest: Iterator[str], delimiter: str = ",") -> tuple[str, str | None, bool]:
    """The header record whose first line is ``line`` (its line break kept), the line ending after it,
    and whether a quoted field of it holds a line break (a column named ``"b\\rc"``): such a record
    is read on from ``rest``, the file's next characters, only as far as it reaches, never into a row.
    The ending is None when the file ends with the header, or the record does not end within
    ``_CHUNK`` characters (read as a line then: its open quote is told there). DuckDB's reader took a
    carriage return inside the quotes for the file's line ending: it read no row, or said a line had
    more fields than the header (ninety-eighth round); told the ending (``FileRead.new_line``), it
    reads the file right. Spark's reader is told the files' ending (``FileRead.line_ending``), or
    each file's own where they differ (``FileRead.line_endings``).
    Only a quote at a field's start (after the ``delimiter``, of one character) opens a quoted field,
    as both readers take one: a stray quote inside a name (``no"te``) is part of it, and read as an
    open quote it took the record on into the rows, and a row's line ending, or a quoted line break
    in a row's value, for the header's (hundredth round: a file of LF lines read with CRLF, no row)."""
    state = _quote_state(line, delimiter)
    if state != "quoted":
        return line.rstrip("\r\n"), _ending(line, rest), False
    pieces, size = [line], len(line)
    for char in rest:
        size += 1
        if size > _CHUNK:
            break
        if state != "quoted" and char in "\r\n":  # the record's end
            ending = "\r\n" if char == "\r" and next(rest, "") == "\n" else char
            return "".join(pieces), ending, True
        state = _next_state(state, char, delimiter)
        pieces.append(char)
    return line.rstrip("\r\n"), None, False


def _quote_state(text: str, delimiter: str) -> str:
    """Where ``text`` (a record's start) leaves its last field (``_next_state``)."""
    state = "start"
    for char in text:
        state = _next_state(state, char, delimiter)
    return state


def _next_state(state: str, char: str, delimiter: str) -> str:
    """A field's state after ``char``: at its start, in plain text (a quote there is text), quoted,
    or closed (a quote just ended it; a quote next is a doubled one). A delimiter of more than one
    character: every quote toggles, as counted before."""
    if len(delimiter) != 1:
        return ("closed" if state == "quoted" else "quoted") if char == '"' else state
    if state == "quoted":
        return "closed" if char == '"' else state
    if char == " ":  # spaces around a field are no part of it: DuckDB reads a, "b" as quoted (``_scan_quotes``)
        return state
    if char == '"':
        return "quoted" if state in ("start", "closed") else state
    return "start" if char == delimiter or char in "\r\n" else "plain"


def _ending(line: str, rest: Iterator[str]) -> str | None:
    """The line break ending ``line`` (a first line read up to its LF or CR): a CR followed by an LF
    is a CRLF's half."""
    if line.endswith("\n"):
        return "\r\n" if line.endswith("\r\n") else "\n"
    if line.endswith("\r"):
        return "\r\n" if next(rest, "") == "\n" else "\r"
    return None
