"""Outputs other than a Parquet file: CSV and a table in a DuckDB database.

The oracle of every content check is DuckDB reading what was written by itself (a plain SELECT
over the CSV or the table), compared with the Parquet release of the same run read the same way:
the writers must put the same rows, with the same types, wherever they write.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from table3_project import invoke, table3_project

import sqlclose
from sqlclose.errors import InputError, VerificationError
from sqlclose.release.release import Release

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"


@pytest.fixture
def project(tmp_path) -> Path:
    return table3_project(tmp_path)


def rows(sql: str, *params: object) -> list[tuple]:
    return sorted(duckdb.connect().execute(sql, list(params)).fetchall(), key=repr)


def parquet_rows(path: Path) -> list[tuple]:
    return rows("SELECT * FROM read_parquet(?)", str(path))


# ---- CSV ------------------------------------------------------------------------------------
def test_csv_output_holds_the_parquet_release_with_its_types(project):
    spec = project / "spec.toml"
    assert invoke("anonymize", spec, "-q").exit_code == 0
    result = invoke("anonymize", spec, "-o", project / "out" / "release.csv", "-q")
    assert result.exit_code == 0, result.output
    csv = project / "out" / "release.csv"
    assert csv.read_text().splitlines()[0] == "zip,age,salary,disease"  # the --output suffix picked CSV
    report = json.loads((project / "out" / "release.csv.report.json").read_text())
    assert report["output"]["format"] == "csv"
    assert report["output"]["sha256"] == hashlib.sha256(csv.read_bytes()).hexdigest()
    assert report["output"]["column_types"]["salary"] == "BIGINT"
    typed = rows("SELECT * FROM read_csv(?, header = true, columns = ?)", str(csv), report["output"]["column_types"])
    assert typed == parquet_rows(project / "out" / "release.parquet")
    assert all(isinstance(r[2], int) for r in typed)  # numbers stay numbers


def test_csv_keeps_empty_texts_nulls_quotes_and_numbers_apart(tmp_path):
    """An empty text and a NULL must read back as themselves, or the re-check from the file fails."""
    n = 8
    table = pa.table({"g": ["a", "b"] * (n // 2),
                      "note": ["", None, 'say "hi", then', "plain", "", None, "x\ny", "ü"],
                      "amount": [0.1, 1 / 3, -2.5, 1e300, 7.0, 0.0, 2.25, None]})
    spec = {"k": 2, "others": "keep", "quasi_identifiers": {"g": {"tree": {"G": ["a", "b"]}}}}
    with sqlclose.anonymize(table, spec) as release:
        release.write(tmp_path / "r.parquet")
        doc = release.write(tmp_path / "r.csv")
    assert doc["verified"] and doc["output"]["column_types"] == {"g": "VARCHAR", "note": "VARCHAR",
                                                                  "amount": "DOUBLE"}
    back = rows("SELECT * FROM read_csv(?, header = true, columns = ?, allow_quoted_nulls = false)",
                str(tmp_path / "r.csv"), doc["output"]["column_types"])
    assert back == parquet_rows(tmp_path / "r.parquet")
    assert sum(1 for r in back if r[1] == "") == 2 and sum(1 for r in back if r[1] is None) == 2


def test_a_csv_source_reads_a_quoted_empty_field_as_an_empty_text(tmp_path):
    """Review rv25: a CSV source was read with DuckDB's default, a quoted "" as NULL, where sqlclose
    writes an empty text "" and a NULL as nothing "so the two stay apart" (docs/spec.md, Outputs):
    a kept column's empty texts were released as NULLs, and a CSV release read back as a source lost
    the difference. The oracles: the lines written here (6 "" and 6 empty fields), and the CSV
    release's own rows read by plain DuckDB, 2 empty texts and 2 NULLs."""
    vals = ['""', "", "x", "y"]
    lines = ["age,zip,val"] + [f"{20 + i % 30},4760{i % 3},{vals[i % 4]}" for i in range(24)]
    (tmp_path / "in.csv").write_text("\n".join(lines) + "\n")
    spec = {"others": "keep", "privacy": {"k": 3, "suppression": 0.1},
            "quasi_identifiers": {"age": {"bands": [10, 20]}, "zip": {"mask": True, "length": 5}}}
    with sqlclose.anonymize(tmp_path / "in.csv", spec) as release:
        release.write(tmp_path / "out.parquet")
    assert rows(f"SELECT count(*) FILTER (WHERE val = ''), count(*) FILTER (WHERE val IS NULL) "
                f"FROM '{tmp_path / 'out.parquet'}'") == [(6, 6)]
    table = pa.table({"g": ["a", "b"] * 4, "note": ["", None, "p", "q", "", None, "p", "q"]})
    kept = {"k": 2, "others": "keep", "quasi_identifiers": {"g": {"tree": {"G": ["a", "b"]}}}}
    with sqlclose.anonymize(table, kept) as release:
        release.write(tmp_path / "r.csv")
    with sqlclose.anonymize(tmp_path / "r.csv", kept) as again:  # the CSV release as a source
        again.write(tmp_path / "r2.parquet")
    counts = "SELECT count(*) FILTER (WHERE note = ''), count(*) FILTER (WHERE note IS NULL) FROM "
    assert rows(counts + "read_csv(?, header = true, all_varchar = true, allow_quoted_nulls = false)",
                str(tmp_path / "r.csv")) == [(2, 2)]
    assert rows(counts + f"'{tmp_path / 'r2.parquet'}'") == [(2, 2)]


def test_a_csv_source_with_no_null_strings_reads_every_empty_field_as_an_empty_text(tmp_path):
    """`[source] nulls = []` (no text means NULL) stopped every job with DuckDB's raw Binder Error
    ('nullstr requires a non-empty list'). Now every field is text, an empty one "" too. Oracle: the
    lines written here (6 quoted "" and 6 empty fields), counted in the release by plain DuckDB."""
    vals = ['""', "", "x", "y"]
    lines = ["age,zip,val"] + [f"{20 + i % 30},4760{i % 3},{vals[i % 4]}" for i in range(24)]
    (tmp_path / "in.csv").write_text("\n".join(lines) + "\n")
    spec = {"others": "keep", "privacy": {"k": 3, "suppression": 0.1},
            "source": {"path": str(tmp_path / "in.csv"), "nulls": []},
            "quasi_identifiers": {"age": {"bands": [10, 20]}, "zip": {"mask": True, "length": 5}}}
    with sqlclose.anonymize(None, spec) as release:
        release.write(tmp_path / "out.parquet")
    assert rows(f"SELECT count(*) FILTER (WHERE val = ''), count(*) FILTER (WHERE val IS NULL) "
                f"FROM '{tmp_path / 'out.parquet'}'") == [(12, 0)]


def test_csv_output_is_the_same_bytes_on_every_run(project):
    spec = sqlclose.load_spec(project / "spec.toml")
    digests = set()
    for i in range(3):
        with sqlclose.anonymize(None, spec) as release:
            digests.add(release.write(project / f"r{i}.csv")["output"]["sha256"])
    assert len(digests) == 1


def test_a_format_that_does_not_fit_the_suffix_is_refused(project):
    with sqlclose.anonymize(None, sqlclose.load_spec(project / "spec.toml")) as release:
        with pytest.raises(InputError, match="format = 'parquet' does not fit the path 'r.csv'"):
            release.write(project / "r.csv", format="parquet")
        with pytest.raises(InputError, match="format = 'csv' does not fit"):
            release.write(project / "r.parquet", format="csv")
    result = invoke("anonymize", project / "spec.toml", "-o", project / "r.parquet", "--format", "csv")
    assert result.exit_code == 2 and "does not fit" in result.output
    assert sorted(p.name for p in project.iterdir()) == ["age.csv", "disease.csv", "spec.toml", "table3.csv"]


READ_BACK = {"parquet-folder": "SELECT * FROM read_parquet('{path}/*.parquet')",
             "parquet": "SELECT * FROM read_parquet('{path}')",
             "csv": "SELECT * FROM read_csv('{path}', header = true, all_varchar = true)",
             "duckdb": "SELECT * FROM db.people"}


@pytest.mark.parametrize("fmt", list(READ_BACK))
def test_a_path_whose_suffix_names_no_format_is_written_in_the_format_given(project, fmt):
    """A dated nightly name, [output] path = "out/nightly.2026-11-30", was refused with 'cannot tell
    the output format …, or set format = "…"', and every format then set was refused in turn ('does
    not fit the path'): the advice led nowhere. A suffix that names no format takes the format given.
    The oracle: DuckDB reading what was written, as that format, by itself (9 rows in classes of at
    least k = 3, GROUP BY over the QIs), and the gate `check --against` on it."""
    spec = project / "spec.toml"
    text = spec.read_text().replace('path = "out/release.parquet"', 'path = "out/nightly.2026-11-30"')
    spec.write_text(text)
    refused = invoke("anonymize", spec, "-q")
    assert refused.exit_code == 2 and 'set format = "parquet-folder" (--format; or "parquet", "csv", "duckdb")' \
        in refused.output, refused.output
    table = '\ntable = "people"' if fmt == "duckdb" else ""
    spec.write_text(text.replace('path = "out/nightly.2026-11-30"',
                                 f'path = "out/nightly.2026-11-30"\nformat = "{fmt}"{table}'))
    result = invoke("anonymize", spec, "-q")
    assert result.exit_code == 0, result.output
    out = project / "out" / "nightly.2026-11-30"
    assert out.is_dir() == (fmt == "parquet-folder")
    con = duckdb.connect()
    if fmt == "duckdb":
        con.execute(f"ATTACH '{out}' AS db (READ_ONLY)")
    released = f"({READ_BACK[fmt].format(path=out)})"
    assert con.execute(f"SELECT COUNT(*) FROM {released}").fetchone()[0] == 9
    smallest = con.execute(f"SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM {released} GROUP BY zip, age)")
    assert smallest.fetchone()[0] >= 3
    con.close()
    report = out.with_name(out.name + (".people" if fmt == "duckdb" else "") + ".report.json")
    checked = invoke("check", out, "--against", report, "--spec", spec, *(["--table", "people"] if table else []))
    assert checked.exit_code == 0, checked.output


def test_a_format_given_for_a_suffix_naming_another_is_still_refused(project):
    """The other side of the rule: x.csv names CSV, so format = "parquet" is refused for it (and no
    suffix names a Parquet folder, so format = "csv" is refused for a bare name): nothing written."""
    for path, fmt, says in (("r.csv", "parquet", "which names a CSV file: name it with '.parquet' or '.pq'"),
                            ("r", "csv", "which names a Parquet folder (no suffix): name it with '.csv'")):
        result = invoke("anonymize", project / "spec.toml", "-o", project / path, "--format", fmt)
        assert result.exit_code == 2 and says in result.output, result.output
    assert sorted(p.name for p in project.iterdir()) == ["age.csv", "disease.csv", "spec.toml", "table3.csv"]


def test_format_sql_is_written_to_a_sql_path_only(project):
    """Ninety-fifth round: docs/spec.md listed `sql` among the `[output] format`s and said a path
    whose suffix names none is written in the format given; `format = "sql"` with such a path
    (`out/nightly.2026-11-30`) passed the spec and was refused later, on the local path as a release
    query the warehouse path writes, with --histogram by "give --output release.sql". The release
    query (its verification query beside it, `x.verify.sql`) is written to a `.sql` path only, and
    the spec says so when read, naming the path to give; `--format` has no `sql`. Nothing written."""
    spec = project / "spec.toml"
    spec.write_text(spec.read_text().replace('path = "out/release.parquet"',
                                             'path = "out/nightly.2026-11-30"\nformat = "sql"'))
    result = invoke("anonymize", spec, "-q")
    assert (result.exit_code, result.output) == (2, f"sqlclose: error: {spec}: invalid spec: output: format = 'sql' "
                                                    "is the warehouse path's release query (sqlclose anonymize "
                                                    "--histogram), written to a .sql path only: name it "
                                                    "'nightly.2026-11-30.sql'\n"), result.output
    result = invoke("anonymize", spec, "-o", project / "r.sql", "--format", "sql")
    assert result.exit_code == 2 and "'sql' is not one of 'parquet', 'parquet-folder', 'csv', 'duckdb'" \
        in result.output, result.output
    assert sorted(p.name for p in project.iterdir()) == ["age.csv", "disease.csv", "spec.toml", "table3.csv"]


# ---- a table in a DuckDB database -----------------------------------------------------------
def test_a_duckdb_table_output_holds_the_release_and_touches_no_other_table(project):
    db = project / "releases.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE keep AS SELECT range AS i FROM range(5)")
    con.execute("CREATE SCHEMA pub")
    con.close()
    spec = project / "spec.toml"
    assert invoke("anonymize", spec, "-q").exit_code == 0
    for table in ("people", "pub.people"):
        result = invoke("anonymize", spec, "-o", db, "--output-table", table, "-q")
        assert result.exit_code == 0, result.output
    expected = parquet_rows(project / "out" / "release.parquet")
    con = duckdb.connect(str(db), read_only=True)
    assert sorted(con.execute("SELECT * FROM main.people").fetchall(), key=repr) == expected
    assert sorted(con.execute("SELECT * FROM pub.people").fetchall(), key=repr) == expected
    assert con.execute("SELECT SUM(i), COUNT(*) FROM keep").fetchall() == [(10, 5)]
    names = con.execute("SELECT schema_name || '.' || table_name FROM duckdb_tables() ORDER BY 1").fetchall()
    assert names == [("main.keep",), ("main.people",), ("pub.people",)]  # no temporary table left
    con.close()
    report = json.loads((project / "releases.duckdb.pub.people.report.json").read_text())
    assert (report["output"]["format"], report["output"]["table"], report["output"]["sha256"]) == (
        "duckdb", "pub.people", None)
    assert report["output"]["content_digest"].startswith("sha256-rows-v2:") and report["verified"]


def test_a_table_existing_under_another_spelling_is_refused_up_front(project):
    """rv3 #4: DuckDB's names match ASCII letters in any case, and `people` is `main.people`: a
    database holding "People" holds people. --output-table people there without overwrite ended
    in exit 1 (DuckDB's CatalogException on the rename) after the whole search, write and
    verification. The oracle: DuckDB itself reads "People" as people; the database is as it was."""
    db = project / "x.duckdb"
    assert invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "People", "-q").exit_code == 0
    con = duckdb.connect(str(db), read_only=True)
    before = sorted(con.execute("SELECT * FROM people").fetchall(), key=repr)  # one table to DuckDB
    con.close()
    for other in ("people", "main.PEOPLE", "MAIN.people"):
        result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", other, "--no-progress")
        assert result.exit_code == 2, (other, result.exit_code, result.output)
        assert "already exists" in result.output and "--overwrite" in result.output, result.output
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT table_name FROM duckdb_tables()").fetchall() == [("People",)]
    assert sorted(con.execute("SELECT * FROM people").fetchall(), key=repr) == before
    con.close()


@pytest.mark.parametrize("before, after", [("People", "people"), ("people", "main.people"),
                                           ("pub.People", "PUB.people")])
def test_one_table_has_one_report_however_it_is_spelled(project, before, after):
    """rv3 #4: with overwrite, --output-table people replaced table "People", but the replaced
    release's report x.duckdb.People.report.json stayed beside the new x.duckdb.people.report.json
    (and `people` then `main.people` left x.duckdb.people… and x.duckdb.main.people…): two reports
    for one table, the old one vouching for a release no longer there. The default report is now
    named from the table as DuckDB tells tables apart (ASCII lower case, no `main.`). The oracles:
    DuckDB's catalog (one table), the files beside the database, and the report's node."""
    db, spec = project / "x.duckdb", project / "spec.toml"
    duckdb.connect(str(db)).execute("CREATE SCHEMA pub").close()
    first = invoke("anonymize", spec, "-o", db, "--output-table", before, "--node", "zip=3,age=2", "-q")
    assert first.exit_code == 0, first.output
    second = invoke("anonymize", spec, "-o", db, "--output-table", after, "--overwrite", "-q")
    assert second.exit_code == 0, second.output
    con = duckdb.connect(str(db), read_only=True)
    tables = con.execute("SELECT lower(schema_name || '.' || table_name) FROM duckdb_tables()").fetchall()
    con.close()
    expected = "pub.people" if before.startswith("pub") else "people"
    assert tables == [(f"main.{expected}" if "." not in expected else expected,)]
    reports = sorted(p.name for p in project.glob("x.duckdb*.report.json"))
    assert reports == [f"x.duckdb.{expected}.report.json"], reports
    assert json.loads((project / reports[0]).read_text())["node"] == {"zip": 1, "age": 2}  # the new release's
    check = invoke("check", db, "--against", project / reports[0])
    assert check.exit_code == 0, check.output


def test_a_table_named_with_a_slash_gets_its_report_beside_the_database(project):
    """rv10 #6: --output-table 'a/b' (a name DuckDB accepts) with no --report ended in exit 1,
    pathlib's 'Invalid name' for x.duckdb.a/b.report.json, after the whole job. The report's name
    now writes '/' as %2F (and '%' as %25, so names stay apart). The oracles: DuckDB's catalog
    holds table "a/b" with the release's rows, and the one report beside it names it."""
    db, spec = project / "x.duckdb", project / "spec.toml"
    for table in ("a/b", "a%2Fb"):
        result = invoke("anonymize", spec, "-o", db, "--output-table", table, "-q")
        assert result.exit_code == 0, result.output
    reports = sorted(p.name for p in project.glob("x.duckdb*.report.json"))
    assert reports == ["x.duckdb.a%252fb.report.json", "x.duckdb.a%2Fb.report.json"], reports  # catalog case
    assert json.loads((project / "x.duckdb.a%2Fb.report.json").read_text())["output"]["table"] == "a/b"
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute('SELECT COUNT(*) FROM "a/b"').fetchall() == [(9,)]
    assert invoke("check", db, "--table", "a/b", "--against", project / reports[1]).exit_code == 0


def test_a_table_output_in_a_folder_not_made_yet_is_written_there(project):
    """As a Parquet or CSV output's folder is made, so is a database's (it was an exit-1 'Cannot open
    file … No such file or directory' from DuckDB's ATTACH, for a nightly job's first night)."""
    db = project / "new" / "nightly" / "releases.duckdb"
    result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "people", "-q")
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT COUNT(*) FROM people").fetchall() == [(9,)]  # Table 3's nine rows, k = 3 holds
    con.close()
    assert sorted(p.name for p in db.parent.iterdir()) == ["releases.duckdb", "releases.duckdb.people.report.json"]


def test_a_killed_table_runs_hidden_report_is_removed_by_the_next_run(project):
    """A table output's run killed after writing its report (SIGKILL: no chance to clean) left
    '.releases.duckdb.people.report.json.sqlclose-<pid>-<token>.tmp' beside the database for good:
    the next run dropped the dead run's temporary table, but no one removed its report file."""
    db = project / "releases.duckdb"
    args = ("-o", db, "--output-table", "people", "-q")
    assert invoke("anonymize", project / "spec.toml", *args).exit_code == 0
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = project / f".releases.duckdb.people.report.json.sqlclose-{int(dead.stdout)}-abc123.tmp"
    stale.write_text('{"output": {}}')
    assert invoke("anonymize", project / "spec.toml", *args, "--overwrite").exit_code == 0
    assert sorted(p.name for p in project.iterdir() if p.name.startswith(".")) == []


KILLED_BEFORE_COMMIT = """
import os, signal, sys
import sqlclose
from sqlclose.release import files, placing, recovery
real = placing._place
def place(tmp, target, keep=False):
    real(tmp, target, keep)
    if target.name.endswith(".report.json"):
        os.kill(os.getpid(), signal.SIGKILL)  # the new database and its report are in place; the commit mark is next
placing._place = place
with sqlclose.anonymize(None, sys.argv[1]) as release:
    release.write(sys.argv[2], table="people", overwrite=True)
"""


@pytest.mark.parametrize("replacing", [True, False])
def test_a_table_runs_report_placed_before_its_commit_does_not_outlive_it(project, monkeypatch, replacing):
    """A table output's run killed between placing its report and its commit left its report in
    place for good, beside the old table (or no table): the next run removed the old report it had
    set aside, since a report stood. The database is now a new file placed with its report under a
    journal: killed before the commit mark, the next run puts back the old database and report (or
    removes the database the dead run made). The oracles: the old rows and report bytes, read
    before the killed run, and the folder's files."""
    db, report = project / "releases.duckdb", project / "releases.duckdb.people.report.json"
    if replacing:
        assert invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "people", "-q").exit_code == 0
        old_report = report.read_bytes()
        old_rows = sorted(duckdb.connect(str(db), read_only=True).execute("SELECT * FROM people").fetchall(), key=repr)
    script = project / "kill.py"
    script.write_text(KILLED_BEFORE_COMMIT)
    looser = project / "looser.toml"  # another release than the one in place: t = 0.5 for salary
    looser.write_text((project / "spec.toml").read_text().replace("t = 0.2", "t = 0.5"))
    killed = subprocess.run([sys.executable, str(script), str(looser), str(db)],
                            capture_output=True, text=True)
    assert killed.returncode == -9, killed.stderr
    assert report.exists()  # the dead run's

    def fail(self, written):
        raise VerificationError("forced by the test")

    monkeypatch.setattr(Release, "verified_summary", fail)  # the next run recovers, then fails: nothing of its own
    with sqlclose.anonymize(None, sqlclose.load_spec(project / "spec.toml")) as release:
        with pytest.raises(VerificationError):
            release.write(db, table="people", overwrite=True)
    if replacing:
        con = duckdb.connect(str(db), read_only=True)
        assert [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()] == ["people"]
        assert sorted(con.execute("SELECT * FROM people").fetchall(), key=repr) == old_rows
        con.close()
        assert report.read_bytes() == old_report
    else:
        assert not db.exists() and not report.exists()
    assert [p.name for p in project.iterdir() if p.name.startswith(".")] == []


HOLDS_THE_LOCK = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("holding", flush=True)
time.sleep(120)
"""


def test_a_database_another_process_holds_is_the_environments_failure(project):
    """Another process writing to the output database (DuckDB's file lock) is a transient failure
    of the environment, exit 5, not bad input (exit 2, DuckDB's text with the other PID)."""
    db = project / "releases.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", HOLDS_THE_LOCK, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "people", "-q")
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 5, result.output
    assert f"another process holds the database file's lock (run again once it is done) while writing {db}" \
        in result.output
    assert not (project / "releases.duckdb.people.report.json").exists()


def test_a_release_database_another_process_holds_is_the_environments_failure_when_read(project):
    """The next night's run, ``check --against`` and ``report --html`` read a released database
    that another process (an analyst's shell) holds open for writing: DuckDB's lock refuses even a
    read-only connection. Each said "internal error", exit 1, in DuckDB's words; each is told as
    the write path tells it, exit 5, and writes nothing (review of the ninety-sixth round)."""
    env = {"SQLCLOSE_FINGERPRINT_KEY": "k3y"}  # what lets the rerun ask whether the release is up to date
    db = project / "releases.duckdb"
    report = project / "releases.duckdb.people.report.json"
    args = ("anonymize", project / "spec.toml", "-o", db, "--output-table", "people")
    assert invoke(*args, "-q", env=env).exit_code == 0
    said_before = report.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", HOLDS_THE_LOCK, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        rerun = invoke(*args, "--json", env=env)
        checked = invoke("check", db, "--table", "people", "--against", report)
        page = project / "page.html"
        drawn = invoke("report", report, "--html", page)
    finally:
        holder.kill()
        holder.wait()
    locked = "the environment refused: another process holds the database file's lock (run again once it is done) "
    assert rerun.exit_code == 5, rerun.output
    assert json.loads(rerun.stdout) == {"error": f"{locked}while reading {db}; nothing was placed at the output path",
                                        "exit_code": 5, "kind": "environment"}
    assert checked.exit_code == 5 and f"{locked}while reading {db}\n" in checked.output, checked.output
    assert drawn.exit_code == 5 and f"{locked}while reading {db};" in drawn.output, drawn.output
    assert not page.exists() and report.read_bytes() == said_before
    assert "internal error" not in rerun.output + checked.output + drawn.output
    # Once it is let go, the same rerun finds its release up to date.
    assert "up to date" in invoke(*args, env=env).output


def test_an_existing_table_is_refused_unless_overwrite(project):
    db = project / "releases.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE people AS SELECT 'previous' AS x")
    con.close()
    result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "people")
    assert result.exit_code == 2 and "table 'people' already exists" in result.output
    assert duckdb.connect(str(db), read_only=True).execute("SELECT * FROM people").fetchall() == [("previous",)]
    result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "people", "--overwrite", "-q")
    assert result.exit_code == 0, result.output
    assert duckdb.connect(str(db), read_only=True).execute("SELECT COUNT(*) FROM people").fetchall() == [(9,)]


def _searched(monkeypatch) -> list[int]:
    """Records every search the in-process CLI enters (a refusal up front enters none)."""
    from sqlclose import api

    searched: list[int] = []
    real_search = api._search
    monkeypatch.setattr(api, "_search", lambda *a, **k: searched.append(1) or real_search(*a, **k))
    return searched


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_view_under_the_tables_name_is_refused_up_front(project, monkeypatch, overwrite, dry_run):
    """rv10 #5: a view named like the output table, with overwrite, ended in exit 1 after the whole
    job (DuckDB's 'Existing object "people" is of type View, trying to drop type Table'), and the
    dry run said nothing; without overwrite it was refused as "table 'people' already exists". A
    view is the user's object, not a release: refused before the search, dry run or not, naming
    the view and what to do. The oracles: DuckDB reads the view as it was; no search was entered."""
    db = project / "releases.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE VIEW People AS SELECT 42 AS a")
    searched = _searched(monkeypatch)
    result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "main.people", "--no-progress",
                    *(["--overwrite"] if overwrite else []), *(["--dry-run"] if dry_run else []))
    assert result.exit_code == 2, result.output
    assert f"{db} holds a view 'People' under the name of the output table 'main.people'" in result.output
    assert "DROP VIEW" in result.output and "another table" in result.output
    assert searched == []
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT a FROM people").fetchall() == [(42,)]
        assert con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall() == [("People",)]


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_table_another_tables_key_references_is_refused_up_front(project, monkeypatch, dry_run):
    """rv10 #5: replacing (overwrite) a table that another table's FOREIGN KEY references ended in
    exit 1 after the whole job (DuckDB's 'Could not drop the table because this table is main key
    table of the table "child"'): the rebuilt database could not leave it out. Refused before the
    search, dry run or not, naming the referencing table. The oracles: both tables' rows as they
    were (a plain SELECT); no search was entered."""
    db = project / "releases.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE people (a INTEGER PRIMARY KEY); INSERT INTO people VALUES (7);"
                    "CREATE TABLE child (b INTEGER REFERENCES people(a)); INSERT INTO child VALUES (7)")
    searched = _searched(monkeypatch)
    result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "people", "--overwrite",
                    "--no-progress", *(["--dry-run"] if dry_run else []))
    assert result.exit_code == 2, result.output
    assert "the FOREIGN KEY of table 'child' references table 'people'" in result.output, result.output
    assert searched == []
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT a FROM people").fetchall() == [(7,)]
        assert con.execute("SELECT b FROM child").fetchall() == [(7,)]


def test_a_table_referencing_itself_is_replaced(project):
    """The other side: a table whose only FOREIGN KEY is its own (a self-reference) blocks nothing
    else, and is replaced with overwrite. The oracle: a plain SELECT of the table in place."""
    db = project / "releases.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE people (a INTEGER PRIMARY KEY, b INTEGER REFERENCES people(a));"
                    "INSERT INTO people VALUES (7, NULL)")
    result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "people", "--overwrite", "-q")
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT COUNT(*) FROM people").fetchall() == [(9,)]  # Table 3's nine rows


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("exists", [False, True])
def test_a_schema_the_database_lacks_is_refused_up_front(project, monkeypatch, exists, dry_run):
    """rv10 #3: --output-table nosuch.t in an existing database passed the dry run (exit 0) and was
    refused by the run (exit 2), after the search. The schema is now checked with the output, before
    the search, dry run or not; a database not made yet has only ``main``. The oracles: the files in
    the folder (nothing new but the database given) and no search entered."""
    db = project / "releases.duckdb"
    if exists:
        duckdb.connect(str(db)).close()
    before = sorted(p.name for p in project.iterdir())
    searched = _searched(monkeypatch)
    result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "nosuch.t", "--no-progress",
                    *(["--dry-run"] if dry_run else []))
    assert result.exit_code == 2, result.output
    assert f"the output database {db} has no schema 'nosuch'; create it (CREATE SCHEMA nosuch)" in result.output
    assert searched == []
    assert sorted(p.name for p in project.iterdir()) == before


def test_a_failed_table_write_leaves_no_database_no_table_no_report(project, monkeypatch):
    def fail(self, written):
        raise VerificationError("forced by the test")

    monkeypatch.setattr(Release, "verified_summary", fail)
    spec = sqlclose.load_spec(project / "spec.toml")
    with sqlclose.anonymize(None, spec) as release:
        with pytest.raises(VerificationError):
            release.write(project / "new.duckdb", table="people")  # a database this run would create
    assert not (project / "new.duckdb").exists() and not (project / "new.duckdb.wal").exists()
    db = project / "old.duckdb"
    duckdb.connect(str(db)).execute("CREATE TABLE other AS SELECT 1 AS one").close()
    with sqlclose.anonymize(None, spec) as release:
        with pytest.raises(VerificationError):
            release.write(db, table="people")
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT table_name FROM duckdb_tables()").fetchall() == [("other",)]
    assert [p.name for p in project.iterdir() if "report" in p.name or p.name.startswith(".")] == []


def test_the_database_the_job_reads_is_not_written(project):
    db = project / "in.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t3 AS SELECT * FROM read_csv(?, header = true)", [str(project / "table3.csv")])
    con.close()
    spec = (project / "spec.toml").read_text().replace('path = "table3.csv"', 'path = "in.duckdb"\ntable = "t3"')
    (project / "db.toml").write_text(spec)
    result = invoke("anonymize", project / "db.toml", "-o", db, "--output-table", "released")
    assert result.exit_code == 2 and "is a file this job reads" in result.output


def test_the_database_a_callers_connection_holds_is_not_written_with_duckdbs_words(project):
    """A (connection, table) source: the database its connection holds cannot be opened again by
    sqlclose's writer in this process. The message said DuckDB's "Can't open a connection to same
    database file with a different configuration"; it now says the job reads it (every database
    file of the source's connection is an input since the eighty-fifth round) and what to do."""
    db = project / "in.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t3 AS SELECT * FROM read_csv(?, header = true, types = {'zip': 'VARCHAR'})",
                [str(project / "table3.csv")])
    spec = sqlclose.load_spec(project / "spec.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    with sqlclose.anonymize((con, "t3"), spec) as release:
        with pytest.raises(InputError, match="a database the source is read from .*, which a release never writes "
                                             "into: write the release to another database file") as e:
            release.write(db, table="released")
    assert "different configuration" not in str(e.value)
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'released'").fetchall() == [(0,)]
    con.close()


# ---- check and check --against read every format --------------------------------------------
def test_check_against_reads_csv_and_table_releases_and_sees_tampering(project):
    spec = project / "spec.toml"
    db = project / "r.duckdb"
    csv = project / "out" / "r.csv"
    assert invoke("anonymize", spec, "-o", csv, "-q").exit_code == 0
    assert invoke("anonymize", spec, "-o", db, "--output-table", "people", "-q").exit_code == 0
    csv_report, db_report = project / "out" / "r.csv.report.json", project / "r.duckdb.people.report.json"
    for target, report in ((csv, csv_report), (db, db_report)):
        result = invoke("check", target, "--against", report)  # no --spec: the report names the hierarchy file
        assert result.exit_code == 0 and "matches" in result.output, result.output
    assert invoke("check", db, "--table", "people", "--qi", "zip,age", "--k", "3").exit_code == 0
    csv.write_text(csv.read_text().replace("4000", "4001", 1))
    result = invoke("check", csv, "--against", csv_report)
    assert result.exit_code == 4 and "sha256 differs" in result.output
    con = duckdb.connect(str(db))
    con.execute("UPDATE people SET salary = 11000 WHERE salary = 3000")
    con.close()
    result = invoke("check", db, "--against", db_report)
    assert result.exit_code == 4 and "content digest differs" in result.output
    assert "the report says" not in result.output  # its figures are not the log's to tell


def test_check_against_without_spec_refuses_a_changed_hierarchy_file(project):
    """The hierarchy's digest is keyed with the operator's secret (a plain one could be tested
    against guesses of a hierarchy built from the data): the operator, holding the key, is told of
    a changed file; without the key the file is read as it is, and the check says so."""
    env = {**os.environ, "SQLCLOSE_FINGERPRINT_KEY": "operator-secret"}
    assert invoke("anonymize", project / "spec.toml", "-q", env=env).exit_code == 0
    release, report = project / "out" / "release.parquet", project / "out" / "release.parquet.report.json"
    doc = json.loads(report.read_text())
    assert doc["hierarchies"]["disease"]["path"] == str(project / "disease.csv")
    plain = hashlib.sha256((project / "disease.csv").read_bytes()).hexdigest()
    assert doc["hierarchies"]["disease"]["sha256"] == hmac.new(b"operator-secret", plain.encode(), "sha256").hexdigest()
    assert invoke("check", release, "--against", report, env=env).exit_code == 0
    (project / "disease.csv").write_text((project / "disease.csv").read_text() + "\n")
    result = invoke("check", release, "--against", report, env=env)
    assert result.exit_code == 2 and "changed since the release" in result.output and "--spec" in result.output
    without = invoke("check", release, "--against", report, env={"SQLCLOSE_FINGERPRINT_KEY": ""})
    assert without.exit_code == 0 and "note: the hierarchies of column" in without.output
    assert "'disease'" in without.output and "nothing tells them unchanged" in without.output


@pytest.mark.parametrize("change", ["a column added", "a column removed", "two columns swapped"])
def test_check_against_says_a_csv_whose_columns_changed_does_not_match(project, change):
    """A CSV release with one more, one fewer or reordered columns is not the file its report
    vouches for: exit 4, "does not match", the columns named (not read with the report's types,
    which failed on its second line or saw '*' outside a column's domain: exit 2)."""
    csv = project / "out" / "r.csv"
    assert invoke("anonymize", project / "spec.toml", "-o", csv, "-q").exit_code == 0
    report = project / "out" / "r.csv.report.json"
    lines = csv.read_text().splitlines()
    fields = [line.split(",") for line in lines]
    changed = {"a column added": [f + ["1"] for f in fields[1:]], "a column removed": [f[:-1] for f in fields],
               "two columns swapped": [[f[0], f[1], f[3], f[2]] for f in fields]}[change]
    if change == "a column added":
        changed.insert(0, fields[0] + ["extra"])
    tampered = project / "tampered.csv"
    tampered.write_text("\n".join(",".join(f) for f in changed) + "\n")
    result = invoke("check", tampered, "--against", report)
    assert result.exit_code == 4 and "does not match" in result.output, result.output
    assert 'output.columns: the report says ["zip", "age", "salary", "disease"]' in result.output
    assert f"the file's columns are {json.dumps(changed[0])}" in result.output
    held = {v for f in fields[1:] for v in f}
    assert not any(f"'{v}'" in result.output for v in held - set(fields[0])), result.output  # no row's value


@pytest.mark.parametrize("given", ["the CSV with a byte not UTF-8 appended", "the Parquet release"])
def test_check_against_a_csv_report_says_a_file_not_read_as_csv_does_not_match(project, given):
    """``check FILE --against CSV-REPORT`` read FILE's header before comparing its digest: a file
    that is not the CSV the report vouches for and holds a byte that is not UTF-8 (one corrupted
    byte; a Parquet file given by mistake) stopped as bad input, exit 2, "cannot read the header of
    FILE: UnicodeDecodeError". docs/verification.md: the sha256 is the first claim, a mismatch exits
    4. Oracle: hashlib's sha256 of the file differs from the report's output.sha256."""
    assert invoke("anonymize", project / "spec.toml", "-q").exit_code == 0
    assert invoke("anonymize", project / "spec.toml", "-o", project / "out" / "r.csv", "-q").exit_code == 0
    report = project / "out" / "r.csv.report.json"
    file = project / "out" / "release.parquet"
    if given.startswith("the CSV"):
        file = project / "corrupted.csv"
        file.write_bytes((project / "out" / "r.csv").read_bytes() + b"\xff")
    assert hashlib.sha256(file.read_bytes()).hexdigest() != json.loads(report.read_text())["output"]["sha256"]
    result = invoke("check", file, "--against", report)
    assert result.exit_code == 4, result.output
    assert f"{file} does not match {report}: its sha256 differs from the report's output.sha256" in result.output
    if given.startswith("the CSV"):
        assert f"cannot read the header of {file}: UnicodeDecodeError" in result.output
    else:  # since the eighty-seventh round a file of another format is told so, not read as the report's
        assert 'output.format: the report says "csv", the release is "parquet"' in result.output


def test_check_against_says_a_parquet_file_whose_columns_changed_does_not_match(project):
    assert invoke("anonymize", project / "spec.toml", "-q").exit_code == 0
    release, report = project / "out" / "release.parquet", project / "out" / "release.parquet.report.json"
    for select, differs in (("*, 1 AS extra", "the file has 'extra'"), ("age, zip, salary, disease", "another order"),
                            ("zip, age, salary", "the file lacks 'disease'")):
        tampered = project / "tampered.parquet"
        duckdb.sql(f"COPY (SELECT {select} FROM read_parquet('{release}')) TO '{tampered}' (FORMAT PARQUET)")
        result = invoke("check", tampered, "--against", report)
        assert result.exit_code == 4 and "does not match" in result.output and differs in result.output, result.output


# ---- reruns --------------------------------------------------------------------------------
@pytest.mark.parametrize("args, report", [(("-o", "out/r.csv"), "out/r.csv.report.json"),
                                          (("-o", "r.duckdb", "--output-table", "people"),
                                           "r.duckdb.people.report.json")])
def test_a_rerun_of_an_up_to_date_csv_or_table_does_nothing(project, args, report):
    env = {**os.environ, "SQLCLOSE_FINGERPRINT_KEY": "operator-secret"}
    given = [project / a if "/" in a or "." in a else a for a in args]
    assert invoke("anonymize", project / "spec.toml", *given, "-q", env=env).exit_code == 0
    before = (project / report).read_bytes()
    result = invoke("anonymize", project / "spec.toml", *given, env=env)
    assert result.exit_code == 0 and "is up to date" in result.output, result.output
    assert (project / report).read_bytes() == before


def test_a_release_made_by_another_sqlclose_version_is_redone(project):
    """After an upgrade the nightly job must not keep a release the old version made (the upgrade
    may fix what a release holds): the same spec, input and node were 'up to date' whatever
    sqlclose_version and schema_version the report gave. The oracle: the installed package's
    version, read from its metadata, not from sqlclose's code."""
    from importlib.metadata import version

    env = {**os.environ, "SQLCLOSE_FINGERPRINT_KEY": "operator-secret"}
    spec, report = project / "spec.toml", project / "out" / "release.parquet.report.json"
    assert invoke("anonymize", spec, "-q", env=env).exit_code == 0
    doc = json.loads(report.read_text())
    doc["sqlclose_version"] = "0.0.1"  # as an older sqlclose wrote it
    report.write_text(json.dumps(doc, indent=2))
    result = invoke("anonymize", spec, "--overwrite", "--no-progress", env=env)
    assert result.exit_code == 0 and result.output.startswith("released 9 of 9 rows"), result.output
    assert json.loads(report.read_text())["sqlclose_version"] == version("sqlclose")
    result = invoke("anonymize", spec, env=env)  # and now it is up to date
    assert result.exit_code == 0 and "is up to date" in result.output, result.output


def test_a_rerun_with_another_node_redoes_the_release(project):
    """Up to date means the same spec, input and node: --node asks for another node than the file
    holds (and a run without it, for the search's optimum again). The oracle: the node of each report,
    and the rows of the file by a plain GROUP BY (the paper's Table 5 at zip = 1, age = 2)."""
    env = {**os.environ, "SQLCLOSE_FINGERPRINT_KEY": "operator-secret"}
    spec, report = project / "spec.toml", project / "out" / "release.parquet.report.json"
    node = lambda: json.loads(report.read_text())["node"]  # noqa: E731
    assert invoke("anonymize", spec, "-q", env=env).exit_code == 0
    assert node() == {"zip": 1, "age": 2}
    result = invoke("anonymize", spec, "--node", "zip=2,age=2", "--overwrite", "-q", env=env)
    assert result.exit_code == 0, result.output
    assert node() == {"zip": 2, "age": 2} and json.loads(report.read_text())["node_given"] is True
    assert rows("SELECT zip, COUNT(*) FROM read_parquet(?) GROUP BY zip", str(project / "out" / "release.parquet")) \
        == [("476**", 6), ("479**", 3)]
    result = invoke("anonymize", spec, "--node", "zip=2,age=2", env=env)
    assert result.exit_code == 0 and "is up to date" in result.output, result.output
    result = invoke("anonymize", spec, "--overwrite", "-q", env=env)
    assert result.exit_code == 0 and node() == {"zip": 1, "age": 2}, result.output
    result = invoke("anonymize", spec, "--json", env=env)  # up to date: the report, as JSON
    assert result.exit_code == 0 and json.loads(result.output) == json.loads(report.read_text())


def test_a_rerun_with_another_partition_by_redoes_the_release(project):
    """rv3 #2: the spec's hash leaves [output] out, and up to date compared only the format and
    the table: a nightly spec changed from partition_by = ["zip"] to ["age"] was 'up to date',
    and the folder kept its zip= folders. The oracle: the folder's partition directories on disk,
    and its rows by a plain GROUP BY (Table 5 of Li et al.)."""
    env = {**os.environ, "SQLCLOSE_FINGERPRINT_KEY": "operator-secret"}
    spec, out = project / "spec.toml", project / "out" / "rel"
    text = spec.read_text().replace('"out/release.parquet"', '"out/rel"\npartition_by = ["zip"]')
    spec.write_text(text)
    partitions = lambda: {p.name.split("=")[0] for p in out.iterdir() if p.is_dir()}  # noqa: E731
    assert invoke("anonymize", spec, "-q", env=env).exit_code == 0
    assert partitions() == {"zip"}
    spec.write_text(text.replace('partition_by = ["zip"]', 'partition_by = ["age"]'))
    result = invoke("anonymize", spec, "--no-progress", env=env)
    assert result.exit_code == 2 and "already exists" in result.output, result.output  # redone: refused
    result = invoke("anonymize", spec, "--no-progress", "--overwrite", env=env)
    assert result.exit_code == 0 and "up to date" not in result.output, result.output
    assert partitions() == {"age"}
    assert json.loads((project / "out" / "rel.report.json").read_text())["output"]["partition_by"] == ["age"]
    assert rows("SELECT zip, age, COUNT(*) FROM read_parquet(?, hive_partitioning = true) GROUP BY ALL",
                str(out / "**" / "*.parquet")) == [("4760*", "<40", 3), ("4767*", "<40", 3), ("4790*", ">=40", 3)]
    result = invoke("anonymize", spec, "--no-progress", env=env)  # and now it is up to date
    assert result.exit_code == 0 and "is up to date" in result.output, result.output
    spec.write_text(text.replace('partition_by = ["zip"]', ""))  # not partitioned: redone again
    result = invoke("anonymize", spec, "-q", "--overwrite", env=env)
    assert result.exit_code == 0 and partitions() == set() and (out / "part-0.parquet").is_file(), result.output


def test_the_sign_off_page_reads_a_table_release(project):
    db, page = project / "r.duckdb", project / "page.html"
    result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "people", "--html", page, "-q")
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert "zip = 1, age = 2" in text  # the paper's Table 5 node
    assert "content digest <code>sha256-rows-v2:" in text



@pytest.mark.parametrize("output", ["parquet", "csv", "duckdb", "folder"])
def test_a_failed_write_leaves_no_folder_it_made(project, monkeypatch, output):
    """A release that fails its verification leaves nothing at the output path: not even the
    folders made for it (a nightly job's first night to a new folder left them, empty). A folder
    that held something before is left as it was."""
    def fail(*_):
        raise VerificationError("forced by the test")

    monkeypatch.setattr(Release, "verified_summary", fail)
    kept = project / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("someone's")
    names = {"parquet": "r.parquet", "csv": "r.csv", "duckdb": "r.duckdb", "folder": "r"}
    kinds = {"duckdb": {"table": "people"}, "folder": {"format": "parquet-folder"}}
    with sqlclose.anonymize(None, sqlclose.load_spec(project / "spec.toml")) as release:
        with pytest.raises(VerificationError):
            release.write(project / "new" / "nightly" / names[output], report=kept / "new" / "r.json",
                          **kinds.get(output, {}))
    assert not (project / "new").exists()
    assert sorted(p.name for p in kept.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("option", ["--report", "--html", "-o"])
def test_a_device_at_an_output_path_is_refused_not_replaced(project, option):
    """With ``--overwrite`` (or ``overwrite = true``, as the shipped Table 3 spec has it), ``--report
    /dev/null`` run as root replaced the system's /dev/null with the report: a file is placed by a
    rename over the old one, whatever it is (the sixty-second round's review). A character device made
    here as /dev/null is made (major 1, minor 3) stands for it. The oracle: the file system — the
    node is still that device, and nothing was placed."""
    import stat

    device = project / "null"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")
    result = invoke("anonymize", project / "spec.toml", option, device, "--overwrite", "-q")
    assert result.exit_code == 2, result.output
    assert "is not a file but a device, a pipe or a socket" in result.output, result.output
    found = os.lstat(device)
    assert stat.S_ISCHR(found.st_mode) and os.major(found.st_rdev) == 1 and os.minor(found.st_rdev) == 3
    assert not (project / "out").exists() or not any((project / "out").iterdir())


@pytest.mark.parametrize("given", [".", "", "/", "..", "out/.."])
def test_an_output_path_naming_no_file_is_bad_input(project, given):
    """``-o .`` (or '', '/', '..') was an internal error, exit 1 (``PosixPath('.') has an empty name``),
    found by the sixty-second round's review; the spec's ``path = "."`` was already refused. The
    oracle: README's exit 2 for bad input, and nothing written."""
    before = sorted(p.name for p in project.iterdir())
    result = invoke("anonymize", project / "spec.toml", "-o", given, "-q")
    assert result.exit_code == 2, result.output
    assert "names no file: give one ending in a file's or a folder's name" in result.output, result.output
    assert sorted(p.name for p in project.iterdir()) == before


@pytest.mark.parametrize("folder", [False, True])
@pytest.mark.parametrize("kind", [pa.list_(pa.float32(), 2), pa.list_(pa.int64(), 3), pa.list_(pa.string(), 1)])
def test_a_fixed_size_list_holding_null_is_written_as_pyarrow_reads_it(tmp_path, kind, folder):
    """Noticed by the sixty-second round: DuckDB 2.0.1 wrote a NULL ARRAY (a fixed-size list) into
    Parquet with list offsets past its values; sqlclose's re-check, on DuckDB, read the release and
    passed it, and pyarrow (pandas, Spark's readers alike) refused the file ("Length spanned by list
    offsets … larger than values array"). Such a column is now written as the list it holds, the
    same Parquet type. The oracle: pyarrow reads the file, and its rows are the input's."""
    size = kind.list_size
    value = {pa.float32(): 1.5, pa.int64(): 7, pa.string(): "x"}[kind.value_type]
    held = [[value] * size if i % 3 else None for i in range(9)]
    rows = pa.table({"zip": ["47601"] * 9, "d": ["a", "b", "c"] * 3, "v": pa.array(held, kind)})
    spec = {"privacy": {"k": 3}, "quasi_identifiers": {"zip": {"mask": True, "length": 5}}, "others": "keep",
            "sensitive": {"d": {"distinct_l": 2}}}
    out = tmp_path / ("r" if folder else "r.parquet")
    with sqlclose.anonymize(rows, spec) as release:
        release.write(out)
    written = pq.read_table(out)
    assert sorted(map(repr, written.column("v").to_pylist())) == sorted(map(repr, held))
    assert written.schema.field("v").type == pa.list_(kind.value_type)  # as DuckDB has always written an ARRAY


@pytest.mark.parametrize("table", ["nope", "people_x", "other.people"])
def test_a_table_the_source_database_lacks_is_told_with_the_ones_it_holds(tmp_path, table):
    """The round's review: `check db.duckdb --table nope` gave DuckDB's catalog error, whose guess came
    from its whole catalog (`Did you mean "pg_catalog.pg_enum"?`). The oracle: the database made
    here holds the table `people` and the view `stats.v`; both commands name them and no guess."""
    db = tmp_path / "db.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE people AS SELECT * FROM read_csv('{TABLE3 / 'table3.csv'}')")
    con.execute("CREATE SCHEMA stats")
    con.execute("CREATE VIEW stats.v AS SELECT zip FROM people")
    con.close()
    said = (f"{db} holds no table or view {table!r} (it holds 'people', 'stats.v'); name one it holds as the "
            "table to read")
    checked = invoke("check", db, "--table", table, "--qi", "zip,age", "--k", "2")
    assert checked.exit_code == 2 and said in checked.output, checked.output
    text = (TABLE3 / "table3.toml").read_text()
    for old, new in (('path = "table3.csv"', f'path = "{db}"\ntable = "{table}"'),
                     ("../../out/table3/release.parquet", str(tmp_path / "out" / "r.parquet")),
                     ('"age.csv"', f'"{TABLE3 / "age.csv"}"'), ('"disease.csv"', f'"{TABLE3 / "disease.csv"}"')):
        assert old in text, old
        text = text.replace(old, new)
    spec = tmp_path / "spec.toml"
    spec.write_text(text)
    made = invoke("anonymize", spec, "-q")
    assert made.exit_code == 2 and said in made.output and "Did you mean" not in made.output, made.output
    assert not (tmp_path / "out").exists()


def test_a_source_database_held_open_by_the_caller_is_bad_input(tmp_path):
    """The missing-table check first opened the database file on a connection of its own, which DuckDB
    refuses beside the caller's read-write one ("a different configuration"): a raw ConnectionException
    where the source's attach had said why (bad input). It now reads the catalog of the database the
    source attaches. The oracle: InputError, as before the check."""
    db = tmp_path / "db.duckdb"
    held = duckdb.connect(str(db))
    held.execute(f"CREATE TABLE people AS SELECT * FROM read_csv('{TABLE3 / 'table3.csv'}')")
    spec = {"source": {"path": str(db), "table": "people"}, "privacy": {"k": 2}, "others": "drop",
            "quasi_identifiers": {"zip": {"mask": True, "length": 5}}}
    try:
        with pytest.raises(InputError, match=r"^cannot read .*db\.duckdb \(table people\) as duckdb: "):
            sqlclose.anonymize(None, spec)
    finally:
        held.close()


def test_a_table_outputs_digest_covers_every_column_when_one_is_named_t(tmp_path):
    """Review h4 of the eighty-fifth round: the content digest hashed ``t`` of ``… AS t``, which a
    release's column named t shadowed: the digest was of that column alone, and a table whose other
    values were edited passed `check --against`. Oracles: exit 0 untouched, exit 4 once a salary
    is changed by a plain UPDATE, in processes of their own."""
    rows = pa.table({"zip": ["47601", "47602"] * 10, "t": [f"v{i % 3}" for i in range(20)],
                     "salary": [1000 * (i % 4) for i in range(20)]})
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"zip": {"mask": True, "length": 5}},
            "sensitive": {"salary": {"distinct_l": 2}}, "others": "keep"}
    db = tmp_path / "r.duckdb"
    with sqlclose.anonymize(rows, spec) as release:
        release.write(db, table="people")
    report = tmp_path / "r.duckdb.people.report.json"
    from forked_cli import run_cli

    assert run_cli(["check", db, "--table", "people", "--against", report]).returncode == 0
    con = duckdb.connect(str(db))
    con.execute("UPDATE people SET salary = CASE salary WHEN 0 THEN 3000 WHEN 3000 THEN 0 ELSE salary END "
                "WHERE rowid IN (SELECT min(rowid) FROM people GROUP BY salary)")
    con.close()
    edited = run_cli(["check", db, "--table", "people", "--against", report])
    assert edited.returncode == 4 and "content digest differs" in edited.stderr, edited.stderr


@pytest.mark.parametrize(("name", "fmt", "what"), [
    ("r.csv.gz", "csv", "a CSV file"), ("r.parquet.zst", "parquet", "a Parquet file"), ("r.gz", "csv", "a CSV file"),
    ("r.csv.gz", None, "a CSV file"), ("r.parquet.zst", None, "a Parquet file"), ("r.gz", None, "its releases")])
def test_a_compressed_files_name_is_refused_for_a_release_written_uncompressed(project, name, fmt, what):
    # `-o r.csv.gz --format csv` wrote a plain CSV under a gzip name; its readers (check, DuckDB,
    # pandas) unpack a .gz and failed on it. Without --format, the ninety-second round's docs review:
    # "cannot tell the output format" came first, and sent the user to --format, then to this refusal.
    # Oracle: the folder holds nothing new.
    result = invoke("anonymize", project / "spec.toml", "-o", project / name, *(["--format", fmt] if fmt else []))
    assert result.exit_code == 2, result.output
    assert f"names a compressed file, and sqlclose writes {what} uncompressed" in result.output, result.output
    assert sorted(p.name for p in project.iterdir()) == ["age.csv", "disease.csv", "spec.toml", "table3.csv"]
