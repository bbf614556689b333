"""The hierarchy builders users expect: dates (day → month → year → 5-year band → *) and ZIP
masking, generated from the column's distinct values. Expected labels come from DuckDB's own
date functions and string slicing over the same file (an independent computation), the CLI's
``hierarchy show`` prints them, and a release with both is re-checked from the written file."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import sqlclose
from sqlclose.api import hierarchy_of
from sqlclose.cli import main
from sqlclose.errors import SpecError
from sqlclose.model.dates import dates_hierarchy


@pytest.fixture(scope="module")
def people(tmp_path_factory) -> Path:
    """300 rows: a DATE of birth, a 5-digit ZIP (text), a sensitive column; fixed by hand-made
    arithmetic so the file is the same on every run."""
    folder = tmp_path_factory.mktemp("people")
    start = dt.date(1950, 1, 1)
    dob = [start + dt.timedelta(days=(i * 7919) % 20_000) for i in range(300)]
    zips = [f"{(i * 7) % 13 + 40:02d}{(i * 31) % 7}{(i * 17) % 10}{i % 3}" for i in range(300)]
    illness = [["flu", "cold", "ulcer"][(i * 5) % 3] for i in range(300)]
    pq.write_table(pa.table({"dob": dob, "zip": zips, "illness": illness}), folder / "people.parquet")
    return folder


def _spec(folder: Path, dates) -> dict:
    return {"others": "keep", "source": {"path": str(folder / "people.parquet")},
            "output": {"path": str(folder / "out" / "r.parquet"), "overwrite": True},
            "privacy": {"k": 3, "suppression": 0.0},
            "quasi_identifiers": {"dob": {"dates": dates}, "zip": {"mask": True}},
            "sensitive": {"illness": {"t": 0.5, "distance": "equal"}}}


def _sql_rows(folder: Path, query: str) -> list[tuple]:
    with duckdb.connect() as con:
        return con.execute(query.replace("FILE", f"read_parquet('{folder / 'people.parquet'}')")).fetchall()


def test_dates_rule_labels_each_day_as_sql_would(people):
    h = hierarchy_of(_spec(people, True), "dob")
    expected = _sql_rows(people, """
        SELECT DISTINCT CAST(dob AS VARCHAR), strftime(dob, '%Y-%m'), CAST(year(dob) AS VARCHAR),
               CAST(year(dob) // 5 * 5 AS VARCHAR) || '-' || CAST(year(dob) // 5 * 5 + 4 AS VARCHAR), '*'
        FROM FILE""")
    assert h.levels == 5
    assert sorted(h.rows) == sorted(expected)


def test_dates_rule_with_named_levels(people):
    h = hierarchy_of(_spec(people, ["quarter", "year", "10y"]), "dob")
    expected = _sql_rows(people, """
        SELECT DISTINCT CAST(dob AS VARCHAR), CAST(year(dob) AS VARCHAR) || '-Q' || CAST(quarter(dob) AS VARCHAR),
               CAST(year(dob) AS VARCHAR),
               CAST(year(dob) // 10 * 10 AS VARCHAR) || '-' || CAST(year(dob) // 10 * 10 + 9 AS VARCHAR), '*'
        FROM FILE""")
    assert sorted(h.rows) == sorted(expected)


def test_zip_mask_is_the_zip_builder(people):
    h = hierarchy_of(_spec(people, True), "zip")
    expected = _sql_rows(people, """
        SELECT DISTINCT zip, left(zip, 4) || '*', left(zip, 3) || '**', left(zip, 2) || '***', left(zip, 1) || '****',
               '*****' FROM FILE""")
    assert h.levels == 6
    assert sorted(h.rows) == sorted(expected)


@pytest.mark.parametrize(("levels", "message"), [
    (["year", "month"], "must grow and nest"),
    (["5y", "12y"], "must grow and nest"),
    (["week"], "unknown dates level 'week'"),
    ([], "must not be empty"),
])
def test_bad_dates_levels_are_refused_by_the_spec(people, levels, message):
    with pytest.raises((SpecError, ValueError), match=message):
        sqlclose.Spec.model_validate(_spec(people, levels))


def test_dates_rule_on_a_column_that_is_not_dates(people):
    spec = _spec(people, True)
    spec["quasi_identifiers"] = {"dob": {"mask": True}, "zip": {"dates": True}}
    with pytest.raises(sqlclose.HierarchyError, match="'zip'.*is not a date"):
        hierarchy_of(spec, "zip")


def test_hierarchy_show_prints_the_dates_rule(people, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(f'others = "keep"\n[source]\npath = "{people / "people.parquet"}"\n[privacy]\nk = 3\n'
                    '[quasi_identifiers]\ndob = { dates = ["month", "year"] }\nzip = { mask = true }\n')
    result = CliRunner().invoke(main, ["hierarchy", "show", f"{spec}:dob", "--limit", "0"])
    assert result.exit_code == 0, result.output
    first = min(_sql_rows(people, "SELECT DISTINCT CAST(dob AS VARCHAR) FROM FILE"))[0]
    line = next(ln for ln in result.output.splitlines() if ln.strip().startswith(first))
    assert line.split() == [first, first[:7], first[:4], "*"]


def test_release_with_dates_and_zip_rules_rechecks_from_the_file(people):
    with sqlclose.anonymize(None, _spec(people, True)) as release:
        release.write_parquet(people / "out" / "r.parquet")  # re-checked from the file before it is placed
    # Every class of the written file has at least k rows (plain SQL over the file).
    with duckdb.connect() as con:
        smallest = con.execute("SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM read_parquet(?) GROUP BY dob, zip)",
                               [str(people / "out" / "r.parquet")]).fetchone()[0]
    assert smallest >= 3
    report = json.loads((people / "out" / "r.parquet.report.json").read_text())
    assert set(report["node"]) == {"dob", "zip"}


def test_a_timestamp_with_time_zone_is_dated_in_utc_on_every_machine(tmp_path):
    """A TIMESTAMPTZ's year depends on the session's time zone: 1990-01-01 00:00 UTC is still 1989 in
    New York. Every run reads it in UTC, whatever the machine's zone. The oracle: the UTC years of the
    instants, by hand (all 1990), and the same bytes under three TZ settings."""
    pq.write_table(pa.table({
        "id": list(range(8)),
        "ts": pa.array([dt.datetime(1990, 1, 1, h, tzinfo=dt.UTC) for h in range(8)], pa.timestamp("us", "UTC")),
        "d": ["x", "y"] * 4}), tmp_path / "tz.parquet")
    (tmp_path / "tz.toml").write_text('identifiers = ["id"]\n[source]\npath = "tz.parquet"\n[privacy]\nk = 2\n'
                                      '[quasi_identifiers]\nts = { dates = ["year", "5y"] }\n'
                                      '[sensitive.d]\ndistinct_l = 2\n')
    digests = set()
    for zone in ("UTC", "America/New_York", "Asia/Tokyo"):
        out = tmp_path / f"{zone.replace('/', '_')}.parquet"
        result = subprocess.run([sys.executable, "-m", "sqlclose.cli", "anonymize", str(tmp_path / "tz.toml"),
                                 "-o", str(out), "-q"], capture_output=True, text=True, env={**os.environ, "TZ": zone})
        assert result.returncode == 0, result.stderr
        assert pq.read_table(out).column("ts").to_pylist() == ["1990"] * 8, zone
        digests.add(hashlib.sha256(out.read_bytes()).hexdigest())
    assert len(digests) == 1


def test_a_date_before_year_1_is_refused(tmp_path):
    """DuckDB writes 44 BC as '0044-03-15 (BC)': read as AD 44 it would share AD 44's labels."""
    pq.write_table(pa.table({"dob": pa.array(["0044-03-15 (BC)", "2001-01-01"] * 2), "d": ["x", "y"] * 2}),
                   tmp_path / "bc.parquet")
    source = duckdb.sql(f"SELECT CAST(dob AS DATE) AS dob, d FROM read_parquet('{tmp_path / 'bc.parquet'}')")
    spec = {"privacy": {"k": 2}, "quasi_identifiers": {"dob": {"dates": ["year", "5y"]}},
            "sensitive": {"d": {"distinct_l": 2}}}
    with pytest.raises(sqlclose.HierarchyError, match="'0044-03-15 \\(BC\\)' is before year 1"):
        sqlclose.anonymize(source, spec)


def _dates_source(values: list[str]) -> duckdb.DuckDBPyRelation:
    """A text column ``dob`` holding each value twice, beside a sensitive column with two values."""
    rows = ", ".join(f"({v!r}, '{s}')" for v in values for s in "xy")
    return duckdb.sql(f"SELECT * FROM (VALUES {rows}) t(dob, d)")


_DATES_SPEC = {"privacy": {"k": 2}, "quasi_identifiers": {"dob": {"dates": ["month", "year"]}},
               "sensitive": {"d": {"distinct_l": 2}}}


@pytest.mark.parametrize("text", ["2024-W22", "2024-W22-6", "20240601", "2024-05-31 is not a date",
                                  "2024-05-31 10:00 junk", "٢٠٢٤-05-31"])
def test_text_that_is_not_yyyy_mm_dd_is_refused_by_the_dates_rule(text):
    """docs/spec.md: the dates rule takes ISO text (YYYY-MM-DD…), 'another value stops with the column
    and the value'. Python's date.fromisoformat also reads an ISO week ('2024-W22', 27 May to 2 June,
    was released as 2024-05, its Monday's month), the basic form '20240601', and only the first ten
    characters were read ('2024-05-31 is not a date' was a day). The oracle: the spec's wording."""
    with pytest.raises(sqlclose.HierarchyError) as refused:
        sqlclose.anonymize(_dates_source([text, "2024-05-27"]), _DATES_SPEC)
    message = str(refused.value)
    assert "column 'dob'" in message and f"{text!r} is not a date" in message and "[source] query" in message


@pytest.mark.parametrize("text", ["2024-05-17", "2024-05-17 08:30:00", "2024-05-17 08:30:00.5+00",
                                  "2024-05-17T08:30Z", "2024-05-17 08:30:00+05:53:28",
                                  "2024-05-17 08:30:00.000 UTC", "2024-05-17 08:30:00.000 +0000"])
def test_a_day_followed_by_a_time_as_engines_print_it_is_dated(text):
    """A day and a time of day, as DuckDB (a TIMESTAMPTZ in a zone with seconds in its old offset),
    Trino and Snowflake print them, or as ISO text: labelled by its day (worked by hand: 2024-05, 2024)."""
    h = dates_hierarchy([text], ["month", "year"])
    assert h.rows == ((text, "2024-05", "2024", "*"),)
