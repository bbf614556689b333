"""A partitioned Parquet folder written from a caller's DuckDB connection runs on one thread (its
files' bytes would follow the threads' timing), but ``SET threads`` is the caller's database's:
``_one_thread`` set it to 1 for the write, so the caller's other cursors (another thread of theirs)
ran on one thread meanwhile, and a ``SET threads`` the caller made meanwhile was overwritten when
ours was undone (ninety-ninth round). The write now leaves the caller's database's settings alone.

Oracles: DuckDB's own setting, read on another cursor of the caller's database during the write and
after it; and the folder's bytes against those of the same rows, given in another order as an Arrow
table, written by sqlclose's own connection on one thread (the path ``_one_thread`` still serves)."""

from __future__ import annotations

import duckdb
from sqlglot import exp

import sqlclose
from sqlclose.engine.duckdb import DuckDBEngine

SPEC = {"privacy": {"k": 2}, "quasi_identifiers": {"g": {"tree": {"all": [str(i) for i in range(7)]}}},
        "sensitive": {"s": {"distinct_l": 2}}, "others": "keep"}
ROWS = 300_000  # past two of DuckDB's row groups (122,880 rows), which threads would append apart


def _threads(cursor: duckdb.DuckDBPyConnection) -> int:
    return int(cursor.execute("SELECT current_setting('threads')").fetchall()[0][0])


def test_a_partitioned_write_leaves_the_callers_threads_alone(tmp_path, monkeypatch):
    db = duckdb.connect()
    db.execute("SET threads = 4")
    db.execute(f"CREATE TABLE t AS SELECT (i % 7)::VARCHAR AS g, (i % 3)::VARCHAR AS s, i AS n "
               f"FROM range({ROWS}) r(i) ORDER BY hash(i)")
    other = db.cursor()  # the caller's other thread, say
    seen: list[int] = []
    original = DuckDBEngine.execute

    def execute(engine, statement, *args, **kwargs):
        if isinstance(statement, exp.Copy) and not seen:  # the write, as it starts
            seen.append(_threads(other))
            other.execute("SET threads = 3")  # the caller's own change, meanwhile
        return original(engine, statement, *args, **kwargs)

    monkeypatch.setattr(DuckDBEngine, "execute", execute)
    with sqlclose.anonymize((db, "t"), SPEC) as release:
        doc = release.write_parquet_folder(tmp_path / "caller", partition_by=["g"])
    assert seen == [4]
    assert _threads(other) == 3 and _threads(db) == 3
    monkeypatch.undo()
    shuffled = db.sql("SELECT * FROM t ORDER BY hash(n + 1)").to_arrow_table()
    with sqlclose.anonymize(shuffled, SPEC) as release:
        own = release.write_parquet_folder(tmp_path / "own", partition_by=["g"])
    assert doc["output"]["sha256"] == own["output"]["sha256"]
    assert sorted(p.relative_to(tmp_path / "caller").as_posix() for p in (tmp_path / "caller").rglob("*")) == \
        sorted([f"g={i}" for i in range(7)] + [f"g={i}/part-0.parquet" for i in range(7)])
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # the ordered file went
