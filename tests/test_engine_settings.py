"""The spec's [engine]: which engine runs the queries and with which limits; never part of the
release (the same release and spec hash whatever the settings)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from table3_project import invoke, table3_project

import sqlclose
from sqlclose.errors import LimitWarning, SpecError
from sqlclose.model.spec import as_spec

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "datasets" / "table3" / "table3.toml"


def spec_with(engine: dict | None) -> sqlclose.Spec:
    data = sqlclose.load_spec(SPEC).model_dump(exclude={"output"}, exclude_none=True)
    if engine is not None:
        data["engine"] = engine
    return as_spec(data)


def test_duckdb_limits_reach_the_engine_and_leave_the_release_alone(tmp_path):
    limited = spec_with({"threads": 1, "memory_limit": "1GB", "temp_directory": str(tmp_path / "spill")})
    with sqlclose.anonymize(None, limited) as release:
        settings = release.problem.engine.fetch(
            "SELECT current_setting('threads') AS t, current_setting('memory_limit') AS m").to_pylist()[0]
        release.write_parquet(tmp_path / "limited.parquet")
    # The limit bounds the whole job: DuckDB's own limit is 60 % of what the interpreter's 250 MB leave
    # (450 MB = 429.2 MiB).
    assert int(settings["t"]) == 1 and settings["m"].replace(" ", "").upper().startswith(("450", "429"))
    with sqlclose.anonymize(None, spec_with(None)) as release:
        release.write_parquet(tmp_path / "plain.parquet")
    assert pq.read_table(tmp_path / "limited.parquet").equals(pq.read_table(tmp_path / "plain.parquet"))
    assert limited.sha256() == spec_with(None).sha256()


def test_the_memory_limit_help_shares_it_as_the_docs_do():
    """Ninety-fifth round: `--memory-limit`'s help said DuckDB gets 60 % of what the interpreter's
    250 MB leave and "the rest the job's Python side", where docs/engines.md ("Memory limit") and
    docs/spec.md give the search's Python side 20 % and leave 20 % to what neither counts. Oracle:
    the docs' table, and its worked figure for 1GB, 450 MB to DuckDB (above) and 150 MB to the
    search: (1,000 − 250) × 20 %, which the search's sizing is held to."""
    from sqlclose.engine.limits import search_share

    for command in ("anonymize", "check", "sweep"):
        result = invoke(command, "--help", env={"COLUMNS": "1000"})
        assert result.exit_code == 0, result.output
        helped = " ".join(result.output.split())
        assert ("of what the interpreter's 250 MB leave, DuckDB gets 60 % (and spills to disk past it), the search's "
                "Python side 20 %; 20 % is left for what neither counts.") in helped, (command, helped)
    assert search_share(10**9) == 150 * 10**6


def test_a_connections_table_runs_on_that_connection_whatever_the_specs_engine(tmp_path):
    # The table lives in the caller's DuckDB: it is read there, as with no [engine], and the spec's
    # [engine] (a DuckDB of its own, which cannot read that connection's tables) is not made.
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM read_csv(?)", [str(REPO / "datasets" / "table3" / "table3.csv")])
    with sqlclose.anonymize((con, "t"), spec_with({"threads": 1, "memory_limit": "1GB"})) as release:
        release.write_parquet(tmp_path / "limited.parquet")
    with sqlclose.anonymize(None, spec_with(None)) as release:
        release.write_parquet(tmp_path / "plain.parquet")
    assert pq.read_table(tmp_path / "limited.parquet").equals(pq.read_table(tmp_path / "plain.parquet"))


@pytest.mark.parametrize("engine, message", [
    ({"name": "oracle9i"}, "unknown engine 'oracle9i'"),
    ({"master": "local[2]"}, "master"),
])
def test_a_wrong_engine_setting_is_a_spec_error(engine, message):
    with pytest.raises(SpecError, match=message):
        sqlclose.anonymize(None, spec_with(engine))


def test_a_memory_limit_must_say_its_unit():
    with pytest.raises(SpecError, match="engine.memory_limit"):
        spec_with({"memory_limit": "lots"})


@pytest.mark.parametrize("limit", ["0", "0GB", "0 MiB", "0.0KB", "0.0001KB"])
def test_zero_memory_limit_is_refused_not_silently_unlimited(limit):
    # DuckDB reads a limit of 0 bytes as none: "0GB" (or a fraction of a byte) ran unlimited, without a word.
    with pytest.raises(SpecError, match=r"engine\.memory_limit: 0 bytes, which would be no limit at all"):
        spec_with({"memory_limit": limit})


def test_zero_memory_limit_on_the_command_line_is_bad_input(tmp_path):
    project = table3_project(tmp_path)
    said = {limit: invoke("anonymize", project / "spec.toml", "--memory-limit", limit) for limit in ("0", "0GB")}
    for limit, result in said.items():
        assert result.exit_code == 2, result.stderr
        assert result.stderr == (f"sqlclose: error: --memory-limit {limit}: 0 bytes, which would be no limit at "
                                 "all: give a limit above zero with its unit (e.g. \"2GB\"), or leave memory_limit "
                                 "unset for no limit\n")
    assert not (project / "out").exists()


@pytest.mark.parametrize("setting, value", [("threads", 2), ("memory_limit", "2GB"), ("temp_directory", "spill")])
def test_a_duckdb_setting_in_a_spark_engine_is_a_spec_error_before_spark_starts(setting, value):
    with pytest.raises(SpecError, match=rf"engine: {setting} is a DuckDB setting .* not Spark's: .*\[engine\] conf"):
        spec_with({"name": "spark", setting: value})


def test_duckdb_setting_with_spark_engine_names_the_problem(tmp_path):
    # Was Python's own "SparkEngine.__init__() got an unexpected keyword argument 'threads'" (exit 2),
    # on anonymize and on check alike; now said before any session starts.
    project = table3_project(tmp_path)
    runs = [invoke("anonymize", project / "spec.toml", "--engine", "spark", "--threads", "2", "--memory-limit", "2GB"),
            invoke("check", REPO / "datasets" / "table3" / "table3.csv", "--engine", "spark", "--temp-directory",
                   tmp_path)]
    for result in runs:
        assert result.exit_code == 2, result.stderr
        assert "__init__" not in result.stderr and "unexpected keyword argument" not in result.stderr
        assert "DuckDB setting" in result.stderr and "[engine] conf" in result.stderr
        assert "docs/engines.md" in result.stderr
    assert "threads and memory_limit are DuckDB settings (--threads, --memory-limit)" in runs[0].stderr
    assert "temp_directory is a DuckDB setting (--temp-directory)" in runs[1].stderr
    assert not (project / "out").exists()


@pytest.mark.parametrize("setting, said", [
    ('master = "local[2]"', "master is a Spark setting"),
    ('conf = { "spark.sql.shuffle.partitions" = "8" }', "conf is a Spark setting"),
    ('master = "local[2]"\nconf = { "a" = "b" }', "master and conf are Spark settings"),
], ids=["master", "conf", "both"])
def test_a_spark_setting_with_the_duckdb_engine_names_the_problem(tmp_path, setting, said):
    """The mirror of the case above: Spark's master or conf under [engine] with the DuckDB engine (the
    default) stopped with Python's "[engine]: DuckDBEngine.__init__() got an unexpected keyword argument
    'master'" (exit 2), on anonymize, check --spec and explain alike. Oracle: docs/spec.md's [engine]
    rows — master and conf are Spark's settings; threads, memory_limit and temp_directory DuckDB's."""
    project = table3_project(tmp_path)
    spec = project / "spec.toml"
    spec.write_text(spec.read_text() + f"\n[engine]\n{setting}\n")
    runs = [invoke("anonymize", spec, "--dry-run"), invoke("check", project / "table3.csv", "--spec", spec),
            invoke("explain", spec)]
    for result in runs:
        assert result.exit_code == 2, result.stderr
        assert "__init__" not in result.stderr and "unexpected keyword argument" not in result.stderr
        assert result.stderr.startswith(f"sqlclose: error: {spec}: invalid spec: engine: {said}, not DuckDB's"), \
            result.stderr
        assert 'give [engine] name = "spark"' in result.stderr and "[engine] threads" in result.stderr
    assert not (project / "out").exists()


def test_a_temp_directory_that_is_a_file_is_refused_from_the_spec_as_from_the_command_line(tmp_path):
    # --temp-directory refuses a file up front; the spec's [engine] temp_directory let it pass
    # until DuckDB first spilled.
    project = table3_project(tmp_path)
    spec = project / "spec.toml"
    spec.write_text(spec.read_text() + '\n[engine]\ntemp_directory = "table3.csv"\n')
    result = invoke("anonymize", spec)
    assert result.exit_code == 2, result.stderr
    assert result.stderr == (f"sqlclose: error: {spec}: invalid spec: engine.temp_directory: a file, not a folder: "
                             "DuckDB spills into temp_directory; give a folder (made if missing) "
                             f"(got '{project / 'table3.csv'}')\n")
    assert not (project / "out").exists()
    assert spec_with({"temp_directory": str(tmp_path / "not yet made")}).engine.temp_directory is not None


def test_a_duckdb_engine_of_zero_bytes_is_refused():
    from sqlclose.engine import DuckDBEngine

    with pytest.raises(ValueError, match="0 bytes"):
        DuckDBEngine(memory_limit="0GB")


@pytest.mark.parametrize("n, said", [(1, "1 byte"), (3, "3 bytes"), (9_999, "9,999 bytes"), (10_000, "0.01 MB"),
                                     (150_000_000, "150 MB")])
def test_a_size_in_a_message_agrees_with_its_number(n, said):
    """`--memory-limit 1B` was told "its 0 bytes of the job's memory_limit (1 bytes)" (review of the
    ninety-third round)."""
    from sqlclose.engine.limits import megabytes

    assert megabytes(n) == said


@pytest.mark.spark
def test_a_given_spark_engine_finds_what_duckdb_finds(spark_session):
    from sqlclose.engine import SparkEngine

    with sqlclose.anonymize(None, spec_with(None), engine=SparkEngine(spark_session)) as on_spark:
        spark_node, spark_rows = on_spark.node, on_spark.to_arrow().to_pylist()
    with sqlclose.anonymize(None, spec_with(None)) as on_duckdb:
        assert on_duckdb.node == spark_node == {"zip": 1, "age": 2}  # the paper's Table 5
        assert on_duckdb.to_arrow().to_pylist() == spark_rows


def test_a_memory_limit_too_small_for_the_process_is_said_once_on_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # the CLI replaces it
    project = table3_project(tmp_path)
    result = invoke("anonymize", project / "spec.toml", "--memory-limit", "300MB", "--no-progress")
    assert result.exit_code == 0, result.output
    said = [line for line in result.output.splitlines() if "warning" in line]
    assert said == ["sqlclose: warning: memory_limit 300 MB cannot bound this job: the interpreter and its libraries "
                    "alone take ~250 MB. DuckDB gets 45 MB and spills past it, but the process will go over the limit; "
                    "give at least 500 MB for a bound that holds"]


def test_a_memory_limit_the_process_can_keep_is_not_warned_about():
    with warnings.catch_warnings():
        warnings.simplefilter("error", LimitWarning)
        with sqlclose.anonymize(None, spec_with({"memory_limit": "500MB"})) as release:
            setting = release.problem.engine.fetch("SELECT current_setting('memory_limit') AS m").to_pylist()[0]["m"]
    assert setting.replace(" ", "").upper().startswith(("150", "143"))  # 60 % of 500 - 250 MB = 143.1 MiB
    with pytest.warns(LimitWarning, match="499 MB cannot bound"):
        sqlclose.anonymize(None, spec_with({"memory_limit": "499MB"})).close()


@pytest.mark.spark
def test_a_spark_session_logs_through_ours_only_where_spark_would_use_its_defaults(spark_session, tmp_path):
    """Spark's built-in defaults give way to sqlclose's file; a file of the cluster's or the
    caller's (here: one set in the JVM) stays in charge."""
    from sqlclose.engine.spark import LOG_CONFIG, log_quietly

    jvm = spark_session.sparkContext._jvm
    configurator = jvm.org.apache.logging.log4j.core.config.Configurator

    def location() -> str:
        context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
        return str(context.getConfiguration().getConfigurationSource().getLocation())

    before = location()
    theirs = tmp_path / "cluster-log4j2.properties"
    theirs.write_text("rootLogger.level = info\n")
    defaults = jvm.java.lang.Thread.currentThread().getContextClassLoader().getResource(
        "org/apache/spark/log4j2-defaults.properties").toURI()
    try:
        configurator.reconfigure(jvm.java.net.URI(theirs.as_uri()))
        assert not log_quietly(spark_session) and location() == str(theirs)
        configurator.reconfigure(defaults)
        assert location().endswith("org/apache/spark/log4j2-defaults.properties")
        assert log_quietly(spark_session) and location() == str(LOG_CONFIG)
    finally:
        configurator.reconfigure(jvm.java.net.URI(before if ":" in before else Path(before).as_uri()))


_SLOW_STATEMENT = """
import sys, duckdb
from sqlclose.engine.duckdb import DuckDBEngine
engine = DuckDBEngine()  # held: an engine collected unclosed closes its connection
con = engine.con if sys.argv[1] == "engine" else duckdb.connect()
con.execute("SET progress_bar_time = 0")  # a bar from the first moment, for any statement DuckDB can follow
con.execute("SELECT COUNT(DISTINCT (a * 7919) % 100000007) FROM range(3000000) t(a)").fetchall()
"""


def test_duckdb_draws_no_progress_bar_of_its_own_on_sqlclose_connections() -> None:
    """DuckDB prints a progress bar on stdout for a long statement (past 2 s by default), into the
    CLI's output, a --json document or a job's log. Not on a connection sqlclose opens; the plain
    connection beside it shows the statement does draw one."""
    import subprocess
    import sys

    out = {way: subprocess.run([sys.executable, "-c", _SLOW_STATEMENT, way], capture_output=True, text=True,
                               check=True).stdout for way in ("engine", "plain")}
    assert "100%" in out["plain"]
    assert out["engine"] == ""


@pytest.mark.parametrize(("threads", "advised"), [(1, False), (2, True)])
def test_out_of_memory_advises_one_thread_only_when_there_are_more(threads, advised):
    """DuckDB's own out-of-memory error, as a query over a limit too small raises it: the advice
    names [engine] threads = 1 only to a job that runs more threads than that."""
    from sqlclose.engine.duckdb import DuckDBEngine
    from sqlclose.errors import EngineOutOfMemory

    with pytest.warns(LimitWarning, match="cannot bound this job"):  # a limit this small says so first
        engine = DuckDBEngine(threads=threads, memory_limit="32MB")
    try:
        with pytest.raises(EngineOutOfMemory) as caught:
            engine.fetch("SELECT list(range) FROM range(100000000) GROUP BY range % 7")
    finally:
        engine.close()
    assert ("threads = 1" in str(caught.value)) is advised, str(caught.value)


@pytest.mark.parametrize("limit", ["10KB", "50KB"])
@pytest.mark.parametrize("how", ["run", "dry-run", "spec", "check"])
def test_a_memory_limit_too_small_for_the_first_query_is_exit_5_naming_the_option(tmp_path, monkeypatch, limit, how):
    """Under 10KB or 50KB the engine's first query (reading the connection's default_collation) ran
    outside the engine's error translation: exit 1, 'internal error: OutOfMemoryException' with
    DuckDB's 'Possible solutions … SET memory_limit' (review rv24). Oracle: docs/engines.md — DuckDB
    out of memory is exit 5 naming --memory-limit, DuckDB's own advice not shown — and the work
    folder's state (no out/)."""
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # the CLI replaces it
    project = table3_project(tmp_path)
    spec = project / "spec.toml"
    run = ("anonymize", spec, "--memory-limit", limit, "--no-progress")
    args = {"run": run, "dry-run": (*run, "--dry-run"),
            "spec": ("anonymize", spec, "--no-progress"),
            "check": ("check", project / "table3.csv", "--qi", "zip", "--sensitive", "disease", "--distinct-l", "2",
                      "--memory-limit", limit)}[how]
    if how == "spec":
        spec.write_text(spec.read_text() + f'\n[engine]\nmemory_limit = "{limit}"\n')
    result = invoke(*args)
    assert result.exit_code == 5, result.stderr
    error = [line for line in result.stderr.splitlines() if line.startswith("sqlclose: error:")]
    assert len(error) == 1 and error[0].startswith("sqlclose: error: DuckDB ran out of memory"), result.stderr
    assert "(--memory-limit)" in error[0]
    assert "internal error" not in result.stderr and "Possible solutions" not in result.stderr
    assert "SET memory_limit" not in result.stderr
    assert not (project / "out").exists()


@pytest.mark.parametrize("option, value, says", [
    ("--threads", "0", "sqlclose: error: --threads 0: needs at least 1 thread"),
    # DuckDB started all 100,000 at once, in a dry run too: 25,000 threads and the machine's load
    # past 10,000 before anything was said (review rv18)
    ("--threads", "100000", "sqlclose: error: --threads 100000: at most 1024 threads (DuckDB starts each one at "
                            "once); give the machine's cores"),
    ("--memory-limit", "10XB", "sqlclose: error: --memory-limit 10XB: needs a size with its unit, e.g. 2GB or 512MiB "
                               "(B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, in any case)"),
    # past what DuckDB takes: "internal error: ParserException: Memory value out of range" (review of
    # the sixty-fourth round)
    ("--memory-limit", "100000000TB", "sqlclose: error: --memory-limit 100000000TB: more memory than any machine "
                                      "holds (at most 1 EiB): give the machine's, e.g. 16GB"),
])
def test_a_bad_engine_option_is_told_by_its_name_not_as_a_spec(tmp_path, option, value, says):
    """`check` has no spec, yet a bad --threads or --memory-limit said "command line: invalid spec:
    memory_limit: String should match pattern '^\\s*\\d+…'"; both commands now name the option."""
    project = table3_project(tmp_path)
    for args in (("anonymize", project / "spec.toml"),
                 ("check", project / "table3.csv", "--qi", "zip", "--sensitive", "disease")):
        result = invoke(*args, option, value)
        assert result.exit_code == 2 and result.stderr.strip() == says, result.stderr


@pytest.mark.parametrize("given, says", [
    ('"1gb"', None), ('"512 mib"', None), ("2", "needs a size with its unit"), ('".5GB"', "needs a size with its unit"),
    ('"100000000TB"', "more memory than any machine holds"),
])
def test_a_specs_memory_limit_is_read_in_any_case_and_refused_in_words(tmp_path, given, says):
    """Review of the sixty-fourth round: the spec refused "1gb" (which DuckDB and the Python API's
    `DuckDBEngine(memory_limit="1gb")` read) with the size pattern's regular expression, and a TOML
    number with "Input should be a valid string"; a limit past DuckDB's stopped as an internal error.
    The oracle: the bytes the units mean (KB/MB/GB powers of 1000, KiB/MiB/GiB of 1024)."""
    from sqlclose.engine.registry import engine_from
    from sqlclose.model.spec import load_spec

    project = table3_project(tmp_path)
    spec = project / "spec.toml"
    spec.write_text(spec.read_text() + f"\n[engine]\nmemory_limit = {given}\n")
    if says is None:
        engine = engine_from(load_spec(spec).engine)
        try:
            assert engine.memory_budget == {'"1gb"': 10**9, '"512 mib"': 512 * 2**20}[given]
        finally:
            engine.close()
        return
    result = invoke("anonymize", spec, "--dry-run")
    assert result.exit_code == 2 and says in result.stderr and "pattern" not in result.stderr, result.stderr


def test_engine_on_the_command_line_leaves_the_other_engines_settings(tmp_path):
    """Review of the sixty-fourth round: `--engine duckdb` over a spec whose [engine] is Spark's
    (`master = "local[2]"`) was refused ("master is a Spark setting … give [engine] name = "spark""),
    though `--engine` overrides [engine]. The spec's settings are its engine's: another engine named
    on the command line starts from none. The oracle: Table 3's release, Table 5's node."""
    project = table3_project(tmp_path)
    spec = project / "spec.toml"
    spec.write_text(spec.read_text() + '\n[engine]\nname = "spark"\nmaster = "local[2]"\nconf = { "a.b" = "c" }\n')
    result = invoke("anonymize", spec, "--engine", "duckdb", "--threads", "1", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["node"] == {"zip": 1, "age": 2}


@pytest.mark.parametrize("output", ["out/r.csv", "out/folder"])
def test_check_against_reads_a_csv_or_partitioned_release_within_the_engine_settings(tmp_path, output):
    """Review of the sixty-fourth round: `check --against` read a CSV release, or a Parquet folder
    partitioned by a column, into a DuckDB of its own, without --memory-limit, --threads or
    --temp-directory: a 1 KB limit passed (exit 0) where a Parquet file's check stopped (exit 5).
    Now every release is checked within them: 1 KB stops it as out of memory, a workable limit
    checks it."""
    project = table3_project(tmp_path)
    spec = project / "spec.toml"
    if output.endswith("folder"):
        spec.write_text(spec.read_text().replace('overwrite = false', 'overwrite = false\npartition_by = ["disease"]')
                        .replace("out/release.parquet", output))
        made = invoke("anonymize", spec, "--no-progress")
    else:
        made = invoke("anonymize", spec, "--output", project / output, "--no-progress")
    assert made.exit_code == 0, made.stderr
    written = project / output
    report = written.with_name(written.name + ".report.json")
    starved = invoke("check", written, "--against", report, "--memory-limit", "1KB", "--threads", "1")
    assert starved.exit_code == 5 and "DuckDB ran out of memory" in starved.stderr, starved.stderr
    checked = invoke("check", written, "--against", report, "--memory-limit", "500MB", "--threads", "1")
    assert checked.exit_code == 0, checked.stderr


def test_a_duckdb_relation_is_read_within_the_specs_engine_settings(tmp_path):
    """Review of the sixty-fourth round: a DuckDB relation is copied into a DuckDB of sqlclose's,
    but the spec's [engine] threads, memory_limit and temp_directory were dropped for it (the copy
    and the search ran on the process's shared database: 2 threads, 80 % of RAM, spilling to .tmp).
    Now they bound it, and the caller's connection keeps its own settings. The oracle: the settings
    as the spec writes them, read back from the engines."""
    import duckdb

    project = table3_project(tmp_path)
    spec = as_spec(project / "spec.toml")
    from sqlclose.model.spec import EngineSettings

    spec = spec.model_copy(update={"engine": EngineSettings.model_validate(
        {"threads": 1, "memory_limit": "600MB", "temp_directory": str(tmp_path / "spill")})})
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("CREATE TABLE people AS SELECT * FROM read_csv(?, types = {'zip': 'VARCHAR'})",
                [str(project / "table3.csv")])
    with sqlclose.anonymize(con.sql("SELECT * FROM people"), spec) as release:
        engine = release.problem.engine
        threads, spill = engine.con.execute("SELECT current_setting('threads'), "
                                            "current_setting('temp_directory')").fetchall()[0]
        assert (threads, spill, engine.memory_budget) == (1, str(tmp_path / "spill"), 600 * 10**6)
        assert release.node == {"zip": 1, "age": 2}
    assert con.execute("SELECT current_setting('threads')").fetchall() == [(2,)]
