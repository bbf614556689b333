"""The fix a warehouse histogram's refusal gives when the spec names no dialect.

A spec of ``format = "warehouse"`` may leave ``[source] dialect`` out, the run's dialect given as
``--dialect``. The NaN and -0.0 advice read the spec's alone, and was then DuckDB's SQL, unsaid
(``CASE WHEN ISFINITE("zip") OR ISINF("zip") THEN "zip" END``), which the user ran in their warehouse as
its own: Postgres, Snowflake, BigQuery and Trino have no ``isfinite``. It is now in the ``--dialect``'s
SQL; and where no dialect is known at all (``mending.warehouse(None)``), said to be DuckDB's, with how to
name the warehouse's: no one expression serves them all (Postgres and Snowflake take NaN as equal to NaN
and compare a float with 'NaN'; BigQuery and Trino take NaN as unequal to all and refuse that
comparison; BigQuery has no REAL). Oracles: each dialect's parser (sqlglot's) and the function its
warehouse documents, written here by hand; the dialects docs/warehouse.md names.
"""

from __future__ import annotations

import re

import pytest
import sqlglot
from sqlglot import exp
from test_warehouse_histogram_checks import QIS, _export, _spec, sqlclose, warehouse  # noqa: F401 - the fixture

from sqlclose.model import mending
from sqlclose.prepare.problem import minus_zero_made_zero, nan_made_null

SPEC = "[privacy]\nk = 2\n" + QIS
NAN_TWO_WAYS = ("SELECT * REPLACE (CASE WHEN age = '29' THEN 'nan' WHEN age = '22' THEN '-nan' ELSE zip END "
                "AS zip) FROM ({q})")
MINUS_ZERO_TWO_WAYS = NAN_TWO_WAYS.replace("'nan'", "'0.0'").replace("'-nan'", "'-0.0'")
DIALECTS = ("postgres", "snowflake", "bigquery", "trino", "spark")  # docs/warehouse.md's, DuckDB's aside


def _advice(tmp_path, warehouse, wrap: str, dialect: str) -> str:  # noqa: F811
    """The expression the refusal gives for a spec naming no dialect, the run's given as ``--dialect``."""
    spec = _spec(tmp_path, "t3", SPEC)
    hist = _export(warehouse, spec, tmp_path / "h.parquet", wrap)
    spec.write_text(spec.read_text().replace('dialect = "duckdb"', ""))
    run = sqlclose("anonymize", "--histogram", hist, "--dialect", dialect, spec, "-o", tmp_path / "r.sql")
    assert run.returncode == 2 and "written two ways" in run.stderr, run.stderr
    found = re.search(r"e\.g\. (.+?), which (makes NaN NULL|turns -0\.0 into 0\.0)", run.stderr)
    assert found, run.stderr
    return found.group(1)


@pytest.mark.parametrize(("dialect", "said"), [("trino", "IS_NAN("), ("postgres", "<> 'NaN'")])
def test_the_nan_fix_is_in_the_dialect_given_on_the_command_line(tmp_path, warehouse, dialect, said):  # noqa: F811
    """Was `CASE WHEN ISFINITE("zip") OR ISINF("zip") THEN "zip" END` for a spec naming no dialect."""
    advice = _advice(tmp_path, warehouse, NAN_TWO_WAYS, dialect)
    tree = sqlglot.parse_one(advice, read=dialect)  # raises on text the dialect does not parse
    assert isinstance(tree, exp.Case), advice
    assert said.upper() in advice.upper(), advice
    assert "ISFINITE" not in advice.upper(), advice


def test_the_minus_zero_fix_is_in_the_dialect_given_on_the_command_line(tmp_path, warehouse):  # noqa: F811
    """Was `"zip" + 0.0`, DuckDB's: a DECIMAL to Trino, which makes a REAL a DOUBLE."""
    advice = _advice(tmp_path, warehouse, MINUS_ZERO_TWO_WAYS, "trino")
    tree = sqlglot.parse_one(advice, read="trino")
    assert isinstance(tree, exp.Add) and isinstance(tree.expression, exp.Cast), advice
    assert tree.expression.to.this == exp.DataType.Type.FLOAT, advice  # Trino's REAL, 4 bytes


@pytest.mark.parametrize("fix", [nan_made_null, minus_zero_made_zero], ids=["nan", "minus-zero"])
def test_a_warehouse_of_no_dialect_is_told_the_fix_is_duckdbs_and_how_to_name_its_own(fix):
    """Was the expression alone, DuckDB's, no word of whose SQL it is."""
    told = fix("zip", mending.warehouse(None))
    assert "DuckDB's SQL" in told, told
    assert "[source] dialect" in told, told
    for dialect in DIALECTS:
        assert f'"{dialect}"' in told, told
    assert "DuckDB's SQL" not in fix("zip", mending.warehouse("trino"))
