"""A caller's Spark session in another time zone than UTC (review of the ninety-seventh round; marked
``spark``): the Spark engine took every session for UTC. A report's level-0 labels of a TIMESTAMP were
the session's wall time (and without an offset in UTC too), so ``check --against`` refused the
untouched release; GAA wrote that wall time as a value's label, five hours off from New York; and the
keyed input fingerprint of one file followed the session.

Oracles: DuckDB's text of the same instants (a connection of its own in UTC, or one set to the
session's zone), `check --against` in a process of its own, and the fingerprint of a UTC session."""

from __future__ import annotations

import datetime as dt
import json
import os

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from forked_cli import run_cli

import sqlclose
from sqlclose.engine import SparkEngine
from sqlclose.engine.base import FileRead
from sqlclose.prepare.problem import keyed_fingerprint

pytestmark = pytest.mark.spark

ZONE = "spark.sql.session.timeZone"
NEW_YORK = "America/New_York"
# Instants just after new year in UTC: still the old year in New York. Each twice, with two diseases.
INSTANTS = [dt.datetime(1980 + year, 1, 1, hour, tzinfo=dt.UTC) for year in (0, 1) for hour in (0, 3)]
DATED = {"privacy": {"k": 2}, "quasi_identifiers": {"ts": {"dates": ["year", "10y"]}},
         "sensitive": {"dis": {"distinct_l": 2}}}


@pytest.fixture(scope="module")
def stamped(tmp_path_factory):
    path = tmp_path_factory.mktemp("zone") / "ts.parquet"
    ts = [t for t in INSTANTS for _ in range(2)]
    pq.write_table(pa.table({"ts": pa.array(ts, pa.timestamp("us", tz="UTC")), "dis": ["flu", "cold"] * len(INSTANTS)}),
                   path)
    return path


def _session(spark_session, zone: str):
    session = spark_session.newSession()  # its own conf and temporary views, the same context
    session.conf.set(ZONE, zone)
    return session


def _duckdb_texts(path, zone: str) -> list[str]:
    """The instants' text as DuckDB writes them in ``zone``."""
    con = duckdb.connect()
    con.execute(f"SET TimeZone = '{zone}'")
    return [t for (t,) in con.execute("SELECT DISTINCT CAST(ts AS VARCHAR) AS t FROM read_parquet(?) ORDER BY t",
                                      [str(path)]).fetchall()]


def test_a_timestamp_released_as_it_is_from_a_new_york_session_checks_against_its_report(tmp_path, spark_session,
                                                                                          stamped):
    """The report listed '1979-12-31 19:00:00' (New York's wall time, no offset) where DuckDB lists
    '1980-01-01 00:00:00+00', and `check --against` of the untouched release exited 4. Now the
    labels are DuckDB's own (UTC) text, the check passes, and the session keeps its zone."""
    session = _session(spark_session, NEW_YORK)
    engine = SparkEngine(session)
    out = tmp_path / "r"
    try:
        with sqlclose.anonymize(str(stamped), DATED, engine=engine, node={"ts": 0}) as release:
            release.write(out)
    finally:
        engine.close()
    report = json.loads((tmp_path / "r.report.json").read_text())
    assert report["generalization"]["ts"]["labels"] == _duckdb_texts(stamped, "UTC")
    assert session.conf.get(ZONE) == NEW_YORK
    checked = run_cli(["check", out, "--against", tmp_path / "r.report.json"])
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize("zone", [NEW_YORK, "UTC", "Asia/Kolkata"])
def test_gaa_writes_an_instant_as_duckdb_writes_it_in_the_sessions_zone(tmp_path, spark_session, stamped, zone):
    """GAA writes a value's label as its text: Spark's, the session's wall time with no offset,
    '1979-12-31 19:00:00' from New York (read back in UTC: five hours off) and '1980-01-01 00:00:00'
    from UTC, where DuckDB writes '…+00'. Now the text is DuckDB's in the same zone, offset and all
    (its dates the session's, as a caller's DuckDB connection's are), and the release checks against
    its report."""
    engine = SparkEngine(_session(spark_session, zone))
    out = tmp_path / "r"
    try:
        with sqlclose.anonymize(str(stamped), {**DATED, "search": {"algorithm": "gaa"}}, engine=engine) as release:
            release.write(out)
    finally:
        engine.close()
    written = duckdb.sql(f"SELECT DISTINCT ts FROM read_parquet('{out}/**/*.parquet') ORDER BY ts").fetchall()
    assert [t for (t,) in written] == _duckdb_texts(stamped, zone)
    checked = run_cli(["check", out, "--against", tmp_path / "r.report.json"])
    assert checked.returncode == 0, checked.stderr


def test_the_input_fingerprint_is_the_same_in_any_sessions_zone(spark_session, stamped):
    """The keyed fingerprint hashed each row's JSON, whose instants Spark writes in the session's
    zone ('…T19:00:00.000000-05:00'): one file's fingerprint differed between a UTC and a New York
    session, so "up to date" followed the session. Oracle: a UTC session's fingerprint."""
    prints = {}
    for zone in ("UTC", NEW_YORK):
        session = _session(spark_session, zone)
        engine = SparkEngine(session)
        try:
            prints[zone] = keyed_fingerprint(engine, engine.source_relation(FileRead("parquet", stamped)), "k3y")
        finally:
            engine.close()
        assert session.conf.get(ZONE) == zone
    assert prints[NEW_YORK] == prints["UTC"]


# The hour repeated when New York's clocks go back: 05:30 and 06:30 UTC are both 01:30 there. Each
# twice, with two diseases, and an instant of another day.
REPEATED_HOUR = [dt.datetime(2020, 11, 1, 5, 30, tzinfo=dt.UTC), dt.datetime(2020, 11, 1, 6, 30, tzinfo=dt.UTC),
                 dt.datetime(2021, 3, 1, 12, tzinfo=dt.UTC)]


@pytest.fixture(scope="module")
def repeated_hour(tmp_path_factory):
    path = tmp_path_factory.mktemp("dst") / "ts.parquet"
    ts = [t for t in REPEATED_HOUR for _ in range(2)]
    pq.write_table(pa.table({"ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
                             "dis": ["flu", "cold"] * len(REPEATED_HOUR)}), path)
    return path


def _written(out, zone: str) -> list[tuple[str, int]]:
    """A release's instants as DuckDB writes them in ``zone``, with the rows holding each."""
    con = duckdb.connect()
    con.execute(f"SET TimeZone = '{zone}'")
    files = f"{out}/**/*.parquet" if out.is_dir() else str(out)
    return con.execute("SELECT CAST(ts AS VARCHAR) AS t, count(*) FROM read_parquet(?) GROUP BY t ORDER BY t",
                       [files]).fetchall()


@pytest.mark.parametrize("zone", [NEW_YORK, "UTC"])
@pytest.mark.parametrize("algorithm", ["gaa", "incognito"])
def test_two_instants_of_one_wall_time_stay_two_values_on_spark(tmp_path, spark_session, repeated_hour, zone,
                                                                   algorithm):
    """In a New York session 05:30Z and 06:30Z were one text to Spark ('2020-11-01 01:30:00'), and every
    pass keys a value by its text: GAA wrote the four rows as one class of that bare text where DuckDB
    writes '…01:30:00-04' and '…01:30:00-05', two of two; Incognito at level 0 judged them one class and
    its re-check of the file found three classes instead of two (exit 4). Oracle: DuckDB's release of
    the same file from a connection in the same zone, its rows and report labels; `check --against`
    of the Spark release in a process of its own, from a UTC and a New York zone."""
    spec = {**DATED, "search": {"algorithm": algorithm}} if algorithm == "gaa" else DATED
    node = None if algorithm == "gaa" else {"ts": 0}
    engine = SparkEngine(_session(spark_session, zone))
    out = tmp_path / "spark"
    try:
        with sqlclose.anonymize(str(repeated_hour), spec, engine=engine, node=node) as release:
            release.write(out)
    finally:
        engine.close()
    con = duckdb.connect()
    con.execute(f"SET TimeZone = '{zone}'")
    oracle = tmp_path / "duckdb.parquet"
    with sqlclose.anonymize(con.sql(f"SELECT * FROM read_parquet('{repeated_hour}')"), spec, node=node) as release:
        release.write(oracle)
    assert _written(out, zone) == _written(oracle, zone)
    assert len(_written(out, zone)) == 3  # two instants of one wall time, and another
    labels = [json.loads((tmp_path / f"{name}.report.json").read_text())["generalization"]["ts"]["labels"]
              for name in ("spark", "duckdb.parquet")]
    assert labels[0] == labels[1]
    for checking_zone in ("UTC", NEW_YORK):
        checked = run_cli(["check", out, "--against", tmp_path / "spark.report.json"],
                          env={**os.environ, "TZ": checking_zone})
        assert checked.returncode == 0, checked.stderr


def test_the_dates_rule_reads_an_instants_day_in_the_sessions_zone_on_spark(tmp_path, spark_session):
    """Spark's statements key an instant by its UTC text: the dates rule still reads its day in the
    session's zone, as DuckDB does in a connection of that zone. 1980-01-01 03:00 UTC is still 1979 in
    New York. Oracle: the year a hand reading gives (New York is five hours behind UTC in winter)."""
    path = tmp_path / "ts.parquet"
    instants = [dt.datetime(1980, 1, 1, 3, tzinfo=dt.UTC), dt.datetime(1980, 1, 1, 3, tzinfo=dt.UTC),
                dt.datetime(1980, 1, 1, 6, tzinfo=dt.UTC), dt.datetime(1980, 1, 1, 6, tzinfo=dt.UTC)]
    pq.write_table(pa.table({"ts": pa.array(instants, pa.timestamp("us", tz="UTC")),
                             "dis": ["flu", "cold"] * 2}), path)
    engine = SparkEngine(_session(spark_session, NEW_YORK))
    out = tmp_path / "r"
    try:
        with sqlclose.anonymize(str(path), DATED, engine=engine, node={"ts": 1}) as release:
            release.write(out)
    finally:
        engine.close()
    written = duckdb.sql(f"SELECT ts, count(*) FROM read_parquet('{out}/**/*.parquet') GROUP BY ts ORDER BY ts")
    assert written.fetchall() == [("1979", 2), ("1980", 2)]
