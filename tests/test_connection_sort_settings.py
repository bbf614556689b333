"""A caller's DuckDB connection that sets ``default_order`` or ``default_null_order`` (review rv7,
defect 5).

DuckDB applies those settings to every sort key that does not say its direction or where its
NULLs go, and sqlglot's DuckDB dialect leaves out what DuckDB's defaults do anyway (``ASC``,
``NULLS LAST``). With ``SET default_order = 'DESC'`` on the caller's connection, Table 3's correct
release failed its re-check (exit 4: the ordered EMD's running sums, a window over ``pos``, were
summed backwards: 0.1528 against the search's 0.1667, the paper's value), and without an ordered
column the file was written in descending order: other bytes than the same input gives anywhere
else (README: "the same input and spec write the same file"). Every sort key sqlclose sends
DuckDB now says both (``engine/duckdb_dialect.py``), and the builders and templates say ``ASC``.

Oracles: the rows of the written file sorted in plain Python (QIs first, NULLs last), the paper's
EMD of Table 5 (1/6 on salary), and the bytes the same input and spec write from a connection
left at DuckDB's defaults.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

import sqlclose

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"
ADULT_HIERARCHIES = REPO / "datasets" / "adult" / "hierarchies"
SETTINGS = ["SET default_order = 'DESC'", "SET default_null_order = 'NULLS_FIRST'",
            "SET default_null_order = 'NULLS_FIRST_ON_ASC_LAST_ON_DESC'"]


def _table3_connection(setting: str | None) -> duckdb.DuckDBPyConnection:
    """Table 3 with a kept ``note``, NULL on every third row, before salary: the release sorts by
    its columns in turn (QIs, then the rest), so where a NULL note sorts decides the rows' order."""
    con = duckdb.connect()
    con.execute("CREATE TABLE people AS SELECT zip, age, CASE WHEN row_number() OVER () % 3 = 0 THEN NULL "
                "ELSE 'n' || (row_number() OVER () % 2) END AS note, salary, disease FROM read_csv(?)",
                [str(TABLE3 / "table3.csv")])
    if setting:
        con.execute(setting)
    return con


def _table3_spec() -> dict:
    spec = sqlclose.load_spec(TABLE3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    return {**spec, "others": "keep"}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write(con: duckdb.DuckDBPyConnection, table: str, spec: dict, out: Path) -> None:
    with sqlclose.anonymize((con, table), spec) as release:
        release.write(out)


@pytest.mark.parametrize("setting", SETTINGS)
def test_a_connections_sort_defaults_leave_table_3s_release_as_it_is(tmp_path, setting):
    """Was, with default_order DESC: VerificationError "privacy.sensitive.salary.max_emd is
    0.1527777777777778, the search found 0.16666666666666666". Now written, its salary EMD the
    paper's 1/6, its rows in ascending order with NULLs last, the same bytes as from a connection
    at DuckDB's defaults."""
    _write(_table3_connection(setting), "people", _table3_spec(), tmp_path / "set.parquet")
    _write(_table3_connection(None), "people", _table3_spec(), tmp_path / "plain.parquet")
    report = json.loads((tmp_path / "set.parquet.report.json").read_text())
    assert report["privacy"]["sensitive"]["salary"]["max_emd"] == pytest.approx(1 / 6)
    rows = [tuple(r.values()) for r in pq.read_table(tmp_path / "set.parquet").to_pylist()]
    # zip, age, note, salary, disease: ascending, a NULL note after the others of its class
    assert rows == sorted(rows, key=lambda r: (r[0], r[1], r[2] is None, r[2] or "", r[3], r[4]))
    assert any(r[2] is None for r in rows) and any(r[2] is not None for r in rows)  # NULLs to place
    assert _sha256(tmp_path / "set.parquet") == _sha256(tmp_path / "plain.parquet")


def test_a_descending_connection_writes_adults_release_as_a_plain_one_does(adult_dir, tmp_path):
    """Adult, with age as an ordered sensitive column (the re-check's ordered EMD) and text labels
    written through DuckDB's ENUM dictionary types (whose members are made in sorted order): the
    same bytes from a connection with ``default_order = 'DESC'`` as from one at the defaults."""
    spec = {"others": "keep", "privacy": {"k": 5},
            "quasi_identifiers": {name: {"file": str(ADULT_HIERARCHIES / f"{name}.csv")}
                                  for name in ("workclass", "education", "marital-status", "race", "sex")},
            "sensitive": {"age": {"distance": "ordered", "t": 0.15}}}
    for name, setting in (("desc", SETTINGS[0]), ("plain", None)):
        con = duckdb.connect()
        con.execute("CREATE TABLE adult AS SELECT * FROM read_csv(?, delim = ';', header = true)",
                    [str(adult_dir / "adult.csv")])
        if setting:
            con.execute(setting)
        _write(con, "adult", spec, tmp_path / f"{name}.parquet")
    assert _sha256(tmp_path / "desc.parquet") == _sha256(tmp_path / "plain.parquet")


def _sort_shapes() -> list:
    """The shapes a sort key takes in a tree: a bare key (a builder's ``order_by(column)``), one
    that says its direction and NULLs, a window's keys bare and said, an aggregate's ORDER BY."""
    from sqlglot import exp

    v = exp.column("v")
    window = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[v.copy()]))
    said = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[exp.Ordered(this=v.copy(), desc=True)]))
    rows = exp.select(v.copy(), exp.alias_(window, "up"), exp.alias_(said, "down")).from_("t")
    aggregate = exp.select(exp.GroupConcat(this=exp.Order(this=v.copy(), expressions=[v.copy()]),
                                           separator=exp.Literal.string(","))).from_("t")
    return [rows.order_by(v.copy()), rows.order_by(exp.Ordered(this=v.copy(), desc=True, nulls_first=True)),
            aggregate]


@pytest.mark.parametrize("setting", SETTINGS)
def test_the_dialect_says_every_keys_direction_and_nulls(setting):
    """``engine/duckdb_dialect.py`` writes each key's direction and NULLs placement in every shape,
    compiled sqlglot (``sqlglot[c]``, whose generators take no subclass) or not. The oracle:
    DuckDB itself, the same SQL's rows on a connection at its defaults and on one that changes them."""
    from sqlclose.engine.duckdb_dialect import DIALECT

    for tree in _sort_shapes():
        sql = tree.sql(dialect=DIALECT)
        got = []
        for changed in (None, setting):
            con = duckdb.connect()
            con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (2), (NULL), (1), (3), (NULL)) AS r(v)")
            if changed:
                con.execute(changed)
            got.append(con.execute(sql).fetchall())
        assert got[0] == got[1], sql
        assert "ASC NULLS LAST" in sql and ("DESC NULLS" in sql or "GROUP_CONCAT" in sql.upper()
                                            or "LISTAGG" in sql.upper()), sql
