"""A release gives away nothing beyond its guarantee on every engine (issue 7, the forty-fifth
round's red team). Oracles are plain: the written files' bytes, read back with DuckDB."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot

import sqlclose


def _part_files(folder: Path) -> dict[str, tuple[str, int]]:
    """Each part file of a folder: its sha256 and the rows DuckDB reads from it."""
    return {str(f.relative_to(folder)): (hashlib.sha256(f.read_bytes()).hexdigest(),
                     duckdb.sql(f"SELECT COUNT(*) FROM read_parquet('{f}')").fetchall()[0][0])
            for f in sorted(folder.rglob("*.parquet"))}


def _sorted_within(folder: Path, order: str) -> bool:
    """Every part file's rows are in the release's order (DuckDB reads a file in its row order)."""
    for f in folder.rglob("*.parquet"):
        read = duckdb.sql(f"SELECT {order} FROM read_parquet('{f}')").fetchall()
        if read != sorted(read):
            return False
    return True


@pytest.mark.spark
@pytest.mark.parametrize(("rows_per_part", "adaptive", "partition_by"), [
    (None, "false", ()),  # one part file
    (1_000, "false", ()),  # five parts, chosen by each row's values
    (1_000, "true", ()),
    (1_000, "true", ("zip",)),  # and Hive partitions
])
def test_a_spark_folders_part_files_do_not_follow_the_input_order(tmp_path, spark_session, rows_per_part,
                                                                  adaptive, partition_by):
    """Spark range-partitions the sorted release from a reservoir sample of each input split, taken
    in the rows' order: the same rows in another order cut the release into part files at other
    rows (9,656 and 10,344 rows against 10,294 and 9,706), so the folder's bytes and its report's
    digest told two orders of one table apart. Adaptive execution off showed it on a small table;
    with it on, a release too large to coalesce into one partition did the same. Now a release of
    up to ``rows_per_part`` rows is one part file, as DuckDB writes one; a larger one is cut by a
    hash of each row's values (with Hive partitions, of its partition values: one file a partition)
    and each part sorted. The oracle: the part files' sha256, their
    rows counted and their order read by DuckDB. 5,000 rows, parts of 1,000 (20,000 and 4,000 until the
    hundred-first round: the same five parts, and each order still cut at other rows by Spark's own
    sort or by a shuffle that ignores the rows' values)."""
    from sqlclose.engine import SparkEngine

    rng = np.random.default_rng(0)
    n = 5_000
    rows = pa.table({"age": pa.array(rng.integers(20, 70, n), pa.int64()),
                     "zip": rng.choice(["47677", "47602", "47905", "47909"], n).tolist(),
                     "dis": rng.choice(["flu", "ulcer", "cancer", "cold"], n).tolist()})
    spec = {"k": 5, "quasi_identifiers": {"age": {"bands": [5, 10, 20]}, "zip": {"mask": True, "length": 5}},
            "sensitive": {"dis": {"distinct_l": 2}}}
    key = "spark.sql.adaptive.enabled"
    before = spark_session.conf.get(key)
    spark_session.conf.set(key, adaptive)
    try:
        folders = []
        for i, order in enumerate((np.arange(n), np.random.default_rng(1).permutation(n))):
            pq.write_table(rows.take(order), tmp_path / f"in{i}.parquet")
            engine = SparkEngine(spark_session)
            if rows_per_part:
                engine.rows_per_part = rows_per_part
            with sqlclose.anonymize(tmp_path / f"in{i}.parquet", spec, engine=engine) as searched, \
                    searched.at({"age": 1, "zip": 0}) as release:
                release.write(tmp_path / f"r{i}", partition_by=partition_by)
            folders.append(_part_files(tmp_path / f"r{i}"))
    finally:
        spark_session.conf.set(key, before)
    assert sum(count for _, count in folders[0].values()) == n
    assert folders[0] == folders[1], "the part files' bytes follow the input's order"
    assert len(folders[0]) == (4 if partition_by else 5 if rows_per_part else 1)  # one file a Hive partition
    assert _sorted_within(tmp_path / "r0", "age, dis" if partition_by else "age, zip, dis")


@pytest.mark.spark
@pytest.mark.parametrize("case", ["declared", "ordered", "quasi-identifier"])
def test_a_csv_value_spark_cannot_read_is_named_nowhere(tmp_path, spark_session, capfd, case):
    """On DuckDB a CSV value its type cannot read stops the job naming the column and the line,
    never the value. Spark's CAST failed on the row instead, and quoted it: ``The value
    'SECRET-4711' of the type "STRING" cannot be cast to "BIGINT"`` in the error the job prints,
    in pyspark's query-context log and in Spark's task logs (a suppressed row's value as much as
    any). Now the column is read with TRY_CAST and the values it could not read are counted: the
    job stops naming the column and the type. The oracle: the error's text and all stderr."""
    from sqlclose.engine import SparkEngine

    table3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
    spec = sqlclose.load_spec(table3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    spec.update(privacy={"k": 3, "suppression": 0.15})
    row = {"declared": "12345,29,SECRET-4711,flu", "ordered": "12345,29,SECRET-4711,flu",
           "quasi-identifier": "12345,SECRET-4711,3000,flu"}[case]
    types = {"declared": {"salary": "BIGINT"}, "ordered": {}, "quasi-identifier": {"age": "BIGINT"}}[case]
    if case == "quasi-identifier":
        spec["quasi_identifiers"]["age"] = {"bands": [10, 20]}
    source = tmp_path / "people.csv"
    source.write_text((table3 / "table3.csv").read_text(encoding="utf-8") + row + "\n", encoding="utf-8")
    spec["source"] = {"path": str(source), "types": types}
    capfd.readouterr()
    with pytest.raises(sqlclose.errors.InputError) as e:
        sqlclose.anonymize(None, spec, engine=SparkEngine(spark_session))
    column = "age" if case == "quasi-identifier" else "salary"
    assert f"column {column!r} holds 1 value that is not" in str(e.value)
    out, err = capfd.readouterr()
    assert "SECRET" not in str(e.value) and "SECRET" not in out + err


@pytest.mark.spark
@pytest.mark.parametrize("declared, salary", [("BIGINT", "3000.5"), ("DECIMAL", "3000.5"),
                                              ("DECIMAL(12, 2)", "3000.125")])
def test_a_number_its_declared_type_would_change_stops_a_spark_job(tmp_path, spark_session, declared, salary):
    """Spark's casts truncate a CSV's 3000.5 read as BIGINT to 3000, and its plain DECIMAL is
    (10, 0): a salary no row holds. As on DuckDB the job stops, naming the column, the type and the
    count, never the value; a plain DECIMAL is DuckDB's (18, 3) on both engines."""
    from sqlclose.engine import SparkEngine

    table3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
    source = tmp_path / "people.csv"
    source.write_text((table3 / "table3.csv").read_text(encoding="utf-8").replace(
        "47677,29,3000,", f"47677,29,{salary},"), encoding="utf-8")
    spec = sqlclose.load_spec(table3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    spec["source"] = {"path": str(source), "types": {"salary": declared}}
    if declared == "DECIMAL":  # within (18, 3): released as written
        with sqlclose.anonymize(None, spec, engine=SparkEngine(spark_session)) as release:
            assert 3000.5 in [float(v) for v in release.to_arrow().column("salary").to_pylist()]
        return
    with pytest.raises(sqlclose.errors.InputError) as e:
        sqlclose.anonymize(None, spec, engine=SparkEngine(spark_session))
    assert "column 'salary' is declared" in str(e.value) and salary not in str(e.value)


@pytest.mark.spark
def test_spark_reads_a_csvs_quoted_fields_as_duckdb_does(tmp_path, spark_session):
    """A quote inside a quoted CSV field is doubled (RFC 4180; DuckDB reads it so). Spark's reader
    escapes with a backslash by default: it released the field say ""hi"" (quoted) with its quotes
    doubled as written, and end backslash (quoted) as end and a quote: values no row holds, and not
    DuckDB's. The oracle: DuckDB's own read_csv of the file."""
    from sqlclose.engine import SparkEngine

    table3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
    lines = (table3 / "table3.csv").read_text(encoding="utf-8").splitlines()
    notes = ['"say ""hi"""', '"back\\slash"', '"end\\"', '"a, b"'] * 3
    source = tmp_path / "people.csv"
    source.write_text("\n".join([lines[0] + ",note"] + [f"{line},{note}" for line, note in zip(lines[1:], notes)])
                      + "\n", encoding="utf-8")
    spec = sqlclose.load_spec(table3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    spec["others"] = "keep"
    with sqlclose.anonymize(source, spec, engine=SparkEngine(spark_session)) as release:
        on_spark = sorted(release.to_arrow().column("note").to_pylist())
    expected = duckdb.sql(f"SELECT note FROM read_csv('{source}', header = true, quote = '\"', escape = '\"', "
                          "all_varchar = true)").fetchall()
    assert on_spark == sorted(note for (note,) in expected)
    assert 'say "hi"' in on_spark and "end\\" in on_spark


@pytest.mark.spark
@pytest.mark.parametrize("nulls", [[""], ["", "NA"]])
def test_spark_reads_a_csvs_empty_texts_and_nulls_as_duckdb_does(tmp_path, spark_session, nulls):
    """Review rv25: a quoted "" is an empty text, an empty field NULL (while nulls lists ""), on both
    engines: DuckDB read "" as NULL and Spark made both NULL. The oracle: the lines written here
    (3 "" fields, 3 empty ones, 3 NA) and DuckDB's plain read_csv with allow_quoted_nulls = false."""
    from sqlclose.engine import DuckDBEngine, SparkEngine

    table3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
    lines = (table3 / "table3.csv").read_text(encoding="utf-8").splitlines()
    notes = ['""', "", "NA"] * 3
    source = tmp_path / "people.csv"
    source.write_text("\n".join([lines[0] + ",note"] + [f"{line},{note}" for line, note in zip(lines[1:], notes)])
                      + "\n", encoding="utf-8")
    spec = sqlclose.load_spec(table3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    spec.update(others="keep", source={"path": str(source), "nulls": nulls})
    released = []
    for engine in (SparkEngine(spark_session), DuckDBEngine()):
        with sqlclose.anonymize(None, spec, engine=engine) as release:
            released.append(sorted(release.to_arrow().column("note").to_pylist(), key=repr))
    expected = duckdb.sql(f"SELECT note FROM read_csv('{source}', header = true, all_varchar = true, "
                          f"nullstr = {nulls}, allow_quoted_nulls = false)").fetchall()
    assert released[0] == released[1] == sorted((note for (note,) in expected), key=repr)
    assert released[1].count("") == 3 and released[1].count(None) == 3 * len(nulls)


@pytest.mark.spark
@pytest.mark.parametrize("ragged", ["47677,29,3000,gastric ulcer,123-45-6789", "47677,29,3000,flu,ok,123-45-6789,x"])
def test_a_csv_row_with_more_or_fewer_fields_is_refused_on_spark(tmp_path, spark_session, capfd, ragged):
    """DuckDB's strict read stops at a row whose fields do not match the header. Spark's reader is
    permissive: a row without its note field gave the next field, an SSN (a declared identifier),
    to note, and the release published it; extra fields were dropped. Now such rows stop the job,
    counted and never shown. The oracle: the error, stderr, and DuckDB's refusal of the same file."""
    from sqlclose.engine import SparkEngine

    table3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
    lines = (table3 / "table3.csv").read_text(encoding="utf-8").splitlines()
    rows = [lines[0] + ",note,ssn"] + [f"{line},ok,000-00-000{i}" for i, line in enumerate(lines[1:])] + [ragged]
    source = tmp_path / "people.csv"
    source.write_text("\n".join(rows) + "\n", encoding="utf-8")
    spec = sqlclose.load_spec(table3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    spec.update(others="keep", identifiers=["ssn"])
    with pytest.raises(sqlclose.errors.InputError, match="line 11 has"):
        sqlclose.anonymize(source, spec)
    capfd.readouterr()
    with pytest.raises(sqlclose.errors.InputError) as e:
        sqlclose.anonymize(source, spec, engine=SparkEngine(spark_session))
    assert "1 row has more or fewer fields than the header's 6" in str(e.value)
    out, err = capfd.readouterr()
    assert "123-45-6789" not in str(e.value) + out + err


@pytest.mark.spark
@pytest.mark.parametrize("role", ["sensitive equal", "sensitive ordered", "quasi-identifier"])
def test_minus_zero_alone_in_a_float_column_is_refused_on_spark_and_released_on_duckdb(tmp_path, spark_session,
                                                                                      role):
    """Found by the forty-eighth round's parity review. Spark's GROUP BY makes -0.0 the value 0.0,
    so a float column holding -0.0 (and no 0.0) kept the text '0.0' in its domain or leaves, which no
    row holds: the job ended in exit 4 on a valid input (an ordered column lost the row). Spark now
    refuses it naming the fix; DuckDB, which keeps the group's -0.0, releases it with its sign (the
    oracle: the input's values' sign bits)."""
    from sqlclose.engine import SparkEngine

    values = pa.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, -0.0] * 2, pa.float64())  # each row twice: k = 2 at level 0
    pq.write_table(pa.table({"grp": ["a", "b"] * 8, "s": values, "x": values, "d": ["u", "v"] * 8}),
                   tmp_path / "in.parquet")
    spec = {"k": 2, "quasi_identifiers": {"grp": {"mask": True, "length": 1}}}
    if role == "quasi-identifier":
        spec["quasi_identifiers"]["x"] = {"bands": [2, 4]}
        spec["sensitive"] = {"d": {"distance": "equal", "t": 0.99}}
        spec["identifiers"] = ["s"]
    else:
        spec["sensitive"] = {"s": {"distance": role.split()[1], "t": 0.99}}
        spec["identifiers"] = ["x", "d"]
    column = "x" if role == "quasi-identifier" else "s"
    with pytest.raises(sqlclose.errors.DataError, match=f"column '{column}' .* holds -0.0, which the spark engine "
                                                        "groups as 0.0"):
        sqlclose.anonymize(tmp_path / "in.parquet", spec, engine=SparkEngine(spark_session))
    node = {"grp": 0, "x": 0} if role == "quasi-identifier" else None
    with sqlclose.anonymize(tmp_path / "in.parquet", spec, node=node) as release:
        written = release.to_arrow().column(column).to_pylist()
    assert sorted(np.signbit(written)) == sorted(np.signbit(values.to_pylist()))


def _declared_outcome(tmp_path: Path, engine, text: str, kind: str) -> tuple:
    """A CSV whose column s, declared ``kind``, holds 1 … 7 and ``text``, released (k = 2, grp masked):
    ('refused', the message) or ('released', the values of s written, as decimals)."""
    from decimal import Decimal

    source = tmp_path / "in.csv"
    if not source.exists():
        source.write_text("grp,s\n" + "".join(f"{g},{v}\n" for g, v in zip("abababab", [*"1234567", text])),
                          encoding="utf-8")
    spec = {"source": {"path": str(source), "types": {"s": kind}}, "k": 2,
            "quasi_identifiers": {"grp": {"mask": True, "length": 1}},
            "sensitive": {"s": {"distance": "ordered", "t": 0.99}}}
    try:
        with sqlclose.anonymize(None, spec, engine=engine) as release:
            return "released", sorted(Decimal(str(v)) for v in release.to_arrow().column("s").to_pylist())
    except sqlclose.errors.InputError as e:
        return "refused", str(e)


@pytest.mark.spark
@pytest.mark.parametrize(("text", "kind"), [("0x10", "BIGINT"), ("١٢", "DECIMAL(8, 2)"), ("١٢", "BIGINT")])
def test_a_declared_number_column_is_read_as_written_on_both_engines(tmp_path, spark_session, text, kind):
    """docs/spec.md ([source] types): a number its declared type would not read as written stops
    the job. A CSV cell '0x10' declared BIGINT was released by DuckDB as 16 (Spark refused it); a
    cell '١٢' (Arabic-Indic digits) declared DECIMAL(8, 2) was released by Spark as 12.00 (DuckDB
    refused it): only cells that read as a DOUBLE were checked. The oracle: the text is no plain
    number, so both engines refuse it, naming the column and never the value."""
    from sqlclose.engine import SparkEngine

    for engine in (None, SparkEngine(spark_session)):
        outcome, message = _declared_outcome(tmp_path, engine, text, kind)
        assert outcome == "refused" and "column 's'" in message and text not in message


@pytest.mark.spark
@pytest.mark.parametrize(("text", "kind", "released"), [
    ("1_000", "DOUBLE", "1000"), ("1_000", "BIGINT", "1000"), ("1_000", "DECIMAL(8, 2)", "1000"),
    ("1_0e2", "DOUBLE", "1000"), ("1.", "BIGINT", "1"), ("1.0", "BIGINT", "1"), (" 1.00 ", "BIGINT", "1"),
    ("1d", "DOUBLE", None), ("1f", "DOUBLE", None), ("1D", "BIGINT", None), ("1__000", "BIGINT", None),
    # rv10 #8: a separator in the fraction was refused as "a fraction … the type would change"
    ("1.5_0", "DECIMAL(10, 2)", "1.50"), ("1_0.2_5", "DECIMAL(10, 2)", "10.25"), ("5.000_0", "BIGINT", "5"),
    ("1.5_05", "DECIMAL(10, 2)", None),
    # a nonzero below DOUBLE's least read as 0 on both engines: refused; a subnormal is the nearest DOUBLE
    ("1e-400", "DOUBLE", None), ("1e-310", "DOUBLE", "1e-310"),
])
def test_a_declared_number_column_gets_one_answer_on_both_engines(tmp_path, spark_session, text, kind, released):
    """The same CSV and spec was released on one engine and refused on the other: '1_000' declared
    DOUBLE, BIGINT or DECIMAL and '1.' declared BIGINT released by DuckDB (1000, 1), refused by
    Spark; '1d' and '1f' declared DOUBLE released by Spark (Java's 1.0), refused by DuckDB. Now a
    digit separator between digits (DuckDB's reading, kept since the forty-seventh round) and a
    whole number's point and zeros read as the number they write on both; a type suffix, which only
    Spark reads, is refused on both. The oracle: the number written by hand, or a refusal."""
    from decimal import Decimal

    from sqlclose.engine import SparkEngine

    expected = sorted(Decimal(v) for v in [*"1234567", released]) if released else None
    for engine in (None, SparkEngine(spark_session)):
        outcome, found = _declared_outcome(tmp_path, engine, text, kind)
        if released:
            assert (outcome, found) == ("released", expected)
        else:
            assert outcome == "refused" and "column 's'" in found and text.strip() not in found


def _logged(error: BaseException) -> str:
    """What a job's log holds when ``error`` propagates: Python prints an exception with its cause
    chain (``logging.exception`` does the same)."""
    import traceback

    return "".join(traceback.format_exception(error))


def test_an_engine_errors_traceback_names_no_value_on_duckdb():
    """An EngineError was raised ``from`` DuckDB's own error: its message left the value out, but
    Python printed the driver's error too, as its ``__cause__`` (``Could not convert string
    'SECRET-4711' to INT32``, then "The above exception was the direct cause …"). Now the driver's
    error is kept on ``cause`` (which the CSV messages read), not chained. The oracle: the whole
    printed traceback, and the chain's attributes."""
    from sqlclose.engine import DuckDBEngine
    from sqlclose.errors import EngineError

    engine = DuckDBEngine()
    engine.con.execute("CREATE TABLE people AS SELECT ? AS note", ["SECRET-" + "4711"])
    try:
        with pytest.raises(EngineError) as caught:
            engine.fetch("SELECT CAST(note AS INT) AS n FROM people")
    finally:
        engine.close()
    assert "SECRET" not in _logged(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert isinstance(caught.value.cause, duckdb.ConversionException)


@pytest.mark.spark
def test_an_engine_errors_traceback_chains_no_driver_error_on_spark(spark_session):
    """As on DuckDB (above): Spark's error (a Py4J error whose text may quote a row's value) was
    chained as the EngineError's ``__cause__`` and printed with every traceback. Now it is kept on
    ``cause``. The oracle: the printed traceback holds no chained error, and the chain's attributes."""
    from sqlclose.engine import SparkEngine
    from sqlclose.errors import EngineError

    engine = SparkEngine(spark_session)
    try:
        with pytest.raises(EngineError) as caught:
            engine.create_temp_table("t", sqlglot.parse_one("SELECT * FROM no_such_table_anywhere"))
    finally:
        engine.close()
    logged = _logged(caught.value)
    assert "direct cause" not in logged and "During handling" not in logged
    assert caught.value.__cause__ is None and caught.value.cause is not None


# A caller's DataFrame whose column is computed when Spark reads it, failing on one row in ANSI mode:
# each case's column expression, named ``age`` (over a text column ``age_text``), and the failure's kind.
FAILING_COLUMNS = {
    "cast": ("CAST(age_text AS INT)", "CAST_INVALID_INPUT"),
    "overflow": ("CAST(CAST(IF(age_text = '29', '4711471147', '1') AS BIGINT) AS INT)", "CAST_OVERFLOW"),
    "division": ("CAST(100 / IF(age_text = 'SECRET-4711', 0, 1) AS INT)", "DIVIDE_BY_ZERO"),
    "date": ("CAST(IF(age_text = 'SECRET-4711', '1984-13-45', '2000-01-01') AS DATE)", "CAST_INVALID_INPUT"),
    # Outside SQLSTATE class 22, and quoting the row's value all the same (review of the ninety-second
    # round): a format the text does not match (42601), the DataFrame's own raise_error (P0001).
    "format": ("CAST(to_number(IF(age_text = 'SECRET-4711', age_text, '1'), '9999') AS INT)",
               "INVALID_FORMAT.MISMATCH_INPUT"),
    "raised": ("IF(age_text = 'SECRET-4711', CAST(raise_error(concat('bad ', age_text)) AS INT), 1)",
               "USER_RAISED_EXCEPTION"),
}


def _failing_frame(spark_session, case: str):
    """Table 3's zip and disease with ``age`` computed by ``FAILING_COLUMNS[case]``; one row's
    age_text is 'SECRET-4711', another's '29' (which the overflow case turns into 4711471147)."""
    ages = ["SECRET-4711", "29", "22", "27", "43", "52", "47", "30", "36"]
    rows = [(f"4767{i}", age, "flu" if i % 2 else "gastritis") for i, age in enumerate(ages)]
    frame = spark_session.createDataFrame(rows, "zip string, age_text string, disease string")
    return frame.selectExpr("zip", f"{FAILING_COLUMNS[case][0]} AS age", "disease")


@pytest.mark.spark
@pytest.mark.parametrize("case", sorted(FAILING_COLUMNS))
def test_a_value_sparks_cast_fails_on_is_named_nowhere_in_the_error(spark_session, case):
    """docs/what-a-release-reveals.md, "A value in a conversion error": DuckDB's conversion errors
    are rebuilt without the value; Spark's were passed on as they came, ``NumberFormatException:
    [CAST_INVALID_INPUT] The value 'SECRET-4711' of the type "STRING" cannot be cast to "INT"`` (and
    ``[CAST_OVERFLOW] The value 4711471147L``, a date's '1984-13-45'), in the one line a job prints.
    Oracle: the values the test put in the rows appear nowhere in the error or its whole printed
    traceback, while the column the failing expression reads (age_text) and Spark's kind of error do."""
    import traceback

    spec = {"others": "keep", "privacy": {"k": 3}, "quasi_identifiers": {"zip": {"mask": True, "length": 5}}}
    with pytest.raises(sqlclose.errors.EngineError) as caught:
        with sqlclose.anonymize(_failing_frame(spark_session, case), spec) as release:
            release.to_arrow()
    told = str(caught.value)
    printed = "".join(traceback.format_exception(caught.value))
    for value in ("SECRET-4711", "4711471147", "1984-13-45"):
        assert value not in told and value not in printed
    assert f"[{FAILING_COLUMNS[case][1]}]" in told and "is not shown" in told
    if case in ("cast", "division", "date"):  # Spark gives the others no query context: no column to name
        assert "column 'age_text'" in told


@pytest.mark.spark
@pytest.mark.parametrize("role", ["kept", "quasi-identifier"])
def test_a_row_a_spark_dataframes_column_fails_on_is_bad_input(tmp_path, spark_session, role):
    """A caller's DataFrame whose column Spark computes lazily (a cast failing on one row in ANSI
    mode) ended the job as an internal error (EngineError, exit 1), met by the scan (a QI) or only
    by the write (a kept column), where DuckDB's path refuses a failing relation or view as bad
    input (exit 2) when it opens it. The oracle: docs/bad-input.md's exit code for bad input (2),
    an InputError; nothing at the output path (the file system); no value in the message."""
    spec = {"others": "keep", "privacy": {"k": 3}, "quasi_identifiers": {"zip": {"mask": True, "length": 5}}}
    if role == "quasi-identifier":
        spec["quasi_identifiers"]["age"] = {"bands": [10, 20]}
    out = tmp_path / "release"  # the Spark engine writes a Parquet folder
    with pytest.raises(sqlclose.errors.InputError) as caught:
        with sqlclose.anonymize(_failing_frame(spark_session, "cast"), spec) as release:
            release.write(out)
    told = str(caught.value)
    assert caught.value.exit_code == 2, told
    assert "a value of the source could not be computed" in told and "[CAST_INVALID_INPUT]" in told, told
    assert "column 'age_text'" in told and "fix the DataFrame or view" in told, told
    assert "SECRET-4711" not in told
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_spark_data_exception_is_rebuilt_from_its_text_alone():
    """A Spark error that is not a captured one (a stage failure passed on as Py4J's text) is judged
    by its text: a data exception's SQLSTATE (class 22) anywhere in it and nothing of it is shown;
    any other error is left to the engine's usual one line. Oracle: the text written here."""
    from sqlclose.engine.spark_errors import message_without_values

    stage = RuntimeError("Job aborted due to stage failure: Lost task 1.0: org.apache.spark.SparkNumberFormat"
                         "Exception: [CAST_INVALID_INPUT] The value 'SECRET-4711' of the type \"STRING\" cannot "
                         "be cast to \"INT\" because it is malformed. SQLSTATE: 22018")
    redacted = message_without_values(stage)
    assert redacted is not None and "SECRET" not in redacted and "not shown" in redacted
    assert message_without_values(RuntimeError("[TABLE_OR_VIEW_NOT_FOUND] x. SQLSTATE: 42P01")) is None
