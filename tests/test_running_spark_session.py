"""A Spark session already running in the process (a notebook's; here the tests' own), met by an
engine sqlclose makes itself: ``[engine] name = "spark"`` in a spec, ``SparkEngine()``, a check's
``--engine spark`` run in-process. It is its owner's: its settings, its logging and its life are
left as they were (review of the ninety-eighth round). The oracle is the session as the test set it
before the call."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import sqlclose
from sqlclose.engine import SparkEngine
from sqlclose.engine.spark import QUERY_CONTEXT_LOGGERS

pytestmark = pytest.mark.spark

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
# The caller's own settings, none of them DEFAULT_CONF's values.
CALLERS = {"spark.sql.shuffle.partitions": "7", "spark.sql.session.timeZone": "America/New_York"}


def spec() -> dict:
    return {"privacy": {"k": 3}, "engine": {"name": "spark"},
            "quasi_identifiers": {"zip": {"mask": True, "length": 5}, "age": {"file": str(TABLE3 / "age.csv")}},
            "sensitive": {"salary": {"distance": "ordered", "t": 0.2},
                          "disease": {"distance": "hierarchical", "t": 0.3, "hierarchy": str(TABLE3 / "disease.csv")}}}


@pytest.fixture
def callers_session(spark_session) -> Iterator:
    """The tests' session with settings and Python log levels of a caller's own, put back after."""
    before = {key: spark_session.conf.get(key, None) for key in CALLERS}
    levels = {name: logging.getLogger(name).level for name in QUERY_CONTEXT_LOGGERS}
    for key, value in CALLERS.items():
        spark_session.conf.set(key, value)
    for name in QUERY_CONTEXT_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)
    try:
        yield spark_session
    finally:
        for key, value in before.items():
            if value is None:
                spark_session.conf.unset(key)
            else:
                spark_session.conf.set(key, value)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def _log_configuration(session) -> str:
    context = session.sparkContext._jvm.org.apache.logging.log4j.LogManager.getContext(False)
    return str(context.getConfiguration().getConfigurationSource().getLocation())


def test_a_spec_engine_on_spark_leaves_the_running_sessions_settings_and_logging(callers_session) -> None:
    """``[engine] name = "spark"`` beside a notebook's session: the engine's builder handed back that
    session with sqlclose's settings applied to it for good (its time zone UTC, its shuffle partitions
    2, its app's name "sqlclose", its console progress off), its log4j configuration replaced by
    sqlclose's and pyspark's query-context loggers silenced. Now the release is made on the session
    as its owner set it (Table 5's node, the paper's), and every setting and log level is as before."""
    conf = dict(callers_session.conf.getAll)
    log4j = _log_configuration(callers_session)
    with sqlclose.anonymize(TABLE3 / "table3.csv", spec()) as release:
        assert release.node == {"zip": 1, "age": 2}
        assert release.to_arrow().num_rows == 9
    assert dict(callers_session.conf.getAll) == conf
    assert callers_session.conf.get("spark.sql.session.timeZone") == "America/New_York"
    assert _log_configuration(callers_session) == log4j
    assert {name: logging.getLogger(name).level for name in QUERY_CONTEXT_LOGGERS} == dict.fromkeys(
        QUERY_CONTEXT_LOGGERS, logging.INFO)


def test_settings_asked_of_an_engine_beside_a_running_session_are_told_not_applied(callers_session) -> None:
    """``SparkEngine(conf=…)`` beside a running session set its conf on that session. Now the session
    keeps its own, and the settings left unapplied are told by name (a setting the session already
    holds is not)."""
    with pytest.warns(sqlclose.SqlcloseWarning, match=r"spark\.sql\.shuffle\.partitions asked of the engine is not "
                      r"applied") as told:
        engine = SparkEngine(conf={"spark.sql.shuffle.partitions": "3",
                                   "spark.sql.session.timeZone": "America/New_York"})
    try:
        assert engine.spark is callers_session
        assert "timeZone" not in str(told[0].message)
        assert callers_session.conf.get("spark.sql.shuffle.partitions") == "7"
    finally:
        engine.close()


def test_an_engine_made_in_another_thread_leaves_the_running_session_running(spark_session) -> None:
    """``SparkEngine()`` in a thread other than the one that started the session (a notebook's
    ``ThreadPoolExecutor``): the session was not "active" in that thread, so the engine took the
    session getOrCreate handed back for its own, and stopped it on close. Now the owner's session
    still runs a query after the engine closed."""
    engines: list[SparkEngine] = []
    worker = threading.Thread(target=lambda: engines.append(SparkEngine()))
    worker.start()
    worker.join()
    engines[0].close()
    assert engines[0].spark is spark_session
    assert spark_session.range(3).count() == 3
