"""DuckDB's CSV record numbers as the lines an editor shows.

DuckDB's CSV errors say ``CSV Error on Line: N``, but N counts records (the header is 1, a blank
line one too), not lines: a quoted field that spans lines (``"a\\nb"``) is one record over two
lines, so past it every number fell short of the line a user opening the file lands on. Here the
file is scanned for its line breaks in chunks, with numpy (no Python step per row): a break ends
a record when an even number of quotes precede it, a quote doubled inside a quoted field counting
twice. A quote inside an unquoted field (``5'10"``) is text, as DuckDB reads it; such a quote
(one that would open a field where no field starts) is found, and the quotes of that chunk alone
are then walked one by one. Lines are counted as an editor counts them, from 1: LF, CRLF and a
lone CR each end one. Nothing of the file but its quotes, delimiters and line breaks is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_CHUNK = 1 << 24  # units (bytes, or UTF-16 code units) read at a time
_LF, _CR, _QUOTE = 10, 13, 34


@dataclass(frozen=True)
class RecordLines:
    """The lines (from 1, the header's line 1) a record starts and ends on."""

    first: int
    last: int

    def words(self) -> str:
        """``line 5``, or for a record over several lines ``the record on lines 5–7``."""
        return f"line {self.first}" if self.last == self.first else f"the record on lines {self.first}–{self.last}"


@dataclass
class _Chunk:
    """One chunk's line breaks (positions in the file's units), which of them end a record, and
    where its quotes that open a quoted field are."""

    breaks: np.ndarray
    ends: np.ndarray
    openings: np.ndarray


def record_lines(path: Path, encoding: str, delimiter: str, record: int) -> RecordLines | None:
    """The lines DuckDB's record ``record`` (as its CSV errors number them) starts and ends on;
    None when the file cannot be read or holds fewer records."""
    breaks_before, ends_before, first = 0, 0, 1 if record == 1 else None
    try:
        for chunk, _ in _chunks(path, encoding, delimiter):
            ends = chunk.breaks[chunk.ends]
            if first is None and ends_before + len(ends) >= record - 1:  # the end of the record before
                first = _line_of(ends[record - 2 - ends_before], chunk.breaks, breaks_before) + 1
            if first is not None and ends_before + len(ends) >= record:  # the record's own end
                return RecordLines(first, _line_of(ends[record - 1 - ends_before], chunk.breaks, breaks_before))
            breaks_before, ends_before = breaks_before + len(chunk.breaks), ends_before + len(ends)
    except (OSError, ValueError):  # gone, or a delimiter its encoding cannot write
        return None
    return None if first is None else RecordLines(first, max(first, breaks_before + 1))  # no break after it


def open_quote_line(path: Path, encoding: str, delimiter: str) -> int | None:
    """The line of the quote that opens a quoted field never closed (the file ends inside it);
    None when every quoted field closes, or the file cannot be read."""
    breaks_before, line, ends_inside = 0, None, False
    try:
        for chunk, inside in _chunks(path, encoding, delimiter):
            ends_inside = inside
            if len(chunk.openings):
                line = _line_of(chunk.openings[-1], chunk.breaks, breaks_before)
            breaks_before += len(chunk.breaks)
    except (OSError, ValueError):  # gone, or a delimiter its encoding cannot write
        return None
    return line if ends_inside else None


def _line_of(position: int, breaks: np.ndarray, breaks_before: int) -> int:
    """The line (from 1) of the unit at ``position`` (a break: the line it ends), with
    ``breaks_before`` the breaks of the chunks before ``breaks``'."""
    return breaks_before + int(np.searchsorted(breaks, position)) + 1


def _chunks(path: Path, encoding: str, delimiter: str) -> Iterator[tuple[_Chunk, bool]]:
    """The file's chunks scanned in order, each with whether the file so far ends inside a quoted
    field."""
    dtype, codec = ("<u2", "utf-16-le") if encoding.lower() == "utf-16" else ("u1", encoding)
    separator = np.frombuffer(delimiter.encode(codec), dtype=dtype).astype(np.int64)
    inside, previous = False, None
    for start, units in _unit_chunks(path, np.dtype(dtype)):
        chunk, inside = _scan(units, start, separator, inside, previous)
        previous = int(units[-1]) if len(units) else previous
        yield chunk, inside


def _unit_chunks(path: Path, dtype: np.dtype) -> Iterator[tuple[int, np.ndarray]]:
    """The file's units in chunks, each with the position of its first unit; a CR ending a chunk is
    moved to the next, so that a CRLF stays whole."""
    start, carry = 0, np.empty(0, dtype=dtype)
    with path.open("rb") as handle:
        while data := handle.read(_CHUNK * dtype.itemsize):
            units = np.concatenate([carry, np.frombuffer(data, dtype=dtype, count=len(data) // dtype.itemsize)])
            cut = len(units) - 1 if units[-1] == _CR else len(units)
            yield start, units[:cut]
            start, carry = start + cut, units[cut:]
    if len(carry):
        yield start, carry


def _scan(units: np.ndarray, start: int, separator: np.ndarray, inside: bool, previous: int | None
          ) -> tuple[_Chunk, bool]:
    """One chunk (``units`` from the file's unit ``start``; ``previous``: the unit before it, None at
    the file's start), entered ``inside`` a quoted field or not: its breaks, which end a record, and
    its opening quotes; and whether it ends inside a quoted field."""
    lf = units == _LF
    lone_cr = units == _CR
    lone_cr[:-1] &= ~lf[1:]
    breaks = np.flatnonzero(lf | lone_cr)  # LF (a CRLF's too) and a lone CR
    quotes = np.flatnonzero(units == _QUOTE)
    starts = _field_starts(units, quotes, separator, previous)
    doubled = _unit_before(units, quotes, 1, previous) == _QUOTE
    opening = np.arange(len(quotes)) % 2 == (1 if inside else 0)  # were every quote to open or close a field
    if np.all(starts[opening] | doubled[opening]):
        toggles, openings = quotes, quotes[opening & ~doubled]  # a doubled quote reopens no field
    else:  # a quote inside an unquoted field, which is text
        toggles, openings = _walk(quotes, starts, inside, previous == _QUOTE)
    quoted = (np.searchsorted(toggles, breaks) + inside) % 2 == 1
    return _Chunk(breaks + start, ~quoted, openings + start), (len(toggles) + inside) % 2 == 1


def _field_starts(units: np.ndarray, quotes: np.ndarray, separator: np.ndarray, previous: int | None
                  ) -> np.ndarray:
    """For each quote, whether a field starts there: at the file's start, after a line break or
    after the delimiter."""
    before = _unit_before(units, quotes, 1, previous)
    after_separator = np.ones(len(quotes), dtype=bool)
    for back, unit in enumerate(separator[::-1], start=1):
        after_separator &= _unit_before(units, quotes, back, previous) == unit
    return (before == _LF) | (before == _CR) | (before == -1) | after_separator


def _unit_before(units: np.ndarray, positions: np.ndarray, back: int, previous: int | None) -> np.ndarray:
    """The unit ``back`` places before each position: -1 before the file's start, and before the
    chunk's the last unit of the chunk before (the one kept)."""
    at = positions - back
    found = units[np.maximum(at, 0)].astype(np.int64)
    found[at < 0] = -1 if previous is None else previous
    return found


def _walk(quotes: np.ndarray, starts: np.ndarray, inside: bool, closed_before: bool
          ) -> tuple[np.ndarray, np.ndarray]:
    """The quotes that toggle (open or close a quoted field) and those that open one, walked one by
    one: outside a quoted field a quote opens one where a field starts, or right after the quote
    that closed one (a doubled quote inside it); elsewhere it is text. ``closed_before``: the unit
    before the chunk is a quote that closed a field."""
    toggles: list[int] = []
    openings: list[int] = []
    closed_at = -1 if closed_before and not inside else -2
    for position, start in zip(quotes.tolist(), starts.tolist()):
        if inside:
            closed_at = position
        elif start:
            openings.append(position)
        elif position != closed_at + 1:  # else the second quote of a doubled one, inside the field again
            continue
        inside = not inside
        toggles.append(position)
    return np.array(toggles, dtype=np.int64), np.array(openings, dtype=np.int64)
