"""Spark reads a small lookup as maps bound to the statement, not as a join (marked ``spark``).

A join to a lookup registered from Arrow was a broadcast, a Spark job of its own (~10 of a small
release's 24). Oracles: Spark's own count of the jobs it ran (``statusTracker``); the SQL texts and
arguments the session itself was handed (a spy on ``SparkSession.sql``); DuckDB's joins of the same
lookups (the engine that keeps the join) for the rows; the written folder read back by DuckDB.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from sqlglot import exp

import sqlclose
from sqlclose.engine import DuckDBEngine
from sqlclose.engine.spark_lookups import MAPPED_ROWS
from sqlclose.errors import EngineError
from sqlclose.sql import queries as q

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"


@pytest.fixture
def handed(spark_session, monkeypatch) -> list[tuple[str, dict]]:
    """Every SQL text the session is handed while the test runs, with its arguments."""
    seen: list[tuple[str, dict]] = []
    real = spark_session.sql

    def spied(query, args=None, **kwargs):
        seen.append((query, args or {}))
        return real(query, args, **kwargs)

    monkeypatch.setattr(spark_session, "sql", spied)
    return seen


def _grouped(path: Path) -> list[tuple]:
    where = str(path / "**" / "*.parquet") if path.is_dir() else str(path)
    return duckdb.sql("SELECT zip, age, salary, disease, COUNT(*) FROM read_parquet($1) GROUP BY ALL ORDER BY ALL",
                      params=[where]).fetchall()


def _table3_texts() -> set[str]:
    """Every leaf and label of Table 3's lookups: its values (each a leaf) and the disease hierarchy's
    and age hierarchy's rows; those of two characters or fewer left out (a number in any SQL)."""
    texts = set()
    for name in ("table3.csv", "disease.csv", "age.csv"):
        with (TABLE3 / name).open(encoding="utf-8") as f:
            for row in csv.reader(f, delimiter=";" if name != "table3.csv" else ","):
                texts.update(row)
    return {t for t in texts if len(t) > 2 and t not in {"zip", "age", "salary", "disease", "<40", ">=40"}}


def test_a_small_release_on_spark_runs_16_jobs_or_fewer(spark, spark_session, tmp_path: Path) -> None:
    """Table 3 as a folder: 24 jobs before, 10 of them broadcasts of the lookups (the base histogram's
    four, the write's four, the truth test's two); 16 now (the write's two class-label lookups, which
    are DISTINCT labels per class, are still joined). The rows are DuckDB's release's."""
    tracker = spark_session.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    with sqlclose.anonymize(None, TABLE3 / "table3.toml", engine=spark) as release:
        release.write_parquet_folder(tmp_path / "spark")
    jobs = len(set(tracker.getJobIdsForGroup(None)) - before)
    with sqlclose.anonymize(None, TABLE3 / "table3.toml") as release:
        release.write_parquet(tmp_path / "duck.parquet")
    assert _grouped(tmp_path / "spark") == _grouped(tmp_path / "duck.parquet")
    assert 0 < jobs <= 16, jobs


def test_the_lookups_leaves_are_bound_never_written_into_the_sql(spark, handed, tmp_path: Path) -> None:
    """The maps' contents are bound parameters: no leaf or label of Table 3's lookups is in any SQL text
    the session was handed (an error and the logs carry the SQL), and the data's leaves are in its
    arguments."""
    with sqlclose.anonymize(None, TABLE3 / "table3.toml", engine=spark) as release:
        release.write_parquet_folder(tmp_path / "spark")
    texts = _table3_texts()
    assert {"gastric ulcer", "47677", "stomach diseases", "11000"} <= texts
    mapped = [(sql, args) for sql, args in handed if "MAP_FROM_ARRAYS" in sql]
    assert len(mapped) >= 3  # the base histogram, the write, the truth test
    assert not [(t, sql) for sql, _ in handed for t in texts if t in sql]
    bound = [json.loads(v) for _, args in mapped for v in args.values() if isinstance(v, str) and v.startswith("[")]
    with (TABLE3 / "table3.csv").open(encoding="utf-8") as f:
        held = {value for row in list(csv.reader(f))[1:] for value in row}  # each a leaf of its column's lookup
    assert held <= {str(value) for values in bound for value in values}


def _lookup_and_source(engine, leaves: list[str], values: list[str | None]) -> tuple[str, exp.Table]:
    name = engine.temp_name("lookup")
    engine.register(name, pa.table({"value": leaves, "code": list(range(len(leaves))),
                                    "label_1": [f"L-{leaf}" for leaf in leaves]}))
    source = engine.temp_name("src")
    engine.register(source, pa.table({"x": pa.array(values, pa.string()), "i": list(range(len(values)))}))
    return name, exp.Table(this=exp.to_identifier(source, quoted=True))


def _rows(engine, query: exp.Expression, params: q.Params) -> list[tuple]:
    rows = [tuple(row.values()) for row in engine.fetch(query, params.values).to_pylist()]
    return sorted(rows, key=lambda row: [(value is None, value) for value in row])  # NULLs last


def _inner_and_left(engine, lookup: str, source: exp.Table, null_value: str | None,
                    typed: exp.DataType | None = None) -> tuple[list, list, list[str]]:
    """A base histogram (inner joins) and a LEFT read of the lookup's label per row, on ``engine``, with
    the SQL texts rendered."""
    coded = q.CodedColumn("x", "r0", "q0", lookup, null_value=null_value, exact_type=typed)
    params = q.Params()
    base = q.base_histogram(source, [coded], params, looked_up=engine.looked_up)
    select = exp.select(q.col("i", "src"), q.col("label_1", "lk"), q.col("code", "lk")).from_(
        exp.alias_(source.copy(), q.ident("src"), table=True))
    left_params = q.Params()
    left = q.join_lookup(select, q.table(lookup), "lk", "value",
                         lambda: q.leaf_match(q.col("value", "lk"), coded, left_params),
                         lambda: q.leaf_text(q.col("x", "src"), null_value, left_params.add),
                         left_params.add, outer=True, looked_up=engine.looked_up)
    sqls = [engine.render(base), engine.render(left)]
    return _rows(engine, base, params), _rows(engine, left, left_params), sqls


@pytest.mark.parametrize("null_value", [None, "<none>"])
def test_maps_keep_the_joins_rows(spark, null_value: str | None) -> None:
    """An inner join drops a row whose value is no leaf; a LEFT join keeps it with NULLs; a NULL is
    matched by its stand-in: the maps give the rows DuckDB's joins give, and Spark's SQL joins nothing."""
    leaves = ["a", "b", "<none>", "07", "7"]
    values = ["a", "b", "b", "c", None, "7", "07", None]
    duck = DuckDBEngine()
    try:
        expected = _inner_and_left(duck, *_lookup_and_source(duck, leaves, values), null_value)[:2]
    finally:
        duck.close()
    lookup, source = _lookup_and_source(spark, leaves, values)
    *got, sqls = _inner_and_left(spark, lookup, source, null_value)
    assert got == list(expected)
    assert len(got[0]) == (5 if null_value else 4) and len(got[1]) == len(values)
    assert not [sql for sql in sqls if lookup in sql or " JOIN `" in sql]  # read as maps, not joined


def test_a_typed_match_reads_the_maps_by_the_values_text(spark) -> None:
    """An integer column matched typed (``typed_leaf``: '07' is no integer's text, '7' is 7's) keeps its
    matches when the maps are read by the value's text."""
    leaves, ints = ["7", "07", "8", "x"], [7, 7, 9, None, 8]
    expected = None
    for engine in (DuckDBEngine(), spark):
        lookup = engine.temp_name("lookup")
        engine.register(lookup, pa.table({"value": leaves, "code": list(range(len(leaves))),
                                          "label_1": [f"L-{leaf}" for leaf in leaves]}))
        source = engine.temp_name("src")
        engine.register(source, pa.table({"x": pa.array(ints, pa.int32()), "i": list(range(len(ints)))}))
        got = _inner_and_left(engine, lookup, exp.Table(this=exp.to_identifier(source, quoted=True)), None,
                              exp.DataType.build("INT"))[:2]
        if expected is None:
            expected = got
            engine.close()
    assert got == expected and got[0] == [(0, 2), (2, 1)]  # 7 twice ('7', code 0), 8 once ('8', code 2)


def test_a_lookup_past_the_bound_or_keyed_twice_stays_joined(spark) -> None:
    """A lookup of more than ``MAPPED_ROWS`` rows is joined (its maps would cost more than its broadcast),
    as is one whose leaf column holds a value twice (a map holds a key once; the join matches both)."""
    for leaves, mapped in ((["a", "b", "a"], False), ([f"v{i}" for i in range(MAPPED_ROWS)], True),
                           ([f"v{i}" for i in range(MAPPED_ROWS + 1)], False)):
        lookup, source = _lookup_and_source(spark, leaves, ["a", "v1", None])
        rows, _, sqls = _inner_and_left(spark, lookup, source, None)
        assert (lookup not in sqls[0]) == mapped
        assert sum(n for *_, n in rows) == (2 if leaves[0] == "a" else 1)


def test_an_error_in_a_statement_reading_maps_names_no_leaf(spark) -> None:
    """A statement reading maps that Spark refuses (a column the source lacks) or that fails on a row (a
    value that does not cast) raises an error that names no leaf or label: neither its message nor the SQL
    it carries. The maps' contents reach Spark as bound parameters only."""
    leaves = ["SECRET-LEAF-4711", "SECRET-LEAF-4712"]
    lookup, source = _lookup_and_source(spark, leaves, ["SECRET-LEAF-4711"])
    failing = spark.temp_name("failing")
    spark.spark.sql(f"SELECT CAST(x AS INT) AS x FROM `{source.name}`").createOrReplaceTempView(failing)
    for relation, column in ((source, "missing"), (exp.Table(this=exp.to_identifier(failing, quoted=True)), "x")):
        coded = q.CodedColumn(column, "r0", "q0", lookup)
        params = q.Params()
        query = q.base_histogram(relation, [coded], params, looked_up=spark.looked_up)
        with pytest.raises(EngineError) as caught:
            spark.fetch(query, params.values)
        told = f"{caught.value} {caught.value.sql}"
        assert "MAP_FROM_ARRAYS" in caught.value.sql
        assert not [leaf for leaf in [*leaves, "L-SECRET"] if leaf in told], told
    spark.spark.catalog.dropTempView(failing)


@pytest.mark.parametrize("items", ["leaf redefined", "aggregate", "window", "star"])
def test_a_select_lookup_a_map_would_not_read_alike_stays_joined(spark, items: str) -> None:
    """A lookup given as a SELECT over a registered table is read as maps only when each of its items is a
    row's own expression and its leaf column is the table's: a map is keyed by the table's column and read
    per row, so a leaf recomputed (``code // 2 AS value``), an aggregate, a window or a star would be read
    otherwise than the join reads them. Such a lookup stays joined, and its rows are the join's."""
    leaves = ["a", "b", "c", "d"]
    lookup, source = _lookup_and_source(spark, leaves, ["a", "b", "0", "1"])
    column = {"leaf redefined": exp.cast(exp.Div(this=q.col("code"), expression=exp.Literal.number(2),
                                                 typed=True), "STRING").as_("value"),
              "aggregate": exp.Max(this=q.col("value")).as_("value"),
              "window": exp.Window(this=exp.RowNumber(), partition_by=[q.col("label_1")]).as_("value"),
              "star": exp.Star()}[items]
    extra = [q.col("label_1")] if items in ("leaf redefined", "window") else []
    select_lookup = exp.select(column, *extra).from_(q.table(lookup))
    called = exp.select(q.col("i", "src")).from_(exp.alias_(source.copy(), q.ident("src"), table=True))
    params = q.Params()
    joined = q.join_lookup(called, select_lookup, "lk", "value",
                           lambda: exp.EQ(this=q.col("value", "lk"), expression=q.col("x", "src")),
                           lambda: q.col("x", "src"), params.add, outer=False, looked_up=spark.looked_up)
    sql = spark.render(joined)
    assert "MAP_FROM_ARRAYS" not in sql and lookup in sql  # joined, not read as maps
