"""A caller's partitioned write runs in a private in-memory database (``_copy_partitioned_apart``),
which spilled into the caller's ``temp_directory`` as the caller's session wrote it: beside the
caller's database's own spill files, or, DuckDB's default being the relative ``.tmp``, wherever the
working folder was when it first spilled. It now spills into a folder of its own beside the output,
removed after (hundredth round).

Oracles: the caller's temp folder as the test lists it before the write (the caller's database's
files, named for it by DuckDB), while the private database is still open after its COPY (a probe
wraps it), and after the write; the private
database's spill seen by DuckDB itself (its folder made, its owner file in it) and its
``temp_directory`` read back with ``current_setting``; the written folder against a plain GROUP BY
over the caller's table."""

from __future__ import annotations

import os

import duckdb
import pyarrow.parquet as pq

import sqlclose
from sqlclose.engine import duckdb as duckdb_engine

PARTS = 8
SPEC = {"privacy": {"k": 2}, "quasi_identifiers": {"g": {"tree": {"all": [str(i) for i in range(PARTS)]}}},
        "sensitive": {"s": {"distinct_l": 2}}, "others": "keep"}


class _Probe:
    """The private database, as ``_copy_partitioned_apart`` uses it (``execute``, ``close``): after
    its COPY, what it spilled into and what the caller's folder holds, both read before it closes."""

    def __init__(self, con: duckdb.DuckDBPyConnection, callers: str, seen: dict) -> None:
        self.con, self.callers, self.seen = con, callers, seen

    def execute(self, sql: str, params: list) -> duckdb.DuckDBPyConnection:
        done = self.con.execute(sql, params)
        if sql.startswith("COPY"):
            folder = self.con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]
            self.seen.update(folder=folder, spilled=sorted(os.listdir(folder)) if os.path.isdir(folder) else [],
                             callers=sorted(os.listdir(self.callers)))
        return done

    def close(self) -> None:
        self.con.close()


def test_a_callers_partitioned_write_spills_into_a_folder_of_its_own(tmp_path, monkeypatch):
    callers = tmp_path / "callers-spill"
    db = duckdb.connect(config={"memory_limit": "40MB", "temp_directory": str(callers)})
    # the caller's own data, past its limit: its database's spill files in its folder meanwhile
    db.execute("CREATE TABLE pad AS SELECT i, md5(i::VARCHAR) AS s FROM range(600000) r(i)")
    db.execute(f"CREATE TABLE t AS SELECT (i % {PARTS})::VARCHAR AS g, (i % 3)::VARCHAR AS s, md5(i::VARCHAR) AS h, "
               f"i AS n FROM range(250000) r(i)")
    before = sorted(os.listdir(callers))
    assert any(name.endswith(".tmp") for name in before)  # the setting the test needs: the caller spilled
    # DuckDB names a database's spill files duckdb_temp_PID_N_…, its claim on them duckdb_temp_PID_N_owner
    owner = [name for name in before if name.endswith("_owner")]
    assert len(owner) == 1
    theirs = owner[0].removesuffix("owner")
    seen: dict = {}
    connect = duckdb.connect

    def probe(*args, **kwargs):
        made = connect(*args, **kwargs)
        if kwargs.get("config", {}).get("threads") == 1:  # the private database of the write
            return _Probe(made, str(callers), seen)
        return made

    monkeypatch.setattr(duckdb_engine.duckdb, "connect", probe)
    out = tmp_path / "out"
    with sqlclose.anonymize((db, "t"), SPEC) as release:
        release.write_parquet_folder(out, partition_by=["g"])
    monkeypatch.undo()
    assert any(name.endswith("_owner") for name in seen["spilled"])  # it spilled (DuckDB made its folder)
    # the caller's folder holds the caller's database's files alone, with the private one still open and after
    assert seen["callers"] and all(name.startswith(theirs) for name in seen["callers"]), seen["callers"]
    assert owner[0] in os.listdir(callers) and all(name.startswith(theirs) for name in os.listdir(callers))
    assert os.path.dirname(seen["folder"]) == str(tmp_path)  # beside the output
    assert not os.path.exists(seen["folder"])  # removed after
    assert sorted(os.listdir(tmp_path)) == ["callers-spill", "out", "out.report.json"]
    assert db.execute("SELECT count(*), count(DISTINCT s) FROM pad").fetchall() == [(600000, 600000)]
    written = pq.read_table(out).group_by("g").aggregate([("n", "count"), ("n", "sum")])
    expected = db.execute("SELECT g, count(*), sum(n) FROM t GROUP BY g").fetchall()
    # pyarrow reads the folders' values as numbers
    assert sorted(zip(map(str, written["g"].to_pylist()), written["n_count"].to_pylist(),
                      written["n_sum"].to_pylist())) == sorted(expected)
