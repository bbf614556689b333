"""Jobs on a Spark session sqlclose starts itself, in a process of their own (marked ``spark``): the
command ``sqlclose anonymize --engine spark``, a failing query, a task failing on a value, the
settings read per statement (on a session in UTC, and on one whose conf gives another zone).

An engine's own session needs a process where no session runs yet (the tests' would be taken as a
caller's), and what these tests read is the process's stderr. Each used to start a process, and so a
JVM, of its own (10-20 s of Spark's start-up each). One process now runs the five jobs in turn, each
on a session it starts and stops: the JVM starts once (a second session in it starts in ~0.3 s
against ~10 s). The command runs first, in the process as fresh as before (its pandas warning,
printed at pyspark's first import, and its log configuration are what it tests). Before each later
job the driver checks no session runs and puts back what a fresh process has of what those jobs
test: pyspark's query-context loggers at their default level, the JVM logging with Spark's built-in
defaults; so each job's own session quiets them itself, or its test fails. Each job's stdout is its
own (between markers); what must appear nowhere is looked for on the whole process's stderr.

Oracles: the rows of the command's written folder and of DuckDB's written file, each read by a plain
DuckDB ``GROUP BY`` (not the code under test); the folder digest recomputed by hashlib; the words of
the test's own failing query and value (``SECRET-4711``); the counts of a spy the job installs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from conftest import TEST_JVM_OPTIONS

import sqlclose
from sqlclose.engine import DuckDBEngine

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]
TABLE3 = REPO / "datasets" / "table3"
MARK = "\x1e"  # starts a job's name on stdout and stderr, at the start of a line
SPILL_VARIABLE = "SQLCLOSE_TEST_SPARK_SPILL"  # the command's spec spills into the folder it names

# The process: argv 1 the jobs' folder, 2 the command's spec, 3 the JVM flags of the tests' own
# session (conftest.TEST_SPARK_CONF: the quick JIT tier alone, one collector thread, no bytecode
# verification), which the command's spec gives as well (its JVM is the one the jobs share), 4 Table
# 3's spec.
_DRIVER = """
import json, logging, runpy, sys, traceback
from pathlib import Path

FOLDER, SPEC, JVM_OPTIONS, TABLE3_SPEC = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
MARK = "\\x1e"


def begin(name):
    for stream in (sys.stdout, sys.stderr):
        stream.write(f"{MARK}{name}\\n")
        stream.flush()


def command():
    # `python -m sqlclose.cli anonymize …`: the command's own entry point, run as -m runs it. The
    # spill folder its session was started with is read back from the session (FOLDER/local_dir.json).
    from sqlclose.engine import spark as spark_engine
    started = spark_engine._own_session

    def own_session(master, conf):
        session = started(master, conf)
        (FOLDER / "local_dir.json").write_text(json.dumps(session.sparkContext.getConf().get("spark.local.dir")))
        return session
    spark_engine._own_session = own_session
    sys.argv = ["sqlclose", "anonymize", SPEC, "--engine", "spark", "--no-progress", "--json"]
    try:
        runpy.run_module("sqlclose.cli", run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        return stop.code
    finally:
        spark_engine._own_session = started
    return "returned"


def failing_query():
    from sqlclose.engine import SparkEngine
    from sqlclose.errors import EngineError
    engine = SparkEngine(master="local[1]", conf={"spark.driver.extraJavaOptions": JVM_OPTIONS})
    try:
        engine.fetch("SELECT map('a', 1) AS m ORDER BY m")
    except EngineError as e:
        print(e)
    finally:
        engine.close()
    return 0


def task_failure():
    import sqlclose
    from sqlclose.engine import SparkEngine
    engine = SparkEngine(conf={"spark.sql.codegen.wholeStage": "false",  # and the JVM flags of conftest.py's session
                               "spark.driver.extraJavaOptions": JVM_OPTIONS})
    rows = [("47677", "SECRET-4711", "flu")] + [(f"4767{i}", str(20 + i), "gastritis") for i in range(8)]
    frame = engine.spark.createDataFrame(rows, "zip string, age_text string, disease string")
    frame = frame.selectExpr("zip", "CAST(age_text AS INT) AS age", "disease")
    spec = {"others": "keep", "privacy": {"k": 3}, "quasi_identifiers": {"zip": {"mask": True, "length": 5}}}
    try:
        with sqlclose.anonymize(frame, spec, engine=engine) as release:
            release.to_arrow()  # age is read by the release alone
    except sqlclose.errors.EngineError as e:
        print("stopped:", e)
    finally:
        engine.close()
    return 0


def setting_reads(zone=None, out="r"):
    # Counts, while a Table 3 release is made and written, the statements run and the reads of each
    # setting; with a zone given in the engine's conf, the session's zone after the release too.
    from pyspark.sql import SparkSession
    from pyspark.sql.conf import RuntimeConfig
    import sqlclose
    from sqlclose.engine import SparkEngine

    zoned = {"spark.sql.session.timeZone": zone} if zone else {}
    engine = SparkEngine(master="local[1]", conf={"spark.driver.extraJavaOptions": JVM_OPTIONS, **zoned})
    reads, statements = {}, []
    get, sql = RuntimeConfig.get, SparkSession.sql

    def counted_get(self, key, *args, **kwargs):
        reads[key] = reads.get(key, 0) + 1
        return get(self, key, *args, **kwargs)

    def counted_sql(self, *args, **kwargs):
        statements.append(1)
        return sql(self, *args, **kwargs)

    RuntimeConfig.get, SparkSession.sql = counted_get, counted_sql
    try:
        with sqlclose.anonymize(None, TABLE3_SPEC, engine=engine) as release:
            release.write(FOLDER / out)
    finally:
        RuntimeConfig.get, SparkSession.sql = get, sql
        now = engine.spark.conf.get("spark.sql.session.timeZone")
        engine.close()
    print(json.dumps({"reads": reads, "statements": len(statements), "zone": now}))
    return 0


def zoned_setting_reads():
    return setting_reads("America/New_York", "zoned")


def as_in_a_fresh_process():
    # No session runs (a job that left one would hand the next a caller's session), and the process's
    # logging is as a fresh one's: what each later job's own session must set itself.
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
    from sqlclose.engine.spark import QUERY_CONTEXT_LOGGERS

    running = getattr(SparkSession, "_instantiatedSession", None)
    if SparkContext._active_spark_context is not None or SparkSession.getActiveSession() is not None or (
            running is not None and running._sc._jsc is not None):
        raise RuntimeError("a Spark session still runs after the job before")
    for name in QUERY_CONTEXT_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET)
    jvm = SparkContext._jvm
    defaults = jvm.org.apache.spark.util.Utils.getSparkClassLoader().getResource(
        "org/apache/spark/log4j2-defaults.properties")
    jvm.org.apache.logging.log4j.core.config.Configurator.reconfigure(defaults.toURI())
    jvm.org.apache.logging.log4j.core.config.Configurator.setRootLevel(jvm.org.apache.logging.log4j.Level.WARN)


for name, job in (("command", command), ("failing_query", failing_query), ("task_failure", task_failure),
                  ("setting_reads", setting_reads), ("zoned_setting_reads", zoned_setting_reads)):
    if name != "command":
        as_in_a_fresh_process()
    begin(name)
    try:
        ended = job()
    except BaseException:
        traceback.print_exc()
        ended = "raised"
    begin(name + ".ended")
    print(json.dumps(ended), flush=True)
"""


@dataclass
class Jobs:
    folder: Path
    spec: Path
    stdout: dict[str, str]  # a job's name -> what it printed
    stderr: dict[str, str]
    whole_stderr: str

    def ended(self, name: str) -> object:
        """The job's return (the command's exit code), or "raised", or None if it never ended."""
        said = self.stdout.get(f"{name}.ended")
        return None if said is None else json.loads(said)


def _by_job(text: str) -> dict[str, str]:
    return {name: said for name, _, said in (part.partition("\n") for part in text.split(MARK)[1:])}


def _command_spec(folder: Path) -> Path:
    """Table 3's spec reading a Parquet folder source, on Spark's engine with the product's settings
    (code generation on, unlike the other Spark tests' ``TEST_SPARK_CONF``), spilling into the folder
    ``${SQLCLOSE_TEST_SPARK_SPILL}`` names (``jobs`` sets it). Its JVM, as theirs,
    compiles Spark's own code with the quick JIT tier alone: given through the spec's ``[engine]
    conf``, it took the job from ~40 s to ~30 s, and changes no result."""
    source = folder / "table3"
    source.mkdir()
    duckdb.sql(f"COPY (SELECT * FROM read_csv('{TABLE3 / 'table3.csv'}', types = {{'zip': 'VARCHAR'}})) "
               f"TO '{source / 'part-0.parquet'}' (FORMAT PARQUET)")
    text = (TABLE3 / "table3.toml").read_text().replace('path = "table3.csv"', f'path = "{source}"')
    for name in ("age.csv", "disease.csv"):
        text = text.replace(f'"{name}"', f'"{TABLE3 / name}"')
    spec = folder / "spec_spark.toml"
    engine = ('\n[engine]\nname = "spark"\nmaster = "local[1]"\nconf = { "spark.sql.shuffle.partitions" = "1", '
              f'"spark.driver.extraJavaOptions" = "{TEST_JVM_OPTIONS}", '
              f'"spark.local.dir" = "${{{SPILL_VARIABLE}}}" }}\n')
    spec.write_text(text.replace("../../out/table3/release.parquet", str(folder / "out" / "rel")) + engine)
    return spec


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> Jobs:
    folder = tmp_path_factory.mktemp("own-sessions")
    spec = _command_spec(folder)
    done = subprocess.run([sys.executable, "-c", _DRIVER, str(folder), str(spec), TEST_JVM_OPTIONS,
                           str(TABLE3 / "table3.toml")],
                          capture_output=True, text=True, cwd=folder,
                          env={**os.environ, "PYTHONPATH": str(REPO), SPILL_VARIABLE: str(folder / "spill")},
                          timeout=1200)
    return Jobs(folder, spec, _by_job(done.stdout), _by_job(done.stderr), done.stderr)


def _grouped(path: Path, columns: list[str]) -> list[tuple]:
    """Rows with their multiplicity, by a plain GROUP BY over a written file or folder."""
    where = str(path / "**" / "*.parquet") if path.is_dir() else str(path)
    names = ", ".join(f'CAST("{c}" AS VARCHAR) AS "{c}"' for c in columns)
    return duckdb.sql(f"SELECT {names}, COUNT(*) AS n FROM read_parquet($1, hive_partitioning = true, "
                      "hive_types_autocast = false) GROUP BY ALL ORDER BY ALL", params=[where]).fetchall()


def _manifest_digest(folder: Path) -> str:
    import hashlib

    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(folder).as_posix()}\n"
             for p in sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix()) if p.is_file()]
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def test_the_command_runs_on_spark(jobs: Jobs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``sqlclose anonymize --engine spark`` (``python -m sqlclose.cli``'s entry point, the process's
    first job): a Parquet folder source, a folder release verified on Spark, equal to DuckDB's by a
    plain GROUP BY. Its session has the product's settings: code generation on."""
    told = jobs.stderr.get("command", jobs.whole_stderr)[-2000:]
    assert jobs.ended("command") == 0, told
    doc = json.loads(jobs.stdout["command"])
    assert doc["verified"] and doc["output"]["sha256"] == _manifest_digest(jobs.folder / "out" / "rel")
    # The session logs through sqlclose's configuration: none of the warnings its queries raise by
    # design (before it, 35 WindowExec lines and more on this very run).
    for noise in ("WindowExec", "All paths were ignored", "does not yet fully support pandas"):
        assert noise not in jobs.whole_stderr, told
    duck = tmp_path / "duck.parquet"
    monkeypatch.setenv(SPILL_VARIABLE, str(jobs.folder / "spill"))  # as the command had it
    with sqlclose.anonymize(None, jobs.spec, engine=DuckDBEngine()) as release:  # the spec says spark
        release.write_parquet(duck)
    columns = ["zip", "age", "salary", "disease"]
    assert _grouped(jobs.folder / "out" / "rel", columns) == _grouped(duck, columns)


def test_a_specs_spark_local_dir_expands_its_variable(jobs: Jobs) -> None:
    """The command's spec gives ``"spark.local.dir" = "${SQLCLOSE_TEST_SPARK_SPILL}"``: passed as
    written, Spark spilled into a folder literally named so, made in the working folder (exit 0). It
    is expanded from the environment now, as a spec's paths are (hundred-and-second round). Oracles:
    the session's conf read back when it started, and the folders on disk."""
    assert jobs.ended("command") == 0, jobs.stderr.get("command", jobs.whole_stderr)[-2000:]
    assert json.loads((jobs.folder / "local_dir.json").read_text()) == str(jobs.folder / "spill")
    assert (jobs.folder / "spill").is_dir()  # Spark made the folder it was given
    assert not [p.name for p in jobs.folder.iterdir() if "${" in p.name]


def test_a_failing_spark_query_is_told_in_one_line_with_no_plan_nor_log_on_stderr(jobs: Jobs) -> None:
    """Review rv14, defect 4's aftermath: a query Spark refused put its whole analyzed plan in the
    EngineError (the release query's ran to kB), and pyspark's SQLQueryContextLogger printed ~13 kB
    of JSON (the error, its Java stack) on stderr before sqlclose's one line. In a process of its
    own, as the command runs, an engine on a session of its own: the error is one line, Spark's
    condition and words, and the failing query's words appear nowhere on stderr."""
    assert jobs.ended("failing_query") == 0, jobs.stderr.get("failing_query", jobs.whole_stderr)[-2000:]
    said = jobs.stdout["failing_query"]
    assert said.startswith("AnalysisException: [DATATYPE_MISMATCH.INVALID_ORDERING_TYPE]")
    assert len(said.splitlines()) == 1 and "Sort [" not in said
    assert "INVALID_ORDERING_TYPE" not in jobs.whole_stderr and "QueryContextLogger" not in jobs.whole_stderr


def test_a_spark_session_of_our_own_logs_no_value_a_task_failed_on(jobs: Jobs) -> None:
    """Spark's own logs quoted the value too: the executor's "Exception in task" with the task's
    exception and stack, and the scheduler's "Lost task" warning with its text (``The value
    'SECRET-4711' …``), on stderr of every job whose session sqlclose starts (its log4j2 file,
    engine/spark_log4j2.properties). Oracle: the whole stdout and stderr of a process running such
    a job, which stops saying what failed."""
    said = jobs.stdout.get("task_failure", "")
    assert "stopped: a value of the source could not be computed: NumberFormatException: [CAST_INVALID_INPUT]" \
        in said, jobs.stderr.get("task_failure", jobs.whole_stderr)[-2000:]
    assert "SECRET" not in "".join(jobs.stdout.values()) + jobs.whole_stderr


def test_an_own_sessions_zone_is_not_read_per_statement(jobs: Jobs) -> None:
    """The settings the Spark engine reads on every statement: its session's time zone
    (``_statement_zone``) and Arrow's large types (``_schema``), each a py4j call to the JVM (~0.3 ms).
    Every statement read the session's zone to know whether to set UTC around it: 29 reads for a
    Table 3 release on a session sqlclose started in UTC itself, which nobody else sets. None now;
    the release is still written (and re-checked) as before. A caller's session is read each time,
    as they may change it between two calls: tests/test_spark_session_zone.py runs those."""
    assert jobs.ended("setting_reads") == 0, jobs.stderr.get("setting_reads", jobs.whole_stderr)[-3000:]
    counts = json.loads(jobs.stdout["setting_reads"].splitlines()[-1])
    assert counts["statements"] > 10  # the spy saw the release's statements
    assert counts["reads"].get("spark.sql.session.timeZone", 0) == 0, counts
    assert counts["reads"].get("spark.sql.execution.arrow.useLargeVarTypes", 0) == 0, counts
    released = jobs.folder / "r"
    assert released.is_dir() and Path(f"{released}.report.json").is_file()


def test_an_own_sessions_zone_set_in_its_conf_is_not_read_per_statement(jobs: Jobs) -> None:
    """A session of sqlclose's own whose ``conf`` sets a time zone other than UTC: every statement
    runs in UTC (``SparkEngine._statement_zone``), the zone set to UTC around each and put back
    after. What to put back was read from the session each time, though nobody but the engine sets
    its own session, and its zone was read once when it started: {"spark.sql.session.timeZone": 29}
    reads for the release's 29 statements. Oracle: the spy's counts, and the zone the conf gave,
    found on the session after the release."""
    assert jobs.ended("zoned_setting_reads") == 0, jobs.stderr.get("zoned_setting_reads", jobs.whole_stderr)[-3000:]
    counts = json.loads(jobs.stdout["zoned_setting_reads"].splitlines()[-1])
    assert counts["statements"] > 10  # the spy saw the release's statements
    assert counts["reads"].get("spark.sql.session.timeZone", 0) == 0, counts
    assert counts["zone"] == "America/New_York"  # put back after each statement, as the conf gave it
    released = jobs.folder / "zoned"
    assert released.is_dir() and Path(f"{released}.report.json").is_file()
