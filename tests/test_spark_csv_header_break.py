"""A CSV source's line breaks on the Spark engine (marked ``spark``): in a quoted header name, and in
quoted values of a file whose lines end in "\\r\\n". Spark's reader takes the first line break it meets
for the file's line ending, and turns the quoted breaks of that kind into "\\n": inside the header's
quotes, a "\\r" (or "\\r\\n") in a file of "\\n" lines read the rows as one and the job was refused
("1 row has more or fewer fields than the header's 3"), or (a file of "\\r\\n" lines) read the values'
"\\r" as "\\n"; a "\\n" left an unquoted last value ending in "\\r"; and a plain CRLF file's quoted
"a\\r\\nb" was released as "a\\nb". DuckDB's reader was told a broken header's ending in the
ninety-eighth round (``csv_lines.header_record``, ``FileRead.new_line``); Spark's is told every file's
(its ``lineSep``, ``FileRead.line_ending``). Oracles: the values the test wrote, and the DuckDB
engine's release of the file."""

from __future__ import annotations

import pytest

import sqlclose
from sqlclose.engine import SparkEngine

pytestmark = pytest.mark.spark

SPEC = {"privacy": {"k": 2}, "others": "keep", "quasi_identifiers": {"x": {"bands": [10]}},
        "sensitive": {"s": {"distinct_l": 2}}}
# Kept values, some holding a line break of their own (those quoted, the others not).
NOTES = ["n0\r\nq", "n1\rz", "n2", "n3\nw", "n4\r\nq", "n5\rz", "n6", "n7\nw"]


def _rows(release) -> tuple[list[str], list[tuple]]:
    table = release.to_arrow()
    return table.column_names, sorted(tuple(row.values()) for row in table.to_pylist())


@pytest.mark.parametrize(("in_name", "ending"), [("\r", "\n"), ("\r\n", "\n"), ("\n", "\r\n"), ("\r", "\r\n"),
                                                ("", "\r\n")],
                         ids=["cr-in-lf", "crlf-in-lf", "lf-in-crlf", "cr-in-crlf", "plain-crlf"])
def test_a_csvs_line_breaks_are_read_on_spark_as_on_duckdb(tmp_path, spark_session, in_name, ending):
    name = f"b{in_name}c"
    quoted = ['"' + note + '"' if "\r" in note or "\n" in note else note for note in NOTES]
    path = tmp_path / "people.csv"
    path.write_bytes(f'x,s,"{name}"{ending}'.encode()
                     + "".join(f"{i},{'ab'[i % 2]},{note}{ending}" for i, note in enumerate(quoted)).encode())
    engine = SparkEngine(spark_session)
    try:
        with sqlclose.anonymize(str(path), SPEC, engine=engine) as release:
            on_spark = _rows(release)
    finally:
        engine.close()
    assert on_spark[0] == ["x", "s", name]
    assert sorted(row[2] for row in on_spark[1]) == sorted(NOTES)
    with sqlclose.anonymize(str(path), SPEC) as release:
        assert on_spark == _rows(release)
