"""DuckDB, the default engine: embedded, vectorized, out of core when data outgrows memory."""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import shutil
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import duckdb_database
from sqlclose.engine.base import Engine, FileRead, PackedColumn, PackedKey, key_value
from sqlclose.engine.duckdb_dialect import DIALECT
from sqlclose.engine.limits import (
    below_interpreter,
    engine_limit_now,
    engine_share,
    megabytes,
    parse_bytes,
    resident_bytes,
)
from sqlclose.engine.listing import folder_files, linked_folder_refusal, special_refusal
from sqlclose.engine.parquet_slices import ROW_NUMBER, slice_bounds, sliced_read
from sqlclose.errors import (
    DATABASE_LOCKED,
    DatabaseLocked,
    EngineCannotSpill,
    EngineError,
    EngineFault,
    EngineOutOfDisk,
    EngineOutOfMemory,
    InputError,
    LimitWarning,
    SourceDataError,
)
from sqlclose.model.column_names import refuse_renamed_columns
from sqlclose.model.spec import GLOB_CHARACTERS, catalog_name, table_parts, typed_name
from sqlclose.model.text import name_shown, refuse_undecodable_temp_directory

# ``[source] nulls = []``: no text means NULL. DuckDB wants a non-empty list, and a line break is
# a string no unquoted field holds (it ends the record), while a quoted one is never NULL here.
NO_NULL_TEXT = "\n"

# DuckDB's read_csv stops at a record over 2 MB by default (a long free-text note, a JSON field);
# Spark's reader has no such cap. Raising it allocates nothing until a record needs it (Adult read
# with either: the same time and peak), and an unclosed quote still ends in an error at the cap.
CSV_MAX_RECORD_BYTES = 1 << 30


def _as_number(value: exp.Expression, kind: str) -> exp.Expression:
    """An integer, date or boolean given as it is, as an integer that orders as it does: a date as
    its day number (DATE - DATE is whole days), a boolean as 0 or 1."""
    if kind == "date":
        return exp.Sub(this=value, expression=exp.Cast(this=exp.Literal.string("1970-01-01"),
                                                       to=exp.DataType(this=exp.DataType.Type.DATE)))
    if kind == "boolean":
        return exp.Cast(this=value, to=exp.DataType(this=exp.DataType.Type.INT))
    return value


def _strict_csv(delimiter: str, types: dict[str, str], nulls: Sequence[str]) -> dict[str, Any]:
    """read_csv's options for a CSV read as declared, nothing sniffed: a quoted field is the text it
    holds ("" an empty text, as sqlclose's own CSV writes it, where a NULL is an empty field;
    DuckDB's default reads "" as NULL)."""
    return {"auto_detect": False, "header": True, "delim": delimiter, "quote": '"', "escape": '"',
            "columns": types, "nullstr": list(nulls), "allow_quoted_nulls": False,
            "max_line_size": CSV_MAX_RECORD_BYTES}

# A release's packed sort key (``packed_sort_key``): DuckDB compares a UBIGINT key's high 56 bits
# in place. A column whose values span more than PACKED_KEY_MAX_RANGE ends the key: its offset
# from its least value might not fit the BIGINT it is computed in.
PACKED_KEY_BITS = 56
PACKED_KEY_MAX_RANGE = 1 << 62

# An ENUM type as DuckDB names it (``ENUM('a', 'it''s')``), alone or nested (``ENUM('a')[]``).
_ENUM = re.compile(r"ENUM\((?:'(?:[^']|'')*'(?:, )?)*\)")
# A caller's partitioned write's private database gets what the caller's database leaves of its
# limit, never less than this share of it (``_room_apart``).
APART_FLOOR = 0.25
# A caller's connection keeps its own settings (``DuckDBEngine.__init__`` refuses ours for it): its
# advice names the connection's SET, and says why the spec's are not it.
_CALLERS_SETTINGS = ("sqlclose's [engine] memory_limit, threads and temp_directory apply to a database of its own, "
                     "not to a connection given")
_LATTICE = ("a search deciding every node ([search] explore = \"lattice\") keeps far more than one exploring for the "
            "optimum alone (the default, --explore optimum)")
# The bytes a database's spill files hold now (its max_temp_directory_size bounds these).
_SPILLED = exp.select(exp.Sum(this=exp.column("size"))) \
    .from_(exp.Table(this=exp.Anonymous(this="duckdb_temporary_files"))).sql("duckdb")
# DuckDB's default max_temp_directory_size, as current_setting reads it: no cap of the caller's.
_DISK_DEFAULT = "of available disk space"
# The bytes DuckDB's buffer manager holds now (its memory limit bounds these).
_MEMORY_USED = exp.select(exp.Sum(this=exp.column("memory_usage_bytes"))) \
    .from_(exp.Table(this=exp.Anonymous(this="duckdb_memory"))).sql("duckdb")


# DuckDB warns that a DB-API result's Arrow output copies its rows, which ``_run_small`` does on
# purpose. The filter ignores that warning where this module calls DuckDB, nowhere else. It stays
# set, first (before a caller's "error" or "always"), and is put back when a caller's filters came
# before it or a ``catch_warnings`` block dropped it (pytest's collection wraps imports in one): a
# ``catch_warnings`` around each call was not thread-safe, since each call put back the filters it
# found, and jobs in threads of one process showed the warning.
def _ignore_arrow_copy() -> None:
    warnings.filterwarnings("ignore", "Arrow output on a DB-API result", UserWarning, re.escape(__name__) + r"\Z")


with warnings.catch_warnings():
    _ignore_arrow_copy()
    _ARROW_COPY_FILTER = warnings.filters[0]  # the entry as Python makes it, to find it again


def _quiet_arrow_copy() -> None:
    if warnings.filters[:1] != [_ARROW_COPY_FILTER]:
        _ignore_arrow_copy()


def _table(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True))


@contextmanager
def _interruptible() -> Iterator[None]:
    """DuckDB turns Ctrl-C inside a query into its own error: give it back as the interrupt it is."""
    try:
        yield
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None
    except RuntimeError as e:
        if "interrupted" in str(e).lower():
            raise KeyboardInterrupt from None
        raise


# Where DuckDB's conversion errors say which column failed, in its words before any value (a
# column named in plain word characters alone: the value that follows cannot ride along).
# Types DuckDB (2.0.1) writes to Parquet as other values: HUGEINT and UHUGEINT as DOUBLE (rounded
# past 2**53), TIMETZ as the UTC time (its offset lost), INTERVAL as Parquet's INTERVAL, which
# holds milliseconds (1.5 ms read back as 1 ms; Parquet has no finer interval type), UNION as a
# STRUCT of its tag's number and its members (Parquet has no union type). Inside a list or struct
# too; an ENUM's values and quoted names are not types.
# A VARIANT (Parquet keeps its values' types, which no sort tells apart) or a UNION, as a type: VARIANT
# followed by what ends a type (a struct's field named VARIANT is followed by its own type).
_VARIANT_OR_UNION = r"\bUNION\(|\bVARIANT(?=\s*(?:[,)\[]|$))"
_PARQUET_UNKEPT = re.compile(rf"\bU?HUGEINT\b|\bTIME WITH TIME ZONE\b|\bINTERVAL\b|{_VARIANT_OR_UNION}")
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
_TOP_ARRAY = re.compile(r"\[\d+\]$")  # a DuckDB type name of a fixed-size list (ARRAY): FLOAT[3]
_CAST_COLUMN = re.compile(r" when casting from source column (\w+)$")
_CSV_LINE = re.compile(r"^Conversion Error: CSV Error on Line: (\d+)")
RECORDS_COUNTED = "(as the CSV reader counts records, not lines)"
_CSV_COLUMN = re.compile(r'^Error when converting column "(\w+)"\.')
# Invalid-input errors about a file as a whole, which quote no value (a CSV's record is removed where
# it is shown: ``driver_message``). Every other one may quote the value or argument it refused —
# strptime's string, a JSON function's text, a hex digit, a codepoint, a regular expression read
# from a column — and is rebuilt without it: fail closed.
_NAMES_NO_VALUE = re.compile(r"magic bytes|CSV Error on Line|Malformed JSON in file")
# DuckDB's errors reading a Parquet file's data: the file named (``DuckDBEngine._unreadable_source``).
_PARQUET_READ = re.compile(r'(?:Invalid string encoding found in Parquet file|Failed to read file) "([^"]+)"')
_PARQUET_UNNAMED = {"Out of buffer"}  # a damaged page of a file stored uncompressed: nothing named


def _unreadable_message(path: Path, column: str, not_utf8: bool) -> str:
    if not_utf8:
        return (f"cannot read {path}: column {name_shown(column)} holds text that is not valid UTF-8 (a Parquet STRING "
                "column must; some writers mark raw bytes as text): write that column as binary, or fix its values")
    return (f"cannot read {path}: a data page of column {name_shown(column)} cannot be decoded (the file is damaged: a "
            "bad copy, or a write that did not finish): copy the file again, or write it again")


def message_without_values(e: BaseException) -> str | None:
    """A DuckDB conversion, overflow or invalid-input error (but those about a file as a whole)
    without the value it names; None for any other error. A source query's CAST (or its read_csv's
    declared types, strptime, a JSON or hex function over a text column), or a Parquet file cast to
    another's types, failed on a row and DuckDB quoted the value (``Could not convert string
    'SECRET-4711' to INT32``) in the job's error and log, a suppressed row's as much as any. Values
    are quoted with quotes they may hold, or bare: the message is rebuilt, not redacted — DuckDB's
    kind of error, and the CSV record (DuckDB numbers records, not lines: ``prepare.csv_lines`` tells
    a source's as lines) and the column where it names them."""
    text = str(e)
    invalid = isinstance(e, duckdb.InvalidInputException) and not _NAMES_NO_VALUE.search(text)
    if not (invalid or isinstance(e, (duckdb.ConversionException, duckdb.OutOfRangeException))):
        return None
    lines = [ln.strip() for ln in text.splitlines()]
    said = [f"{lines[0].split(':', 1)[0]}: a value could not be converted or computed (DuckDB's message names it, "
            "so it is not shown)"]
    if line := _CSV_LINE.match(lines[0]):
        said.append(f"CSV record {line[1]} {RECORDS_COUNTED}")
    column = _CAST_COLUMN.search(lines[0]) or next(filter(None, map(_CSV_COLUMN.match, lines[1:])), None)
    if column:
        said.append(f"column {name_shown(column[1])}")
    return "; ".join(said)


_BEFORE_FIXES = re.compile(r"\n(?=[ \t]*\n?(Possible fixes|Possible Solution|  file =))")


# A partitioned write's folder name is ``column=value``: the value is released data, a row's.
_PARTITION_FOLDER = re.compile(r"(/[A-Za-z0-9_-]+=)[^\"/]*")


def _partition_values_hidden(text: str) -> str:
    """An I/O error naming a partition folder (``Failed to create directory ".../note=…"``) with the
    value cut out of each ``column=value`` part of the path it quotes."""
    return _PARTITION_FOLDER.sub(r"\1…", text) if "directory" in text else text


def without_echoed_input(text: str) -> str:
    """A DuckDB CSV error without its echo of the input. The echo starts at ``Original Line:`` and,
    for a quote never closed, runs over every later record of the file (blank lines too), up to
    the reason DuckDB gives on the last line before its ``Possible fixes``: that line is kept, and
    nothing else of the echo; without the fixes to tell where it ends, nothing is."""
    head, marker, rest = text.partition("Original Line:")
    if not marker:
        return text
    end = _BEFORE_FIXES.search(rest)
    if end is None:
        return head.rstrip()
    lines = [line for line in rest[:end.start()].splitlines() if line.strip()]
    reason = lines[-1].strip() if len(lines) > 1 else ""  # one line alone is the echoed record
    return head + reason + rest[end.start():]


def _out_of_memory_said(message: str) -> str:
    """DuckDB's out-of-memory error without its advice (SQL settings): its first line, unprefixed."""
    return message.splitlines()[0].removeprefix("Out of Memory Error: ")


def _spilling(message: str) -> bool:
    """A DuckDB I/O error names the file it could not write: one of its spill files
    (``duckdb_temp_…``), or else a file of ours (the release being written, whose full disk the
    writer reports as the environment's). A message naming neither stays DuckDB's own."""
    return "duckdb_temp" in message


def _disk_bytes(cap: str | None) -> int | None:
    """A ``max_temp_directory_size`` as DuckDB reads it ("976.5 KiB", "0 bytes") in bytes; None for
    its default ("90% of available disk space", no cap of the user's) or a text not read."""
    if cap is None or _DISK_DEFAULT in cap:
        return None
    if (plain := re.fullmatch(r"(\d+) bytes", cap)) is not None:
        return int(plain.group(1))
    try:
        return parse_bytes(cap)
    except (TypeError, ValueError):
        return None


def qualified(table: str, database: str) -> exp.Table:
    """``schema.table`` names a table in a schema of the attached database; a plain name is main's
    (``table_parts``: a part in double quotes may hold a dot, ``main."a.b"``). Each part quoted."""
    schema, name = _parts(table)
    return exp.Table(this=exp.to_identifier(name, quoted=True), db=exp.to_identifier(schema, quoted=True),
                     catalog=exp.to_identifier(database, quoted=True))


@dataclasses.dataclass(frozen=True)
class TableSlot:
    """What a DuckDB database file holds where a table output ``[schema.]name`` would go, names
    matched as DuckDB matches them (``catalog_name``: ``People`` is ``main.people``)."""

    schema_exists: bool
    kind: str | None = None  # "table" or "view": what already goes by that name, if anything
    name: str | None = None  # that object's name as the database spells it
    referenced_by: tuple[str, ...] = ()  # the other tables whose FOREIGN KEY references that table
    # Its columns whose reader gets other values than stored: a collation (compares, groups and
    # joins 'A' and 'a' as one), a generated column (computed at every read, by any expression).
    altered: tuple[str, ...] = ()
    # What its schema says beside its rows, which a reader of the table reads too: an ENUM type's
    # members, a comment, a default, a constraint (each said in a phrase: "an ENUM type on column 'zip'").
    dressed: tuple[str, ...] = ()


# The tables and views of a database (schema, name, kind); ``{db}``: which, as SQL.
_OBJECTS = ("SELECT schema_name, table_name, 'table' FROM duckdb_tables() WHERE database_name = {db} "
            "UNION ALL SELECT schema_name, view_name, 'view' FROM duckdb_views() "
            "WHERE database_name = {db} AND NOT internal")


def _wanted(table: str) -> tuple[str, str]:
    """``[schema.]name`` (``table_parts``) as DuckDB's catalog matches it: (schema, name), ``main`` when none."""
    schema, name = _parts(table)
    return catalog_name(schema), catalog_name(name)


def _parts(table: str) -> tuple[str, str]:
    """``table_parts``, a name it refuses bad input: a spec's was refused when read, a report's
    (``check --against``) is read here as it is written."""
    try:
        return table_parts(table)
    except ValueError as e:
        raise InputError(str(e)) from None


def _named(objects: list[tuple], table: str) -> tuple | None:
    """The (schema, name, kind) of ``objects`` that ``table`` names, if any."""
    wanted = _wanted(table)
    return next((o for o in objects if (catalog_name(o[0]), catalog_name(o[1])) == wanted), None)


def _altered_columns(create: str) -> tuple[str, ...]:
    """The columns of a table's CREATE statement with a collation or an expression generating them
    (``TableSlot.altered``); ``("?",)`` when the statement does not parse and names either."""
    import sqlglot

    try:
        made = sqlglot.parse_one(create, read="duckdb")
    except sqlglot.errors.ParseError:
        return ("?",) if re.search(r"\b(COLLATE|GENERATED)\b", create, re.IGNORECASE) else ()
    kinds = (exp.CollateColumnConstraint, exp.GeneratedAsIdentityColumnConstraint, exp.ComputedColumnConstraint)
    top = made.this.expressions if isinstance(made.this, exp.Schema) else []
    return tuple(column.name for column in top if isinstance(column, exp.ColumnDef) and any(
        isinstance(c.args.get("kind"), kinds) for c in column.args.get("constraints") or []))


def _dressing(con: duckdb.DuckDBPyConnection, where: tuple[str, str]) -> tuple[str, ...]:
    """What a table's schema holds beside its columns' names and plain types (``TableSlot.dressed``)."""
    on = "database_name = current_database() AND schema_name = ? AND table_name = ?"
    phrases = []
    for name, enum, default, comment in con.execute(
            "SELECT column_name, data_type LIKE 'ENUM(%', column_default IS NOT NULL, comment IS NOT NULL "
            f"FROM duckdb_columns() WHERE {on} ORDER BY column_index", list(where)).fetchall():
        phrases += [f"{what} on column {name_shown(name)}" for what, held in
                    (("an ENUM type", enum), ("a default", default), ("a comment", comment)) if held]
    # fetched to its end, as every read here: a result left open makes DuckDB refuse a relation's query next
    # (ResourceInUse); this connection is table_slot's own and runs none, so it is for the next reader's sake
    if con.execute(f"SELECT comment FROM duckdb_tables() WHERE {on}", list(where)).fetchall()[0][0] is not None:
        phrases.append("a comment on the table")
    phrases += [f"a {kind} constraint" for (kind,) in con.execute(
        f"SELECT DISTINCT constraint_type FROM duckdb_constraints() WHERE {on} ORDER BY 1", list(where)).fetchall()]
    return tuple(phrases)


def _connect_read_only(path: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the database file at ``path``. Another process holding it open for
    writing (DuckDB's file lock: a dashboard, an analyst's shell) is the environment's state, told
    as the write path tells it (exit 5), not DuckDB's IOException (an internal error, exit 1)."""
    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.IOException as e:
        if DATABASE_LOCKED in str(e):
            raise DatabaseLocked.held(path) from None
        raise


def holds_variant_or_union(kind: str) -> bool:
    """Whether a DuckDB type name holds a UNION or a VARIANT, at any depth (not in an ENUM's values
    or a quoted field name)."""
    return re.search(_VARIANT_OR_UNION, _QUOTED.sub("", kind)) is not None


def table_slot(path: Path, table: str) -> TableSlot:
    """The slot of ``table`` in the database file at ``path``; read-only, brief. A file not made
    yet holds the schema ``main`` alone. DuckDB's own catalog views (``duckdb_tables``…) are the
    system database's, not the file's."""
    wanted = _wanted(table)
    if not Path(path).is_file():
        return TableSlot(schema_exists=wanted[0] == "main")
    con = _connect_read_only(path)
    try:
        schemas = {catalog_name(s) for (s,) in con.execute(
            "SELECT schema_name FROM duckdb_schemas() WHERE database_name = current_database()").fetchall()}
        found = _named(con.execute(_OBJECTS.format(db="current_database()")).fetchall(), table)
        keys = con.execute(  # a key references a table of its own schema (DuckDB allows no other)
            "SELECT DISTINCT schema_name, table_name, referenced_table FROM duckdb_constraints() "
            "WHERE database_name = current_database() AND constraint_type = 'FOREIGN KEY' ORDER BY ALL").fetchall()
        referencing = tuple(t for s, t, parent in keys if (catalog_name(s), catalog_name(parent)) == wanted
                            and catalog_name(t) != wanted[1])  # its own key goes with it
        made = con.execute("SELECT sql FROM duckdb_tables() WHERE database_name = current_database() AND "
                           "schema_name = ? AND table_name = ?", list(found[:2])).fetchall() if found else []
        return TableSlot(schema_exists=wanted[0] in schemas, kind=found and found[2], name=found and found[1],
                         referenced_by=referencing, altered=_altered_columns(made[0][0]) if made else (),
                         dressed=_dressing(con, found[:2]) if found and found[2] == "table" else ())
    finally:
        con.close()


class DuckDBEngine(Engine):
    """Runs on a connection of its own: to the process's shared database (``duckdb_database``), to a
    database of its own when given settings, or a cursor of the caller's (only temp objects made)."""

    name = "duckdb"
    dialect = DIALECT  # DuckDB's, every sort key's direction and NULLs said (a caller may set other defaults)
    wide_integer = "INT128"  # HUGEINT: its // is an integer, a DECIMAL's a DOUBLE
    keeps_levels = True
    orders_tables = True
    ungrouped_base = True
    has_dictionary_types = True
    cuts_negative_nan_text = True
    # DuckDB escapes the text's folder (%5F_HIVE…) and reads it back, but pyarrow's and Hive's readers
    # take a folder of that text for the NULL one: refused, as on Spark (review of the sixty-third round).
    unwritten_partition_text = ("__HIVE_DEFAULT_PARTITION__",)
    # Dates too: 'YYYY-MM-DD', '… (BC)', 'infinity' all cast back (tests/test_typed_leaves.py).
    exact_text_types = {**Engine.exact_text_types, "date32[day]": "DATE"}

    def __init__(self, connection: duckdb.DuckDBPyConnection | None = None, threads: int | None = None,
                 memory_limit: str | None = None, temp_directory: str | Path | None = None) -> None:
        """A connection to the shared database, to one of its own with settings, or to the caller's,
        left as the caller set it. ``memory_limit`` bounds the whole job: DuckDB gets its share of it
        (``limits.engine_share``) and spills to ``temp_directory`` beyond that; the search counts its
        own structures against the rest."""
        self.caller = connection  # the caller's connection, never run on but to read its session
        if temp_directory:  # DuckDB failed at connect as "std::bad_cast" (exit 1; the hundredth round)
            refuse_undecodable_temp_directory(temp_directory)
        self.memory_budget = parse_bytes(memory_limit) if memory_limit else None
        if self.memory_budget == 0:  # DuckDB would read a limit of 0 as none at all
            raise ValueError(f"memory_limit {memory_limit!r} is 0 bytes: give a limit above zero, or none")
        settings = {"threads": threads, "temp_directory": str(temp_directory) if temp_directory else None,
                    "memory_limit": f"{engine_share(self.memory_budget)}B" if self.memory_budget else None}
        settings = {key: value for key, value in settings.items() if value is not None}
        if connection is not None and settings:
            raise ValueError("threads, memory_limit and temp_directory apply to a connection of sqlclose's own, "
                             "not to a caller's")
        if self.memory_budget and (too_small := below_interpreter(self.memory_budget)):
            warnings.warn(too_small, LimitWarning, stacklevel=2)
        if temp_directory:
            _make_parents(Path(temp_directory))
        # Without settings of its own, a connection to the process's shared database (duckdb_database).
        self._shared = connection is None and not settings
        self.con = duckdb_database.shared_connection() if self._shared \
            else duckdb.connect(config=settings) if connection is None else _cursor_of(connection)
        # None: the caller's session was read and followed; else why it could not be (checked on use).
        self._unfollowed: str | None = None
        if connection is not None:
            self._refuse_default_collation()
            self._unfollowed = self._follow_session(connection)
        else:
            # DuckDB draws its own progress bar on stdout for a statement past ~2 s: it would garble
            # the CLI's output (its bar, a --json document) and a job's log. A caller's is left as set.
            self.con.execute("SET enable_progress_bar = false")
            self.con.execute("SET enable_progress_bar_print = false")
            # A TIMESTAMP WITH TIME ZONE's date (its year, its text) is read in the session's time zone,
            # by default the machine's: UTC makes a release the same on every machine, as on Spark.
            self.con.execute("SET TimeZone = 'UTC'")
        self._outside = 0  # the most the process has held outside DuckDB's buffers (fit_memory)
        self._engine_limit = engine_share(self.memory_budget) if self.memory_budget else None
        self._monitor: duckdb.DuckDBPyConnection | None = None
        self._temp: list[tuple[str, str]] = []  # (kind, name) to drop on close
        # The types of a temporary table of the engine's own, read once (``_own_table_types``): its
        # schema does not change while it lives, and a name made again is forgotten first (``_retyped``).
        self._table_types: dict[tuple[str, str], Any] = {}
        # The last query ``parquet_unkept_columns`` described, its parameters and its columns' types, for
        # ``copy_to_parquet`` to take once when it writes that same query next (``_described``).
        self._unkept_checked: tuple[exp.Expression, tuple, dict[str, str]] | None = None
        self._parquet_sources: set[str] = set()  # the Parquet files (or patterns) read as sources, as given
        # A release never closed (a notebook forgets) still leaves nothing once collected, nor at
        # exit: what it made on its cursor of a caller's connection is dropped and the cursor closed,
        # its links folder removed; on the shared database, only what is the database's (_drop_all's
        # main_tables). The callbacks hold the connection and the lists, never the engine. A database
        # of the engine's own goes with it.
        self._main_tables: set[str] = set()  # on the shared database: tables of its own, not of the connection
        self._cleanup = None if self._own_database else weakref.finalize(
            self, _drop_all, self.con, self._temp, self._main_tables if self._shared else None)

    @staticmethod
    def is_connection(obj: object) -> bool:
        return isinstance(obj, duckdb.DuckDBPyConnection)

    def row_hash(self, alias: str, secret: exp.Expression) -> exp.Expression:
        # The low 64 bits of MD5(secret || the row as text) are a UBIGINT; SUM widens it to HUGEINT.
        # DuckDB's own fingerprint is typed (``digests.keyed_fingerprint``): this keeps the engines' hooks alike.
        text = exp.DPipe(this=secret, expression=exp.Cast(this=exp.column(alias), to=exp.DataType.build("VARCHAR")))
        return exp.Anonymous(this="MD5_NUMBER_LOWER", expressions=[text])

    def value_hash(self, value: exp.Expression, as_is: bool = False) -> exp.Expression:
        # HASH hashes NULL apart from every value (to a value, not to NULL).
        return exp.Anonymous(this="HASH", expressions=[key_value(value, as_is, "VARCHAR")])

    def hash_of_hashes(self, hashes: Sequence[exp.Expression]) -> exp.Expression:
        # HASH combines its arguments in order.
        return exp.Anonymous(this="HASH", expressions=[h.copy() for h in hashes])

    def rehash(self, key: exp.Expression) -> exp.Expression:
        return exp.Anonymous(this="HASH", expressions=[key.copy()])

    def engine_error(self, e: Exception, sql: str) -> EngineError:
        if (unreadable := self._unreadable_source(e, sql)) is not None:
            return unreadable
        redacted = message_without_values(e)
        if redacted is not None:
            return EngineError(f"{type(e).__name__}: {redacted}", sql)
        if isinstance(e, duckdb.IOException) and (_spilling(str(e)) or self._names_temp_directory(str(e))):
            if "No space left on device" in str(e):
                return self._out_of_disk(sql)
            return self._cannot_spill(str(e), sql)
        if isinstance(e, duckdb.OutOfMemoryException) and "max_temp_directory_size" in str(e):
            return self._out_of_disk(sql, capped=True)  # DuckDB caps its spill files at the disk's free space
        if isinstance(e, (duckdb.InternalException, duckdb.FatalException)):  # its C++ stack: 50 lines of it
            first = _partition_values_hidden(without_echoed_input(str(e).splitlines()[0]))
            return EngineFault(f"{type(e).__name__}: {first} (an error inside DuckDB; its stack trace is left out)",
                               sql)
        if not isinstance(e, duckdb.OutOfMemoryException):
            return EngineError(f"{type(e).__name__}: {_partition_values_hidden(without_echoed_input(str(e)))}", sql)
        return self._out_of_memory(str(e), sql)

    def _out_of_memory(self, message: str, sql: str) -> EngineOutOfMemory:
        """DuckDB's own advice names SQL settings a user of the CLI cannot reach: say what to change
        in the spec. On a caller's connection the spec's settings do not apply: its own ``SET
        memory_limit`` is the limit (a caller's ``SET memory_limit = '32MB'`` was told "within its
        default limit (80 % of RAM): raise [engine] memory_limit", hundredth round)."""
        said = _out_of_memory_said(message)
        if self.caller is not None:
            fewer = "" if self._threads() == 1 else ", or SET threads = 1 on it (a query then needs less memory)"
            off = " (its temp_directory is '': spilling is forbidden on it)" if self._spilling_forbidden() else ""
            return EngineOutOfMemory(
                f"DuckDB ran out of memory ({said}) within {self._callers_limit()}: raise it on that connection "
                f"(SET memory_limit){fewer}, and SET temp_directory on it to a folder on a disk with room to "
                f"spill{off} ({_CALLERS_SETTINGS}); nothing was placed at the output path", sql)
        given = (f"its {megabytes(self._engine_limit)} of the job's memory_limit "
                 f"({megabytes(self.memory_budget)})" if self.memory_budget else "its default limit (80 % of RAM)")
        fewer = "" if self._threads() == 1 else \
            ", or set [engine] threads = 1 (a query then needs less memory)"
        return EngineOutOfMemory(
            f"DuckDB ran out of memory ({said}) within {given}: raise [engine] memory_limit (--memory-limit){fewer}, "
            f"and give [engine] temp_directory (--temp-directory) on a disk with room to spill; nothing was placed "
            f"at the output path", sql)

    def _callers_limit(self) -> str:
        """The caller's connection's memory limit as its advice names it, with its value as DuckDB shows it."""
        limit = self._setting("memory_limit")
        shown = f" ({limit}, as current_setting('memory_limit') reads it)" if limit else ""
        return f"the memory_limit of the DuckDB connection given{shown}"

    def _unreadable_source(self, e: Exception, sql: str) -> SourceDataError | None:
        """A Parquet source file whose data DuckDB could not read, first met by whatever pass read
        it (the scan for a QI, the write's COPY for a kept column): text that is not UTF-8, a damaged
        page. DuckDB names the file (and the value, never shown), or nothing ("Out of buffer"), and
        never the column: each column of the file (of every source file, when none is named) is
        read alone until one fails. None for any other error."""
        text = str(e)
        named = _PARQUET_READ.search(text)
        if named is None and text.strip() not in _PARQUET_UNNAMED:
            return None
        candidates = [named.group(1)] if named else sorted(self._parquet_sources)
        for given in candidates:
            if not self._reads_source(given):
                continue
            found = self._failing_column(given)
            if found is not None:
                return SourceDataError(_unreadable_message(Path(given).resolve(), *found), sql)
        return None

    def _reads_source(self, given: str) -> bool:
        """Whether ``given`` (a file DuckDB names) is a Parquet source of this engine, or a match of one's pattern."""
        return any(given == source or (any(ch in GLOB_CHARACTERS for ch in source) and fnmatch.fnmatch(given, source))
                   for source in self._parquet_sources)

    def _failing_column(self, given: str) -> tuple[str, bool] | None:
        """The first column of the Parquet file ``given`` whose every value cannot be read, and
        whether its text is what failed (not UTF-8) rather than its pages (damaged)."""
        options = {"hive_partitioning": False}
        try:
            with _interruptible():
                names = self._relation(*_reader("read_parquet", given, options, exp.Star())).columns
        except duckdb.Error:
            return None
        for name in names:
            every_value = exp.Max(this=exp.Anonymous(this="HASH", expressions=[exp.column(name, quoted=True)]))
            try:
                with _interruptible():
                    self._relation(*_reader("read_parquet", given, options, every_value)).fetchall()
            except duckdb.Error as failed:
                return name, "Invalid string encoding" in str(failed)
        return None

    def _relation(self, query: exp.Select, params: list[Any]) -> duckdb.DuckDBPyRelation:
        """A query on the connection itself, not through ``fetch``: an error stays DuckDB's."""
        return self.con.sql(query.sql("duckdb"), params=params)

    def _threads(self) -> int | None:
        threads = self._setting("threads")
        return int(threads) if threads is not None else None

    def _temp_directory(self) -> str | None:
        return self._setting("temp_directory") or None

    def _spilling_forbidden(self) -> bool:
        """The connection's ``temp_directory`` is empty (``SET temp_directory = ''``): DuckDB spills
        nothing to disk. An unread setting is not taken for it."""
        return self._setting("temp_directory") == ""

    def _setting(self, name: str) -> Any:
        """A DuckDB setting of the connection; None when it cannot be read (a failing connection)."""
        try:
            return self.con.execute("SELECT current_setting(?)", [name]).fetchall()[0][0]
        except duckdb.Error:
            return None

    def _temp_place(self) -> str:
        where = self._temp_directory()
        return f"its temp directory ({Path(where).resolve()})" if where else "its temp directory"

    def _names_temp_directory(self, message: str) -> bool:
        """DuckDB's error names the temp directory itself (it could not create it)."""
        where = self._temp_directory()
        return bool(where) and any(f'"{name}"' in message for name in {where, str(Path(where).resolve())})

    def _cannot_spill(self, message: str, sql: str) -> EngineCannotSpill:
        """DuckDB could not create or write its temp directory (by default ``.tmp`` in the working
        folder, which a scheduled job's working folder may not allow): say where and what to change."""
        place = self._temp_place()
        reason = message.splitlines()[0].rpartition('": ')[2] or message.splitlines()[0]
        if self.caller is not None:
            return EngineCannotSpill(
                f"DuckDB could not spill past its memory limit to {place}: {reason}; SET temp_directory on the "
                f"DuckDB connection given to a folder it can write (by default it is .tmp in the working folder), or "
                f"raise {self._callers_limit()} (SET memory_limit) so that less spills ({_CALLERS_SETTINGS}); "
                f"nothing was placed at the output path", sql)
        return EngineCannotSpill(
            f"DuckDB could not spill past its memory limit to {place}: {reason}; give [engine] temp_directory "
            f"(--temp-directory) a folder it can write (by default it is .tmp in the working folder), or raise "
            f"[engine] memory_limit (--memory-limit) so that less spills; nothing was placed at the output path", sql)

    def _out_of_disk(self, sql: str, capped: bool = False) -> EngineOutOfDisk:
        """The disk filled while DuckDB spilled: say where it spills and what to change. ``capped``:
        DuckDB's cap on its spill files stopped it; on a caller's connection that set the cap
        (``SET max_temp_directory_size``), the cap is what to raise, the disk perhaps far from full
        (it was told "filled the disk", hundred-and-first round)."""
        place = self._temp_place()
        if self.caller is not None and capped and _disk_bytes(self._setting("max_temp_directory_size")) is not None:
            return EngineOutOfDisk(
                f"DuckDB spilled past its memory limit into {place} until it reached {self._callers_cap()}: raise "
                f"it on that connection (SET max_temp_directory_size), or raise {self._callers_limit()} (SET "
                f"memory_limit) so that less spills ({_CALLERS_SETTINGS}); {_LATTICE}; nothing was placed at the "
                f"output path", sql)
        if self.caller is not None:
            return EngineOutOfDisk(
                f"DuckDB filled the disk of {place} with the data it spilled past its memory limit: SET "
                f"temp_directory on the DuckDB connection given to a folder on a disk with more room, or raise "
                f"{self._callers_limit()} (SET memory_limit) so that less spills ({_CALLERS_SETTINGS}); {_LATTICE}; "
                f"nothing was placed at the output path", sql)
        return EngineOutOfDisk(
            f"DuckDB filled the disk of {place} with the data it spilled past its memory limit: give [engine] "
            f"temp_directory (--temp-directory) on a disk with more room, or raise [engine] memory_limit "
            f"(--memory-limit) so that less spills; {_LATTICE}; nothing was placed at the output path", sql)

    def _run(self, sql: str, params: Sequence[Any] | None) -> pa.Table:
        with _interruptible():
            return self.con.sql(sql, params=self.bind(params) if params else None).to_arrow_table()

    def _run_small(self, sql: str, params: Sequence[Any] | None) -> pa.Table:
        # A relation (``con.sql``) binds its statement once more before it runs, ~1 ms, a quarter of a
        # small query's time; a DB-API result skips that, and copies its rows once more to give them
        # as Arrow, which costs nothing on one row and doubles the memory of a large result.
        _quiet_arrow_copy()
        with _interruptible():
            return self.con.execute(sql, self.bind(params) if params else None).to_arrow_table()

    def _execute(self, sql: str, params: Sequence[Any] | None) -> None:
        with _interruptible():
            self.con.execute(sql, self.bind(params) if params else None)

    def create_temp_table(self, name: str, query: exp.Expression, params: Sequence[Any] = (),
                          owned: bool = False, shared: bool = False) -> exp.Table:
        """``shared``: a table of the connection's own database, which a cursor of it sees (read as
        a ``(connection, table)`` source, which a cursor reads); only on a connection of sqlclose's
        own, in memory, where it goes with the connection."""
        if shared and not self._own:
            raise ValueError("a shared table is made on a connection of sqlclose's own only")
        properties = None if shared else exp.Properties(expressions=[exp.TemporaryProperty()])
        self._retyped(name)
        self.execute(exp.Create(this=_table(name), kind="TABLE", expression=query, properties=properties), params,
                     owned=owned)
        self._temp.append(("table", name))
        if shared and self._shared:
            self._main_tables.add(name)
        return _table(name)

    def create_temp_view(self, name: str, query: exp.Expression) -> exp.Table:
        self.execute(exp.Create(this=_table(name), kind="VIEW", expression=query,
                                properties=exp.Properties(expressions=[exp.TemporaryProperty()])))
        self._temp.append(("view", name))
        return _table(name)

    def register(self, name: str, table: pa.Table | duckdb.DuckDBPyRelation) -> None:
        self._retyped(name)
        self.con.register(name, table)  # replaces an earlier table of the same name
        if ("arrow", name) not in self._temp:
            self._temp.append(("arrow", name))

    def load(self, name: str, table: pa.Table) -> None:
        # Joins to a registered Arrow table are planned without its size: the base histogram of a
        # 10 M-row table took 3.2 s with its lookups registered, 2.8 s with them loaded
        # (docs/performance.md, twenty-sixth round). The view lives only for the copy.
        self.unregister(name)  # what had the name (registered or loaded) goes first
        view = self.temp_name("arrow")
        self.con.register(view, table)
        try:
            self.execute(exp.Create(this=_table(name), kind="TABLE",
                                    expression=exp.select(exp.Star()).from_(_table(view)),
                                    properties=exp.Properties(expressions=[exp.TemporaryProperty()])), owned=True)
        finally:
            self.con.unregister(view)
        self._temp.append(("table", name))

    def unregister(self, name: str) -> None:
        self._retyped(name)
        if ("arrow", name) in self._temp:
            self.con.unregister(name)
            self._temp.remove(("arrow", name))
        if ("table", name) in self._temp:
            self.execute(f"DROP TABLE IF EXISTS {_table(name).sql('duckdb')}")
            self._temp.remove(("table", name))

    def keep(self, name: str, query: exp.Expression, append: bool = False) -> None:
        # A temporary table lives under the connection's memory limit and spills past it.
        # The floors' and levels' queries are large (a branch per node): rendered without a copy.
        if append:
            self.execute(exp.Insert(this=_table(name), expression=query), owned=True)
            return
        self._retyped(name)
        self.execute(exp.Create(this=_table(name), kind="TABLE", expression=query, replace=True,
                                properties=exp.Properties(expressions=[exp.TemporaryProperty()])), owned=True)
        if ("table", name) not in self._temp:
            self._temp.append(("table", name))

    def rename(self, old: str, new: str) -> None:
        self.unregister(new)
        self._retyped(old)
        self.execute(exp.Alter(this=_table(old), kind="TABLE",
                               actions=[exp.AlterRename(this=exp.Table(this=exp.to_identifier(new, quoted=True)))]),
                     owned=True)
        self._temp.remove(("table", old))
        self._temp.append(("table", new))

    def source_relation(self, read: FileRead) -> exp.Expression:
        name = self.temp_name("source")
        if read.kind == "duckdb":
            alias = self.temp_name("db")
            attach = exp.Attach(this=exp.alias_(exp.Placeholder(this="1"), exp.to_identifier(alias, quoted=True)),
                                expressions=[exp.AttachOption(this=exp.var("READ_ONLY"))])
            self.execute(attach, [str(read.path)])
            self._temp.append(("database", alias))
            self._refuse_missing_table(alias, read)
            self._search_first(read.path.parent)
            return self.compared_as_bytes(qualified(read.table, alias))
        if read.kind == "query":
            return self.compared_as_bytes(self._query_source(name, read))
        path = str(read.path) if read.glob else self._literal(read.path)
        if read.kind == "csv":
            # Parsed once into a temp table: the search, the release and the checks all read it.
            return self.create_temp_table(name, *self._read_csv(path, read), owned=True)
        if read.kind == "parquet":
            if read.files:  # listed by the source, without a Spark job's leftovers: the glob would read them
                path = self._files_below(read.path.parent.parent, read.files) if read.parquet_folder \
                    else [self._literal(f) for f in read.files]
            # A folder's Hive partition folders (col=value) are columns, as its writer meant them,
            # read as the text they are: typed by guessing from every folder's name, a suppressed
            # row's too, they were BIGINT beside dept=30 and text beside dept=3A (and 01 read as 1).
            self._parquet_sources.update(path if isinstance(path, list) else [path])
            options = {"hive_partitioning": read.parquet_folder, "hive_types_autocast": False}
            query, params = _reader("read_parquet", path, options)
            footers = self._footers(path)
            if _small_files(footers):
                return self.create_temp_table(name, query, params)
            query, params = self._sliced(path, options, footers) or (query, params)
            return self._view(name, self.con.sql(query.sql("duckdb"), params=params))
        raise ValueError(f"unknown source kind {read.kind!r}")

    def _refuse_missing_table(self, alias: str, read: FileRead) -> None:
        """A table the attached database does not hold is told with the ones it holds (names, not
        data): DuckDB's own error guessed a name from its whole catalog (`Did you mean
        "pg_catalog.pg_enum"?`), found by the sixty-second round's review."""
        objects = [tuple(row.values()) for row in self._run_small(_OBJECTS.format(db="$1"), [alias]).to_pylist()]
        if _named(objects, read.table) is not None:
            return
        # Each as it is typed (typed_name): the table "a.b" was listed 'a.b', which names table b of schema a.
        held = sorted(typed_name([n] if catalog_name(s) == "main" else [s, n]) for s, n, _ in objects)
        listed = ", ".join(name_shown(n) for n in held[:20]) + (f" and {len(held) - 20} more" if len(held) > 20 else "")
        holds = f"it holds {listed}" if held else "it holds none"
        as_listed = ", as listed (a part holding a dot in its double quotes)" if any(
            "." in s + n for s, n, _ in objects) else ""
        raise InputError(f"{read.path} holds no table or view {name_shown(read.table)} ({holds}); name one it holds as "
                         f"the table to read{as_listed}")

    def _search_first(self, folder: Path) -> None:
        """Relative file names (a database's view over 'people.parquet') looked up in ``folder``
        before the session's search path, for as long as the engine reads: a view is bound at every
        read. DuckDB looks in the working folder before any of them (``sources`` refuses a source
        whose relative names the working folder also holds)."""
        previous = self.fetch_row("SELECT current_setting('file_search_path') AS f")["f"] or ""
        self.execute("SET file_search_path = $1", [",".join(filter(None, [self._searchable(folder), previous]))])

    def _searchable(self, folder: Path) -> str:
        """``folder`` as an entry of ``file_search_path``, whose entries DuckDB splits at commas: a
        folder whose path holds one (``/data/2026,q4``) is searched through a link of a plain name."""
        return str(folder.absolute()) if "," not in str(folder.absolute()) else str(self.link_to(folder))

    def _footers(self, path: str | list[str]) -> dict[str, int]:
        """What the footers of the Parquet files ``path`` names tell, in one read: how many files,
        their rows, the largest file's rows and their row groups."""
        query, params = _reader("parquet_file_metadata", path, {}, [
            exp.Count(this=exp.Star()).as_("files"), exp.Sum(this=exp.column("num_rows")).as_("rows"),
            exp.Max(this=exp.column("num_rows")).as_("largest"),
            exp.Sum(this=exp.column("num_row_groups")).as_("row_groups")])
        return {key: int(value or 0) for key, value in self.fetch_row(query, params).items()}

    def _sliced(self, path: str | list[str], options: dict[str, Any],
                footers: dict[str, int]) -> tuple[exp.Expression, list[Any]] | None:
        """The Parquet files ``path`` names read with ``options`` in slices of their rows, when they
        hold fewer row groups than the threads (engine.parquet_slices): each slice keeps a range of
        each file's row numbers, the ranges covering the largest file's. None otherwise, or when a
        column of their own bears the row number's name: DuckDB refuses to add it there, and the
        bare name would read that column."""
        bounds = slice_bounds(footers["largest"], footers["row_groups"], self._threads() or 1)
        if not bounds or ROW_NUMBER in (c.lower() for c in self._relation(*_reader("read_parquet", path,
                                                                                     options)).columns):
            return None
        numbered, params = _reader("read_parquet", path, {**options, ROW_NUMBER: True},
                                   exp.Star(except_=[exp.column(ROW_NUMBER, quoted=True)]))
        return sliced_read(numbered, bounds), params

    def _query_source(self, name: str, read: FileRead) -> exp.Table:
        """Run the (validated) SELECT once into a temp table: over a database attached read-only
        (its tables by their names, as the database's own default), or over files looked up in
        ``read.folder``. Every later pass reads the same rows, whatever the query does."""
        previous = self.fetch_row("SELECT current_database() AS d, current_setting('file_search_path') AS f")
        database, search_path = previous["d"], previous["f"]
        if read.path is not None:
            alias = self.temp_name("db")
            attach = exp.Attach(this=exp.alias_(exp.Placeholder(this="1"), exp.to_identifier(alias, quoted=True)),
                                expressions=[exp.AttachOption(this=exp.var("READ_ONLY"))])
            self.execute(attach, [str(read.path)])
            self._temp.append(("database", alias))
            self.execute(f"USE {exp.to_identifier(alias, quoted=True).sql('duckdb')}")
        # The query's relative names in its folder, its database's views' in the database's (as a
        # table source's views; a name both hold is refused before: ``sources``).
        folders = dict.fromkeys(f.absolute() for f in (read.folder, read.path and read.path.parent) if f)
        if folders:
            self.execute("SET file_search_path = $1", [",".join(self._searchable(f) for f in folders)])
        try:
            # The result's names as the query gives them, before the table stores them: DuckDB
            # renames a second ssn (or SSN) ssn_1, which others = "keep" released.
            refuse_renamed_columns(self._result_names(read.query), "the source query")
            return self.create_temp_table(name, read.query)
        finally:
            self.execute(f"USE {exp.to_identifier(database, quoted=True).sql('duckdb')}")
            self.execute("SET file_search_path = $1", [search_path or ""])

    def _result_names(self, query: exp.Expression) -> list[str]:
        """The column names of ``query``'s result as it gives them (bound, not run); a query that
        does not bind fails as its run would (``execute``)."""
        sql = self.render(query)
        try:
            with _interruptible():
                return list(self.con.sql(sql).columns)
        except duckdb.Error as e:
            raise self.wrapped_error(e, sql) from None

    def compared_as_bytes(self, relation: exp.Table) -> exp.Table:
        """``relation`` with its text compared byte by byte: a view re-collating every VARCHAR
        column to DuckDB's ``binary``, the relation itself when it has none. A column of a DuckDB
        table or query declared ``COLLATE NOCASE`` (or any collation) groups, joins and hashes "A"
        and "a" as one value, where sqlclose's hierarchies, lookups and re-check tell them apart:
        its release was refused by the re-check as altered. A column without a collation reads as
        it is. An ENUM column (alone or nested) reads as its text, below."""
        types = self.column_types(exp.select(exp.Star()).from_(relation.copy()).limit(0))
        text = [name for name, kind in types.items() if kind == "VARCHAR"]
        enums = {name: _ENUM.sub("VARCHAR", kind) for name, kind in types.items() if _ENUM.search(kind)}
        if not text and not enums:
            return relation
        binary = exp.Identifier(this="binary", quoted=True)
        replaced = [exp.alias_(exp.Collate(this=exp.column(name, quoted=True), expression=binary.copy()),
                               exp.to_identifier(name, quoted=True)) for name in text]
        # An ENUM's members are the type's, not the rows': often every value the column held when
        # the type was made (CREATE TYPE … AS ENUM (SELECT DISTINCT …)), a suppressed row's too. A
        # column given as it is kept the type, and a CSV output's report (its column types) and a
        # DuckDB table output (its schema) listed them all. Read as text, a column holds its rows'.
        replaced += [exp.alias_(exp.Cast(this=exp.column(name, quoted=True),
                                         to=exp.DataType.build(kind, dialect="duckdb")),
                                exp.to_identifier(name, quoted=True)) for name, kind in enums.items()]
        view = exp.select(exp.Star(**{"replace": replaced})).from_(relation.copy())
        return self.create_temp_view(self.temp_name("compared_as_bytes"), view)

    @staticmethod
    def is_relation(obj: object) -> bool:
        return isinstance(obj, duckdb.DuckDBPyRelation)

    def load_relation(self, name: str, relation: Any, what: str | None = None) -> exp.Table:
        """A DuckDB relation (of any connection) streamed as Arrow record batches into a temp table
        of this engine, by one SQL statement: its rows never become Python objects. A column of a
        type Arrow does not carry as it is refused first (``_refuse_unstreamed``), naming ``what``
        the relation is (None: a relation source)."""
        _refuse_unstreamed(relation, what)
        reader_name = self.temp_name("relation_stream")
        stream = relation.to_arrow_reader() if hasattr(relation, "to_arrow_reader") else relation.fetch_record_batch()
        try:
            self.con.register(reader_name, stream)
            return self.create_temp_table(name, exp.select(exp.Star()).from_(_table(reader_name)))
        finally:
            # First, whatever follows fails: an open stream holds the relation's connection (the
            # caller's), and a failed read's traceback kept it blocked for as long as it lived.
            if hasattr(stream, "close"):
                stream.close()
            with suppress(duckdb.Error):
                self.con.unregister(reader_name)

    def caller_table(self, table: exp.Table) -> exp.Expression:
        """A table of the caller's connection as our cursor reads it: by its name, when the cursor
        sees it (the database's tables and views); else — a temporary table, a DataFrame the caller
        registered, a table its open transaction made, which only the caller's session sees — streamed
        once from the caller's connection into a temporary table of ours (``load_relation``)."""
        try:
            self.schema(table)
            return table
        except EngineError as e:
            if self.caller is None or "does not exist" not in str(e):
                raise
        query = exp.select(exp.Star()).from_(table.copy()).sql("duckdb")
        return self.load_relation(self.temp_name("caller_table"), self.caller.sql(query),
                                  f"table {name_shown(table.name)}, which only the connection's session sees,")

    def _literal(self, path: Path, hive_root: bool = False) -> str:
        """DuckDB expands * ? [ ] { } in file paths; a literal path holding them is read through a
        link of a plain name, so it reads that one file and never its look-alikes. ``hive_root``: a
        folder read with Hive partitioning, whose own path must hold no ``col=value`` part either
        (DuckDB reads every such part of a file's whole path as a column: a folder below
        ``…/zip=99/`` had its zip column read as 99)."""
        odd = GLOB_CHARACTERS | ({"="} if hive_root else set())
        if not any(ch in odd for ch in str(path)):
            return str(path)
        return str(self.link_to(path))

    def _files_below(self, folder: Path, files: Sequence[Path]) -> list[str]:
        """``files`` of a Hive-partitioned ``folder``, read through its plain-named link where its
        own path holds a ``col=value`` part (``_literal``)."""
        root = self._literal(folder, hive_root=True)
        return [str(Path(root) / Path(f).relative_to(folder)) for f in files]

    def _read_csv(self, path: str, read: FileRead) -> tuple[exp.Expression, list[Any]]:
        """No sniffing: the header's columns, each read as the text it is, except declared types and
        numeric (ordered) columns; strict, so a ragged row is an error naming its line."""
        types = {name: read.types.get(name, "VARCHAR") for name in read.header}
        declared = {c: kind for c, kind in read.types.items() if c in types and kind != "VARCHAR"}
        required = [c for c in read.numeric if c not in read.types and c in types]
        if declared or required:  # one pass over the file as text (DuckDB's BIGINT read rounds 5000.5)
            as_text = dataclasses.replace(read, types={}, numeric=())
            relation, params = self._read_csv(path, as_text)
            found = self.number_types(relation, declared, required, params)
            # no number type read: DOUBLE for an ordered column, so that a stray text value fails with
            # its line
            types.update({c: found[c] or "DOUBLE" for c in required})
        options = _strict_csv(read.delimiter, types, list(read.nulls) or [NO_NULL_TEXT])
        if read.new_line is not None:  # the characters escaped, as DuckDB takes them ("\\r\\n")
            options["new_line"] = read.new_line.replace("\r", "\\r").replace("\n", "\\n")
        return _reader("read_csv", path, {**options, "encoding": read.encoding})

    def parquet_file_types(self, path: Path) -> dict[str, str]:
        """The columns one Parquet file holds, as DuckDB reads it alone, with their type names (not its
        Hive folders' partition columns, which DuckDB would add for a path holding ``dept=10/``)."""
        return self.column_types(*_reader("read_parquet", self._literal(path), {"hive_partitioning": False}))

    def parquet_footers(self, paths: Sequence[Path]) -> list[tuple]:
        """Per file, what decides how DuckDB reads it: its schema's elements in order (name, physical
        and logical types, repetition, children …) and its key-value metadata but pandas' (an index's
        row range, different in every file pandas wrote). Files alike here read alike; the footers
        of a folder's files in two passes, where ``parquet_file_types`` costs one per file (2,000
        files: 0.5 s against 2.6 s). Each file's elements are put in order by their place in its
        footer (``column_id``), whatever the threads: these were read on one thread for their order,
        ``SET threads`` being the database's, so a caller's other cursors (or another job's on the
        shared database) ran on one thread meanwhile, and a ``SET threads`` made meanwhile was
        undone (hundredth round). Files whose Arrow schema embeds pandas' metadata differ there,
        and are compared one by one."""
        literal = [self._literal(p) for p in paths]
        elements = ["name", "type", "type_length", "repetition_type", "num_children", "converted_type", "scale",
                    "precision", "field_id", "logical_type"]
        schema_read, params = _reader("parquet_schema", literal, {}, exp.select(
            "file_name", *[exp.column(e) for e in elements]).selects)
        schema = self.fetch(schema_read.order_by(exp.column("file_name"), exp.column("column_id")),
                            params).to_pylist()
        metadata = self.fetch(*_reader("parquet_kv_metadata", literal, {}, exp.select(
            "file_name", "key", "value").selects)).to_pylist()
        of: dict[str, tuple[list, list]] = {name: ([], []) for name in literal}
        for row in schema:
            of[row["file_name"]][0].append(tuple(row[e] for e in elements))
        for row in metadata:
            if row["key"] != b"pandas":
                of[row["file_name"]][1].append((row["key"], row["value"]))
        return [(tuple(of[name][0]), tuple(sorted(of[name][1]))) for name in literal]

    def read_parquet(self, path: Path) -> exp.Expression:
        # Absolute: DuckDB looks a relative path up in file_search_path, which a caller's session may
        # set (followed by our cursor); the written folder is relative to the working folder.
        path, name = Path(path).absolute(), self.temp_name("written")
        if path.is_dir():  # every part file; partition values stay text (no type guessing)
            query, params = _reader("read_parquet", self._folder_parts(path),
                                    {"hive_partitioning": True, "hive_types_autocast": False})
            with _interruptible():
                return self._view(name, self.con.sql(query.sql("duckdb"), params=params))
        return self._view(name, self.con.read_parquet(self._literal(path)))

    def _folder_parts(self, folder: Path) -> list[str] | str:
        """A written folder's part files as its readers take them (``listing.folder_files``): every
        file not under a hidden path part, whatever its name. A glob of ``*.parquet`` read a
        ``_pad.parquet`` Spark skips and skipped a ``000000_0`` it reads: ``check --against`` judged
        other rows than a reader gets (the eighty-seventh round's review). A file that is no Parquet
        is refused: its readers would fail on it, or read rows nobody checked."""
        found = folder_files(folder)
        if found.special:
            raise InputError(special_refusal(found.special, f"{folder} holds") + ": the folder cannot be read as "
                             "one table; move it out")
        if found.other:
            raise InputError(f"{folder} holds {found.other[0]}, which is not a Parquet file (its first bytes are not "
                             "PAR1), yet a reader of the folder (Spark, Hive, sqlclose) takes every file not under a "
                             "path part starting with \"_\" or \".\": the folder cannot be read as one table; "
                             "move it out")
        if found.linked:  # a reader of the folder reads rows below it that this read would not
            raise InputError(linked_folder_refusal(folder, found.linked, "the folder"))
        if not found.parquet:  # nothing to list: DuckDB's own error tells it
            return str(Path(self._literal(folder, hive_root=True)) / "**" / "*.parquet")
        return self._files_below(folder, found.parquet)

    def _view(self, name: str, relation: duckdb.DuckDBPyRelation) -> exp.Table:
        """A relation readable by SQL as ``name``: registered, a temporary view (``create_view`` made
        it in the connection's database, which a caller's read-only connection refused, so that no
        release from one could be written and read back)."""
        self.register(name, relation)
        return _table(name)

    def copy_to_parquet_folder(self, query: exp.Expression, path: Path, params: Sequence[Any] = (),
                               partition_by: Sequence[str] = (), rows: int | None = None) -> None:
        """One file ``part-0.parquet`` (DuckDB keeps the query's order in it, and writes it in
        parallel: ``rows`` is not needed), or with ``partition_by`` one per partition folder:
        deterministic names, byte-reproducible output."""
        query = self._arrays_as_lists(query, params)
        if partition_by and self.caller is not None:  # the caller's database: its threads are the caller's
            self._copy_partitioned_apart(query, params, partition_by, path)
            return
        if partition_by:
            target, extra = str(path), ["part-{i}"]
        else:
            path.mkdir()
            target, extra = str(path / "part-0.parquet"), []
        copy = exp.Copy(this=query.subquery(), kind=False, files=[exp.Placeholder(this=str(len(params) + 1))],
                        params=_parquet_options(partition_by, len(params) + 2))
        with self._one_thread(bool(partition_by)):
            self.execute(copy, [*params, target, *extra])

    def _copy_partitioned_apart(self, query: exp.Expression, params: Sequence[Any], partition_by: Sequence[str],
                                path: Path) -> None:
        """A partitioned COPY on one thread without touching a caller's database: ``SET threads``
        is the database's, so ``_one_thread`` ran the caller's other cursors (another thread of the
        caller's) on one thread meanwhile, and put back the number it had read over a ``SET
        threads`` the caller made meanwhile (ninety-ninth round). The release is written once, in
        its order, to one Parquet file beside the folder (a plain COPY keeps the query's order, on
        every thread); a private in-memory database on one thread reads that file in its order and
        writes the partitions, dating a TIMESTAMPTZ folder as our session does. The same rows in the
        same order through the same writer: the files' bytes are those ``_one_thread``'s COPY writes.

        It spills into a folder of its own beside the sorted file, removed after. It spilled into the
        caller's ``temp_directory`` as written: DuckDB's default ``.tmp`` is relative, resolved against
        the working folder when a database first spills, so after a ``chdir`` the two spilled apart,
        the private one where the caller never chose; a caller's ``SET temp_directory = ''`` (no
        spilling) was read as the default ``.tmp``. DuckDB 2 names each database's spill files by
        process and database (``duckdb_temp_PID_N_…``) and removes only its own on close, so the two
        did not clash in one folder; earlier versions' shared names did, the first to close removing
        the other's files (duckdb#15173). A folder of its own depends on neither (hundredth round).
        A caller's ``SET temp_directory = ''`` forbids spilling, and the private database spills
        nothing either: it spilled into that folder, on the output's disk (hundred-and-first round)."""
        ordered = path.with_name(path.name + "-sort")  # .NAME.sqlclose-PID-TOKEN.tmp-sort: a dead run's goes
        spill = path.with_name(path.name + "-spill")  # likewise (recovery removes a dead run's folder whole)
        first = exp.Copy(this=query.subquery(), kind=False, files=[exp.Placeholder(this=str(len(params) + 1))],
                         params=_parquet_options(()))
        self.execute(first, [*params, str(ordered)])
        read = exp.select(exp.Star()).from_(exp.Anonymous(this="read_parquet", expressions=[
            exp.Placeholder(this="1")]))
        sql = exp.Copy(this=read.subquery(), kind=False, files=[exp.Placeholder(this="2")],
                       params=_parquet_options(partition_by, 3)).sql("duckdb")
        room = self._room_apart()
        # a caller's SET temp_directory = '' forbids spilling: its write's database spills no more than
        # its own (it spilled into the folder beside the output, on a disk the caller never offered)
        unspilled = self._spilling_forbidden()
        # and a cap the caller set on its spill files bounds the private database's too
        disk = None if unspilled else self._disk_apart()
        settings = {"threads": 1, "temp_directory": "" if unspilled else str(spill.absolute()),
                    **({"memory_limit": room} if room else {}), **({"max_temp_directory_size": disk} if disk else {})}
        try:
            apart = duckdb.connect(config=settings)
            try:
                for name, value in self.dating().items():
                    apart.execute(_session_setting(name).sql("duckdb"), [value])
                with _interruptible():
                    apart.execute(sql, [self._literal(ordered), str(path), "part-{i}"])
            finally:
                apart.close()
        except duckdb.Error as e:
            error = self._apart_error(e, sql, room, None if unspilled else spill, disk)
            error.cause = e
            raise error from None
        finally:
            ordered.unlink(missing_ok=True)
            shutil.rmtree(spill, ignore_errors=True)  # DuckDB removes it on close, unless it could not

    def _apart_error(self, e: duckdb.Error, sql: str, room: str | None, spill: Path | None,
                     disk: str | None = None) -> EngineError:
        """An error of a caller's partitioned write's private database. Running out of memory or of
        disk names what bounds that database: its share of the caller's limit (``_room_apart``) and
        its spill folder beside the output, neither the spec's settings nor the caller's
        ``temp_directory`` (it was told "within its default limit (80 % of RAM): raise [engine]
        memory_limit", hundredth round). ``spill`` None: the caller forbade spilling (``SET
        temp_directory = ''``), which the private database kept, and running out of memory says so;
        ``disk``: its share of the caller's ``max_temp_directory_size`` (``_disk_apart``), which,
        reached, is told as that cap, not as a full disk (hundred-and-first round)."""
        text = str(e)
        spilled = spill is not None and isinstance(e, duckdb.IOException) and \
            (_spilling(text) or str(spill.absolute()) in text)
        full = (spilled and "No space left on device" in text) or \
            (isinstance(e, duckdb.OutOfMemoryException) and "max_temp_directory_size" in text)
        if not (spilled or full or isinstance(e, duckdb.OutOfMemoryException)):
            return self.engine_error(e, sql)
        share = "its share"
        with suppress(TypeError, ValueError):  # unread: DuckDB's default limit, told as the caller's
            share = f"its {megabytes(parse_bytes(room))}"
        within = f"{share} of {self._callers_limit()}, what the connection's database left of it (a quarter of it " \
                 "at least)"
        if spill is None and isinstance(e, duckdb.OutOfMemoryException):
            return EngineOutOfMemory(
                f"DuckDB ran out of memory ({_out_of_memory_said(text)}) writing the partitioned folder in a "
                f"database of sqlclose's own on one thread, within {within}, and it may not spill to disk: the "
                f"DuckDB connection given forbids spilling (its temp_directory is '', which that database keeps "
                f"too): raise its memory_limit on that connection (SET memory_limit), or SET temp_directory on it "
                f"to a folder on a disk with room to spill (the write then spills into a folder of its own beside "
                f"the output), or hold less in its database (a table it keeps in memory); nothing was placed at the "
                f"output path", sql)
        where = f"its folder beside the output ({spill.absolute() if spill else ''})"
        if full and disk is not None and isinstance(e, duckdb.OutOfMemoryException):
            # both bounds are shares of the caller's settings: what its database left is said once, of the two
            return EngineOutOfDisk(
                f"the partitioned write's database of sqlclose's own spilled past its memory limit into {where} "
                f"until it reached its cap on spill files, each what the connection's database left of the "
                f"connection's setting: {share} of {self._callers_limit()}, a quarter of it at least, and its "
                f"{megabytes(_disk_bytes(disk) or 0)} of {self._callers_cap()}: raise that max_temp_directory_size "
                f"on the connection (SET max_temp_directory_size), or its memory_limit (SET memory_limit) so that "
                f"less spills; nothing was placed at the output path", sql)
        if full:
            return EngineOutOfDisk(
                f"DuckDB filled the disk of {where} with the data the partitioned write's database of sqlclose's "
                f"own spilled past its memory limit, {within}: free room on the output's disk or write the output on "
                f"another, or raise that memory_limit on the connection (SET memory_limit) so that less spills; "
                f"nothing was placed at the output path", sql)
        if spilled:
            reason = text.splitlines()[0].rpartition('": ')[2] or text.splitlines()[0]
            return EngineCannotSpill(
                f"DuckDB could not spill past the memory limit of the partitioned write's database of sqlclose's "
                f"own to {where}: {reason}; write the output where sqlclose can write, or raise the memory_limit of "
                f"the DuckDB connection given (SET memory_limit) so that less spills; nothing was placed at the "
                f"output path", sql)
        return EngineOutOfMemory(
            f"DuckDB ran out of memory ({_out_of_memory_said(text)}) writing the partitioned folder in a database "
            f"of sqlclose's own on one thread, within {within}: raise it on that connection (SET memory_limit), or "
            f"hold less in its database (a table it keeps in memory); nothing was placed at the output path", sql)

    def _room_apart(self) -> str | None:
        """The memory limit of a caller's partitioned write's private database: what the caller's
        database's limit leaves beside the buffers it holds now, never below APART_FLOOR of that
        limit (a partitioned write keeps a buffer per open file: 16 partitions of 300,000 rows failed
        under 24 MB). The private database had the caller's whole limit, its buffers
        on top of the caller's: the process could reach twice the limit the caller set (hundredth
        round). A limit read as none, or past the units DuckDB takes back (no limit, ``SET memory_limit
        = '-1'``, reads "16383.9 PiB", which the private database's settings refused: the write failed),
        leaves the private database DuckDB's default."""
        limit = self._setting("memory_limit")  # as DuckDB writes it: "190.7 MiB"
        try:
            limit_bytes = parse_bytes(limit)
        except (TypeError, ValueError):  # unread, or no limit: DuckDB's default
            return None
        used = self._bytes_held(_MEMORY_USED)
        if used is None:  # the buffers unread: the caller's limit as it is
            return limit
        return f"{max(limit_bytes - used, int(limit_bytes * APART_FLOOR))}B"

    def _disk_apart(self) -> str | None:
        """The max_temp_directory_size of a caller's partitioned write's private database: what the
        cap the caller set on its database's spill files leaves beside the files it holds now. The
        private database spilled without it, up to 90 % of the output's disk, past a cap the caller
        set (hundred-and-first round). None when the caller set none (DuckDB's default, a share of
        the disk) or it cannot be read."""
        cap = _disk_bytes(self._setting("max_temp_directory_size"))
        if cap is None:
            return None
        used = self._bytes_held(_SPILLED) or 0  # the files unread: the caller's cap as it is
        return f"{max(cap - used, 0)}B"

    def _bytes_held(self, total: str) -> int | None:
        """What the caller's database holds now by ``total`` (``_MEMORY_USED``, ``_SPILLED``: a SUM over
        a DuckDB table function); None when it cannot be read."""
        try:
            with _interruptible():
                # fetched to its end: a result left open makes DuckDB refuse the next relation
                # (``dating``'s read of the session), which a read of a setting had hidden
                return int(self.con.execute(total).fetchall()[0][0] or 0)
        except (TypeError, ValueError, duckdb.Error):
            return None

    def _callers_cap(self) -> str:
        """The caller's connection's cap on its spill files, as its advice names it."""
        cap = self._setting("max_temp_directory_size")
        shown = f" ({cap}, as current_setting('max_temp_directory_size') reads it)" if cap else ""
        return f"the max_temp_directory_size of the DuckDB connection given{shown}"

    @contextmanager
    def _one_thread(self, needed: bool) -> Iterator[None]:
        """The connection on one thread for a statement, then as it was. DuckDB's partitioned COPY
        appends the sorted release to each partition's file from every thread: past a few row groups
        a file held two sorted runs, cut where the threads met, its bytes changing run to run and with
        the input's order. One thread appends the rows in the release's order."""
        if not needed:
            yield
            return
        with duckdb_database.threads_lock:  # the setting is the database's, which other jobs may share
            threads = self._threads()
            if threads is None or threads == 1:
                yield
                return
            self.con.execute("SET threads = 1")
            try:
                yield
            except BaseException:
                with suppress(duckdb.Error):  # the write's own error is the one to tell
                    self.con.execute(f"SET threads = {int(threads)}")
                raise
            self.con.execute(f"SET threads = {int(threads)}")

    def dictionary_type(self, values: exp.Select) -> exp.DataType | None:
        # DuckDB's Parquet writer writes an ENUM column's codes against its dictionary as they are,
        # where a VARCHAR column's dictionary is built value by value, and an ENUM sorts by its codes
        # (docs/performance.md, twenty-fourth round). Its members are created in text order, so it
        # sorts as the text does; a connection with a default collation sorts text otherwise (and
        # may call two members one): the column then stays text.
        if self._default_collation():
            return None
        column = exp.column(values.selects[0].alias_or_name)
        members = exp.select(column).distinct().from_(values.subquery("vals")).where(
            exp.Not(this=exp.Is(this=column.copy(), expression=exp.Null()))).order_by(column.copy())
        name = self.temp_name("dictionary")
        self.execute(f"CREATE TEMPORARY TYPE {_table(name).sql('duckdb')} AS ENUM ({members.sql(self.dialect)})")
        self._temp.append(("type", name))
        return exp.DataType.build(_table(name).sql("duckdb"), dialect="duckdb", udt=True)

    def packed_sort_key(self, columns: Sequence[PackedColumn], source: exp.Expression) -> PackedKey | None:
        # DuckDB (2.0) compares a sort key of over 24 bytes 8 bytes in place, the rest behind a
        # pointer. A release's values make such a key, whose first 8 bytes (its classes' codes and
        # a date's high bytes, say) tie often. This UBIGINT holds the first columns' codes and
        # offsets in its high 56 bits, the bits compared in place (a NULL byte comes first): the
        # 10 M-row table's 16-column write took ~15 % less time, the file the same byte for byte
        # (docs/performance.md, seventy-second round). The columns it holds whole leave the ORDER
        # BY, which then compares fewer bytes (seventy-fourth round).
        parts: list[exp.Expression] = []
        whole: list[str] = []
        left = PACKED_KEY_BITS
        for column, (form, size) in zip(columns, self._packed_forms(columns, source)):
            width = size.bit_length()  # codes or offsets 0 … size - 1, and NULL as size: NULLs last
            if not width:
                whole.append(column.name)  # NULL in every row: it orders nothing
                continue
            if form is None or not left:
                break
            value = exp.Cast(this=exp.Coalesce(this=form, expressions=[exp.Literal.number(size)]),
                             to=exp.DataType(this=exp.DataType.Type.UBIGINT))
            if width > left:  # its high bits alone still order as it does (or tie)
                value, width = exp.BitwiseRightShift(this=value, expression=exp.Literal.number(width - left)), left
            else:
                whole.append(column.name)
            left -= width
            parts.append(exp.paren(exp.BitwiseLeftShift(this=value, expression=exp.Literal.number(64 - PACKED_KEY_BITS
                                                                                                   + left))))
        if not parts:
            return None
        key = parts[0]
        for part in parts[1:]:
            key = exp.BitwiseOr(this=key, expression=part)
        return PackedKey(key, tuple(whole))

    def _packed_forms(self, columns: Sequence[PackedColumn],
                      source: exp.Expression) -> list[tuple[exp.Expression | None, int]]:
        """Each column's code or offset as an expression of the released column, and how many
        values it takes; a form of None where the column's range is too wide to be offset. One
        query: the dictionaries' sizes, and the least and greatest of the other columns in ``source``."""
        selects: list[exp.Expression] = []
        for i, c in enumerate(columns):
            if c.member is not None:
                selects.append(exp.alias_(exp.Anonymous(this="LEN", expressions=[
                    exp.Anonymous(this="ENUM_RANGE", expressions=[c.member.copy()])]), f"n{i}"))
            else:
                number = _as_number(exp.column(c.name, "src", quoted=True), c.kind)
                selects += [exp.alias_(exp.Min(this=number), f"lo{i}"),
                            exp.alias_(exp.Max(this=number.copy()), f"hi{i}")]
        query = exp.select(*selects)
        if any(c.member is None for c in columns):  # else the sizes alone, no row read
            query = query.from_(exp.alias_(source.copy(), "src", table=True))
        row = self.fetch_row(query)
        forms: list[tuple[exp.Expression | None, int]] = []
        for i, c in enumerate(columns):
            if c.member is not None:
                forms.append((exp.Anonymous(this="ENUM_CODE", expressions=[exp.column(c.name, quoted=True)]),
                              int(row[f"n{i}"])))
            elif row[f"lo{i}"] is None:
                forms.append((None, 0))
            else:
                low, size = int(row[f"lo{i}"]), int(row[f"hi{i}"]) - int(row[f"lo{i}"]) + 1
                offset = exp.Sub(this=_as_number(exp.column(c.name, quoted=True), c.kind),
                                 expression=exp.paren(exp.Literal.number(low)))  # "- -1" stays apart from a comment
                forms.append((offset if size <= PACKED_KEY_MAX_RANGE else None, size))
        return forms

    def _follow_session(self, caller: duckdb.DuckDBPyConnection) -> str | None:
        """Give our cursor what the caller's session decides about the input (``_SESSION_SETTINGS``,
        and ``USE``'s database and schema); a cursor starts from DuckDB's defaults. Read by a
        relation's query, which DuckDB refuses while the caller holds an unfinished result of
        ``execute`` — leaving that result as it was: then the reason, and nothing is followed."""
        try:
            database, schema, theirs = _session(caller)
        except duckdb.ResourceInUseException:
            # Also what a connection another thread runs a statement on says (one sqlclose run per thread
            # on one connection: review of the sixty-fourth round), which DuckDB does not tell apart.
            return ("it is busy — it holds an unfinished result of execute(), or another thread is running a "
                    "statement on it (a connection runs one at a time) — which sqlclose leaves alone, so the "
                    "session's USE, search_path and TimeZone cannot be read")
        ours = _session(self.con)[2]
        for name, value in theirs.items():
            if value != ours.get(name):
                self._set_session(name, value)
        self.execute(exp.Use(this=exp.Table(this=exp.to_identifier(schema, quoted=True),
                                            db=exp.to_identifier(database, quoted=True))))
        return None

    @contextmanager
    def texts_in_utc(self) -> Iterator[None]:
        # A caller's session is followed (its TimeZone decides a TIMESTAMPTZ's dates): the text a
        # digest hashes was then the session's, and `check --against`, in UTC, refused an untouched
        # table output as changed. Our cursor's own settings: the caller's session is not touched.
        theirs = _session(self.con)[2]  # both are session settings a caller's session decides
        wanted = {"TimeZone": "UTC", "Calendar": "gregorian"}
        changed = {name: value for name, value in wanted.items() if name in theirs and theirs[name] != value}
        for name, value in changed.items():
            self._set_session(name, value)
        try:
            yield
        finally:
            for name in changed:
                self._set_session(name, theirs[name])

    def dating(self) -> dict[str, str]:
        """Our session's settings that date a ``TIMESTAMP WITH TIME ZONE`` (``DATING_SETTINGS``)."""
        return {name: value for name, value in _session(self.con)[2].items() if name in DATING_SETTINGS}

    def date_as(self, settings: dict[str, str]) -> None:
        """Date a ``TIMESTAMP WITH TIME ZONE`` as ``settings`` say (``dating``' names), on our
        session alone: what a caller's session decided for the rows of a relation it made."""
        ours = self.dating()
        for name, value in settings.items():
            if name in DATING_SETTINGS and value != ours.get(name):
                self._set_session(name, value)

    def instants_in_utc(self, texts: list[str], source: exp.Expression, column: str) -> list[str]:
        # Matched through the values' microseconds, not by reading the text back: a session on another
        # calendar writes 1990 as 1410-06-04 (islamic), which a cast reads on the Gregorian one.
        if not texts or self.dating() == {"TimeZone": "UTC", "Calendar": "gregorian"}:
            return texts
        value = exp.column(column, quoted=True)
        pairs = exp.select(exp.alias_(exp.Cast(this=value, to=exp.DataType.build("VARCHAR")), "t"),
                           exp.alias_(exp.Anonymous(this="EPOCH_US", expressions=[value.copy()]), "us")) \
            .distinct().from_(source.copy()).where(exp.Is(this=value.copy(), expression=exp.Null()).not_())
        instant = exp.Cast(this=exp.Anonymous(this="MAKE_TIMESTAMP", expressions=[exp.column("us", "m")]),
                           to=exp.DataType.build("TIMESTAMPTZ"))
        return self._texts_renamed(texts, pairs, exp.Cast(this=instant, to=exp.DataType.build("VARCHAR")), utc=True)

    def _set_session(self, name: str, value: str) -> None:
        self.execute(_session_setting(name), [value])

    @property
    def read_only(self) -> bool:
        """Whether the connection was opened read-only (a caller's ``read_only=True``): it reads any
        source, but attaches no database to write a table output in."""
        return self.con.sql("SELECT current_setting('access_mode') = 'read_only' AS r").fetchall()[0][0]

    def check_connection(self) -> None:
        self._refuse_default_collation()
        if self._unfollowed is None or self.closed:
            return
        self._unfollowed = self._follow_session(self.caller)  # the caller may have finished it since
        if self._unfollowed:
            raise InputError(f"cannot read the DuckDB connection: {self._unfollowed}: fetch that result to its end "
                             "(or call complete() or abort() on the connection) first, or give sqlclose a connection "
                             "of its own (one per thread), e.g. (con.cursor(), 'table'), which sees the committed "
                             "tables")

    def check_open(self) -> None:
        if self._own or self.closed:
            return
        try:
            self.con.sql("SELECT 1")  # binds only; on a closed connection DuckDB refuses it
        except duckdb.ConnectionException:
            raise InputError("the DuckDB connection this release reads was closed by its caller, and the tables the "
                             "release reads went with it: keep the connection open until the release is read and "
                             "written, or make the release again on an open connection") from None

    def _refuse_default_collation(self) -> None:
        # Under a default collation DuckDB compares, groups and hashes text folded ("A" as "a")
        # wherever no column says otherwise — the lookups the search joins, the written file the
        # re-check reads back — where sqlclose tells values apart byte by byte (with "nocase", a
        # release was refused, or a file with a value's case altered passed its re-check). A caller
        # may set one after the engine was made: the re-check then refused the file as "altered".
        if collation := self._default_collation():
            raise InputError(f"the DuckDB connection sets default_collation = {collation!r}: sqlclose compares text "
                             "byte by byte (its hierarchies, lookups and re-check tell 'A' from 'a'), which a default "
                             "collation changes; give it a connection without one (SET default_collation = '')")

    def _default_collation(self) -> str:
        # A global setting: a caller's, seen from our cursor of its connection (a caller's unfinished
        # result is on that connection, not on the cursor, and stays as it was). Through fetch, as
        # every statement: it is often the job's first query, which a tiny memory_limit already fails.
        # A database of sqlclose's own has none: nothing sets one (asked ~7 times a job, ~2 ms each).
        if self._own:
            return ""
        return self.fetch_row("SELECT current_setting('default_collation') AS c")["c"] or ""

    def dictionary_columns(self, relation: exp.Expression, columns: Sequence[str]) -> list[str]:
        # VARCHAR itself: JSON and UUID reach Arrow as text too, but an ENUM holds neither (ENCODE
        # takes no UUID, a JSON value casts to no member). A column's own collation is caught by
        # grouping its values with their bytes (release_query), a connection's here.
        if not columns or self._default_collation():
            return []
        return self.plain_text_columns(relation, columns)

    def is_nan(self, value: exp.Expression) -> exp.Expression:
        # Not ISNAN: DuckDB (2.0.1) folds it to false from the min/max statistics of a Parquet file
        # written by pyarrow, which leave NaN out, so a NaN in an ordered column went unrefused. No
        # statistics decide ISFINITE, and infinities are within them.
        finite, infinite = (exp.Anonymous(this=f, expressions=[value.copy()]) for f in ("ISFINITE", "ISINF"))
        return exp.and_(exp.Not(this=finite), exp.Not(this=infinite))

    def has_minus_sign(self, value: exp.Expression) -> exp.Expression:
        # The sign bit, not the text, which may be cut (``cuts_negative_nan_text``).
        return exp.Anonymous(this="SIGNBIT", expressions=[value.copy()])

    def partition_name_bytes(self, value: exp.Expression) -> exp.Expression | None:
        # DuckDB writes the unreserved bytes (RFC 3986: letters, digits, '-', '.', '_', '~') as they
        # are and every other byte as %XX: three bytes for one.
        unreserved = exp.Length(this=exp.RegexpReplace(this=value.copy(), expression=exp.Literal.string(
            "[^A-Za-z0-9._~-]"), replacement=exp.Literal.string(""), modifiers=exp.Literal.string("g")))
        octets = exp.Anonymous(this="OCTET_LENGTH", expressions=[exp.Anonymous(this="ENCODE", expressions=[
            value.copy()])])
        return exp.Sub(this=exp.Mul(this=exp.Literal.number(3), expression=octets),
                       expression=exp.Mul(this=exp.Literal.number(2), expression=unreserved))

    def plain_text_columns(self, relation: exp.Expression, columns: Sequence[str]) -> list[str]:
        # VARCHAR itself: UUID and JSON reach Arrow as text too.
        if not columns:
            return []
        types = self.relation_types(relation)
        return [name for name in columns if types.get(name) == "VARCHAR"]

    def parquet_unkept_columns(self, query: exp.Expression, params: Sequence[Any] = ()) -> dict[str, str]:
        types = self.column_types(query, params)
        self._unkept_checked = (query, tuple(params), types)
        return {name: kind for name, kind in types.items() if _PARQUET_UNKEPT.search(_QUOTED.sub("", kind))}

    def copy_to_parquet(self, query: exp.Expression, path: Path, params: Sequence[Any] = ()) -> None:
        copy = exp.Copy(
            this=self._arrays_as_lists(query, params).subquery(),
            kind=False,  # COPY … TO
            files=[exp.Placeholder(this=str(len(params) + 1))],
            params=[exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("PARQUET"))],
        )
        self.execute(copy, [*params, str(path)], owned=True)  # ``subquery`` copied the query

    def _arrays_as_lists(self, query: exp.Expression, params: Sequence[Any]) -> exp.Expression:
        """``query`` with each column of an ARRAY type (a fixed-size list) cast to the LIST of its
        elements. DuckDB (2.0.1) writes a NULL ARRAY into Parquet with list offsets past its values,
        a file pyarrow refuses to read ("Length spanned by list offsets … larger than values array"),
        though DuckDB, and so the re-check, reads it; a LIST is written as the same Parquet type and
        read back alike. An ARRAY inside a struct or a list is not reached."""
        if not isinstance(query, exp.Select):
            return query
        arrays = {name: kind for name, kind in self._described(query, params).items() if _TOP_ARRAY.search(kind)}
        if not arrays:
            return query
        rewritten = query.copy()
        rewritten.set("expressions", [
            exp.alias_(exp.Cast(this=e.unalias().copy(), to=exp.DataType.build(_TOP_ARRAY.sub("[]", arrays[name]),
                                                                                  dialect="duckdb")), name, quoted=True)
            if (name := e.alias_or_name) in arrays else e for e in rewritten.expressions])
        return rewritten

    # ---- CSV files and DuckDB database tables as outputs -------------------------------------
    def _described(self, query: exp.Expression, params: Sequence[Any]) -> dict[str, str]:
        """``column_types(query, params)``, taken from the check a Parquet write makes just before it
        (``parquet_unkept_columns``, handed the same query object, which nothing changes between:
        ``FileWriter.write``) where it described this query last: one DESCRIBE of the release query
        where there were two. Taken once, then forgotten."""
        checked, self._unkept_checked = self._unkept_checked, None
        if checked is not None and checked[0] is query and checked[1] == tuple(params):
            return checked[2]
        return self.column_types(query, params)

    def schema(self, relation: exp.Expression, params: Sequence[Any] = ()) -> pa.Schema:
        # A table of the engine's own is typed once: a small release read the source's schema three
        # times and the re-check's grouped file's three (docs/performance.md, hundred-and-first round).
        return self._own_table_types(relation, "arrow", lambda: super(DuckDBEngine, self).schema(relation, params)) \
            if not params else super().schema(relation, params)

    def relation_types(self, relation: exp.Expression) -> dict[str, str]:
        """``column_types`` of every column of ``relation`` (a table or a subquery), without reading its rows."""
        return dict(self._own_table_types(relation, "duckdb", lambda: self.column_types(
            exp.select(exp.Star()).from_(relation.copy()).limit(0))))

    def _own_table_types(self, relation: exp.Expression, kind: str, read: Callable[[], Any]) -> Any:
        """``read()``, kept per temporary table of the engine's own (``relation`` naming it alone) and ``kind``."""
        name = relation.name if isinstance(relation, exp.Table) and not relation.args.get("db") \
            and not relation.args.get("catalog") and not relation.args.get("alias") else None
        if name is None or ("table", name) not in self._temp:
            return read()
        key = (name, kind)
        if key not in self._table_types:
            self._table_types[key] = read()
        return self._table_types[key]

    def _retyped(self, name: str) -> None:
        """Forget the types kept of table ``name`` (``_own_table_types``): it is dropped, replaced or renamed."""
        self._table_types.pop((name, "arrow"), None)
        self._table_types.pop((name, "duckdb"), None)

    def column_types(self, query: exp.Expression, params: Sequence[Any] = ()) -> dict[str, str]:
        """The columns a query yields, with their DuckDB type names (``DECIMAL(10,2)``, ``VARCHAR`` …)."""
        described = self.fetch(exp.Describe(this=query.copy()), params, owned=True)
        return dict(zip(described.column("column_name").to_pylist(), described.column("column_type").to_pylist()))

    def batches(self, query: exp.Expression, rows: int = 1 << 20) -> Iterator[pa.RecordBatch]:
        """A query's result as Arrow record batches of at most ``rows`` rows, read as they come: a
        sorted result larger than memory spills in DuckDB and never sits whole in Python."""
        sql = self.render(query, owned=True)
        try:
            with _interruptible():
                stream = self.con.sql(sql).to_arrow_reader(rows)
                try:
                    yield from stream
                finally:
                    stream.close()
        except EngineError:
            raise
        except duckdb.Error as e:
            raise self.wrapped_error(e, sql) from None

    def copy_to_csv(self, query: exp.Expression, path: Path, params: Sequence[Any] = ()) -> None:
        """Write as CSV: a header, ',' between fields, '"' quotes; an empty text is written ``""``
        and a NULL as nothing, so that the two stay apart when read back (``read_csv_typed``)."""
        copy = exp.Copy(
            this=query.subquery(), kind=False, files=[exp.Placeholder(this=str(len(params) + 1))],
            params=[exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("CSV")),
                    exp.CopyParameter(this=exp.var("HEADER"), expression=exp.true())],
        )
        self.execute(copy, [*params, str(path)])

    def read_csv_typed(self, path: Path, types: dict[str, str], shared: bool = False) -> exp.Expression:
        """A CSV written by ``copy_to_csv``, read back with the given column types (so numbers stay
        numbers and a quoted empty text stays an empty text, not a NULL); ``shared`` as for
        ``create_temp_table``."""
        # new_line: copy_to_csv's own line ending. Unsaid, DuckDB took a carriage return inside a quoted
        # column name of the header for the file's line ending and read no row: a release with a column
        # named "a\rb" failed its re-check, 0 rows instead of 40 (exit 4: the ninety-eighth round).
        options = {**_strict_csv(",", types, [""]), "new_line": "\\n"}  # the two characters DuckDB takes
        # absolute: not looked up in file_search_path
        query, params = _reader("read_csv", self._literal(Path(path).absolute()), options)
        return self.create_temp_table(self.temp_name("written_csv"), query, params, shared=shared)

    def attach(self, path: Path, read_only: bool = False, storage_version: str | None = None) -> str:
        """Attach a database file for writing (created when missing, in ``storage_version``'s
        format when given), or ``read_only``; detached on close."""
        alias = self.temp_name("out")
        options = [exp.AttachOption(this=exp.var("READ_ONLY"))] if read_only else []
        if storage_version:
            options.append(exp.AttachOption(this=exp.var("STORAGE_VERSION"), expression=exp.Placeholder(this="2")))
        attach = exp.Attach(this=exp.alias_(exp.Placeholder(this="1"), exp.to_identifier(alias, quoted=True)),
                            expressions=options)
        # absolute: not looked up in a caller's file_search_path
        self.execute(attach, [self._literal(Path(path).absolute()), *([storage_version] if storage_version else [])])
        self._temp.append(("database", alias))
        return alias

    def detach(self, alias: str) -> None:
        if ("database", alias) in self._temp:
            self._temp.remove(("database", alias))
            self.execute(f"DETACH {exp.to_identifier(alias, quoted=True).sql('duckdb')}")

    def fit_memory(self, upcoming: int = 0) -> None:
        """DuckDB's limit follows the most the process has held outside its buffers, or what it
        holds now plus ``upcoming`` if more (``limits.engine_limit_now``); only for a connection of
        our own with a limit set."""
        if not (self.memory_budget and self._own) or (resident := resident_bytes()) is None:
            return
        with _interruptible():  # Ctrl-C may land in these queries too
            used = self._monitor_cursor().execute(_MEMORY_USED).fetchone()[0] or 0
        held = resident - int(used)
        self._outside = max(self._outside, held)
        limit = engine_limit_now(self.memory_budget, max(self._outside, held + upcoming))
        if abs(limit - self._engine_limit) > limit // 50:  # a setting per level, not per byte
            self._set_limit(limit)

    def reset_memory(self) -> None:
        if self.memory_budget and self._own and self._engine_limit != engine_share(self.memory_budget):
            self._set_limit(engine_share(self.memory_budget))
        self._outside = 0

    def release_cached_memory(self) -> None:
        """DuckDB's limit set again to its value: setting it makes DuckDB hand back what its
        allocator keeps of finished statements (jemalloc's cached pages, glibc's free heap: 237 → 195
        MiB after a 3 M-row GROUP BY and a 2 M-row sort; docs/engines.md, sixty-eighth round)."""
        if self.memory_budget and self._own:
            self._set_limit(self._engine_limit)

    def _set_limit(self, limit: int) -> None:
        with _interruptible():
            self._monitor_cursor().execute("SET memory_limit = $1", [f"{limit}B"])
        self._engine_limit = limit

    def _monitor_cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of its own for the memory settings: the connection may hold a pending result."""
        if self._monitor is None:
            self._monitor = self.con.cursor()
        return self._monitor

    @contextmanager
    def objects_made(self) -> Iterator[list[tuple[str, str]]]:
        before = set(self._temp)
        made: list[tuple[str, str]] = []
        try:
            yield made
        finally:
            made.extend(obj for obj in self._temp if obj not in before)

    def drop_objects(self, objects: Sequence[tuple[str, str]]) -> None:
        for obj in reversed(objects):
            self._retyped(obj[1])
            if obj in self._temp:
                self._drop(*obj)
                self._temp.remove(obj)

    @property
    def _own(self) -> bool:
        """Whether the connection is the engine's own (not a caller's, run on through a cursor)."""
        return self.caller is None

    def _drop(self, kind: str, name: str) -> None:
        _drop_object(self.con, kind, name)

    @property
    def _own_database(self) -> bool:
        """Whether the database is the engine's alone (made with its settings): closing it drops all."""
        return self._own and not self._shared

    def close(self) -> None:
        self._table_types.clear()
        if self._own_database:  # closing our own database drops all it holds: no statement per object
            self._temp.clear()
        if self._cleanup is not None:  # a connection to a database not the engine's: what it made, then itself
            self._cleanup()
        self.remove_links()
        if self._own_database:
            self.con.close()  # DuckDB removes the temp directory it made; the folders above it stay
        self.closed = True


def _make_parents(temp_directory: Path) -> None:
    """Makes the missing folders above ``temp_directory``, outermost first. DuckDB makes the temp
    directory itself when it first spills (and removes it when closed), but not a missing folder
    above it: a job given ``spill/a`` stopped at its first spill, after the scan and search. One
    that cannot be made is left to that spill, which names the temp directory (EngineCannotSpill),
    as for a temp directory DuckDB cannot make: a job that never spills needs none.
    They are never removed: another job's temp directory (``spill/b``) may sit in them, still to
    spill, and an empty folder left is harmless."""
    for folder in reversed([p for p in temp_directory.parents if not p.exists()]):
        try:
            folder.mkdir()
        except FileExistsError:  # made meanwhile by another process
            continue
        except OSError:
            break


def _drop_object(con: duckdb.DuckDBPyConnection, kind: str, name: str) -> None:
    try:
        if kind == "arrow":
            con.unregister(name)
        elif kind == "database":
            con.execute(f"DETACH {exp.to_identifier(name, quoted=True).sql('duckdb')}")
        else:
            con.execute(f"DROP {kind.upper()} IF EXISTS {_table(name).sql('duckdb')}")
    except duckdb.Error:
        pass


def _drop_all(con: duckdb.DuckDBPyConnection, objects: list[tuple[str, str]],
              main_tables: set[str] | None = None) -> None:
    """What an engine made on a connection to a database not its own, dropped newest first when the
    engine is closed or collected unclosed (its ``weakref.finalize``), then the connection closed.
    On a caller's, every object. On the shared one (``main_tables`` given), only what the
    connection's closing leaves in the database: an attached database, a table of ``main``; each
    temporary object goes with the connection, without a statement of its own."""
    for kind, name in reversed(objects):
        if main_tables is None or kind == "database" or (kind == "table" and name in main_tables):
            _drop_object(con, kind, name)
    objects.clear()
    with suppress(duckdb.Error):
        con.close()


def _cursor_of(connection: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A connection of sqlclose's own to the caller's database (a closed one raises here): its
    statements, temporary tables and results are its own, so that a result the caller is still
    fetching stays as it was (one statement on the caller's connection ended it), and its
    ``SET SESSION`` settings are its own too. Arrow as DuckDB gives it by default: under the
    caller's ``arrow_lossless_conversion`` (a global setting) a HUGEINT count was fetched as bytes."""
    cursor = connection.cursor()
    cursor.execute("SET SESSION arrow_lossless_conversion = false")
    return cursor


# What a caller's session decides about the input it holds (``DuckDBEngine._follow_session``):
# which table a name means, which file a view's relative path reads, a TIMESTAMPTZ's dates.
_SESSION_SETTINGS = ["search_path", "file_search_path", "TimeZone", "Calendar"]
DATING_SETTINGS = ("TimeZone", "Calendar")  # those of them that date a TIMESTAMP WITH TIME ZONE


def _parquet_options(partition_by: Sequence[str], pattern: int = 0) -> list[exp.CopyParameter]:
    """A Parquet COPY's options; with ``partition_by``, its Hive folders, and the files' names from
    the ``pattern``-th parameter (``part-{i}``: deterministic)."""
    options = [exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("PARQUET"))]
    if partition_by:
        columns = exp.Tuple(expressions=[exp.to_identifier(c, quoted=True) for c in partition_by])
        options += [exp.CopyParameter(this=exp.var("PARTITION_BY"), expression=columns),
                    exp.CopyParameter(this=exp.var("FILENAME_PATTERN"), expression=exp.Placeholder(this=str(pattern)))]
    return options


def _session_setting(name: str) -> exp.Set:
    """``SET SESSION "name" = $1``."""
    assign = exp.EQ(this=exp.to_identifier(name, quoted=True), expression=exp.Placeholder(this="1"))
    return exp.Set(expressions=[exp.SetItem(this=assign, kind="SESSION")])


def _session(con: duckdb.DuckDBPyConnection) -> tuple[str, str, dict[str, str]]:
    """A session's database and schema (``USE``) and its ``_SESSION_SETTINGS``, read by relations."""
    database, schema = con.sql("SELECT current_database(), current_schema()").fetchall()[0]
    settings = con.sql("SELECT name, value FROM duckdb_settings() WHERE list_contains($1, name)",
                       params=[_SESSION_SETTINGS]).fetchall()
    return database, schema, dict(settings)


# A Parquet source of many files holding fewer rows than this on average is read once into a temp
# table (``_small_files``; docs/performance.md, forty-seventh round).
FEW_ROWS_PER_FILE = 2_000


def _small_files(footers: dict[str, int]) -> bool:
    """Whether the Parquet files hold fewer than ``FEW_ROWS_PER_FILE`` rows each on average. Every
    pass over them opens each file again (2,000 files of 500 rows: 0.32 s a pass, 40× one file's):
    such a source is read once into a temp table, which every pass reads (the 1 M-row job 4.8 s
    against 8–9 s). Files of 5,000 rows read faster as they are."""
    return footers["files"] > 1 and footers["rows"] < footers["files"] * FEW_ROWS_PER_FILE


def _reader(function: str, path: str | list[str], options: dict[str, Any],
            select: exp.Expression | list[exp.Expression] | None = None) -> tuple[exp.Select, list[Any]]:
    """``SELECT * FROM function($1, key = $2, …)`` (or ``select``): the path and every option's value
    bound as parameters, never spliced into the text."""
    args: list[exp.Expression] = [exp.Placeholder(this="1")]
    params: list[Any] = [path]
    for key, value in options.items():
        params.append(value)
        args.append(exp.EQ(this=exp.var(key), expression=exp.Placeholder(this=str(len(params)))))
    table = exp.Table(this=exp.Anonymous(this=function, expressions=args))
    columns = select if isinstance(select, list) else [select if select is not None else exp.Star()]
    return exp.select(*columns).from_(table), params


# DuckDB types its Arrow export changes (DuckDB 2.0.1): a relation streamed into our engine (a
# relation source, a caller's temporary table) came back other values, released and verified as
# such (review h2 of the eighty-fifth round). Each with the cast that keeps it, in the relation's SQL.
_UNSTREAMED = {
    "uhugeint": ("a UHUGEINT of more than 38 digits, which Arrow carries as a DECIMAL(38, 0): 2^128 - 1 came "
                 "back as -1", "CAST(v AS VARCHAR)"),
    "hugeint": ("a HUGEINT of more than 38 digits, which Arrow carries as a DECIMAL(38, 0) that cannot hold its "
                "39th", "CAST(v AS VARCHAR)"),
    "time with time zone": ("a TIMETZ, which Arrow carries as a TIME without its offset (10:00:00+05 came "
                            "back as 10:00:00)", "CAST(v AS VARCHAR)"),
    "bit": ("a BIT string, which Arrow carries as DuckDB's inner bytes ('0101' came back as \\x04\\xF5)",
            "CAST(v AS VARCHAR)"),
}


def _refuse_unstreamed(relation: Any, what: str | None) -> None:
    """A relation column holding a type in ``_UNSTREAMED`` (nested too), refused naming the column,
    the type and the cast to write (``what``: the relation, None for a relation source)."""
    for name, kind in zip(relation.columns, relation.types):
        found = _unstreamed_in(kind)
        if found in _WIDE_INTEGERS and kind.id == found and not _past_38_digits(relation, name):
            continue  # a HUGEINT of a SUM: its values come through as a DECIMAL(38, 0), the same numbers
        if found is not None:
            why, cast = _UNSTREAMED[found]
            where = "in the relation's query" if what is None else "in a view or a table of the database"
            also = ", or give the table as (connection, 'table'), which is read where it lives" if what is None else ""
            raise InputError(f"column {name_shown(name)} of {what or 'the DuckDB relation'} ({kind}) holds {why}; read "
                             f"through Arrow, the release would hold other values: cast it {where}, {cast}{also}")


_WIDE_INTEGERS = ("hugeint", "uhugeint")


def _past_38_digits(relation: Any, name: str) -> bool:
    """Whether a top-level HUGEINT or UHUGEINT column of ``relation`` holds a value of more than 38
    digits, which Arrow's DECIMAL(38, 0) does not hold (one pass of the relation's query)."""
    digits = exp.Length(this=exp.Anonymous(this="LTRIM", expressions=[
        exp.Cast(this=exp.column(name, quoted=True), to=exp.DataType.build("VARCHAR")), exp.Literal.string("-")]))
    query = exp.select(exp.alias_(exp.func("BOOL_OR", exp.GT(this=digits, expression=exp.Literal.number(38))),
                                  "wide")).from_("__sqlclose_relation")
    return bool(relation.query("__sqlclose_relation", query.sql("duckdb")).fetchall()[0][0])


def _unstreamed_in(kind: Any) -> str | None:
    """The ``_UNSTREAMED`` type ``kind`` (a DuckDB type) is or holds, else None."""
    if kind.id in _UNSTREAMED:
        return kind.id
    if kind.id in ("struct", "list", "map", "array", "union"):
        for _, child in kind.children:
            if hasattr(child, "id") and (found := _unstreamed_in(child)) is not None:
                return found
    return None
