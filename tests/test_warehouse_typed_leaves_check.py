"""`sqlclose check --against` of a warehouse release exported as Parquet, whose DOUBLE quasi-identifier
is released at its leaves under a tree hierarchy: the leaves are the warehouse's text of the values
('1', '2.5', 'NaN' from Postgres, as its histogram held them), the file holds the doubles.

A real PostgreSQL is the warehouse (the module skips without its binaries). The release leaves it as
CSV through `COPY … TO STDOUT`, which writes every NaN as `NaN` (a kept DOUBLE column's too), and is
made the Parquet file a warehouse's Parquet export holds (the column a DOUBLE) by DuckDB. Oracles:
the exit codes and the documented message; a copy with one value changed, which must be refused.
"""

from __future__ import annotations

import duckdb
from test_warehouse_postgres import postgres  # noqa: F401 - the fixture is used
from warehouse_steps import invoke

SPEC = """others = "keep"
[source]
format = "warehouse"
table = "doubles_at_leaves"
dialect = "postgres"
columns = ["x", "sex", "disease", "v"]
[output]
path = "release.sql"
[privacy]
k = 2
[quasi_identifiers]
x = { tree = { "*" = ["1", "2.5", "NaN"] } }
sex = { tree = { "*" = ["M", "F"] } }
[sensitive.disease]
distinct_l = 2
"""
TYPES = "{'x': 'DOUBLE', 'sex': 'VARCHAR', 'disease': 'VARCHAR', 'v': 'DOUBLE'}"


def _released_by_postgres(tmp_path, postgres):  # noqa: F811
    """Each of x's three values with each sex and three diseases, four rows apiece (k = 2 holds at the
    leaves); v, kept, a NaN in every fifth row."""
    postgres.psql("CREATE TABLE doubles_at_leaves(x float8, sex TEXT, disease TEXT, v float8)")
    postgres.psql("INSERT INTO doubles_at_leaves SELECT (ARRAY[1, 2.5, 'NaN'::float8])[1 + i % 3], "
                  "(ARRAY['M', 'F'])[1 + (i / 3) % 2], (ARRAY['flu', 'cold', 'hiv'])[1 + (i / 6) % 3], "
                  "CASE WHEN i % 5 = 0 THEN 'NaN'::float8 ELSE i / 7.0 END FROM generate_series(0, 71) i")
    spec = tmp_path / "wh.toml"
    spec.write_text(SPEC, encoding="utf-8")
    postgres.copy_out(invoke("sql", spec).stdout, tmp_path / "h.csv")
    made = invoke("anonymize", "--histogram", tmp_path / "h.csv", spec, "--node", "x=0,sex=0")
    assert made.exit_code == 0, made.output
    postgres.copy_out((tmp_path / "release.sql").read_text(), tmp_path / "released.csv")
    return spec, tmp_path / "released.csv"


def _as_parquet(csv, target, change: str = "x"):
    duckdb.execute(f"COPY (SELECT * REPLACE ({change} AS x) FROM read_csv('{csv}', header = true, "
                   f"columns = {TYPES})) TO '{target}' (FORMAT PARQUET)")
    return target


def test_a_parquet_export_of_doubles_released_at_their_leaves_passes_its_check(tmp_path, postgres):  # noqa: F811
    """Was: exit 4, 'generalization.x.level (node.x): the report says 0, 3 of the file's labels are not
    labels of that level' for the faithful export (1.0, 2.5, NaN against the leaves '1', '2.5', 'NaN'),
    though its CSV passed. The leaves are read as the file column's values now, as the report's labels
    were; a changed value (2.5 made 3.5) is still refused."""
    spec, csv = _released_by_postgres(tmp_path, postgres)
    assert "NaN" in csv.read_text()  # Postgres writes every NaN so, the kept column's too
    report = tmp_path / "release.sql.report.json"
    for released in (csv, _as_parquet(csv, tmp_path / "released.parquet")):
        checked = invoke("check", released, "--against", report, "--spec", spec)
        assert checked.exit_code == 0, checked.output
    changed = _as_parquet(csv, tmp_path / "changed.parquet", "CASE WHEN x = 2.5 THEN 3.5 ELSE x END")
    refused = invoke("check", changed, "--against", report, "--spec", spec)
    assert refused.exit_code == 4 and "generalization.x" in refused.output, refused.output
