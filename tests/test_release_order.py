"""The order of a written release's rows, as docs/what-a-release-reveals.md ("Row order") states
it: sorted by the released values, the quasi-identifiers first in the order the spec lists them,
then the other released columns in the release's column order, each ascending, NULLs last.

The oracle is a plain DuckDB ``ORDER BY`` over the file's own rows in that column order. The
table ties in every column but the last (for each column, two rows tie on every column before it,
differ there, and the columns after it order them the other way), its QIs are listed in the spec
in an order that is neither the file's nor the alphabetical one, and it enters in the reverse of
the expected order: a sort that leaves out a column, takes the QIs in another order or keeps the
input's order writes other rows first."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import sqlclose

# Rows as (b, a, x, y): the documented order, the spec listing the QI b before a.
SORTED = [
    ("b1", "a1", "x1", "y1"),
    ("b1", "a1", "x1", "y2"),  # ties b, a and x; y decides
    ("b1", "a1", "x2", "y1"),  # ties b and a; x decides though y orders it first
    ("b1", "a2", "x1", "y1"),  # ties b; a decides though x does not
    ("b1", "a2", "x1", "y2"),
    ("b2", "a1", "x1", "y1"),  # b decides though a orders it first
    ("b2", "a1", None, "y0"),  # a NULL sorts last, though y orders it first
]
ORDER = ("b", "a", "x", "y")
SPEC = {"privacy": {"k": 2}, "others": "keep",
        "quasi_identifiers": {"b": {"tree": {"*": ["b1", "b2"]}}, "a": {"tree": {"*": ["a1", "a2"]}}}}


def _input() -> pa.Table:
    """The rows in the reverse order, as columns x, a, b, y (QIs in the file's and the
    alphabetical order a, b; the spec lists b first)."""
    rows = SORTED[::-1]
    return pa.table({name: [r[ORDER.index(name)] for r in rows] for name in ("x", "a", "b", "y")})


def _written_rows(path, output: str) -> pa.Table:
    """The rows as the file holds them, in its order."""
    if output == "parquet":
        return pq.read_table(path)
    if output == "csv":
        return pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(strings_can_be_null=True))
    with duckdb.connect(str(path), read_only=True) as con:
        return con.sql("SELECT * FROM people").to_arrow_table()


@pytest.mark.parametrize("algorithm", ["incognito", "gaa"])
@pytest.mark.parametrize("output", ["parquet", "csv", "duckdb"])
def test_the_release_is_written_sorted_qis_first_in_the_specs_order(tmp_path, output, algorithm):
    spec = {**SPEC, "search": {"algorithm": algorithm}}
    path = tmp_path / f"r.{output}"
    with sqlclose.anonymize(_input(), spec) as release:
        # every class already holds k = 2 rows: nothing is generalized, and the ties above are
        # released as they are (the rows read back are SORTED's, values and all)
        release.write(path, table="people" if output == "duckdb" else None)
    written = _written_rows(path, output)
    assert written.column_names == ["x", "a", "b", "y"]  # the input's column order
    got = [tuple(row[name] for name in ORDER) for row in written.to_pylist()]
    con = duckdb.connect()
    con.register("written", written)
    expected = con.execute('SELECT b, a, x, y FROM written ORDER BY b, a, x NULLS LAST, y').fetchall()
    assert got == expected == SORTED
