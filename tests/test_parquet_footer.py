"""A Parquet footer's encodings in one order (``engine.parquet_footer``), which Spark's part files
get so that two runs' files are the same bytes (parquet-mr's order changes from one JVM to the
next). The oracle is pyarrow's reading of the file: the same rows, the same metadata but for each
column chunk's encodings, which are sorted by their values in the Parquet format (parquet.thrift's
``Encoding``), and a footer whose encodings come in any other order gives the same bytes."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlclose.engine import parquet_footer

# parquet.thrift's Encoding values, by the names pyarrow gives them.
ENCODING_VALUES = {"PLAIN": 0, "PLAIN_DICTIONARY": 2, "RLE": 3, "BIT_PACKED": 4, "DELTA_BINARY_PACKED": 5,
                   "DELTA_LENGTH_BYTE_ARRAY": 6, "DELTA_BYTE_ARRAY": 7, "RLE_DICTIONARY": 8, "BYTE_STREAM_SPLIT": 9}


def _table() -> pa.Table:
    """Columns whose metadata takes most of the footer's shapes: strings with and without a
    dictionary, booleans, decimals, dates, timestamps, nulls, a list, a struct and a map."""
    n = 2_000
    return pa.table({
        "text": pa.array([f"v{i % 7}" for i in range(n)]),
        "unique": pa.array([f"u{i}" for i in range(n)]),
        "flag": pa.array([i % 3 == 0 for i in range(n)]),
        "amount": pa.array([decimal.Decimal(i) / 100 for i in range(n)], pa.decimal128(9, 2)),
        "day": pa.array([datetime.date(2000, 1, 1) + datetime.timedelta(days=i) for i in range(n)]),
        "at": pa.array([datetime.datetime(2020, 1, 1, 0, 0, i % 60) for i in range(n)], pa.timestamp("us")),
        "maybe": pa.array([None if i % 5 else i for i in range(n)], pa.int64()),
        "list": pa.array([[i, i + 1] for i in range(n)]),
        "struct": pa.array([{"p": i, "q": str(i % 3)} for i in range(n)]),
        "map": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
    }).replace_schema_metadata({"writer": "a test", "note": "x" * 300})


def _written(tmp_path: Path, name: str = "t.parquet", **options) -> Path:
    path = tmp_path / name
    pq.write_table(_table(), path, row_group_size=700, write_statistics=True, **options)
    return path


def _footer_bounds(data: bytes) -> tuple[int, int]:
    length = int.from_bytes(data[-8:-4], "little")
    return len(data) - 8 - length, len(data) - 8


def _metadata(path: Path) -> list[list[dict]]:
    md = pq.ParquetFile(path).metadata
    return [[md.row_group(g).column(c).to_dict() for c in range(md.num_columns)] for g in range(md.num_row_groups)]


@pytest.mark.parametrize("options", [{}, {"use_dictionary": False}, {"compression": "zstd"},
                                     {"data_page_version": "2.0", "column_encoding": {"maybe": "DELTA_BINARY_PACKED"},
                                      "use_dictionary": ["text"]}])
def test_the_encodings_are_sorted_and_nothing_else_changes(tmp_path, options):
    path = _written(tmp_path, **options)
    before, size = _metadata(path), path.stat().st_size
    parquet_footer.sort_encodings_in_place(path)
    after = _metadata(path)
    assert path.stat().st_size == size
    assert pq.read_table(path).equals(_table())
    assert pq.ParquetFile(path).schema_arrow.metadata == _table().schema.metadata
    changed = 0
    for group_before, group_after in zip(before, after):
        for column_before, column_after in zip(group_before, group_after):
            encodings = column_before.pop("encodings")
            assert column_after.pop("encodings") == tuple(sorted(encodings, key=ENCODING_VALUES.__getitem__))
            assert column_after == column_before  # statistics, sizes, offsets, codec, path
            changed += list(encodings) != sorted(encodings, key=ENCODING_VALUES.__getitem__)
    assert changed  # pyarrow writes some out of order ("RLE" before "PLAIN" for booleans): the case is real


def test_a_footer_in_any_order_of_encodings_gives_the_same_bytes(tmp_path):
    """Each column chunk's encodings reversed in the footer, as another JVM's parquet-mr may list
    them: the file pyarrow reads is the same, and sorted it is the other file, byte for byte."""
    path = _written(tmp_path)
    data = path.read_bytes()
    start, end = _footer_bounds(data)
    reader = parquet_footer._Footer(data[start:end])
    reader.struct()
    md = pq.ParquetFile(path).metadata
    assert len(reader.lists) == md.num_row_groups * md.num_columns == 3 * 12  # every column chunk's list
    reversed_footer = bytearray(data[start:end])
    for spans in reader.lists:
        first, last = spans[0][0], spans[-1][1]
        reversed_footer[first:last] = b"".join(reversed_footer[s:e] for s, e, _ in reversed(spans))
    other = tmp_path / "other.parquet"
    other.write_bytes(data[:start] + bytes(reversed_footer) + data[end:])
    assert other.read_bytes() != data
    assert pq.read_table(other).equals(_table())
    for path_ in (path, other):
        parquet_footer.sort_encodings_in_place(path_)
    assert other.read_bytes() == path.read_bytes()


def test_a_file_that_is_no_plain_parquet_is_left_as_it_is(tmp_path):
    for name, data in [("short", b"PAR1"), ("encrypted", b"PAR1" + b"\0" * 20 + b"\x04\0\0\0PARE"),
                       ("too long", b"PAR1" + b"\0" * 4 + b"\xff\xff\0\0PAR1")]:
        path = tmp_path / name
        path.write_bytes(data)
        parquet_footer.sort_encodings_in_place(path)
        assert path.read_bytes() == data
