"""The advice a refusal gives a Spark DataFrame or a Spark catalog table (marked ``spark``), run on Spark as
written. -0.0 in a floating-point column and a nested quasi-identifier were told in DuckDB's SQL inside
``F.expr``: ``"zip"['code']`` and ``CAST("v" AS TEXT)`` are a string literal's to Spark (the pick failed; the
cast made every row the text 'v'), and DuckDB counts list items from 1 (review of the ninety-seventh round).
The oracle: the statement, run as written on Spark, makes a source the run releases, holding the values the
test wrote."""

from __future__ import annotations

import pyarrow as pa
import pytest
from advice_statements import example, refused
from pyspark.sql import functions as F  # noqa: N812  (the advice names F, as Spark's docs do)

import sqlclose

pytestmark = pytest.mark.spark

SPEC = {"privacy": {"k": 2}, "others": "drop", "sensitive": {"s": {"distinct_l": 2}}}
CODES = sorted(str(i % 3) for i in range(12))


def _run(said: str, frame, spark, table: str | None) -> object:
    """The DataFrame the advice's statement makes: of ``df``, the frame given, or of ``table``, which
    the advice reads itself (``spark.table(…)``, the name the test gave)."""
    statement = example(said)
    if table is not None:
        assert statement.startswith("df = spark.table(…)."), said
        statement = statement.replace("spark.table(…)", f"spark.table({table!r})")
    scope = {"df": frame, "F": F, "spark": spark}
    exec(statement if statement.startswith("df = ") else f"df = {statement}", scope)
    return scope["df"]


def _released(frame, spec, column: str) -> list:
    with sqlclose.anonymize(frame, spec) as release:
        return sorted(release.to_arrow().column(column).to_pylist())


@pytest.mark.parametrize("as_table", [False, True], ids=["frame", "table"])
def test_minus_zero_is_told_a_spark_expression_spark_runs(spark_session, as_table):
    frame = spark_session.createDataFrame([("ab"[i % 2], -0.0 if i % 3 == 0 else 0.5, "xy"[i // 2 % 2])
                                           for i in range(12)], "g string, `a x` double, s string")
    spec = {**SPEC, "quasi_identifiers": {"g": {"tree": {"all": ["a", "b"]}}}, "sensitive": {"a x": {"distinct_l": 2}}}
    table = "zeros" if as_table else None
    source = frame if table is None else (spark_session, table)
    frame.createOrReplaceTempView("zeros")
    said = refused(source, spec)
    assert "-0.0" in said and "[source] query" not in said, said
    fixed = _run(said, frame, spark_session, table)
    assert fixed.where("`a x` = 0 AND CAST(`a x` AS STRING) LIKE '-%'").count() == 0
    assert _released(fixed, spec, "a x") == sorted(0.0 if i % 3 == 0 else 0.5 for i in range(12))


@pytest.mark.parametrize("column", ["zip", "codes", "tags"])
@pytest.mark.parametrize("as_table", [False, True], ids=["frame", "table"])
def test_a_nested_quasi_identifier_is_told_the_pick_spark_runs(spark_session, column, as_table):
    table = pa.table({"zip": pa.array([{"code": str(i % 3)} for i in range(12)]),
                      "codes": pa.array([[str(i % 3), "z"] for i in range(12)]),
                      "tags": pa.array([[("key", str(i % 3))] for i in range(12)], pa.map_(pa.string(), pa.string())),
                      "s": ["x", "y"] * 6})
    frame = spark_session.createDataFrame(table)
    spec = {**SPEC, "quasi_identifiers": {column: {"tree": {"all": ["0", "1", "2"]}}}}
    table = "nested" if as_table else None
    source = frame if table is None else (spark_session, table)
    frame.createOrReplaceTempView("nested")
    said = refused(source, spec)
    assert "select the field or item you mean in" in said and "[source] query" not in said, said
    assert _released(_run(said, frame, spark_session, table), spec, column) == CODES


@pytest.mark.parametrize("role", ["quasi_identifiers", "sensitive"])
@pytest.mark.parametrize("as_table", [False, True], ids=["frame", "table"])
def test_a_variant_column_is_told_a_cast_spark_runs(spark_session, as_table, role):
    """Spark 4's VARIANT (``parse_json``) reaches Arrow as a struct of its binary ``value`` and
    ``metadata``: it was told as that struct, with advice to pick its ``value``, the variant's binary
    encoding (ninety-eighth round). It is told a VARIANT, and the cast to text, run as written on Spark,
    makes a source the run releases, holding the JSON texts the test parsed."""
    frame = spark_session.createDataFrame([(str(i % 3), "xy"[i % 2], "ab"[i // 2 % 2]) for i in range(12)],
                                          "j string, s string, g string").withColumn("v", F.parse_json("j")).drop("j")
    spec = {**SPEC, "quasi_identifiers": {"g": {"tree": {"all": ["a", "b"]}}}, "sensitive": {"s": {"distinct_l": 2}}}
    if role == "quasi_identifiers":
        spec["quasi_identifiers"] = {"v": {"tree": {"all": ["0", "1", "2"]}}}
    else:
        spec["sensitive"] = {"v": {"distinct_l": 2}}
    table = "variants" if as_table else None
    source = frame if table is None else (spark_session, table)
    frame.createOrReplaceTempView("variants")
    said = refused(source, spec)
    assert "column 'v' in " in said and " is a VARIANT, nested values" in said, said
    assert "binary" not in said and "'value'" not in said, said
    assert _released(_run(said, frame, spark_session, table), spec, "v") == CODES
