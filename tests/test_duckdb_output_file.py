"""A DuckDB table output is a database file that holds the release in place and nothing of the
releases it replaced (rv9 #1).

DuckDB frees a dropped table's blocks but never clears them: a table replaced in place with
overwrite left every row of the old release in the database file's bytes, so publishing the file
published the old release too (a person removed between two nights; a finer release, whose
labels undo the coarser one by intersection). So did a killed run's temporary table, dropped by
the next run. The writer now rebuilds the database in a fresh file. The oracles: a byte search
of the database file for values only the replaced table held, a plain SELECT of what is in place,
and DuckDB's own catalog for the objects a user keeps in the database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import sqlclose
from sqlclose.errors import VerificationError
from sqlclose.release.release import Release

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
SPEC = {"privacy": {"k": 3}, "others": "keep",
        "quasi_identifiers": {"zip": {"mask": True, "length": 5}, "age": {"file": str(TABLE3 / "age.csv")}},
        "sensitive": {"disease": {"distance": "hierarchical", "t": 0.4, "hierarchy": str(TABLE3 / "disease.csv")}}}


def table3(notes: list[str]) -> pa.Table:
    rows = [line.split(",") for line in (TABLE3 / "table3.csv").read_text().splitlines()[1:]]
    return pa.table({"zip": [r[0] for r in rows], "age": pa.array([int(r[1]) for r in rows], pa.int64()),
                     "disease": [r[3] for r in rows], "note": notes})


def select(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return sorted(con.execute(sql).fetchall(), key=repr)
    finally:
        con.close()


def test_a_replaced_table_leaves_no_row_of_the_old_release_in_the_file(tmp_path):
    """Night 1 releases nine people, one of whom (note WITHDRAWN-4711) asks to be removed; night 2
    replaces the table with overwrite. The table in place lacked the note, the file's bytes held it."""
    db = tmp_path / "release.duckdb"
    with sqlclose.anonymize(table3(["WITHDRAWN-4711" if i == 8 else f"kept-{i}" for i in range(9)]), SPEC) as r:
        r.write(db, table="people")
    assert b"WITHDRAWN-4711" in db.read_bytes()  # the oracle finds the note where it is
    with sqlclose.anonymize(table3([f"kept-{i}" for i in range(9)]), SPEC) as r:
        r.write(db, table="people", overwrite=True)
    assert select(db, "SELECT note FROM people") == [(f"kept-{i}",) for i in range(9)]
    assert b"WITHDRAWN-4711" not in db.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.duckdb", "release.duckdb.people.report.json"]


def test_a_replaced_finer_release_leaves_no_label_in_the_file(tmp_path):
    """The same people at zip level 1 (4767*, 4760*, 4790*), then replaced by zip level 2 (476**,
    479**): the finer labels, which undo the coarser release by intersection, must be gone."""
    db = tmp_path / "release.duckdb"
    with sqlclose.anonymize(table3([f"n{i}" for i in range(9)]), SPEC) as searched:
        with searched.at({"zip": 1, "age": 2}) as fine:
            fine.write(db, table="people")
        with searched.at({"zip": 2, "age": 2}) as coarse:
            coarse.write(db, table="people", overwrite=True)
    assert select(db, "SELECT DISTINCT zip FROM people") == [("476**",), ("479**",)]  # Table 3 masked by hand
    assert b"4767*" not in db.read_bytes() and b"4790*" not in db.read_bytes()


def test_the_users_objects_are_carried_into_the_new_file(tmp_path):
    """Everything else in the database stays as it was: tables of every schema with their rows, a
    generated column, keys between tables, a view, macros, a sequence where it had got to, an ENUM
    type, an index, a comment, and the file's storage version (a v1.0.0 file stays readable by
    DuckDB 1.x). The oracle: DuckDB's catalog and plain SELECTs, written by hand before the run."""
    db = tmp_path / "mine.duckdb"
    con = duckdb.connect()
    con.execute(f"ATTACH '{db}' AS mine (STORAGE_VERSION 'v1.0.0')")
    con.execute("USE mine")
    con.execute("""
        CREATE SCHEMA pub;
        CREATE TYPE mood AS ENUM ('calm', 'busy');
        CREATE SEQUENCE ids START 5;
        CREATE TABLE parent (id INTEGER PRIMARY KEY, m mood, twice INTEGER GENERATED ALWAYS AS (id * 2) VIRTUAL,
                             n INTEGER DEFAULT nextval('ids'));
        INSERT INTO parent (id, m) VALUES (1, 'calm'), (2, 'busy');
        CREATE TABLE child (pid INTEGER REFERENCES parent (id), x VARCHAR);
        INSERT INTO child VALUES (2, 'kid');
        CREATE INDEX by_x ON child (x);
        CREATE TABLE pub.extra AS SELECT 'other schema' AS s;
        CREATE VIEW parents AS SELECT id, m FROM parent;
        CREATE MACRO plus_one(a) AS a + 1;
        CREATE MACRO one_row() AS TABLE SELECT 1 AS one;
        COMMENT ON TABLE parent IS 'kept';
        CREATE TABLE people AS SELECT 'OLD-RELEASE-' || range AS note FROM range(50);
    """)
    con.close()
    with sqlclose.anonymize(table3([f"n{i}" for i in range(9)]), SPEC) as r:
        r.write(db, table="people", overwrite=True)
    assert b"OLD-RELEASE-" not in db.read_bytes()
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT id, m, twice, n FROM parent ORDER BY id").fetchall() == [(1, "calm", 2, 5),
                                                                                            (2, "busy", 4, 6)]
        assert con.execute("SELECT * FROM child").fetchall() == [(2, "kid")]
        assert con.execute("SELECT * FROM pub.extra").fetchall() == [("other schema",)]
        assert con.execute("SELECT count(*) FROM parents").fetchall() == [(2,)]
        assert con.execute("SELECT plus_one(1), (SELECT one FROM one_row())").fetchall() == [(2, 1)]
        assert con.execute("SELECT last_value FROM duckdb_sequences()").fetchall() == [(6,)]  # 5 and 6 drawn
        assert con.execute("SELECT index_name FROM duckdb_indexes()").fetchall() == [("by_x",)]
        assert con.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 'parent'").fetchall() == [("kept",)]
        assert con.execute("SELECT count(*) FROM people").fetchall() == [(9,)]
        assert con.execute("SELECT tags['storage_version'] FROM duckdb_databases() WHERE NOT internal "
                           "AND path IS NOT NULL").fetchall() == [("v1.0.0+",)]
        assert con.execute("SELECT referenced_table FROM duckdb_constraints() WHERE table_name = 'child' AND "
                           "constraint_type = 'FOREIGN KEY'").fetchall() == [("parent",)]
    finally:
        con.close()


def test_a_new_table_beside_others_is_written_without_overwrite(tmp_path):
    """Adding a table to a database (no overwrite) replaces the file too, the user's table kept; a
    refused write (the table exists) leaves the file's bytes as they were."""
    db = tmp_path / "mine.duckdb"
    duckdb.connect(str(db)).execute("CREATE TABLE keep AS SELECT range AS i FROM range(5)").close()
    with sqlclose.anonymize(table3([f"n{i}" for i in range(9)]), SPEC) as r:
        r.write(db, table="people")
        assert select(db, "SELECT sum(i) FROM keep") == [(10,)]
        assert select(db, "SELECT count(*) FROM people") == [(9,)]
        before = db.read_bytes()
        with pytest.raises(sqlclose.OutputExistsError, match="already exists"):
            r.write(db, table="People")
    assert db.read_bytes() == before


def test_a_killed_earlier_builds_temporary_table_is_not_carried_over(tmp_path, monkeypatch):
    """An earlier build wrote into the database a temporary table __sqlclose_new_<pid>_<token>,
    renamed at its COMMIT; a run killed before it left that table, and its report in place with
    the old one set aside. The next run dropped the table, leaving its rows in the bytes. Now it is
    never copied, and that run's report gives way to the one it set aside."""
    db, report = tmp_path / "release.duckdb", tmp_path / "release.duckdb.people.report.json"
    with sqlclose.anonymize(table3([f"n{i}" for i in range(9)]), SPEC) as r:
        r.write(db, table="people")
    old_report = report.read_bytes()
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    # Uncompressed, the rows are bytes a search finds; spread over blocks the next writes do not reuse.
    marked = "CASE WHEN range % 1000 = 0 THEN 'UNCOMMITTED-ROW-' || range ELSE md5(range::VARCHAR) END"
    duckdb.connect(str(db)).execute(f"SET force_compression = 'uncompressed'; CREATE TABLE "
                                    f"__sqlclose_new_{dead}_abc123 AS SELECT {marked} AS note FROM range(300000); "
                                    "CREATE TABLE keep AS SELECT range AS i FROM range(100000)").close()
    assert b"UNCOMMITTED-ROW" in db.read_bytes()  # the oracle finds the rows where they are
    hidden = tmp_path / f".{report.name}.sqlclose-{dead}-abc123"
    os.replace(report, Path(f"{hidden}.old"))
    report.write_text(json.dumps({"dead run's": True}))
    Path(f"{hidden}.tmp").write_bytes(report.read_bytes())
    def fail(self, written):
        raise VerificationError("forced by the test")

    with monkeypatch.context() as patch, sqlclose.anonymize(table3([f"n{i}" for i in range(9)]), SPEC) as r:
        patch.setattr(Release, "verified_summary", fail)  # this run recovers, then fails: nothing of its own
        with pytest.raises(VerificationError):
            r.write(db, table="people", overwrite=True)
    assert report.read_bytes() == old_report
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    with sqlclose.anonymize(table3([f"n{i}" for i in range(9)]), SPEC) as r:
        r.write(db, table="people", overwrite=True)
    assert select(db, "SELECT table_name FROM duckdb_tables()") == [("keep",), ("people",)]
    assert b"UNCOMMITTED-ROW" not in db.read_bytes()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_symlinked_database_is_replaced_where_it_lives(tmp_path):
    """The new file replaces the file a link points to, not the link: the link keeps working."""
    real = tmp_path / "store" / "real.duckdb"
    real.parent.mkdir()
    duckdb.connect(str(real)).execute("CREATE TABLE people AS SELECT 'OLD-LINKED' AS note").close()
    link = tmp_path / "release.duckdb"
    link.symlink_to(real)
    with sqlclose.anonymize(table3([f"n{i}" for i in range(9)]), SPEC) as r:
        r.write(link, table="people", overwrite=True)
    assert link.is_symlink() and select(link, "SELECT count(*) FROM people") == [(9,)]
    assert b"OLD-LINKED" not in real.read_bytes()


KILLED_AT_PLACING = """
import os, signal, sys
import pyarrow as pa
import sqlclose
from sqlclose.release import files
real = files._place
def place(tmp, target, keep=False):
    real(tmp, target, keep)
    if target.name.endswith(".report.json"):
        os.kill(os.getpid(), signal.SIGKILL)  # the new database and its report placed, the commit mark not
files._place = place
spec = {"privacy": {"k": 3}, "quasi_identifiers": {"zip": {"mask": True, "length": 5}}}
with sqlclose.anonymize(pa.table({"zip": ["47677", "47602", "47678"]}), spec) as release:
    release.write(sys.argv[1], table="uncommitted")
"""


def test_a_killed_runs_database_is_not_the_one_carried_over(tmp_path):
    """A run killed after placing its new database but before its commit mark: the next run must
    copy the database the dead run replaced, which the journal puts back, not the dead run's."""
    db = tmp_path / "mine.duckdb"
    duckdb.connect(str(db)).execute("CREATE TABLE keep AS SELECT range AS i FROM range(5)").close()
    killed = subprocess.run([sys.executable, "-c", KILLED_AT_PLACING, str(db)], capture_output=True, text=True)
    assert killed.returncode == -9, killed.stderr
    assert select(db, "SELECT table_name FROM duckdb_tables()") == [("keep",), ("uncommitted",)]  # the dead run's
    with sqlclose.anonymize(table3([f"n{i}" for i in range(9)]), SPEC) as r:
        r.write(db, table="people")
    assert select(db, "SELECT table_name FROM duckdb_tables()") == [("keep",), ("people",)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.duckdb", "mine.duckdb.people.report.json"]


CRASHED_WRITER = """
import os, sys, duckdb
con = duckdb.connect(sys.argv[1])
con.execute("SET checkpoint_threshold = '1GB'")  # the row stays in the log
con.execute("INSERT INTO keep VALUES (99)")
os._exit(0)  # no checkpoint on close: the log is left beside the file
"""


def test_a_crashed_writers_log_is_folded_in_not_left_beside_the_new_file(tmp_path):
    """A writer that crashed left its changes in the database's write-ahead log (x.duckdb.wal). The
    new file placed at x.duckdb must hold them, and the old file's log must not stay beside it,
    where DuckDB would replay it into a file it does not belong to."""
    db = tmp_path / "mine.duckdb"
    duckdb.connect(str(db)).execute("CREATE TABLE keep AS SELECT range AS i FROM range(5)").close()
    subprocess.run([sys.executable, "-c", CRASHED_WRITER, str(db)], check=True)
    assert (tmp_path / "mine.duckdb.wal").exists()
    with sqlclose.anonymize(table3([f"n{i}" for i in range(9)]), SPEC) as r:
        r.write(db, table="people")
    assert not (tmp_path / "mine.duckdb.wal").exists()
    assert select(db, "SELECT i FROM keep") == [(i,) for i in (0, 1, 2, 3, 4, 99)]
    assert select(db, "SELECT count(*) FROM people") == [(9,)]
