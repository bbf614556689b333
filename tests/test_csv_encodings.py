"""A CSV source in each encoding ``[source] encoding`` takes (docs/spec.md: utf-8, utf-16, latin-1)
is read. The oracle: a plain GROUP BY over the written release counts the rows of each city the
table was built with (12 rows, 3 cities, 4 each), accented names and all."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from own_connection import rows as _rows
from table3_project import invoke

CITIES = ["Zürich", "Genève", "Köln"]



def _project(folder: Path, data: bytes, encoding: str) -> Path:
    (folder / "p.csv").write_bytes(data)
    (folder / "city.csv").write_text("".join(f"{city};{country};*\n" for city, country in
                                             zip(CITIES, ["CH", "CH", "DE"])), encoding="utf-8")
    spec = folder / "s.toml"
    spec.write_text(f'[source]\npath = "p.csv"\nencoding = "{encoding}"\n[output]\npath = "out/r.parquet"\n'
                    '[privacy]\nk = 2\n[quasi_identifiers]\nage = { bands = [10, 20] }\ncity = { file = "city.csv" }\n'
                    '[sensitive.diagnosis]\ndistinct_l = 2\n', encoding="utf-8")
    return spec


def _text() -> str:
    rows = ["age,city,diagnosis"] + [f"{20 + i},{CITIES[i % 3]},{['flu', 'ulcer'][i % 2]}" for i in range(12)]
    return "\r\n".join(rows) + "\r\n"


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "latin-1", "utf-8-sig"])
def test_a_csv_in_each_declared_encoding_is_read(tmp_path, codec):
    """A UTF-16 file, with its byte-order mark (as Python, Excel's "Unicode text" and Notepad write
    it) or without (little-endian, as the engine reads it), was refused with `encoding = "utf-16"`
    — "it is not UTF-16 text (line 1); set [source] encoding = "latin-1" or "utf-16"", advising
    the setting given: its header was read with readline() on bytes, which cut UTF-16's two-byte
    line break in half. Latin-1 and UTF-8 with a mark held already and are kept here."""
    encoding = {"utf-16-le": "utf-16", "utf-8-sig": "utf-8"}.get(codec, codec)
    spec = _project(tmp_path, _text().encode(codec), encoding)
    result = invoke("anonymize", spec, "--no-progress", "--node", "age=2,city=0")
    assert result.exit_code == 0, result.output
    got = _rows(f"SELECT city, count(*) FROM '{tmp_path / 'out' / 'r.parquet'}' GROUP BY ALL ORDER BY ALL")
    assert got == sorted((city, 4) for city in CITIES)


def test_a_big_endian_utf16_csv_is_refused_saying_how_to_save_it(tmp_path):
    """The engine reads UTF-16 little-endian only: a big-endian file (its mark FE FF) is read as one
    column of noise. Refused before the engine reads it, naming the file and what to save it as;
    nothing is written (the file system's state)."""
    spec = _project(tmp_path, ("\ufeff" + _text()).encode("utf-16-be"), "utf-16")
    result = invoke("anonymize", spec, "--no-progress")
    assert result.exit_code == 2, result.output
    assert f"cannot read {tmp_path / 'p.csv'}: it is big-endian UTF-16" in result.output
    assert "re-save it as UTF-16 LE" in result.output
    assert not (tmp_path / "out").exists()


def test_a_big_endian_utf16_csv_without_a_byte_order_mark_is_refused_as_one_with_it(tmp_path):
    """Ninety-fifth round: a big-endian file without its mark (as Java's "UTF-16" writer or `iconv
    -t UTF-16BE` write it) was read little-endian, its header one name of noise, and refused with
    "column 'age' is not in p.csv (it has 1 column …)", which sent the user looking for a missing
    column. Its header's bytes tell it (00 61 00 67 …: each ASCII character's zero byte first), and
    it is refused as the marked file is, with the same advice; nothing is written."""
    spec = _project(tmp_path, _text().encode("utf-16-be"), "utf-16")
    assert (tmp_path / "p.csv").read_bytes()[:4] == b"\x00a\x00g"  # the file as written: no mark
    result = invoke("anonymize", spec, "--no-progress")
    assert result.exit_code == 2, result.output
    assert result.output == (f"sqlclose: error: cannot read {tmp_path / 'p.csv'}: it is big-endian UTF-16 (no "
                             "byte-order mark, but its header line's break says so: 00 0A, its zero byte first), "
                             "which is read little-endian only; re-save it as UTF-16 LE (Windows' "
                             '"Unicode") or UTF-8\n')
    assert not (tmp_path / "out").exists()


def _with_names(names: tuple[str, str]) -> str:
    """``_text()`` with a column before and one after, named ``names``: their fields empty."""
    lines = _text().split("\r\n")[:-1]
    head = f"{names[0]},{lines[0]},{names[1]}"
    return "\r\n".join([head] + [f",{line}," for line in lines[1:]]) + "\r\n"


def test_a_header_is_told_big_endian_by_its_line_break_not_its_names(tmp_path):
    """Review of the ninety-fifth round: the header's names told the byte order (every character's
    zero byte first: big-endian), and names do not: 一 (U+4E00) little-endian is 00 4E, as a
    big-endian N is. A little-endian header of a long CJK name (its line break past the first 4 KiB
    looked at) was refused as big-endian, and so was one holding U+0D00 (00 0D, read as a big-endian
    CR); a big-endian header holding 一 (4E 00, a zero byte second) passed, told as a missing
    column. The line break tells it: 0A 00 little-endian, 00 0A big-endian. Oracle: the file as
    written (its bytes), the cities counted in the release; the refusal's words."""
    little = _project(tmp_path, _with_names(("一" * 3000, "一\u0d00")).encode("utf-16-le"), "utf-16")
    little.write_text('others = "drop"\n' + little.read_text(encoding="utf-8"), encoding="utf-8")
    assert (tmp_path / "p.csv").read_bytes()[:2] == b"\x00\x4e"  # zero byte first, and little-endian
    result = invoke("anonymize", little, "--no-progress", "--node", "age=2,city=0")
    assert result.exit_code == 0, result.output
    got = _rows(f"SELECT city, count(*) FROM '{tmp_path / 'out' / 'r.parquet'}' GROUP BY ALL ORDER BY ALL")
    assert got == sorted((city, 4) for city in CITIES)
    big = _project(tmp_path / "out", _with_names(("id", "第一")).encode("utf-16-be"), "utf-16")
    result = invoke("anonymize", big, "--no-progress")
    assert result.exit_code == 2 and "it is big-endian UTF-16 (no byte-order mark, but its header line's break " \
        "says so" in result.output, result.output


def test_a_file_its_encoding_does_not_decode_is_told_the_other_encodings(tmp_path):
    """The advice names the encodings not given: with `encoding = "utf-16"` it advised "utf-16".
    An odd number of bytes is no UTF-16 text; the header line is the one that fails."""
    spec = _project(tmp_path, "age,city,diagnosis\n".encode("utf-16-le")[:-1], "utf-16")
    result = invoke("anonymize", spec, "--no-progress")
    assert result.exit_code == 2, result.output
    assert result.output.strip().endswith(f"cannot read {tmp_path / 'p.csv'}: it is not UTF-16 text (line 1); "
                                          'set [source] encoding = "latin-1" or "utf-8"'), result.output


def test_a_utf8_file_with_a_byte_order_mark_read_as_latin1_is_told_its_encoding(tmp_path):
    """Ninety-fourth round: a UTF-8 file with a byte order mark, read with encoding = "latin-1", was
    told "column 'age' is not in …; did you mean 'ï»¿age'?", a name no one can write in a spec.
    Oracle: exit 2, the mark named and UTF-8 advised; nothing written."""
    spec = _project(tmp_path, _text().encode("utf-8-sig"), "latin-1")
    result = invoke("anonymize", spec, "--no-progress")
    assert result.exit_code == 2, result.output
    assert result.output == (f"sqlclose: error: column 'age' is not in {tmp_path / 'p.csv'}: the file starts with a "
                             "UTF-8 byte order mark, which the encoding it is read with takes for the characters "
                             "'ï»¿' at the start of its first column's name ('ï»¿age'): the file is UTF-8, read it as "
                             'UTF-8 (leave [source] encoding out, or set encoding = "utf-8")\n')
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("first", "then"), [("\n", "\r\n"), ("\r\n", "\n")])
def test_a_csv_whose_line_endings_change_is_refused_naming_the_line(tmp_path, first, then):
    """Two exports joined with `cat` (LF lines, then CRLF ones, or the reverse) stopped DuckDB's
    strict reader, and the refusal said only "a value could not be converted or computed (DuckDB's
    message names it, so it is not shown)": DuckDB's message names no value, no line and no cause.
    Now the file is scanned on that failure: the refusal names the first line whose ending differs
    and how to convert the file, never a value; nothing is written. The oracle: Python's csv module
    reads every row (the file is sound CSV), and the line is counted from the bytes written here.
    A quoted field holding the other line ending is data, not a line's end, and is not named."""
    rows = _text().splitlines()
    rows[2] = rows[2].replace("flu", f'"flu{then}again"')
    text = first.join(rows[:6]) + first + then.join(rows[6:]) + then
    (tmp_path / "raw.csv").write_text(text, encoding="utf-8", newline="")
    with (tmp_path / "raw.csv").open(newline="", encoding="utf-8") as handle:
        assert len(list(csv.reader(handle))) == 13  # the oracle: a header and 12 rows
    changed = len((first.join(rows[:6]) + first).splitlines()) + 1  # a line as an editor counts it
    spec = _project(tmp_path, text.encode(), "utf-8")
    result = invoke("anonymize", spec, "--no-progress")
    assert result.exit_code == 2, result.output
    assert f"cannot read {tmp_path / 'p.csv'}: line {changed} ends with" in result.output, result.output
    assert "dos2unix" in result.output and "flu" not in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1", "utf-16"])
def test_a_files_line_breaks_are_told_alike_by_their_bytes(tmp_path, encoding, monkeypatch):
    """``line_endings.breaks_all``, the count the Spark engine asks of a one-column CSV told CRLF
    before it scans the file (hundred-and-second round): every break its ending, or not; a CRLF cut
    between two chunks counted as one. Oracle: the texts written here, whose breaks are known."""
    from sqlclose.engine import line_endings

    monkeypatch.setattr(line_endings, "CHUNK", 8)  # small chunks: a CRLF falls across their edge
    python_encoding = "utf-16-le" if encoding == "utf-16" else encoding
    cases = {("abc\r\ndé\r\nfgh\r\n", "\r\n"): True, ("abc\r\ndé\nfgh\r\n", "\r\n"): False,
             ("abc\r\ndé\rfgh\r\n", "\r\n"): False, ("abc\ndé\nfgh\n", "\n"): True,
             ("abc\ndé\r\nfgh\n", "\n"): False, ("abc\rdé\rfgh\r", "\r"): True, ("abc\rdé\r\n", "\r"): False}
    for (text, ending), alike in cases.items():
        for lead in ("", "x", "xy"):  # moves the CRLFs across the chunks' edges
            path = tmp_path / "f.csv"
            path.write_bytes((lead + text).encode(python_encoding))
            assert line_endings.breaks_all(path, encoding, ending) is alike, (lead + text, ending)
