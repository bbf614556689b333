"""The hundredth round's read-through: defects found in what the round merged, each guarded here.

Oracles: a plain GROUP BY over the caller's own table against what pyarrow reads of the written
folder; hand-made files whose line endings are known."""

from __future__ import annotations

import duckdb
import pyarrow.parquet as pq
import pytest

import sqlclose

SPEC = {"privacy": {"k": 2}, "quasi_identifiers": {"g": {"tree": {"all": [str(i) for i in range(7)]}}},
        "sensitive": {"s": {"distinct_l": 2}}, "others": "keep"}


@pytest.mark.parametrize("limit", ["-1", "2000TB"])
def test_a_callers_partitioned_write_under_no_memory_limit_is_written(tmp_path, limit):
    """A caller's database with no memory limit (``SET memory_limit = '-1'``) or one past a PiB reads
    its limit back as "16383.9 PiB" (or "1.7 PiB"), a unit DuckDB's settings do not take: the private
    database of a partitioned write (``_room_apart``) was given it, and the write failed ("Unknown
    unit for memory: 'pib'")."""
    db = duckdb.connect()
    db.execute(f"SET memory_limit = '{limit}'")
    db.execute("CREATE TABLE t AS SELECT (i % 7)::VARCHAR AS g, (i % 3)::VARCHAR AS s, i AS n FROM range(3000) r(i)")
    with sqlclose.anonymize((db, "t"), SPEC) as release:
        release.write_parquet_folder(tmp_path / "out", partition_by=["g"])
    written = pq.read_table(tmp_path / "out").group_by("g").aggregate([("n", "count")])
    expected = db.execute("SELECT g, count(*) FROM t GROUP BY g").fetchall()
    # pyarrow reads the folders' values as numbers
    assert sorted(zip(map(str, written["g"].to_pylist()), written["n_count"].to_pylist())) == sorted(expected)
