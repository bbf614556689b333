"""What a CSV source's misplaced quote is told as (prepare/csv_lines.unterminated_quote_problem).

Review rv26: DuckDB says "unterminated quote" both of a quote never closed and of a quoted field
with text after its closing quote (``"ab"c``), and both were told "line 2 opens a quoted field (")
that is never closed, so the rest of the file would be read as that one field" — false of the
second, which sent the operator looking for a quote that is not missing. The oracle is Python's
csv module in strict mode, which names the second kind (`',' expected after '"'`) and the line it
stops on; the files are written by hand here. No value of the file is in any message."""

from __future__ import annotations

import csv

import pytest
from click.testing import CliRunner

from sqlclose.cli import main

SPEC = """others = "keep"
[source]
path = "t.csv"
[output]
path = "out.parquet"
[privacy]
k = 2
[quasi_identifiers]
zip = { mask = true, length = 5 }
[sensitive.s]
distinct_l = 2
"""
TAIL = "47602,dd,y\n47678,ee,x\n47905,ff,y\n"


def _strict_csv_error(path) -> tuple[str, int]:
    """Python's strict csv reader's complaint and the line it stopped on: the oracle."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle, strict=True)
        with pytest.raises(csv.Error) as e:
            list(reader)
        return str(e.value), reader.line_num


def _refusal(tmp_path, text: str) -> str:
    (tmp_path / "t.csv").write_text(text, encoding="utf-8")
    (tmp_path / "s.toml").write_text(SPEC)
    r = CliRunner().invoke(main, ["anonymize", "-q", str(tmp_path / "s.toml")])
    assert r.exit_code == 2, r.output
    assert not (tmp_path / "out.parquet").exists()
    assert "ab" not in r.output.replace(str(tmp_path), "") and "dd" not in r.output  # no value of the file
    return r.output


@pytest.mark.parametrize("row, opened", [('47677,"ab"c,x\n', None), ('47677,"ab\nab"c,x\n', 2)])
def test_text_after_a_closed_quote_is_told_as_such_naming_its_line(tmp_path, row, opened):
    said = _refusal(tmp_path, "zip,note,s\n" + row + TAIL)
    complaint, line = _strict_csv_error(tmp_path / "t.csv")
    assert complaint == "',' expected after '\"'"
    assert "never closed" not in said, said
    field = "a quoted field" if opened is None else f"a quoted field opened on line {opened}"
    assert f"line {line} has text after the quote (\") that closes {field}, before the next delimiter (',')" in said


def test_a_quote_never_closed_is_still_told_as_one(tmp_path):
    said = _refusal(tmp_path, 'zip,note,s\n47677,"ab,x\n' + TAIL)
    complaint, _ = _strict_csv_error(tmp_path / "t.csv")
    assert complaint == "unexpected end of data"
    assert "line 2 opens a quoted field (\") that is never closed" in said, said


@pytest.mark.parametrize("header", ['zip,"note"c,s\n', '"zip"c,note,s\n', 'zip,"note"c,s\r\n'])
def test_text_after_a_quote_in_the_header_is_told_at_line_1(tmp_path, header):
    """Review rv28: the header's ``"note"c`` was read by Python's lenient csv reader as a name
    (``notec``), and DuckDB's strict reader then found no rows: "t.csv has no rows: there is
    nothing to anonymize" of a file of four rows (or, for the first name, "column 'zip' is not
    in t.csv"). The oracle: Python's strict csv reader stops on line 1 with the same complaint it
    makes of a data line."""
    said = _refusal(tmp_path, header + "47677,ab,x\n" + TAIL)
    complaint, line = _strict_csv_error(tmp_path / "t.csv")
    assert (complaint, line) == ("',' expected after '\"'", 1)
    assert "has no rows" not in said and "is not in" not in said, said
    assert "line 1 (the header) has text after the quote (\") that closes a quoted field, before the next " \
           "delimiter (',')" in said, said


def test_a_quote_the_header_never_closes_is_told_at_line_1(tmp_path):
    """Review rv28: a header whose quote no line closes was told "has no rows". The oracle: Python's
    strict csv reader reaches the file's end inside that field ("unexpected end of data")."""
    said = _refusal(tmp_path, 'zip,"note,s\n47677,ab,x\n' + TAIL)
    assert _strict_csv_error(tmp_path / "t.csv")[0] == "unexpected end of data"
    assert "line 1 (the header) opens a quoted field (\") that is never closed" in said, said


def test_a_quoted_header_name_over_two_lines_is_still_read(tmp_path):
    """A quote the header opens and a later line closes is a name holding a line break, not an
    error of line 1 (the scan of the whole file decides it, not the header line alone)."""
    (tmp_path / "t.csv").write_text('zip,"no\nte",s\n47677,ab,x\n' + TAIL, encoding="utf-8")
    (tmp_path / "s.toml").write_text(SPEC)
    r = CliRunner().invoke(main, ["anonymize", "-q", str(tmp_path / "s.toml")])
    assert "line 1 (the header)" not in r.output, r.output
