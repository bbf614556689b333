"""Tests for the ``sqlclose`` command: outputs, exit codes 0/2/3/4, messages on stderr."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from corruption import corrupt_every_write

import sqlclose
from sqlclose.cli import main

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"
SQLCLOSE = Path(sys.executable).with_name("sqlclose")


def invoke(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def spec_text(k: int = 3, overwrite: str = "", extra: str = "", output: str = 'path = "out/r.parquet"') -> str:
    # salary is neither QI nor sensitive here: the spec must say what happens to it
    return f"""
others = "keep"

[source]
path = "{(TABLE3 / 'table3.csv').as_posix()}"

[output]
{output}
{overwrite}

[privacy]
k = {k}

[quasi_identifiers]
zip = {{ mask = true }}
age = {{ file = "{(TABLE3 / 'age.csv').as_posix()}" }}
{extra}

[sensitive.disease]
distance = "hierarchical"
t = 0.3
hierarchy = "{(TABLE3 / 'disease.csv').as_posix()}"
"""


@pytest.fixture
def make_spec(tmp_path):
    def make(name: str = "spec.toml", **kw) -> Path:
        p = tmp_path / name
        p.write_text(spec_text(**kw), encoding="utf-8")
        return p

    return make


def assert_error(result, code: int, *fragments: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    assert result.stderr.startswith("sqlclose: error:"), result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


# ---------------------------------------------------------------------------- success


def test_table3_json(tmp_path):
    out = tmp_path / "r.parquet"
    result = invoke("anonymize", TABLE3 / "table3.toml", "-o", out, "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["node"] == {"zip": 1, "age": 2}
    assert doc["verified"] is True
    assert doc["output"]["path"] == str(out)
    assert doc["output"]["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert json.loads((tmp_path / "r.parquet.report.json").read_text()) == doc
    assert listing(tmp_path) == ["r.parquet", "r.parquet.report.json"]
    assert set(doc["privacy"]["sensitive"]) == {"salary", "disease"}


def test_table3_json_subprocess_relative_paths(tmp_path):
    # As documented: run from the repository root with a relative spec path.
    out = tmp_path / "r.parquet"
    proc = subprocess.run([str(SQLCLOSE), "anonymize", "datasets/table3/table3.toml", "-o", str(out), "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["node"] == {"zip": 1, "age": 2}
    assert pq.read_table(out).num_rows == 9


def test_subprocess_exit_code_for_bad_input(tmp_path):
    args = [str(SQLCLOSE), "anonymize", str(tmp_path / "missing.toml"), "-o", str(tmp_path / "r.parquet")]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("sqlclose: error:")
    assert "missing.toml" in proc.stderr and "Traceback" not in proc.stderr
    assert listing(tmp_path) == []


def test_a_run_with_its_standard_output_closed_says_its_summary_is_lost(tmp_path):
    """Started with ``>&-`` (fd 1 closed), Python has no sys.stdout and click printed nothing,
    silently: the summary a job's log expected was gone with exit 0. The release is still placed
    and verified, so the exit code stays 0; stderr says what was lost and where the summary is."""
    out = tmp_path / "r.parquet"
    proc = subprocess.run(["bash", "-c", '"$0" anonymize datasets/table3/table3.toml -o "$1" --no-progress >&-',
                           str(SQLCLOSE), str(out)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("sqlclose: warning: standard output is closed"), proc.stderr
    assert "report file holds its summary" in proc.stderr
    assert json.loads((tmp_path / "r.parquet.report.json").read_text())["verified"] is True


@pytest.mark.parametrize("command", [["anonymize", "datasets/table3/table3.toml", "-o", "{out}/r.parquet"],
                                     ["sweep", "datasets/table3/table3.toml", "--k", "2,3", "--out", "{out}/sweep"]])
def test_a_run_with_its_standard_error_closed_still_releases(tmp_path, command):
    """Started with ``2>&-`` (fd 2 closed, as a job runner may start it), Python has no sys.stderr:
    asking it whether it was a terminal for the progress display ended the run with an internal
    error (exit 1) and no release. The progress goes unshown; the run is as it is otherwise."""
    args = [part.replace("{out}", str(tmp_path)) for part in command]
    proc = subprocess.run(["bash", "-c", '"$0" "$@" 2>&-', str(SQLCLOSE), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    assert proc.stderr == ""
    if command[0] == "anonymize":
        assert pq.read_table(tmp_path / "r.parquet").num_rows == 9
        assert json.loads((tmp_path / "r.parquet.report.json").read_text())["verified"] is True
    else:
        assert {"sweep.csv", "nauc.csv", "discernibility.png"} <= set(os.listdir(tmp_path / "sweep"))


@pytest.mark.parametrize("k, code", [(None, 2), (10, 3)])
def test_a_failing_run_with_standard_error_closed_keeps_its_exit_code(tmp_path, k, code):
    """A missing spec (2) and a k no release reaches (3, told in the search): with fd 2 closed the
    second ended in the progress display's internal error (1) before the search could say so."""
    spec = tmp_path / "missing.toml"
    if k is not None:
        shutil.copytree(REPO / "datasets" / "table3", tmp_path / "table3")
        spec = tmp_path / "table3" / "table3.toml"
        spec.write_text(spec.read_text().replace("k = 3", f"k = {k}").replace("../../out/table3/", ""))
    proc = subprocess.run(["bash", "-c", '"$0" anonymize "$1" 2>&-', str(SQLCLOSE), str(spec)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == code
    assert not (tmp_path / "table3" / "release.parquet").exists()


HELPS = [[], ["--help"], ["--version"], ["anonymize", "--help"], ["hierarchy"], ["hierarchy", "show", "-h"]]


@pytest.mark.parametrize("args", HELPS, ids=lambda a: " ".join(a) or "(none)")
def test_a_help_written_to_a_full_disk_is_one_line_and_exit_5(args):
    """click wrote a help or the version before any command's guard: on a full disk (/dev/full) it
    ended with a traceback and exit 1. Told as every write the environment refuses is."""
    with open(os.devnull, "rb") as nothing, open("/dev/full", "wb") as full:
        proc = subprocess.run([str(SQLCLOSE), *args], stdin=nothing, stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=60)
    assert proc.returncode == 5
    assert proc.stderr == "sqlclose: error: the environment refused: the disk is full while writing standard output\n"


@pytest.mark.parametrize("args", HELPS, ids=lambda a: " ".join(a) or "(none)")
def test_a_help_whose_reader_left_ends_as_a_command_does(args):
    """A help piped to a reader that already left: no word and exit 141, as a command's output
    whose reader left (click said nothing and exited 1)."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([str(SQLCLOSE), *args], stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (141, "")


SIGTERM_IN_A_QUERY = """
import os, signal, threading
from sqlclose.cli.common import guarded, install_signal_handlers
from sqlclose.engine import DuckDBEngine
install_signal_handlers()

@guarded
def run(verbose=False):
    engine = DuckDBEngine(threads=1)
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
    engine.fetch("SELECT SUM(a.range * b.range) AS s FROM range(1000000) a, range(1000000) b")  # minutes of work

run()
"""


def test_sigterm_inside_a_duckdb_query_exits_143_and_says_sigterm():
    """A scheduler stops a job with SIGTERM, most often while DuckDB runs a query (the scan, the
    search, the write): DuckDB swallows the handler's exception and raises its own 'interrupted',
    which read as Ctrl-C (exit 130, 'interrupted'). The README promises 143 for SIGTERM."""
    proc = subprocess.run([sys.executable, "-c", SIGTERM_IN_A_QUERY], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 143, proc.stderr
    assert proc.stderr == "sqlclose: error: stopped by SIGTERM; nothing was placed at the output path\n"


SIGNAL_AS_A_STATEMENT_RETURNS = """
import os, signal, sys
from sqlclose.cli.common import guarded, install_signal_handlers
from sqlclose.engine import DuckDBEngine
signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as at a terminal: the CLI then handles SIGHUP too
install_signal_handlers()
method, signum = sys.argv[1], int(sys.argv[2])

class SignalAfterReturn:  # the real connection; the signal arrives as a statement returns to Python
    def __init__(self, con):
        self.con = con
    def __getattr__(self, name):
        def call(*args, **kwargs):
            result = getattr(self.con, name)(*args, **kwargs)
            os.kill(os.getpid(), signum)  # the handler runs here, inside the engine's try
            return result
        return call

@guarded
def run(verbose=False):
    engine = DuckDBEngine(threads=1)
    engine.con = SignalAfterReturn(engine.con)
    getattr(engine, method)("SELECT 1 AS x")

run()
"""


@pytest.mark.parametrize("method", ["execute", "fetch"])
@pytest.mark.parametrize("signum,code,name", [(15, 143, "SIGTERM"), (1, 129, "SIGHUP")])
def test_a_signal_landing_as_a_statement_returns_is_an_interrupt_not_an_engine_error(method, signum, code, name):
    """SIGTERM (or SIGHUP) whose handler ran in the Python code of ``Engine.execute``/``fetch`` — a
    statement just returned, about one stop in eight on a long run — raised the handler's
    Interrupted, an Exception, inside their ``except Exception`` that wraps a driver's error: it
    became an EngineError, exit 1, "sqlclose: error: Interrupted: stopped by SIGTERM". Oracle: the
    exit codes and message docs/bad-input.md and the README give for SIGTERM/SIGHUP (143/129)."""
    proc = subprocess.run([sys.executable, "-c", SIGNAL_AS_A_STATEMENT_RETURNS, method, str(signum)],
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (code, f"sqlclose: error: stopped by {name}; nothing was placed at "
                                                    "the output path\n")


SIGNAL_IN_PYTHON_THAT_DUCKDB_CALLS = """
import os, signal
from sqlclose.cli.common import guarded, install_signal_handlers
from sqlclose.engine import DuckDBEngine
install_signal_handlers()

def signalled(x: int) -> int:
    os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here: DuckDB gets its exception back
    return x

@guarded
def run(verbose=False):
    engine = DuckDBEngine(threads=1)
    engine.con.create_function("signalled", signalled)
    engine.fetch("SELECT signalled(1) AS x")

run()
"""

CLEANUP_FAILING_AFTER_CTRL_C = """
from sqlclose.cli.common import guarded
from sqlclose.errors import EngineError

@guarded
def run(verbose=False):
    try:
        raise KeyboardInterrupt  # Ctrl-C, as Python raises it
    except BaseException:
        raise EngineError("Connection Error: the interrupted query's connection refused the DROP", "DROP …") from None

run()
"""


@pytest.mark.parametrize("script,code,said", [(SIGNAL_IN_PYTHON_THAT_DUCKDB_CALLS, 143, "stopped by SIGTERM"),
                                              (CLEANUP_FAILING_AFTER_CTRL_C, 130, "interrupted")],
                         ids=["sigterm-in-python-duckdb-calls", "cleanup-failing-after-ctrl-c"])
def test_a_failure_that_follows_a_stop_is_told_as_the_stop(script, code, said):
    """A stop's exception can come back as another error: DuckDB, running Python code for a query
    when SIGTERM's handler raised there, reported its own InvalidInputException (exit 1, "a value
    could not be converted"); a cleanup on the way out of Ctrl-C that fails raised an EngineError
    (exit 1). Either is the stop. Oracle: the exit codes and words docs/bad-input.md and the
    README give for SIGTERM (143) and Ctrl-C (130)."""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (code, f"sqlclose: error: {said}; nothing was placed at the output path\n")


def test_log_lines_carry_their_utc_offset(tmp_path):
    """Without a terminal the search writes timestamped lines to stderr (a job's log). They were
    local time with no offset: in a log gathered from machines in several zones they could not
    be ordered, nor matched with the report's created_at (UTC, with its offset)."""
    out = tmp_path / "r.parquet"
    env = {**os.environ, "TZ": "IST-5:30"}  # POSIX form: UTC+05:30, no zone database needed
    before = datetime.datetime.now(datetime.UTC)
    proc = subprocess.run([str(SQLCLOSE), "anonymize", "datasets/table3/table3.toml", "-o", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=60, env=env)
    after = datetime.datetime.now(datetime.UTC)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if " search: " in line]
    assert lines, proc.stderr
    for line in lines:
        stamp = datetime.datetime.fromisoformat(line.split(" ", 1)[0])
        assert stamp.utcoffset() == datetime.timedelta(hours=5, minutes=30), line
        assert before - datetime.timedelta(seconds=1) <= stamp <= after, line


def _logged(events, update) -> list[tuple[float, str]]:
    """Each line a log callback wrote on stderr for ``events``: (seconds after the first line, text)."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        for event in events:
            update(event)
    lines = [line.split(" ", 1) for line in err.getvalue().splitlines()]
    first = datetime.datetime.fromisoformat(lines[0][0])
    return [((datetime.datetime.fromisoformat(stamp) - first).total_seconds(), text) for stamp, text in lines]


def test_a_jobs_log_says_how_long_the_search_has_run_and_none_of_its_counts():
    """A job's log tells the lattice's size (the report's) and, at fixed marks (10 s, 30 s, then
    every minute; only the latest passed between two reports), how long the search has run, each
    line stamped at its mark. Two searches alike in time and unlike in what they decided and
    evaluated (facts of the raw values: tests/test_leaks.py) write the same lines; so do two GAA runs
    unlike in the share merged. The oracle: the marks worked out by hand."""
    from sqlclose.cli import progress
    from sqlclose.search.gaa import GaaProgress
    from sqlclose.search.incognito import SearchProgress

    times = [0.4, 12.0, 31.0, 65.0, 200.0]
    searches = [_logged([SearchProgress(2, 7, n * shift, 5 * shift, s, n * shift, 6480) for n, s in enumerate(times)],
                        progress._log_lines()) for shift in (1, 7)]
    assert searches[0] == searches[1] == [
        (0, "search: started on a lattice of 6,480 nodes over 7 QIs"), (10, "search: running for 10 s"),
        (30, "search: running for 30 s"), (60, "search: running for 60 s"), (180, "search: running for 3 min")]
    runs = [_logged([GaaProgress(done, s, s * 2) for done, s in zip(shares, (1.0, 11.5, 95.0))], progress._log_lines())
            for shares in ((0.1, 0.4, 0.9), (0.3, 0.35, 0.5))]
    assert runs[0] == runs[1] == [(0, "search: GAA started"), (10, "search: GAA running for 10 s"),
                                  (60, "search: GAA running for 60 s")]


def test_human_summary(tmp_path, make_spec):
    result = invoke("anonymize", make_spec())
    assert result.exit_code == 0, result.stderr
    out = tmp_path / "out" / "r.parquet"
    assert f"released 9 of 9 rows -> {out}" in result.stdout
    assert "zip=1, age=2" in result.stdout
    assert "disease" in result.stdout and "max EMD" in result.stdout
    assert "verified" in result.stdout
    assert listing(tmp_path / "out") == ["r.parquet", "r.parquet.report.json"]


def test_quiet(tmp_path, make_spec):
    result = invoke("anonymize", make_spec(), "-q")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""
    assert (tmp_path / "out" / "r.parquet").exists()


@pytest.mark.parametrize("case", ["memory limit below the interpreter", "standard output closed",
                                  "standard output closed, --json"])
def test_quiet_prints_no_warning_in_a_real_process(tmp_path, make_spec, case):
    """``-q`` is "Print nothing but errors", yet a run printed ``sqlclose: warning: memory_limit …
    cannot bound this job`` (and, started with stdout closed, ``sqlclose: warning: standard output
    is closed``) on stderr: a cron job that mails on any output mailed every night. Oracles: the
    process's stderr (empty), the release and its report placed (the files exist, the report
    verified); with --json the document is lost with stdout, so that warning still stands."""
    closed = case.startswith("standard output closed")
    args = ["--json"] if case.endswith("--json") else ["--memory-limit", "300MB"] if not closed else []
    command = [str(SQLCLOSE), "anonymize", str(make_spec()), "-q", "--no-progress", *args]
    proc = subprocess.run(["bash", "-c", '"$@" >&-', "bash", *command] if closed else command,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    if "--json" in args:
        assert proc.stderr.startswith("sqlclose: warning: standard output is closed"), proc.stderr
    else:
        assert (proc.stdout, proc.stderr) == ("", "")
    assert json.loads((tmp_path / "out" / "r.parquet.report.json").read_text())["verified"] is True
    assert (tmp_path / "out" / "r.parquet").is_file()


def test_report_option(tmp_path, make_spec):
    result = invoke("anonymize", make_spec(), "--report", tmp_path / "rep" / "report.json", "-q")
    assert result.exit_code == 0, result.stderr
    doc = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert doc["node"] == {"zip": 1, "age": 2}
    assert listing(tmp_path / "out") == ["r.parquet"]


def test_spec_report_path_used(tmp_path, make_spec):
    spec = make_spec(output='path = "out/r.parquet"\nreport = "reports/r.json"')
    result = invoke("anonymize", spec, "-q")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "reports" / "r.json").exists()
    assert listing(tmp_path / "out") == ["r.parquet"]


def test_source_option_overrides_spec(tmp_path, make_spec):
    parquet = tmp_path / "t3.parquet"
    pq.write_table(pacsv.read_csv(TABLE3 / "table3.csv"), parquet)
    result = invoke("anonymize", make_spec(), "--source", parquet, "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert str(parquet) in doc["input"]["source"]
    assert doc["node"] == {"zip": 1, "age": 2}


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"sqlclose, version {sqlclose.__version__}"


def test_version_subprocess():
    proc = subprocess.run([str(SQLCLOSE), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert sqlclose.__version__ in proc.stdout


def test_help_lists_options():
    result = invoke("anonymize", "--help")
    assert result.exit_code == 0
    for option in ("--source", "--output", "--report", "--overwrite", "--json", "--quiet"):
        assert option in result.stdout


# ---------------------------------------------------------------------------- exit 2


def test_unknown_key_exit_2(tmp_path, make_spec):
    spec = make_spec(extra="[privacy2]\nk = 3")
    assert_error(invoke("anonymize", spec), 2, str(spec), "privacy2")
    assert listing(tmp_path / "out") == []


def test_toml_syntax_error_exit_2(tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text("[quasi_identifiers\n")
    assert_error(invoke("anonymize", spec, "-o", tmp_path / "r.parquet"), 2, str(spec), "not valid TOML")
    assert listing(tmp_path) == ["bad.toml"]


def test_missing_spec_file_exit_2(tmp_path):
    assert_error(invoke("anonymize", tmp_path / "nope.toml", "-o", tmp_path / "r.parquet"), 2, "nope.toml")


def test_no_output_path_exit_2(tmp_path, make_spec):
    spec = make_spec(output='report = "x.json"')  # an [output] without path is a spec error
    assert_error(invoke("anonymize", spec), 2, "output.path")
    spec = tmp_path / "noout.toml"
    spec.write_text(spec_text().replace('[output]\npath = "out/r.parquet"', ""))
    assert_error(invoke("anonymize", spec), 2, "no output path", "--output")


def test_missing_column_exit_2(tmp_path, make_spec):
    spec = make_spec(extra='height = { bands = [10] }')
    assert_error(invoke("anonymize", spec), 2, "'height'", "'zip', 'age', 'salary', 'disease'")
    assert listing(tmp_path / "out") == []


def test_bad_hierarchy_exit_2(tmp_path):
    age = tmp_path / "age.csv"
    age.write_text((TABLE3 / "age.csv").read_text().replace("36;3*;<40;*", "36;3*;<40"))
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_text().replace((TABLE3 / "age.csv").as_posix(), "age.csv"))
    assert_error(invoke("anonymize", spec), 2, str(age), "line 6", "ragged")
    assert listing(tmp_path / "out") == []


def test_null_exit_2(tmp_path):
    data = tmp_path / "t.csv"
    data.write_text((TABLE3 / "table3.csv").read_text().replace("47905,43,6000,gastritis", "47905,,6000,gastritis"))
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_text())
    assert_error(invoke("anonymize", spec, "--source", data), 2, "'age'", "NULL", 'nulls = "drop"')
    assert listing(tmp_path / "out") == []


def test_missing_source_exit_2(tmp_path, make_spec):
    assert_error(invoke("anonymize", make_spec(), "--source", tmp_path / "none.csv"), 2, "none.csv")


# ---------------------------------------------------------------------------- exit 3 and 4


def test_no_solution_exit_3(tmp_path, make_spec):
    assert_error(invoke("anonymize", make_spec(k=10)), 3, "k = 10", "9 rows")
    assert listing(tmp_path / "out") == []


def test_verification_failure_exit_4(tmp_path, make_spec, monkeypatch):
    # The written file loses a row before its re-check (which is not patched): exit 4, nothing left.
    corrupt_every_write(monkeypatch, tmp_path / "scratch", ["DELETE FROM t WHERE salary = 3000"])
    assert_error(invoke("anonymize", make_spec(), "--no-progress"), 4, "re-check", "8 rows instead of 9")
    assert listing(tmp_path / "out") == []


# ---------------------------------------------------------------------------- existing output


def test_existing_output_refused_without_overwrite(tmp_path, make_spec):
    out = tmp_path / "out"
    out.mkdir()
    (out / "r.parquet").write_bytes(b"keep me")
    assert_error(invoke("anonymize", make_spec()), 2, str(out / "r.parquet"), "--overwrite")
    assert (out / "r.parquet").read_bytes() == b"keep me"
    assert listing(out) == ["r.parquet"]


def test_existing_report_refused_without_overwrite(tmp_path, make_spec):
    out = tmp_path / "out"
    out.mkdir()
    (out / "r.parquet.report.json").write_text("{}")
    assert_error(invoke("anonymize", make_spec()), 2, "r.parquet.report.json")
    assert listing(out) == ["r.parquet.report.json"]
    assert (out / "r.parquet.report.json").read_text() == "{}"


def test_overwrite_flag_replaces(tmp_path, make_spec):
    out = tmp_path / "out"
    out.mkdir()
    (out / "r.parquet").write_bytes(b"old")
    result = invoke("anonymize", make_spec(), "--overwrite", "--json")
    assert result.exit_code == 0, result.stderr
    assert pq.read_table(out / "r.parquet").num_rows == 9
    assert json.loads(result.stdout)["output"]["sha256"] == hashlib.sha256((out / "r.parquet").read_bytes()).hexdigest()
    assert listing(out) == ["r.parquet", "r.parquet.report.json"]


def test_overwrite_from_spec(tmp_path, make_spec):
    out = tmp_path / "out"
    out.mkdir()
    (out / "r.parquet").write_bytes(b"old")
    result = invoke("anonymize", make_spec(overwrite="overwrite = true"), "-q")
    assert result.exit_code == 0, result.stderr
    assert pq.read_table(out / "r.parquet").num_rows == 9


def test_rerun_without_overwrite_refused(tmp_path, make_spec):
    spec = make_spec()
    assert invoke("anonymize", spec, "-q").exit_code == 0
    first = (tmp_path / "out" / "r.parquet").read_bytes()
    assert_error(invoke("anonymize", spec, "-q"), 2, "already exists")
    assert (tmp_path / "out" / "r.parquet").read_bytes() == first
    assert listing(tmp_path / "out") == ["r.parquet", "r.parquet.report.json"]


def test_env_var_in_output_path(tmp_path, monkeypatch):
    monkeypatch.setenv("SQLCLOSE_CLI_OUT", str(tmp_path / "envout"))
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_text(output='path = "${SQLCLOSE_CLI_OUT}/r.parquet"'))
    result = invoke("anonymize", spec, "-q")
    assert result.exit_code == 0, result.stderr
    assert listing(tmp_path / "envout") == ["r.parquet", "r.parquet.report.json"]
    assert os.path.isfile(tmp_path / "envout" / "r.parquet")


def test_table3_spec_copy_does_not_touch_repo_output(tmp_path):
    # the shipped spec writes to out/table3 relative to itself; in a copy, that is inside tmp
    work = tmp_path / "datasets" / "table3"
    shutil.copytree(TABLE3, work)
    result = invoke("anonymize", work / "table3.toml", "-q")
    assert result.exit_code == 0, result.stderr
    assert listing(tmp_path / "out" / "table3") == ["release.parquet", "release.parquet.report.json"]
