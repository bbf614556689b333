"""Running out of spill room on a caller's DuckDB connection, reached for real: DuckDB's own
``max_temp_directory_size`` cap, set small by the caller, and a spill folder DuckDB cannot make.

A caller's cap (``SET max_temp_directory_size``) reached was told "DuckDB filled the disk of its
temp directory …: SET temp_directory … to a folder on a disk with more room", a disk perhaps far
from full and a setting that would not help; and the private database that writes a caller's
partitioned folder (``_copy_partitioned_apart``) spilled past that cap, up to 90 % of the output's
disk. The cap is now named as what stopped the spill, with its SET, and the private database gets
what the caller's cap leaves (``_disk_apart``), told alike when reached (hundred-and-first round).
The private database's "could not spill" message had no test: its folder is made a file here.

Oracles: DuckDB's own ``current_setting`` of the caller's connection (the cap as it reads it), the
errors DuckDB itself raises under the settings the test gives, the private database's own
``current_setting('max_temp_directory_size')`` read by a probe, and the folder listed after."""

from __future__ import annotations

import os

import duckdb
import pytest
from caller_partitioned_write import ROOM, SPEC, TABLE

import sqlclose
from sqlclose.engine import duckdb as duckdb_engine
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.errors import EngineCannotSpill, EngineOutOfDisk

SORT = ("CREATE TEMPORARY TABLE sorted AS SELECT range AS i, md5(range::VARCHAR) AS s FROM range(3000000) "
        "ORDER BY s")


def _setting(con, name: str) -> str:
    return con.execute("SELECT current_setting(?)", [name]).fetchall()[0][0]


def test_a_callers_spill_cap_reached_names_the_cap(tmp_path):
    con = duckdb.connect()
    con.execute("SET memory_limit = '64MB'")
    con.execute("SET threads = 1")
    con.execute("SET temp_directory = ?", [str(tmp_path / "spill")])
    con.execute("SET max_temp_directory_size = '1MB'")
    cap, limit = _setting(con, "max_temp_directory_size"), _setting(con, "memory_limit")
    engine = DuckDBEngine(con)
    try:
        with pytest.raises(EngineOutOfDisk) as caught:
            engine.execute(SORT)
    finally:
        engine.close()
    said = str(caught.value)
    assert said.startswith(f"DuckDB spilled past its memory limit into its temp directory ({tmp_path / 'spill'}) "
                           f"until it reached the max_temp_directory_size of the DuckDB connection given ({cap}, as "
                           "current_setting('max_temp_directory_size') reads it): raise it on that connection (SET "
                           f"max_temp_directory_size), or raise the memory_limit of the DuckDB connection given "
                           f"({limit},"), said
    assert "filled the disk" not in said and "[engine] temp_directory (" not in said
    assert "PRAGMA" not in said  # DuckDB's own advice, left out


class _Probe:
    """The private database, as ``_copy_partitioned_apart`` uses it: its cap read, and with
    ``blocked``, a file made where its spill folder goes before its COPY."""

    def __init__(self, con: duckdb.DuckDBPyConnection, seen: dict, blocked: bool) -> None:
        self.con, self.seen, self.blocked = con, seen, blocked

    def execute(self, sql: str, params: list) -> duckdb.DuckDBPyConnection:
        if sql.startswith("COPY"):
            folder = _setting(self.con, "temp_directory")
            self.seen.update(folder=folder, cap=_setting(self.con, "max_temp_directory_size"))
            if self.blocked:
                open(folder, "w").close()
        return self.con.execute(sql, params)

    def close(self) -> None:
        self.con.close()


def _write(tmp_path, monkeypatch, seen: dict, cap: str | None = None, blocked: bool = False):
    db = duckdb.connect(config={"memory_limit": "300MB"})
    db.execute("SET temp_directory = ?", [str(tmp_path / "callers-spill")])
    if cap:
        db.execute("SET max_temp_directory_size = ?", [cap])
    db.execute(TABLE)
    seen["limit"] = _setting(db, "memory_limit")
    connect = duckdb.connect

    def probe(*args, **kwargs):
        made = connect(*args, **kwargs)
        if kwargs.get("config", {}).get("threads") == 1:  # the private database of the write
            return _Probe(made, seen, blocked)
        return made

    monkeypatch.setattr(duckdb_engine.duckdb, "connect", probe)
    monkeypatch.setattr(DuckDBEngine, "_room_apart", lambda self: ROOM)
    try:
        with sqlclose.anonymize((db, "t"), SPEC) as release:
            release.write_parquet_folder(tmp_path / "out", partition_by=["g"])
    finally:
        monkeypatch.undo()
    return db


def test_a_callers_partitioned_write_keeps_within_the_callers_spill_cap(tmp_path, monkeypatch):
    seen: dict = {}
    with pytest.raises(EngineOutOfDisk) as caught:
        _write(tmp_path, monkeypatch, seen, cap="1MB")
    # the caller's database spilled nothing (its data fits): the private one gets the cap whole, 1,000,000 bytes
    assert seen["cap"] == "976.5 KiB", seen
    said = str(caught.value)
    # The whole sentence: it said "what the connection's database left of it" twice, once of each bound
    # (hundred-and-second round). 32 MB is the test's ROOM; 300MB the caller's limit, as DuckDB shows it.
    assert said == ("the partitioned write's database of sqlclose's own spilled past its memory limit into its "
                    f"folder beside the output ({seen['folder']}) until it reached its cap on spill files, each what "
                    "the connection's database left of the connection's setting: its 32 MB of the memory_limit of "
                    f"the DuckDB connection given ({seen['limit']}, as current_setting('memory_limit') reads it), a "
                    "quarter of it at least, and its 1 MB of the max_temp_directory_size of the DuckDB connection "
                    "given (976.5 KiB, as current_setting('max_temp_directory_size') reads it): raise that "
                    "max_temp_directory_size on the connection (SET max_temp_directory_size), or its memory_limit "
                    "(SET memory_limit) so that less spills; nothing was placed at the output path"), said
    assert said.count("left") == 1
    assert "filled the disk" not in said and "[engine]" not in said
    assert os.listdir(tmp_path) == []  # nothing left beside the output (the caller's database spilled nothing)


def test_a_callers_partitioned_write_that_cannot_make_its_spill_folder_says_what_to_do(tmp_path, monkeypatch):
    seen: dict = {}
    with pytest.raises(EngineCannotSpill) as caught:
        _write(tmp_path, monkeypatch, seen, blocked=True)
    said = str(caught.value)
    assert said.startswith("DuckDB could not spill past the memory limit of the partitioned write's database of "
                           f"sqlclose's own to its folder beside the output ({seen['folder']}): "), said
    assert "; write the output where sqlclose can write, or raise the memory_limit of the DuckDB connection given " \
           "(SET memory_limit) so that less spills; nothing was placed at the output path" in said, said
    assert "Possible solutions" not in said and "[engine]" not in said
    assert os.listdir(tmp_path) == [os.path.basename(seen["folder"])]  # the test's file alone: no sort file, no output
