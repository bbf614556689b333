"""Statements the Spark engine no longer runs, their answer known before they run (marked ``spark``).

Each statement on Spark is a job, ~0.1-0.3 s on a small table in the tests' session, and a pass
over every row on a large one. Oracles: the SQL texts the session itself was handed (a spy on
``SparkSession.sql``, beside sqlclose's code), Spark's own count of the jobs it ran
(``statusTracker``), and the written folder's rows read back by DuckDB.
"""

from __future__ import annotations

import csv
from pathlib import Path

import duckdb
import pytest

import sqlclose
from sqlclose.errors import InputError

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"


@pytest.fixture
def statements(spark_session, monkeypatch) -> list[str]:
    """Every SQL text the session is handed while the test runs."""
    seen: list[str] = []
    real = spark_session.sql

    def spied(query, *args, **kwargs):
        seen.append(query)
        return real(query, *args, **kwargs)

    monkeypatch.setattr(spark_session, "sql", spied)
    return seen


def _written(folder: Path) -> list[tuple]:
    return duckdb.sql("SELECT * FROM read_parquet($1) ORDER BY ALL", params=[str(folder / "*.parquet")]).fetchall()


def test_a_csv_read_by_spark_is_not_passed_over_for_utf8(spark, statements, tmp_path: Path) -> None:
    """The text of a CSV Spark decoded itself is UTF-8 by construction (a byte its encoding does not
    decode is U+FFFD, which the read refuses): its release ran a job over every row asking each text
    column is_valid_utf8 (Adult: 2.6 s of a 27 s release). None now, for every encoding; the release is
    as before (its rows: Table 5 of Li et al.), and a CSV not in its encoding is still refused."""
    for encoding in ("utf-8", "utf-16", "latin-1"):
        path = tmp_path / f"table3-{encoding}.csv"
        path.write_text((TABLE3 / "table3.csv").read_text(encoding="utf-8"), encoding=encoding)
        spec = sqlclose.load_spec(TABLE3 / "table3.toml")
        spec = spec.model_copy(update={"source": spec.source.model_copy(update={"path": path,
                                                                                 "encoding": encoding})})
        with sqlclose.anonymize(None, spec, engine=spark) as release:
            release.write_parquet_folder(tmp_path / encoding)
        rows = _written(tmp_path / encoding)
        assert len(rows) == 9 and {(z, a) for z, a, *_ in rows} == {("4760*", "<40"), ("4767*", "<40"),
                                                                    ("4790*", ">=40")}
    assert statements and not [s for s in statements if "IS_VALID_UTF8" in s.upper()]
    bad = tmp_path / "latin1.csv"
    with bad.open("w", encoding="latin-1", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([("zip", "age", "salary", "disease"),
                                                      *[("47677", "29", "3", "Mönchen")] * 3])
    spec = {"privacy": {"k": 3}, "quasi_identifiers": {"zip": {"mask": True, "length": 5}},
            "sensitive": {"disease": {"distinct_l": 1}}}
    with pytest.raises(InputError, match="bytes that are not utf-8 text"):
        sqlclose.anonymize(str(bad), spec, engine=spark)


def test_a_parquet_sources_text_is_still_passed_over_for_utf8(spark, statements, tmp_path: Path) -> None:
    """Only a CSV Spark decoded skips the pass: a Parquet STRING holds whatever bytes its writer put
    (tests/test_spark_sources.py refuses those that are not UTF-8)."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    table = pacsv.read_csv(TABLE3 / "table3.csv", convert_options=pacsv.ConvertOptions(
        column_types={"zip": "string"}))
    pq.write_table(table, tmp_path / "table3.parquet")
    spec = sqlclose.load_spec(TABLE3 / "table3.toml")
    with sqlclose.anonymize(str(tmp_path / "table3.parquet"), spec, engine=spark) as release:
        release.write_parquet_folder(tmp_path / "out")
    assert len(_written(tmp_path / "out")) == 9
    assert len([s for s in statements if "IS_VALID_UTF8" in s.upper()]) == 1


def test_an_ordered_columns_values_are_not_checked_against_themselves(spark, spark_session, statements,
                                                                      tmp_path: Path) -> None:
    """An ordered sensitive column without a hierarchy (Table 3's salary) has for its domain its own
    values' text, read on Spark: the check that each value is in that domain, a query of the column's
    values against its lookup, ran two jobs that could find nothing. It is not run now; the release
    is as before (9 rows, Table 5's classes). A hierarchy's leaves are still checked
    (``disease``: its lookup is read against the values, locally)."""
    tracker = spark_session.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    with sqlclose.anonymize(None, TABLE3 / "table3.toml", engine=spark) as release:
        release.write_parquet_folder(tmp_path / "out")
    rows = _written(tmp_path / "out")
    assert len(rows) == 9 and sorted(r[2] for r in rows) == [1000 * k for k in range(3, 12)]  # as read
    salary = "__sqlclose_lookup_s0_"  # salary is the first sensitive column: its lookup's name
    # the lookups are made and read, as maps bound to the base histogram (tests/test_spark_lookup_maps.py): a
    # check against salary's lookup would name it, as the leaf check's query does
    assert any("MAP_FROM_ARRAYS" in s and "LATERAL" in s for s in statements)
    assert not [s for s in statements if salary in s and "column_values" in s]
    assert len(set(tracker.getJobIdsForGroup(None)) - before) > 10  # the spy and the tracker saw the release
    # the re-check's two row sums crossed in one job (test_the_truth_tests_two_sums_are_crossed_in_one_job)
    assert len([s for s in statements if "written_0" in s and "SHUFFLE_REPLICATE_NL" in s]) == 1


def _jobs(spark_session) -> set[int]:
    return set(spark_session.sparkContext.statusTracker().getJobIdsForGroup(None))


def _cached(spark_session) -> list[tuple[int, int]]:
    """Each cached relation holding a partition: its partitions held, and its partitions (the JVM's
    storage status, which lists a relation once a partition of it is held)."""
    return [(info.numCachedPartitions(), info.numPartitions())
            for info in spark_session.sparkContext._jsc.sc().getRDDStorageInfo()]


def test_a_kept_table_is_computed_by_the_statement_that_reads_it(spark, spark_session) -> None:
    """A temporary table was computed when made, by a count: a job of its own, then the statement that
    reads it, most often the next (the column values, the base histogram, the re-check's grouped file),
    a second. The statement that reads it computes it now, whole (Spark caches a partition whole), in
    one job; one made and not read by the next statement is computed before it, as before. Oracles:
    Spark's job count and storage status, and a count of the values by Python's Counter."""
    from collections import Counter

    import pyarrow as pa
    from sqlglot import exp

    values = [f"v{i % 7}" for i in range(100)]
    spark.register("src", pa.table({"k": values}))
    earlier = len(_cached(spark_session))  # relations other tests left cached, if any
    before = _jobs(spark_session)
    kept = spark.create_temp_table("kept", exp.select("k", "COUNT(*) AS n").from_("src").group_by("k"))
    made = _jobs(spark_session)
    rows = spark.fetch(exp.select("*").from_(kept).limit(1000))
    assert len(made - before) == 0 and len(_jobs(spark_session) - made) == 1
    assert dict(zip(rows.column("k").to_pylist(), rows.column("n").to_pylist())) == Counter(values)
    cached = _cached(spark_session)
    assert len(cached) == earlier + 1 and all(held == parts > 0 for held, parts in cached)  # the cache is whole
    other = spark.create_temp_table("other", exp.select("k").from_(kept).where("n > 14"))
    assert len(_cached(spark_session)) == earlier + 1  # made, not computed
    spark.fetch(exp.select("*").from_("src").limit(1))  # reads another table: "other" is computed first
    cached = _cached(spark_session)
    assert len(cached) == earlier + 2 and all(held == parts > 0 for held, parts in cached)
    assert spark.fetch(exp.select("*").from_(other)).num_rows == len([v for v, n in Counter(values).items() if n > 14])


def test_a_kept_tables_own_error_is_told_with_its_sql(spark) -> None:
    """A kept table whose query fails on a row (a CAST in ANSI mode) is refused as it was when made:
    bad input naming no value, its own SQL in the error (not that of the statement that read it)."""
    import pyarrow as pa
    from sqlglot import exp

    from sqlclose.errors import SourceDataError

    spark.register("src", pa.table({"k": ["1", "2", "x3"]}))
    kept = spark.create_temp_table("kept", exp.select("k").from_("src").group_by("k"))
    with pytest.raises(SourceDataError) as refused:
        bad = spark.create_temp_table("bad", exp.select("CAST(k AS INT) AS v").from_(kept))
        spark.fetch(exp.select("SUM(v) AS s").from_(bad))
    assert "CAST(k AS INT)" in refused.value.sql and "SUM(v)" not in refused.value.sql
    assert "x3" not in str(refused.value)


def test_a_kept_table_a_command_computed_is_not_counted_again(spark, spark_session) -> None:
    """A command (``Engine.execute``; Spark runs one when handed it) reading a kept table not yet
    computed computes it: the table was left listed to fill, and the next statement counted it again,
    a job of its own (hundred-and-first round). Oracles: Spark's job count (the next statement, a
    read of another table, is one job: two on the code before) and the storage status (the kept
    table whole); the command's cached rows, counted by Python."""
    import pyarrow as pa
    from sqlglot import exp

    values = [f"v{i % 5}" for i in range(60)]
    spark.register("src", pa.table({"k": values}))
    kept = spark.create_temp_table("kept", exp.select("k").from_("src").group_by("k"))
    earlier = len(_cached(spark_session))
    spark.execute(f"CACHE TABLE cmd AS SELECT k, length(k) AS n FROM {kept.sql('spark')}")
    try:
        assert len(_cached(spark_session)) == earlier + 2  # the kept table, and the command's own
        before = _jobs(spark_session)
        spark.fetch(exp.select("*").from_("src").limit(1))
        assert len(_jobs(spark_session) - before) == 1
        assert all(held == parts > 0 for held, parts in _cached(spark_session))
        assert spark.fetch("SELECT count(*) AS n FROM cmd").column("n")[0].as_py() == len(set(values))
    finally:
        spark_session.sql("UNCACHE TABLE IF EXISTS cmd")
        spark_session.catalog.dropTempView("cmd")


def test_a_kept_tables_own_error_is_told_with_its_sql_by_a_command(spark) -> None:
    """The rule of ``test_a_kept_tables_own_error_is_told_with_its_sql`` for a command reading the
    table: its own SQL in the error, not the command's (which the code before told)."""
    import pyarrow as pa
    from sqlglot import exp

    from sqlclose.errors import SourceDataError

    spark.register("src", pa.table({"k": ["1", "2", "x3"]}))
    kept = spark.create_temp_table("kept", exp.select("k").from_("src").group_by("k"))  # not folded when planned
    bad = spark.create_temp_table("bad", exp.select("CAST(k AS INT) AS v").from_(kept))
    try:
        with pytest.raises(SourceDataError) as refused:
            spark.execute(f"CACHE TABLE cmd AS SELECT SUM(v) AS s FROM {bad.sql('spark')}")
        assert "CAST(k AS INT)" in refused.value.sql and "CACHE TABLE" not in refused.value.sql
        assert "x3" not in str(refused.value)
    finally:
        spark.spark.sql("UNCACHE TABLE IF EXISTS cmd")
        spark.spark.catalog.dropTempView("cmd")


def test_the_truth_tests_two_sums_are_crossed_in_one_job(spark, spark_session) -> None:
    """The re-check's row sums cross two one-row sums (``verify_row_sums``): Spark broadcast one of
    them, a job of its own before the statement's (hundred-and-first round). Crossed as a cartesian
    product (``crossed_in_one_job``), the statement runs the jobs of one side's sum alone, one fewer
    than the same query as written. Oracles: Spark's job count, and the sums worked out in Python."""
    import pyarrow as pa
    from sqlglot import exp, parse_one

    xs, ys = [3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8]
    spark.register("xs", pa.table({"x": xs}))
    spark.register("ys", pa.table({"y": ys}))
    kx = spark.create_temp_table("kx", exp.select("x", "COUNT(*) AS n").from_("xs").group_by("x"))
    ky = spark.create_temp_table("ky", exp.select("y", "COUNT(*) AS n").from_("ys").group_by("y"))
    one_side = exp.select("SUM(x * n) AS s").from_(kx)
    spark.fetch_row(one_side)
    spark.fetch_row(exp.select("SUM(y * n) AS s").from_(ky))  # both kept tables computed
    query = parse_one(f"SELECT w.s AS w, g.s AS g FROM (SELECT SUM(x * n) AS s FROM {kx.sql('spark')}) AS w "
                      f"CROSS JOIN (SELECT SUM(y * n) AS s FROM {ky.sql('spark')}) AS g", read="spark")
    jobs = []
    for each in (one_side, query, spark.crossed_in_one_job(query)):
        before = _jobs(spark_session)
        row = spark.fetch_row(each)
        jobs.append(len(_jobs(spark_session) - before))
    assert row == {"w": sum(xs), "g": sum(ys)}
    assert jobs[2] == jobs[0] and jobs[1] == jobs[0] + 1, jobs


def _table3_spec(k: int, suppression: float):
    spec = sqlclose.load_spec(TABLE3 / "table3.toml")
    return spec.model_copy(update={"privacy": spec.privacy.model_copy(update={"k": k, "suppression": suppression})})


def test_the_optimums_classes_after_a_local_search_are_read_from_its_copy(spark, spark_session, statements,
                                                                          tmp_path: Path) -> None:
    """After the search over the local copy of the base histogram (search/hybrid.py), the optimum's
    classes were computed again on Spark, a GROUP BY of the same base: a job, ~0.1-0.3 s on a small
    table (hundred-and-first round). They are read from the local copy now, before it is closed.
    Oracles: Spark's job count and the statements it was handed while the release's classes and
    summary are read (none); the classes Spark's own GROUP BY gives (``measure_node`` on the Spark
    problem), array for array and type for type, failing classes too (k = 4 at 34 %: one class of
    3 rows suppressed); the written folder's rows, grouped by DuckDB."""
    import numpy as np

    from sqlclose.release.release import measure_node

    with sqlclose.anonymize(None, _table3_spec(4, 0.34), engine=spark) as release:
        before, seen = _jobs(spark_session), len(statements)
        hist, failing = release._classes()
        summary = release.summary
        assert len(_jobs(spark_session) - before) == 0 and statements[seen:] == []
        _, on_spark, failing_on_spark = measure_node(release.problem, release.criteria, release.search.optimum)
        assert len(_jobs(spark_session) - before) >= 1  # the oracle's GROUP BY did run on Spark
        for mine, theirs in [(hist.codes, on_spark.codes), (hist.sizes, on_spark.sizes), (failing, failing_on_spark),
                             *zip(hist.counts, on_spark.counts)]:
            assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)
        assert failing.sum() == 1 and hist.sizes[failing].sum() == 3
        release.write_parquet_folder(tmp_path / "out")
    sizes = duckdb.sql("SELECT COUNT(*) AS n FROM read_parquet($1) GROUP BY zip, age ORDER BY n",
                       params=[str(tmp_path / "out" / "*.parquet")]).fetchall()
    assert sizes == [(6,)] and summary["classes"] == 1 and summary["suppressed_rows"] == 3 and summary["rows"] == 6


def test_the_reference_distributions_are_collected_in_one_statement(spark, spark_session, statements,
                                                                    tmp_path: Path) -> None:
    """The re-check's reference distribution Q of each sensitive column (Table 3: salary and disease)
    was a statement, and a job, of its own, copied beside the local judge. Both are collected by one
    now. Oracles: the statements Spark was handed; Spark's job count for the whole release (24 on
    the code before this round: 22 now); the closeness reached per column, as the DuckDB engine
    measures it from its own references."""
    before = _jobs(spark_session)
    with sqlclose.anonymize(None, TABLE3 / "table3.toml", engine=spark) as release:
        doc = release.write_parquet_folder(tmp_path / "spark")
    jobs = len(_jobs(spark_session) - before)
    assert len([s for s in statements if "ROW_NUMBER() OVER (ORDER BY sort_key" in s]) == 1
    assert jobs <= 22, jobs
    with sqlclose.anonymize(None, TABLE3 / "table3.toml") as release:
        duck = release.write_parquet(tmp_path / "duck.parquet")
    assert doc["privacy"] == duck["privacy"] and doc["t_against_release"] == duck["t_against_release"]
    assert len(_written(tmp_path / "spark")) == 9


def test_a_partition_column_released_as_labels_is_checked_by_its_labels(spark, spark_session, statements,
                                                                         tmp_path: Path) -> None:
    """A partition column that is a quasi-identifier above its leaves holds its hierarchy's labels at
    that level, and nothing else: none of them '' or '__HIVE_DEFAULT_PARTITION__' (the texts Spark's
    folder names cannot carry), no released row can hold one, and the count of such rows over the
    whole release query (3 jobs for Adult's, partitioned by sex) is not run. Oracles: the
    statements Spark was handed; the written rows per age, counted by DuckDB from the folder (Table 5
    of Li et al.: six under 40, three over)."""
    with sqlclose.anonymize(None, TABLE3 / "table3.toml", engine=spark) as release:
        assert release.node["age"] == 2
        release.write_parquet_folder(tmp_path / "out", partition_by=["age"])
    assert statements and not [s for s in statements if "__HIVE_DEFAULT_PARTITION__" in s]
    ages = duckdb.sql("SELECT age, COUNT(*) FROM read_parquet($1, hive_partitioning = true) GROUP BY age ORDER BY age",
                      params=[str(tmp_path / "out" / "**" / "*.parquet")]).fetchall()
    assert ages == [("<40", 6), (">=40", 3)]
