"""CSV line endings on the Spark engine (marked ``spark``) where they are not one per source.

A pattern's files may end their lines differently (one LF, another CRLF). DuckDB reads each file
with its own ending; Spark's reader, told none (``FileRead.line_ending`` is every file's, None when
they differ), took each file's first line break for its ending, a quoted one too, and turned the
quoted breaks of that kind into "\\n": the CRLF file's quoted "n4\\r\\nq" was released as "n4\\nq". It
is now told each file's (one read per ending, ``SparkEngine._by_ending``).

A file whose line endings change (LF, then CRLF) DuckDB refuses, naming the line and dos2unix; Spark's
reader, told the first, released the CRLF lines' last values ending in "\\r", or read two lines as
one row and said it had more fields than the header. It is now refused in DuckDB's words.

Oracles: the values the test wrote, and the DuckDB engine's release (or refusal) of the same files.
"""

from __future__ import annotations

import pytest

import sqlclose
from sqlclose.engine import SparkEngine
from sqlclose.errors import InputError

pytestmark = pytest.mark.spark

SPEC = {"privacy": {"k": 2}, "others": "keep", "quasi_identifiers": {"x": {"bands": [10]}},
        "sensitive": {"s": {"distinct_l": 2}}}


def _release(source, spec, engine=None) -> list[tuple]:
    """The release's rows, counted per row (a plain GROUP BY of its values)."""
    with sqlclose.anonymize(source, spec, engine=engine) as release:
        table = release.to_arrow()
    counts: dict[tuple, int] = {}
    for row in table.to_pylist():
        counts[tuple(row.values())] = counts.get(tuple(row.values()), 0) + 1
    return sorted(counts.items())


def _on_spark(spark_session, source, spec) -> list[tuple]:
    engine = SparkEngine(spark_session)
    try:
        return _release(source, spec, engine)
    finally:
        engine.close()


def test_a_patterns_files_are_each_read_with_their_own_line_ending_on_spark(tmp_path, spark_session):
    """Was: the CRLF file's quoted "n4\\r\\nq" … released as "n4\\nq" (DuckDB: "n4\\r\\nq")."""
    notes = {}
    for name, ending, start in [("a.csv", "\n", 0), ("b.csv", "\r\n", 4)]:
        rows = [(i, f"n{i}{ending}q") for i in range(start, start + 4)]
        notes.update(rows)
        (tmp_path / name).write_bytes((f"x,s,note{ending}" + "".join(
            f'{i},{"ab"[i % 2]},"{note}"{ending}' for i, note in rows)).encode())
    spec = {**SPEC, "source": {"path": str(tmp_path / "*.csv"), "glob": True, "format": "csv"}}
    on_spark = _on_spark(spark_session, None, spec)
    assert sorted(row[2] for row, n in on_spark for _ in range(n)) == sorted(notes.values())
    assert on_spark == _release(None, spec)


@pytest.mark.parametrize(("first", "then"), [("\n", "\r\n"), ("\r\n", "\n"), ("\r", "\r\n"), ("\n", "\r")],
                         ids=["lf-then-crlf", "crlf-then-lf", "cr-then-crlf", "lf-then-cr"])
def test_a_file_whose_line_endings_change_is_refused_on_spark_as_on_duckdb(tmp_path, spark_session, first, then):
    """Was: lf-then-crlf released "n4\\r" …; the others "1 row has more or fewer fields than the header's 3"."""
    rows = [f'{i},{"ab"[i % 2]},n{i}' for i in range(8)]
    path = tmp_path / "people.csv"
    path.write_bytes(("x,s,note" + first + first.join(rows[:4]) + first + then.join(rows[4:]) + then).encode())
    with pytest.raises(InputError) as on_duckdb:
        _release(str(path), SPEC)
    with pytest.raises(InputError) as on_spark:
        _on_spark(spark_session, str(path), SPEC)
    assert "line 6 ends with" in str(on_duckdb.value) and "dos2unix" in str(on_duckdb.value)
    assert str(on_spark.value) == str(on_duckdb.value)


def test_a_stray_quote_in_a_header_leaves_a_change_of_ending_refused_on_spark(tmp_path, spark_session):
    """A header name ``no"te``, line 1 ending LF, the rows CRLF: was released, every note ending in "\\r"."""
    rows = [f'{i},{"ab"[i % 2]},n{i}' for i in range(8)]
    path = tmp_path / "people.csv"
    path.write_bytes(('x,s,no"te\n' + "\r\n".join(rows) + "\r\n").encode())
    with pytest.raises(InputError) as on_duckdb:
        _release(str(path), SPEC)
    with pytest.raises(InputError) as on_spark:
        _on_spark(spark_session, str(path), SPEC)
    assert "line 2 ends with CRLF" in str(on_duckdb.value)
    assert str(on_spark.value) == str(on_duckdb.value)


def test_a_quoted_last_value_ending_in_a_line_break_is_still_released_on_spark(tmp_path, spark_session):
    """A guard of the refusal above: a row whose quoted last value ends with "\\r" (or whose first starts
    with "\\n") is what sends the file to the scan, which finds its endings alike, and it is released as
    DuckDB releases it."""
    path = tmp_path / "people.csv"
    rows = [f'{i},{"ab"[i % 2]},"n{i}' + ("\r" if i % 2 else "\n") + '"' for i in range(8)]
    path.write_bytes(("x,s,note\n" + "\n".join(rows) + "\n").encode())
    on_spark = _on_spark(spark_session, str(path), SPEC)
    assert sorted(row[2] for row, n in on_spark for _ in range(n)) == sorted(
        f"n{i}" + ("\r" if i % 2 else "\n") for i in range(8))
    assert on_spark == _release(str(path), SPEC)


ONE_COLUMN = {"privacy": {"k": 2}, "quasi_identifiers": {"x": {"bands": [10]}}}
ENDINGS = [("\n", "\r\n"), ("\r\n", "\n"), ("\r", "\r\n"), ("\n", "\r"), ("\r\n", "\r"), ("\r", "\n")]
ENDING_IDS = ["lf-then-crlf", "crlf-then-lf", "cr-then-crlf", "lf-then-cr", "crlf-then-cr", "cr-then-lf"]


@pytest.mark.parametrize(("first", "then"), ENDINGS, ids=ENDING_IDS)
def test_a_one_column_file_whose_line_endings_change_is_refused_on_spark_as_on_duckdb(tmp_path, spark_session,
                                                                                     first, then):
    """A file of one column has no delimiter to make a row ragged. Was: crlf-then-lf released on Spark,
    whose reader, told CRLF, read the LF lines as rows too (their values plain, no tell), where
    DuckDB refuses the file (hundred-and-second round). Those told LF or CR leave a value ending in
    "\\r" or starting with "\\n", refused before."""
    rows = [str(i) for i in range(8)]
    path = tmp_path / "people.csv"
    path.write_bytes(("x" + first + first.join(rows[:4]) + first + then.join(rows[4:]) + then).encode())
    with pytest.raises(InputError) as on_duckdb:
        _release(str(path), ONE_COLUMN)
    with pytest.raises(InputError) as on_spark:
        _on_spark(spark_session, str(path), ONE_COLUMN)
    assert f"{path}: line 6 ends with" in str(on_duckdb.value) and "dos2unix" in str(on_duckdb.value)
    assert str(on_spark.value) == str(on_duckdb.value)


def test_a_one_column_files_quoted_line_breaks_are_still_released_on_spark(tmp_path, spark_session):
    """A guard of the refusal above: a quoted value holding a line break sends the file to the scan,
    which finds its endings alike, and it is released as DuckDB releases it."""
    path = tmp_path / "people.csv"
    rows = [f'"{i}' + ("\r\n" if i % 2 else "\nn") + f'{i}"' for i in range(8)]  # each of 4 characters
    path.write_bytes(("x\r\n" + "\r\n".join(rows) + "\r\n").encode())
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"x": {"mask": True, "length": 4}}}
    on_spark = _on_spark(spark_session, str(path), spec)
    assert on_spark == _release(str(path), spec)
    assert sum(n for _, n in on_spark) == 8
