"""The footers of a folder's Parquet files (``DuckDBEngine.parquet_footers``) were read on one thread
for their schema elements' order (``_one_thread``), but ``SET threads`` is the database's: on a
caller's connection the caller's other cursors (another thread of theirs) ran on one thread
meanwhile, and a ``SET threads`` the caller made meanwhile was undone when ours was; on the process's
shared database, so did every other job's queries (hundredth round). Each file's elements are now
put in order by their place in its footer (``parquet_schema``'s ``column_id``), on any threads.

Oracles: DuckDB's own setting, read on another cursor of the same database while the footers are
read and after; and pyarrow's reading of each file's schema (its columns' names, in order)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlglot import exp

from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.engine.duckdb_database import shared_connection


def _threads(cursor: duckdb.DuckDBPyConnection) -> int:
    return int(cursor.execute("SELECT current_setting('threads')").fetchall()[0][0])


def _files(folder: Path, count: int, columns: int) -> list[Path]:
    """Files of ``columns`` columns each, named so that no two files hold them in one order."""
    folder.mkdir()
    paths = []
    for f in range(count):
        names = [f"c{(i * (f + 1)) % columns}_{i}" for i in range(columns)]
        paths.append(folder / f"part-{f}.parquet")
        pq.write_table(pa.table({name: [i] for i, name in enumerate(names)}), paths[-1])
    return paths


def _watching(monkeypatch, other: duckdb.DuckDBPyConnection) -> list[int]:
    """What ``other`` reads of the threads as the footers' first query starts; then it sets 3,
    as a caller may meanwhile."""
    seen: list[int] = []
    original = DuckDBEngine.fetch

    def fetch(engine, query, *args, **kwargs):
        if isinstance(query, exp.Select) and "parquet_schema" in query.sql("duckdb").lower() and not seen:
            seen.append(_threads(other))
            other.execute("SET threads = 3")
        return original(engine, query, *args, **kwargs)

    monkeypatch.setattr(DuckDBEngine, "fetch", fetch)
    return seen


def _names_as_pyarrow_reads(paths: list[Path]) -> list[list[str]]:
    return [pq.read_schema(p).names for p in paths]


def test_reading_footers_on_a_callers_connection_leaves_its_threads_alone(tmp_path, monkeypatch):
    paths = _files(tmp_path / "folder", 6, 40)
    db = duckdb.connect()
    db.execute("SET threads = 4")
    other = db.cursor()  # the caller's other thread, say
    seen = _watching(monkeypatch, other)
    engine = DuckDBEngine(db)
    try:
        footers = engine.parquet_footers(paths)
    finally:
        engine.close()
    assert seen == [4]
    assert _threads(other) == 3 and _threads(db) == 3
    assert [[element[0] for element in elements[1:]] for elements, _ in footers] == _names_as_pyarrow_reads(paths)


def test_reading_footers_on_the_shared_database_leaves_other_jobs_threads_alone(tmp_path, monkeypatch):
    """The tests run the shared database on one thread (conftest.SHARED_DATABASE_THREADS): four here."""
    paths = _files(tmp_path / "folder", 3, 5)
    other = shared_connection()  # another job's connection to the process's database
    tests_threads = _threads(other)
    other.execute("SET threads = 4")
    seen = _watching(monkeypatch, other)
    engine = DuckDBEngine()
    try:
        engine.parquet_footers(paths)
        assert seen == [4]
        assert _threads(other) == 3
    finally:
        engine.close()
        other.execute(f"SET threads = {tests_threads}")
        other.close()


@pytest.mark.parametrize("columns", [3, 2_100], ids=["narrow", "past a vector of elements"])
def test_each_files_elements_come_in_its_footers_order_on_many_threads(tmp_path, columns):
    """12 files read on 4 threads: every file's elements in the order pyarrow reads its columns."""
    paths = _files(tmp_path / "folder", 12, columns)
    engine = DuckDBEngine(threads=4)
    try:
        footers = engine.parquet_footers(paths)
    finally:
        engine.close()
    assert [[element[0] for element in elements[1:]] for elements, _ in footers] == _names_as_pyarrow_reads(paths)
