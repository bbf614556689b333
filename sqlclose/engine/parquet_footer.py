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

from pathlib import Path

_MAGIC = b"PAR1"
# Thrift compact types: a field's or an element's payload.
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT, _UUID = range(1, 14)
# The path to the lists: FileMetaData.row_groups (4) → RowGroup.columns (1) → ColumnChunk.meta_data (3)
# → ColumnMetaData.encodings (2).
_ROW_GROUPS, _COLUMNS, _META_DATA, _ENCODINGS = 4, 1, 3, 2
_ON_THE_WAY = {(_ROW_GROUPS,), (_ROW_GROUPS, _COLUMNS), (_ROW_GROUPS, _COLUMNS, _META_DATA)}  # structs read by path
_ELSEWHERE = (-1,)  # the path of a struct off the way: nothing below it is noted


class _Footer:
    """Reads a compact-protocol struct, noting where each encodings list's elements lie."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0
        self.lists: list[list[tuple[int, int, int]]] = []  # per list: (start, end, value) of each element

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = value = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def struct(self, path: tuple[int, ...] = ()) -> None:
        field = 0
        while (header := self.byte()) != 0:
            kind, delta = header & 0x0F, header >> 4
            field = field + delta if delta else _zigzag(self.varint())
            self.value(kind, (*path, field))

    def value(self, kind: int, path: tuple[int, ...]) -> None:
        if kind in (_TRUE, _FALSE):  # a field's boolean is its header; an element's, a byte (below)
            return
        if kind == _BYTE:
            self.pos += 1
        elif kind in (_I16, _I32, _I64):
            self.varint()
        elif kind == _DOUBLE:
            self.pos += 8
        elif kind == _UUID:
            self.pos += 16
        elif kind == _BINARY:
            length = self.varint()  # read first: ``self.pos += self.varint()`` adds to the position before it
            self.pos += length
        elif kind in (_LIST, _SET):
            self.elements(path)
        elif kind == _MAP:
            self.map(path)
        elif kind == _STRUCT:
            self.struct(path if path in _ON_THE_WAY else _ELSEWHERE)
        else:
            raise ValueError(f"unknown Thrift compact type {kind} at byte {self.pos}")

    def elements(self, path: tuple[int, ...]) -> None:
        header = self.byte()
        size, kind = header >> 4, header & 0x0F
        if size == 15:
            size = self.varint()
        noted = path == (_ROW_GROUPS, _COLUMNS, _META_DATA, _ENCODINGS) and kind == _I32
        spans = []
        for _ in range(size):
            start = self.pos
            if kind in (_TRUE, _FALSE):
                self.pos += 1
            elif noted:
                value = _zigzag(self.varint())
                spans.append((start, self.pos, value))
            else:
                self.value(kind, path)
        if noted:
            self.lists.append(spans)

    def map(self, path: tuple[int, ...]) -> None:
        size = self.varint()
        if size:
            kinds = self.byte()
            for _ in range(size):
                self.value(kinds >> 4, _ELSEWHERE)
                self.value(kinds & 0x0F, _ELSEWHERE)


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def sorted_encodings(footer: bytes) -> bytes:
    """``footer`` (a ``FileMetaData``) with every column chunk's encodings sorted by value."""
    reader = _Footer(footer)
    reader.struct()
    out = bytearray(footer)
    for spans in reader.lists:
        if not spans:
            continue
        ordered = b"".join(footer[start:end] for start, end, _ in sorted(spans, key=lambda s: s[2]))
        out[spans[0][0]:spans[-1][1]] = ordered
    return bytes(out)


def sort_encodings_in_place(path: Path) -> None:
    """Rewrites ``path``'s footer with its encodings sorted (``sorted_encodings``), where it changes;
    a file that is not plain Parquet (an encrypted footer's ``PARE``) is left as it is."""
    with open(path, "r+b") as f:
        f.seek(0, 2)
        size = f.tell()
        if size < 12:
            return
        f.seek(size - 8)
        tail = f.read(8)
        length = int.from_bytes(tail[:4], "little")
        if tail[4:] != _MAGIC or length > size - 12:
            return
        start = size - 8 - length
        f.seek(start)
        footer = f.read(length)
        ordered = sorted_encodings(footer)
        if ordered != footer:
            f.seek(start)
            f.write(ordered)
