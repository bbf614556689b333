"""Arrow instants and days past what DuckDB holds (sqlclose/prepare/arrow_instants.py), and the
process's shared database after DuckDB invalidates it (sqlclose/engine/duckdb_database.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sqlclose
from sqlclose.errors import InputError

SPEC = {"privacy": {"k": 2}, "quasi_identifiers": {"age": {"bands": [10]}}, "sensitive": {"d": {"distinct_l": 2}},
        "others": "keep"}
# Per case: the column, with one value DuckDB cannot hold as it is beside an ordinary one.
PAST = {
    "seconds": pa.array([0, 9_300_000_000_000, 0, 0], pa.timestamp("s")),  # year 296,000: an internal error
    "milliseconds in a zone": pa.array([0, 2**62, 0, 0], pa.timestamp("ms", tz="UTC")),
    "microseconds at the end": pa.array([0, 2**63 - 1, 0, 0], pa.timestamp("us")),  # read as infinity
    "nanoseconds at the start": pa.array([0, -(2**63) + 1, 0, 0], pa.timestamp("ns")),
    "days at the end": pa.array([0, 2**31 - 1, 0, 0], pa.date32()),
    "date64": pa.array([0, 2**62 // 86_400_000 * 86_400_000, 0, 0], pa.date64()),  # whole days, as Arrow wants
    "duration of seconds": pa.array([0, 2**62, 0, 0], pa.duration("s")),
    "nested": pa.ListArray.from_arrays([0, 1, 2, 2, 3], pa.array([0, 9_300_000_000_000, 0], pa.timestamp("s"))),
}


def _rows(column: pa.Array) -> pa.Table:
    return pa.table({"age": [20, 21, 30, 31], "d": ["x", "y", "x", "y"], "seen": column})


@pytest.mark.parametrize("case", list(PAST))
def test_an_instant_past_the_engines_range_is_refused_by_column(case):
    """DuckDB 2.0.1 read a timestamp('s') of year 296,000 with an internal error (its C++ stack in the
    message, exit 1) and invalidated the process's database; the very ends of its range it read as
    infinity, a value no row holds, released and verified. Refused by column, no value shown; the
    same rows with the value NULL are released, their instants as Arrow holds them (the oracle)."""
    column = PAST[case]
    with pytest.raises(InputError, match=r"column 'seen' \(.*\) holds a date, time or duration past what the engine "
                                         r"holds"):
        sqlclose.anonymize(_rows(column), SPEC)
    fixed = pc.if_else(pa.array([True, False, True, True]), column, pa.nulls(4, column.type))
    with sqlclose.anonymize(_rows(fixed), SPEC) as release:
        written = release.to_arrow().column("seen")
    if pa.types.is_duration(column.type):  # released as an INTERVAL: compared as microseconds
        as_micros = [None if v is None else v.nanoseconds // 1000 for v in written.to_pylist()]
        assert sorted(as_micros, key=repr) == sorted(
            [None if v is None else v * 1_000_000 for v in fixed.cast(pa.int64()).to_pylist()], key=repr)
        return
    assert sorted(map(repr, written.to_pylist())) == sorted(map(repr, fixed.to_pylist()))


def test_instants_at_the_edge_of_the_range_are_read():
    """The last microsecond DuckDB holds (294247-01-10) and its first second (290309 BC) are read."""
    column = pa.array([-9_223_372_022_400_000_000, 9_223_372_036_854_775_806, 0, 0], pa.timestamp("us"))
    with sqlclose.anonymize(_rows(column), SPEC) as release:
        written = release.to_arrow().column("seen").cast(pa.int64()).to_pylist()
    assert sorted(written) == sorted(column.cast(pa.int64()).to_pylist())


def test_a_database_duckdb_invalidated_is_made_anew():
    """After DuckDB's fatal error on the process's shared database, every later job of the process
    failed with "database has been invalidated". The next engine makes a new one. In a process of
    its own (the test's other engines share this one's database)."""
    script = textwrap.dedent("""
        import pyarrow as pa, sqlclose
        from sqlclose.engine import duckdb_database
        con = duckdb_database.shared_connection()
        con.register("x", pa.table({"v": pa.array([9_300_000_000_000], pa.timestamp("s"))}))
        try:
            con.sql("SELECT CAST(v AS VARCHAR) FROM x").fetchall()
        except Exception as e:
            print(type(e).__name__)
        rows = pa.table({"age": [20, 21, 30, 31], "d": ["x", "y", "x", "y"]})
        spec = {"privacy": {"k": 2}, "quasi_identifiers": {"age": {"bands": [10]}},
                "sensitive": {"d": {"distinct_l": 2}}}
        with sqlclose.anonymize(rows, spec) as release:
            print(release.to_arrow().num_rows)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["InternalException", "4"]


@pytest.mark.parametrize("statistics", [True, False], ids=["statistics", "no statistics"])
@pytest.mark.parametrize("case", ["milliseconds in a zone", "days at the end", "nested"])
def test_a_parquet_file_past_the_engines_range_is_refused_by_column(tmp_path, case, statistics):
    """Review h2 of the eighty-fifth round: a Parquet source whose timestamp('ms') column held 2**62
    failed DuckDB's read as "a value could not be converted", naming no column (exit 1); a DATE at
    the range's end was read as infinity. The file's statistics tell, before the read: exit 2,
    naming the file and the column. A file written without statistics failed the same way until
    the eighty-sixth round: its row groups' columns are read in Arrow instead."""
    import pyarrow.parquet as pq
    from forked_cli import run_cli

    pq.write_table(_rows(PAST[case]), tmp_path / "in.parquet", write_statistics=statistics)
    assert (pq.read_metadata(tmp_path / "in.parquet").row_group(0).column(2).statistics is not None) == statistics
    result = run_cli(["check", tmp_path / "in.parquet", "--qi", "age", "--k", "2"])
    assert result.returncode == 2, result.stderr
    assert f"cannot read {tmp_path / 'in.parquet'}: column 'seen' holds a date or time past what the engine holds" \
        in result.stderr


def test_a_parquet_file_without_statistics_within_the_range_is_read(tmp_path):
    """The control: the same file with ordinary instants, no statistics, is read and checked."""
    import pyarrow.parquet as pq
    from forked_cli import run_cli

    seen = pa.array([0, 2**40, -(2**40), None], pa.timestamp("ms"))
    pq.write_table(_rows(seen), tmp_path / "in.parquet", write_statistics=False)
    result = run_cli(["check", tmp_path / "in.parquet", "--qi", "age", "--k", "2"])
    assert result.returncode == 3 and "k: 4 classes (4 records) fail" in result.stdout, result.stderr  # classes of 1


def test_every_file_of_a_parquet_folder_is_judged_by_its_own_statistics(tmp_path):
    """Review h3 of the eighty-fifth round: files of one footer were judged once, by the first: a
    second file holding a millisecond timestamp of 2**62 failed the read naming no file or column."""
    import pyarrow.parquet as pq
    from forked_cli import run_cli

    folder = tmp_path / "rows"
    folder.mkdir()
    pq.write_table(_rows(pa.array([0, 1, 2, 3], pa.timestamp("ms"))), folder / "a.parquet")
    pq.write_table(_rows(pa.array([0, 2**62, 0, 0], pa.timestamp("ms"))), folder / "b.parquet")
    result = run_cli(["check", folder, "--qi", "age", "--k", "2"])
    assert result.returncode == 2, result.stderr
    assert f"cannot read {folder / 'b.parquet'}: column 'seen' holds a date or time past" in result.stderr
