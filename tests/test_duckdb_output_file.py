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
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from table3_project import invoke, table3_project

import sqlclose
from sqlclose.errors import EnvironmentFailure, VerificationError, WaitWarning
from sqlclose.release import database_file, files, placing
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
    report.write_text(json.dumps({"schema_version": "8.0", "output": {}, "dead run's": True}))
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


def _killed_at_write(project: Path, ready: Path, env: dict[str, str]) -> int:
    """The process id of a ``--force`` run of the project's table output, SIGKILLed while held at
    its write (the new database made beside the old one, the release written into it) by the
    documented test hook."""
    environ = {**{k: v for k, v in os.environ.items() if not k.startswith("SQLCLOSE_")}, **env,
               "SQLCLOSE_TEST_PAUSE_AT": f"write:{ready}"}
    run = subprocess.Popen([sys.executable, "-m", "sqlclose.cli", "anonymize", "spec.toml", "-o", "out/db.duckdb",
                            "--output-table", "people", "--force", "-q", "--no-progress"], cwd=project, env=environ,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()
        time.sleep(0.02)
    run.kill()
    run.communicate()
    assert run.returncode == -9
    return run.pid


A_RUN_GOING_ON = """
import fcntl, os, sys, time
from pathlib import Path
out, token = Path(sys.argv[1]), "0123456789ab"
for name in ("db.duckdb", "db.duckdb.people.report.json"):
    (out / f".{name}.sqlclose-{os.getpid()}-{token}.tmp").write_bytes(b"being written")
live = os.open(out / f".db.duckdb.sqlclose-{os.getpid()}-{token}.live", os.O_CREAT | os.O_WRONLY, 0o600)
fcntl.flock(live, fcntl.LOCK_EX)  # its mark of life, held as a run holds it (recovery.hold_mark)
print("going", flush=True)
time.sleep(120)
"""


def _hidden(folder: Path, pid: int) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if f".sqlclose-{pid}-" in p.name)


KILLED_ENV = {"SQLCLOSE_FINGERPRINT_KEY": "k3y"}


@pytest.fixture(scope="module")
def killed_at_write(tmp_path_factory) -> tuple[Path, int, Path]:
    """Table 3's project whose database a first run wrote (a user's table ``payroll`` beside it) and a
    second run, SIGKILLed at its write, left its copy beside: (the project, the dead run's process id,
    its ``out`` folder as the dead run left it). Made once for the module: each case of the next run
    starts from a copy of that folder, as the three cases each made it again (2 runs, ~2.5 s)."""
    tmp = tmp_path_factory.mktemp("killed")
    (tmp / "p").mkdir()
    project = table3_project(tmp / "p")
    (project / "nohier.toml").write_text((project / "spec.toml").read_text().replace('"age.csv"', '"none.csv"'))
    out = project / "out"
    out.mkdir()
    duckdb.connect(str(out / "db.duckdb")).execute("CREATE TABLE payroll AS SELECT 7 AS salary").close()
    first = invoke("anonymize", project / "spec.toml", "-o", out / "db.duckdb", "--output-table", "people", "-q",
                   env=KILLED_ENV)
    assert first.exit_code == 0, first.output
    killed = _killed_at_write(project, tmp / "killed.ready", KILLED_ENV)
    left = tmp / "left"
    shutil.copytree(out, left, symlinks=True)  # copy2: the bytes and the times, as the dead run left them
    return project, killed, left


@pytest.mark.parametrize("next_run, code", [("", 0), ("--dry-run", 0), ("nohier.toml", 2)],
                         ids=["up to date", "dry run", "failing"])
def test_a_killed_runs_copy_of_the_database_is_removed_by_the_next_run_whatever_it_does(killed_at_write, next_run,
                                                                                         code):
    """A run SIGKILLed while it wrote the release into its new database left that file hidden beside
    the old one (``.db.duckdb.sqlclose-PID-TOKEN.tmp``, its ``.wal``, its mark ``.live``): a copy of
    every table of the database and of a release never verified. Only a run that wrote removed it;
    one finding the release up to date, a dry run or a failing run left it night after night, where
    a Parquet, CSV or folder output's are removed before the search (review of the ninety-sixth
    round). A run still going (its mark of life held) keeps its files. Oracles: the folder's
    listing, by the process ids of the runs, and the user's table, still where it was."""
    project, killed, as_left = killed_at_write
    out = project / "out"
    shutil.rmtree(out, ignore_errors=True)  # a case before this one ran in it
    shutil.copytree(as_left, out, symlinks=True)
    left = _hidden(out, killed)
    assert {name.rpartition(".sqlclose-")[2].partition(".")[2] for name in left} >= {"tmp", "tmp.wal", "live"}, left
    going = subprocess.Popen([sys.executable, "-c", A_RUN_GOING_ON, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert going.stdout.readline().strip() == "going"
        its_files = _hidden(out, going.pid)
        spec = project / (next_run if next_run.endswith(".toml") else "spec.toml")
        following = invoke("anonymize", spec, "-o", out / "db.duckdb", "--output-table", "people",
                           *next_run.split()[next_run.endswith(".toml"):], env=KILLED_ENV)
        assert following.exit_code == code, following.output
        assert ("up to date" in following.output) == (next_run == "")
        assert _hidden(out, killed) == []  # the dead run's copy, its log and its mark
        assert len(its_files) == 3 and _hidden(out, going.pid) == its_files  # a live run's, untouched
    finally:
        going.kill()
        going.wait()
    assert select(out / "db.duckdb", "SELECT table_name FROM duckdb_tables()") == [("payroll",), ("people",)]


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
from sqlclose.release import files, placing, recovery
real = placing._place
def place(tmp, target, keep=False):
    real(tmp, target, keep)
    if target.name.endswith(".report.json"):
        os.kill(os.getpid(), signal.SIGKILL)  # the new database and its report placed, the commit mark not
placing._place = place
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


# Run A: held at its "place" checkpoint (its new database written from the old one) until the test
# creates the go file. Run B: says when its lock attempt finds the lock held (the old build took
# none: B then wrote and placed its table while A was held).
HELD_AT_PLACE = """
import os, runpy, sys, time
from pathlib import Path
import sqlclose.release.writers as writers
ready, go = Path(sys.argv[1]), Path(sys.argv[2])
def held(point):
    if point == "place":
        ready.write_text("held")
        while not go.exists():
            time.sleep(0.02)
writers.checkpoint = held
sys.argv = ["sqlclose"] + sys.argv[3:]
runpy.run_module("sqlclose.cli", run_name="__main__")
"""
# Says (by touching the file argv[1]) when its wait for a lock finds it held (not when the check for
# a stale lock file finds it held, before the search), then runs sqlclose.
SAYS_WHEN_ITS_WAIT_BEGINS = """
import fcntl, runpy, sys
from pathlib import Path
waiting, real = Path(sys.argv[1]), fcntl.flock
def flock(fd, operation):
    try:
        return real(fd, operation)
    except BlockingIOError:
        if sys._getframe(1).f_code.co_name == "lock_exclusively":
            waiting.touch()
        raise
fcntl.flock = flock
sys.argv = ["sqlclose"] + sys.argv[2:]
runpy.run_module("sqlclose.cli", run_name="__main__")
"""


def _writing(folder: Path, table: str) -> list[str]:
    return ["anonymize", str(folder / "spec.toml"), "--no-progress", "-q", "-o", str(folder / "out" / "r.duckdb"),
            "--output-table", table]


@pytest.mark.parametrize("database_exists", [False, True])
def test_two_runs_writing_other_tables_into_one_database_keep_both(tmp_path, database_exists):
    """rv11 #1: two runs writing tables a and b into one database at once both exited 0 with a
    placed report, but the file held one table: each built its new file from the old one, and the
    run placing last replaced the other's file (no lock stopped it: another sqlclose run only reads
    the old file). Now a run holds a lock from reading the old file to placing its new one, and
    the other waits, then builds on the file the first placed. Deterministic: A is held after
    writing its new file until B is seen waiting for the lock (or, unfixed, B has placed b). The
    oracle: the tables DuckDB's catalog lists in the file, each one's count(*) (9: Table 3's rows,
    k = 3 suppressing none) against the runs that exited 0."""
    d = table3_project(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQLCLOSE_")}
    if database_exists:  # last night's table
        subprocess.run([sys.executable, "-m", "sqlclose.cli", *_writing(d, "old")], env=env, check=True, timeout=300)
    ready, go, waiting = d / "a.ready", d / "a.go", d / "b.waiting"
    a = subprocess.Popen([sys.executable, "-c", HELD_AT_PLACE, str(ready), str(go), *_writing(d, "a")], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert a.poll() is None and time.monotonic() < deadline, a.communicate()
            time.sleep(0.02)
        b = subprocess.Popen([sys.executable, "-c", SAYS_WHEN_ITS_WAIT_BEGINS, str(waiting), *_writing(d, "b")],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while not waiting.exists() and b.poll() is None:
            assert time.monotonic() < deadline + 120
            time.sleep(0.02)
    finally:
        go.touch()
    a_err, b_err = a.communicate(timeout=300)[1], b.communicate(timeout=300)[1]
    assert (a.returncode, b.returncode) == (0, 0), (a_err, b_err)
    expected = {"a", "b"} | ({"old"} if database_exists else set())
    assert {name for (name,) in select(d / "out" / "r.duckdb", "SELECT table_name FROM duckdb_tables()")} == expected
    for name in expected:
        assert select(d / "out" / "r.duckdb", f'SELECT count(*) FROM "{name}"') == [(9,)]
    assert waiting.exists(), "run B never waited for run A"
    assert sorted(p.name for p in (d / "out").iterdir()) == sorted(["r.duckdb", *(f"r.duckdb.{t}.report.json"
                                                                                  for t in expected)])


@contextmanager
def _flock_held(path: Path, opened_with: str = "os.O_RDWR | os.O_CREAT") -> Iterator[None]:
    """A separate process holding an exclusive flock on ``path`` while the block runs, as another
    run does: a database's lock file (``database_file.lock_path``) while it writes, a folder
    (opened ``os.O_RDONLY``) while it places a pair. Killed after the block, its pipe closed and
    the process reaped (``communicate``; an open pipe is a ResourceWarning in the tests that check
    warnings)."""
    script = (f"import fcntl, os, sys, time; fd = os.open(sys.argv[1], {opened_with}); "
              "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(120)")
    with subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout.readline() == "held\n"
            yield
        finally:
            holder.kill()
            holder.communicate()


def test_a_run_waits_for_the_database_lock_at_most_its_limit(tmp_path, monkeypatch):
    """The lock another run holds (a process stopped while writing) stops a run once it has waited
    WAIT_SECONDS: exit 5 naming the database, and the holder's lock file is left to the holder.
    Oracle: the file system (the database and the lock file as they were)."""
    db = tmp_path / "r.duckdb"
    with _flock_held(database_file.lock_path(db)):
        monkeypatch.setattr(database_file, "WAIT_SECONDS", 0.3)
        with pytest.raises(EnvironmentFailure, match=f"writing to the output database {db} for") as e, \
                pytest.warns(WaitWarning), database_file.writing_lock(db):
            pass
        assert e.value.exit_code == 5
        assert sorted(p.name for p in tmp_path.iterdir()) == [".r.duckdb.sqlclose.lock"]
    database_file.remove_stale_lock(db)  # its holder gone: the next run removes it
    assert list(tmp_path.iterdir()) == []


def test_a_python_caller_is_warned_once_when_the_database_lock_wait_begins(tmp_path, monkeypatch):
    """fxA #3, the API: a write waiting for another run's lock on its output database said nothing
    (a nightly job hung for up to an hour with no word). Now one WaitWarning as the wait begins,
    naming the database and the lock file; none when the lock is free. Oracle: the warnings
    recorded (one, however many times the lock was tried) and the lock file's path beside the database."""
    db = tmp_path / "r.duckdb"
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with database_file.writing_lock(db):
            pass
    assert said == []
    with _flock_held(database_file.lock_path(db)):
        monkeypatch.setattr(database_file, "WAIT_SECONDS", 0.3)
        with warnings.catch_warnings(record=True) as said, pytest.raises(EnvironmentFailure):
            warnings.simplefilter("always")
            with database_file.writing_lock(db):
                pass
    assert [w.category for w in said] == [WaitWarning]
    assert (f"another sqlclose run is writing to the output database {db} (it holds the lock file "
            f"{tmp_path / '.r.duckdb.sqlclose.lock'})") in str(said[0].message), said[0].message




@pytest.mark.parametrize("quiet", [False, True], ids=["says", "quiet"])
def test_a_run_says_on_stderr_that_it_waits_for_the_database_lock(tmp_path, quiet):
    """fxA #3, the command: a run waiting for another run's lock on its output database printed
    nothing while it waited (up to an hour). Now one line on stderr as the wait begins, naming the
    database and the lock file and the bound (an hour); nothing under -q, which prints nothing but
    errors. Deterministic: a process holds the lock before the run starts, and lets it go once the
    run is seen waiting; the run then places its release (exit 0). Oracles: the run's stderr, and
    DuckDB's count(*) of the placed table (Table 3's 9 rows)."""
    d = table3_project(tmp_path)
    db, waiting = d / "out" / "r.duckdb", d / "b.waiting"
    db.parent.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQLCLOSE_")}
    args = [a for a in _writing(d, "b") if quiet or a != "-q"]
    with _flock_held(database_file.lock_path(db)):
        run = subprocess.Popen([sys.executable, "-c", SAYS_WHEN_ITS_WAIT_BEGINS, str(waiting), *args], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not waiting.exists():
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.02)
    err = run.communicate(timeout=300)[1]
    assert run.returncode == 0, err
    said = [] if quiet else [f"sqlclose: warning: another sqlclose run is writing to the output database {db} (it "
                             f"holds the lock file {db.parent / '.r.duckdb.sqlclose.lock'}); this run waits for it "
                             "to finish, at most 60 min"]
    assert [line for line in err.splitlines() if line.strip()] == said, err
    assert select(db, 'SELECT count(*) FROM "b"') == [(9,)]


def test_the_database_lock_file_may_be_opened_by_the_folders_other_users(tmp_path):
    """The lock file was made with mode 0600: another user sharing a group-writable folder and
    database could not open it (EACCES, exit 5), where without the lock both could write. It is
    made 0666 less the umask. Oracle: the umask rule worked by hand (0666 & ~0002 = 0664)."""
    db = tmp_path / "r.duckdb"
    old = os.umask(0o002)
    try:
        with database_file.writing_lock(db):
            mode = database_file.lock_path(db).stat().st_mode & 0o777
    finally:
        os.umask(old)
    assert mode == 0o664


def test_a_lock_file_this_user_may_not_write_is_locked_read_only(tmp_path, monkeypatch):
    """A lock file another user made (0644 under their umask) refused this user's read-write open
    (PermissionError, exit 5), and its stale copy could not be removed. Opened read-only, flock
    still locks it. These tests run as root, who is never refused: the other user's refusal is
    stood in for by refusing a read-write open of the lock file. Oracle: a second descriptor
    cannot take the lock while the run holds it (fcntl), and the file system after."""
    import fcntl

    db = tmp_path / "r.duckdb"
    lock = database_file.lock_path(db)
    lock.write_bytes(b"")  # the other user's, left by their killed run
    lock.chmod(0o644)
    real_open = os.open

    def refusing(path, flags, *args):
        if Path(path) == lock and flags & (os.O_RDWR | os.O_WRONLY):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(database_file.os, "open", refusing)
    with database_file.writing_lock(db):
        other = real_open(lock, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(other)
    assert not lock.exists()  # removed on leaving, as one it made
    lock.write_bytes(b"")
    database_file.remove_stale_lock(db)  # a stale one of the other user's is removed too
    assert list(tmp_path.iterdir()) == []


def test_a_database_replaced_by_a_process_taking_no_lock_is_not_dropped(tmp_path):
    """A process that takes no lock (an older sqlclose, a copy) replacing the database while a run
    builds its new file from it: placing the run's file would drop that one's contents. The commit
    compares the file in place with the one read (device, inode, size, mtime) and refuses, exit 5.
    Oracle: the file at the path holds the other process's bytes; no hidden file is left."""
    db = tmp_path / "r.duckdb"
    db.write_bytes(b"read by this run")
    report = tmp_path / "r.duckdb.t.report.json"
    with pytest.raises(EnvironmentFailure, match="was replaced while this run was building") as e, \
            placing.Transaction(db, report, overwrite=False, replaces_data=True) as txn:
        txn.builds_on(files.identity(db))
        txn.data.write_bytes(b"built from it")
        txn.report.write_text("{}")
        other = tmp_path / "other"
        other.write_bytes(b"placed by another process")
        os.replace(other, db)
        txn.commit()
    assert e.value.exit_code == 5
    assert db.read_bytes() == b"placed by another process"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.duckdb"]


def test_a_run_waiting_to_place_in_a_folder_another_run_is_placing_in_says_so(tmp_path, monkeypatch):
    """The folders' placing lock (held for the milliseconds a pair is placed; longer only by a run
    stopped mid-placing) was waited for up to LOCK_WAIT_SECONDS without a word. Now one WaitWarning as
    the wait begins, naming the folder; none when the lock is free. Oracle: the warnings recorded and
    the folder a separate process holds the lock of."""
    target = tmp_path / "out" / "r.parquet"
    target.parent.mkdir()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with placing.placing_lock(target):
            pass
    assert said == []
    with _flock_held(target.parent, "os.O_RDONLY"):
        monkeypatch.setattr(placing, "LOCK_WAIT_SECONDS", 0.3)
        with warnings.catch_warnings(record=True) as said, pytest.raises(EnvironmentFailure, match="placing a release"):
            warnings.simplefilter("always")
            with placing.placing_lock(target):
                pass
    assert [w.category for w in said] == [WaitWarning]
    assert f"another sqlclose run is placing a release in {target.parent}; this run waits" in str(said[0].message)


@pytest.mark.parametrize("table", ["", " ", "main.", ".people"])
def test_an_output_table_naming_no_table_is_refused_before_anything(tmp_path, table):
    """Review of the sixty-third round: `--output-table ''` (or 'main.') passed --dry-run and failed after
    the search with DuckDB's "zero-length delimited identifier" (exit 1; the Python API an EngineError),
    and '.people' was written as main.people. Refused as a mistake of the spec (exit 2), by the API too.
    Oracle: the database written by an earlier run, byte for byte, and nothing else in the folder."""
    db = tmp_path / "release.duckdb"
    with sqlclose.anonymize(table3([f"kept-{i}" for i in range(9)]), SPEC) as r:
        r.write(db, table="people")
    before = db.read_bytes()
    with sqlclose.anonymize(table3([f"kept-{i}" for i in range(9)]), SPEC) as r:
        with pytest.raises(sqlclose.InputError, match=f"table = {table!r} names no table"):
            r.write(db, table=table, overwrite=True)
    (tmp_path / "p").mkdir()
    project = table3_project(tmp_path / "p")
    spec = project / "spec.toml"
    run = subprocess.run([sys.executable, "-m", "sqlclose.cli", "anonymize", str(spec), "-o", str(db),
                          "--output-table", table, "--dry-run"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and f"table = {table!r} names no table" in run.stderr, run.stderr
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p", "release.duckdb", "release.duckdb.people.report.json"]


@pytest.mark.parametrize("made_by", ["sqlite", "text"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_another_programs_file_at_a_database_output_is_refused_as_such(tmp_path, made_by, overwrite):
    """A SQLite file named lite.duckdb: DuckDB tried to download its SQLite extension to open it, and
    the run said "Failed to download extension" (review of the ninety-second round). Refused before
    the search, naming the file, and kept byte for byte; --overwrite does not make it replaceable."""
    import sqlite3

    from table3_project import invoke

    project = table3_project(tmp_path)
    target = project / "lite.duckdb"
    if made_by == "sqlite":
        with sqlite3.connect(target) as con:
            con.execute("CREATE TABLE notes (a TEXT)")
    else:
        target.write_text("my notes, named .duckdb by mistake")
    before = target.read_bytes()
    result = invoke("anonymize", project / "spec.toml", "-o", target, "--output-table", "people",
                    *(["--overwrite"] if overwrite else []))
    assert result.exit_code == 2, result.output
    assert f"the output database {target} is not a DuckDB database (another program's file)" in result.output
    assert target.read_bytes() == before
    assert sorted(p.name for p in project.iterdir() if p.name.startswith("lite")) == ["lite.duckdb"]


def _dotted_database(db: Path) -> None:
    """``main."a.b"`` holds Table 3 (nine rows); a decoy, table ``b`` of schema ``a``, which the
    unquoted ``a.b`` names, holds its rows twice (eighteen)."""
    with duckdb.connect(str(db)) as con:
        con.execute('CREATE TABLE "a.b" AS SELECT * FROM read_csv(?)', [str(TABLE3 / "table3.csv")])
        con.execute('CREATE SCHEMA a; CREATE TABLE a.b AS SELECT * FROM "a.b" UNION ALL SELECT * FROM "a.b"')


def test_a_source_table_whose_name_holds_a_dot_is_read_by_its_quoted_name(tmp_path):
    """Review of the ninety-fourth round: ``main."a.b"`` could not be named (`--table a.b`, '"a.b"' or
    'main.a.b': "holds no table or view 'a.b' (it holds 'a.b')"). A part in double quotes is one
    name now; the unquoted ``a.b`` still names table b of schema a. The oracle: a plain DuckDB count
    of each table (nine rows against the decoy's eighteen), and for anonymize the released
    (salary, disease) pairs, kept as they are, against a plain SELECT of the table."""
    db = tmp_path / "people.duckdb"
    _dotted_database(db)
    counted = {name: select(db, f"SELECT COUNT(*) FROM {sql}")[0][0]
               for name, sql in (('"a.b"', 'main."a.b"'), ('main."a.b"', 'main."a.b"'), ("a.b", "a.b"))}
    assert counted == {'"a.b"': 9, 'main."a.b"': 9, "a.b": 18}
    for table, rows in counted.items():
        result = invoke("check", db, "--table", table, "--qi", "zip,age", "--k", "1", "--json")
        assert result.exit_code == 0, (table, result.output)
        assert json.loads(result.output)["rows"] == rows, table
    (tmp_path / "p").mkdir()
    project = table3_project(tmp_path / "p")
    spec = project / "spec.toml"
    for table, sql in (('"a.b"', 'main."a.b"'), ('main."a.b"', 'main."a.b"'), ("a.b", "a.b")):
        text = (TABLE3 / "table3.toml").read_text().replace('path = "table3.csv"',
                                                            f"path = {str(db)!r}\ntable = {table!r}")
        spec.write_text(text.replace("../../out/table3/release.parquet", "out/release.parquet"))
        result = invoke("anonymize", spec, "--no-progress", "-q")
        assert result.exit_code == 0, (table, result.output)
        released = duckdb.sql(f"SELECT salary, disease FROM read_parquet('{project / 'out' / 'release.parquet'}')")
        assert sorted(released.fetchall()) == sorted(select(db, f"SELECT salary, disease FROM {sql}")), table


def test_spaces_around_a_quoted_table_name_are_no_part_of_it(tmp_path):
    """Review of the ninety-fifth round: `--table ' "a.b" '` was split inside the quotes (the part began
    with a space), and DuckDB was asked for schema ' "a', a name nobody wrote. As in SQL, spaces before
    a part's opening quote and after its closing one are no part of the name, for `check --table`,
    `[source] table` and `--output-table` alike. The oracle: a plain DuckDB count (nine rows, the
    decoy b of schema a eighteen), the released (salary, disease) pairs against a plain SELECT, and
    DuckDB's own catalog of the file written."""
    db = tmp_path / "people.duckdb"
    _dotted_database(db)
    assert select(db, 'SELECT COUNT(*) FROM  "a.b" ') == [(9,)] and select(db, "SELECT COUNT(*) FROM a.b") == [(18,)]
    for table, rows in ((' "a.b" ', 9), ('main . "a.b"', None), ('"main" . "a.b"', 9), (' "a" . "b" ', 18)):
        result = invoke("check", db, "--table", table, "--qi", "zip,age", "--k", "1", "--json")
        if rows is None:  # an unquoted part as written: schema 'main ', which the file lacks
            said = f"""{db} holds no table or view 'main . "a.b"' (it holds '"a.b"', 'a.b')"""
            assert result.exit_code == 2 and said in " ".join(result.output.split()), result.output
            continue
        assert result.exit_code == 0, (table, result.output)
        assert json.loads(result.output)["rows"] == rows, table
    (tmp_path / "p").mkdir()
    project = table3_project(tmp_path / "p")
    spec = project / "spec.toml"
    text = (TABLE3 / "table3.toml").read_text().replace('path = "table3.csv"',
                                                        f"path = {str(db)!r}\ntable = ' \"a.b\" '")
    spec.write_text(text.replace("../../out/table3/release.parquet", "out/release.parquet"))
    result = invoke("anonymize", spec, "--no-progress", "-q")
    assert result.exit_code == 0, result.output
    released = duckdb.sql(f"SELECT salary, disease FROM read_parquet('{project / 'out' / 'release.parquet'}')")
    assert sorted(released.fetchall()) == sorted(select(db, 'SELECT salary, disease FROM "a.b"'))
    out = tmp_path / "out.duckdb"
    result = invoke("anonymize", spec, "-o", out, "--output-table", ' "x.y"\n', "-q")
    assert result.exit_code == 0, result.output
    assert select(out, "SELECT schema_name, table_name FROM duckdb_tables()") == [("main", "x.y")]
    assert select(out, 'SELECT COUNT(*) FROM "x.y"') == [(9,)]


def test_an_output_table_whose_name_holds_a_dot_is_written_under_that_name(tmp_path):
    """`--output-table main.a.b` was told "no schema 'main.a'; create it (CREATE SCHEMA main.a)". The
    table "a.b" is written as '"a.b"' or 'main."a.b"' (and through the API), s.t still in schema s;
    a three-part name is refused with both readings spelled. The oracle: DuckDB's own catalog of the
    file and a plain SELECT of the table written."""
    project = table3_project(tmp_path)
    db = tmp_path / "out.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE SCHEMA s")
    for table in ('"a.b"', 'main."a.b"', "s.t"):
        result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", table, "--overwrite", "-q")
        assert result.exit_code == 0, (table, result.output)
    assert select(db, "SELECT schema_name, table_name FROM duckdb_tables()") == [("main", "a.b"), ("s", "t")]
    assert select(db, 'SELECT COUNT(*) FROM main."a.b"') == select(db, "SELECT COUNT(*) FROM s.t") == [(9,)]
    assert (tmp_path / 'out.duckdb."a.b".report.json').is_file()  # not a.b's, table b of schema a
    with sqlclose.anonymize(table3([f"n-{i}" for i in range(9)]), SPEC) as r:
        r.write(db, table='"x.y"')
    assert select(db, 'SELECT COUNT(*), MIN(note) FROM "x.y"') == [(9, "n-0")]
    result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "main.a.b", "--dry-run")
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "names 3 parts" in said and """main."a.b" (table 'a.b' of schema 'main')""" in said, said
    assert "CREATE SCHEMA" not in said


def test_a_catalog_qualified_table_name_is_refused_saying_to_leave_the_catalog_out(tmp_path):
    """Review of the ninety-fourth round, left for the ninety-fifth: DuckDB's ``hr.main.people``
    (catalog.schema.table, the catalog hr.duckdb's name when a session attaches it so) was refused
    spelling two readings, neither of them what was meant. A database file has no catalog name of
    its own (sqlclose attaches it under one of its own), so the name stays refused, and the message
    spells ``main.people`` too, for a source's table, --table and an output table alike. The
    oracle: DuckDB reads hr.main.people as main.people, nine rows, and check reads nine there."""
    db = tmp_path / "hr.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE people AS SELECT * FROM read_csv(?)", [str(TABLE3 / "table3.csv")])
        assert con.execute("SELECT COUNT(*) FROM hr.main.people").fetchall() == [(9,)]
    advice = ("or main.people if 'hr' is the database's catalog (DuckDB's catalog.schema.table): the path names the "
              "database, so the name leaves its catalog out")
    result = invoke("check", db, "--table", "hr.main.people", "--qi", "zip,age", "--k", "1")
    assert result.exit_code == 2 and advice in " ".join(result.output.split()), result.output
    result = invoke("check", db, "--table", "main.people", "--qi", "zip,age", "--k", "1", "--json")
    assert result.exit_code == 0 and json.loads(result.output)["rows"] == 9, result.output
    project = table3_project(tmp_path)
    result = invoke("anonymize", project / "spec.toml", "-o", db, "--output-table", "hr.main.people", "--dry-run")
    assert result.exit_code == 2 and advice in " ".join(result.output.split()), result.output
    spec = project / "spec.toml"
    spec.write_text(spec.read_text().replace('path = "table3.csv"', f"path = {str(db)!r}\ntable = 'hr.main.people'"))
    result = invoke("anonymize", spec, "--dry-run")
    assert result.exit_code == 2 and advice in " ".join(result.output.split()), result.output
    assert select(db, "SELECT schema_name, table_name FROM duckdb_tables()") == [("main", "people")]


def test_a_missing_tables_message_lists_a_name_holding_a_dot_as_it_is_typed(tmp_path):
    """`--table a.b` against a file holding only "a.b" said "holds no table or view 'a.b' (it holds
    'a.b')". The held name is listed quoted as it must be given. The oracle: DuckDB's own catalog
    of the file (one table, named a.b) and the database unchanged."""
    db = tmp_path / "people.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute('CREATE TABLE "a.b" AS SELECT * FROM read_csv(?)', [str(TABLE3 / "table3.csv")])
    assert select(db, "SELECT schema_name, table_name FROM duckdb_tables()") == [("main", "a.b")]
    result = invoke("check", db, "--table", "a.b", "--qi", "zip,age", "--k", "1")
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"""{db} holds no table or view 'a.b' (it holds '"a.b"')""" in said, said
    assert "(it holds 'a.b')" not in said
    result = invoke("check", db, "--table", "main.a.b", "--qi", "zip,age", "--k", "1")
    assert result.exit_code == 2 and """main."a.b" (table 'a.b' of schema 'main')""" in result.output, result.output
