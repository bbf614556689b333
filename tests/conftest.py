"""Shared fixtures: where the repository and the Adult data live."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parents[1]
DEFAULT_ADULT_DIR = REPO_DIR.parent / "shared" / "datasets" / "adult"
# The tests' Spark session evaluates expressions interpreted: their tables have a few thousand rows,
# and compiling Java for every query took longer than running it (tests/test_spark_random.py: 161 s
# with code generation, 126 s without). Results do not depend on it; one test,
# test_spark_sessions_of_our_own.py::test_the_command_runs_on_spark, runs the product's settings, code generation on.
# For the same reason the session's JVM compiles Spark's own code with the quick JIT tier alone
# (C1, no C2) and collects garbage on one thread: each worker's JVM lives a few minutes, too short
# for C2's optimized code to pay back the CPU it takes from two shared cores (test_engine_spark.py
# alone: 215 s -> 170 s; the JVM's CPU for four Table 3 releases and re-checks 59 s -> 36 s). JIT
# tiers and the collector change no result. Adaptive query execution is off as well: over two
# shuffle partitions it has nothing to coalesce, and re-planning each stage cost more than the
# tests' queries (test_engine_spark.py with test_spark_release.py, one worker: 342 s -> 285 s).
# The tests whose subject is adaptive execution set it themselves, on and off
# (test_leaks_engines.py::test_a_spark_folders_part_files_do_not_follow_the_input_order).
# The JVM skips verifying the bytecode of the classes it loads from Spark's jars (the JDK's own
# classes it never verifies by default): a JVM's first Table 3 releases took 35.2-37.6 CPU-seconds
# with it off against 37.7-40.9 on, the session ~1.5 s sooner; the tests start a JVM per xdist
# worker, and one more for the sessions of our own (test_spark_sessions_of_our_own.py).
# Verification refuses malformed bytecode and changes no result.
TEST_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1 -XX:+UseSerialGC "
                    "-XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote")
TEST_SPARK_CONF = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
                   "spark.sql.adaptive.enabled": "false", "spark.driver.extraJavaOptions": TEST_JVM_OPTIONS}


# The process's shared DuckDB database (sqlclose.engine.duckdb_database), which every engine without
# settings of its own runs on, runs on one thread in the tests, as the Spark session's JVM is tuned
# for them above. The suite runs a worker per core, and their Spark JVMs beside them: DuckDB's
# default, a thread per core in every worker, had each worker's small queries hand tasks between
# threads competing for the same two cores (the DuckDB-only files test_search_oracle, _release_
# dictionaries, _local_values, _verify_sql, _check and _outputs, 595 tests, pytest -n 2: 297 s and
# 280 s -> 254 s and 256 s; CPU 442-457 s -> 413 s). Nearly all the tests' tables hold less than
# one of DuckDB's row groups (122,880 rows), which one thread reads anyway; results do not depend on
# it. Tests whose subject is threads, and the large tables' tests of memory and reproducible bytes,
# give their engine its own (DuckDBEngine(threads=4), test_reproducible's spec, --threads 2 in
# test_memory_large_domains) or set the shared database's themselves
# (test_shared_database.py::test_a_write_on_one_thread_stays_on_one_thread_while_another_job_writes);
# processes the tests start run DuckDB's default.
SHARED_DATABASE_THREADS = 1


@pytest.fixture(scope="session", autouse=True)
def _shared_database_on_one_thread() -> None:
    from sqlclose.engine.duckdb_database import shared_connection

    connection = shared_connection()
    connection.execute(f"SET threads = {SHARED_DATABASE_THREADS}")
    connection.close()


@pytest.fixture(scope="session")
def repo_dir() -> Path:
    return REPO_DIR


@pytest.fixture(scope="session")
def spark_session():
    """One local Spark session for the whole run, started only when a Spark test asks for it.

    Without pyspark (the optional extra ``sqlclose[spark]``) the Spark tests skip, saying why."""
    pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[spark]' runs the Spark tests")
    from pyspark.sql import SparkSession

    from sqlclose.engine.spark import DEFAULT_CONF

    builder = SparkSession.builder.master("local[2]").appName("sqlclose-tests")
    for key, value in {**DEFAULT_CONF, **TEST_SPARK_CONF}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def spark(spark_session):
    """A Spark engine on the tests' one session, closed after the test (a module may give its own)."""
    from sqlclose.engine import SparkEngine

    engine = SparkEngine(spark_session)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def adult_dir() -> Path:
    """The folder holding adult.csv: $SQLCLOSE_ADULT_DIR, else <repo>/../shared/datasets/adult.

    A missing file fails the test (it does not skip): the Adult tests are the project's main
    end-to-end checks and must not silently disappear.
    """
    configured = os.environ.get("SQLCLOSE_ADULT_DIR")
    folder = Path(configured).expanduser() if configured else DEFAULT_ADULT_DIR
    csv = folder / "adult.csv"
    if not csv.is_file():
        source = "SQLCLOSE_ADULT_DIR" if configured else f"the default (SQLCLOSE_ADULT_DIR unset: {DEFAULT_ADULT_DIR})"
        pytest.fail(f"Adult data not found: {csv} does not exist (folder from {source}). Set SQLCLOSE_ADULT_DIR "
                    "to the folder holding adult.csv (';'-separated, 30,162 rows).", pytrace=False)
    return folder


ADULT_SUBSET_ROWS = 3000  # the first rows of Adult: brute-force oracles stay fast


@pytest.fixture(scope="session")
def adult_subset(adult_dir, tmp_path_factory) -> Path:
    """The first ADULT_SUBSET_ROWS rows of Adult as a ';' CSV in a temporary folder."""
    import duckdb

    path = tmp_path_factory.mktemp("adult") / "adult_subset.csv"
    duckdb.execute(f"COPY (SELECT * FROM read_csv(?, delim = ';', header = true, all_varchar = true) "
                   f"LIMIT {ADULT_SUBSET_ROWS}) TO '{path}' (DELIMITER ';', HEADER)", [str(adult_dir / "adult.csv")])
    return path


@pytest.fixture
def no_spark_session(monkeypatch) -> None:
    """The Spark engine's ways to a session, each failing the test if called: nothing may be sought or started."""
    from sqlclose.engine import spark as spark_engine

    def started(*args, **kwargs):
        raise AssertionError("a Spark session was sought or started")
    monkeypatch.setattr(spark_engine, "_running_session", started)
    monkeypatch.setattr(spark_engine, "_own_session", started)


@pytest.fixture
def judges(monkeypatch) -> list[bool]:
    """Per file the re-check measures, whether its grouped file was judged on a local copy
    (``release.verify_local``) rather than on the engine that read it."""
    from contextlib import contextmanager

    from sqlclose.release import verify_sql

    found: list[bool] = []
    real = verify_sql.judge_for

    @contextmanager
    def spied(engine, *args):
        with real(engine, *args) as judge:
            found.append(judge.engine is not engine)
            yield judge

    monkeypatch.setattr(verify_sql, "judge_for", spied)
    return found


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs filled to the last block (mounting needs root: skipped without it)."""
    mount = tmp_path / "full"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        subprocess.run(["dd", "if=/dev/zero", f"of={mount / 'fill'}", "bs=4k", "count=1000"], capture_output=True)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)
