"""Steps of the warehouse path with a DuckDB database as the warehouse: the spec, the histogram
exported from it, and the release made and measured in it (helpers for the warehouse tests)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
from click.testing import CliRunner

from sqlclose.cli import main

# A warehouse spec of two columns (a table people(g, s)) for the tests of the path's files
TWO_COLUMN_SPEC = """
[source]
format = "warehouse"
table = "people"
columns = ["g", "s"]
[privacy]
k = 2
[quasi_identifiers.g]
tree = { all = ["a", "b"] }
[sensitive.s]
distinct_l = 2
"""


def invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def warehouse_with(tmp: Path, *statements: str) -> Path:
    """A DuckDB database ``tmp/wh.duckdb`` (the warehouse) made by ``statements``."""
    db = tmp / "wh.duckdb"
    con = duckdb.connect(str(db))
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()
    return db


def warehouse_spec(tmp: Path, table: str, columns: list[str], body: str, top: str = "",
                   dialect: str = "duckdb") -> Path:
    """A warehouse spec for ``table`` whose release query is ``tmp/release.sql``."""
    spec = tmp / "wh.toml"
    spec.write_text(f'{top}\n[source]\nformat = "warehouse"\ntable = {json.dumps(table)}\ndialect = "{dialect}"\n'
                    f'columns = {json.dumps(columns)}\n[output]\npath = {json.dumps(str(tmp / "release.sql"))}\n'
                    f'{body}', encoding="utf-8")
    return spec


def histogram_in_warehouse(db: Path, spec: Path, target: Path) -> None:
    """`sqlclose sql` run in the database ``db``, exported to ``target`` (Parquet, or CSV with a header)."""
    printed = invoke("sql", spec)
    assert printed.exit_code == 0, printed.output
    con = duckdb.connect(str(db))
    try:
        fmt = "PARQUET" if target.suffix == ".parquet" else "CSV, HEADER"
        con.execute(f"COPY ({printed.output}) TO '{target}' (FORMAT {fmt})")
    finally:
        con.close()


def release_in_warehouse(db: Path, tmp: Path) -> tuple[Path, dict]:
    """``tmp/release.sql`` run in ``db`` (CREATE TABLE AS) and exported as Parquet, with the row
    ``release.verify.sql`` returns there."""
    con = duckdb.connect(str(db))
    try:
        con.execute(f"CREATE OR REPLACE TABLE __rel AS {(tmp / 'release.sql').read_text()}")
        out = tmp / "released.parquet"
        con.execute(f"COPY __rel TO '{out}' (FORMAT PARQUET)")
        cur = con.execute((tmp / "release.verify.sql").read_text())
        verify = dict(zip([d[0] for d in cur.description], cur.fetchone()))
    finally:
        con.close()
    return out, verify
