"""Arrow durations finer than the engine keeps: refused by column, unless no value has such a part.

DuckDB reads an Arrow ``duration('ns')`` (pandas' ``timedelta64[ns]``) and a ``month_day_nano``
interval as its ``INTERVAL``, which holds microseconds: 1 000 000 005 ns became 1 s, a value no
row holds, released, and verified as such (the re-check reads the source the same way). A column
whose every value is a whole number of microseconds loses nothing and is read. The check runs in
Arrow and NumPy over whole arrays, never row by row in Python, and names no value (Arrow's own
cast error quotes one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sqlclose.errors import InputError
from sqlclose.model.text import name_shown

_NANOS_PER_MICRO = 1000
# A month_day_nano value's layout in its data buffer: months, days, nanoseconds.
_MONTH_DAY_NANO = np.dtype([("months", "<i4"), ("days", "<i4"), ("nanos", "<i8")])


def refuse_sub_microsecond_durations(table: pa.Table, label: str) -> None:
    """Raise InputError naming the first column (and how many more) holding a duration or interval
    with a part finer than a microsecond, and the conversions that keep it."""
    found = first_column_where(table, _finer_than_micros)
    if found is None:
        return
    name, also = found
    raise InputError(f"cannot read the {label}: column {name_shown(name)} ({table.schema.field(name).type}) holds "
                     f"durations with parts finer than a microsecond{also}, which the engine's INTERVAL does not keep "
                     f"(1.000000005 s would be released as 1 s, a value no row holds); convert it first: "
                     f"{_fixes(name, table.schema.field(name).type, label)}")


def first_column_where(table: pa.Table, test: Callable[[pa.ChunkedArray], bool]) -> tuple[str, str] | None:
    """The first column of ``table`` that passes ``test``, with the others that do as a message's
    clause (" (so do 'a', 'b')", or ""); None when none does."""
    found = [name for name, column in zip(table.column_names, table.columns) if test(column)]
    if not found:
        return None
    return found[0], "" if len(found) == 1 else f" (so do {', '.join(name_shown(n) for n in found[1:])})"


def _fixes(name: str, kind: pa.DataType, label: str) -> str:
    if kind != pa.duration("ns"):  # nested, or an interval of months and days too
        return "to its nanoseconds as numbers, or to its text"
    if label.startswith("pandas"):
        return (f"df[{name_shown(name)}].astype('int64') (its nanoseconds as a number), "
                f"df[{name_shown(name)}].astype(str) (its text), "
                f"or df[{name_shown(name)}].dt.floor('us') (to the microsecond, if that is what you mean to release)")
    return f"table[{name_shown(name)}].cast(pa.int64()) (its nanoseconds as a number), or its text"


def _finer_than_micros(column: pa.ChunkedArray) -> bool:
    if not _may_be_finer(column.type):  # most columns: decided by the type, no value read
        return False
    return any(_leaf_is_finer(leaf) for chunk in column.chunks for leaf in leaves(chunk))


def type_holds(kind: pa.DataType, test: Callable[[pa.DataType], bool]) -> bool:
    """Whether ``kind``, or a type anywhere inside it (fields, elements, map keys and items, a
    dictionary's values, an extension's storage), passes ``test``: decided by the type, no value read."""
    if test(kind):
        return True
    if isinstance(kind, pa.ExtensionType):
        return type_holds(kind.storage_type, test)
    if pa.types.is_dictionary(kind) or pa.types.is_run_end_encoded(kind):
        return type_holds(kind.value_type, test)
    return any(type_holds(kind.field(i).type, test) for i in range(kind.num_fields))


def _may_be_finer(kind: pa.DataType) -> bool:
    """Whether a type holds, anywhere inside it, a type of nanoseconds."""
    return type_holds(kind, lambda t: t in (pa.duration("ns"), pa.month_day_nano_interval()))


def leaves(array: pa.Array) -> Iterator[pa.Array]:
    """The arrays of plain values inside ``array`` (itself, or its nested types' values as rows hold them)."""
    kind = array.type
    if isinstance(array, pa.ExtensionArray):
        yield from leaves(array.storage)
    elif pa.types.is_dictionary(kind):
        yield from leaves(array.dictionary_decode())
    elif pa.types.is_run_end_encoded(kind):
        yield from leaves(array.values)
    elif pa.types.is_map(kind):
        _, keys, items = map_entries(array)
        yield from leaves(keys)
        yield from leaves(items)
    elif pa.types.is_struct(kind):
        for child in array.flatten():  # the struct's nulls applied to its fields
            yield from leaves(child)
    elif _is_list(kind):
        yield from leaves(array.flatten())
    elif pa.types.is_union(kind):
        for i in range(kind.num_fields):
            yield from leaves(array.field(i))
    else:
        yield array


def map_entries(array: pa.MapArray) -> tuple[np.ndarray, pa.Array, pa.Array]:
    """The entries of the maps ``array`` holds, as rows hold them: each entry's map (its position in
    ``array``), its key and its value. ``MapArray.keys`` and ``.items`` are every entry of the
    array's buffers, a slice's neighbours and a NULL map's hidden entries too (a table read in
    batches, or sliced, had its maps judged by other rows' entries)."""
    offsets = array.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    start, lengths = int(offsets[0]), np.diff(offsets)
    keys, items = (part.slice(start, int(offsets[-1]) - start) for part in (array.keys, array.items))
    entry = np.repeat(np.arange(len(array)), lengths)
    if array.null_count:
        held = np.repeat(array.is_valid().to_numpy(zero_copy_only=False), lengths)
        kept = pa.array(held)
        entry, keys, items = entry[held], keys.filter(kept), items.filter(kept)
    return entry, keys, items


def _is_list(kind: pa.DataType) -> bool:
    return (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
            or pa.types.is_list_view(kind) or pa.types.is_large_list_view(kind))


def _leaf_is_finer(leaf: pa.Array) -> bool:
    kind = leaf.type
    if len(leaf) == 0:
        return False
    if pa.types.is_duration(kind) and kind.unit == "ns":
        return _any_finer(pc.fill_null(leaf.cast(pa.int64()), 0).to_numpy())
    if kind == pa.month_day_nano_interval():
        nanos = np.frombuffer(leaf.buffers()[1], dtype=_MONTH_DAY_NANO)[leaf.offset:leaf.offset + len(leaf)]["nanos"]
        if leaf.null_count:  # a null slot's storage holds anything
            nanos = nanos[leaf.is_valid().to_numpy(zero_copy_only=False)]
        return _any_finer(nanos)
    return False


def _any_finer(nanos: np.ndarray) -> bool:
    return bool(np.any(nanos % _NANOS_PER_MICRO))
