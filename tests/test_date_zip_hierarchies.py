"""The hierarchy builders users expect: dates (day → month → year → 5-year band → *) and ZIP
masking, generated from the column's distinct values. Expected labels come from DuckDB's own
date functions and string slicing over the same file (an independent computation), the CLI's
``hierarchy show`` prints them, and a release with both is re-checked from the written file."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import zoneinfo
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import sqlclose
from sqlclose.api import hierarchy_of
from sqlclose.cli import main
from sqlclose.errors import HierarchyError, SpecError
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
    with pytest.raises(sqlclose.HierarchyError, match="'zip'.*that are not dates"):
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
    with pytest.raises(sqlclose.HierarchyError, match=r"column 'dob' in .*: the column holds 1 value \(in 2 "
                                                      r"rows\) before year 1") as refused:
        sqlclose.anonymize(source, spec)
    assert "0044" not in str(refused.value)


def _dates_source(values: list[str]) -> duckdb.DuckDBPyRelation:
    """A text column ``dob`` holding each value twice, beside a sensitive column with two values."""
    rows = ", ".join(f"({v!r}, '{s}')" for v in values for s in "xy")
    return duckdb.sql(f"SELECT * FROM (VALUES {rows}) t(dob, d)")


_DATES_SPEC = {"privacy": {"k": 2}, "quasi_identifiers": {"dob": {"dates": ["month", "year"]}},
               "sensitive": {"d": {"distinct_l": 2}}}


@pytest.mark.parametrize("text", ["2024-W22", "2024-W22-6", "20240601", "2024-05-31 is not a date",
                                  "2024-05-31 10:00 junk", "2024-05-31 10 junk", "٢٠٢٤-05-31"])
def test_text_that_is_not_yyyy_mm_dd_is_refused_by_the_dates_rule(text):
    """docs/spec.md: the dates rule takes ISO text (YYYY-MM-DD…), 'another value stops with the column
    and the value'. Python's date.fromisoformat also reads an ISO week ('2024-W22', 27 May to 2 June,
    was released as 2024-05, its Monday's month), the basic form '20240601', and only the first ten
    characters were read ('2024-05-31 is not a date' was a day). The oracle: the spec's wording, and
    the value held twice (so 1 value in 2 rows), never shown."""
    with pytest.raises(sqlclose.HierarchyError) as refused:
        sqlclose.anonymize(_dates_source([text, "2024-05-27"]), _DATES_SPEC)
    message = str(refused.value)
    assert "column 'dob'" in message and "1 value (in 2 rows) that is not a date" in message
    # a relation takes no [source] query: the conversion is said in its own query (ninety-seventh round)
    assert "convert the column in the relation first (e.g. SELECT * REPLACE (" in message and text not in message


@pytest.mark.parametrize("text", ["2024-05-17", "2024-05-17 08:30:00", "2024-05-17 08:30:00.5+00",
                                  "2024-05-17T08:30Z", "2024-05-17 08:30:00+05:53:28",
                                  "2024-05-17 08:30:00.000 UTC", "2024-05-17 08:30:00.000 +0000",
                                  "2024-05-17 08:30:00.000 America/New_York", "2024-05-17T08:30+23:59",
                                  "2024-05-17 08:30:00-0330", "2024-05-17 08:30:00.000 Etc/GMT+5"])
def test_a_day_followed_by_a_time_as_engines_print_it_is_dated(text):
    """A day and a time of day, as DuckDB (a TIMESTAMPTZ in a zone with seconds in its old offset),
    Trino and Snowflake print them, or as ISO text: labelled by its day (worked by hand: 2024-05, 2024)."""
    h = dates_hierarchy([text], ["month", "year"])
    assert h.rows == ((text, "2024-05", "2024", "*"),)


@pytest.mark.parametrize("text", ["2024-05-17T08:30+25:00", "2024-05-17T08:30+24", "2024-05-17T08:30-05:60",
                                  "2024-05-17T08:30+05:3000", "2024-05-17 08:30 Not/AZone",
                                  "2024-05-17 08:30 Europe/Narnia", "2024-05-17 08:30 america/new_york"])
def test_a_time_with_an_impossible_offset_or_an_unknown_zone_is_no_date(text):
    """Review of the ninety-sixth round: an offset took any two digits ('+25:00') and a zone any
    Word/Word ('Not/AZone'), so such text was labelled by its day, while docs/spec.md says text
    after a day that is no time of day stops the job. RFC 3339's offsets run to ±23:59 (hours
    00–23, minutes 00–59); a zone is named as the IANA time zone database names it. The oracle:
    RFC 3339's grammar, the IANA names as Python's zoneinfo lists them (by case), and the value held
    twice, so 1 value in 2 rows, never shown."""
    assert text.rsplit(" ", 1)[-1] not in zoneinfo.available_timezones()
    with pytest.raises(sqlclose.HierarchyError) as refused:
        sqlclose.anonymize(_dates_source([text, "2024-05-27"]), _DATES_SPEC)
    message = str(refused.value)
    assert "column 'dob'" in message and "1 value (in 2 rows) that is not a date" in message, message
    assert text not in message


@pytest.mark.parametrize("text", ["2024-05-17 08:30:00,5", "2024-05-17T08", "2024-05-17t08:30:00",
                                  "2024-05-17T08:30:00z", "2024-05-17 08+02:00"])
def test_an_iso_day_with_any_iso_time_of_day_is_read_as_its_day(text):
    """The strict dates text refused ISO 8601 / RFC 3339 times of day that docs/spec.md covers ("a day
    YYYY-MM-DD, alone or followed by a time of day") and that were read before: a comma before the
    fraction (ISO's own), an hour alone, RFC 3339's lower-case t and z. The oracle: Python's own ISO
    reader, datetime.fromisoformat, gives each its day."""
    oracle = dt.datetime.fromisoformat(text.replace("z", "Z")).date()
    h = dates_hierarchy([text], ["month", "year"])
    assert h.rows == ((text, f"{oracle.year:04d}-{oracle.month:02d}", f"{oracle.year:04d}", "*"),)


@pytest.mark.parametrize(("cast", "domain"), [("", None), ("::TIMESTAMPTZ", ["0001-01-01", "2025-12-31"])])
def test_a_timestamp_before_year_1_is_refused_as_a_date_is(cast, domain):
    """DuckDB writes 44 BC at 10:00 as '0044-03-15 (BC) 10:00:00', the marker before the time: only a
    text ending in '(BC)' was caught, and the first ten characters read as AD 44, so 44 BC and AD 44
    were released in one class '0044-03', and passed a domain declared from year 1. The oracle: 44 BC
    is in no year the rule labels (1 to 9999), as a DATE before year 1 is refused."""
    values = [f"(make_timestamp({y}, 3, {d}, 10, 0, 0){cast}, '{s}')"
              for y, d, s in [(-43, 15, "x"), (-43, 20, "y"), (44, 15, "x"), (44, 16, "y")]]
    source = duckdb.sql(f"SELECT * FROM (VALUES {', '.join(values)}) t(dob, d)")
    spec = {**_DATES_SPEC, "quasi_identifiers": {"dob": {"dates": ["month", "year"], "domain": domain}}}
    with pytest.raises(sqlclose.HierarchyError, match=r"column 'dob' in .*: the column holds 2 values \(in 2 "
                                                      r"rows\) before year 1; the dates rule labels years 1 to "
                                                      "9999") as refused:
        sqlclose.anonymize(source, spec)
    assert "0044" not in str(refused.value)


def test_a_bc_day_as_postgres_spark_and_trino_write_it_is_before_year_1():
    """Postgres writes a day before year 1 as '0044-03-15 BC' (its timestamps '… 10:00:00+00 BC'),
    Spark and Trino with the astronomical year '-0043-03-15', year 0 is 1 BC: each was read as an AD year
    or refused as no date. The oracle: the engines' documented spellings of 44 BC."""
    for text in ["0044-03-15 BC", "0044-03-15 10:00:00+00 BC", "-0043-03-15", "0000-12-31"]:
        with pytest.raises(sqlclose.HierarchyError, match=r"holds 1 value before year 1") as refused:
            dates_hierarchy([text, "0044-03-16"])
        assert text not in str(refused.value)


def test_a_postgres_bc_day_in_a_warehouse_histogram_is_refused(tmp_path):
    """The warehouse path: the histogram casts the column to VARCHAR, and Postgres writes 44 BC as
    '0044-03-15 BC'. It was labelled 0044-03 beside AD 44 in release.sql's lookup, exit 0. Now exit 2
    naming the column, and no release.sql (the file system's state)."""
    (tmp_path / "spec.toml").write_text(
        '[source]\nformat = "warehouse"\ntable = "people"\ndialect = "postgres"\n[output]\npath = "out/release.sql"\n'
        "[privacy]\nk = 2\n[quasi_identifiers]\nd = { dates = true }\n[sensitive.s]\ndistinct_l = 2\n")
    (tmp_path / "hist.csv").write_text("d,s,__sqlclose_count\n0044-03-15 BC,x,1\n0044-03-20 BC,y,1\n"
                                       "0044-03-15,x,1\n0044-03-16,y,1\n")
    result = CliRunner().invoke(main, ["anonymize", "--histogram", str(tmp_path / "hist.csv"),
                                       str(tmp_path / "spec.toml"), "--node", "d=1"])
    assert result.exit_code == 2, result.output
    assert "column 'd'" in result.output and "2 values (in 2 rows) before year 1" in result.output
    assert "BC" not in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("select", ["make_date(10000, 1, 1)", "make_timestamp(10000, 1, 1, 0, 0, 0)",
                                    "'+10000-01-01'", f"'{'9' * 5000}-01-01'"])
def test_a_day_after_9999_is_told_so_not_said_to_be_no_date(select):
    """A DATE column's 10000-01-01 was told "is not a date (YYYY-MM-DD…); the dates rule needs DATE or
    TIMESTAMP values", though it is one. The oracle: the rule's limit, years 1 to 9999, as the message
    for a day before year 1 states it (Spark writes the year as '+10000'; a 5000-digit year too)."""
    day = "'2024-01-01'" if select.startswith("'") else "make_date(2024, 1, 1)"
    source = duckdb.sql(f"SELECT * FROM (VALUES ({select}, 'x'), ({select}, 'y'), ({day}, 'x'), ({day}, 'y')) "
                        "t(dob, d)")
    with pytest.raises(sqlclose.HierarchyError) as refused:
        sqlclose.anonymize(source, _DATES_SPEC)
    message = str(refused.value)
    assert "column 'dob'" in message and "1 value (in 2 rows) after year 9999; the dates rule labels years 1 " \
        "to 9999" in message and "10000" not in message and "99999" not in message
    assert "not a date" not in message


def _dated_by_hand(values: list[str], levels: list[str]) -> tuple[list[list[str]], list[list[int]]]:
    """The reference: each value's labels from its year and month read off its text (month, quarter,
    year, a band of N years from the multiple of N at or below, ending at 9999 at the latest), then
    '*'; per level a dict numbering the labels as they first appear."""
    def label(year: int, month: int, level: str) -> str:
        if level == "month":
            return f"{year:04d}-{month:02d}"
        if level == "quarter":
            return f"{year:04d}-Q{(month + 2) // 3}"
        if level == "year":
            return f"{year:04d}"
        width = int(level.rstrip("y"))
        return f"{year - year % width:04d}-{min(year - year % width + width - 1, 9999):04d}"  # years 1 to 9999
    rows = [[v, *(label(int(v[:4]), int(v[5:7]), level) for level in levels), "*"] for v in values]
    labels, codes = [], []
    for level in range(len(levels) + 2):
        numbered: dict[str, int] = {}
        codes.append([numbered.setdefault(row[level], len(numbered)) for row in rows])
        labels.append(list(numbered))
    return labels, codes


@pytest.mark.parametrize("seed", range(10))
def test_the_dates_rule_numbers_labels_as_a_plain_dict_loop_does(seed):
    """The dates rule reads plain days (``YYYY-MM-DD``) by NumPy and builds its levels by month
    without validating its rows again (fifty-second round). Oracle: labels read off each value's
    text and numbered by a dict loop written here, over random days (with times of day on odd
    seeds: the one-by-one reading) and random levels."""
    rng = random.Random(seed)
    days = dict.fromkeys(dt.date(1, 1, 1) + dt.timedelta(days=rng.randrange(3_652_058)) if seed % 3 == 0 else
                         dt.date(1900, 1, 1) + dt.timedelta(days=rng.randrange(40_000)) for _ in range(500))
    values = [f"{d.year:04d}-{d.month:02d}-{d.day:02d}" + (" 08:30:00" if seed % 2 else "") for d in days]
    levels = [["month", "year", "5y"], ["quarter", "10y"], ["year", "100y"],
              ["month", "quarter", "year", "3y"]][seed % 4]
    labels, codes = _dated_by_hand(values, levels)
    h = dates_hierarchy(values, levels)
    assert [h.labels(level) for level in range(h.levels)] == labels
    assert h.level_codes.T.tolist() == codes
    assert list(h.rows) == [tuple(labels[level][codes[level][i]] for level in range(h.levels))
                            for i in range(len(values))]


@pytest.mark.parametrize(("values", "domain", "message"), [
    (["2024-01-31", "2023-02-29", "2024-13-01"], None, r"d: the column holds 2 values that are not dates"),
    (["2024-01-31", "0000-03-01"], None, r"d: the column holds 1 value before year 1"),
    (["2024-01-31", "1899-12-31", "1800-01-01"], (dt.date(1900, 1, 1), dt.date(2030, 12, 31)),
     r"d: the column holds 2 values outside the declared domain 1900-01-01 to 2030-12-31"),
    (["2024-01-31", "2024-01-30", "2024-01-31"], None, r"leaf '2024-01-31' appears twice \(also d, row 1\)"),
])
def test_the_dates_rule_refuses_bad_plain_days_as_before(values, domain, message):
    """Plain days read by NumPy are refused as the one-by-one reading refuses them: the values of
    the first reason counted, none shown (the oracle: the values picked out by hand)."""
    with pytest.raises(HierarchyError, match=message):
        dates_hierarchy(values, None, "d", domain)


_UNLABELLED = {  # per case: the dob values beside valid days, the spec's dates rule, and the reason told
    "not a date": (["SECRET-4711", "SECRET-4711", "SECRET-4711", "1984/05/17"], {"dates": ["month", "year"]},
                   "that are not dates"),
    "before year 1": (["-0043-03-15", "-0043-03-15"], {"dates": ["month", "year"]}, "before year 1"),
    "after year 9999": (["+47114-01-01"], {"dates": ["month", "year"]}, "after year 9999"),
    "outside the domain": (["1947-11-04", "1947-11-04", "1911-01-01"],
                           {"dates": ["month", "year"], "domain": ["1950-01-01", "2025-12-31"]},
                           "outside the declared domain 1950-01-01 to 2025-12-31"),
}
# per case: the distinct bad values and the rows holding them, as the error counts them, by hand
_UNLABELLED_COUNTED = {"not a date": "2 values (in 4 rows)", "before year 1": "1 value (in 2 rows)",
                       "after year 9999": "1 value (in 1 row)", "outside the domain": "2 values (in 3 rows)"}


def _unlabelled_source(tmp_path: Path, bad: list[str]) -> Path:
    """A CSV whose dob holds ``bad`` (one row each) and four valid days, with a sensitive column."""
    rows = [*bad, "2024-05-01", "2024-05-02", "2024-05-03", "2024-05-04"]
    source = tmp_path / "people.csv"
    source.write_text("dob,d\n" + "".join(f"{v},{'xy'[i % 2]}\n" for i, v in enumerate(rows)), encoding="utf-8")
    return source


@pytest.mark.parametrize(("engine", "case"), [
    *(("duckdb", case) for case in sorted(_UNLABELLED)),
    # one Spark job per reason the engine's text can give; the rest is engine-free Python
    *(pytest.param("spark", case, marks=pytest.mark.spark) for case in ("before year 1", "not a date")),
])
def test_the_dates_rule_names_no_value_it_cannot_label(tmp_path, capfd, request, engine, case):
    """The dates rule's errors quoted the value it could not label (``value 'SECRET-4711' is not a
    date``), on stderr and in job logs, a suppressed row's as much as any: docs/bad-input.md's rule
    is the column, the file and the line or row count, never the value. The oracle: the counts of
    the bad values and their rows, worked by hand from the CSV written here (the first reason
    found: each case has one), the file's path, and no bad value anywhere in the error or output."""
    bad, rule, reason = _UNLABELLED[case]
    source = _unlabelled_source(tmp_path, bad)
    spec = {"source": {"path": str(source)}, "privacy": {"k": 2}, "quasi_identifiers": {"dob": rule},
            "sensitive": {"d": {"distinct_l": 2}}}
    on = None
    if engine == "spark":
        from sqlclose.engine import SparkEngine

        on = SparkEngine(request.getfixturevalue("spark_session"))
    capfd.readouterr()
    with pytest.raises(sqlclose.HierarchyError) as refused:
        sqlclose.anonymize(None, spec, engine=on)
    message = str(refused.value)
    counted = _UNLABELLED_COUNTED[case]
    assert f"column 'dob' in {source}: the column holds {counted} {reason}" in message
    out, err = capfd.readouterr()
    for value in set(bad):
        assert value.lstrip("+-") not in message + out + err


_CONVERT_HINT = r"\(e\.g\. (.+) for days written 20240517\)"


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def test_the_dates_rules_fix_hint_is_written_in_the_sql_of_the_engine_in_use(tmp_path, request, engine):
    """The dates rule's error advised converting the column in a [source] query with DuckDB's
    ``strptime(v, '%Y%m%d')::DATE`` on every engine: on Spark a query the user cannot run (Spark
    has no strptime, no ``::``). Now the hint is rendered by sqlglot in the engine's dialect, over
    the column's own (quoted) name. The oracle: the engine itself runs the hint over the text
    '20240517' and gives the day 2024-05-17, and the DuckDB-only spellings are absent on Spark."""
    source = _unlabelled_source(tmp_path, ["20240517", "20240518"])
    spec = {"source": {"path": str(source)}, "privacy": {"k": 2},
            "quasi_identifiers": {"dob": {"dates": ["month", "year"]}}, "sensitive": {"d": {"distinct_l": 2}}}
    on = None
    if engine == "spark":
        from sqlclose.engine import SparkEngine

        on = SparkEngine(request.getfixturevalue("spark_session"))
    with pytest.raises(sqlclose.HierarchyError) as refused:
        sqlclose.anonymize(None, spec, engine=on)
    message = str(refused.value)
    assert "2 values (in 2 rows) that are not dates" in message and "[source] query" in message
    hint = re.search(_CONVERT_HINT, message).group(1)
    check = f"SELECT {hint} AS day FROM (SELECT '20240517' AS dob) AS t"
    if engine == "spark":
        assert "strptime" not in hint.lower() and "::" not in hint, hint
        day = request.getfixturevalue("spark_session").sql(check).first()["day"]
    else:
        day = duckdb.sql(check).fetchall()[0][0]
    assert day == dt.date(2024, 5, 17), hint


def test_the_dates_rules_fix_hint_on_the_warehouse_path_is_in_the_warehouses_dialect(tmp_path):
    """On the warehouse path the [source] query is the warehouse's: the hint follows the spec's
    ``dialect = "postgres"``, Postgres' ``TO_DATE("d", 'YYYYMMDD')`` (written by hand from Postgres'
    documentation of TO_DATE and its template patterns)."""
    (tmp_path / "spec.toml").write_text(
        '[source]\nformat = "warehouse"\ntable = "people"\ndialect = "postgres"\n[output]\npath = "out/release.sql"\n'
        "[privacy]\nk = 2\n[quasi_identifiers]\nd = { dates = true }\n[sensitive.s]\ndistinct_l = 2\n")
    (tmp_path / "hist.csv").write_text("d,s,__sqlclose_count\n20240517,x,1\n20240518,y,1\n2024-05-17,x,1\n"
                                       "2024-05-18,y,1\n")
    result = CliRunner().invoke(main, ["anonymize", "--histogram", str(tmp_path / "hist.csv"),
                                       str(tmp_path / "spec.toml"), "--node", "d=1"])
    assert result.exit_code == 2, result.output
    assert re.search(_CONVERT_HINT, " ".join(result.output.split())).group(1) == "TO_DATE(\"d\", 'YYYYMMDD')"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("column_type", ["INTEGER", "BIGINT", "DECIMAL(8, 0)", "DECIMAL(10, 2)", "DOUBLE"])
def test_the_dates_rules_fix_hint_runs_on_a_number_column_of_yyyymmdd(tmp_path, column_type):
    """Review of the ninety-sixth round: over an INTEGER column of days written 20240517 the hint was
    ``CAST(STRPTIME("dob", '%Y%m%d') AS DATE)``, which DuckDB refuses (no strptime(INTEGER)). The
    hint now reads the column's digits as text, as the type needs. The oracle: DuckDB runs the hint
    over the test's own column and gives the days written by hand."""
    source = tmp_path / "days.parquet"
    duckdb.sql(f"SELECT CAST(v AS {column_type}) AS dob, s FROM (VALUES (20240517, 'x'), (20240517, 'y'), "
               f"(19991231, 'x'), (19991231, 'y')) t(v, s)").write_parquet(str(source))
    spec = {"source": {"path": str(source)}, "privacy": {"k": 2}, "quasi_identifiers": {"dob": {"dates": True}},
            "sensitive": {"s": {"distinct_l": 2}}}
    with pytest.raises(sqlclose.HierarchyError) as refused:
        sqlclose.anonymize(None, spec)
    message = str(refused.value)
    assert "2 values (in 4 rows) that are not dates" in message, message
    hint = re.search(_CONVERT_HINT, message).group(1)
    days = duckdb.sql(f"SELECT DISTINCT {hint} AS day FROM read_parquet('{source}') ORDER BY day").fetchall()
    assert days == [(dt.date(1999, 12, 31),), (dt.date(2024, 5, 17),)], hint


def test_a_time_column_under_the_dates_rule_is_told_it_holds_no_day(tmp_path):
    """Review of the ninety-sixth round: a TIME column under the dates rule was advised to convert its
    values with ``STRPTIME(…, '%Y%m%d')``, which fits no time of day. A TIME has no day, so it cannot
    be a dates quasi-identifier: said so, with no conversion to a day suggested. The oracle: the
    count by hand (2 times of day, 4 rows)."""
    source = tmp_path / "times.parquet"
    duckdb.sql("SELECT CAST(v AS TIME) AS t, s FROM (VALUES ('08:30:00', 'x'), ('08:30:00', 'y'), "
               "('17:00:00', 'x'), ('17:00:00', 'y')) v(v, s)").write_parquet(str(source))
    spec = {"source": {"path": str(source)}, "privacy": {"k": 2}, "quasi_identifiers": {"t": {"dates": True}},
            "sensitive": {"s": {"distinct_l": 2}}}
    with pytest.raises(sqlclose.HierarchyError) as refused:
        sqlclose.anonymize(None, spec)
    message = str(refused.value)
    assert ("the column holds 2 values (in 4 rows) that are not dates: the column is a TIME, a time of day with no "
            "day, and the dates rule labels days: a TIME column cannot be a dates quasi-identifier") in message, \
        message
    assert "STRPTIME" not in message.upper() and "08:30" not in message and "17:00" not in message


def test_the_last_band_of_years_ends_at_9999_not_past_it():
    """Polish round, item 6: a band of years that does not divide 10000 (``7y``) labelled a date in
    9999 "9996-10002", five digits, where the rule labels years 1 to 9999. By hand: 9999 // 7 * 7 =
    9996, so the band is 9996-9999; 14y: 9996 too (9996 = 714 × 14), 9996-9999; 2023 // 7 * 7 = 2023."""
    h = dates_hierarchy(["9999-12-31", "9997-01-01", "2023-06-15"], ["year", "7y", "14y"])
    assert h.rows == (("9999-12-31", "9999", "9996-9999", "9996-9999", "*"),
                      ("9997-01-01", "9997", "9996-9999", "9996-9999", "*"),
                      ("2023-06-15", "2023", "2023-2029", "2016-2029", "*"))
