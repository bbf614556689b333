"""The fix a warehouse histogram's message gives for NaN, in the warehouse's own SQL.

A counted column holding NaN written two ways (``nan`` and ``-nan``) is refused with an expression
that makes NaN NULL in a view over the warehouse table. It was DuckDB's ``isfinite(x) OR isinf(x)``
whatever the spec's dialect: Postgres, Snowflake, BigQuery and Trino have no ``isfinite``. The
oracles: each dialect's parser (sqlglot's), the function each warehouse documents for it written
here by hand, and for Postgres the expression run by a real PostgreSQL over NaN, infinity, a number
and NULL, against the values written in the test. Snowflake, BigQuery, Trino and Spark are parsed,
not run (none is on this machine; DuckDB is none of them).
"""

from __future__ import annotations

import re

import pytest
import sqlglot
from sqlglot import exp
from test_warehouse_histogram_checks import QIS, _export, _spec, sqlclose, warehouse  # noqa: F401 - the fixture
from test_warehouse_postgres import postgres  # noqa: F401 - the fixture is used

from sqlclose.model import mending
from sqlclose.prepare.problem import minus_zero_made_zero

SPEC = "[privacy]\nk = 2\n" + QIS
# Two rows' zip written as NaN with and without a minus sign: one number, two texts
NAN_TWO_WAYS = ("SELECT * REPLACE (CASE WHEN age = '29' THEN 'nan' WHEN age = '22' THEN '-nan' ELSE zip END "
                "AS zip) FROM ({q})")


MINUS_ZERO_TWO_WAYS = NAN_TWO_WAYS.replace("'nan'", "'0.0'").replace("'-nan'", "'-0.0'")


def _advice(tmp_path, warehouse, dialect: str, wrap: str = NAN_TWO_WAYS) -> str:  # noqa: F811
    """The expression the refusal gives, for a spec of ``dialect`` (the histogram exported from DuckDB)."""
    spec = _spec(tmp_path, "t3", SPEC)
    hist = _export(warehouse, spec, tmp_path / "h.parquet", wrap)
    spec.write_text(spec.read_text().replace('dialect = "duckdb"', f'dialect = "{dialect}"'))
    run = sqlclose("anonymize", "--histogram", hist, spec)
    assert run.returncode == 2 and "written two ways" in run.stderr, run.stderr
    found = re.search(r"e\.g\. (.+?), which (makes NaN NULL|turns -0\.0 into 0\.0)", run.stderr)
    assert found, run.stderr
    return found.group(1)


def _functions(tree: exp.Expression) -> set[str]:
    named = {f.name.lower() for f in tree.find_all(exp.Anonymous)}
    return named | {f.sql_name().lower() for f in tree.find_all(exp.Func) if not isinstance(f, exp.Anonymous)}


@pytest.mark.parametrize("dialect, said", [
    ("postgres", "<> 'NaN'"),  # Postgres compares every NaN equal to 'NaN'
    ("snowflake", "<> 'NaN'"),  # so does Snowflake
    ("bigquery", "IS_NAN("),
    ("trino", "IS_NAN("),
    ("spark", "ISNAN("),
])
def test_the_nan_fix_is_written_in_the_warehouses_sql(tmp_path, warehouse, dialect, said):  # noqa: F811
    """Was `CASE WHEN ISFINITE("zip") OR ISINF("zip") THEN "zip" END` for each of them."""
    advice = _advice(tmp_path, warehouse, dialect)
    tree = sqlglot.parse_one(advice, read=dialect)  # raises on text the dialect does not parse
    assert isinstance(tree, exp.Case), advice
    assert said.upper() in advice.upper(), advice
    assert not {"isfinite", "isinf"} & _functions(tree), advice


def test_the_postgres_fix_makes_nan_null_and_keeps_the_rest_in_postgres(tmp_path, warehouse, postgres):  # noqa: F811
    """The advice run by PostgreSQL itself over a float8 column: NaN (with a minus sign too, which
    Postgres reads as NaN) made NULL, an infinity and a number kept, NULL left NULL."""
    advice = _advice(tmp_path, warehouse, "postgres")
    got = postgres.psql(f"COPY (SELECT {advice} FROM (VALUES (1, 'NaN'::float8), (2, '-NaN'::float8), "
                        "(3, 'Infinity'::float8), (4, 1.5::float8), (5, NULL::float8)) AS t(i, zip) ORDER BY i) "
                        "TO STDOUT WITH CSV")
    assert got.splitlines() == ["", "", "Infinity", "1.5", ""], got


def test_the_postgres_fix_of_minus_zero_keeps_a_real_a_real_in_postgres(tmp_path, warehouse, postgres):  # noqa: F811
    """Was `"zip" + 0.0`, which Postgres makes a double precision: a real column's 0.1 then read
    0.10000000149011612 in the histogram and the release. Run by PostgreSQL over a real column."""
    advice = _advice(tmp_path, warehouse, "postgres", MINUS_ZERO_TWO_WAYS)
    sqlglot.parse_one(advice, read="postgres")
    got = postgres.psql(f"COPY (SELECT ({advice})::text, pg_typeof({advice}) FROM (VALUES (1, '-0'::real), "
                        "(2, '0.1'::real), (3, NULL::real)) AS t(i, zip) ORDER BY i) TO STDOUT WITH CSV")
    assert got.splitlines() == ["0,real", "0.1,real", ",real"], got



@pytest.mark.spark
def test_the_spark_fixes_run_in_spark_and_keep_a_float_a_float(tmp_path, warehouse, spark_session):  # noqa: F811
    """A Spark warehouse was told `isfinite`, which Spark lacks, and `+ 0.0`, a DECIMAL to Spark, which
    makes a FLOAT a DOUBLE (its text then another: 0.1 written 0.10000000149011612), as does the `+ 0`
    a Spark DataFrame was told, under ANSI mode. Run by Spark over a FLOAT column: NaN made NULL, the
    rest kept; -0.0 made 0.0, still a FLOAT."""
    nan_fix = _advice(tmp_path, warehouse, "spark")
    zero_fix = _advice(tmp_path, warehouse, "spark", MINUS_ZERO_TWO_WAYS)
    assert f"{zero_fix}," in minus_zero_made_zero("zip", mending.SPARK_FRAME)  # a DataFrame is told the same
    spark_session.sql("SELECT i, CAST(v AS FLOAT) AS zip FROM VALUES (1, 'NaN'), (2, 'Infinity'), (3, '-0.0'), "
                      "(4, '0.5'), (5, NULL) AS t(i, v)").createOrReplaceTempView("floats")
    rows = spark_session.sql(f"SELECT {nan_fix} AS n, {zero_fix} AS z, typeof({zero_fix}) AS t FROM floats "
                             "ORDER BY i").collect()
    assert [r.n for r in rows] == [None, float("inf"), 0.0, 0.5, None], rows
    assert [str(r.z) for r in rows][2:] == ["0.0", "0.5", "None"], rows  # -0.0 made 0.0
    assert {r.t for r in rows} == {"float"}, rows
