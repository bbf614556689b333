"""A DuckDB table output is vouched for by its ``sha256-rows-v2`` content digest: the SHA-256 of
its column names and types, then of its rows' SHA-256 digests in sorted order.

The oracle (``oracle_digest``) is written from that definition alone: each row's text as DuckDB
casts it (read in UTC), hashed and sorted by ``hashlib`` and Python, one row at a time. The
``md5-sum-v1`` sum it replaces kept its value over a column retyped to text and over rows a lattice
reduction chose (review h4 of the eighty-fifth round flipped 33 rows of an Adult release): the
table built here that way is told changed, and a report still naming that sum is refused.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest
from sqlglot import exp
from table3_project import invoke, table3_project

from sqlclose.engine import DuckDBEngine
from sqlclose.errors import EngineError
from sqlclose.release.table_digest import content_digest


def oracle_digest(con: duckdb.DuckDBPyConnection, table: str) -> str:
    con.execute("SET TimeZone = 'UTC'")
    types = [(name, kind) for name, kind, *_ in con.execute(f'DESCRIBE "{table}"').fetchall()]
    texts = [text for (text,) in con.execute(f'SELECT CAST(t AS VARCHAR) FROM "{table}" AS t').fetchall()]
    digest = hashlib.sha256(json.dumps(types).encode() + b"\n")
    for row in sorted(hashlib.sha256(text.encode()).digest() for text in texts):
        digest.update(row)
    return f"sha256-rows-v2:{digest.hexdigest()}"


def v1_sum(con: duckdb.DuckDBPyConnection, table: str) -> int:
    """The old ``md5-sum-v1`` value, to show the edits below are the ones it could not see."""
    return con.execute(f'SELECT SUM(md5_number_lower(CAST(t AS VARCHAR))) FROM "{table}" AS t').fetchone()[0]


@pytest.fixture
def released(tmp_path) -> tuple[Path, Path]:
    project = table3_project(tmp_path)
    db = project / "r.duckdb"
    result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "people", "-q")
    assert result.exit_code == 0, result.output
    return db, project / "r.duckdb.people.report.json"


def test_the_report_records_the_digest_the_definition_gives(released):
    db, report = released
    con = duckdb.connect(str(db), read_only=True)
    expected = oracle_digest(con, "people")
    con.close()
    assert json.loads(report.read_text())["output"]["content_digest"] == expected
    assert json.loads(report.read_text())["schema_version"].split(".")[0] == "8"
    again = invoke("anonymize", db.parent / "spec.toml", "-o", db, "--output-table", "people", "--overwrite",
                   "--no-progress")
    assert again.exit_code == 0 and f"verified   {expected[:31]}…; report" in again.output, again.output


def test_row_order_does_not_change_it_and_a_repeated_row_does(tmp_path):
    con = duckdb.connect()
    con.execute("CREATE TABLE a AS SELECT i, 'v' || (i % 7) AS s FROM range(5000) r(i)")
    con.execute("CREATE TABLE b AS SELECT * FROM a ORDER BY s DESC, i % 3, i DESC")
    con.execute("CREATE TABLE c AS SELECT * FROM a UNION ALL SELECT * FROM a WHERE i = 17")
    engine = DuckDBEngine(connection=con)
    digests = {name: content_digest(engine, exp.to_table(name)) for name in ("a", "b", "c")}
    assert digests["a"] == digests["b"] == oracle_digest(con, "a")
    assert digests["c"] == oracle_digest(con, "c") != digests["a"]


@pytest.mark.filterwarnings("ignore::sqlclose.errors.LimitWarning")  # the job's limit is below the interpreter's
def test_a_sort_larger_than_its_memory_limit_spills_and_gives_the_same_digest(tmp_path):
    """The rows' digests are sorted by DuckDB, which spills: 1.5 M digests (48 MB before the sort's
    own overhead) where DuckDB's share of the job's 300 MB limit is 45 MB. The control: the same
    digests gathered whole in one aggregate do not fit there."""
    engine = DuckDBEngine(memory_limit="300MB", temp_directory=tmp_path / "spill", threads=1)
    engine.execute("CREATE TABLE big AS SELECT i, i * 7 % 1000 AS j FROM range(1500000) r(i)")
    limited = content_digest(engine, exp.to_table("big"))
    with pytest.raises(EngineError, match="(?i)out of memory"):
        engine.fetch("SELECT string_agg(h, '' ORDER BY h) FROM (SELECT sha256(CAST(t AS VARCHAR)) AS h FROM big t)")
    sorted_hex = engine.fetch("SELECT sha256(CAST(t AS VARCHAR)) AS h FROM big AS t ORDER BY h")
    digest = hashlib.sha256(json.dumps([["i", "BIGINT"], ["j", "BIGINT"]]).encode() + b"\n")
    digest.update(bytes.fromhex("".join(sorted_hex.column("h").to_pylist())))
    assert limited == f"sha256-rows-v2:{digest.hexdigest()}"
    engine.close()


def test_a_column_retyped_to_text_is_told_changed(released):
    """The sum of v1 hashed each row's text alone, and ``5`` and ``'5'`` read alike."""
    db, report = released
    con = duckdb.connect(str(db))
    before = v1_sum(con, "people")
    con.execute("ALTER TABLE people ALTER salary TYPE VARCHAR")
    assert v1_sum(con, "people") == before  # what the old digest missed
    con.close()
    result = invoke("check", db, "--against", report)
    assert result.exit_code == 4 and "content digest differs" in result.output, result.output


def test_values_exchanged_between_rows_are_told_changed(released):
    """Each column's multiset of values and each class's rows count stay: only the rows differ."""
    db, report = released
    con = duckdb.connect(str(db))
    salaries = sorted({s for (s,) in con.execute("SELECT salary FROM people").fetchall()})
    con.execute("UPDATE people SET salary = CASE salary WHEN ? THEN ? ELSE ? END WHERE salary IN (?, ?)",
                [salaries[0], salaries[1], salaries[0], salaries[0], salaries[1]])
    con.close()
    result = invoke("check", db, "--against", report)
    assert result.exit_code == 4 and "content digest differs" in result.output, result.output


def test_a_report_naming_the_old_sum_is_refused_not_vouched_for(released, tmp_path):
    db, report = released
    doc = json.loads(report.read_text())
    con = duckdb.connect(str(db), read_only=True)
    doc["output"]["content_digest"] = f"md5-sum-v1:{v1_sum(con, 'people')}"  # what sqlclose 7.x recorded
    con.close()
    doc["schema_version"] = "7.2"
    old = tmp_path / "old.report.json"
    old.write_text(json.dumps(doc))
    for command in (("check", db, "--against", old), ("report", old, "--release", db, "--html", tmp_path / "p.html")):
        result = invoke(*command)
        assert result.exit_code == 2, (command, result.output)
        assert "'md5-sum-v1', not sha256-rows-v2" in result.output and "make the release again" in result.output


@pytest.mark.parametrize("edit", ["null", "empty", "left out"])
def test_a_report_without_its_tables_digest_is_told_so(released, tmp_path, edit):
    # Was: "of kind '(none)', not sha256-rows-v2 … md5-sum-v1 …", advice about an old sum never given.
    db, report = released
    doc = json.loads(report.read_text())
    if edit == "left out":
        del doc["output"]["content_digest"]
    else:
        doc["output"]["content_digest"] = None if edit == "null" else ""
    edited = tmp_path / "edited.report.json"
    edited.write_text(json.dumps(doc))
    result = invoke("check", db, "--against", edited)
    assert result.exit_code == 2, result.output
    assert "the report gives no output.content_digest" in result.output and "md5-sum-v1" not in result.output


def _replace_people(db: Path, *statements: str) -> None:
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE released AS FROM people")
    con.execute("DROP TABLE people")
    for statement in statements:
        con.execute(statement)
    con.close()


def test_a_view_in_the_tables_place_is_not_the_release(released):
    """Review h1 of the eighty-sixth round: a view giving the release in UTC (as the check reads) and
    other rows in any other session passed, and a sign-off page was drawn for it."""
    db, report = released
    _replace_people(db, "CREATE VIEW people AS SELECT * FROM released WHERE current_setting('TimeZone') = 'UTC' "
                        "UNION ALL SELECT * REPLACE (salary + 1 AS salary) FROM released "
                        "WHERE current_setting('TimeZone') <> 'UTC'")
    page = db.with_suffix(".html")
    for command in (("check", db, "--against", report), ("report", report, "--release", db, "--html", page)):
        result = invoke(*command)
        assert result.exit_code == 4 and "'people' is a view, not a table" in result.output, result.output
    assert not page.exists()


@pytest.mark.parametrize("change", [
    ["ALTER TABLE people ALTER zip SET DATA TYPE VARCHAR COLLATE NOCASE"],  # readers group 'A' and 'a' as one
    ["CREATE TABLE released AS FROM people", "DROP TABLE people",  # computed at every read
     "CREATE TABLE people (zip VARCHAR, age VARCHAR, stored INTEGER, salary INTEGER GENERATED ALWAYS AS "
     "(CASE WHEN current_setting('TimeZone') = 'UTC' THEN stored ELSE stored + 1 END), disease VARCHAR)",
     "INSERT INTO people (zip, age, stored, disease) SELECT zip, age, salary, disease FROM released",
     "DROP TABLE released"]], ids=["collation", "generated"])
def test_a_column_a_reader_gets_otherwise_than_stored_is_not_the_release(released, change):
    """Review h1 of the eighty-sixth round: a collation or a generated column keeps the rows' text
    in UTC, so the digest's, while a reader compares, groups or computes otherwise. The table is
    refused as not the release (sqlclose writes neither)."""
    db, report = released
    con = duckdb.connect(str(db))
    for statement in change:
        con.execute(statement)
    con.close()
    name = "zip" if len(change) == 1 else "salary"
    result = invoke("check", db, "--against", report)
    assert result.exit_code == 4 and f"has column {name!r} with a collation or generated" in result.output, \
        result.output


@pytest.mark.parametrize("change, told", [
    (["CREATE TYPE zips AS ENUM ('4760*', '4767*', '4790*', '47677', '47602')",
      "ALTER TABLE people ALTER zip TYPE zips"], "an ENUM type on column 'zip'"),  # raw ZIP codes, read by DESCRIBE
    (["COMMENT ON COLUMN people.disease IS '47677, 29, flu'"], "a comment on column 'disease'"),
    (["ALTER TABLE people ALTER salary SET DEFAULT 3000"], "a default on column 'salary'"),
    (["COMMENT ON TABLE people IS 'raw rows in sheet 2'"], "a comment on the table"),
], ids=["enum", "column-comment", "default", "table-comment"])
def test_what_a_tables_schema_says_beside_its_rows_is_not_the_release(released, change, told):
    """Review of the ninety-third round: the digest reads the rows as text and their plain types, so
    a column made an ENUM whose members are raw values (or a comment, a default) passed `check
    --against` and `report --html` with the original report, while any reader of the table reads them.
    sqlclose writes none of them (control: the untouched release passes), so the table is not the one
    the report vouches for (exit 4, naming what)."""
    db, report = released
    assert invoke("check", db, "--against", report).exit_code == 0
    con = duckdb.connect(str(db))
    for statement in change:
        con.execute(statement)
    con.close()
    page = db.with_suffix(".html")
    for command in (("check", db, "--against", report), ("report", report, "--release", db, "--html", page)):
        result = invoke(*command)
        assert result.exit_code == 4 and f"table 'people' has {told}" in result.output, result.output
    assert not page.exists()


def test_a_collated_source_column_is_released_without_its_collation(tmp_path):
    """The control: a source column with a collation is written to a table without one (releases
    never carry one), so the check passes the untouched release."""
    con = duckdb.connect(str(tmp_path / "src.duckdb"))
    con.execute("CREATE TABLE people (code VARCHAR COLLATE NOCASE, s VARCHAR)")
    con.execute("INSERT INTO people SELECT CASE WHEN i % 3 = 0 THEN 'A' ELSE 'a' END, ['x', 'y'][i % 2 + 1] "
                "FROM range(12) r(i)")
    con.close()
    (tmp_path / "s.toml").write_text('[source]\npath = "src.duckdb"\ntable = "people"\n[output]\npath = "r.duckdb"\n'
                                     'table = "rel"\n[privacy]\nk = 2\n[quasi_identifiers]\n'
                                     's = { tree = { "*" = ["x", "y"] } }\n[sensitive.code]\ndistinct_l = 2\n')
    assert invoke("anonymize", tmp_path / "s.toml", "-q").exit_code == 0
    con = duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True)
    assert "COLLATE" not in con.execute("SELECT sql FROM duckdb_tables()").fetchone()[0]
    con.close()
    result = invoke("check", tmp_path / "r.duckdb", "--against", tmp_path / "r.duckdb.rel.report.json")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("kind, value", [("UNION(hourly INTEGER, monthly INTEGER)", "union_value(hourly := 20)"),
                                         ("VARIANT", "1::VARIANT"), ("STRUCT(v VARIANT)[]", "[{'v': 1::VARIANT}]")])
def test_a_union_or_variant_column_is_refused_for_a_table_output(tmp_path, kind, value):
    """Review h1 of the eighty-sixth round: a row's text shows neither a UNION's member nor a VARIANT's
    type, so 20 moved from one member to another kept the digest. Refused before the search (exit 2,
    nothing written); Parquet holds them as bytes, hashed as such."""
    con = duckdb.connect(str(tmp_path / "src.duckdb"))
    con.execute(f"CREATE TABLE people AS SELECT ['x', 'y'][i % 2 + 1] AS s, i % 3 AS g, CAST({value} AS {kind}) AS pay "
                "FROM range(12) r(i)")
    con.close()
    (tmp_path / "s.toml").write_text('others = "keep"\n[source]\npath = "src.duckdb"\ntable = "people"\n'
                                     '[output]\npath = "r.duckdb"\ntable = "rel"\n[privacy]\nk = 2\n'
                                     '[quasi_identifiers]\ng = { tree = { "*" = ["0", "1", "2"] } }\n'
                                     '[sensitive.s]\ndistinct_l = 2\n')
    result = invoke("anonymize", tmp_path / "s.toml", "--no-progress")
    assert result.exit_code == 2, result.output
    assert f"column 'pay' is {kind}, which a DuckDB table output cannot hold" in result.output
    assert not (tmp_path / "r.duckdb").exists()


def test_a_struct_field_named_variant_is_no_variant(tmp_path):
    """Review h3 of the eighty-sixth round: the type's text was searched for the word, and a kept
    STRUCT(VARIANT BOOLEAN, gene VARCHAR) was refused for a table output."""
    con = duckdb.connect(str(tmp_path / "src.duckdb"))
    con.execute("CREATE TABLE people AS SELECT ['x', 'y'][i % 2 + 1] AS s, i % 3 AS g, "
                "{'VARIANT': i % 2 = 0, 'gene': 'g' || i} AS info FROM range(12) r(i)")
    con.close()
    (tmp_path / "s.toml").write_text('others = "keep"\n[source]\npath = "src.duckdb"\ntable = "people"\n'
                                     '[output]\npath = "r.duckdb"\ntable = "rel"\n[privacy]\nk = 2\n'
                                     '[quasi_identifiers]\ng = { tree = { "*" = ["0", "1", "2"] } }\n'
                                     '[sensitive.s]\ndistinct_l = 2\n')
    assert invoke("anonymize", tmp_path / "s.toml", "-q").exit_code == 0
    result = invoke("check", tmp_path / "r.duckdb", "--against", tmp_path / "r.duckdb.rel.report.json")
    assert result.exit_code == 0, result.output


@pytest.mark.filterwarnings("ignore::sqlclose.errors.LimitWarning")  # the job's limit is below the interpreter's
def test_the_check_takes_the_digest_on_its_own_engine_within_its_limits(tmp_path):
    """`check --against --memory-limit`: the table's digest was taken on an engine of its own,
    without the check's limit, and its sort peaked at 1 GB over 10 M rows. The engine given bounds
    it now: under a limit too small to sort (DuckDB's 9.6 MB of 64 MB) it runs out of memory, where
    one made without a limit gives the digest. The engine is left as it was found."""
    from sqlclose.errors import EngineOutOfMemory
    from sqlclose.release.table_digest import table_release_digest

    con = duckdb.connect(str(tmp_path / "r.duckdb"))
    con.execute("CREATE TABLE big AS SELECT i, i * 7 % 1000 AS j FROM range(1500000) r(i)")
    con.close()
    small = DuckDBEngine(memory_limit="64MB", temp_directory=tmp_path / "spill", threads=1)
    before = small.fetch("SELECT database_name FROM duckdb_databases() ORDER BY 1").column(0).to_pylist()
    with pytest.raises(EngineOutOfMemory):
        table_release_digest(tmp_path / "r.duckdb", "big", "sha256-rows-v2:", small)
    assert small.fetch("SELECT database_name FROM duckdb_databases() ORDER BY 1").column(0).to_pylist() == before
    small.close()
    assert table_release_digest(tmp_path / "r.duckdb", "big", "sha256-rows-v2:").startswith("sha256-rows-v2:")
