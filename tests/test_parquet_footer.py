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


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _with_footer(data: bytes, footer: bytes) -> bytes:
    start, end = _footer_bounds(data)
    return data[:start] + footer + len(footer).to_bytes(4, "little") + b"PAR1"


def _unchanged(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    assert parquet_footer.sort_encodings_in_place(path) is False
    assert path.read_bytes() == data


@pytest.mark.parametrize("kind", [1, 3, 7, 13])  # a boolean, a byte, a double, a UUID
def test_a_footer_declaring_more_elements_than_it_holds_is_left_at_once(tmp_path, kind):
    """A list said to hold 2**62 elements of a fixed size, in a 12-byte footer: each element was
    skipped without a read, ~2**62 times (the run never ended); every read is now bounded by the
    footer's end. ``alarm``: a hang fails the test instead of stalling the suite."""
    import signal

    footer = bytes([0x19, 0xF0 | kind]) + _varint(2 ** 62) + b"\0"  # field 1: a list of 2**62 elements
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the footer was skipped through, element by element"))
    signal.alarm(10)
    try:
        _unchanged(tmp_path / "x.parquet", b"PAR1" + footer + len(footer).to_bytes(4, "little") + b"PAR1")
    finally:
        signal.alarm(0)


def test_a_footer_that_is_no_whole_filemetadata_is_left_as_it_is(tmp_path):
    """Bytes after the FileMetaData inside the footer's length (what a signature is), or a damaged
    byte that ends the struct early: the encodings were sorted all the same, the footer changed."""
    data = _written(tmp_path).read_bytes()
    start, end = _footer_bounds(data)
    footer = data[start:end]
    assert parquet_footer.sorted_encodings(footer) != footer  # a whole footer here is sorted
    _unchanged(tmp_path / "longer.parquet", _with_footer(data, footer + bytes(range(28))))
    early = next(i for i in range(len(footer) - 2, 0, -1) if footer[i] != 0)
    _unchanged(tmp_path / "early.parquet", _with_footer(data, footer[:early] + b"\0" + footer[early + 1:]))
    _unchanged(tmp_path / "headless.parquet", b"XXXX" + data[4:])


def test_a_signed_plaintext_footer_is_left_as_it_is(tmp_path):
    """Modular encryption with a plaintext footer ends in PAR1 and signs the footer: sorting its
    encodings broke the signature, and a reader holding the keys refused the file. Oracle: pyarrow,
    given the keys, reads the table back."""
    import base64

    import pyarrow.parquet.encryption as encryption

    class Kms(encryption.KmsClient):
        def __init__(self, config):
            encryption.KmsClient.__init__(self)

        def wrap_key(self, key, master_key_identifier):
            return base64.b64encode(master_key_identifier.encode().ljust(16, b"_") + key)

        def unwrap_key(self, wrapped, master_key_identifier):
            return base64.b64decode(wrapped)[16:]

    config = encryption.KmsConnectionConfig()
    factory = encryption.CryptoFactory(lambda c: Kms(c))
    settings = encryption.EncryptionConfiguration(footer_key="footer", column_keys={"column": ["unique"]},
                                                  plaintext_footer=True, double_wrapping=False)
    path = tmp_path / "signed.parquet"
    pq.write_table(_table(), path, row_group_size=700,
                   encryption_properties=factory.file_encryption_properties(config, settings))
    data = path.read_bytes()
    assert data.endswith(b"PAR1")
    assert parquet_footer.sort_encodings_in_place(path) is False
    assert path.read_bytes() == data
    keys = factory.file_decryption_properties(config, encryption.DecryptionConfiguration())
    assert pq.read_table(path, decryption_properties=keys).equals(_table())


def test_a_map_of_booleans_is_read_a_byte_an_entry(tmp_path):
    """A field the reader does not know (a later format's), a map of i32 to booleans, whose values
    the compact protocol writes as a byte each: it was skipped as none, and the footer after it
    misread. Oracle: pyarrow reads the file with the field (it skips unknown fields) as before."""
    data = _written(tmp_path).read_bytes()
    start, end = _footer_bounds(data)
    footer = data[start:end]
    entries = b"".join(_varint(i << 1) + bytes([1 if i % 2 else 2]) for i in range(5))
    extra = bytes([0x0B]) + _varint(200 << 1) + _varint(5) + bytes([0x51]) + entries  # field 200: map<i32, bool>
    path = tmp_path / "extended.parquet"
    path.write_bytes(_with_footer(data, footer[:-1] + extra + b"\0"))
    before = _metadata(path)
    assert parquet_footer.sort_encodings_in_place(path) is True
    assert pq.read_table(path).equals(_table())
    for group_before, group_after in zip(before, _metadata(path)):
        for column_before, column_after in zip(group_before, group_after):
            assert column_after.pop("encodings") == tuple(sorted(column_before.pop("encodings"),
                                                                 key=ENCODING_VALUES.__getitem__))
            assert column_after == column_before


@pytest.mark.parametrize("footer", [b"\x19" + b"\x19" * 2_000 + b"\x05\0", b"\x1b\x01\x5b" * 400 + b"\x01\x01\0"],
                         ids=["lists 2,000 deep", "maps 400 deep"])
def test_a_footer_nested_past_any_readers_bound_is_left_as_it_is(tmp_path, footer):
    """Containers nested past any reader's bound (DuckDB's and pyarrow's Thrift stop at 64) ran
    Python's recursion out: a RecursionError out of the rewrite, which stopped tidy_part_files."""
    _unchanged(tmp_path / "x.parquet", b"PAR1" + footer + len(footer).to_bytes(4, "little") + b"PAR1")


def test_a_footer_with_a_number_over_ten_bytes_is_left_as_it_is(tmp_path):
    """An i32 field written in 11 bytes (no 64-bit number needs more than 10) was read on and the
    file's encodings sorted; DuckDB refuses the file ("Variable-length int over 10 bytes")."""
    data = _written(tmp_path).read_bytes()
    start, end = _footer_bounds(data)
    footer = data[start:end]
    longest = footer[:-1] + bytes([0x05]) + _varint(201 << 1) + b"\x80" * 9 + b"\x01\0"  # field 201: 10 bytes
    assert parquet_footer.sorted_encodings(longest) != longest  # ten bytes are a number still
    _unchanged(tmp_path / "x.parquet", _with_footer(data, footer[:-1] + bytes([0x05]) + _varint(201 << 1)
                                                    + b"\x80" * 10 + b"\x00\0"))
