"""The Spark engine reads, orders, fingerprints and writes as DuckDB does (review of the sixty-fourth
round; marked ``spark``).

Oracles: the rows Python's ``csv`` module reads from the test's own file, the sha256 of files
written from two orders of one table, pyarrow's reading of the written footers, and the file
system's state."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlclose
from sqlclose.errors import InputError
from sqlclose.prepare.problem import keyed_fingerprint

pytestmark = pytest.mark.spark

SPEC = {"others": "keep", "privacy": {"k": 2}, "quasi_identifiers": {"sex": {"tree": {"*": ["M", "F"]}}},
        "sensitive": {"dis": {"distinct_l": 1}}}
ROWS = [("M", "flu", "n0"), ("F", "cold", "a \"quoted\" note"), ("M", "x", "line\nbreak"), ("F", "cold", "ünï"),
        ("M", "flu", "last,\nfield"), ("F", "x", "plain")]


def _released(source, spark, spec=SPEC) -> list[tuple]:
    with sqlclose.anonymize(source, spec, engine=spark) as release:
        table = release.to_arrow()
    return sorted(zip(*(table.column(c).to_pylist() for c in table.column_names)))


def _csv_file(path: Path, encoding: str) -> Path:
    with path.open("w", encoding=encoding, newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([("sex", "dis", "note"), *ROWS])
    return path


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-16-le", "latin-1"])
def test_a_csvs_quoted_line_breaks_and_encodings_are_read_as_written(tmp_path, spark, encoding):
    """Read line by line, Spark cut a quoted field holding a line break into a row of its own: a
    person who is not in the file, released and verified (its last field "flu\\"" when the field
    was the last; "more or fewer fields than the header" else). UTF-16 failed the same way, and
    latin-1 was a name Spark 4 refuses. UTF-16 little-endian without its byte-order mark ("utf-16-le",
    declared "utf-16", as docs/spec.md takes it) was read by Java's "UTF-16", big-endian without a
    mark: "has no rows" (ninety-fifth round). The oracle: Python's csv module reading the same file."""
    path = _csv_file(tmp_path / "p.csv", encoding)
    with path.open(encoding=encoding, newline="") as f:
        want = sorted((dis, note) for _, dis, note in list(csv.reader(f))[1:])
    declared = "utf-16" if encoding == "utf-16-le" else encoding
    got = _released(path, spark, {**SPEC, "source": {"path": str(path), "encoding": declared}})
    assert sorted((dis, note) for _, dis, note in got) == want and len(want) == len(ROWS)


def test_a_csv_that_is_not_in_its_declared_encoding_is_refused(tmp_path, spark):
    """Spark's reader puts U+FFFD for bytes the encoding does not decode: a latin-1 file read as
    UTF-8 released 'M\\ufffdnchen' for both München and Mönchen, a value no row holds. DuckDB stops.
    Now Spark stops too, counting the rows, showing none."""
    path = _csv_file(tmp_path / "p.csv", "latin-1")
    with pytest.raises(InputError) as refused:
        _released(path, spark, {**SPEC, "source": {"path": str(path)}})
    message = str(refused.value)
    assert "1 row holds bytes that are not utf-8 text" in message and "encoding" in message
    assert "ünï" not in message and "n\ufffd" not in message


def test_the_input_fingerprint_tells_a_microsecond_apart(tmp_path, spark):
    """The keyed fingerprint hashed each row's JSON, whose timestamps Spark writes to the
    millisecond: 5 µs added to one row left it as it was, and a stale release was "up to date".
    The oracle: two tables unlike in one value must not share a fingerprint."""
    fingerprints = []
    for micro in (1000, 1005):
        path = tmp_path / f"t{micro}.parquet"
        seen = [dt.datetime(2020, 1, 1, 0, 0, 0, micro, tzinfo=dt.UTC), dt.datetime(2021, 1, 1)]
        pq.write_table(pa.table({"sex": ["M", "F"], "seen": pa.array(seen, pa.timestamp("us", tz="UTC"))}), path)
        view = spark.source_relation(sqlclose.engine.base.FileRead("parquet", path))
        fingerprints.append(keyed_fingerprint(spark, view, "k"))
    assert fingerprints[0] != fingerprints[1]


def test_rows_tied_but_for_a_map_are_ordered_by_its_content(tmp_path, spark):
    """A map cast to text wrote {'x': 'y, z -> w'} and {'x': 'y', 'z': 'w'} both as
    "{x -> y, z -> w}": the two rows tied and kept the input's order in the file. The oracle: the
    sha256 of the part files written from the table and from its reverse."""
    maps = [[("x", "y, z -> w")], [("k", "v")], [("x", "y"), ("z", "w")], [("k", "v")]]
    rows = list(zip(["M", "F", "M", "F"], ["flu", "cold", "flu", "cold"], maps))
    digests = []
    for order in (rows, rows[::-1]):
        path = tmp_path / f"m{len(digests)}.parquet"
        pq.write_table(pa.table({"sex": [r[0] for r in order], "dis": [r[1] for r in order],
                                 "m": pa.array([r[2] for r in order], pa.map_(pa.string(), pa.string()))}), path)
        out = tmp_path / f"out{len(digests)}"
        with sqlclose.anonymize(path, SPEC, engine=spark) as release:
            release.write_parquet_folder(out)
        digests.append([hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(out.glob("*.parquet"))])
    assert digests[0] == digests[1]


def test_the_reports_fingerprint_on_spark_stays_the_text_kind(tmp_path, spark):
    """DuckDB's fingerprint became an HMAC of a typed digest (ninety-eighth round); Spark's stays the
    sum of each row's keyed MD5 of its JSON, and the report says so. Oracle: the kind's documented
    shape, digits, a colon, then hex (a typed one is 32 hex digits alone: the two never match)."""
    path = _csv_file(tmp_path / "p.csv", "utf-8")
    with sqlclose.anonymize(path, {**SPEC, "source": {"path": str(path)}}, engine=spark,
                            fingerprint_key="k") as release:
        doc = release.write_parquet_folder(tmp_path / "out")
    assert doc["input"]["fingerprint_kind"] == "keyed-md5-sum-v2"
    assert re.fullmatch(r"\d+:[0-9a-f]{32}", doc["input"]["fingerprint"]), doc["input"]["fingerprint"]


@pytest.fixture(scope="module")
def csv_release(spark_session, tmp_path_factory):
    """The release of the test's CSV (UTF-8) on Spark, open for the module: each name of the
    pattern-named folders writes it (one search and release, not one per name: ~1.2 s each)."""
    from sqlclose.engine import SparkEngine

    path = _csv_file(tmp_path_factory.mktemp("csv") / "p.csv", "utf-8")
    engine = SparkEngine(spark_session)
    try:
        with sqlclose.anonymize(path, {**SPEC, "source": {"path": str(path)}}, engine=engine) as release:
            yield release
    finally:
        engine.close()


@pytest.mark.parametrize("name", ["r[1]", "q{a,b}", "st*r", "back\\slash"])
def test_an_output_folder_named_with_pattern_characters_is_written(tmp_path, csv_release, name):
    """Spark's writer was handed the name escaped for its reader (r\\[1\\]): it wrote a folder
    named with the backslashes, the job failed looking for the other, and the whole release was
    left on disk beside the output. The oracle: the folder's files read back by pyarrow."""
    out = tmp_path / "w" / name
    out.parent.mkdir()
    assert csv_release.write_parquet_folder(out)["verified"] is True
    assert pq.read_table(out).num_rows == len(ROWS)
    assert sorted(p.name for p in out.parent.iterdir()) == sorted([name, f"{name}.report.json"])


def test_a_timestamp_column_is_written_as_the_source_holds_it(tmp_path, spark):
    """Spark wrote timestamps as the legacy INT96, which pyarrow reads as a naive nanosecond time:
    a `timestamp[us, tz=UTC]` column lost its time zone in the release. The oracle: pyarrow's
    reading of the source's and the release's footers."""
    path = tmp_path / "t.parquet"
    seen = pa.array([dt.datetime(2020, 1, 1, 0, 0, 0, i, tzinfo=dt.UTC) for i in range(4)],
                    pa.timestamp("us", tz="UTC"))
    pq.write_table(pa.table({"sex": ["M", "F"] * 2, "dis": ["flu", "cold"] * 2, "seen": seen}), path)
    with sqlclose.anonymize(path, SPEC, engine=spark) as release:
        release.write_parquet_folder(tmp_path / "out")
    assert pq.read_schema(next((tmp_path / "out").glob("*.parquet"))).field("seen").type == \
        pq.read_schema(path).field("seen").type
    assert spark.spark.conf.get("spark.sql.parquet.outputTimestampType", None) in (None, "INT96")  # put back


@pytest.mark.parametrize("kind, said", [(pa.timestamp("ns"), "a TIMESTAMP of nanoseconds"),
                                        (pa.time64("us"), "a TIME of day")])
def test_a_parquet_type_spark_does_not_read_is_named(tmp_path, spark, kind, said):
    """Spark's error (PARQUET_TYPE_ILLEGAL, UNSUPPORTED_TIME_TYPE) named no column; pyarrow and
    pandas write nanosecond timestamps by default. Now the column, its type and the fix."""
    path = tmp_path / "t.parquet"
    values = [dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 2)] if pa.types.is_timestamp(kind) else \
        [dt.time(1, 2), dt.time(3, 4)]
    pq.write_table(pa.table({"sex": ["M", "F"], "dis": ["flu", "cold"], "at": pa.array(values, kind)}), path,
                   coerce_timestamps=None)
    with pytest.raises(InputError, match=f"on the Spark engine column 'at' is {said}"):
        _released(path, spark)
