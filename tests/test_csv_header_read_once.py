"""A CSV source's header is read once per file (ninety-ninth round): the compressed check, the
big-endian check, the header's first line and, for a quoted name holding a line break, the header
record each opened the file again (three opens of a UTF-8 file, four of a UTF-16 one). The oracles:
the file's opens counted as Python makes them, and the names and line ending the test wrote."""

from __future__ import annotations

import pathlib

import pytest

import sqlclose.prepare.sources as sources
from sqlclose.engine.base import FileRead


def _opens_while_reading_the_header(monkeypatch, csv: pathlib.Path, encoding: str) -> tuple[int, FileRead]:
    """How often ``csv`` is opened while its header is read, and the read it gives."""
    opened = []
    original = pathlib.Path.open

    def counted(self, *args, **kwargs):
        if self == csv:
            opened.append(args)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "open", counted)
    read = sources._with_csv_header(FileRead("csv", csv, encoding=encoding), [csv])
    return len(opened), read


@pytest.mark.parametrize(("header", "ending", "encoding", "names", "told"), [
    ('g,s,note', "\n", "utf-8", ("g", "s", "note"), None),
    ('g,s,"di\rag"', "\r\n", "utf-8", ("g", "s", "di\rag"), "\r\n"),
    ('g,"s ""é""\ny",note', "\r", "latin-1", ("g", 's "é"\ny', "note"), "\r"),
    ('g,"s\ry",note', "\n", "utf-16", ("g", "s\ry", "note"), "\n"),
], ids=["plain", "quoted-cr-crlf", "quoted-lf-cr", "utf-16"])
def test_a_csvs_header_is_read_in_one_open_of_its_file(tmp_path, monkeypatch, header, ending, encoding, names,
                                                       told) -> None:
    csv = tmp_path / "in.csv"
    text = ending.join([header, "a,x,1", "b,y,2", ""])
    csv.write_bytes(("\ufeff" + text).encode("utf-16-le") if encoding == "utf-16" else text.encode(encoding))
    opens, read = _opens_while_reading_the_header(monkeypatch, csv, encoding)
    assert opens == 1
    assert read.header == names and read.delimiter == ","
    assert read.new_line == told
