"""Where an error tells the user to change a column, or to list a column's values, it says it for the
source as it was opened (``Opened.kind``), never as its label reads (ninety-seventh round):

- a file whose path begins with another kind's label ("duckdb table t.parquet", "pandas DataFrame")
  was advised as that kind (a view of a caller's table, the DataFrame) and is told a [source] query;
- a Spark catalog table given as ``(SparkSession, "t")`` was told a [source] query, which is refused
  beside it: it is told a DataFrame of the table, given in its place;
- the command said to list a column's values read the spec's own [source] for a caller's
  ``(connection, table)`` or for a path given in place of that [source]: the first is told the
  error's ``named`` (no command reads a caller's connection), the second the command with --data;
- a tree's missing leaf was told ``Respiratory = ["flu", "…"]`` for any column: it is told the
  column's own tree's group.

The oracle: each piece of advice, run as written (DuckDB, the CLI, Spark), does what it says — the
source it makes releases the dates the test wrote, the command names the value the test planted.
"""

from __future__ import annotations

import datetime as dt
import re
import shlex
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from advice_statements import example, refused
from table3_project import invoke, table3_missing_age

import sqlclose
from sqlclose.errors import NotLeavesError

DAYS = ["20240517", "20240518", "20240601"] * 4
DATES = {"privacy": {"k": 2}, "quasi_identifiers": {"dob": {"dates": True}}, "sensitive": {"s": {"distinct_l": 2}}}
WRITTEN = sorted([dt.date(2024, 5, 17), dt.date(2024, 5, 18), dt.date(2024, 6, 1)] * 4)
TREE_OF_DAYS = {"dob": {"tree": {"all": [str(d) for d in sorted(set(WRITTEN))]}}}






def _released_days(source, spec: dict | None = None) -> list[dt.date]:
    with sqlclose.anonymize(source, spec or {**DATES, "quasi_identifiers": TREE_OF_DAYS}) as release:
        return sorted(dt.date.fromisoformat(str(v)) for v in release.to_arrow().column("dob").to_pylist())


@pytest.mark.parametrize("name", ["duckdb table t.parquet", "duckdb relation", "pandas DataFrame", "arrow table",
                                  "spark dataframe"])
def test_a_file_named_as_another_kinds_label_is_told_a_source_query(tmp_path, monkeypatch, name):
    """The path given relative, so that the run's label is the name as written."""
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"dob": DAYS, "s": ["x", "y", "z", "w"] * 3}).to_parquet(name, index=False)
    said = refused(name, DATES)
    assert "convert the column in a [source] query (e.g. " in said, said
    assert "(connection, view)" not in said and "DataFrame first" not in said and "relation first" not in said, said
    query = f"SELECT * REPLACE ({example(said)} AS dob) FROM read_parquet('{tmp_path / name}')"
    spec = {**DATES, "quasi_identifiers": TREE_OF_DAYS, "source": {"query": query}}
    assert _released_days(None, spec) == WRITTEN


# ---- the lister of a column's values, run as the message says ----------------------------------------------

LISTED = re.compile(r"an error lands in job logs; (.*) lists them\)")


def _listed_by_the_advice(error: NotLeavesError, spec: Path) -> str:
    """What the message says lists the values, run: the error's ``named``, or the command."""
    lister = LISTED.search(str(error)).group(1)
    if lister == "the error's `named` attribute (NotLeavesError.named)":
        return error.named
    assert lister.startswith("`sqlclose ") and lister.endswith("`"), lister
    args = [a.replace("SPEC.toml", str(spec), 1) if a.startswith("SPEC.toml:") else a
            for a in shlex.split(lister.strip("`"))[1:]]
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    return result.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Table 3 whose age 52 is 87 in its CSV (the spec's [source]), and age.csv without its line for 52."""
    table3_missing_age(tmp_path)
    return tmp_path


@pytest.mark.parametrize("given", ["the spec's own source", "a path in its place", "(connection, table)",
                                   "a DataFrame"])
def test_the_values_lister_runs_on_the_source_the_run_read(project, monkeypatch, given):
    """Each source but the spec's own holds 91 where the spec's CSV holds 87: the lister must name 91.
    Before, a caller's table was told `sqlclose hierarchy validate SPEC.toml:age --show-values`, which
    named the spec's CSV's 87, and so was a path given in place of the spec's [source]."""
    monkeypatch.chdir(project)
    spec = project / "spec.toml"
    other = project / "other.csv"
    other.write_text((project / "table3.csv").read_text().replace(",87,", ",91,"))
    con = duckdb.connect()
    con.execute(f"CREATE TABLE people AS SELECT * FROM read_csv('{other}')")
    source = {"the spec's own source": None, "a path in its place": other, "(connection, table)": (con, "people"),
              "a DataFrame": pd.read_csv(other, dtype={"zip": str})}[given]
    with pytest.raises(NotLeavesError) as e:
        sqlclose.anonymize(source, spec)
    listed = _listed_by_the_advice(e.value, spec)
    planted = "'87' (1 row)" if source is None else "'91' (1 row)"
    assert planted in listed, listed
    assert ("'91'" if source is None else "'87'") not in listed, listed


# ---- a tree's example of a leaf added ---------------------------------------------------------------------

def test_a_trees_missing_leaf_is_told_with_the_columns_own_group():
    """An age tree lacking 61 (one row): the example names the tree's first group, "young", with no
    leaf and no value; following it (61 added to the group) lets the run through."""
    ages = [22, 27, 43, 52] * 3 + [61]
    df = pd.DataFrame({"age": [str(a) for a in ages], "s": ["x", "y", "z"] * 4 + ["w"]})
    tree = {"young": ["22", "27"], "old": ["43", "52"]}
    spec = {"privacy": {"k": 2}, "suppression": 0.1, "quasi_identifiers": {"age": {"tree": tree}},
            "sensitive": {"s": {"distinct_l": 1}}}
    said = refused(df, spec)
    assert 'add each to the tree, as a leaf of its group (e.g. young = […, "…"])' in said, said
    assert "Respiratory" not in said and "61" not in said and not re.search(r"'(22|27|43|52)'", said), said
    statement = example(said)
    group, _ = statement.split(" = ", 1)
    fixed = {**tree, group: [*tree[group], "61"]}
    with sqlclose.anonymize(df, {**spec, "quasi_identifiers": {"age": {"tree": fixed}}}) as release:
        assert release.to_arrow().num_rows + release.summary["suppressed_rows"] == len(ages)


# ---- Spark ------------------------------------------------------------------------------------------------

@pytest.mark.spark
def test_a_spark_catalog_table_is_told_a_dataframe_of_it_which_spark_runs(spark_session):
    """``(SparkSession, "t")`` takes no [source] query: it is told a DataFrame of the table given in its
    place, whose statement, run as written on Spark (the table's name in ``spark.table(…)``), makes a
    source the run releases, its days the ones the test wrote; the whole-numbers cast likewise."""
    from pyspark.sql import functions as F

    spark_session.createDataFrame(pd.DataFrame({"dob": DAYS, "s": ["x", "y", "z", "w"] * 3})) \
        .createOrReplaceTempView("sqlclose_days")
    try:
        said = refused((spark_session, "sqlclose_days"), DATES)
        assert "[source] query" not in said and "in a DataFrame of the table, given as the source in its place" in said
        run = {"spark": spark_session, "F": F}
        exec("df = " + example(said).removeprefix("df = ").replace("spark.table(…)", "spark.table('sqlclose_days')"),
             run)
        assert _released_days(run["df"]) == WRITTEN
    finally:
        spark_session.catalog.dropTempView("sqlclose_days")
    ages = pd.DataFrame({"age": [22.0, 27.0, 43.0, 52.0] * 3, "s": ["x", "y", "z"] * 4})
    spark_session.createDataFrame(ages).createOrReplaceTempView("sqlclose_ages")
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"age": {"tree": {"young": ["22", "27"], "old": ["43", "52"]}}},
            "sensitive": {"s": {"distinct_l": 2}}}
    try:
        said = refused((spark_session, "sqlclose_ages"), spec)
        assert "the error's `named` attribute" in said, said  # no command reads a caller's session
        cast = said.split("given as the source in its place: ", 1)[1]
        run = {"spark": spark_session}
        exec(cast.replace("spark.table(…)", "spark.table('sqlclose_ages')").replace("; ", "\n"), run)
        with sqlclose.anonymize(run["df"], spec) as release:
            assert release.to_arrow().num_rows == 12
    finally:
        spark_session.catalog.dropTempView("sqlclose_ages")


# ---- what a source held in memory cannot take, told by its kind, not by its label (ninety-eighth round) ----------

WAITS = {"privacy": {"k": 2}, "others": "keep", "quasi_identifiers": {"g": {"tree": {"*": ["a", "b"]}}},
         "sensitive": {"s": {"distinct_l": 2}}}
WAITS_SQL = ("SELECT * FROM (VALUES ('a', 'x', INTERVAL 2 MILLISECONDS), ('a', 'y', INTERVAL 2 SECONDS), "
             "('b', 'x', INTERVAL 3 DAYS), ('b', 'y', INTERVAL 4 MONTHS)) t(g, s, v)")


@pytest.mark.parametrize("name", ["arrow table", "pandas DataFrame"])
def test_a_parquet_file_named_as_an_in_memory_label_is_told_a_source_query_for_a_column_parquet_loses(
        tmp_path, monkeypatch, name):
    """A Parquet file named "arrow table" (its label, given relative) with an INTERVAL column, released
    to Parquet (which keeps whole milliseconds), was told `convert it in the arrow table before giving
    it (… df['v'].astype(str) in pandas)`: the writer told an in-memory source by its label. Told the
    [source] query a file takes; the oracle: that query, run as the message writes it, releases the
    column as DuckDB's own text of the values the test wrote."""
    monkeypatch.chdir(tmp_path)
    duckdb.sql(f"COPY ({WAITS_SQL}) TO '{name}' (FORMAT PARQUET)")
    with sqlclose.anonymize(name, WAITS) as release, pytest.raises(sqlclose.errors.InputError) as e:
        release.write(tmp_path / "out" / "r.parquet")
    said = str(e.value)
    assert "convert it in a [source] query (e.g. CAST(\"v\" AS VARCHAR), which writes its text to the microsecond" \
        in said, said
    assert "convert it in the" not in said and "in pandas" not in said, said
    assert not (tmp_path / "out").exists()
    query = f"SELECT * REPLACE (CAST(\"v\" AS VARCHAR) AS v) FROM read_parquet('{tmp_path / name}')"
    with sqlclose.anonymize(None, {**WAITS, "source": {"query": query}}) as release:
        release.write(tmp_path / "out" / "r.parquet")
    assert sorted(duckdb.sql(f"SELECT v FROM '{tmp_path / 'out' / 'r.parquet'}'").fetchall()) == \
        sorted(duckdb.sql(f"SELECT CAST(v AS VARCHAR) FROM ({WAITS_SQL})").fetchall())


@pytest.mark.parametrize("name", ["query", "arrow table", "pandas DataFrame"])
def test_a_page_is_not_written_inside_an_input_folder_named_as_a_source_without_a_path(tmp_path, monkeypatch, name):
    """A Parquet folder named "query" (or "arrow table") given relative: the report's input.source is
    its name, which `sqlclose report` read as a source that is no file, and `--html query/page.html`
    put the page among the input's part files (exit 0). The report records the path the rows were read
    from (input.path), and the page is refused (exit 2). A report before 8.2 (no input.path) is read by
    its words, as before: a folder named otherwise is still protected. The oracle: the folder's files."""
    import json

    monkeypatch.chdir(tmp_path)
    Path(name).mkdir()
    duckdb.sql("COPY (SELECT * FROM (VALUES ('a', 'x'), ('a', 'y'), ('b', 'x'), ('b', 'y')) t(g, s)) "
               f"TO '{name}/part-0.parquet' (FORMAT PARQUET)")
    with sqlclose.anonymize(name, WAITS) as release:
        release.write("out/r.parquet")
    result = invoke("report", "out/r.parquet.report.json", "--html", f"{name}/page.html")
    assert result.exit_code == 2, result.output
    assert f"lies inside {name}, the input the release was made from" in result.output, result.output
    assert sorted(p.name for p in Path(name).iterdir()) == ["part-0.parquet"]
    Path(name).rename("data")
    with sqlclose.anonymize("data", WAITS) as release:
        release.write("out/r.parquet", overwrite=True)
    report = json.loads(Path("out/r.parquet.report.json").read_text())
    del report["input"]["path"]
    Path("out/r.parquet.report.json").write_text(json.dumps(report))
    result = invoke("report", "out/r.parquet.report.json", "--html", "data/page.html")
    assert result.exit_code == 2 and "lies inside data, the input the release was made from" in result.output, \
        result.output
