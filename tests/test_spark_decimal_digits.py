"""A DECIMAL value of more digits than its column's precision on Spark (marked ``spark``). Spark refuses one
from Arrow (NUMERIC_VALUE_OUT_OF_RANGE, whatever spark.sql.ansi.enabled says) and from a Parquet file read row
by row, but its vectorized Parquet reader, the default, holds it: a DECIMAL(5, 2) column of 1234.56 was
released, passed its re-check, and the written file failed pyarrow's validation (ninety-eighth round). It is
refused by column before the search, as on DuckDB. Oracle: pyarrow's full validation of the file the test
wrote, and the count of its rows written in the test."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from advice_statements import example, refused
from pyspark.sql import functions as F  # noqa: N812  (the advice names F, as Spark's docs do)

import sqlclose
from sqlclose.engine import SparkEngine

pytestmark = pytest.mark.spark

ROWS = 12
SPEC = {"others": "keep", "privacy": {"k": 2}, "quasi_identifiers": {"g": {"tree": {"all": ["a", "b"]}}},
        "sensitive": {"s": {"distinct_l": 2}}}


def _refused_on_spark(tmp_path, spark_session, as_frame: bool) -> str:
    """What refused releasing ``tmp_path / "in.parquet"`` on Spark, read as a file or as a DataFrame
    (exit 2), nothing written at the output path."""
    source = spark_session.read.parquet(str(tmp_path / "in.parquet")) if as_frame else str(tmp_path / "in.parquet")
    engine = None if as_frame else SparkEngine(spark_session)
    try:
        with pytest.raises(sqlclose.SqlcloseError) as caught:
            with sqlclose.anonymize(source, SPEC, engine=engine) as release:
                release.write(tmp_path / "out")
    finally:
        if engine is not None:
            engine.close()
    assert caught.value.exit_code == 2, caught.value
    assert not (tmp_path / "out").exists()
    return str(caught.value)


def _past_precision(path) -> int:
    """A Parquet file whose DECIMAL(5, 2) column ``d`` holds 1234.56 (six digits) in every third row
    and 123.45 elsewhere; how many rows hold the former."""
    stored = [123456 if i % 3 == 0 else 12345 for i in range(ROWS)]
    data = b"".join(v.to_bytes(16, "little", signed=True) for v in stored)
    d = pa.Array.from_buffers(pa.decimal128(5, 2), ROWS, [None, pa.py_buffer(data)])
    table = pa.table({"d": d, "g": ["a", "b"] * (ROWS // 2), "s": ["x", "y", "z"] * (ROWS // 3)})
    with pytest.raises(pa.ArrowInvalid, match="does not fit in precision"):
        table.validate(full=True)
    pq.write_table(table, path)
    return stored.count(123456)


@pytest.mark.parametrize("as_frame", [False, True], ids=["file", "frame"])
def test_a_decimal_past_its_precision_read_by_spark_is_refused_by_column(tmp_path, spark_session, as_frame):
    held = _past_precision(tmp_path / "in.parquet")
    said = _refused_on_spark(tmp_path, spark_session, as_frame)
    assert f"column 'd' is a DECIMAL(5, 2) and {held} rows of it hold values of more than 5 digits" in said, said
    assert "1234" not in said


def _nested_past_precision(path) -> int:
    """A Parquet file whose column ``n`` is a list of structs of a DECIMAL(5, 2) ``amount``, a list of
    two items in each row, the second of every third row 1234.56 (six digits), and 123.45 elsewhere;
    how many rows hold the former."""
    stored = [123456 if i % 6 == 5 else 12345 for i in range(2 * ROWS)]
    data = b"".join(v.to_bytes(16, "little", signed=True) for v in stored)
    amounts = pa.Array.from_buffers(pa.decimal128(5, 2), len(stored), [None, pa.py_buffer(data)])
    items = pa.StructArray.from_arrays([amounts], ["amount"])
    n = pa.ListArray.from_arrays(pa.array(range(0, 2 * ROWS + 1, 2), pa.int32()), items)
    table = pa.table({"n": n, "g": ["a", "b"] * (ROWS // 2), "s": ["x", "y", "z"] * (ROWS // 3)})
    with pytest.raises(pa.ArrowInvalid, match="does not fit in precision"):
        table.validate(full=True)
    pq.write_table(table, path)
    return stored.count(123456)


@pytest.mark.parametrize("as_frame", [False, True], ids=["file", "frame"])
def test_a_decimal_past_its_precision_in_a_list_of_structs_read_by_spark_is_refused_by_path(tmp_path, spark_session,
                                                                                           as_frame):
    """Spark's vectorized reader held one nested too: it was released, and the written file failed
    pyarrow's validation (ninety-eighth round)."""
    held = _nested_past_precision(tmp_path / "in.parquet")
    said = _refused_on_spark(tmp_path, spark_session, as_frame)
    assert f"column 'n' holds DECIMAL(5, 2) values at n[].amount and {held} rows of it hold values of more than " \
        "5 digits" in said, said
    assert "1234" not in said


@pytest.mark.parametrize("as_table", [False, True], ids=["frame", "table"])
def test_a_decimal_past_its_precision_is_told_a_cast_spark_runs(tmp_path, spark_session, as_table):
    """The fix was told in DuckDB's SQL, ``CAST("d" AS VARCHAR)``, which inside ``F.expr`` is a string
    literal's to Spark: every row became the text 'd' (ninety-eighth round). It is told in Spark's SQL,
    and the statement, run as written on Spark, makes a source the run releases, its ``d`` the text of
    the values the test stored."""
    _past_precision(tmp_path / "in.parquet")
    frame = spark_session.read.parquet(str(tmp_path / "in.parquet"))
    frame.createOrReplaceTempView("decimals")
    source = (spark_session, "decimals") if as_table else frame
    said = refused(source, SPEC)
    assert "[source] query" not in said, said
    statement = example(said)
    if as_table:
        assert statement.startswith("df = spark.table(…)."), said
        statement = statement.replace("spark.table(…)", "spark.table('decimals')")
    scope = {"df": frame, "F": F, "spark": spark_session}
    exec(statement if statement.startswith("df = ") else f"df = {statement}", scope)
    with sqlclose.anonymize(scope["df"], SPEC) as release:
        released = sorted(release.to_arrow().column("d").to_pylist())
    assert released == sorted("1234.56" if i % 3 == 0 else "123.45" for i in range(ROWS))
