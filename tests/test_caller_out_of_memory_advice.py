"""On a caller's DuckDB connection the spec's [engine] memory_limit, threads and temp_directory do
not apply (the caller's database keeps its own settings), yet running out of memory or of spill
room was told as on a database of sqlclose's own: a caller's ``SET memory_limit = '32MB'`` read
"within its default limit (80 % of RAM): raise [engine] memory_limit (--memory-limit) … give
[engine] temp_directory". So was the private database that writes a caller's partitioned folder,
whose limit is a share of the caller's. Now the advice names the connection's own settings
(``SET memory_limit``, ``SET temp_directory``) and its limit as DuckDB reads it (hundredth round).

Oracles: DuckDB's own ``current_setting('memory_limit')`` of the caller's connection, the limit
the test gives the private database, and the errors DuckDB itself raises under them."""

from __future__ import annotations

import duckdb
import pytest

import sqlclose
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.errors import EngineCannotSpill, EngineOutOfMemory

# A query that cannot spill: each group's list is held whole.
UNSPILLABLE = "SELECT list(range) FROM range(100000000) GROUP BY range % 7"


def _setting(con: duckdb.DuckDBPyConnection, name: str) -> str:
    return con.execute("SELECT current_setting(?)", [name]).fetchall()[0][0]


def test_out_of_memory_on_a_callers_connection_names_its_own_setting():
    con = duckdb.connect()
    con.execute("SET memory_limit = '32MB'")
    limit = _setting(con, "memory_limit")  # as DuckDB shows it: "30.5 MiB"
    engine = DuckDBEngine(con)
    try:
        with pytest.raises(EngineOutOfMemory) as caught:
            engine.fetch(UNSPILLABLE)
    finally:
        engine.close()
    said = str(caught.value)
    assert said.startswith("DuckDB ran out of memory (")
    assert f"within the memory_limit of the DuckDB connection given ({limit}, as current_setting('memory_limit') " \
           "reads it): raise it on that connection (SET memory_limit)" in said
    assert "SET temp_directory on it to a folder on a disk with room to spill" in said
    assert "[engine] memory_limit (--memory-limit)" not in said and "80 % of RAM" not in said
    assert "Possible solutions" not in said  # DuckDB's own advice, cut as before
    assert _setting(con, "memory_limit") == limit  # the caller's, left as it was


def test_a_callers_spill_folder_it_cannot_make_names_its_own_setting(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    con = duckdb.connect()
    con.execute("SET memory_limit = '64MB'")
    con.execute("SET threads = 1")
    con.execute("SET temp_directory = ?", [str(blocked / "spill")])  # below a file: it cannot be made
    engine = DuckDBEngine(con)
    try:
        with pytest.raises(EngineCannotSpill) as caught:
            engine.execute("CREATE TEMPORARY TABLE sorted AS SELECT range AS i, md5(range::VARCHAR) AS s "
                           "FROM range(3000000) ORDER BY s")
    finally:
        engine.close()
    said = str(caught.value)
    assert f"to its temp directory ({blocked / 'spill'})" in said
    assert "SET temp_directory on the DuckDB connection given to a folder it can write" in said
    assert f"raise the memory_limit of the DuckDB connection given ({_setting(con, 'memory_limit')}," in said
    assert "[engine]" not in said.split("(sqlclose's [engine]")[0]  # only in saying the spec's do not apply


def test_out_of_memory_of_a_callers_partitioned_write_names_the_callers_setting(tmp_path, monkeypatch):
    """The private database gets a share of the caller's limit (``_room_apart``); the test gives it
    12 MB, too little for 64 open partitions (16 of 300,000 rows failed under 24 MB)."""
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"g": {"tree": {"all": [str(i) for i in range(64)]}}},
            "sensitive": {"s": {"distinct_l": 2}}, "others": "keep"}
    db = duckdb.connect(config={"memory_limit": "300MB"})
    db.execute("CREATE TABLE t AS SELECT (i % 64)::VARCHAR AS g, (i % 3)::VARCHAR AS s, md5(i::VARCHAR) AS h "
               "FROM range(300000) r(i)")
    monkeypatch.setattr(DuckDBEngine, "_room_apart", lambda self: "12000000B")
    out = tmp_path / "out"
    with sqlclose.anonymize((db, "t"), spec) as release:
        with pytest.raises(EngineOutOfMemory) as caught:
            release.write_parquet_folder(out, partition_by=["g"])
    said = str(caught.value)
    assert said.startswith("DuckDB ran out of memory (")
    assert "writing the partitioned folder in a database of sqlclose's own on one thread, within its 12 MB of the " \
           f"memory_limit of the DuckDB connection given ({_setting(db, 'memory_limit')}," in said
    assert "raise it on that connection (SET memory_limit)" in said
    assert "[engine] memory_limit" not in said and "80 % of RAM" not in said
    assert "Possible solutions" not in said
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == []  # nothing left beside it
