"""Arrow instants and days past what DuckDB holds: refused by column before the engine reads them.

DuckDB (2.0.1) reads an Arrow ``timestamp('s')`` or ``('ms')`` past its microsecond range (a pandas
``datetime64[s]`` of year 300000, a microsecond epoch read as seconds) with an internal error that
invalidates the whole database: every later statement of the process failed. A value at the edge
of its range (``2**63 - 1`` microseconds or nanoseconds, ``2**31 - 1`` days) it reads as
``infinity``: a value no row holds, released and verified as such. A duration of seconds or
milliseconds past its INTERVAL's microseconds failed mid-run naming no column. The check runs in Arrow over
whole arrays (one min and max per array), never row by row in Python, and names no value.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from sqlclose.errors import InputError
from sqlclose.model.instant_range import days_within, instants_within
from sqlclose.model.text import name_shown
from sqlclose.prepare.arrow_durations import first_column_where, leaves, type_holds

_MS_PER_DAY = 86_400_000


def refuse_out_of_range_instants(table: pa.Table, label: str) -> None:
    """Raise InputError naming the first column (and how many more) holding an instant or a day
    DuckDB cannot hold as it is, and what to do."""
    found = first_column_where(table, holds_out_of_range)
    if found is None:
        return
    name, also = found
    raise InputError(f"cannot read the {label}: column {name_shown(name)} ({table.schema.field(name).type}) holds a "
                     f"date, time or duration past what the engine holds{also} (DuckDB keeps instants from 290309 BC "
                     "to 294247 AD, to the microsecond, and reads the very ends of its range as infinity); such a "
                     "value is usually a number read in the wrong unit (microseconds read as seconds): correct it, set "
                     "it to NULL, or convert the column to its numbers or its text first")


def holds_out_of_range(column: pa.ChunkedArray) -> bool:
    """Whether a column holds, at any depth, an instant, day or duration DuckDB cannot hold as it is."""
    if not type_holds(column.type, _temporal):  # most columns: decided by the type, no value read
        return False
    return any(_leaf_out_of_range(leaf) for chunk in column.chunks for leaf in leaves(chunk))


def _temporal(kind: pa.DataType) -> bool:
    return pa.types.is_timestamp(kind) or pa.types.is_date(kind) or pa.types.is_duration(kind)


def _leaf_out_of_range(leaf: pa.Array) -> bool:
    kind = leaf.type
    if len(leaf) == leaf.null_count or not _temporal(kind):
        return False
    ends = pc.min_max(leaf.cast(pa.int64() if kind != pa.date32() else pa.int32()))
    low, high = ends["min"].as_py(), ends["max"].as_py()
    if pa.types.is_timestamp(kind) or pa.types.is_duration(kind):  # a duration: an INTERVAL of microseconds
        return not instants_within(low, high, kind.unit)
    return not days_within(low, high, _MS_PER_DAY if kind == pa.date64() else 1)
