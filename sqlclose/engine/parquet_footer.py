"""A Parquet file's footer with each column chunk's encodings in one order.

parquet-mr (Spark's writer) lists a column chunk's encodings (``RLE``, ``BIT_PACKED``,
``PLAIN_DICTIONARY``) in its footer from a hash set of Java enums, whose order follows their
identity hashes: it changes from one JVM to the next. Two nights' releases of the same rows then
differed in those bytes alone, and so did their digests (docs/engines.md, "Reproducibility"). The
footer is the file's Thrift ``FileMetaData`` (compact protocol) before its length and ``PAR1``;
sorting each ``ColumnMetaData.encodings`` list by value rewrites it in place, at the same length,
and changes nothing any reader reads but that order.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_MAGIC = b"PAR1"
# Thrift compact types: a field's or an element's payload.
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT, _UUID = range(1, 14)
_FIXED = {_BYTE: 1, _DOUBLE: 8, _UUID: 16}  # payloads of a fixed size
# The path to the lists: FileMetaData.row_groups (4) → RowGroup.columns (1) → ColumnChunk.meta_data (3)
# → ColumnMetaData.encodings (2).
_ROW_GROUPS, _COLUMNS, _META_DATA, _ENCODINGS = 4, 1, 3, 2
_ON_THE_WAY = {(_ROW_GROUPS,), (_ROW_GROUPS, _COLUMNS), (_ROW_GROUPS, _COLUMNS, _META_DATA)}  # structs read by path
_ELSEWHERE = (-1,)  # the path of a struct off the way: nothing below it is noted
# Modular encryption's fields: FileMetaData.encryption_algorithm (8) and footer_signing_key_metadata
# (9), a plaintext footer's; ColumnChunk.crypto_metadata (8) and encrypted_column_metadata (9). Such a
# footer is signed (its signature after it, inside the footer's length): a changed byte breaks it.
_ENCRYPTION = {(8,), (9,), (_ROW_GROUPS, _COLUMNS, 8), (_ROW_GROUPS, _COLUMNS, 9)}
_DEPTH = 32  # structs, lists, sets and maps nested deeper than any FileMetaData's (~10): a damaged footer
_VARINT_BYTES = 10  # a 64-bit varint's longest: a longer one is damage (readers refuse it)


class Malformed(ValueError):
    """The footer is no whole ``FileMetaData``: it runs past its end, ends early, nests too deep or
    holds a number over ten bytes long."""


class _Footer:
    """Reads a compact-protocol struct, noting where each encodings list's elements lie. Every read
    is bounded by the footer's end, so a damaged footer (a list said to hold 2**62 elements) fails
    at once instead of being skipped through."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.depth = data, 0, 0
        self.lists: list[list[tuple[int, int, int]]] = []  # per list: (start, end, value) of each element
        self.encrypted = False

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise Malformed(f"{n} bytes at byte {self.pos} run past the footer's end ({len(self.data)})")
        self.pos += n

    def byte(self) -> int:
        self.skip(1)
        return self.data[self.pos - 1]

    def varint(self) -> int:
        shift = value = 0
        for _ in range(_VARINT_BYTES):
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
        raise Malformed(f"a number of over {_VARINT_BYTES} bytes at byte {self.pos}")

    @contextmanager
    def nested(self) -> Iterator[None]:
        """One container deeper (a struct, list, set or map) for the block: readers refuse a footer
        nested past their bound (64), and Python's recursion would end first."""
        self.depth += 1
        if self.depth > _DEPTH:
            raise Malformed(f"containers nested over {_DEPTH} deep at byte {self.pos}")
        yield
        self.depth -= 1

    def struct(self, path: tuple[int, ...] = ()) -> None:
        field = 0
        with self.nested():
            while (header := self.byte()) != 0:
                kind, delta = header & 0x0F, header >> 4
                field = field + delta if delta else _zigzag(self.varint())
                self.encrypted |= (*path, field) in _ENCRYPTION
                self.value(kind, (*path, field))

    def value(self, kind: int, path: tuple[int, ...]) -> None:
        """A field's payload: a boolean is its header's type alone."""
        if kind in (_TRUE, _FALSE):
            return
        if kind in _FIXED:
            self.skip(_FIXED[kind])
        elif kind in (_I16, _I32, _I64):
            self.varint()
        elif kind == _BINARY:
            self.skip(self.varint())
        elif kind in (_LIST, _SET):
            with self.nested():
                self.elements(path)
        elif kind == _MAP:
            with self.nested():
                self.map()
        elif kind == _STRUCT:
            self.struct(path if path in _ON_THE_WAY else _ELSEWHERE)
        else:
            raise Malformed(f"unknown Thrift compact type {kind} at byte {self.pos}")

    def element(self, kind: int, path: tuple[int, ...]) -> None:
        """A list's, a set's or a map's element: a boolean is a byte of its own there."""
        if kind in (_TRUE, _FALSE):
            self.skip(1)
        else:
            self.value(kind, path)

    def elements(self, path: tuple[int, ...]) -> None:
        header = self.byte()
        size, kind = header >> 4, header & 0x0F
        if size == 15:
            size = self.varint()
        if size > len(self.data) - self.pos:  # every element takes a byte at least
            raise Malformed(f"a list of {size} elements at byte {self.pos} is longer than the footer")
        noted = path == (_ROW_GROUPS, _COLUMNS, _META_DATA, _ENCODINGS) and kind == _I32
        spans = []
        for _ in range(size):
            start = self.pos
            if noted:
                value = _zigzag(self.varint())
                spans.append((start, self.pos, value))
            else:
                self.element(kind, path)
        if noted:
            self.lists.append(spans)

    def map(self) -> None:
        size = self.varint()
        if size:
            kinds = self.byte()
            if 2 * size > len(self.data) - self.pos:
                raise Malformed(f"a map of {size} entries at byte {self.pos} is longer than the footer")
            for _ in range(size):
                self.element(kinds >> 4, _ELSEWHERE)
                self.element(kinds & 0x0F, _ELSEWHERE)


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def sorted_encodings(footer: bytes) -> bytes:
    """``footer`` (a ``FileMetaData``) with every column chunk's encodings sorted by value; as it is
    when it is signed (modular encryption's plaintext footer). ``Malformed`` unless the footer is one
    whole ``FileMetaData``, ending where it ends."""
    reader = _Footer(footer)
    reader.struct()
    if reader.pos != len(footer):
        raise Malformed(f"the FileMetaData ends at byte {reader.pos} of a {len(footer)}-byte footer")
    if reader.encrypted:
        return footer
    out = bytearray(footer)
    for spans in reader.lists:
        if not spans:
            continue
        ordered = b"".join(footer[start:end] for start, end, _ in sorted(spans, key=lambda s: s[2]))
        out[spans[0][0]:spans[-1][1]] = ordered
    return bytes(out)


def sort_encodings_in_place(path: Path) -> bool:
    """Rewrites ``path``'s footer with its encodings sorted (``sorted_encodings``), where it changes;
    whether it did. A file that is not plain Parquet is left as it is: no ``PAR1`` at both ends (an
    encrypted footer ends in ``PARE``), a signed footer, a footer that is no whole ``FileMetaData``
    (the re-check that reads the file then tells what is wrong with it)."""
    with open(path, "rb") as f:
        head = f.read(4)
        size = f.seek(0, 2)
        if size < 12 or head != _MAGIC:
            return False
        f.seek(size - 8)
        tail = f.read(8)
        length = int.from_bytes(tail[:4], "little")
        if tail[4:] != _MAGIC or length > size - 12:
            return False
        start = size - 8 - length
        f.seek(start)
        footer = f.read(length)
    try:
        ordered = sorted_encodings(footer)
    except Malformed:
        return False
    if ordered == footer:
        return False
    with open(path, "r+b") as f:  # the same length at the same place: one write
        f.seek(start)
        f.write(ordered)
    return True
