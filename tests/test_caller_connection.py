"""A caller's DuckDB connection given as ``(connection, table)`` or ``engine=DuckDBEngine(connection)``:
left as the caller had it (docs/engines.md: "a caller's connection, left as the caller set it"),
read in its session as far as names and dates go, and refused as bad input once closed (README)."""

from __future__ import annotations

import datetime as dt
import gc
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from forked_cli import run_cli

import sqlclose
from sqlclose.api import input_fingerprint
from sqlclose.engine import DuckDBEngine

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
CSV = TABLE3 / "table3.csv"
TABLE5 = {"zip": 1, "age": 2}  # the paper's Table 5: ZIP 4767*/4760*/4790*, age <40/>=40


def spec() -> dict:
    return {"privacy": {"k": 3},
            "quasi_identifiers": {"zip": {"mask": True, "length": 5}, "age": {"file": str(TABLE3 / "age.csv")}},
            "sensitive": {"salary": {"distance": "ordered", "t": 0.2},
                          "disease": {"distance": "hierarchical", "t": 0.3, "hierarchy": str(TABLE3 / "disease.csv")}}}


def people(*settings: str) -> duckdb.DuckDBPyConnection:
    """A caller's connection holding Table 3 as ``people``, with ``settings`` run on it."""
    con = duckdb.connect()
    con.execute("CREATE TABLE people AS SELECT * FROM read_csv(?)", [str(CSV)])
    for setting in settings:
        con.execute(setting)
    return con


# ---- a result the caller is still fetching ----------------------------------------------------------
def test_a_run_refuses_a_connection_holding_an_unfinished_result_and_leaves_the_result() -> None:
    """A run on a connection whose caller was streaming a result (``fetchmany`` in a loop) ran its own
    statements on that connection: the caller's next ``fetchmany`` gave [] as if every row had been
    read. sqlclose now runs on a cursor of its own; the caller's session (USE, search_path, TimeZone)
    cannot be read without ending that result, so the run is refused, saying what to do. The oracle:
    range(100)'s next two rows."""
    con = people()
    con.execute("SELECT * FROM range(100)")
    assert con.fetchmany(2) == [(0,), (1,)]
    with pytest.raises(sqlclose.InputError, match=r"unfinished result.*fetch that result to its end") as refused:
        sqlclose.anonymize((con, "people"), spec())
    assert con.fetchmany(2) == [(2,), (3,)]
    # DuckDB says the same of a connection another thread runs a statement on (one sqlclose run per
    # thread on one connection: 4 of 12 refused, told as an unfinished result; sixty-fourth round)
    assert "or another thread is running a statement on it" in str(refused.value)
    assert "a connection of its own (one per thread)" in str(refused.value)


def test_closing_a_release_leaves_a_result_the_caller_started_inside_its_block() -> None:
    """Closing the release dropped sqlclose's temporary tables by statements on the caller's
    connection, ending the result the caller had started streaming in the block. The oracle:
    range(100)'s next two rows after the block."""
    con = people()
    with sqlclose.anonymize((con, "people"), spec()) as release:
        assert release.to_arrow().num_rows == 9
        con.execute("SELECT * FROM range(100)")
        assert con.fetchmany(2) == [(0,), (1,)]
    assert con.fetchmany(2) == [(2,), (3,)]


def test_a_collected_release_leaves_a_result_the_caller_started() -> None:
    """A release never closed is dropped when Python collects it (its finalizer): that dropped its
    tables on the caller's connection too, ending the caller's result. The oracle: range(100)'s next
    two rows after the collection."""
    con = people()
    release = sqlclose.anonymize((con, "people"), spec())
    release.to_arrow()
    con.execute("SELECT * FROM range(100)")
    assert con.fetchmany(2) == [(0,), (1,)]
    del release
    gc.collect()
    assert con.fetchmany(2) == [(2,), (3,)]


def test_an_engine_made_while_the_caller_holds_a_result_reads_once_it_is_finished() -> None:
    """``DuckDBEngine(con)`` may be made while the caller holds an unfinished result (it needs none of
    the session then); a run on it reads the session when the run starts. The oracle: Table 5's node
    and nine rows once the caller fetched its result to the end."""
    con = people()
    con.execute("SELECT 1").fetchone()  # one row read, the result not yet finished
    engine = DuckDBEngine(con)
    assert con.fetchall() == []
    with sqlclose.anonymize(con.sql("SELECT * FROM people"), spec(), engine=engine) as release:
        assert release.node == TABLE5 and release.to_arrow().num_rows == 9
    engine.close()


# ---- the caller's session ---------------------------------------------------------------------------
def test_the_callers_use_and_time_zone_decide_what_its_table_and_dates_are() -> None:
    """Read through a cursor (a session of DuckDB's defaults), a name would mean main's table and a
    TIMESTAMPTZ would be dated in the cursor's zone: the caller's USE and TimeZone are followed, as
    before, when a run starts. The oracles: the 9 rows of other.hr.people (main.people, a decoy, has
    3), and 1990-01-01 00:00 UTC dated by hand in New York: 1989."""
    con = duckdb.connect()
    con.execute("ATTACH ':memory:' AS other")
    con.execute("CREATE SCHEMA other.hr")
    con.execute("CREATE TABLE other.hr.people AS SELECT * FROM read_csv(?)", [str(CSV)])
    con.execute("CREATE TABLE main.people AS SELECT * FROM other.hr.people LIMIT 3")
    con.execute("USE other.hr")
    with sqlclose.anonymize((con, "people"), spec()) as release:
        assert release.summary["rows"] == 9
    con.execute("USE memory.main")
    con.register("instants", pa.table({
        "ts": pa.array([dt.datetime(1990, 1, 1, h, tzinfo=dt.UTC) for h in range(4)], pa.timestamp("us", "UTC")),
        "d": ["x", "y"] * 2}))
    con.execute("CREATE TABLE stamped AS SELECT * FROM instants")
    con.execute("SET TimeZone = 'America/New_York'")
    dated = {"privacy": {"k": 2}, "quasi_identifiers": {"ts": {"dates": ["year", "5y"]}},
             "sensitive": {"d": {"distinct_l": 2}}}
    with sqlclose.anonymize((con, "stamped"), dated) as release:
        assert release.to_arrow().column("ts").to_pylist() == ["1989"] * 4
    assert con.execute("SELECT current_setting('TimeZone')").fetchall() == [("America/New_York",)]


def _stamped_in(zone: str, per_instant: int = 1) -> duckdb.DuckDBPyConnection:
    """A connection in ``zone`` holding ``stamped``: 1990-01-01 00:00–03:00 UTC (each instant
    ``per_instant`` times) and a sensitive ``d``."""
    con = duckdb.connect()
    con.execute(f"CREATE TABLE stamped AS SELECT TIMESTAMPTZ '1990-01-01 00:00:00+00' + INTERVAL (i // {per_instant}) "
                "HOUR AS ts, ['x', 'y'][1 + i % 2] AS d FROM range(4) r(i)")
    con.execute(f"SET TimeZone = '{zone}'")
    return con


DATED = {"privacy": {"k": 2}, "quasi_identifiers": {"ts": {"dates": ["year", "5y"]}},
         "sensitive": {"d": {"distinct_l": 2}}}


@pytest.mark.parametrize("engine", ["own", "spec"])
def test_a_relation_is_dated_in_the_session_that_made_it(engine) -> None:
    """Was: a relation (``con.sql(...)``) was streamed into an engine of sqlclose's own, in UTC, so
    the rows of ``(con, "stamped")`` gave 1989 from a New York session and 1990 as a relation of the
    same connection (review h5, eighty-fourth round). An engine sqlclose makes for a relation (its
    own, or the spec's [engine]) dates a TIMESTAMP WITH TIME ZONE as the relation's session does.
    The oracles: the caller's connection's own year of each instant (a plain query), and the
    connection's TimeZone as it was."""
    con = _stamped_in("America/New_York")
    expected = [str(y) for (y,) in con.execute("SELECT year(ts) FROM stamped").fetchall()]
    assert expected == ["1989"] * 4
    spec = DATED | ({"engine": {"threads": 1}} if engine == "spec" else {})
    with sqlclose.anonymize(con.sql("SELECT * FROM stamped"), spec) as release:
        assert release.to_arrow().column("ts").to_pylist() == expected
    with sqlclose.anonymize((con, "stamped"), spec) as release:
        assert release.to_arrow().column("ts").to_pylist() == expected
    assert con.execute("SELECT current_setting('TimeZone')").fetchall() == [("America/New_York",)]


def test_a_relation_and_a_given_engine_that_date_apart_are_refused() -> None:
    """A caller's engine in UTC given a New York session's relation holding a TIMESTAMP WITH TIME
    ZONE: its dates would follow the engine, so the run is refused, naming the column, both zones
    and the fixes; the engine is left in UTC. A relation holding none, or sessions alike, runs."""
    con = _stamped_in("America/New_York")
    engine = DuckDBEngine()
    with pytest.raises(sqlclose.errors.InputError, match=r"column 'ts' holds TIMESTAMP WITH TIME ZONE.*"
                                                         r"TimeZone 'America/New_York' against 'UTC'.*Give no engine"):
        sqlclose.anonymize(con.sql("SELECT * FROM stamped"), DATED, engine=engine)
    assert engine.dating()["TimeZone"] == "UTC"
    spec = {**DATED, "quasi_identifiers": {"h": {"bands": [2]}}}
    with sqlclose.anonymize(con.sql("SELECT hour(ts) AS h, d FROM stamped"), spec, engine=engine) as release:
        assert release.to_arrow().num_rows == 4
    con.execute("SET TimeZone = 'UTC'")
    with sqlclose.anonymize(con.sql("SELECT * FROM stamped"), DATED, engine=engine) as release:
        assert release.to_arrow().column("ts").to_pylist() == ["1990"] * 4
    engine.close()


@pytest.mark.parametrize("unreleased", ["identifier", "dropped"])
def test_a_given_engine_is_not_refused_for_a_zoned_column_the_release_leaves_out(unreleased) -> None:
    """Review h1 of the eighty-fifth round: a TIMESTAMP WITH TIME ZONE column the release never
    holds (an identifier, or dropped by others = "drop") cannot be dated apart: the run goes on."""
    con = _stamped_in("America/New_York")
    spec = {**DATED, "quasi_identifiers": {"h": {"bands": [2]}}}
    spec |= {"identifiers": ["ts"]} if unreleased == "identifier" else {"others": "drop"}
    engine = DuckDBEngine()
    with sqlclose.anonymize(con.sql("SELECT hour(ts) AS h, ts, d FROM stamped"), spec, engine=engine) as release:
        assert release.to_arrow().column_names == ["h", "d"]
    engine.close()


@pytest.mark.parametrize("gone", ["closed", "dropped"])
def test_a_relation_unreadable_is_bad_input_with_a_spec_engine(gone) -> None:
    """Review h1 of the eighty-fifth round: with a spec's [engine], a relation whose connection was
    closed (or whose table was dropped) raised DuckDB's own exception from the time-zone read; it is
    an InputError saying the relation cannot be read, as without [engine]."""
    con = _stamped_in("America/New_York")
    relation = con.sql("SELECT * FROM stamped")
    con.close() if gone == "closed" else con.execute("DROP TABLE stamped")
    for spec in (DATED, DATED | {"engine": {"threads": 1}}):
        with pytest.raises(sqlclose.errors.InputError, match="cannot read the DuckDB relation"):
            sqlclose.anonymize(relation, spec)


def test_a_table_only_the_callers_session_sees_is_read_from_it() -> None:
    """A cursor sees the connection's committed tables, not its temporary ones, nor a DataFrame it
    registered, nor what its open transaction made: those are streamed once from the caller's
    connection, as before they were read there. The oracle: Table 5's node and nine rows from each,
    and the caller's transaction still open afterwards (its ROLLBACK removes the table)."""
    con = duckdb.connect()
    con.execute("CREATE TEMPORARY TABLE temporary_people AS SELECT * FROM read_csv(?)", [str(CSV)])
    con.register("registered_people", con.table("temporary_people").to_arrow_table())
    con.execute("BEGIN")
    con.execute("CREATE TABLE uncommitted_people AS SELECT * FROM temporary_people")
    for name in ("temporary_people", "registered_people", "uncommitted_people"):
        with sqlclose.anonymize((con, name), spec()) as release:
            assert release.node == TABLE5 and release.to_arrow().num_rows == 9, name
    con.execute("ROLLBACK")
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'uncommitted_people'").fetchall() \
        == [(0,)]


# ---- the table's name -------------------------------------------------------------------------------

def _dotted_tables() -> duckdb.DuckDBPyConnection:
    """Table 3 as "a.b" (9 rows), a decoy b of schema a holding it twice (18), and in an attached
    database "p.q" of schema "s.x" holding its first 6 rows."""
    con = people()
    con.execute('CREATE TABLE "a.b" AS SELECT * FROM people')
    con.execute('CREATE SCHEMA a; CREATE TABLE a.b AS SELECT * FROM people UNION ALL SELECT * FROM people')
    con.execute("ATTACH ':memory:' AS other")
    con.execute('CREATE SCHEMA other."s.x"; CREATE TABLE other."s.x"."p.q" AS SELECT * FROM people LIMIT 6')
    return con


def test_a_connection_tables_name_holding_a_dot_is_read_by_its_quoted_name() -> None:
    """Review of the ninety-fourth round, left for the ninety-fifth: ``(con, '"a.b"')`` was split at
    every dot ('"a' and 'b"': "schema "a does not exist"), unlike ``[source] table`` and ``--table``.
    The name is split as they split it, a catalog still allowed before the schema (a connection may
    have databases attached), and a tuple of parts still taken as it is. The oracle: a plain DuckDB
    count of each table: "a.b" holds Table 3 (9 rows), the decoy b of schema a twice that (18), and
    the attached database's "p.q" of schema "s.x" its first 6 rows."""
    con = _dotted_tables()
    counted = {sql: con.execute(f"SELECT count(*) FROM {sql}").fetchall()[0][0]
               for sql in ('main."a.b"', "a.b", 'other."s.x"."p.q"')}
    assert counted == {'main."a.b"': 9, "a.b": 18, 'other."s.x"."p.q"': 6}
    loose = {"privacy": {"k": 2}, "quasi_identifiers": {"zip": {"mask": True, "length": 5}}, "others": "drop"}
    for name, sql in (('"a.b"', 'main."a.b"'), ('main."a.b"', 'main."a.b"'), ('memory.main."a.b"', 'main."a.b"'),
                      ("a.b", "a.b"), ('other."s.x"."p.q"', 'other."s.x"."p.q"'), (("main", "a.b"), 'main."a.b"'),
                      (("a", "b"), "a.b"), (("other", "s.x", "p.q"), 'other."s.x"."p.q"')):
        with sqlclose.anonymize((con, name), loose) as release:
            assert release.summary["rows"] == counted[sql], name
    quoting = 'a part holding a dot is written in double quotes, a quote inside doubled ("a.b", main."a.b", "a""b")'
    refused = {
        '"a.b': f"""cannot read table '"a.b' of the DuckDB connection: the name opens a double quote it does not """
                f"close: {quoting}",
        '"a.b"x': f"""cannot read table '"a.b"x' of the DuckDB connection: the name goes on after its quoted part """
                  f"""'"a.b"' with 'x', where a dot or the end belongs: {quoting}""",
        "a.b.c.d": """cannot read table 'a.b.c.d' of the DuckDB connection: name it "table", "schema.table" or """
                   f""""catalog.schema.table", no part empty; {quoting}; or give the parts as a tuple """
                   """("main", "a.b")""",
    }
    for name, said in refused.items():
        with pytest.raises(sqlclose.InputError) as e:
            sqlclose.anonymize((con, name), loose)
        assert str(e.value) == said, name
    con.close()


def test_spaces_around_a_connection_tables_quoted_part_are_no_part_of_its_name() -> None:
    """Review of the ninety-fifth round: ``(con, ' "a.b" ')`` was split inside the quotes (the part
    began with a space, not a quote), and DuckDB said 'schema " "a" does not exist', a name nobody
    wrote. As in SQL, spaces, tabs and line breaks before a part's opening quote and after its closing
    one are no part of the name; an unquoted part keeps its text as written ('main . "a.b"' names
    schema 'main ', which the connection lacks). The oracle: a plain DuckDB count of each table, the
    quoted name 9 rows, the decoy b of schema a 18, the attached "p.q" of schema "s.x" 6."""
    con = _dotted_tables()
    counted = {sql: con.execute(f"SELECT count(*) FROM {sql}").fetchall()[0][0]
               for sql in ('  "a.b"  ', "a.b", ' other .\t"s.x"\n. "p.q" ')}  # SQL spaces them so
    assert counted == {'  "a.b"  ': 9, "a.b": 18, ' other .\t"s.x"\n. "p.q" ': 6}
    loose = {"privacy": {"k": 2}, "quasi_identifiers": {"zip": {"mask": True, "length": 5}}, "others": "drop"}
    for name, sql in ((' "a.b" ', '  "a.b"  '), ('"main" . "a.b"', '  "a.b"  '), ('main.\t"a.b"\n', '  "a.b"  '),
                      (' "a".b', "a.b"), ('other.\t"s.x"\n. "p.q" ', ' other .\t"s.x"\n. "p.q" ')):
        with sqlclose.anonymize((con, name), loose) as release:
            assert release.summary["rows"] == counted[sql], name
    with pytest.raises(sqlclose.InputError, match=r'schema "main " does not exist'):
        sqlclose.anonymize((con, 'main . "a.b"'), loose)
    con.close()


# ---- a connection its caller closed -----------------------------------------------------------------
def test_a_release_whose_connection_the_caller_closed_is_bad_input(tmp_path) -> None:
    """README: "a closed connection is refused as bad input too". Closed after the run, the write
    raised DuckDB's raw ConnectionException and to_arrow an EngineError (exit 1, "a bug"). The
    oracles: InputError naming what happened, and no file at the output path."""
    con = people()
    with sqlclose.anonymize((con, "people"), spec()) as release:
        con.close()
        for action in (lambda: release.write(tmp_path / "out.parquet"), release.to_arrow):
            with pytest.raises(sqlclose.InputError, match="connection this release reads was closed by its caller"):
                action()
    assert list(tmp_path.iterdir()) == []


# ---- a relation of the engine's own connection ------------------------------------------------------
def test_a_relation_of_the_engines_own_connection_is_read() -> None:
    """``engine=DuckDBEngine(con)`` with ``con.sql(…)`` as the source: the relation's stream and
    sqlclose's statements ran on one connection, which DuckDB refused ("open result"), and the stream,
    left open (``unregister`` raised before ``close``) and held by the kept error, blocked the
    connection. Now the stream is read by sqlclose's cursor, and closed first whatever follows. The
    oracles: Table 5's node and nine rows, and the caller's next query (Table 3 has 9 rows)."""
    con = people()
    engine = DuckDBEngine(con)
    with sqlclose.anonymize(con.sql("SELECT * FROM people"), spec(), engine=engine) as release:
        assert release.node == TABLE5 and release.to_arrow().num_rows == 9
    assert con.execute("SELECT count(*) FROM people").fetchall() == [(9,)]
    engine.close()


# ---- the caller's settings --------------------------------------------------------------------------
def test_a_connection_with_lossless_arrow_conversion_releases_table_5() -> None:
    """``SET arrow_lossless_conversion = true`` (global: a cursor inherits it) made DuckDB hand a
    HUGEINT sum to Arrow as bytes, and ``int(size["rows"])`` crashed (ValueError). Our cursor sets it
    off for its own session. The oracles: Table 5's node and nine rows, and the caller's setting as
    the caller left it."""
    con = people("SET arrow_lossless_conversion = true")
    with sqlclose.anonymize((con, "people"), spec()) as release:
        assert release.node == TABLE5 and release.to_arrow().num_rows == 9
    assert con.execute("SELECT current_setting('arrow_lossless_conversion')").fetchall() == [(True,)]


def test_a_connection_with_a_file_search_path_writes_a_parquet_folder_release(tmp_path, monkeypatch) -> None:
    """DuckDB looks a relative path up in the session's ``file_search_path``: the written folder's
    relative temporary name was read back from the caller's search path (raw IOException). The
    oracle: Table 5's three ZIP classes of three rows, by a plain GROUP BY over the folder."""
    (tmp_path / "elsewhere").mkdir()
    con = people(f"SET file_search_path = '{tmp_path / 'elsewhere'}'")
    monkeypatch.chdir(tmp_path)
    with sqlclose.anonymize((con, "people"), spec()) as release:
        release.write_parquet_folder("released", partition_by=["zip"])
    counts = duckdb.sql(f"SELECT zip, count(*) FROM read_parquet('{tmp_path / 'released'}/**/*.parquet', "
                        "hive_partitioning = true) GROUP BY zip ORDER BY zip").fetchall()
    assert counts == [("4760*", 3), ("4767*", 3), ("4790*", 3)]


def _stamped_in_new_york() -> duckdb.DuckDBPyConnection:
    """A caller's connection in New York holding instants released as they are (others kept)."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT TIMESTAMPTZ '2020-01-01 02:30:00+00' + to_days(i % 3 * 40) AS ts, "
                "['00501', '00502', '00503'][i % 3 + 1] AS zip, ['flu', 'hiv', 'colitis'][i % 3 + 1] AS disease "
                "FROM range(60) r(i)")
    con.execute("SET TimeZone = 'America/New_York'")
    return con


STAMPED = {"privacy": {"k": 2}, "others": "keep", "quasi_identifiers": {"zip": {"mask": True, "length": 5}},
           "sensitive": {"disease": {"distance": "equal", "t": 0.9}}}


def test_a_table_outputs_digest_is_the_same_in_any_sessions_time_zone(tmp_path) -> None:
    """A DuckDB table output's digest hashes its rows' text, which gave a TIMESTAMPTZ in the caller's
    zone: `check --against` (run in UTC) then refused the untouched table as changed (exit 4). The
    oracle: the check's own digest of the table in a fresh process, and the digest of the same rows
    written from a relation (streamed through Arrow, in UTC)."""
    con = _stamped_in_new_york()
    digests = []
    for name, source in (("table", (con, "t")), ("relation", con.sql("SELECT * FROM t"))):
        out = tmp_path / f"{name}.duckdb"
        with sqlclose.anonymize(source, STAMPED) as release:
            digests.append(release.write(out, table="x")["output"]["content_digest"])
        checked = run_cli(["check", out, "--table", "x", "--against", f"{out}.x.report.json"])
        assert checked.returncode == 0, checked.stderr
    assert digests[0] == digests[1]
    assert con.execute("SELECT current_setting('TimeZone')").fetchall() == [("America/New_York",)]


def test_the_input_fingerprint_is_the_same_in_any_sessions_time_zone(tmp_path) -> None:
    """The keyed fingerprint hashes the rows' text: the same rows fingerprinted as the caller's table
    (in New York) and as a Parquet copy (UTC) differed, so a nightly job's "up to date" depended on
    the session. The oracle: the Parquet copy's fingerprint."""
    con = _stamped_in_new_york()
    copy = tmp_path / "t.parquet"
    con.execute("COPY t TO ? (FORMAT parquet)", [str(copy)])
    key = "a secret of the operator's"
    assert input_fingerprint((con, "t"), STAMPED, key) == input_fingerprint(str(copy), STAMPED, key)


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
@pytest.mark.parametrize("form", ["relation", "table"])
def test_a_timestamp_released_as_it_is_from_a_zoned_session_checks_against_its_report(tmp_path, form, suffix):
    """Review h1 of the eighty-fifth round: a TIMESTAMPTZ quasi-identifier released at level 0 from a
    New York session had its report list the values in that session's text ('1989-12-31 19:00:00-05'),
    and `sqlclose check --against`, whose session is UTC, refused the untouched release (exit 4). The
    report lists them as UTC writes them. Oracles: the labels DuckDB writes in a UTC session of its
    own, and the exit code of `check --against` in a process of its own."""
    import json

    con = _stamped_in("America/New_York", per_instant=2)
    source = con.sql("SELECT * FROM stamped") if form == "relation" else (con, "stamped")
    out = tmp_path / f"r.{suffix}"
    with sqlclose.anonymize(source, DATED, node={"ts": 0}) as release:
        release.write(out)
    utc = duckdb.connect()
    utc.execute("SET TimeZone = 'UTC'")
    instants = "SELECT TIMESTAMPTZ '1990-01-01 00:00:00+00' + INTERVAL (i) HOUR AS ts FROM range(2) r(i)"
    expected = [t for (t,) in utc.execute(f"SELECT CAST(ts AS VARCHAR) AS t FROM ({instants}) ORDER BY t").fetchall()]
    report = json.loads((tmp_path / f"r.{suffix}.report.json").read_text())
    assert report["generalization"]["ts"]["labels"] == expected
    checked = run_cli(["check", out, "--against", tmp_path / f"r.{suffix}.report.json"])
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize("form", ["attached", "opened", "pair"])
def test_a_release_is_never_written_over_the_database_its_relation_reads(tmp_path, form) -> None:
    """Review h2 of the eighty-fifth round: a relation over a database (attached read-only, or a
    read-only connection on the file) names no file in its SQL, and its release written to that
    database's table with overwrite replaced the input (300 rows of 9 ages became the release's).
    Every database file of the source's connection is an input. Oracles: the refusal, and the
    table as it was (its rows and distinct ages by a plain query)."""
    path = tmp_path / "src.duckdb"
    made = duckdb.connect(str(path))
    made.execute("CREATE TABLE people AS SELECT * FROM read_csv(?)", [str(CSV)])
    before = made.execute("SELECT count(*), count(DISTINCT age) FROM people").fetchall()
    made.close()
    if form == "opened":
        con = duckdb.connect(str(path), read_only=True)
        source = con.sql("SELECT * FROM people")
    else:
        con = duckdb.connect()
        con.execute(f"ATTACH '{path}' AS s (READ_ONLY)")
        source = con.table("s.people") if form == "attached" else (con, "s.people")
    with sqlclose.anonymize(source, spec()) as release:
        with pytest.raises(sqlclose.errors.OutputExistsError, match="this job reads"):
            release.write(path, table="people", overwrite=True)
    con.close()
    after = duckdb.connect(str(path), read_only=True)
    assert after.execute("SELECT count(*), count(DISTINCT age) FROM people").fetchall() == before


UNSTREAMED = {"UHUGEINT": "340282366920938463463374607431768211455::UHUGEINT",
              "HUGEINT": "170141183460469231731687303715884105727::HUGEINT",
              "TIMETZ": "'10:00:00+05'::TIMETZ", "BIT": "'0101'::BIT",
              "nested": "{'x': ['0101'::BIT]}"}


@pytest.mark.parametrize("kind", list(UNSTREAMED))
@pytest.mark.parametrize("form", ["relation", "temporary table"])
def test_a_type_arrow_does_not_carry_is_refused_before_it_is_streamed(kind, form) -> None:
    """Review h2 of the eighty-fifth round: a relation (or a caller's temporary table, which only
    its session sees) is streamed into sqlclose's DuckDB through Arrow, which carries a UHUGEINT as
    a DECIMAL(38, 0) (2^128 - 1 came back as -1), a HUGEINT as a DECIMAL that cannot hold its 39th
    digit, a TIMETZ without its offset and a BIT as inner bytes: the release held other values and
    passed its re-check. Refused naming the column and the cast; the cast given releases the
    value's text, as DuckDB writes it (the oracle: a plain query of the caller's connection)."""
    con = duckdb.connect()
    rows = f"SELECT {UNSTREAMED[kind]} AS v, 20 + i AS age, ['x', 'y'][1 + i % 2] AS d FROM range(4) r(i)"
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"age": {"bands": [10]}}, "sensitive": {"d": {"distinct_l": 2}},
            "others": "keep"}
    if form == "relation":
        source = con.sql(rows)
    else:
        con.execute(f"CREATE TEMPORARY TABLE held AS {rows}")
        source = (con, "held")
    with pytest.raises(sqlclose.errors.InputError, match=r"column 'v' of .* holds .*cast it .*CAST\(v AS VARCHAR\)"):
        sqlclose.anonymize(source, spec)
    expected = con.execute(f"SELECT CAST(v AS VARCHAR) FROM ({rows})").fetchall()[0][0]
    cast = con.sql(f"SELECT CAST(v AS VARCHAR) AS v, age, d FROM ({rows})")
    with sqlclose.anonymize(cast, spec) as release:
        assert set(release.to_arrow().column("v").to_pylist()) == {expected}


@pytest.mark.parametrize(("algorithm", "settings"), [("incognito", ("Asia/Tokyo", "islamic")),
                                                     ("gaa", ("America/New_York", "gregorian"))])
def test_a_zoned_timestamp_checks_against_its_report_on_another_calendar_and_under_gaa(tmp_path, algorithm,
                                                                                      settings) -> None:
    """Review h3 of the eighty-fifth round: the report's UTC labels were read back from the
    session's text, which an islamic session writes as 1410-06-04 (read on the Gregorian calendar:
    the report said 1410); and GAA, which writes every label as the session's text, with a NULL's
    stand-in among them, failed to cast 'NULL'. Oracle: `check --against` in a process of its own."""
    zone, calendar = settings
    con = duckdb.connect()
    con.execute("CREATE TABLE stamped AS SELECT CASE WHEN i % 5 = 0 THEN NULL ELSE TIMESTAMPTZ "
                "'1990-01-01 03:00:00+00' + INTERVAL (i % 2) HOUR END AS ts, ['x', 'y'][1 + (i // 2) % 2] AS d "
                "FROM range(40) r(i)")
    con.execute(f"SET TimeZone = '{zone}'")
    con.execute(f"SET Calendar = '{calendar}'")
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"ts": {"dates": ["year"], "nulls": "value"}},
            "sensitive": {"d": {"distinct_l": 2}}, "search": {"algorithm": algorithm}}
    out = tmp_path / "r.parquet"
    with sqlclose.anonymize(con.sql("SELECT * FROM stamped"), spec, node={"ts": 0} if algorithm != "gaa" else None) \
            as release:
        release.write(out)
    checked = run_cli(["check", out, "--against", tmp_path / "r.parquet.report.json"])
    assert checked.returncode == 0, checked.stderr


def test_a_relation_summing_into_a_hugeint_is_read_when_its_values_fit() -> None:
    """Review h3 of the eighty-fifth round: SUM gives a HUGEINT, and every such relation was refused;
    Arrow carries a HUGEINT or UHUGEINT of up to 38 digits as a DECIMAL(38, 0) holding the same
    number. Only a value past 38 digits is refused. Oracle: the caller's connection's own sums."""
    con = duckdb.connect()
    con.execute("CREATE TABLE costs AS SELECT 20 + i % 4 AS age, ['x', 'y'][1 + i % 2] AS d, i * 1000 AS cost "
                "FROM range(40) r(i)")
    rows = "SELECT age, d, SUM(cost) AS total FROM costs GROUP BY age, d, cost % 3"
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"age": {"bands": [10]}}, "sensitive": {"d": {"distinct_l": 2}},
            "others": "keep"}
    expected = sorted(str(t) for (t,) in con.execute(f"SELECT total FROM ({rows})").fetchall())
    with sqlclose.anonymize(con.sql(rows), spec) as release:
        assert sorted(str(t) for t in release.to_arrow().column("total").to_pylist()) == expected
