"""The ``sqlclose`` command ends its process without the interpreter's teardown (``cli.run``), and
loses nothing by it: the exit handlers run, the streams are flushed, the exit code is the command's,
and the shared database is closed. Each case is a real interpreter started for it (a forked child
of the suite's server would end by ``os._exit`` in any case): an object whose ``__del__`` writes a
mark tells whether the interpreter tore its modules down, which the quick way out skips."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from table3_project import table3_project

from sqlclose.engine import duckdb_database

# Registers an exit handler and an object torn down with the interpreter's modules, then runs the
# command as its console script does.
RUN = """
import atexit, os, sys, threading
marks, args, thread = sys.argv[1], sys.argv[2:-1], sys.argv[-1]
fd = os.open(marks, os.O_WRONLY | os.O_APPEND | os.O_CREAT)

def mark(word, write=os.write):  # bound now: the teardown empties the modules a later lookup needs
    write(fd, word.encode() + b"\\n")

class TornDown:
    def __del__(self, mark=mark):
        mark("torn down")

kept = TornDown()
atexit.register(mark, "exit handler")
if thread == "thread":
    threading.Thread(target=threading.Event().wait, daemon=True).start()  # alive until the end
sys.argv = ["sqlclose", *args]
from sqlclose.cli import run
run()
"""


def _run(tmp_path: Path, *args: str, thread: str = "no thread") -> tuple[subprocess.CompletedProcess, list[str]]:
    marks = tmp_path / "marks.txt"
    proc = subprocess.run([sys.executable, "-c", RUN, str(marks), *args, thread], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    return proc, marks.read_text().splitlines() if marks.exists() else []


def test_a_release_ends_without_teardown_yet_runs_exit_handlers_and_flushes_its_output(tmp_path):
    table3_project(tmp_path)
    proc, marks = _run(tmp_path, "anonymize", "spec.toml", "--json")
    assert proc.returncode == 0, proc.stderr
    said = json.loads(proc.stdout)  # the whole of a buffered pipe's output, flushed before the end
    assert said["verified"] is True
    assert marks == ["exit handler"]  # the handler ran once, and no module was torn down
    assert (tmp_path / "out" / "release.parquet").exists()


def test_a_failure_keeps_its_exit_code_and_message(tmp_path):
    proc, marks = _run(tmp_path, "anonymize", "missing.toml")
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("sqlclose: error: spec file missing.toml does not exist")
    assert marks == ["exit handler"]


@pytest.mark.parametrize("args", [("--version",), ("anonymize", "spec.toml", "--json")])
def test_with_another_thread_running_the_interpreter_ends_as_usual(tmp_path, args):
    table3_project(tmp_path)
    proc, marks = _run(tmp_path, *args, thread="thread")
    assert proc.returncode == 0, proc.stderr
    assert marks == ["exit handler", "torn down"]  # Python's own way out: handlers, then the teardown


def test_closing_the_shared_database_makes_the_next_engine_a_new_one():
    con = duckdb_database.shared_connection()
    con.execute("CREATE TABLE main.__test_closed AS SELECT 1 AS x")
    con.close()
    duckdb_database.close_shared()
    con = duckdb_database.shared_connection()
    try:
        assert con.execute("SELECT COUNT(*) FROM duckdb_tables() WHERE table_name = '__test_closed'").fetchone() == (0,)
    finally:
        con.close()
