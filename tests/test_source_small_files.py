"""A Parquet source of many small files is read once (``duckdb._small_files``): every pass
over 2,000 files of 500 rows opened each again. The oracle: the same rows in one file give the same
release byte for byte, and DuckDB's own catalogue says what the source became."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

import sqlclose
from sqlclose.engine import DuckDBEngine
from sqlclose.engine.base import FileRead
from sqlclose.engine.duckdb import FEW_ROWS_PER_FILE

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"


def _rows(tmp_path: Path, repeats: int) -> Path:
    """Table 3's rows, each ``repeats`` times, in one Parquet file."""
    one = tmp_path / "one.parquet"
    duckdb.sql(f"COPY (SELECT t.* FROM read_csv('{TABLE3 / 'table3.csv'}', types = {{'zip': 'VARCHAR'}}) AS t, "
               f"range({repeats})) TO '{one}' (FORMAT PARQUET)")
    return one


def _split(one: Path, folder: Path, files: int) -> Path:
    duckdb.sql(f"COPY (SELECT *, hash(zip, age, salary, disease, row_number() OVER ()) % {files} AS part "
               f"FROM '{one}') TO '{folder}' (FORMAT PARQUET, PARTITION_BY (part))")
    return folder


@pytest.mark.parametrize("files, repeats, read_once", [(60, 40, True), (3, 700, False)])
def test_a_parquet_folder_of_small_files_is_read_once_and_released_as_one_file(tmp_path, files, repeats, read_once):
    one = _rows(tmp_path, repeats)  # 9 rows each repeats times: 6 a file in 60 files, 2,100 in 3
    assert (9 * repeats / files < FEW_ROWS_PER_FILE) is read_once
    folder = _split(one, tmp_path / "folder", files)
    assert len(list(folder.rglob("*.parquet"))) == files
    spec = sqlclose.load_spec(TABLE3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    spec.update(others="drop")
    digests = []
    for source in (one, folder):
        out = tmp_path / f"{source.stem}.release.parquet"
        with sqlclose.anonymize(source, spec) as release:
            release.write_parquet(out)
        digests.append(hashlib.sha256(out.read_bytes()).hexdigest())
        assert pq.read_table(out).num_rows == 9 * repeats
    assert digests[0] == digests[1]
    engine = DuckDBEngine()
    try:
        relation = engine.source_relation(FileRead(kind="parquet", path=folder / "**" / "*.parquet", glob=True,
                                                   parquet_folder=True))
        tables = {name for (name,) in engine.con.execute("SELECT table_name FROM duckdb_tables() "
                                                         "WHERE temporary").fetchall()}
        assert (relation.name in tables) is read_once
    finally:
        engine.close()
