"""Random tables: the Spark engine's results equal DuckDB's (marked ``spark``).

Three hundred small random tables (tests/random_tables.py: two or three QIs with small
hierarchies, one sensitive column under the equal, ordered or hierarchical distance, random k,
t, l and suppression). A Spark job costs ~0.3–1 s per query in local mode, so running the whole
pipeline per table (some 25 Spark actions) would take an hour; the tables are batched instead:
tables drawn with the same requirements are stacked into one table with a ``tid`` column, a
quasi-identifier of its own (tid → all → *), so each node of the lattice holds the tables'
classes side by side (tid at level 0) or merged. Every batch runs on both engines, and the
chosen node, the minimal nodes, the summary (classes, suppression, every privacy value, utility)
and the released rows must be equal. One batch runs the search on Spark itself
(``local_search=False``, and the in-memory path turned off: the rollup and base batch queries
run on Spark, one per lattice level), and
one is written as a Parquet folder on Spark and compared with DuckDB's file by a plain GROUP BY
over both outputs. About 4 minutes on a loaded 2-core machine (CI: less).

The oracle is the DuckDB engine, itself checked against brute force elsewhere
(tests/test_search_oracle.py); a batch with no satisfying node must have none on both engines.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from random_tables import case

import sqlclose
from sqlclose.engine import DuckDBEngine, SparkEngine
from sqlclose.errors import NoSolutionError
from sqlclose.release.release import Release

pytestmark = pytest.mark.spark

TABLES = 300
PER_BATCH = 30  # 10 batches of 30 tables: ~20 s a batch on Spark local mode (2 shared cores)
SEARCH_ON_SPARK = {1}  # batches whose search runs on Spark, as SQL level batches (others: hybrid, the default)
WRITTEN = {0}  # batches also written as a folder on Spark


def batch(b: int) -> tuple[pa.Table, dict, list[int]]:
    """The tables of batch ``b``: drawn with the requirements of seed ``b``, stacked with tid."""
    first = case(10_000 + b)
    parts, seeds = [], []
    for i in range(PER_BATCH):
        seed = b * PER_BATCH + i
        drawn = case(seed)
        table = drawn.table
        # the batch's schema: the first table's columns and sensitive type
        if ("code" in first.table.column_names) != ("code" in table.column_names):
            table = table.append_column("code", pa.array([f"{100 + j % 30:03d}" for j in range(table.num_rows)])) \
                if "code" not in table.column_names else table.drop(["code"])
        ordered, text = first.spec["sensitive"]["s"]["distance"] == "ordered", pa.types.is_string(table["s"].type)
        if ordered and text:
            table = table.set_column(table.schema.get_field_index("s"), "s",
                                     pa.array((np.arange(table.num_rows) % 7 + 1) * 1000))
        if not ordered and not text:
            names = ["flu", "cold", "ulcer", "gastritis", "colitis"]
            table = table.set_column(table.schema.get_field_index("s"), "s",
                                     pa.array([names[j % 5] for j in range(table.num_rows)]))
        table = table.select(first.table.column_names)
        parts.append(table.append_column("tid", pa.array([f"t{seed:03d}"] * table.num_rows)))
        seeds.append(seed)
    stacked = pa.concat_tables(parts)
    spec = dict(first.spec)
    tid = {"tree": {"all": [f"t{s:03d}" for s in seeds]}}
    spec["quasi_identifiers"] = {"tid": tid, **first.spec["quasi_identifiers"]}
    return stacked, spec, seeds


def _rows(table: pa.Table) -> list[tuple]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=lambda r: [(v is None, str(v)) for v in r])


def _outcome(table: pa.Table, spec: dict, engine, write: Callable[[Release], object] | None = None) -> dict | None:
    """What a run gives; with suppression, also the releases at two minimal nodes (most suppress rows).
    ``write``: called with the release as well, once it is read (a written batch's folder or file)."""
    spec = {**spec, "search": {**spec.get("search", {}), "explore": "lattice"}}  # the minimal nodes compared too
    try:
        with sqlclose.anonymize(table, spec, engine=engine) as release:
            out = {"node": release.node, "minimal_nodes": release.minimal_nodes, "summary": release.summary,
                   "rows": _rows(release.to_arrow())}
            if spec["suppression"]:
                others = [release.at(m) for m in release.minimal_nodes if m != release.node][:2]
                out["at_minimal"] = [(r.summary, _rows(r.to_arrow())) for r in others]
            if write is not None:
                write(release)
            return out
    except NoSolutionError:
        return None


@pytest.mark.parametrize("b", range(TABLES // PER_BATCH))
def test_random_tables_on_spark_equal_duckdb(spark_session, b: int, tmp_path, monkeypatch) -> None:
    table, spec, _ = batch(b)
    if b in SEARCH_ON_SPARK:  # small histograms take the in-memory path (one fetch) on any engine: force SQL
        from sqlclose.search import memory_runner

        monkeypatch.setattr(memory_runner, "MEMORY_BASE_ROWS", 0)
    written = b in WRITTEN  # the release written as well, by the run that is compared (once on each engine)
    on_duckdb = _outcome(table, spec, DuckDBEngine(),
                         (lambda r: r.write_parquet(tmp_path / "duck.parquet")) if written else None)
    engine = SparkEngine(spark_session, local_search=b not in SEARCH_ON_SPARK)
    try:
        assert _outcome(table, spec, engine,
                        (lambda r: r.write_parquet_folder(tmp_path / "spark")) if written else None) == on_duckdb
        if spec["suppression"]:  # releases that suppress rows were compared too
            assert any(summary["suppressed_rows"] for summary, _ in on_duckdb["at_minimal"]) or b == 0
        if on_duckdb is not None and written:  # the release written as a folder on Spark
            assert _grouped(tmp_path / "spark") == _grouped(tmp_path / "duck.parquet")
    finally:
        engine.close()


def _grouped(path) -> list[tuple]:
    where = str(path / "**" / "*.parquet") if path.is_dir() else str(path)
    return duckdb.sql("SELECT tid, grp, age, CAST(s AS VARCHAR) AS s, COUNT(*) FROM read_parquet($1, hive_partitioning "
                      "= true, hive_types_autocast = false) GROUP BY ALL ORDER BY ALL", params=[where]).fetchall()
