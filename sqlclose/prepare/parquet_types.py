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

from pathlib import Path

from sqlclose.errors import InputError
from sqlclose.model.spec import MAX_DECIMAL_DIGITS

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
            raise InputError(f"cannot read {path}: column {column!r} is a DECIMAL of {leaf.precision} digits"
                             f"{' (in its field ' + repr(leaf.path) + ')' if leaf.path != column else ''}, more than "
                             f"the engine's {MAX_DECIMAL_DIGITS}, which it would read as a rounded DOUBLE (values "
                             "no row holds); write it as text, or as a DECIMAL of at most 38 digits, first")
        if leaf.physical_type == "INT96" and column not in int96:
            int96.append(column)
    finer = next((column for column in int96 if _finer_than_micros(path, column)), None)
    if finer is not None:
        raise InputError(f"cannot read {path}: column {finer!r} holds INT96 timestamps (Impala's or Spark's legacy "
                         "format) with parts finer than a microsecond, which the engine's TIMESTAMP does not keep "
                         "(rows a nanosecond apart would be released as one value); write it as a TIMESTAMP of "
                         "nanoseconds (INT64, pyarrow's default), or as its nanoseconds as numbers, first")


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
