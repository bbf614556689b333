"""A Parquet file of fewer row groups than threads, read in slices of its rows
(engine/parquet_slices.py, ``DuckDBEngine._sliced``).

Slicing only spreads the reading over the threads: the rows read must be the file's, each once.
The oracles are a plain ``GROUP BY`` over the file read by another DuckDB connection (the rows
as a multiset), DuckDB's own plan (a sliced read is a Union of reads), and the release written from the
file read whole, byte for byte.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlclose
import sqlclose.engine.parquet_slices as parquet_slices
from sqlclose.engine.base import FileRead
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.engine.parquet_slices import slice_bounds

ROWS = 2_001
ODD = 'x"; DROP TABLE t; --'


@pytest.mark.parametrize(("rows", "row_groups", "threads", "expected"), [
    (1_000_000, 1, 2, [(0, 500_000), (500_000, 1_000_000)]),
    (1_000_001, 1, 2, [(0, 500_001), (500_001, 1_000_001)]),
    (1_000_000, 1, 1, []),                      # one thread: nothing to share
    (245_759, 1, 2, []),                        # under two of DuckDB's row groups (122,880 rows)
    (245_760, 1, 8, [(0, 122_880), (122_880, 245_760)]),
    (368_640, 1, 8, [(0, 122_880), (122_880, 245_760), (245_760, 368_640)]),
    (1_000_000, 2, 2, []),                      # a row group a thread already
    (1_000_000, 2, 4, [(0, 250_000), (250_000, 500_000), (500_000, 750_000), (750_000, 1_000_000)]),
    (0, 0, 4, []),
])
def test_the_slices_a_file_is_read_in(rows, row_groups, threads, expected):
    assert slice_bounds(rows, row_groups, threads) == expected


def test_the_slices_cover_the_rows_once():
    rng = random.Random(5)
    for _ in range(500):
        rows, threads = rng.randint(0, 5_000_000), rng.randint(1, 64)
        bounds = slice_bounds(rows, 1, threads)
        if bounds:
            assert bounds[0][0] == 0 and bounds[-1][1] == rows and len(bounds) <= threads
            assert all(end == start for (_, end), (start, _) in zip(bounds, bounds[1:]))
            assert all(end - start >= parquet_slices.SLICE_MIN_ROWS for start, end in bounds[:-1])


def _table(rows: int = ROWS, seed: int = 2) -> pa.Table:
    """Duplicated rows, NULLs, and a column whose name is SQL."""
    rng = random.Random(seed)
    return pa.table({
        "age": pa.array([rng.randint(20, 79) for _ in range(rows)], pa.int32()),
        "zip": pa.array([rng.choice(["47677", "47602", "47678", "47905", "47909", "47906"]) for _ in range(rows)]),
        ODD: pa.array([None if rng.random() < 0.1 else rng.randint(0, 3) for _ in range(rows)], pa.int64()),
        "disease": pa.array([rng.choice(["flu", "gastritis", "cancer", "ulcer"]) for _ in range(rows)]),
    })


def _file(path: Path, table: pa.Table, row_group_size: int | None = None) -> Path:
    pq.write_table(table, path, row_group_size=row_group_size or table.num_rows)
    return path


def _multiset(con: duckdb.DuckDBPyConnection, relation: str) -> list[tuple]:
    return sorted(con.sql(f"SELECT *, COUNT(*) AS n FROM {relation} GROUP BY ALL").fetchall(), key=repr)


def _read(path: Path, threads: int) -> tuple[list[tuple], str]:
    """The rows the engine reads of ``path`` as its source, and its plan of a read of them."""
    engine = DuckDBEngine(threads=threads)
    try:
        source = engine.source_relation(FileRead(kind="parquet", path=path)).sql("duckdb")
        plan = "\n".join(row[1] for row in engine.con.sql(f"EXPLAIN SELECT * FROM {source}").fetchall())
        return _multiset(engine.con, source), plan
    finally:
        engine.close()


def test_a_one_row_group_file_is_read_in_slices_each_row_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(parquet_slices, "SLICE_MIN_ROWS", 100)
    path = _file(tmp_path / "one.parquet", _table())
    truth = _multiset(duckdb.connect(), f"read_parquet('{path}')")
    for threads in (2, 3, 7):
        rows, plan = _read(path, threads)
        assert "Union" in plan and rows == truth
    # The oracle can fail: a slice bound off by one reads a row twice.
    monkeypatch.setattr(parquet_slices, "slice_bounds", lambda rows, groups, threads: [(0, 1000), (999, rows)])
    monkeypatch.setattr("sqlclose.engine.duckdb.slice_bounds", parquet_slices.slice_bounds)
    assert _read(path, 2)[0] != truth


def test_a_folder_of_one_row_group_files_is_read_in_slices_each_row_once(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch):
    """Files of unlike sizes under Hive partition folders: a slice keeps the same range of each
    file's rows, the ranges covering the largest file's (over 2,000 rows a file on average: not
    read into a table first as a folder of small files is)."""
    monkeypatch.setattr(parquet_slices, "SLICE_MIN_ROWS", 100)
    table = _table(rows=6_001)
    folder = tmp_path / "folder"
    for part, (start, rows) in enumerate([(0, 4_000), (4_000, 60), (4_060, 1_941)]):
        (folder / f"part={part}").mkdir(parents=True)
        _file(folder / f"part={part}" / "data.parquet", table.slice(start, rows))
    files = tuple(sorted(folder.rglob("*.parquet")))
    truth = _multiset(duckdb.connect(), f"read_parquet('{folder}/**/*.parquet', hive_partitioning = true, "
                                        "hive_types_autocast = false)")
    engine = DuckDBEngine(threads=4)
    try:
        source = engine.source_relation(FileRead(kind="parquet", path=folder / "**" / "*.parquet", glob=True,
                                                 parquet_folder=True, files=files)).sql("duckdb")
        plan = "\n".join(row[1] for row in engine.con.sql(f"EXPLAIN SELECT * FROM {source}").fetchall())
        assert "Union" in plan and _multiset(engine.con, source) == truth
    finally:
        engine.close()


def test_files_left_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A row group for every thread already; one thread; and a file holding a column named as the
    row number (whose values the bare name would read: it is read whole, its column as it is)."""
    monkeypatch.setattr(parquet_slices, "SLICE_MIN_ROWS", 100)
    table = _table()
    cases = [(_file(tmp_path / "groups.parquet", table, row_group_size=1_001), 2),
             (_file(tmp_path / "one.parquet", table), 1),
             (_file(tmp_path / "named.parquet", table.append_column("File_Row_Number", pa.array([7] * ROWS))), 2)]
    for path, threads in cases:
        rows, plan = _read(path, threads)
        assert "Union" not in plan and rows == _multiset(duckdb.connect(), f"read_parquet('{path}')"), path.name


SPEC = {
    "k": 3, "suppression": 0.02, "others": "keep",
    "quasi_identifiers": {"age": {"bands": [10, 20]}, "zip": {"mask": [2, 5]}},
    "sensitive": {"disease": {"distance": "equal", "t": 0.3}},
}


def _released(source: Path, out: Path, threads: int) -> str:
    engine = DuckDBEngine(threads=threads)
    try:
        with sqlclose.anonymize(source, SPEC, engine=engine) as release:
            release.write(out)
    finally:
        engine.close()
    return hashlib.sha256(out.read_bytes()).hexdigest()


def test_a_release_from_a_sliced_file_is_the_release_from_it_whole(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch):
    """The search, the write and the re-check all read the sliced source: the same file, byte for
    byte, as from the file read whole."""
    path = _file(tmp_path / "one.parquet", _table(rows=5_000, seed=9))
    whole = _released(path, tmp_path / "whole.parquet", threads=2)
    monkeypatch.setattr(parquet_slices, "SLICE_MIN_ROWS", 100)
    assert "Union" in _read(path, 2)[1]
    assert _released(path, tmp_path / "sliced.parquet", threads=2) == whole
