"""The warehouse release's tie keys (``sql.warehouse.with_byte_ties``): a column released as it is is
followed in the ORDER BY by its text byte for byte, so that rows its own order ties (-0.0 and 0.0; 'M'
and 'm' under a case-insensitive collation) come out in a determined order, not the warehouse's storage
order. Ninety-eighth round: a quasi-identifier at its leaves whose texts are digits no order can tie
goes without one (``never_tied``); every other keeps it. Oracles: the ORDER BY as written, and the
rows a DuckDB standing in for the warehouse returns, in the order the texts' bytes give by hand."""

from __future__ import annotations

import duckdb
import pytest
import sqlglot
from sqlglot import exp

from sqlclose.model.spec import WAREHOUSE_DIALECTS
from sqlclose.sql import queries as q
from sqlclose.sql import warehouse as wh


def _release_sql(values: list[str], dialect: str) -> str:
    """The release of table ``t`` (x, a quasi-identifier at level 0 with the leaves ``values``; y,
    released as it is) in ``dialect``."""
    lookup = wh.InlineLookup(q.CodedColumn("x", "x", "q0", ""), 0, values, list(range(len(values))))
    query = wh.release(exp.Table(this=q.ident("t")), ["x", "y"], [lookup], [], [])
    return wh.render(query, dialect)


def _order_by(sql: str) -> list[str]:
    return [line.strip().rstrip(",") for line in sql.split("ORDER BY", 1)[1].strip().splitlines()]


@pytest.mark.parametrize("dialect", WAREHOUSE_DIALECTS)
def test_a_quasi_identifier_of_digits_at_its_leaves_has_no_tie_key(dialect):
    """ZIP codes of five digits (one length) and ages without a leading zero: the column's order alone;
    y, whose values the release never joins to the texts counted, keeps its key (two keys after x's one)."""
    for values in (["47677", "47602", "02139"], ["7", "35", "0", "120"]):
        keys = _order_by(_release_sql(values, dialect))
        assert len(keys) == 3, keys
        assert "COLLATE" not in keys[0] and "BINARY" not in keys[0] and "y" not in keys[0], keys


@pytest.mark.parametrize("values", [["07", "7"], ["-0", "0"], ["1.0", "1"], ["M", "m"], ["47677", "4767 "]])
def test_a_quasi_identifier_whose_texts_may_tie_keeps_its_tie_key(values):
    """Texts that some type or collation ties: a leading zero of another length (ICU's numeric
    ordering), a float's sign, a decimal's scale, case, a trailing space (a PAD SPACE collation)."""
    keys = _order_by(_release_sql(values, "duckdb"))
    assert keys == ['"x" ASC', 'CAST("x" AS TEXT) COLLATE "C" ASC', '"y" ASC', 'CAST("y" AS TEXT) COLLATE "C" ASC']


def test_a_float_quasi_identifier_comes_out_in_its_texts_byte_order():
    """-0.0 and 0.0 tie as DOUBLEs; stored alternately, they come out by their text's bytes ('-' is
    0x2d, before '0', 0x30), each tie broken by y's: by hand, -0.0 with y 2, 4, then 0.0 with 1, 3."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (0.0::DOUBLE, 3), ('-0.0'::DOUBLE, 4), (0.0::DOUBLE, 1), "
                "('-0.0'::DOUBLE, 2)) v(x, y)")
    rows = con.execute(f"SELECT CAST(x AS VARCHAR), y FROM ({_release_sql(['-0.0', '0.0'], 'duckdb')})").fetchall()
    assert rows == [("-0.0", 2), ("-0.0", 4), ("0.0", 1), ("0.0", 3)]


def test_trino_orders_a_column_released_as_it_is_by_its_text_too():
    """Trino has no collations, but a timestamp with time zone at two offsets is one instant in its order,
    written apart: each of x (those two texts) and y is followed by its cast to VARCHAR, read back from
    the rendered Trino SQL's ORDER BY."""
    values = ["2024-01-01 00:00:00.000 UTC", "2024-01-01 01:00:00.000 +01:00"]
    order = sqlglot.parse_one(_release_sql(values, "trino"), read="trino").args["order"].expressions
    varchar = exp.DataType.build("VARCHAR")
    keys = [(key.this.sql("trino"), key.args.get("desc") or False) for key in order]
    assert keys == [('"x"', False), ('CAST("x" AS VARCHAR)', False), ('"y"', False), ('CAST("y" AS VARCHAR)', False)]
    for key in order[1::2]:
        assert isinstance(key.this, exp.Cast) and key.this.to == varchar and not key.args.get("nulls_first")
