"""Arrow tables from Python lists and NumPy arrays, and NumPy arrays from Arrow columns,
without importing pandas.

``pa.array`` and ``pa.table`` on Python or NumPy input ask whether the input is a pandas
object, and ``to_numpy`` initializes pandas' statics: either imports pandas (~0.3 s of a cold
``sqlclose anonymize``; docs/performance.md "Cold start"). ``pa.Array.from_buffers`` and
``np.frombuffer`` ask nothing, so the lookup tables of a run (hierarchy leaves and labels, codes,
the re-check's tables) are built here from buffers, and engine results read as views of theirs.
The types are the ones ``pa.array`` would infer (int64, double, bool, string) and ``to_numpy``
would give; any other input falls back to pyarrow's own call: correct, only slower to start.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from sqlclose.model.hierarchy import Hierarchy

_INT32_MAX = 2**31 - 1  # a string array's offsets are int32

_NUMPY_TYPES = {np.dtype(np.int64): pa.int64(), np.dtype(np.int32): pa.int32(),
                np.dtype(np.int16): pa.int16(), np.dtype(np.int8): pa.int8(),
                np.dtype(np.uint64): pa.uint64(), np.dtype(np.uint32): pa.uint32(),
                np.dtype(np.uint16): pa.uint16(), np.dtype(np.uint8): pa.uint8(),
                np.dtype(np.float64): pa.float64(), np.dtype(np.float32): pa.float32()}


def arrow_table(columns: Mapping[str, Any], types: Mapping[str, pa.DataType] | None = None) -> pa.Table:
    """``pa.table(columns)``, each column typed as ``types`` says, else as ``pa.array`` infers."""
    types = types or {}
    arrays = [arrow_array(values, types.get(name)) for name, values in columns.items()]
    return pa.Table.from_arrays(arrays, names=list(columns))


def arrow_array(values: Any, kind: pa.DataType | None = None) -> pa.Array:
    """``pa.array(values, kind)`` for a list, a tuple or a 1-D NumPy array, from buffers where it can."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values if kind is None or values.type == kind else values.cast(kind)
    built = None
    if isinstance(values, np.ndarray) and values.ndim == 1:
        built = _from_list(values.tolist(), kind) if values.dtype == object else _from_numpy(values, kind)
    elif isinstance(values, (list, tuple)):
        built = _from_list(values, kind)
    return built if built is not None else pa.array(values, kind)


def _from_numpy(values: np.ndarray, kind: pa.DataType | None) -> pa.Array | None:
    if values.dtype == np.bool_:
        if kind not in (None, pa.bool_()):
            return None
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    inferred = _NUMPY_TYPES.get(values.dtype)
    if inferred is None or kind not in (None, inferred):
        return None
    data = np.ascontiguousarray(values)
    return pa.Array.from_buffers(inferred, len(data), [None, pa.py_buffer(data)])


def _from_list(values: Sequence[Any], kind: pa.DataType | None) -> pa.Array | None:
    if not values:
        return pa.nulls(0, kind or pa.null())  # what pa.array([]) gives: no rows, null type unless asked
    kinds = {type(v) for v in values}
    kind = kind or _infer(kinds)
    if kind == pa.string() and kinds <= {str, type(None)}:
        return _strings(values)
    numeric = {pa.int64(): (int, np.integer), pa.float64(): (int, float, np.integer, np.floating)}
    if kind in numeric and all(issubclass(k, numeric[kind]) and k is not bool for k in kinds):
        try:
            return _from_numpy(np.asarray(values, dtype=np.int64 if kind == pa.int64() else np.float64), kind)
        except OverflowError:
            return None
    return None


def _infer(kinds: set[type]) -> pa.DataType | None:
    """The type ``pa.array`` infers for values of these Python types (None: leave it to pa.array)."""
    if str in kinds and kinds <= {str, type(None)}:
        return pa.string()
    return {frozenset({int}): pa.int64(), frozenset({float}): pa.float64()}.get(frozenset(kinds))


def _strings(values: Sequence[str | None]) -> pa.Array | None:
    """A string array from its three buffers: validity bits (when a value is None), int32 offsets, UTF-8."""
    ascii_ = _ascii_strings(values)
    if ascii_ is not None:
        return ascii_
    encoded = [b"" if v is None else v.encode("utf-8") for v in values]
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    if int(lengths.sum()) > _INT32_MAX:
        return None
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    missing = np.fromiter((v is None for v in values), dtype=np.bool_, count=len(values))
    nulls = int(missing.sum())
    validity = pa.py_buffer(np.packbits(~missing, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(pa.string(), len(values), [validity, pa.py_buffer(offsets),
                                                            pa.py_buffer(b"".join(encoded))], null_count=nulls)


def _ascii_strings(values: Sequence[str | None]) -> pa.Array | None:
    """``_strings`` of ASCII text without a None: the values joined and encoded at once, each one's
    bytes as many as its characters (100 k ZIP codes: 3 ms, not 30 ms a value at a time). None
    for anything else."""
    try:
        joined = "".join(values)  # type: ignore[arg-type]  # a None refuses to join
    except TypeError:
        return None
    if not joined.isascii() or len(joined) > _INT32_MAX:
        return None
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=len(values)), out=offsets[1:])  # type: ignore[arg-type]
    return pa.Array.from_buffers(pa.string(), len(values), [None, pa.py_buffer(offsets),
                                                            pa.py_buffer(joined.encode("ascii"))], null_count=0)


def leaf_labels(hierarchy: Hierarchy, level: int) -> pa.Array:
    """Each leaf's label at ``level`` (level 0: the leaf itself), in ``leaves`` order, as an Arrow
    string array made once per hierarchy and level: the QI lookups and the re-check's generalizing
    tables read the same ones (a 100 k-leaf ZIP's leaves: ~0.05 s a conversion)."""
    def build() -> pa.Array:
        if level == 0:
            return arrow_array(hierarchy.leaves, pa.string())
        return decoded_strings(hierarchy.level_codes[:, level], hierarchy.labels(level))
    return hierarchy.memo(f"leaf_labels_{level}", build)


def decoded_strings(codes: np.ndarray, labels: Sequence[str]) -> pa.Array:
    """``[labels[c] for c in codes]`` as an Arrow string array, its bytes gathered by NumPy from
    the distinct labels' (a level of a 100 k-leaf ZIP hierarchy has up to 10 k labels): no Python
    string per row, and no ``pyarrow.compute`` (whose import would cost a cold start)."""
    encoded = [label.encode("utf-8") for label in labels]
    sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    starts = np.zeros(len(encoded), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    codes = np.asarray(codes, dtype=np.int64)
    lengths = sizes[codes]
    offsets = np.zeros(len(codes) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if int(offsets[-1]) > _INT32_MAX:
        return pa.array([labels[c] for c in codes.tolist()], pa.large_string())  # past int32 offsets
    # Byte j of row i is byte (j − offsets[i]) of its label, which starts at starts[codes[i]].
    gather = np.repeat(starts[codes] - offsets[:-1], lengths) + np.arange(int(offsets[-1]))
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)[gather]
    return pa.Array.from_buffers(pa.string(), len(codes), [None, pa.py_buffer(offsets.astype(np.int32)),
                                                            pa.py_buffer(data)])


def ascending(values: np.ndarray) -> bool:
    """Whether ``values`` (one dimension) never decrease; ties allowed."""
    return bool(values.size < 2 or (values[1:] >= values[:-1]).all())


def numpy_of(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``column.to_numpy()`` for a numeric or bool column without nulls, read from its buffers
    (``to_numpy`` imports pandas); anything else goes to ``to_numpy``. One chunk gives a read-only
    view, as ``to_numpy`` does; several give a new array."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    arrays = [_buffer_view(chunk) for chunk in chunks]
    dtype = np.dtype(np.bool_) if column.type == pa.bool_() else _NUMPY_DTYPES.get(column.type)
    if dtype is None or any(a is None for a in arrays):
        return column.to_numpy()
    if len(arrays) == 1:
        return arrays[0]
    return np.concatenate(arrays) if arrays else np.empty(0, dtype=dtype)


_NUMPY_DTYPES = {kind: dtype for dtype, kind in _NUMPY_TYPES.items()}


def _buffer_view(chunk: pa.Array) -> np.ndarray | None:
    if chunk.null_count:
        return None
    if chunk.type == pa.bool_():
        bits = np.frombuffer(chunk.buffers()[1], dtype=np.uint8)
        return np.unpackbits(bits, count=chunk.offset + len(chunk), bitorder="little")[chunk.offset:].astype(np.bool_)
    dtype = _NUMPY_DTYPES.get(chunk.type)
    if dtype is None:
        return None
    view = np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk), offset=chunk.offset * dtype.itemsize)
    view.flags.writeable = False  # Arrow's memory: never written through, as with to_numpy
    return view


class ArrowValues(Sequence):
    """A column's values as one Arrow array, read as Python values where asked: what a sensitive
    domain of hundreds of thousands of distinct values is kept as (631,908 values of an ordered
    column held 38.5 MiB as Python strings, their array ~7 MiB; docs/engines.md, "Where the
    process went past the limit"). A sequence like the list it replaces: length, index,
    iteration (in batches), ``in``."""

    __slots__ = ("arrow",)
    _BATCH = 1 << 16

    def __init__(self, values: pa.Array | pa.ChunkedArray) -> None:
        self.arrow = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values

    def __len__(self) -> int:
        return len(self.arrow)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.arrow[i].to_pylist()
        return self.arrow[int(i)].as_py()

    def __iter__(self) -> Any:
        for start in range(0, len(self.arrow), self._BATCH):
            yield from self.arrow.slice(start, self._BATCH).to_pylist()

    def __contains__(self, value: object) -> bool:
        if value is None:
            return self.arrow.null_count > 0
        import pyarrow.compute as pc  # loads only where a domain is searched

        try:
            probe = pa.scalar(value, self.arrow.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            return False  # a value of another type is not one of these
        # Arrow converts where a list compares: b"1" is made the text "1", which a list does not hold.
        return probe.as_py() == value and pc.index(self.arrow, probe).as_py() >= 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and len(other) == len(self) and list(other) == list(self)

    __hash__ = None  # type: ignore[assignment]  # mutable-looking sequences are unhashable, as a list
