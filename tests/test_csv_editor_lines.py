"""A CSV error names the line an editor shows, past a quoted field that spans lines.

DuckDB's CSV errors say ``CSV Error on Line: N``, where N counts records (the header 1), not
lines: after a field holding a line break (``"a\\nb"``) every message named a line short of the
one a user opening the file lands on — a value that is not a number, a row with more or fewer
fields, a quote never closed, text that is not UTF-8, and a source query's read_csv. Now the
file's line breaks outside quoted fields are counted (``prepare/csv_records``) and the line an
editor shows (from 1, the header's) is named. The oracle: the lines counted by hand in each
test's literal file text (written as its physical lines, joined here), and for the scan itself
Python's csv module, whose ``line_num`` counts the lines a record ends on. No value of a file is
in any message.
"""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

import sqlclose.prepare.csv_records as csv_records
from sqlclose.cli import main
from sqlclose.prepare.csv_records import RecordLines, open_quote_line, record_lines

SPEC = """others = "keep"
[source]
path = "{path}"
{source}
[output]
path = "out.parquet"
[privacy]
k = 2
[quasi_identifiers]
zip = {{ mask = true, length = 5 }}
[sensitive.s]
distance = "ordered"
t = 0.9
"""
# Lines 1–4 of every file: the header, then a record whose note spans lines 2–4.
HEAD = ["zip,note,s", '47677,"first', "second", 'third",1']
TAIL = ["47602,dd,2", "47678,ee,3", "47905,ff,2"]


def _refusal(folder: Path, lines: list[str], source: str = "", path: str = "t.csv", *command: str) -> str:
    (folder / "t.csv").write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
    (folder / "s.toml").write_text(SPEC.format(path=path, source=source))
    args = command or ("anonymize", "-q", str(folder / "s.toml"))
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 2, r.output
    assert not (folder / "out.parquet").exists()
    assert "first" not in r.output and "second" not in r.output and "SECRET" not in r.output  # no value shown
    return r.output


@pytest.mark.parametrize("bad, source, said", [
    ("47677,x,SECRET", "", "column 's' holds a value that is not a number (line 5)"),
    ("47677,x,9223372036854775808", "", "column 's' holds a whole number past BIGINT's range, "
                                        "±9223372036854775807 (line 5); declare the column's type for numbers that "
                                        "large: [source] types = { s = \"DECIMAL(38, 0)\" }"),
    ("SECRET,x,1", 'types = { zip = "BIGINT" }', "column 'zip' holds a value that is not a BIGINT (line 5)"),
    ("47677,x", "", "line 5 has 2 fields where the header has 3"),
    ("47677,x,1,SECRET", "", "line 5 has more fields than the header's 3"),
    ('47677,"SECRET,1', "", "line 5 opens a quoted field (\") that is never closed"),
    ("47677,SECRET\udcff,1", "", "it is not UTF-8 text (line 5)"),
])
def test_a_csv_error_names_the_editor_line_past_a_field_over_three_lines(tmp_path, bad, source, said):
    """Line 5 by hand: the header (1), the record over lines 2–4, then the bad line. DuckDB says
    record 3, which was told as "line 3"."""
    assert (HEAD + [bad] + TAIL).index(bad) + 1 == 5
    assert said in _refusal(tmp_path, HEAD + [bad] + TAIL, source)


def test_a_record_that_spans_lines_is_named_by_its_lines(tmp_path):
    """The bad value sits in a record written over lines 5 and 6 (its note holds a line break)."""
    said = _refusal(tmp_path, HEAD + ['47677,"p', 'q",SECRET'] + TAIL)
    assert "column 's' holds a value that is not a number (the record on lines 5–6)" in said


def test_check_names_the_editor_line_too(tmp_path):
    """``sqlclose check`` reads a CSV as ``anonymize`` does, and says the same line."""
    (tmp_path / "t.csv").write_text("\n".join(HEAD + ["47677,x"] + TAIL) + "\n")
    r = CliRunner().invoke(main, ["check", str(tmp_path / "t.csv"), "--qi", "zip", "--sensitive", "s"])
    assert r.exit_code == 2, r.output
    assert "line 5 has 2 fields where the header has 3" in r.output


def test_a_patterns_file_is_named_with_its_line(tmp_path):
    """Of the files a pattern reads, the one DuckDB stopped in is named with its line (it was not)."""
    (tmp_path / "t0.csv").write_text("\n".join(HEAD[:1] + TAIL) + "\n")
    said = _refusal(tmp_path, HEAD + ["47677,x"] + TAIL, "glob = true", "t*.csv")
    assert f"{tmp_path / 't.csv'}, line 5 has 2 fields where the header has 3" in said


def test_a_source_querys_read_csv_names_the_editor_line(tmp_path):
    """A source query's ``read_csv`` (types declared there): DuckDB's record 3 was "CSV line 3"."""
    (tmp_path / "people.csv").write_text("\n".join(HEAD + ["47677,x,SECRET"] + TAIL) + "\n")
    query = "SELECT * FROM read_csv('people.csv', header = true, columns = {'zip': 'VARCHAR', 'note': 'VARCHAR', "
    query += "'s': 'BIGINT'})"
    (tmp_path / "s.toml").write_text(SPEC.format(path="people.csv", source="").replace(
        'path = "people.csv"\n', f'query = "{query}"\n').replace('distance = "ordered"\nt = 0.9', "distinct_l = 1"))
    r = CliRunner().invoke(main, ["anonymize", "-q", str(tmp_path / "s.toml")])
    assert r.exit_code == 2, r.output
    assert "CSV line 5; column 's'" in r.output and "SECRET" not in r.output and "first" not in r.output


def _python_csv_lines(text: str, delimiter: str) -> list[tuple[int, int]]:
    """The oracle: each record's first and last line, by Python's csv reader (``line_num``)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    spans, last = [], 0
    for _ in reader:
        spans.append((last + 1, reader.line_num))
        last = reader.line_num
    return spans


def _random_field(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.3:  # quoted, with line breaks of each kind, doubled quotes, the delimiter
        return '"' + rng.choice(["a\nb", 'x""y', "", "p;q", "\n\n", 'z""\r\nw', "é\rü", "\r\n"]) + '"'
    if kind < 0.4:  # a quote inside an unquoted field is text
        return rng.choice(['x"y', "5'10\"", 'ab"'])
    return rng.choice(["1", "abc", "", "zé"])


@pytest.mark.parametrize("encoding, newline", [("utf-8", "\n"), ("utf-8", "\r\n"), ("latin-1", "\r"),
                                               ("utf-16", "\r\n")])
def test_the_scan_finds_each_records_lines_as_pythons_csv_reader_counts_them(monkeypatch, tmp_path, encoding,
                                                                              newline):
    """Random files (blank lines, quoted line breaks, literal quotes), read in chunks of 1, 3 and 4
    units so that a CRLF, a doubled quote and a quote after the delimiter fall across chunks."""
    rng = random.Random(f"{encoding}{newline!r}")
    path = tmp_path / "f.csv"
    for _ in range(60):
        rows = ["" if rng.random() < 0.1 else ";".join(_random_field(rng) for _ in range(3))
                for _ in range(rng.randint(1, 10))]
        text = newline.join(rows) + rng.choice(["", newline])
        path.write_bytes(text.encode("utf-16-le" if encoding == "utf-16" else encoding))
        expected = _python_csv_lines(text, ";")
        for chunk in (1, 3, 4, 1 << 20):
            monkeypatch.setattr(csv_records, "_CHUNK", chunk)
            got = [record_lines(path, encoding, ";", r) for r in range(1, len(expected) + 1)]
            assert got == [RecordLines(*span) for span in expected], (text, chunk)


def test_the_line_of_a_quote_never_closed_is_the_one_it_opens_on(tmp_path):
    """Lines by hand: the quoted field over lines 2–3 closes; the one on line 4 never does (a quote
    doubled inside it, on line 5, opens no field)."""
    path = tmp_path / "f.csv"
    path.write_text('a,b\n1,"x\ny"\n2,"open\n3,""z\n')
    assert open_quote_line(path, "utf-8", ",") == 4
    path.write_text('a,b\n1,5"10,x\n2,"open\n3,""z\n')  # a quote inside an unquoted field is text
    assert open_quote_line(path, "utf-8", ",") == 3
    path.write_text('a,b\n1,"x\ny"\n2,z\n')
    assert open_quote_line(path, "utf-8", ",") is None
