"""The hundredth round's read-through: defects found in what the round merged, each guarded here.

Oracles: a plain GROUP BY over the caller's own table against what pyarrow reads of the written
folder; the links the test made, read back with ``os.readlink`` and ``os.stat``."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from warehouse_steps import TWO_COLUMN_SPEC, invoke

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


def _warehouse(d: Path) -> None:
    """The spec ``w.toml`` and its histogram ``h.parquet``, exported from a table people(g, s)."""
    (d / "w.toml").write_text(TWO_COLUMN_SPEC)
    con = duckdb.connect()
    con.execute("CREATE TABLE people AS SELECT * FROM (VALUES ('a', 'x'), ('a', 'y'), ('b', 'x'), ('b', 'y')) t(g, s)")
    con.execute(f"COPY ({sqlclose.histogram_sql(d / 'w.toml', 'duckdb')}) TO '{d / 'h.parquet'}' (FORMAT parquet)")


@pytest.mark.parametrize("kind", ["query-links-to-verify", "hard-link"])
def test_a_release_query_that_is_the_verification_querys_file_is_told_as_it_is(tmp_path, kind):
    """``release.sql -> release.verify.sql`` (or the two names one file's, a hard link) was refused
    as "the verification query's path …/release.verify.sql is a symbolic link to …/release.verify.sql",
    which is no link at all; the refusal now names the link that is there."""
    _warehouse(tmp_path)
    verify, query = tmp_path / "release.verify.sql", tmp_path / "release.sql"
    verify.write_text("-- the previous verification query\n")
    if kind == "hard-link":
        os.link(verify, query)
    else:
        query.symlink_to(verify)
    refused = invoke("anonymize", tmp_path / "w.toml", "--histogram", tmp_path / "h.parquet", "--dialect", "duckdb",
                     "-o", query, "-q", "--overwrite")
    assert refused.exit_code == 2, refused.output
    message = " ".join(refused.output.split())
    assert not verify.is_symlink()  # the test's own setting: the verification query's path is a file
    assert f"{verify} is a symbolic link" not in message
    if kind == "hard-link":
        assert os.stat(verify).st_ino == os.stat(query).st_ino
        assert f"the verification query's path {verify} is the file the release query {query} is written to (a hard " \
               "link: one file of two names)" in message, message
    else:
        assert Path(os.readlink(query)) == verify
        assert f"the verification query's path {verify} is the file the release query's path {query}, a symbolic " \
               "link, names" in message, message
    assert verify.read_text() == "-- the previous verification query\n"
