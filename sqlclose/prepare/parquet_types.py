"""Parquet columns the engine would read narrower than the file holds: refused by column and file.

DuckDB reads a DECIMAL of more than 38 digits (pyarrow's decimal256) as DOUBLE, rounded: ten
different values were released as one, held by no row. It reads an INT96 timestamp (Impala's,
Spark's legacy format), which holds nanoseconds, as a TIMESTAMP of microseconds: rows a nanosecond
apart were released as one value. Both were verified, the re-check reading the source the same
way. The same columns in an Arrow table are refused (``sources._unreadable_arrow``,
``arrow_durations``). A wide DECIMAL is told by the file's footer; an INT96 column only when some
value has a part finer than a microsecond (Spark writes whole microseconds), read in Arrow over
whole arrays, naming no value.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlclose.errors import InputError
from sqlclose.model.instant_range import days_within, instants_within
from sqlclose.model.spec import MAX_DECIMAL_DIGITS
from sqlclose.model.text import name_shown

_NANOS_PER_MICRO = 1000


def has_int96(elements: tuple) -> bool:
    """Whether a file's schema elements (``DuckDBEngine.parquet_footers``: the physical type second)
    hold an INT96 column: its values are then read, file by file."""
    return any(element[1] == "INT96" for element in elements)


def refuse_narrowed_columns(path: Path) -> None:
    """Raise InputError naming the first column of the Parquet file ``path`` the engine would read
    narrower than the file holds (a DECIMAL past 38 digits; INT96 timestamps finer than a
    microsecond), with what to write instead. A file pyarrow cannot read is left to the engine's
    read, which words its error."""
    import pyarrow.parquet as pq  # loaded here: pyarrow.parquet costs a start that reads no Parquet

    try:
        schema = pq.read_metadata(path).schema
    except Exception:
        return
    names = schema.to_arrow_schema().names
    int96: list[str] = []
    for i in range(len(schema)):
        leaf = schema.column(i)
        column = _top_level(leaf.path, names)
        if leaf.logical_type.type == "DECIMAL" and leaf.precision > MAX_DECIMAL_DIGITS:
            raise InputError(f"cannot read {path}: column {name_shown(column)} is a DECIMAL of {leaf.precision} digits"
                             f"{' (in its field ' + repr(leaf.path) + ')' if leaf.path != column else ''}, more than "
                             f"the engine's {MAX_DECIMAL_DIGITS}, which it would read as a rounded DOUBLE (values "
                             "no row holds); write it as text, or as a DECIMAL of at most 38 digits, first")
        if leaf.physical_type == "INT96" and column not in int96:
            int96.append(column)
    finer = next((column for column in int96 if _finer_than_micros(path, column)), None)
    if finer is not None:
        raise InputError(f"cannot read {path}: column {name_shown(finer)} holds INT96 timestamps (Impala's or Spark's "
                         "legacy format) with parts finer than a microsecond, which the engine's TIMESTAMP does not "
                         "keep (rows a nanosecond apart would be released as one value); write it as a TIMESTAMP of "
                         "nanoseconds (INT64, pyarrow's default), or as its nanoseconds as numbers, first")


def refuse_instants_past_range(path: Path) -> None:
    """Raise InputError naming the first TIMESTAMP or DATE column of the Parquet file ``path`` that
    holds an instant past what the engine holds. Run for every file of a folder or a pattern: files
    of one footer hold other values. A row group's statistics decide where it has them; a row group
    without (``write_statistics=False``, some writers' nested columns) has that column read in Arrow,
    a row group at a time. A file pyarrow cannot read is left to the engine's read."""
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_metadata(path)
    except Exception:
        return
    schema = metadata.schema
    names = schema.to_arrow_schema().names
    # opened once, and only when a row group without statistics must be read
    opened = functools.cache(lambda: pq.ParquetFile(path))
    for i in range(len(schema)):
        leaf = schema.column(i)
        column = _top_level(leaf.path, names)
        if _past_the_engines_range(opened, metadata, i, leaf, column):
            raise InputError(f"cannot read {path}: column {name_shown(column)} holds a date or time past what the "
                             "engine holds (DuckDB keeps instants from 290309 BC to 294247 AD, to the microsecond, and "
                             "reads the very ends of its range as infinity); such a value is usually a number "
                             "written in the wrong unit: correct it, or write it as NULL")


_UNITS = {"milliseconds": "ms", "microseconds": "us", "nanoseconds": "ns"}


def _past_the_engines_range(opened: Callable[[], Any], metadata: Any, column: int, leaf: Any,
                            top_level: str) -> bool:
    """Whether a TIMESTAMP or DATE column holds a value past what DuckDB holds: a millisecond
    timestamp of 2**62 failed the read as "a value could not be converted", naming no column (exit
    1); the range's ends it reads as infinity. Told by each row group's raw min and max, or, where a
    row group has none, by its values (``_group_past_range``)."""
    logical = json.loads(leaf.logical_type.to_json())
    kind = logical.get("Type")
    if kind not in ("Timestamp", "Date"):
        return False
    for group in range(metadata.num_row_groups):
        stats = metadata.row_group(group).column(column).statistics
        if stats is None or not stats.has_min_max:
            if stats is None or stats.null_count != metadata.row_group(group).num_rows:
                if _group_past_range(opened, group, top_level):
                    return True
            continue
        low, high = stats.min_raw, stats.max_raw
        within = days_within(low, high) if kind == "Date" else \
            instants_within(low, high, _UNITS.get(logical.get("timeUnit"), "us"))
        if not within:
            return True
    return False


def _group_past_range(opened: Callable[[], Any], group: int, column: str) -> bool:
    """A row group's column read in Arrow (nested values too) and judged over whole arrays, as an
    Arrow source's are (``arrow_instants``). One the reader refuses is left to the engine's read."""
    from sqlclose.prepare.arrow_instants import holds_out_of_range

    try:
        values = opened().read_row_group(group, columns=[column]).column(0)
    except Exception:
        return False
    return holds_out_of_range(values)


def _top_level(leaf_path: str, names: list[str]) -> str:
    """The top-level column a leaf's dotted path (``s.x``) lies in: the longest name it starts with
    (a name may hold a dot itself)."""
    return max((n for n in names if leaf_path == n or leaf_path.startswith(f"{n}.")), key=len, default=leaf_path)


def _finer_than_micros(path: Path, column: str) -> bool:
    """Whether a timestamp of nanoseconds in ``column`` has a part finer than a microsecond; read a
    batch at a time (INT96 is read as nanoseconds). Its modules load only for such a column."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from sqlclose.prepare.arrow_durations import leaves

    reader = pq.ParquetFile(path, coerce_int96_timestamp_unit="ns")
    for batch in reader.iter_batches(columns=[column]):
        for leaf in leaves(batch.column(0)):
            if pa.types.is_timestamp(leaf.type) and leaf.type.unit == "ns" and len(leaf):
                nanos = pc.fill_null(leaf.cast(pa.int64()), 0).to_numpy()
                if np.any(nanos % _NANOS_PER_MICRO):
                    return True
    return False
