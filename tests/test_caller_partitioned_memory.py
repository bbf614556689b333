"""A partitioned Parquet folder written from a caller's DuckDB connection is written by a private
in-memory database on one thread (``_copy_partitioned_apart``), beside the caller's, which still
holds its buffers. The private database had the caller's whole memory_limit: the process could
reach twice the limit the caller set (hundredth round). It now gets what the caller's database's
limit leaves beside the buffers that database holds as the write starts.

Oracles: DuckDB's own settings and ``duckdb_memory()``, read by a probe as the private database
is made: its ``memory_limit`` against the caller's limit less the caller's database's buffers;
and the written folder against a plain GROUP BY over the caller's table."""

from __future__ import annotations

import duckdb
import pyarrow.parquet as pq

import sqlclose
from sqlclose.engine import duckdb as duckdb_engine
from sqlclose.model.sizes import parse_bytes

SPEC = {"privacy": {"k": 2}, "quasi_identifiers": {"g": {"tree": {"all": [str(i) for i in range(7)]}}},
        "sensitive": {"s": {"distinct_l": 2}}, "others": "keep"}
LIMIT = 300_000_000
# DuckDB shows a limit in tenths of a MiB ("286.1 MiB"): the slack of reading one back.
SHOWN = 2**20 // 10


def _bytes(cursor: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """A database's memory_limit and the bytes its buffer manager holds now."""
    limit = cursor.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    used = cursor.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchall()[0][0]
    return parse_bytes(limit), int(used or 0)


def test_a_callers_partitioned_write_gets_what_the_callers_limit_leaves(tmp_path, monkeypatch):
    db = duckdb.connect(config={"memory_limit": f"{LIMIT}B"})
    # the caller's own data, held in its database's buffers meanwhile (~170 MB)
    db.execute("CREATE TABLE pad AS SELECT i, repeat('x', 100) || i AS s FROM range(1000000) r(i)")
    db.execute("CREATE TABLE t AS SELECT (i % 7)::VARCHAR AS g, (i % 3)::VARCHAR AS s, i AS n FROM range(3000) r(i)")
    other = db.cursor()  # the probe's view of the caller's database
    probed: list[tuple[tuple[int, int], tuple[int, int]]] = []
    connect = duckdb.connect

    def probe(*args, **kwargs):
        made = connect(*args, **kwargs)
        if kwargs.get("config", {}).get("threads") == 1:  # the private database of the write
            probed.append((_bytes(made), _bytes(other)))
        return made

    monkeypatch.setattr(duckdb_engine.duckdb, "connect", probe)
    with sqlclose.anonymize((db, "t"), SPEC) as release:
        release.write_parquet_folder(tmp_path / "out", partition_by=["g"])
    monkeypatch.undo()
    assert len(probed) == 1
    (private_limit, _), (caller_limit, caller_used) = probed[0]
    assert caller_limit >= LIMIT - SHOWN and caller_used > 100_000_000  # the setting the test needs
    assert private_limit <= caller_limit - caller_used + SHOWN
    assert private_limit >= caller_limit // 4 - SHOWN  # the floor: room for a partition's buffers
    written = pq.read_table(tmp_path / "out").group_by("g").aggregate([("n", "count")])
    expected = db.execute("SELECT g, count(*) FROM t GROUP BY g").fetchall()
    # pyarrow reads the folders' values as numbers
    assert sorted(zip(map(str, written["g"].to_pylist()), written["n_count"].to_pylist())) == sorted(expected)
