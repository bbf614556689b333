"""Arrow columns DuckDB would read as something else, or not at all: refused by column, before the
engine reads them, naming no value.

- an extension type DuckDB does not know (pandas' period or interval, a user's own): DuckDB reads
  its storage, so a month period '2000-01' was released as 360, its months since 1970;
- pandas' unnamed row index, which ``pa.Table.from_pandas`` keeps as ``__index_level_0__`` for a
  filtered frame: with ``others = "keep"`` each row's position in the raw table was released;
- a struct of no fields, which no Parquet file can hold (the write failed after the search);
- a map holding one key twice in an entry, which DuckDB refuses mid-run ("a value could not be
  converted", naming no column).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sqlclose.errors import InputError
from sqlclose.model.text import name_shown
from sqlclose.prepare.arrow_durations import map_entries, type_holds

_INDEX = re.compile(r"__index_level_\d+__")


def refuse_arrow_shapes(table: pa.Table, label: str, released: Callable[[str], bool] | None = None) -> None:
    """Raise InputError for the first column of ``table`` of a shape in this module's list: the
    index and an extension type only where the release holds the column (``released``; None: every
    column), the rest everywhere, as the engine reads every column (the keyed fingerprint)."""
    held = released or (lambda name: True)
    _refuse_pandas_index(table, label, held)
    for field, column in zip(table.schema, table.columns):
        foreign = _foreign_extension(field.type) if held(field.name) else None
        if foreign is not None:
            raise InputError(f"cannot read the {label}: column {name_shown(field.name)} is of the Arrow extension type "
                             f"{name_shown(foreign.extension_name)}, which the engine reads as its storage "
                             f"({foreign.storage_type}), not its values (a pandas month period '2000-01' as 360); "
                             f"convert it first, e.g. to its text (as a DataFrame: df[{name_shown(field.name)}]"
                             ".astype(\"string\")) or to a type of Arrow's own")
        if type_holds(field.type, lambda t: pa.types.is_struct(t) and t.num_fields == 0):
            raise InputError(f"cannot read the {label}: column {name_shown(field.name)} ({field.type}) holds a struct "
                             "of no fields, which no Parquet file can hold; drop the column or give the struct a field")
        if any(_repeats_a_key(leaf) for leaf in _maps(column)):
            raise InputError(f"cannot read the {label}: column {name_shown(field.name)} ({field.type}) holds a "
                             "map with one key twice in an entry, which the engine does not read; keep one value per "
                             "key first")


def _refuse_pandas_index(table: pa.Table, label: str, released: Callable[[str], bool]) -> None:
    """pandas' unnamed row index kept as a column (its ``index_columns`` metadata says so) that the
    release would hold (an identifier, or a column ``others = "drop"`` drops, is never released)."""
    meta = table.schema.pandas_metadata or {}
    kept = [c for c in meta.get("index_columns", []) if isinstance(c, str) and _INDEX.fullmatch(c)
            and c in table.column_names and released(c)]
    if kept:
        raise InputError(f"cannot read the {label}: column {name_shown(kept[0])} is pandas' row index, which "
                         "pa.Table.from_pandas kept (a filtered frame's index tells each row's place in the whole "
                         "table); make the table with pa.Table.from_pandas(df, preserve_index=False), or drop it: "
                         f"table.drop_columns([{name_shown(kept[0])}])")


def _foreign_extension(kind: pa.DataType) -> pa.ExtensionType | None:
    """The first extension type inside ``kind`` that is not one of Arrow's own (``arrow.*``)."""
    found: list[pa.ExtensionType] = []

    def foreign(t: pa.DataType) -> bool:
        if isinstance(t, pa.ExtensionType) and not t.extension_name.startswith("arrow."):
            found.append(t)
        return bool(found)

    type_holds(kind, foreign)
    return found[0] if found else None


def _maps(column: pa.ChunkedArray) -> Iterator[pa.MapArray]:
    """Every map array inside ``column`` (maps inside lists and structs too), as rows hold them."""
    if not type_holds(column.type, pa.types.is_map):
        return
    for chunk in column.chunks:
        yield from _maps_in(chunk)


def _maps_in(array: pa.Array) -> Iterator[pa.MapArray]:
    if isinstance(array, pa.ExtensionArray):
        yield from _maps_in(array.storage)
    elif pa.types.is_map(array.type):
        yield array
        _, keys, items = map_entries(array)  # the array's own entries: a slice's, NULL maps' left out
        yield from _maps_in(keys)
        yield from _maps_in(items)
    elif pa.types.is_struct(array.type):
        for child in array.flatten():  # the struct's nulls applied to its fields
            yield from _maps_in(child)
    elif pa.types.is_dictionary(array.type):
        yield from _maps_in(array.dictionary_decode())
    elif hasattr(array, "flatten") and hasattr(array.type, "value_type"):  # lists: their slice, NULLs left out
        yield from _maps_in(array.flatten())


def _repeats_a_key(array: pa.MapArray) -> bool:
    """Whether an entry of ``array`` holds a key twice, as DuckDB compares keys (-0.0 is 0.0, NaN is
    NaN): each (map, key code) pair sorted, in NumPy, ~0.1 s per million maps. A map of one entry
    cannot; keys of a nested type are left to the engine."""
    entry, keys, _ = map_entries(array)
    if len(keys) < 2 or not _plain(keys.type) or np.diff(entry).all():  # no map holds two entries
        return False
    if pa.types.is_floating(keys.type):
        keys = pc.if_else(pc.is_nan(keys), pa.scalar(float("nan"), keys.type), pc.add(keys, pa.scalar(0.0, keys.type)))
    codes = pc.dictionary_encode(keys).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    pairs = np.sort(entry.astype(np.int64) * (int(codes.max()) + 1) + codes)
    return bool(np.any(pairs[1:] == pairs[:-1]))


def _plain(kind: pa.DataType) -> bool:
    """A key type Arrow's hashing compares as DuckDB does (not a list or struct)."""
    return not (pa.types.is_nested(kind) or isinstance(kind, pa.ExtensionType) or pa.types.is_dictionary(kind))
