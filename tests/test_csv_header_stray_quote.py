"""A stray quote inside a CSV header's name (``x,s,no"te``: a quote not at a field's start).

DuckDB reads such a quote as text, a name ``no"te`` (as Python's csv module does). ``header_record``
counted every quote, took the odd one for an open quoted field, and read on into the rows for the
record's end: a row's line ending, or a quoted line break in a row's value, became the header's. A
file of LF lines whose row held a quoted "\\r\\n" was then read with CRLF, and DuckDB found no row
("has no rows: there is nothing to anonymize"); a file whose line endings change after the header was
refused as "not RFC 4180 CSV", the scan for the change taking the stray quote to quote the rest of
the file. Oracles: the rows and names the test wrote, and the line it made end otherwise.
"""

from __future__ import annotations

import pytest

import sqlclose
from sqlclose.errors import InputError
from sqlclose.prepare.csv_lines import header_record

SPEC = {"privacy": {"k": 2}, "others": "keep", "quasi_identifiers": {"x": {"bands": [10]}},
        "sensitive": {"s": {"distinct_l": 2}}}
NOTES = [f"n{i}" for i in range(8)]


def _rows(path) -> tuple[list[str], list[str]]:
    with sqlclose.anonymize(str(path), SPEC) as release:
        table = release.to_arrow()
    return table.column_names, sorted(table.column('no"te').to_pylist())


@pytest.mark.parametrize("ending", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_stray_quote_in_a_header_name_is_read_as_text_and_every_row_is_read(tmp_path, ending):
    """Was, for the LF file: "has no rows: there is nothing to anonymize" (read with the row's CRLF)."""
    notes = ["a\r\nb", *NOTES]
    rows = [f'{i},{"ab"[i % 2]},' + (f'"{note}"' if "\r" in note else note) for i, note in enumerate(notes)]
    path = tmp_path / "people.csv"
    path.write_bytes(('x,s,no"te' + ending + ending.join(rows) + ending).encode())
    assert _rows(path) == (["x", "s", 'no"te'], sorted(notes))


def test_a_stray_quote_in_a_header_leaves_a_change_of_line_ending_named(tmp_path):
    """Was "its CSV could not be parsed (it is not RFC 4180 CSV …)": the line is 2, the first row's."""
    rows = [f'{i},{"ab"[i % 2]},{note}' for i, note in enumerate(NOTES)]
    path = tmp_path / "people.csv"
    path.write_bytes(('x,s,no"te\n' + "\r\n".join(rows) + "\r\n").encode())
    with pytest.raises(InputError) as raised:
        _rows(path)
    assert "line 2 ends with CRLF (\\r\\n) where line 1 ends with LF (\\n)" in str(raised.value)
    assert "dos2unix" in str(raised.value) and str(path) in str(raised.value)


@pytest.mark.parametrize(("line", "rest", "ending"), [
    ('x,s,no"te\n', '0,a,"n\r\nx"\n', "\n"),  # a row's quoted CRLF was taken for the header's ending
    ('x,s,no"te\n', '0,a,n0\r\n', "\n"),  # a row's CRLF was read into the header
    ('x;s;no"te\r\n', '0;a;"n\nx"\r\n', "\r\n"),
])
def test_a_header_records_ending_is_its_first_lines(line, rest, ending):
    """The header record is line 1 alone, its ending line 1's (was the row's: "\\r\\n", then None)."""
    read = header_record(line, iter(rest), ";") if ";" in line else header_record(line, iter(rest))  # "," unsaid
    assert read == (line.rstrip("\r\n"), ending, False)


def test_a_quoted_header_name_after_a_space_holding_a_line_break_is_read_whole(tmp_path):
    """DuckDB's reader skips the spaces before a quote: ``x,s, "no\\rte"`` names a column ``no\\rte``,
    a quoted carriage return in it. Read as text after the space, the quote left the record ending at
    that carriage return, the file (of LF lines) read as of CR ones: no row. Oracle: the rows written."""
    path = tmp_path / "people.csv"
    rows = [f'{i},{"ab"[i % 2]},{note}' for i, note in enumerate(NOTES)]
    path.write_bytes(('x,s, "no\rte"\n' + "\n".join(rows) + "\n").encode())
    assert header_record('x,s, "no\r', iter('te"\n0,a,n0\n')) == ('x,s, "no\rte"', "\n", True)
    with sqlclose.anonymize(str(path), SPEC) as release:
        table = release.to_arrow()
    assert table.column_names == ["x", "s", "no\rte"]
    assert sorted(table.column("no\rte").to_pylist()) == sorted(NOTES)


def test_a_quoted_header_name_after_a_space_is_its_text(tmp_path):
    """``x, "s",no"te``: DuckDB names the second column s (the spaces and quotes no part of it), and so
    does the release (a guard beside the test above: the header's names are split as DuckDB splits them)."""
    path = tmp_path / "people.csv"
    rows = [f'{i},{"ab"[i % 2]},{note}' for i, note in enumerate(NOTES)]
    path.write_bytes(('x, "s",no"te\n' + "\n".join(rows) + "\n").encode())
    assert _rows(path) == (["x", "s", 'no"te'], sorted(NOTES))
