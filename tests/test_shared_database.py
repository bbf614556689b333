"""Engines without settings of their own share the process's in-memory DuckDB database
(``sqlclose.engine.duckdb_database``): each on a connection of its own, leaving nothing of the
database's behind (an attached database, a table of ``main``, the ``threads`` setting), and a forked
child never running on the parent's copy of it. The oracles are DuckDB's own catalog read through
a fresh connection, and a plain read-write connection to the source's file."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import duckdb
import pytest
from sqlglot import exp

import sqlclose
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.engine.duckdb_database import shared_connection
from sqlclose.errors import EngineError

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"


def table3_spec() -> dict:
    spec = sqlclose.load_spec(TABLE3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    for name in ("age", "disease"):  # the spec's hierarchy files, relative to its folder
        section = spec["quasi_identifiers"] if name == "age" else spec["sensitive"]
        key = "file" if name == "age" else "hierarchy"
        section[name][key] = str(TABLE3 / f"{name}.csv")
    return {**spec, "source": {"path": str(TABLE3 / "table3.csv")}}


def attached() -> set[str]:
    """The databases attached to the shared database, read on a connection of the test's own."""
    con = shared_connection()
    try:
        return {name for (name,) in con.execute("SELECT database_name FROM duckdb_databases() "
                                                "WHERE NOT internal").fetchall()}
    finally:
        con.close()


def people_database(tmp_path: Path) -> Path:
    path = tmp_path / "people.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE people AS SELECT * FROM read_csv($1, types = {'zip': 'VARCHAR'})",
                [str(TABLE3 / "table3.csv")])
    con.close()
    return path


def writable(path: Path) -> bool:
    """Whether this process can open the file read-write: not while a database of it is attached."""
    try:
        con = duckdb.connect(str(path))
    except duckdb.Error as e:
        assert "already attached" in str(e) or "Conflicting lock" in str(e) or "file handle" in str(e), e
        return False
    con.execute("INSERT INTO people SELECT * FROM people LIMIT 0")
    con.close()
    return True


def test_two_engines_share_a_database_and_keep_their_temporary_tables_apart(tmp_path):
    first, second = DuckDBEngine(), DuckDBEngine()
    try:
        first.create_temp_table("mine", exp.select(exp.Literal.number(1).as_("x")))
        assert first.fetch("SELECT x FROM mine").column("x").to_pylist() == [1]
        with pytest.raises(EngineError, match="mine"):
            second.fetch("SELECT x FROM mine")
        # What is the database's is seen by both: why closing an engine detaches what it attached.
        alias = first.attach(people_database(tmp_path), read_only=True)
        assert alias in attached()
        assert second.fetch(f'SELECT COUNT(*) AS n FROM "{alias}".people').column("n").to_pylist() == [9]
    finally:
        first.close()
        second.close()
    assert alias not in attached()


@pytest.mark.parametrize("ending", ["closed", "collected unclosed"])
def test_a_database_source_is_detached_when_its_release_ends(tmp_path, ending):
    path = people_database(tmp_path)
    spec = {**table3_spec(), "source": {"path": str(path), "table": "people"}}
    before = attached()
    release = sqlclose.anonymize(None, spec)
    assert release.node is not None
    added = attached() - before  # only these: an earlier test's engine may be collected meanwhile
    assert added, "the source is read through a database attached to the shared one"
    assert not writable(path)
    if ending == "closed":
        release.close()
    else:
        del release
        gc.collect()
    assert not attached() & added
    assert writable(path)


def test_a_table_of_main_an_engine_made_goes_when_it_is_closed():
    """``create_temp_table(shared=True)`` makes a table of the database's ``main`` schema, read by
    a cursor (``check --against``): not a connection's, so closing the connection would leave it."""
    engine = DuckDBEngine()
    name = engine.temp_name("shared")
    engine.create_temp_table(name, exp.select(exp.Literal.number(1).as_("x")), shared=True)
    probe = shared_connection()
    try:
        assert probe.execute(f'SELECT x FROM "{name}"').fetchall() == [(1,)]
        engine.close()
        tables = probe.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'memory'").fetchall()
        assert (name,) not in tables
    finally:
        probe.close()


def test_a_write_on_one_thread_stays_on_one_thread_while_another_job_writes():
    """A partitioned write runs on one thread (``_one_thread``: ``SET threads``, the database's
    setting, then back), or its files' bytes follow the threads' timing. Two jobs in threads of one
    process take turns: interleaved, the first's ending set the threads back under the second's
    write. The order forced here is that interleaving; the oracle is DuckDB's setting itself. The
    tests run the shared database on one thread (conftest.SHARED_DATABASE_THREADS): two here."""
    first, second = DuckDBEngine(), DuckDBEngine()
    tests_threads = first._threads()
    first.con.execute("SET threads = 2")
    before = first._threads()
    assert before == 2, "the test needs a database on more than one thread"
    second_in, first_out = threading.Event(), threading.Event()
    seen: list[int | None] = []

    def second_write() -> None:
        with second._one_thread(True):
            second_in.set()
            first_out.wait(timeout=30)
            seen.append(second._threads())  # what the second write would run on

    worker = threading.Thread(target=second_write)
    try:
        with first._one_thread(True):
            worker.start()
            second_in.wait(timeout=2)  # comes only if the second write did not wait its turn
        first_out.set()
        worker.join(timeout=60)
        assert seen == [1]
        assert first._threads() == before
    finally:
        first.con.execute(f"SET threads = {tests_threads}")
        first.close()
        second.close()


_FORKED = """
import os, sys, sqlclose, tests_shared_spec as s
with sqlclose.anonymize(None, s.SPEC) as release:
    release.write_parquet(sys.argv[1] + "/parent.parquet")
pid = os.fork()
if pid == 0:
    with sqlclose.anonymize(None, s.SPEC) as release:
        release.write_parquet(sys.argv[1] + "/child.parquet")
    sys.exit(0)  # the interpreter's own exit, which closes what is left: not the parent's database
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_runs_on_a_database_of_its_own(tmp_path):
    """The parent's shared database, copied into a child without its threads, is never used there:
    the child makes its own, its job completes, and its interpreter exits without closing the copy."""
    (tmp_path / "tests_shared_spec.py").write_text(f"SPEC = {table3_spec()!r}\n")
    result = subprocess.run([sys.executable, "-c", _FORKED, str(tmp_path)], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60, env={"PYTHONPATH": f"{tmp_path}:{REPO}", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-2000:]
    written = [duckdb.sql("SELECT * FROM read_parquet($1) ORDER BY ALL", params=[str(tmp_path / f"{who}.parquet")])
               .fetchall() for who in ("parent", "child")]
    assert written[0] == written[1] and len(written[0]) == 9


def arrow_copy_warnings(caught: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    """DuckDB's warnings of a DB-API result's Arrow copy among those recorded."""
    return [w for w in caught if "Arrow output on a DB-API result" in str(w.message)]


def test_small_reads_overlapping_in_threads_show_no_warning_of_duckdbs(monkeypatch):
    """A job reads its small results through DuckDB's DB-API path, of which DuckDB warns (an Arrow
    copy, ``DuckDBEngine._run_small``). A ``catch_warnings`` around each such call was not
    thread-safe, each call putting back the filters it found: the first of two overlapping reads
    to end took away the second's filter, and jobs in threads of one process showed the warning.
    The overlap is forced here (the first read waits in ``bind``, which runs inside the call, until
    the second is inside its own, which waits until the first has ended); the oracle is Python's
    own record of the warnings raised, every one shown (``simplefilter("always")``, as under
    ``-W always``). The old code failed this 4 of 4 times, on the recorded warning."""
    first_inside, second_inside, first_done = threading.Event(), threading.Event(), threading.Event()
    bind = DuckDBEngine.bind

    def paused_bind(self, params):
        if params == [1]:
            first_inside.set()
            assert second_inside.wait(10)
        else:
            second_inside.set()
            assert first_done.wait(10)
        return bind(self, params)

    monkeypatch.setattr(DuckDBEngine, "bind", paused_bind)
    read: dict[int, int] = {}

    def small_read(n: int) -> None:
        engine = DuckDBEngine()
        try:
            read[n] = engine.fetch_row("SELECT $1 AS n", [n])["n"]
        finally:
            engine.close()
            if n == 1:
                first_done.set()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = threading.Thread(target=small_read, args=(1,))
        first.start()
        assert first_inside.wait(10)  # the first read is inside its call before the second starts
        second = threading.Thread(target=small_read, args=(2,))
        second.start()
        first.join(20)
        second.join(20)
    assert read == {1: 1, 2: 2}
    assert not [str(w.message) for w in arrow_copy_warnings(caught)]


def test_jobs_in_threads_show_no_warning_of_duckdbs_and_leave_the_callers_own():
    """Whole jobs in threads of one process (two, beside four threads of a thousand small reads
    each) record none of DuckDB's Arrow copy warnings with every warning shown; the same warning
    raised by the caller's own DuckDB call is still recorded: the filter is sqlclose's engine
    module's alone. The oracle is Python's record of the warnings raised."""
    errors: list[BaseException] = []

    def small_reads() -> None:
        engine = DuckDBEngine()
        try:
            for n in range(1000):
                assert engine.fetch_row(f"SELECT {n} AS n")["n"] == n
        except BaseException as e:  # noqa: BLE001 - told by the assertion below
            errors.append(e)
        finally:
            engine.close()

    def job() -> None:
        try:
            sqlclose.anonymize(None, table3_spec())
        except BaseException as e:  # noqa: BLE001 - told by the assertion below
            errors.append(e)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=target) for target in (small_reads,) * 4 + (job,) * 2]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        assert not arrow_copy_warnings(caught)
        duckdb.connect().execute("SELECT 1").to_arrow_table()  # the caller's own call
    assert [w.filename for w in arrow_copy_warnings(caught)] == [__file__]
