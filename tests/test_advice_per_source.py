"""An error that advises changing a column says it where the source given can take it. A DataFrame, an
Arrow table, a DuckDB relation and a caller's (connection, table) were told to convert the column "in a
[source] query" (the dates rule, NaN under bands, -0.0 beside 0.0), which is refused beside any of them;
a VARIANT or UNION quasi-identifier was told by its Arrow storage, with advice to pick a struct field;
NaN with a minus sign was said to come "from a Parquet file" whatever the source. The oracle: the advice
itself, run as written (pandas, pyarrow, DuckDB), makes a source the run takes, holding the values the
test wrote."""

from __future__ import annotations

import datetime as dt
import struct

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (the advice names pyarrow.compute)
import pytest
from advice_statements import example, refused

import sqlclose

DAYS = ["20240517", "20240518", "20240601"] * 4
DATES = {"privacy": {"k": 2}, "quasi_identifiers": {"dob": {"dates": True}}, "sensitive": {"s": {"distinct_l": 2}}}
WRITTEN = sorted([dt.date(2024, 5, 17), dt.date(2024, 5, 18), dt.date(2024, 6, 1)] * 4)






def _released_days(source) -> list[dt.date]:
    spec = {**DATES, "quasi_identifiers": {"dob": {"tree": {"all": [str(d) for d in sorted(set(WRITTEN))]}}}}
    with sqlclose.anonymize(source, spec) as release:
        return sorted(dt.date.fromisoformat(str(v)) for v in release.to_arrow().column("dob").to_pylist())


def _days_of(dob) -> pd.DataFrame:
    return pd.DataFrame({"dob": dob, "s": ["x", "y", "z", "w"] * 3})


@pytest.mark.parametrize("values", [DAYS, [int(d) for d in DAYS], [float(d) for d in DAYS]],
                         ids=["text", "integers", "floats"])
def test_the_dates_rule_tells_a_dataframe_a_conversion_pandas_runs(values):
    df = _days_of(values)
    said = refused(df, DATES)
    assert "[source] query" not in said and "convert the column in the DataFrame first" in said, said
    exec(example(said), {"df": df, "pd": pd})
    assert sorted(d.date() for d in df["dob"]) == WRITTEN


@pytest.mark.parametrize("values", [DAYS, [int(d) for d in DAYS], [float(d) for d in DAYS]],
                         ids=["text", "integers", "floats"])
def test_the_dates_rule_tells_an_arrow_table_a_conversion_pyarrow_runs(values):
    table = pa.Table.from_pandas(_days_of(values), preserve_index=False)
    said = refused(table, DATES)
    assert "[source] query" not in said and "convert the column in the table first" in said, said
    run = {"table": table, "pyarrow": pa}
    exec(example(said), run)
    assert sorted(run["table"].column("dob").to_pylist()) == WRITTEN


def test_the_dates_rule_tells_a_relation_and_a_callers_table_the_select_duckdb_runs():
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (SELECT unnest($1) AS dob, unnest($2) AS s)",
                [DAYS, ["x", "y", "z", "w"] * 3])
    said = refused(con.sql("SELECT * FROM t"), DATES)
    assert "[source] query" not in said and "convert the column in the relation first" in said, said
    assert sorted(d for (d,) in con.sql(example(said).replace("…", "t")).select("dob").fetchall()) == WRITTEN
    said = refused((con, "t"), DATES)
    assert "[source] query" not in said and "given as (connection, view) in its place" in said, said
    view = example(said).replace("CREATE VIEW …", "CREATE VIEW days").replace("FROM …", "FROM t")
    con.execute(view)
    assert _released_days((con, "days")) == WRITTEN


def test_bands_over_nan_tell_a_dataframe_and_a_table_how_to_make_them_null():
    ages = [1.0, 2.0, np.inf, 4.0] * 3
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"age": {"bands": [10], "nulls": "value", "null_value": "?"}},
            "sensitive": {"s": {"distinct_l": 2}}}
    df = pd.DataFrame({"age": ages, "s": ["x", "y", "z"] * 4})
    said = refused(df, spec)
    assert "[source] query" not in said and "make them NULL in the DataFrame first" in said, said
    exec(example(said), {"df": df, "np": np})
    table = pa.table({"age": pa.array([1.0, 2.0, float("nan"), 4.0] * 3), "s": ["x", "y", "z"] * 4})
    said = refused(table, spec)
    assert "[source] query" not in said and "make them NULL in the table first" in said, said
    run = {"table": table, "pyarrow": pa}
    exec(example(said), run)
    for fixed in (df, run["table"]):
        with sqlclose.anonymize(fixed, spec) as release:
            assert release.to_arrow().num_rows == 12
    assert df["age"].isna().sum() == 3 and run["table"].column("age").null_count == 3


def _negative_nan() -> float:
    return struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]


def test_minus_zero_and_minus_nan_in_a_callers_table_are_told_its_view():
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT ['a', 'b'][i % 2 + 1] AS g, "
                "CASE WHEN i % 3 = 0 THEN -0.0::DOUBLE ELSE 0.0::DOUBLE END AS x FROM range(12) r(i)")
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"g": {"tree": {"all": ["a", "b"]}}},
            "sensitive": {"x": {"distinct_l": 1}}}
    said = refused((con, "t"), spec)
    assert "[source] query" not in said and "given as (connection, view) in its place" in said, said
    con.execute(example(said).replace("CREATE VIEW …", "CREATE VIEW fixed").replace("FROM …", "FROM t"))
    assert con.sql("SELECT count(*) FROM fixed WHERE signbit(x)").fetchall() == [(0,)]
    con.execute("CREATE TABLE n AS SELECT ['a', 'b'][i % 2 + 1] AS g, CASE WHEN i % 3 = 0 THEN $1 ELSE 1.0 END "
                "AS x FROM range(12) r(i)", [_negative_nan()])
    said = refused((con, "n"), {**spec, "sensitive": {"x": {"distance": "equal", "t": 0.9}}})
    assert "NaN with a minus sign" in said and "from a Parquet file" not in said, said


@pytest.mark.parametrize("source", ["relation", "view", "query"])
def test_minus_zero_and_nan_in_a_spaced_column_are_told_a_statement_duckdb_runs(tmp_path, source):
    """The fix named the column unquoted (``a x + 0.0``, ``isfinite(a x)``): a statement that does not run.
    Oracle: run as written, it makes a source the run releases, no -0.0 or NaN left in it."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT ['a', 'b'][i % 2 + 1] AS g, CASE WHEN i % 3 = 0 THEN -0.0::DOUBLE ELSE "
                "0.0::DOUBLE END AS \"a x\", CASE WHEN i % 4 = 0 THEN $1 ELSE 'nan'::DOUBLE END AS \"n y\" "
                "FROM range(12) r(i)", [_negative_nan()])
    con.execute(f"COPY t TO '{tmp_path / 't.parquet'}' (FORMAT parquet)")
    zeros = {"privacy": {"k": 2}, "quasi_identifiers": {"g": {"tree": {"all": ["a", "b"]}}}, "others": "drop",
             "sensitive": {"a x": {"distinct_l": 1}}}
    nans = {**zeros, "sensitive": {"n y": {"distance": "equal", "t": 0.9, "nulls": "value", "null_value": "none"}}}
    for spec, fixed_column in ((zeros, "a x"), (nans, "n y")):
        if source == "relation":
            said = refused(con.sql("SELECT * FROM t"), spec)
            fixed = con.sql(example(said).replace("…", "t"))
        elif source == "view":
            said = refused((con, "t"), spec)
            con.execute(example(said).replace("CREATE VIEW …", "CREATE OR REPLACE VIEW fixed").replace("FROM …",
                                                                                                       "FROM t"))
            fixed = (con, "fixed")
        else:
            said = refused(str(tmp_path / "t.parquet"), spec)
            assert "in a [source] query (e.g. " in said, said
            fixed = None
            spec = {**spec, "source": {"query": f"SELECT g, {example(said)} AS \"{fixed_column}\" "
                                                f"FROM '{tmp_path / 't.parquet'}'"}}
        with sqlclose.anonymize(fixed, spec) as release:
            values = release.to_arrow().column(fixed_column).to_pylist()
        expected = [0.0] * 12 if fixed_column == "a x" else [None] * 12
        assert [v if v is None else abs(v) for v in values] == expected, values
        assert all(v is None or str(v) == "0.0" for v in values), values  # no -0.0 left


@pytest.mark.parametrize(("cast", "told"), [("VARIANT", "a VARIANT"),
                                            ("UNION(a INTEGER, b VARCHAR)", "a UNION (of 'a', 'b')")])
def test_a_variant_or_union_quasi_identifier_is_told_by_its_type_with_a_cast(cast, told):
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT (i % 3)::INTEGER::{cast} AS v, ['x', 'y'][i % 2 + 1] AS s "
                "FROM range(12) r(i)")
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"v": {"tree": {"all": ["0", "1", "2"]}}},
            "sensitive": {"s": {"distinct_l": 2}}}
    said = refused((con, "t"), spec)
    assert f"column 'v' in duckdb table t is {told}, nested values" in said, said
    assert "struct<" not in said and "union<" not in said and "zip.code" not in said, said
    con.execute(example(said).replace("CREATE VIEW …", "CREATE VIEW fixed").replace("FROM …", "FROM t"))
    with sqlclose.anonymize((con, "fixed"), spec) as release:
        assert sorted(release.to_arrow().column("v").to_pylist()) == sorted(str(i % 3) for i in range(12))


@pytest.mark.parametrize("column", ["zip", "codes", "tags"])
def test_a_nested_quasi_identifier_of_a_table_or_relation_is_told_the_pick_it_runs(column):
    """A struct, list or map quasi-identifier of an Arrow table or a relation was told to select its field in a
    [source] query (`SELECT zip.code AS zip`); the pick is said in pyarrow and in the relation's query now."""
    table = pa.table({"zip": pa.array([{"code": str(i % 3)} for i in range(12)]),
                      "codes": pa.array([[str(i % 3), "z"] for i in range(12)]),
                      "tags": pa.array([[("key", str(i % 3))] for i in range(12)], pa.map_(pa.string(), pa.string())),
                      "s": ["x", "y"] * 6})
    spec = {"privacy": {"k": 2}, "others": "drop", "quasi_identifiers": {column: {"tree": {"all": ["0", "1", "2"]}}},
            "sensitive": {"s": {"distinct_l": 2}}}
    expected = sorted(str(i % 3) for i in range(12))
    said = refused(table, spec)
    assert "[source] query" not in said and "select the field or item you mean in the table first" in said, said
    run = {"table": table, "pyarrow": pa}
    exec(example(said), run)
    assert sorted(run["table"].column(column).to_pylist()) == expected
    con = duckdb.connect()
    con.register("t", table)
    said = refused(con.sql("SELECT * FROM t"), spec)
    assert "[source] query" not in said and "select the field or item you mean in the relation first" in said, said
    assert sorted(v for (v,) in con.sql(example(said).replace("…", "t")).select(column).fetchall()) == expected


def test_the_float_leaf_cast_is_told_to_a_relation_and_a_callers_table_as_their_other_advice():
    """A DOUBLE column of whole numbers against a hierarchy's whole-number leaves, from a relation and
    from a (connection, table): the cast is said as the dates rule's and -0.0's advice says it for the
    same sources (``model.mending``: "in the relation first (e.g. …)", "in a view of the table on the
    connection, given as (connection, view) in its place (e.g. CREATE VIEW … AS …)"), where it had
    its own wording ("…: SELECT …"). Oracle: the statement, run as written, makes a source the run
    releases, its ages the whole numbers the test wrote."""
    con = duckdb.connect()
    ages = [22.0, 27.0, 43.0, 52.0] * 3
    con.execute("CREATE TABLE t AS SELECT * FROM (SELECT unnest($1) AS age, unnest($2) AS s)",
                [ages, ["x", "y", "z"] * 4])
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"age": {"tree": {"young": ["22", "27"], "old": ["43", "52"]}}},
            "sensitive": {"s": {"distinct_l": 2}}}
    said = refused(con.sql("SELECT * FROM t"), spec)
    assert "cast the column to whole numbers in the relation first (e.g. SELECT * REPLACE (" in said, said
    fixed = con.sql(example(_cast_told(said)).replace("…", "t"))
    with sqlclose.anonymize(fixed, spec) as release:
        assert release.to_arrow().num_rows == 12
    said = refused((con, "t"), spec)
    assert ("cast the column to whole numbers in a view of the table on the connection, given as (connection, view) "
            "in its place (e.g. CREATE VIEW … AS SELECT * REPLACE (") in said, said
    con.execute(example(_cast_told(said)).replace("CREATE VIEW …", "CREATE VIEW whole").replace("FROM …", "FROM t"))
    assert sorted(a for (a,) in con.sql("SELECT age FROM whole").fetchall()) == sorted(int(a) for a in ages)
    with sqlclose.anonymize((con, "whole"), spec) as release:
        assert release.to_arrow().num_rows == 12


def _cast_told(said: str) -> str:
    """The whole-numbers hint's words, after the tree's own example of a leaf (also "(e.g. …)")."""
    return said.split("cast the column to whole numbers ", 1)[1]


WAITS = {"privacy": {"k": 2}, "others": "keep", "quasi_identifiers": {"g": {"tree": {"*": ["a", "b"]}}},
         "sensitive": {"s": {"distinct_l": 2}}}
WAITS_SQL = ("SELECT * FROM (VALUES ('a', 'x', INTERVAL 1500 MICROSECONDS), ('a', 'y', INTERVAL 2 SECONDS), "
             "('b', 'x', INTERVAL 3 DAYS), ('b', 'y', INTERVAL 4 HOURS)) t(g, s, v)")


def _written_waits(source, path) -> list[str]:
    """The kept column ``v`` of ``source``'s release written to Parquet at ``path``, read back plainly."""
    with sqlclose.anonymize(source, WAITS) as release:
        release.write(path)
    return sorted(v for (v,) in duckdb.sql(f"SELECT v FROM '{path}'").fetchall())


def _refused_for_parquet(source, path) -> str:
    with sqlclose.anonymize(source, WAITS) as release, pytest.raises(sqlclose.errors.InputError) as e:
        release.write(path)
    assert not path.parent.exists()
    return str(e.value)


def test_a_column_parquet_cannot_hold_is_told_its_conversion_where_the_source_takes_it(tmp_path):
    """An INTERVAL kept column (Parquet holds whole milliseconds) of a relation or a caller's table was
    told "give it in a [source] query as CAST(…)", which neither takes; a DataFrame or an Arrow table,
    "e.g. df['v'].astype(str) in pandas" (pandas to an Arrow table). Each is told it in its own form
    now. Oracle: the statement, run as written, makes a source whose release, written to Parquet, holds
    DuckDB's own text of the intervals the test wrote (the relation, the view), pandas' own text of its
    timedeltas (to the microsecond, in the one precision pandas writes a column's in), pyarrow's of its
    durations (its count of microseconds), written out by hand."""
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS {WAITS_SQL}")
    as_text = sorted(v for (v,) in con.sql("SELECT CAST(v AS VARCHAR) FROM t").fetchall())
    said = _refused_for_parquet(con.sql("SELECT * FROM t"), tmp_path / "relation" / "r.parquet")
    assert "[source] query" not in said and "convert it in the relation first (e.g. SELECT * REPLACE (" in said, said
    assert _written_waits(con.sql(example(said).replace("…", "t")), tmp_path / "r1.parquet") == as_text
    said = _refused_for_parquet((con, "t"), tmp_path / "view" / "r.parquet")
    assert "[source] query" not in said and "given as (connection, view) in its place" in said, said
    con.execute(example(said).replace("CREATE VIEW …", "CREATE VIEW waits").replace("FROM …", "FROM t"))
    assert _written_waits((con, "waits"), tmp_path / "r2.parquet") == as_text
    df = pd.DataFrame({"g": ["a", "a", "b", "b"], "s": ["x", "y", "x", "y"],
                       "v": pd.to_timedelta([1500, 2_000_000, 3 * 86_400_000_000, 4 * 3_600_000_000], unit="us")})
    table = pa.Table.from_pandas(df, preserve_index=False)
    said = _refused_for_parquet(df, tmp_path / "pandas" / "r.parquet")
    assert "[source] query" not in said and "convert it in the DataFrame first (e.g. df['v'] = " in said, said
    exec(example(said), {"df": df})
    assert _written_waits(df, tmp_path / "r3.parquet") == ["0 days 00:00:00.001500", "0 days 00:00:02.000000",
                                                           "0 days 04:00:00.000000", "3 days 00:00:00.000000"]
    said = _refused_for_parquet(table, tmp_path / "arrow" / "r.parquet")
    assert "in pandas" not in said and "convert it in the table first (e.g. table = " in said, said
    run = {"table": table}
    exec(example(said), run)
    assert _written_waits(run["table"], tmp_path / "r4.parquet") == sorted(
        ["1500", "2000000", "259200000000", "14400000000"])


def _refused_check(source) -> str:
    """The text of the refusal (exit 3, a data error) ``sqlclose.check`` of ``source`` raises."""
    with pytest.raises(sqlclose.SqlcloseError) as caught:
        sqlclose.check(source, quasi_identifiers=["g"], sensitive=["x"])
    return str(caught.value)


@pytest.mark.parametrize("kind", ["pandas", "arrow", "view"])
def test_check_tells_minus_zero_beside_zero_the_fix_its_source_takes(kind):
    """check told every source the expression (``"x" + 0.0``), a DataFrame, an Arrow table and a
    caller's table too, none of which runs it (ninety-eighth round). Oracle: the advice, run as written,
    makes a table check audits, x's values 0.0 and 0.5 as the test wrote them, no -0.0 among them."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT ['a', 'b'][i % 2 + 1] AS g, CASE WHEN i % 3 = 0 THEN -0.0::DOUBLE "
                "WHEN i % 3 = 1 THEN 0.0::DOUBLE ELSE 0.5::DOUBLE END AS x FROM range(12) r(i)")
    df = con.sql("SELECT * FROM t").df()
    table = pa.Table.from_pandas(df, preserve_index=False)
    if kind == "pandas":
        said = _refused_check(df)
        exec(example(said), {"df": df})
        fixed = df
    elif kind == "arrow":
        said = _refused_check(table)
        made = eval(example(said).split(", which ")[0], {"table": table, "pyarrow": pa})
        fixed = table.set_column(table.schema.get_field_index("x"), "x", made)
    else:
        said = _refused_check((con, "t"))
        con.execute(example(said).replace("CREATE VIEW …", "CREATE VIEW fixed").replace("FROM …", "FROM t"))
        fixed = (con, "fixed")
    assert "normalize it in the table checked" not in said and "[source] query" not in said, said
    report = sqlclose.check(fixed, quasi_identifiers=["g"], sensitive=["x"])
    assert report is not None
    shown = con.sql("SELECT x::VARCHAR AS x FROM fixed").fetchall() if kind == "view" else \
        [(str(v),) for v in (fixed["x"] if kind == "pandas" else fixed.column("x").to_pylist())]
    assert sorted(shown) == sorted([("0.0",)] * 8 + [("0.5",)] * 4), shown
