"""The report's keyed input fingerprint on DuckDB (``digests.keyed_fingerprint``, ninety-eighth
round): HMAC-SHA256 under the operator's key of the rows' typed digest, where each row was cast to text
and MD5-hashed (4.3 s a million rows of sixteen columns; the nightly "up to date" check paid it). The
oracles: the digest as a plain DuckDB query written here, Python's HMAC, the Arrow types written by
hand; and two tables that differ in one value (or only in how one instant is written)."""

from __future__ import annotations

import hashlib
import hmac
import json
import re

import duckdb
import pytest

import sqlclose
from sqlclose.api import input_fingerprint

KEY = "the operator's secret"
SPEC = {"privacy": {"k": 2}, "others": "keep", "quasi_identifiers": {"i": {"bands": [2]}}}


def _every_kind() -> duckdb.DuckDBPyConnection:
    """A caller's connection in New York holding a column of each kind the digest reads its own way."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i, i / 2 - 1.5 AS f, ['a', 'B'][i % 2 + 1] COLLATE NOCASE AS s, "
                "to_hours(i) AS iv, [i, NULL] AS l, {'at': TIMESTAMPTZ '2020-01-01 03:00:00+00' + to_days(i)} AS n, "
                "TIMESTAMPTZ '2020-01-01 03:00:00+00' + to_hours(i) AS ts, DATE '2020-01-01' + i::INT AS d, "
                "i::DECIMAL(9, 2) AS m FROM range(6) r(i)")
    con.execute("SET TimeZone = 'America/New_York'")
    return con


def test_the_fingerprint_is_an_hmac_of_the_rows_typed_digest() -> None:
    """Each row's HASH of the key and its values (a float with its sign, text, intervals and nested
    values by their UTC text byte for byte), summed, then the columns' names and Arrow types: the
    fingerprint is the first 32 hex digits of HMAC-SHA256(key, that)."""
    con = _every_kind()
    published = input_fingerprint((con, "t"), SPEC, KEY)
    con.execute("SET TimeZone = 'UTC'")
    binary = ' COLLATE "binary"'
    total = con.execute(f"SELECT CAST(SUM(HASH($1, i, f, SIGNBIT(f), CAST(s AS VARCHAR){binary}, "
                        f"CAST(iv AS VARCHAR){binary}, CAST(l AS VARCHAR){binary}, CAST(n AS VARCHAR){binary}, "
                        "ts, d, m)) AS VARCHAR) FROM t", [KEY]).fetchone()[0]
    columns = [["i", "int64"], ["f", "double"], ["s", "string"], ["iv", "month_day_nano_interval"],
               ["l", "list<l: int64>"], ["n", "struct<at: timestamp[us, tz]>"], ["ts", "timestamp[us, tz]"],
               ["d", "date32[day]"], ["m", "decimal128(9, 2)"]]
    digest = f"{total}:{json.dumps(columns)}"
    assert published == hmac.new(KEY.encode(), digest.encode(), hashlib.sha256).hexdigest()[:32]


def test_the_report_names_the_typed_kind_and_the_fingerprint_the_nightly_check_recomputes(tmp_path) -> None:
    """The report's fingerprint is the one ``input_fingerprint`` (the "up to date" check) gives, of
    the new kind and shape: 32 hex digits, where a text (v2) fingerprint is digits, a colon, then hex,
    so the two kinds never match each other."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i FROM range(8) r(i)")
    doc = sqlclose.anonymize((con, "t"), SPEC, fingerprint_key=KEY).write_parquet(tmp_path / "r.parquet")
    assert doc["input"]["fingerprint_kind"] == "keyed-hmac-typed-v3"
    assert re.fullmatch("[0-9a-f]{32}", doc["input"]["fingerprint"])
    assert doc["input"]["fingerprint"] == input_fingerprint((con, "t"), SPEC, KEY)


@pytest.mark.parametrize(("kind", "before", "after"), [
    ("INTEGER", "1", "2"),
    ("DOUBLE", "0.0", "'-0.0'::DOUBLE"),  # equal, and HASH alike (a literal -0.0 is 0.0)
    ("VARCHAR COLLATE NOCASE", "'a'", "'A'"),  # equal under the collation
    ("VARCHAR", "NULL", "'NULL'"),
    ("INTERVAL", "INTERVAL 1 DAY", "INTERVAL 24 HOUR"),  # equal
    ("INTEGER[]", "[1, 2]", "[2, 1]"),
    ("STRUCT(a DOUBLE)", "{'a': 0.0}", "{'a': '-0.0'::DOUBLE}"),
    ("TIMESTAMPTZ", "TIMESTAMPTZ '2020-01-01 00:00:00+00'", "TIMESTAMPTZ '2020-01-01 00:00:01+00'"),
])
def test_one_value_changed_in_a_column_of_any_kind_changes_the_fingerprint(kind, before, after) -> None:
    """A release re-run over an input with one value changed must not be told "up to date"."""
    prints = set()
    for value in (before, after):
        con = duckdb.connect()
        con.execute(f"CREATE TABLE t (i INTEGER, v {kind})")
        con.execute(f"INSERT INTO t VALUES (0, {value}), (1, {before}), (2, NULL)")
        prints.add(input_fingerprint((con, "t"), SPEC, KEY))
    assert len(prints) == 2


def test_one_instant_written_at_another_offset_or_read_in_another_zone_keeps_the_fingerprint() -> None:
    """The same instants, given at another offset, read from a New York session, alone or in a struct
    (whose text the zone writes), are the same rows: one fingerprint."""
    prints = set()
    for written, zone in (("2020-01-01 00:00:00-05", "UTC"), ("2020-01-01 05:00:00+00", "America/New_York")):
        con = duckdb.connect()
        con.execute(f"CREATE TABLE t AS SELECT i, TIMESTAMPTZ '{written}' + to_days(i) AS ts, "
                    f"{{'at': TIMESTAMPTZ '{written}' + to_days(i)}} AS n FROM range(4) r(i)")
        con.execute(f"SET TimeZone = '{zone}'")
        prints.add(input_fingerprint((con, "t"), SPEC, KEY))
    assert len(prints) == 1


def test_values_exchanged_between_rows_change_the_fingerprint() -> None:
    """The sum runs over rows, each row's hash over all its columns: (1, 2), (3, 4) and (1, 4), (3, 2)
    hold the same values per column, in other rows."""
    prints = set()
    for rows in ("(1, 2), (3, 4)", "(1, 4), (3, 2)"):
        con = duckdb.connect()
        con.execute(f"CREATE TABLE t AS SELECT * FROM (VALUES {rows}) v(i, j)")
        prints.add(input_fingerprint((con, "t"), SPEC, KEY))
    assert len(prints) == 2
