"""Writing a release as a Parquet folder (``[output] path`` without a suffix), and reading it back.

The engine writes the release query into a new folder (``Engine.copy_to_parquet_folder``):
one part file (or one per Hive partition with ``partition_by``): DuckDB ``part-0.parquet``, Spark
its part file renamed to drop the job's UUID, and stripped of ``_SUCCESS`` and ``.crc`` files (a
Spark release of more than ``SparkEngine.rows_per_part`` rows: a part file per that many rows,
chosen by a hash of each row's values, or still one per Hive partition). Rows are in the
release's order (sorted by the released values; Spark's parts each sorted), so the folder's content
— and with the same engine version and settings its bytes — is the same on every run. Its digest is
``files.folder_sha256``: the sha256 of the sorted list of (file sha256, relative path).

Read back for verification, a folder is one table: the engines give Hive partition values as
text after the files' columns; ``read`` casts them back to the release's types and restores the
release's column order, so the verifier compares the same table the file release would hold.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.errors import InputError
from sqlclose.model.text import agreeing, counted, name_cut, name_shown

_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]+")
_SQL_TYPES = {pa.string(): "VARCHAR", pa.large_string(): "VARCHAR", pa.int8(): "TINYINT", pa.int16(): "SMALLINT",
              pa.int32(): "INT", pa.int64(): "BIGINT", pa.uint8(): "UTINYINT", pa.uint16(): "USMALLINT",
              pa.uint32(): "UINTEGER", pa.uint64(): "UBIGINT", pa.float32(): "FLOAT", pa.float64(): "DOUBLE",
              pa.bool_(): "BOOLEAN", pa.date32(): "DATE"}


def sql_type(t: pa.DataType) -> exp.DataType | None:
    """The SQL type a partition value (text) is cast back to; None for types a folder name cannot
    carry faithfully (floats print differently per engine, binary, nested types)."""
    if pa.types.is_decimal(t):
        return exp.DataType.build(f"DECIMAL({t.precision}, {t.scale})")
    name = _SQL_TYPES.get(t)
    return exp.DataType.build(name, dialect="duckdb") if name and not pa.types.is_floating(t) else None


def check_partitions(partition_by: Sequence[str], engine: Engine, query: exp.Expression, params: Sequence[Any],
                     columns: list[str], typed: Sequence[str] | None = None,
                     labels: Mapping[str, Sequence[str]] | None = None) -> None:
    """Refuse partition columns that are not released, all of them, or of a type folder names
    cannot carry — before anything is written. ``typed``: the partition columns ``query`` holds,
    whose types are checked (default: every one). ``labels``: of a column, every text it can hold,
    where the release knows them (``writers.released_labels``)."""
    if not partition_by:
        return
    odd_names = [c for c in partition_by if not _PLAIN_NAME.fullmatch(c)]
    if odd_names:  # folder names escape other characters, and DuckDB reads the escaped name back
        raise InputError(f"cannot partition by {', '.join(name_shown(c) for c in odd_names)}: a partition column's "
                         "name may hold letters, digits, '_' and '-' only")
    unknown = [c for c in partition_by if c not in columns]
    if unknown:
        raise InputError(f"partition_by names {', '.join(name_shown(c) for c in unknown)}, which the release does not "
                         f"hold (its columns: {', '.join(name_shown(c) for c in columns)})")
    if len(set(partition_by)) == len(columns):
        raise InputError("partition_by names every released column; leave at least one column in the files")
    typed = partition_by if typed is None else typed
    if not typed:
        return
    schema = engine.schema(query.subquery(), params)
    odd = [c for c in typed if sql_type(schema.field(c).type) is None]
    if odd:
        raise InputError(f"cannot partition by {', '.join(name_shown(c) for c in odd)}: a folder name cannot carry "
                         f"its type ({schema.field(odd[0]).type}) faithfully; partition by text, integer or "
                         "date columns (signed or unsigned integers, decimals, booleans)")
    text = [c for c in typed if pa.types.is_string(t := schema.field(c).type) or pa.types.is_large_string(t)]
    labels = labels or {}
    _refuse_unwritable_text(engine, query, params,
                            [c for c in text if c not in labels or not _writable(engine, c, labels[c])])


def _refuse_unwritable_text(engine: Engine, query: exp.Expression, params: Sequence[Any], text: list[str]) -> None:
    """Refuse a text partition column holding a value the engine's folder names cannot carry, counted
    in one pass over the release (never shown): a value the engine writes as its NULL folder or a
    reader takes for it (``Engine.unwritten_partition_text``: Spark wrote "" as its NULL folder, so
    the re-check refused its own write after the whole job, exit 4, and the text
    __HIVE_DEFAULT_PARTITION__ beside a NULL opened one file twice, exit 1); and a value whose folder
    name (``column=`` and the value as the engine escapes it) is longer than a file name may be,
    whose write failed after the whole search, the error quoting it (review of the sixty-third round)."""
    unwritten, limit = engine.unwritten_partition_text, _name_max()
    counts = []
    for i, name in enumerate(text):
        column = exp.column(exp.to_identifier(name, quoted=True))
        if unwritten:
            counts.append(exp.CountIf(this=exp.In(this=column, expressions=[exp.Literal.string(v) for v in unwritten]))
                          .as_(f"u{i}"))
        length = engine.partition_name_bytes(column)
        if length is not None:
            counts.append(exp.CountIf(this=exp.GT(this=length, expression=exp.Literal.number(limit - len(name) - 1)))
                          .as_(f"l{i}"))
    if not counts:
        return
    found = engine.fetch_row(exp.select(*counts).from_(query.subquery("released")), params)
    for i, name in enumerate(text):
        if found.get(f"u{i}"):
            raise InputError(_unwritten_said(engine, name, found[f"u{i}"]))
    for i, name in enumerate(text):
        if found.get(f"l{i}"):
            raise InputError(f"cannot partition by {name_shown(name)}: {counted(found[f'l{i}'], 'row')} "
                             f"{agreeing(found[f'l{i}'], 'holds', 'hold')} a value whose "
                             f"folder name ({name_cut(name)}=… as the {engine.name} engine escapes it) is longer "
                             f"than the {limit} bytes a file name may have here; partition by a column of shorter "
                             "values, or release it as it is without partitioning")


def _writable(engine: Engine, name: str, labels: Sequence[str]) -> bool:
    """Whether every text of ``labels`` is one the engine's folder names carry, as
    ``_refuse_unwritable_text`` would count it over the release: then no row can hold another, and
    that pass (a whole release query: 3 jobs on Spark for Adult's) need not run. A folder name's
    bytes are bounded by three per byte of the text (each escaped as %XX at most: DuckDB's
    ``partition_name_bytes``; Spark's says none)."""
    unwritten = set(engine.unwritten_partition_text)
    room = _name_max() - len(name) - 1
    checks_length = engine.partition_name_bytes(exp.column("v")) is not None
    return not any(label in unwritten or (checks_length and 3 * len(label.encode("utf-8")) > room)
                   for label in labels)


def _unwritten_said(engine: Engine, name: str, rows: int) -> str:
    unwritten = engine.unwritten_partition_text
    told = " or ".join(repr(v) if v else "empty text ('')" for v in unwritten)
    other = ", or use the DuckDB engine" if "" in unwritten else ""
    return (f"cannot partition by {name_shown(name)} on the {engine.name} engine: {counted(rows, 'row')} "
            f"{agreeing(rows, 'holds', 'hold')} {told}, which "
            "folder names cannot carry apart from NULL (Spark writes them as the NULL folder; pyarrow and Hive read a "
            "folder of that text as NULL), so the release would not read back as written; partition by another "
            f"column, or make those values NULL or other text first{other}")


def _name_max() -> int:
    """The longest file name the file system allows (255 on Linux's, and where it cannot be asked)."""
    try:
        return os.pathconf(".", "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return 255


def read_folder(engine: Engine, target: Path, types: Mapping[str, str], columns: list[str]) -> exp.Expression:
    """The written folder as one relation: released column order, partition columns (``types``,
    as ``sql_type`` names them) typed."""
    written = engine.read_parquet(target)
    if not types:
        return written
    present = engine.schema(written).names
    names = [c for c in columns if c in present] + [c for c in present if c not in columns]
    return exp.select(*typed_columns(names, types)).from_(written).subquery()


def typed_columns(names: Sequence[str], types: Mapping[str, str | exp.DataType],
                  safe: bool = False) -> list[exp.Expression]:
    """``names`` selected as they are, those in ``types`` (partition columns: text in folder names)
    cast to their type (a name, or a type already parsed); ``safe``: TRY_CAST, NULL where a text
    reads no such value."""
    cast = exp.TryCast if safe else exp.Cast
    return [exp.alias_(cast(this=exp.column(exp.to_identifier(c, quoted=True)),
                            to=exp.DataType.build(types[c], dialect="duckdb"))
                       if c in types else exp.column(exp.to_identifier(c, quoted=True)),
                       exp.to_identifier(c, quoted=True)) for c in names]
