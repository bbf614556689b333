"""A caller's DuckDB connection with ``SET temp_directory = ''`` forbids DuckDB to spill to disk.
A caller's partitioned write runs in a private in-memory database (``_copy_partitioned_apart``),
which spilled all the same, into its folder beside the output (``.NAME.sqlclose-PID-TOKEN.tmp-spill``),
on a disk the caller never offered. It now keeps the caller's choice: it spills nothing, and
running out of memory says that spilling is forbidden on the connection and how to allow it
(hundred-and-first round).

Oracles: DuckDB itself, on the same write at the same memory limit with the caller's spill folder
set instead: it spills there (DuckDB makes its owner file in the folder beside the output) and the
write succeeds, so at that limit the write needs to spill; the private database's own
``current_setting('temp_directory')`` read back by a probe; the folder listed during the write;
the written folder against a plain GROUP BY over the caller's table."""

from __future__ import annotations

import os

import duckdb
import pyarrow.parquet as pq
import pytest
from caller_partitioned_write import ROOM, SPEC, TABLE

import sqlclose
from sqlclose.engine import duckdb as duckdb_engine
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.errors import EngineOutOfMemory


class _Probe:
    """The private database, as ``_copy_partitioned_apart`` uses it: after its COPY (or its failure),
    its temp_directory and what lies beside the output, read before it closes."""

    def __init__(self, con: duckdb.DuckDBPyConnection, beside: str, seen: dict) -> None:
        self.con, self.beside, self.seen = con, beside, seen

    def execute(self, sql: str, params: list) -> duckdb.DuckDBPyConnection:
        if not sql.startswith("COPY"):
            return self.con.execute(sql, params)
        try:
            return self.con.execute(sql, params)
        finally:
            folder = self.con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]
            spills = [name for name in os.listdir(self.beside) if name.endswith("-spill")]
            self.seen.update(folder=folder, spilled=[name for spill in spills
                                                     for name in os.listdir(os.path.join(self.beside, spill))])

    def close(self) -> None:
        self.con.close()


def _write(tmp_path, monkeypatch, temp_directory: str, seen: dict) -> tuple[duckdb.DuckDBPyConnection, str]:
    db = duckdb.connect(config={"memory_limit": "300MB"})
    db.execute("SET temp_directory = ?", [temp_directory])
    db.execute(TABLE)
    connect = duckdb.connect

    def probe(*args, **kwargs):
        made = connect(*args, **kwargs)
        if kwargs.get("config", {}).get("threads") == 1:  # the private database of the write
            return _Probe(made, str(tmp_path), seen)
        return made

    monkeypatch.setattr(duckdb_engine.duckdb, "connect", probe)
    monkeypatch.setattr(DuckDBEngine, "_room_apart", lambda self: ROOM)
    out = tmp_path / "out"
    try:
        with sqlclose.anonymize((db, "t"), SPEC) as release:
            release.write_parquet_folder(out, partition_by=["g"])
    finally:
        monkeypatch.undo()
    return db, str(out)


def test_at_this_limit_a_callers_partitioned_write_spills(tmp_path, monkeypatch):
    """The setting the next test needs, shown by DuckDB: given a folder to spill to, the write spills."""
    seen: dict = {}
    db, out = _write(tmp_path, monkeypatch, str(tmp_path / "callers-spill"), seen)
    assert any(name.endswith("_owner") for name in seen["spilled"]), seen  # DuckDB spilled beside the output
    written = pq.read_table(out).group_by("g").aggregate([("n", "count"), ("n", "sum")])
    expected = db.execute("SELECT g, count(*), sum(n) FROM t GROUP BY g").fetchall()
    assert sorted(zip(map(str, written["g"].to_pylist()), written["n_count"].to_pylist(),
                      written["n_sum"].to_pylist())) == sorted(expected)


def test_a_callers_partitioned_write_keeps_its_no_spilling(tmp_path, monkeypatch):
    seen: dict = {}
    with pytest.raises(EngineOutOfMemory) as caught:
        _write(tmp_path, monkeypatch, "", seen)
    assert seen["folder"] == ""  # the private database spills nowhere, as the caller's
    assert seen["spilled"] == []  # and nothing was spilled beside the output
    said = str(caught.value)
    assert said.startswith("DuckDB ran out of memory (")
    assert "writing the partitioned folder in a database of sqlclose's own on one thread, within its 32 MB of the " \
           "memory_limit of the DuckDB connection given" in said
    assert "and it may not spill to disk: the DuckDB connection given forbids spilling (its temp_directory is '', " \
           "which that database keeps too)" in said
    assert "SET temp_directory on it to a folder on a disk with room to spill" in said
    assert "Possible solutions" not in said and "[engine]" not in said
    assert sorted(os.listdir(tmp_path)) == []  # nothing left beside it


def test_a_callers_partitioned_write_with_room_needs_no_spilling(tmp_path, monkeypatch):
    seen: dict = {}
    db = duckdb.connect(config={"memory_limit": "300MB"})
    db.execute("SET temp_directory = ''")
    db.execute(TABLE)
    connect = duckdb.connect

    def probe(*args, **kwargs):
        made = connect(*args, **kwargs)
        if kwargs.get("config", {}).get("threads") == 1:
            return _Probe(made, str(tmp_path), seen)
        return made

    monkeypatch.setattr(duckdb_engine.duckdb, "connect", probe)
    with sqlclose.anonymize((db, "t"), SPEC) as release:
        release.write_parquet_folder(tmp_path / "out", partition_by=["g"])
    monkeypatch.undo()
    assert seen["folder"] == "" and seen["spilled"] == []
    assert sorted(os.listdir(tmp_path)) == ["out", "out.report.json"]
    written = pq.read_table(tmp_path / "out").group_by("g").aggregate([("n", "count")])
    expected = db.execute("SELECT g, count(*) FROM t GROUP BY g").fetchall()
    assert sorted(zip(map(str, written["g"].to_pylist()), written["n_count"].to_pylist())) == sorted(expected)


def test_out_of_memory_on_a_callers_connection_forbidding_spilling_says_so():
    con = duckdb.connect()
    con.execute("SET memory_limit = '32MB'")
    con.execute("SET temp_directory = ''")
    engine = DuckDBEngine(con)
    try:
        with pytest.raises(EngineOutOfMemory) as caught:  # spillable, but spilling is forbidden
            engine.execute("CREATE TEMPORARY TABLE sorted AS SELECT range AS i, md5(range::VARCHAR) AS s "
                           "FROM range(3000000) ORDER BY s")
    finally:
        engine.close()
    said = str(caught.value)
    assert "SET temp_directory on it to a folder on a disk with room to spill (its temp_directory is '': spilling " \
           "is forbidden on it)" in said
