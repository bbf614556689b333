"""The packed key a large release is sorted by before its values (prepare/sort_key.py,
``DuckDBEngine.packed_sort_key``).

The key only speeds the sort: it must order rows as the values do, or tie them. The oracles are
plain SQL: a table sorted by its values alone (ORDER BY … NULLS LAST), against which the key must
never decrease; the written file's own rows sorted by their values; and the file written with the
key switched off, byte for byte.
"""

from __future__ import annotations

import datetime
import hashlib
import random
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from sqlglot import exp

import sqlclose
import sqlclose.prepare.sort_key as sort_key
from sqlclose.engine.base import PackedColumn
from sqlclose.engine.duckdb import DuckDBEngine

ROWS = 3_000


def _values(rng: random.Random, rows: int) -> dict[str, pa.Array]:
    """Columns of every kind the key packs, with NULLs and many ties: a date across 1970, integers
    negative and beyond 2⁶³, a boolean; "wide" spans more than the key's 56 bits (its high bits go
    in), "huge" more than 2⁶² (it ends the key); "empty" is NULL in every row."""
    def some(values: list) -> list:
        return [None if rng.random() < 0.1 else v for v in values]
    return {
        "born": pa.array(some([datetime.date(1960, 1, 1) + datetime.timedelta(days=rng.choice(range(0, 7000, 500)))
                               for _ in range(rows)]), pa.date32()),
        "kids": pa.array(some([rng.randint(-2, 3) for _ in range(rows)]), pa.int8()),
        "flag": pa.array(some([rng.random() < 0.5 for _ in range(rows)]), pa.bool_()),
        "big": pa.array(some([rng.choice([2**63 + 5, 2**63 + 9, 2**63]) for _ in range(rows)]), pa.uint64()),
        "wide": pa.array(some([rng.choice([-(2**58), 0, 2**57, 2**57 + 1]) for _ in range(rows)]), pa.int64()),
        "empty": pa.array([None] * rows, pa.int32()),
        "huge": pa.array(some([rng.choice([-(2**62), 2**62]) for _ in range(rows)]), pa.int64()),
        "last": pa.array(some([rng.randint(0, 3) for _ in range(rows)]), pa.int16()),
    }


def _nondecreasing(con: duckdb.DuckDBPyConnection, table: str, key: str, order: list[str]) -> bool:
    """The key never decreases along the table sorted by ``order`` (the oracle: a plain ORDER BY)."""
    by = ", ".join(f"{c} NULLS LAST" for c in order)
    return con.sql(f"SELECT bool_and(k IS NOT NULL AND (prev IS NULL OR k >= prev)) FROM (SELECT k, LAG(k) OVER "
                   f"(ORDER BY rn) AS prev FROM "
                   f"(SELECT {key} AS k, ROW_NUMBER() OVER (ORDER BY {by}) AS rn FROM {table}))").fetchall()[0][0]


def test_the_key_orders_rows_as_their_values_do():
    """Codes of a dictionary type (with NULLs, last) and offsets of dates, integers and booleans,
    packed in turn; a column too wide for the bits left gives its high bits; one whose range is too
    wide to offset ends the key; a column NULL in every row orders nothing and is passed over."""
    rng = random.Random(3)
    engine = DuckDBEngine()
    try:
        table = pa.table({"label": pa.array([None if rng.random() < 0.1 else rng.choice("pqrst") for _ in range(ROWS)]),
                          **_values(rng, ROWS)})
        engine.con.register("raw", table)
        kind = engine.dictionary_type(exp.select("label").from_("raw"))
        typed = f"CAST(label AS {kind.sql('duckdb')})"
        engine.con.execute(f"CREATE TEMP TABLE t AS SELECT * REPLACE ({typed} AS label) FROM raw")
        order = ["label", "born", "kids", "flag", "big", "empty", "wide", "huge", "last"]
        columns = [PackedColumn("label", exp.Cast(this=exp.Null(), to=kind)), PackedColumn("born", kind="date"),
                   PackedColumn("kids", kind="integer"), PackedColumn("flag", kind="boolean"),
                   PackedColumn("big", kind="integer"), PackedColumn("empty", kind="integer"),
                   PackedColumn("wide", kind="integer"), PackedColumn("huge", kind="integer"),
                   PackedColumn("last", kind="integer")]
        key = engine.packed_sort_key(columns, exp.to_table("t"))
        assert key is not None
        sql = key.expression.sql("duckdb")
        # label: 5 members and NULL, 3 bits; born: 6,501 days, 13; kids: 6 values, 3; flag 2; big: 10 values
        # from 2^63, 4 (21 + 4 of 56); "empty" passed over; "wide" spans 59 bits: its high 31 fill the key.
        assert sql.count("<<") == 6 and ">> 28" in sql and '"empty"' not in sql and '"huge"' not in sql
        assert _nondecreasing(engine.con, "t", sql, order)
        # Held whole: each column before "wide", of which the key holds only the high bits ("empty" too:
        # NULL in every row, every row ties on it).
        assert key.whole == ("label", "born", "kids", "flag", "big", "empty")
        # Without "wide", "huge" (a range over 2^62) ends the key: "last" is not reached.
        key = engine.packed_sort_key([c for c in columns if c.name != "wide"], exp.to_table("t"))
        sql = key.expression.sql("duckdb")
        assert key.whole == ("label", "born", "kids", "flag", "big", "empty")
        assert sql.count("<<") == 5 and '"huge"' not in sql and '"last"' not in sql
        assert _nondecreasing(engine.con, "t", sql, [c for c in order if c != "wide"])
        # The oracle can fail: a key that orders "kids" backwards decreases along the values' order.
        assert not _nondecreasing(engine.con, "t", "-kids", ["kids"])
    finally:
        engine.close()


def _table(rows: int = ROWS, seed: int = 7) -> pa.Table:
    """QIs age and zip (labels), then columns the key packs, then text (where it ends), the
    sensitive column last."""
    rng = random.Random(seed)
    return pa.table({
        "age": pa.array([rng.randint(20, 79) for _ in range(rows)], pa.int32()),
        "zip": pa.array([rng.choice(["47677", "47602", "47678", "47905", "47909", "47906"]) for _ in range(rows)]),
        **{name: column for name, column in _values(rng, rows).items() if name not in ("empty", "huge")},
        "note": pa.array([rng.choice(["a", "b"]) for _ in range(rows)]),
        "disease": pa.array([rng.choice(["flu", "gastritis", "cancer", "ulcer"]) for _ in range(rows)]),
    })


SPEC = {
    "k": 3, "suppression": 0.0, "others": "keep",
    "quasi_identifiers": {"age": {"bands": [10, 20]}, "zip": {"mask": [2, 5]}},
    "sensitive": {"disease": {"distance": "equal", "t": 1.0}},
}


def _written(table: pa.Table, path: Path) -> tuple[str, str]:
    """The file's sha256 and the SQL of the write's release query."""
    with sqlclose.anonymize(table, SPEC, node={"age": 1, "zip": 1}) as release:
        query, _ = release.query(dictionaries=True)
        release.write(path)
    return hashlib.sha256(path.read_bytes()).hexdigest(), query.sql("duckdb")


def test_a_release_sorted_by_the_key_is_the_release_sorted_by_its_values(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch):
    """Its labels (dictionary types in a Parquet write), then the other columns, the key holding
    their order; the file's rows are in the order of their own values, and the file is the one
    written without the key, byte for byte, whatever the input's order."""
    monkeypatch.setattr(sort_key, "PACKED_KEY_MIN_ROWS", 0)
    table = _table()
    keyed, sql = _written(table, tmp_path / "keyed.parquet")
    key, after = sql.split("ORDER BY")[1].split(" ASC, ", 1)
    assert key.startswith(' (CAST(COALESCE(ENUM_CODE("age")') and '"kids"' in key
    # The columns the key holds whole are not compared again; "wide" (its high bits) and those after are.
    assert after.startswith('"wide" ASC, "last" ASC, "note"')
    assert not any(f'"{c}" ASC' in after for c in ("age", "zip", "born", "kids", "flag", "big"))
    columns = ["age", "zip", "born", "kids", "flag", "big", "wide", "last", "note", "disease"]
    released = duckdb.sql(f"SELECT * FROM '{tmp_path / 'keyed.parquet'}'").fetchall()
    by_values = duckdb.sql(f"SELECT * FROM '{tmp_path / 'keyed.parquet'}' ORDER BY "
                           + ", ".join(f'"{c}" NULLS LAST' for c in columns)).fetchall()
    assert released == by_values
    shuffled = table.take(random.Random(1).sample(range(table.num_rows), table.num_rows))
    assert _written(shuffled, tmp_path / "shuffled.parquet")[0] == keyed
    monkeypatch.setattr(sort_key, "PACKED_KEY_MIN_ROWS", 10**12)
    plain, sql = _written(table, tmp_path / "plain.parquet")
    assert "ENUM_CODE" not in sql and plain == keyed


def test_a_release_whose_first_label_is_text_has_no_key(monkeypatch: pytest.MonkeyPatch):
    """A CSV's labels stay text: no column it is sorted by first can be packed."""
    monkeypatch.setattr(sort_key, "PACKED_KEY_MIN_ROWS", 0)
    with sqlclose.anonymize(_table(), SPEC, node={"age": 1, "zip": 1}) as release:
        text, _ = release.query()
        assert "ENUM_CODE" not in text.sql("duckdb") and " | " not in text.sql("duckdb")


def test_rows_the_key_ties_are_ordered_by_the_column_it_holds_in_part(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch):
    """A column of which the key holds only its high bits stays in the ORDER BY: here most rows tie on
    the key and differ only in the low bit of "wide", and a "last" that disagrees with it. The oracle:
    the file written without the key, byte for byte, and the file's rows sorted by their values."""
    monkeypatch.setattr(sort_key, "PACKED_KEY_MIN_ROWS", 0)
    rng = random.Random(11)
    rows = 2_000
    wide = [rng.choice([2**57, 2**57 + 1]) for _ in range(rows - 1)] + [-(2**58)]
    table = pa.table({
        "age": pa.array([rng.choice([31, 33]) for _ in range(rows)], pa.int32()),
        "zip": pa.array(["47677"] * rows),
        "wide": pa.array(wide, pa.int64()),
        "last": pa.array([1 - (w & 1) + rng.choice([0, 2]) for w in wide], pa.int16()),  # against "wide"'s order
        "disease": pa.array([rng.choice(["flu", "gastritis", "cancer", "ulcer"]) for _ in range(rows)]),
    })
    keyed, sql = _written(table, tmp_path / "keyed.parquet")
    assert sql.split("ORDER BY")[1].endswith(') ASC, "wide" ASC, "last" ASC, "disease" ASC')
    released = duckdb.sql(f"SELECT * FROM '{tmp_path / 'keyed.parquet'}'").fetchall()
    by_values = duckdb.sql(f"SELECT * FROM '{tmp_path / 'keyed.parquet'}' ORDER BY "
                           + ", ".join(f'"{c}" NULLS LAST' for c in table.column_names)).fetchall()
    assert released == by_values
    monkeypatch.setattr(sort_key, "PACKED_KEY_MIN_ROWS", 10**12)
    assert _written(table, tmp_path / "plain.parquet")[0] == keyed
