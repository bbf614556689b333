"""Opening a source: a path, a (connection, table) pair, an Arrow table or a pandas DataFrame
becomes a relation an engine can select FROM, plus a label for messages.

Reading is literal and declared: a path is one file unless the spec says ``glob = true``; CSV
columns are read as the text they are; a header naming a column twice is refused (DuckDB would
rename the copy, and an identifier's copy would be published). Driver errors are re-worded so
that no raw record reaches a message (CSV errors quote the offending line).
"""

from __future__ import annotations

import codecs
import csv
import dataclasses
import glob as globbing
import io
import os
import re
import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import unquote, urlparse

import pyarrow as pa
import sqlglot
from pydantic import ValidationError
from sqlglot import exp

from sqlclose.engine import DuckDBEngine, Engine, engine_from
from sqlclose.engine.base import FileRead, unread_value_fixes
from sqlclose.engine.duckdb import DATING_SETTINGS, RECORDS_COUNTED, message_without_values, without_echoed_input
from sqlclose.engine.listing import folder_files, hidden_match, linked_folder_refusal, special_refusal
from sqlclose.engine.spark_errors import message_without_values as spark_message_without_values
from sqlclose.errors import DATABASE_LOCKED, DatabaseLocked, DataError, EngineError, EngineOutOfMemory, InputError
from sqlclose.model import mending
from sqlclose.model.column_names import refuse_alike_fields, refuse_renamed_columns, refuse_renamed_fields
from sqlclose.model.file_stamps import Stamp, refuse_changed_files, stamps_of
from sqlclose.model.own_files import has_duckdb_header
from sqlclose.model.source_query import refuse_guessed_types
from sqlclose.model.spec import (
    DECIMAL_TYPE,
    GLOB_CHARACTERS,
    MAX_DECIMAL_DIGITS,
    NAME_QUOTING,
    Source,
    source_table_parts,
    suffix_kind,
    table_parts,
)
from sqlclose.model.text import (
    RENAME_IN_UTF8,
    agreeing,
    counted,
    cut_in_advice,
    name_cut,
    name_shown,
    named,
    refuse_undecodable_path,
    special_file,
    unexpanded_hint,
)
from sqlclose.prepare.csv_lines import (
    INVALID_STATE,
    editor_lines,
    header_quote_problem,
    header_record,
    invalid_state_problem,
    query_editor_lines,
    unterminated_quote_problem,
    with_editor_lines,
)
from sqlclose.prepare.decimal_digits import refuse_decimals_past_precision
from sqlclose.prepare.digests import rows_digest
from sqlclose.prepare.pandas_frames import arrow_of_pandas, is_pandas
from sqlclose.prepare.parquet_types import has_int96, refuse_instants_past_range, refuse_narrowed_columns
from sqlclose.prepare.problem import missing_column
from sqlclose.prepare.source_labels import (
    ARROW_LABEL,
    PANDAS_LABEL,
    RELATION_LABEL,
    SPARK_FRAME_LABEL,
    callers_table_label,
)
from sqlclose.prepare.spark_tables import missing_table, spark_table_parts, typed_spark_name
from sqlclose.sql import queries as q
from sqlclose.sql.warehouse import warehouse_table

if TYPE_CHECKING:
    from sqlclose.engine.spark import SparkEngine
    from sqlclose.model.spec import EngineSettings

SourceLike = Any  # path | (connection, table) | DuckDB relation | pyarrow.Table | pandas.DataFrame | None (spec's)

_DB_SUFFIXES = {".duckdb": "duckdb", ".db": "duckdb", ".ddb": "duckdb"}



@dataclass
class Opened:
    """A readable source: its engine, the relation to select FROM, a label, the files it reads."""

    engine: Engine
    relation: exp.Expression
    label: str
    files: list[Path] = field(default_factory=list)
    live: bool = False  # read where it lives at every pass: its owner may change it while a release is open
    # The database files of the connection a relation or caller's table is read on: never an output
    # (not stamped as ``files`` are: a relation is copied once, a caller's table fingerprinted).
    databases: list[Path] = field(default_factory=list)
    # ``files`` as they were before any of their rows was read (model/file_stamps.py): a file source
    # stamps them as soon as it lists them (``_open_file``), any other when it is made, before the run's
    # first pass. A release is refused when one changed since (``SearchedRows``), a sweep's or check's figures too.
    stamps: dict[str, Stamp] = field(default_factory=dict)
    # Where a message tells the user to change a column (``model.mending``): set here, where the kind of
    # source is known, never read back from ``label`` (a file's label is its path, which may be any words).
    kind: str = mending.QUERY
    # A ``live`` source's rows before a pass read them (``keep_rows``): a key of the run's own and
    # their digest under it (``rows_digest``), which ``refuse_changed`` compares the rows against.
    rows_kept: tuple[str, str] | None = field(default=None, repr=False)
    # A path given in place of the spec's [source] (``api.open_for``): the command an error names to
    # list a column's values is told to read it (--data), not the spec's own source.
    given_path: Path | None = None
    # The file, folder or pattern its rows are read from, as given (a file source's path, a [source]
    # query's): None for a source that is no path (a DataFrame, an Arrow table, a relation, a caller's
    # table, Spark's). A report records it (``input.path``), where ``cli.report`` finds the input a page
    # must not replace: a Parquet folder named "query" or "arrow table" was taken for no file by its label.
    path: Path | None = None

    def __post_init__(self) -> None:
        self.stamps = {**stamps_of(f for f in self.files if str(f) not in self.stamps), **self.stamps}

    def keep_rows(self) -> None:
        """Digest a ``live`` source's rows (one scan, ``rows_digest``), before a reader's passes, for
        ``refuse_changed``: a sweep's or check's passes read a caller's table where it lives, and one
        changed between them gave figures of two tables (ninety-seventh round). A source of files is
        told by its stamps."""
        if self.live:
            key = secrets.token_hex(16)
            self.rows_kept = (key, rows_digest(self.engine, self.relation, key))

    def refuse_changed(self, when: str, harm: str) -> None:
        """Refuse (exit 2) figures made from its rows when one of its files changed since it was
        opened, or its rows since ``keep_rows``."""
        refuse_changed_files(self.stamps, self.label, when, harm)
        if self.rows_kept is not None:
            key, kept = self.rows_kept
            if rows_digest(self.engine, self.relation, key) != kept:
                raise InputError(f"{self.label} changed {when} (its rows' fingerprint differs): {harm}")

    @property
    def names_may_be_data(self) -> bool:
        """Whether its column names may be a CSV file's first row of data (a file read without a
        header line), which an error must not list; a Parquet file's or a database's are its schema."""
        return any(path_format(f) not in ("parquet", "duckdb") for f in self.files)


def open_source(source: SourceLike, engine: Engine | None, options: FileRead | None = None,
                released: Callable[[str], bool] | None = None) -> Opened:
    """Make ``source`` readable by SQL. On failure, an engine made here is closed; a caller's is not.
    ``released``: which columns the run reads for their values (a relation's ``TIMESTAMP WITH TIME
    ZONE`` columns among them must be dated alike by a caller's engine: ``_refuse_unlike_dating``;
    an Arrow table's pandas index or extension types are refused there alone); None: every column.
    Every kind of source, then, has its DECIMAL values checked against their precision: a value
    past it fails inside the engine wherever it is read (``decimal_digits``)."""
    opened = _opened(source, engine, options, released)
    try:
        refuse_decimals_past_precision(opened.engine, opened.relation, opened.label, opened.kind)
    except BaseException:
        if opened.engine is not engine:  # made here (a caller's connection: its cursor alone)
            opened.engine.close()
        raise
    return opened


def _opened(source: SourceLike, engine: Engine | None, options: FileRead | None,
            released: Callable[[str], bool] | None) -> Opened:
    options = options or FileRead()
    if engine is not None:
        engine.check_connection()  # a caller's engine: its session may be unreadable (DuckDBEngine)
    if isinstance(source, bytes):  # a path as the OS gives one (os.listdir of bytes, os.fsencode)
        source = os.fsdecode(source)
    if isinstance(source, (str, Path)):  # "~" is the home folder, as in a spec (DuckDB would expand it alone)
        refuse_undecodable_path(source, "cannot read the source", RENAME_IN_UTF8)
        source = _source_for_path(Path(source).expanduser(), options)
    if isinstance(source, Source):
        if source.path is not None:
            refuse_undecodable_path(source.path, "cannot read the source", RENAME_IN_UTF8)
        return _open_query(source, engine) if source.kind == "query" else _open_file(source, engine, options)
    if DuckDBEngine.is_relation(source):
        return _open_relation(source, engine, released)
    if _is_connection_pair(source):
        if engine is not None:
            raise InputError("give either an engine or a (connection, table) source, not both")
        return _open_connection_table(*source)
    if is_spark_source(source):
        return _open_spark(source, engine)
    label, kind = ARROW_LABEL, mending.ARROW
    if is_pandas(source):
        source, label, kind = arrow_of_pandas(source, released), PANDAS_LABEL, mending.PANDAS
    if isinstance(source, pa.Table):
        if source.num_columns == 0:
            raise InputError(f"the {label} has no columns: give one holding the spec's columns")
        refuse_renamed_columns(source.schema.names, f"the {label}")
        refuse_alike_fields(source.schema, f"the {label}")
        # Loaded for Arrow sources alone: it imports pyarrow.compute (~0.08 s), which a file never needs.
        from sqlclose.prepare.arrow_durations import refuse_sub_microsecond_durations
        from sqlclose.prepare.arrow_instants import refuse_out_of_range_instants
        from sqlclose.prepare.arrow_shapes import refuse_arrow_shapes
        from sqlclose.prepare.arrow_text import refuse_invalid_text

        refuse_invalid_text(source, label)
        refuse_arrow_shapes(source, label, released)
        refuse_sub_microsecond_durations(source, label)
        refuse_out_of_range_instants(source, label)
        own = engine is None
        engine = engine or DuckDBEngine()
        name = engine.temp_name("arrow_source")
        try:
            _register_arrow(engine, name, source, label)
        except BaseException:
            if own:
                engine.close()
            raise
        # live: Arrow shares a DataFrame's (or numpy array's) buffers, which the caller may change
        # before the write; the write then published rows never judged, and verified them.
        return Opened(engine, q.table(name), label, live=True, kind=kind)
    raise InputError(f"cannot read a source of type {type(source).__name__}: give a path, (connection, table), "
                     "a DuckDB relation, a pyarrow Table, a pandas DataFrame, a Spark DataFrame or "
                     "(SparkSession, table)")


def _register_arrow(engine: Engine, name: str, table: pa.Table, label: str) -> None:
    """``table`` registered as ``name``; a column of an Arrow type the engine does not read (DuckDB:
    half floats, 256-bit decimals, dense unions, alone or nested) is refused by name, with a cast,
    not with the driver's NotImplementedException. The column is found by registering each alone,
    on the failure's path only, so that a type the engine learns to read is read."""
    try:
        engine.register(name, table)
    except (InputError, EngineOutOfMemory):
        raise
    except Exception as e:
        raise _unreadable_arrow(engine, table, label, e) from None


def _unreadable_arrow(engine: Engine, table: pa.Table, label: str, error: Exception) -> InputError:
    """The refusal of an Arrow table the engine could not register: its first column the engine
    does not read alone, its type and a cast; the driver's words when no one column is at fault."""
    probe = engine.temp_name("arrow_column")
    for i, column in enumerate(table.column_names):
        try:
            engine.register(probe, table.select([i]))
        except Exception:
            kind = table.schema.field(i).type
            return InputError(f"cannot read the {label}: column {name_shown(column)} is of Arrow type {kind}, which "
                              f"the {engine.name} engine does not read; {_arrow_cast_hint(i, column, kind, label)}")
        finally:
            engine.unregister(probe)
    return InputError(f"cannot read the {label}: {driver_message(error)}")


def _arrow_cast_hint(index: int, column: str, kind: pa.DataType, label: str) -> str:
    """What to cast a column of an unread Arrow type to, as the caller writes it: half floats to
    float32, a 256-bit decimal to decimal128 when its precision fits DuckDB's 38 digits, else to text."""
    if pa.types.is_float16(kind):
        lead, target, dtype = "cast it first", "pa.float32()", '"float32"'
    elif pa.types.is_decimal(kind) and kind.precision <= MAX_DECIMAL_DIGITS:
        lead, target = "cast it first", f"pa.decimal128({kind.precision}, {kind.scale})"
        dtype = f"pd.ArrowDtype({target})"
    elif pa.types.is_decimal(kind):
        lead, target = "a DECIMAL holds at most 38 digits: cast it to text first", "pa.string()"
        dtype = "pd.ArrowDtype(pa.string())"
    else:
        return ("give it a type the engine reads first (a union's values as one type, say text; float16 as "
                "float32; decimal256 as decimal128, or text past 38 digits)")
    cast = (f"df[{name_shown(column)}] = df[{name_shown(column)}].astype({dtype})" if label.startswith("pandas") else
            f"table = table.set_column({index}, {name_shown(column)}, table[{name_shown(column)}].cast({target}))")
    return f"{lead}, e.g. {cast}"


def brings_engine(source: Any) -> bool:
    """Whether ``source`` is read by an engine it comes with (a DuckDB connection or relation, a
    Spark DataFrame or session): a spec's [engine] cannot apply to it."""
    return DuckDBEngine.is_relation(source) or _is_connection_pair(source) or is_spark_source(source)


def spec_engine(settings: EngineSettings | None, source: Any) -> Engine | None:
    """The engine a spec's [engine] describes, made for ``source`` (the caller closes it); None
    when the spec names none or the source brings its own (``brings_engine``). A DuckDB relation
    is copied into a DuckDB of ours (``_open_relation``): a DuckDB [engine]'s threads, memory_limit
    and temp_directory bound that one (they were dropped: the copy and the search unbounded)."""
    if settings is None:
        return None
    if DuckDBEngine.is_relation(source):
        if settings.name != "duckdb":
            return None
        made = engine_from(settings)
        try:
            follow_relation_dating(made, source)
        except BaseException:
            made.close()
            raise
        return made
    return None if brings_engine(source) else engine_from(settings)


def _is_spark(obj: Any) -> bool:
    """A pyspark object (a DataFrame or a SparkSession), told without importing pyspark."""
    return type(obj).__module__.startswith("pyspark.")


def is_spark_source(source: Any) -> bool:
    """A Spark DataFrame or a ``(SparkSession, table)`` pair."""
    return _is_spark(source) or (isinstance(source, tuple) and len(source) == 2 and _is_spark(source[0]))


def _open_spark(source: Any, engine: Engine | None) -> Opened:
    """A Spark DataFrame, or a ``(SparkSession, "db.table")`` pair naming a table of its catalog:
    read on the Spark engine (the given one, or one on that session)."""
    from sqlclose.engine.spark import SparkEngine  # only here: a Spark source means pyspark is there

    session = source[0] if isinstance(source, tuple) else source.sparkSession
    if engine is not None and not (isinstance(engine, SparkEngine) and engine.spark is session):
        raise InputError("a Spark source is read by the Spark engine on its own session: pass "
                         "engine=SparkEngine(session) with that session, or no engine")
    if isinstance(source, tuple):
        parts = spark_table_parts(source[1])  # a malformed name refused before an engine is made for it
        return _open_spark_table(source[1], parts, engine or SparkEngine(session))
    engine = engine or SparkEngine(session)
    refuse_renamed_columns(source.columns, "the Spark DataFrame")
    return Opened(engine, engine.frame_relation(source), SPARK_FRAME_LABEL, _local_files(source.inputFiles()),
                  kind=mending.SPARK_FRAME)


def _open_spark_table(name: Any, parts: list[str], engine: SparkEngine) -> Opened:
    """A table of the session's catalog, named as Spark names it or by a tuple of parts (``parts``,
    ``spark_table_parts``: db.`a.b`); the SQL and the files kept from being overwritten name it
    alike. A table the session lacks is said so, as the name was read."""
    shown = name if isinstance(name, str) else typed_spark_name(parts)
    relation = engine.catalog_table(*parts)
    try:
        engine.schema(relation)
    except EngineOutOfMemory:
        raise
    except Exception as e:
        read_as = relation.sql(dialect=engine.dialect)
        missing = missing_table(shown, parts, read_as, _driver_text(e))
        raise missing or InputError(f"cannot read table {name_shown(shown)} of the Spark catalog: "
                                    f"{driver_message(e)}") from None
    return Opened(engine, relation, f"spark table {shown}", _local_files(engine.catalog_files(relation)),
                  kind=mending.SPARK_TABLE)


def _local_files(uris: list[str]) -> list[Path]:
    """The local files among a Spark source's input files (``file:`` URIs): the job reads them, so
    no output may replace them (a DataFrame's release written over the folder it was read from
    replaced the user's rows with it). A cluster's (``hdfs:``, ``s3a:``) are not paths here."""
    parsed = [urlparse(uri) for uri in uris]
    return sorted(Path(unquote(u.path)) for u in parsed if u.scheme in ("file", ""))


def _connection_table(name: Any) -> exp.Table:
    """The table a ``(connection, name)`` source names: ``"table"``, ``"schema.table"`` or
    ``"catalog.schema.table"`` (a connection may have databases attached), split as ``[source]
    table`` is (``dotted_parts``: ``'main."a.b"'`` is table a.b of schema main), or those parts as
    a tuple (a part may then hold a dot as it is): ``source_table_parts``. Each part is quoted."""
    return warehouse_table(source_table_parts(name, "the DuckDB connection", _CONNECTION_NAMING))


_CONNECTION_NAMING = (f"name it \"table\", \"schema.table\" or \"catalog.schema.table\", no part empty; "
                      f"{NAME_QUOTING}; or give the parts as a tuple (\"main\", \"a.b\")")


def _open_connection_table(con: Any, name: Any) -> Opened:
    """A caller's table, read through a cursor of the connection (``DuckDBEngine``), in the
    connection's session as far as its names and dates go; the engine is closed on failure."""
    relation = _connection_table(name)
    try:
        engine = DuckDBEngine(con)
    except InputError:
        raise
    except Exception as e:  # a closed connection, as a relation of one (_open_relation)
        raise InputError(f"cannot read table {name_shown(name)} of the DuckDB connection: "
                         f"{driver_message(e)}") from None
    try:
        engine.check_connection()
        try:
            read = engine.caller_table(relation)
        except (EngineOutOfMemory, InputError):
            raise
        except Exception as e:
            raise InputError(f"cannot read table {name_shown(name)}: {_without_guess(driver_message(e))}") from None
        refuse_renamed_fields(engine.schema(read), f"table {name_shown(name)} of the DuckDB connection")
        if read is not relation:  # a table of the caller's session alone, copied once: read as it was
            return Opened(engine, engine.compared_as_bytes(read), callers_table_label(name), kind=mending.VIEW)
        _refuse_a_failing_view(engine, relation, f"table {name_shown(name)}", relation.name, relation.db,
                               relation.catalog)
        files = _catalog_files(exp.select(exp.Star()).from_(relation.copy()).sql("duckdb"), engine.fetch)
        return Opened(engine, engine.compared_as_bytes(relation), callers_table_label(name), files, live=True,
                      databases=_database_files(engine.fetch), kind=mending.VIEW)
    except BaseException:
        engine.close()
        raise


def _query_message(error: BaseException, folder: Path | None) -> str:
    """``driver_message``, a CSV record the query's read_csv failed on told as its file's lines."""
    said = driver_message(error)
    where = query_editor_lines(_driver_text(error), folder)
    return said if where is None else _QUERY_RECORD.sub(lambda _: f"CSV {where}", said)


_QUERY_RECORD = re.compile(r"CSV record \d+ " + re.escape(RECORDS_COUNTED))


def _is_connection_pair(source: Any) -> bool:
    return isinstance(source, tuple) and len(source) == 2 and DuckDBEngine.is_connection(source[0])


def _open_query(source: Source, engine: Engine | None) -> Opened:
    """A SELECT (validated by the spec) run once, read-only, into a temp table."""
    query = sqlglot.parse_one(source.query, read="duckdb")
    label = "query" + (f" over {source.path}" if source.path else "")
    if source.path is not None and not source.path.is_file():
        raise InputError(f"source {source.path} does not exist")
    own = engine is None
    engine = engine or DuckDBEngine()
    read = FileRead("query", source.path, query=query, folder=source.folder)
    try:
        try:
            relation = engine.source_relation(read)
        except InputError:  # the engine's own words about the query (a column it names twice)
            raise
        except (ValueError, NotImplementedError) as e:
            raise InputError(f"cannot run the source query on the {engine.name} engine: {e}") from None
        except Exception as e:
            _refuse_locked(e, label)
            _refuse_writing(e, label)
            raise InputError(f"the source query failed: {_query_message(e, source.folder)}") from None
        refuse_renamed_fields(engine.schema(relation), f"the source {label}")
        # the files the database's views it names read
        on_database = bool(source.path) and isinstance(engine, DuckDBEngine)
        catalog, search_path = _catalog(engine.fetch) if on_database else ({}, "")
        _refuse_guessing_views(source.query, catalog, f"the source {label}")
        # The query's own relative names mean files in its folder, its views' in the database's.
        own_names = _read_sql(source.query)[1]
        of_views = {view: _read_sql(sql)[1] for view, sql in _views_reached(source.query, catalog).items()}
        view_names = [name for names in of_views.values() for name in names]
        if source.folder is not None:
            _refuse_working_folder_names(own_names, source.folder, f"the source {label}")
            if on_database:
                _refuse_working_folder_names(view_names, source.path.parent, f"the source {label}")
                _refuse_views_names_in_query_folder(of_views, source.folder, source.path)
        views = _files_in_search_path(own_names + view_names, search_path) if on_database else []
    except BaseException:
        if own:
            engine.close()
        raise
    return Opened(engine, relation, label, [*([source.path] if source.path else []), *query_files(source), *views],
                  path=source.path)


def query_files(source: Source | None) -> list[Path]:
    """The existing files a query source names (``FROM 'x.parquet'``, ``read_csv('y.csv')``, a glob's
    matches), looked up as DuckDB would — in the query's folder, or the working folder: the job reads
    them, so no output may replace them. Any string of the query that names a file counts: a
    string that is not meant as a path protects a file needlessly, never the reverse."""
    if source is None or source.query is None:
        return []
    return files_named(source.query, [source.folder or Path.cwd()])


def files_named(sql: str, folders: list[Path]) -> list[Path]:
    """The existing files the strings and quoted names of ``sql`` name, each looked up in
    ``folders`` and the working folder (absolute ones, and ``~``, as they are)."""
    return _files_of(_read_sql(sql)[1], folders)


def _files_of(names: list[str], folders: list[Path]) -> list[Path]:
    found: set[Path] = set()
    for name in names:
        for base in {*folders, Path.cwd()}:
            path = Path(name).expanduser()
            pattern = str(path if path.is_absolute() else base / path)
            found.update(Path(p) for p in globbing.glob(pattern, recursive=True) if Path(p).is_file())
    return sorted(found)


_QUOTED = re.compile(r"'((?:[^']|'')*)'|\"((?:[^\"]|\"\")*)\"")


def _read_sql(sql: str) -> tuple[set[str], list[str]]:
    """From one parse of ``sql``: the names (lower case, last part) of the tables it selects from,
    and its string literals and quoted table names. When sqlglot cannot parse it (DuckDB's own SQL
    of a relation or view): no table, and every quoted text, so that a file is protected
    needlessly, never missed."""
    try:
        trees = [tree for tree in sqlglot.parse(sql, read="duckdb") if tree is not None]
    except sqlglot.errors.SqlglotError:
        quoted = _QUOTED.findall(sql)
        return set(), [single.replace("''", "'") or double.replace('""', '"') for single, double in quoted]
    tables = [t for tree in trees for t in tree.find_all(exp.Table)]
    literals = [lit.this for tree in trees for lit in tree.find_all(exp.Literal) if lit.is_string]
    return ({t.name.lower() for t in tables if t.name},
            literals + [t.name for t in tables if isinstance(t.this, exp.Identifier) and t.this.quoted])


def connection_files(sql: str, views: dict[str, str], search_path: str) -> list[Path]:
    """The files a DuckDB relation's or view's ``sql`` reads, through the connection's ``views``
    (lower-case name → its SQL) it names, and theirs: looked up in the connection's
    ``file_search_path`` and the working folder, as DuckDB looks them up. A relation is the Python
    form of a source query, so no output may replace them either."""
    return _files_in_search_path(_names_read(sql, views), search_path)


def _files_in_search_path(names: list[str], search_path: str) -> list[Path]:
    """The existing files ``names`` (``_names_read``) are, looked up as DuckDB looks them up."""
    folders = [Path(p).expanduser() for p in search_path.split(",") if p.strip()]
    return _files_of(names, folders)


def _names_read(sql: str, views: dict[str, str]) -> list[str]:
    """The strings and quoted names of ``sql`` and of the ``views`` it names, and theirs."""
    return [name for text in [sql, *_views_reached(sql, views).values()] for name in _read_sql(text)[1]]


def _views_reached(sql: str, views: dict[str, str]) -> dict[str, str]:
    """The ``views`` (name → SQL) ``sql`` names, and those they name, in the order met."""
    texts, reached = [sql], {}
    for text in texts:  # grows as views are met
        for name in sorted(_read_sql(text)[0] & views.keys() - reached.keys()):
            reached[name] = views[name]
            texts.append(views[name])
    return reached


def _refuse_guessing_views(sql: str, views: dict[str, str], label: str) -> None:
    """A view the source reads (a table source that is a view, or one a query names) whose SQL reads a
    CSV or JSON file letting DuckDB guess the types: run on every read like a query, and a suppressed
    row's 5.5 made a column released whole DOUBLE (review of the sixty-third round). Refused as a query
    is (``source_query``); a view sqlglot cannot parse is left to DuckDB."""
    for name, text in _views_reached(sql, views).items():
        try:
            trees = [tree for tree in sqlglot.parse(text, read="duckdb") if tree is not None]
        except sqlglot.errors.SqlglotError:
            continue
        for tree in trees:
            try:
                refuse_guessed_types(tree, f"the view {name_shown(name)}")
            except ValueError as e:
                raise InputError(f"cannot read {label}: {e}") from None


def _refuse_working_folder_names(names: list[str], folder: Path, label: str) -> None:
    """A relative file name a source reads (a database's view over 'people.parquet', a query's
    FROM 'people.parquet') means the file in ``folder``, the database's or the query's. DuckDB looks
    in the working folder first: where that holds one too, a run from there read it instead, other
    rows with exit 0. Refused then, naming both folders; elsewhere ``folder`` is searched."""
    here = Path.cwd().resolve()
    if here == folder.resolve():
        return
    name = _relative_name_held(names, here)
    if name is not None:
        raise InputError(f"cannot read {label}: it reads {name_shown(name)}, a relative path, which DuckDB looks up in "
                         f"the working folder ({here}) before {folder.resolve()}, and the working folder holds one "
                         "too: run the job from that folder, or make the path absolute")


def _relative_name_held(names: list[str], folder: Path) -> str | None:
    """The first of ``names`` that is a relative path ``folder`` holds a file (or a match) of."""
    return next((name for name in names if not Path(name).expanduser().is_absolute()
                 and globbing.glob(str(folder / Path(name).expanduser()), recursive=True)), None)


def _refuse_views_names_in_query_folder(of_views: dict[str, list[str]], folder: Path, database: Path) -> None:
    """A relative name a database's view reads (``of_views``: view → its names) means a file in the
    database's folder, and is looked up there after the query's ``folder``: where that holds one
    too, the view read it instead."""
    if folder.resolve() == database.parent.resolve():
        return
    for view, names in of_views.items():
        name = _relative_name_held(names, folder)
        if name is not None:
            raise InputError(
                f"cannot read the source query over {database}: its view {name_shown(view)} reads {name_shown(name)}, "
                f"a relative path meant in the database's folder ({database.parent.resolve()}), and the query's folder "
                f"({folder.resolve()}), searched first, holds one too: set [source] folder to the database's "
                "folder, or make the view's path absolute")


def _without_guess(message: str) -> str:
    """DuckDB's error for a missing table, less its guess at another name (`Did you mean
    "pg_enum"?`, a system view's name for a table of the user's), as a database file source's is."""
    return re.sub(r';?\s*Did you mean "[^"]*"\?', "", message)


def _open_relation(relation: Any, engine: Engine | None, released: Callable[[str], bool] | None) -> Opened:
    """A DuckDB relation, streamed once into a temp table of our engine."""
    names = [name for name, _ in _relation_columns(relation)]
    # Its names as the relation gives them: stored, DuckDB renames a second ssn (or SSN) ssn_1.
    refuse_renamed_columns(names, "the DuckDB relation")
    own = engine is None
    engine = engine or DuckDBEngine()
    if not isinstance(engine, DuckDBEngine):
        raise InputError("a DuckDB relation is read by the DuckDB engine")
    try:
        if own:
            follow_relation_dating(engine, relation)
        else:
            _refuse_unlike_dating(engine, relation, released)
        try:
            table = engine.load_relation(engine.temp_name("relation_source"), relation)
        except (EngineOutOfMemory, InputError):  # not the input's fault / our own words: as they are
            raise
        except Exception as e:
            raise InputError(f"cannot read the DuckDB relation: {driver_message(e)}") from None
        refuse_renamed_fields(engine.schema(table), "the DuckDB relation")
        run = (lambda query: relation.query(_SCRATCH, query).to_arrow_table())  # noqa: E731
        files = _catalog_files(relation.sql_query(), run)
        databases = _database_files(run)
    except BaseException:
        if own:
            engine.close()
        raise
    return Opened(engine, table, RELATION_LABEL, files, databases=databases, kind=mending.RELATION)


_KEEP_IT_OPEN = "a relation is read on the connection that made it: keep it open until sqlclose.anonymize returns"


def _relation_columns(relation: Any) -> list[tuple[str, str]]:
    """The relation's columns and their DuckDB types as text. Its connection closed, DuckDB raised
    a raw ConnectionException (review, sixty-fourth round; again from a spec's [engine], review h1
    of the eighty-fifth)."""
    try:
        return list(zip(relation.columns, map(str, relation.types)))
    except Exception as e:
        raise InputError(f"cannot read the DuckDB relation: {driver_message(e)} ({_KEEP_IT_OPEN})") from None


def _zoned_columns(relation: Any, released: Callable[[str], bool] | None = None) -> list[str]:
    """The relation's columns holding a ``TIMESTAMP WITH TIME ZONE`` (nested too), whose day, year
    and text the session's ``TimeZone`` and ``Calendar`` decide; of ``released`` alone when given."""
    return [name for name, kind in _relation_columns(relation)
            if "TIMESTAMP WITH TIME ZONE" in kind and (released is None or released(name))]


def _relation_dating(relation: Any) -> dict[str, str]:
    """``DATING_SETTINGS`` as the session of the connection that made ``relation`` has them."""
    try:
        rows = relation.query(_SCRATCH, _DATING).fetchall()
    except Exception as e:  # busy (an unfinished execute() result), or closed: as the relation's read says
        raise InputError(f"cannot read the DuckDB relation: {driver_message(e)} ({_KEEP_IT_OPEN})") from None
    return dict(rows)


def follow_relation_dating(engine: DuckDBEngine, relation: Any) -> None:
    """An engine of sqlclose's own dates a relation's ``TIMESTAMP WITH TIME ZONE`` columns as the
    session that made it does, as a cursor of a caller's connection does (``(con, "t")``): the same
    rows gave other month labels as ``con.sql(...)`` than as ``(con, "t")`` (review h5, eighty-fourth
    round). Read only when the relation holds such a column."""
    if _zoned_columns(relation):
        engine.date_as(_relation_dating(relation))


def _refuse_unlike_dating(engine: DuckDBEngine, relation: Any, released: Callable[[str], bool] | None) -> None:
    """A caller's engine whose session dates a ``TIMESTAMP WITH TIME ZONE`` the run reads (``released``)
    otherwise than the relation's own session: its dates would follow the engine, not the session
    the caller set. Refused rather than setting the caller's engine, whose later runs it would change."""
    zoned = _zoned_columns(relation, released)
    if not zoned:
        return
    theirs, ours = _relation_dating(relation), engine.dating()
    unlike = [name for name in DATING_SETTINGS if theirs.get(name) != ours.get(name)]
    if unlike:
        said = ", ".join(f"{name} {theirs.get(name)!r} against {ours.get(name)!r}" for name in unlike)
        holds = agreeing(len(zoned), "holds", "hold")
        raise InputError(f"the DuckDB relation's {named('column', zoned)} {holds} TIMESTAMP WITH TIME "
                         f"ZONE values, which the session that made the relation and the engine given date apart "
                         f"({said}): their days and a dates hierarchy's labels would follow the engine. Give no "
                         "engine (sqlclose then dates them as the relation's session does), or date them alike: "
                         "SET TimeZone (and Calendar) on the relation's connection to the engine's, or make the "
                         "engine on that connection, DuckDBEngine(con), which follows its session")


_DATING = exp.select("name", "value").from_(exp.Table(this=exp.Anonymous(this="duckdb_settings"))).where(
    exp.In(this=exp.column("name"), expressions=[exp.Literal.string(n) for n in DATING_SETTINGS])).sql("duckdb")
_SCRATCH = "sqlclose_catalog"  # the name relation.query gives the relation, which the catalog queries never read
_VIEWS = exp.select(exp.func("lower", exp.column("view_name")).as_("name"), exp.column("sql")).from_(
    exp.Table(this=exp.Anonymous(this="duckdb_views"))).where(exp.not_(exp.column("internal"))).sql("duckdb")
_SEARCH_PATH = exp.select(exp.func("current_setting", exp.Literal.string("file_search_path")).as_("path")).sql("duckdb")


def _catalog_files(sql: str, run: Callable[[str], pa.Table]) -> list[Path]:
    """The files ``sql`` reads on its connection (``connection_files``), the connection's views and
    search path read by ``run``. Done before the search: a write is refused whatever it finds."""
    views, search_path = _catalog(run)
    return connection_files(sql, views, search_path)


def _database_files(run: Callable[[str], pa.Table]) -> list[Path]:
    """The files of the databases a connection has open (its own and every one attached), read by
    ``run``: a relation's release written over its input table had replaced it (review h2 of the
    eighty-fifth round: a relation names no file, and our engine attached the file anew)."""
    try:
        paths = run(_DATABASE_PATHS).column("path").to_pylist()
    except EngineOutOfMemory:
        raise
    except Exception as e:
        raise InputError(f"cannot read the databases of the DuckDB connection: {driver_message(e)}") from None
    return [Path(p) for p in paths if p and p != ":memory:"]


_DATABASE_PATHS = exp.select("path").from_(exp.Table(this=exp.Anonymous(this="duckdb_databases"))).where(
    exp.and_(exp.not_(exp.column("internal")), exp.Is(this=exp.column("path"), expression=exp.Null()).not_())
).sql("duckdb")


def _catalog(run: Callable[[str], pa.Table]) -> tuple[dict[str, str], str]:
    """A connection's views (lower-case name → its SQL) and its ``file_search_path``, read by ``run``."""
    try:
        views = run(_VIEWS).to_pylist()
        search_path = run(_SEARCH_PATH).column("path")[0].as_py() or ""
    except EngineOutOfMemory:
        raise
    except Exception as e:
        raise InputError(f"cannot read the views of the DuckDB connection: {driver_message(e)}") from None
    return {view["name"]: view["sql"] for view in views}, search_path


def _open_file(source: Source, engine: Engine | None, options: FileRead) -> Opened:
    files = _files(source)
    kind = source.kind
    label = str(source.path) + (f" (table {name_cut(source.table)})" if source.table else "")
    folder = source.path.is_dir() and not source.is_pattern
    # Stamped as soon as they are listed, before a row is read (a CSV's copy, the fingerprint, the scan):
    # a file replaced while the run reads it is refused at the write, whenever it was replaced.
    stamps = stamps_of([*files, *([source.path] if folder else [])])
    path = source.path / "**" / "*.parquet" if folder else source.path
    read = dataclasses.replace(options, kind=kind, path=path, table=source.table, delimiter=source.delimiter,
                               glob=source.glob or folder, encoding=source.encoding, nulls=tuple(source.nulls),
                               types=dict(source.types), parquet_folder=folder,
                               files=tuple(files) if kind == "parquet" and (folder or source.is_pattern) else ())
    if kind == "csv":
        read = _with_csv_header(read, files)
    elif kind == "duckdb":
        _refuse_non_database(source.path)
    elif kind == "parquet":
        _refuse_unlike_files(files, label)
        if folder:
            _refuse_shadowed_columns(source.path, files)
    own = engine is None
    engine = engine or DuckDBEngine()
    try:
        try:
            relation = engine.source_relation(read)
        except EngineOutOfMemory:
            raise
        except InputError as e:  # the engine's own words, about the file
            raise InputError(f"cannot read {label}: {e}") from None
        except Exception as e:  # the driver's own words say what is wrong with the file (records removed)
            _refuse_locked(e, label)
            problem = csv_problem(e, read) if kind == "csv" else None
            said = driver_message(e) if kind != "csv" else with_editor_lines(
                driver_message(e), _driver_text(e), read.path, read.encoding, read.delimiter)
            raise InputError(f"cannot read {label}: {problem}" if problem else
                             f"cannot read {label} as {kind}: {said}") from None
        if kind == "duckdb":
            columns = _check_table(engine, relation, f"table {name_shown(source.table)} in {source.path}")
            refuse_renamed_fields(columns, f"table {name_shown(source.table)} in {source.path}")
            schema, name = table_parts(source.table)  # "a.b" one name, a.b table b of schema a
            named = exp.select(exp.Star()).from_(warehouse_table([schema, name])).sql("duckdb")
            views, search_path = _catalog(engine.fetch)
            _refuse_guessing_views(named, views, label)
            # What its views read: the table itself is the database's, never a file of the working folder
            # (a folder 'people' there refused the table 'people': review of the ninety-second round).
            names = [name for sql in _views_reached(named, views).values() for name in _read_sql(sql)[1]]
            _refuse_working_folder_names(names, source.path.parent, label)
            _refuse_a_failing_view(engine, relation, f"table {name_shown(source.table)} in {source.path}", name, schema)
            viewed = _files_in_search_path(names, search_path)  # a view of the database reads them
            stamps.update(stamps_of(viewed))  # before the first row is read, as the database's own
            files += viewed
    except BaseException:
        if own:
            engine.close()
        raise
    # A folder or a pattern is an input as a whole: an output inside it (or matching it) would be
    # read back as input rows by the next run.
    return Opened(engine, relation, label, files + ([source.path] if folder or source.is_pattern else []),
                  stamps=stamps, path=source.path)


def _refuse_locked(e: Exception, label: str) -> None:
    """A source database another process holds open for writing is the environment's state, not bad
    input (exit 5, as for an output database): a scheduler retrying on 5 would have taken the exit 2
    for a broken input (review of the sixty-third round)."""
    if DATABASE_LOCKED in str(e):
        raise DatabaseLocked.source(label) from None


def _refuse_writing(e: Exception, label: str) -> None:
    """A query that writes to its database (``nextval`` advances a sequence stored there) fails on
    the read-only attach; DuckDB's InvalidInput error was told as a value not converted."""
    if "which is attached in read-only mode" in _driver_text(e):
        raise InputError(f"the source {label} writes to the database (as nextval() does, advancing a sequence "
                         "stored in it), and sqlclose reads a source database read-only: leave that out of the "
                         "query") from None


def _files(source: Source) -> list[Path]:
    """The files a source reads: its path, every file of a folder, or (glob = true) the matches;
    for a folder or a pattern, not those under a path part Spark and Hive skip (engine.listing)."""
    if source.is_pattern:
        return _pattern_files(source)
    if not source.path.exists():
        pattern = any(ch in GLOB_CHARACTERS for ch in source.path.name)
        raise InputError(f"source {source.path} does not exist" + (
            " (a path is literal: to read the files a pattern matches, give the pattern as [source] path with "
            "glob = true; from Python, then pass None as the source)" if pattern else unexpanded_hint(source.path)))
    if source.path.is_dir():
        found = folder_files(source.path)
        if source.kind != "parquet" or not found.parquet:
            skipped = (f" (it holds {len(found.hidden)} under a path part starting with \"_\" or \".\", such as "
                       f"{found.hidden[0]}, which Spark and Hive skip as a job's leftovers, and so does sqlclose)"
                       if found.hidden and source.kind == "parquet" else "")
            raise InputError(f"source {source.path} is a folder; a folder source must hold Parquet files "
                             f"(set format = \"parquet\"){skipped}")
        if found.special:  # before any file is opened to tell Parquet: nothing of the folder is read
            raise InputError(special_refusal(found.special, f"source folder {source.path} holds") + ": move it "
                             "out of the folder, or prefix its name with \"_\" to leave it out")
        if found.other:
            raise _unread_files(source.path, found.other)
        if found.linked:
            raise InputError(linked_folder_refusal(source.path, found.linked, "source folder"))
        return found.parquet
    if (special := special_file(source.path)) is not None:
        raise InputError(f"source {source.path} is {special}, which gives its bytes once: sqlclose reads a source "
                         "more than once (to check it, to search, to verify the release against it); save it to a "
                         "file first")
    return [source.path]


def _unread_files(folder: Path, other: list[Path]) -> InputError:
    named = f"{other[0]}, which is not a Parquet file" if len(other) == 1 else \
        f"{other[0]} and {counted(len(other) - 1, 'other file')}, which are not Parquet files"
    return InputError(f"source folder {folder} holds {named} (their first bytes are not PAR1); a folder source "
                      "reads every file not under a path part starting with \"_\" or \".\", whatever its name, as "
                      "Spark and Hive do: move it out of the folder, or prefix its name with \"_\" to leave it out")


def _pattern_files(source: Source) -> list[Path]:
    """A pattern's matches, as DuckDB expands it (dot files too), less those a wildcard found under
    a hidden path part. A CSV pattern with such a match is refused: its reader takes the pattern."""
    matches = sorted(Path(p) for p in globbing.glob(str(source.path), recursive=True, include_hidden=True)
                     if Path(p).is_file())
    hidden = [m for m in matches if hidden_match(m, source.path)]
    if hidden and source.kind != "parquet":
        raise InputError(f"source pattern {source.path} matches {hidden[0]}, under a path part starting with "
                         "\"_\" or \".\" (a job's leftover, which Spark and Hive skip): remove it, or narrow the "
                         "pattern")
    files = [m for m in matches if m not in hidden]
    if not files:
        raise InputError(f"source pattern {source.path} matches no file" + (
            f" but {hidden[0]}, under a path part starting with \"_\" or \".\", which Spark and Hive skip as a "
            "job's leftovers, and so does sqlclose" if hidden else ""))
    return files


def _source_for_path(path: Path, options: FileRead) -> Source:
    """A path given on its own takes the reading options (format, delimiter, table) that apply to it."""
    fmt = options.format if options.format and not path.suffix else _written_format(path)
    is_db = (fmt or _DB_SUFFIXES.get(path.suffix.lower())) == "duckdb"
    csv_only = {} if is_db or (fmt or path.suffix.lower()) in ("parquet", ".parquet", ".pq") else \
        {"encoding": options.encoding, "nulls": list(options.nulls), "types": options.types}
    if fmt is None and suffix_kind(path) is None and not path.is_dir() and not options.glob:
        _refuse_untold_path(path)
    try:
        return Source(path=path, format=fmt, delimiter=None if is_db else options.delimiter,
                      table=options.table if is_db else None, glob=options.glob and not is_db, **csv_only)
    except ValidationError as e:
        raise InputError(f"source {path}: {e.errors()[0]['msg'].removeprefix('Value error, ')}") from None


def _refuse_untold_path(path: Path) -> None:
    """A path given on its own (check's table, an API call) whose format nothing tells: a missing
    file is said to be missing (a typo was told "cannot tell the format"), and a file without a
    format's suffix is asked for one — there is no spec whose ``format`` could be set."""
    if not path.exists():
        raise InputError(f"source {path} does not exist")
    if path.suffix.lower() in (".gz", ".zst") and suffix_kind(path.with_suffix("")) == "csv":
        return  # the spec's own message says how to read a compressed CSV
    raise InputError(f"cannot tell the format of {path}: its name has no suffix sqlclose reads (.csv, .tsv, .txt, "
                     f".parquet, .pq, .duckdb, .db, .ddb) and its first bytes are neither a Parquet file's nor a "
                     f"DuckDB database's; if it is a CSV file, give it a .csv name (e.g. {path.name}.csv)")


def path_format(path: Path) -> str | None:
    """The format a path given alone is read as (csv, parquet, duckdb): a folder's (Parquet), its
    suffix's, or its first bytes'; None when none tells (reading it then says so)."""
    path = path.expanduser()
    return "parquet" if path.is_dir() else suffix_kind(path) or _written_format(path)


def _written_format(path: Path) -> str | None:
    """The format of a Parquet file or DuckDB database whose suffix names none (a release written
    under a dated name, ``nightly.2026-11-30``, with format = "parquet"), told by its magic bytes;
    None for any other path (its suffix says, or the error asks for a format)."""
    if suffix_kind(path) or not path.is_file():
        return None
    return magic_format(path)


_DUCKDB_HEADERS = 3 * 4096  # a DuckDB database opens with its main header and two database headers


def magic_format(path: Path) -> str | None:
    """"parquet" or "duckdb" when the file's bytes are one (Parquet: PAR1 at both ends; DuckDB:
    DUCK at byte 8 of a file that holds its headers), else None: a text whose first line happens
    to start with PAR1 is still a text."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            header = handle.read(4)
            handle.seek(max(size - 4, 0))
            trailer = handle.read(4)
        if size >= 12 and header == b"PAR1" and trailer == b"PAR1":
            return "parquet"
        return "duckdb" if size >= _DUCKDB_HEADERS and has_duckdb_header(path) else None
    except OSError:
        return None


def _check_table(engine: Engine, relation: exp.Expression, label: str) -> pa.Schema:
    """The table's columns and types; an unreadable table is refused, naming ``label``."""
    try:
        return engine.schema(relation)
    except EngineOutOfMemory:
        raise
    except Exception as e:
        raise InputError(f"cannot read {label}: {driver_message(e)}") from None


def _refuse_a_failing_view(engine: Engine, relation: exp.Expression, label: str, name: str, schema: str = "",
                           catalog: str = "") -> None:
    """A DuckDB view is a query run at every read: a row it fails on (its CAST, strptime, an
    overflow) stopped the run midway as an internal error (EngineError, exit 1), or only at the
    write when the column was kept. A view's every value is computed once here, so that it is
    refused as bad input, as a failing [source] query is, naming no value. A hash of each row, not
    counts: DuckDB answers count(column) without computing a value it knows is not NULL (a list, an
    overflow). Tables are not read: their rows hold their values already."""
    if not isinstance(engine, DuckDBEngine) or not _names_a_view(engine, name, schema, catalog):
        return
    columns = [exp.column(exp.to_identifier(c, quoted=True)) for c in engine.schema(relation).names]
    every_value = exp.select(exp.Max(this=exp.Anonymous(this="HASH", expressions=columns))).from_(relation.copy())
    try:
        engine.fetch(every_value)
    except EngineOutOfMemory:
        raise
    except Exception as e:
        raise InputError(f"cannot read {label}: it is a view, and its query failed: {driver_message(e)}; fix the "
                         "view (TRY_CAST gives NULL where CAST fails) or the rows it reads") from None


def _names_a_view(engine: Engine, name: str, schema: str, catalog: str) -> bool:
    """Whether a view of the DuckDB catalog has this name (and schema and catalog, where given; any
    otherwise: a table of the same name then costs a needless read, never a missed view)."""
    named = [("view_name", name), ("schema_name", schema), ("database_name", catalog)]
    given = [(column, part) for column, part in named if part]
    matches = [exp.EQ(this=exp.Lower(this=exp.column(column)), expression=exp.Lower(this=exp.Placeholder(this=str(i))))
               for i, (column, _) in enumerate(given, start=1)]
    query = exp.select(exp.Count(this=exp.Star()).as_("n")).from_(exp.Table(this=exp.Anonymous(this="duckdb_views"))) \
        .where(exp.and_(exp.Not(this=exp.column("internal")), *matches))
    return bool(engine.fetch_row(query, [part for _, part in given])["n"])


def _refuse_non_database(path: Path) -> None:
    """A file read as a DuckDB database must be one (its header names it at byte 8), or DuckDB's own
    error — about launching an in-memory database — says nothing useful."""
    if not has_duckdb_header(path):
        raise InputError(f"cannot read {path} as a DuckDB database: it is not one; set [source] format to the "
                         "file's format (\"csv\", \"parquet\") or point path at a .duckdb file")


CSV_DELIMITERS = ",;\t|"
CSV_ENCODINGS = ("latin-1", "utf-16", "utf-8")  # [source] encoding's values, in the order advised


def _with_csv_header(read: FileRead, files: list[Path]) -> FileRead:
    """Read the header record (only it) of each file: the column names as written — DuckDB would
    rename a repeated one (ssn → ssn_1) —, the delimiter, given or told by the header, and the line
    ending after the record (``FileRead.new_line``, ``FileRead.line_ending``)."""
    # A header whose quoted name holds a line break is read whole, the file with the ending after it
    records = [_header_record(f, read.encoding, read.delimiter) for f in files]
    headers = [line for line, _, _ in records]
    new_line = _alike(ending if broken else None for _, ending, broken in records)
    line_ending = _alike(ending for _, ending, _ in records)  # every header's, for Spark's reader
    # each file's: where they differ, Spark's reader is told each file's own, as DuckDB's reader takes it
    line_endings = tuple((f, ending) for f, (_, ending, _) in zip(files, records))
    delimiter = read.delimiter or _header_delimiter(headers[0])
    names = []
    # Spaces around a name are no part of it, as DuckDB's own reader takes a header (' age ' is age); a
    # warehouse histogram's column the spec names with them (' pad age ') is found without them.
    spelled = {name.strip(): name for name in read.exact_names}
    for f, line in zip(files, headers):
        problem = header_quote_problem(f, line, read.encoding, delimiter) if len(delimiter) == 1 else None
        if problem is not None:  # Python's csv reader would make names of it, and DuckDB's find no rows
            raise InputError(f"cannot read {f}: {problem}")
        fields = [spelled.get(h.strip(), h.strip()) for h in _header_fields(line, delimiter)]
        if len(fields) == 1 and any(d in line for d in CSV_DELIMITERS if d != delimiter):
            seen = next(d for d in CSV_DELIMITERS if d != delimiter and d in line)
            fix = f"pass --delimiter {seen!r}" if read.checked else f"set [source] delimiter = {seen!r}"  # check's own
            raise InputError(f"cannot read {f}: its header does not split on {delimiter!r} (it seems to use "
                             f"{seen!r}); {fix}")
        nameless = [i + 1 for i, name in enumerate(fields) if not name]
        if nameless:  # DuckDB would name it C<n>, a name nobody declared or chose
            raise InputError(f"cannot read {f}: field {nameless[0]} of its header (line 1) has no name; name it, or "
                             "remove that column")
        refuse_renamed_columns(fields, str(f))
        if names and fields != names:
            raise InputError(f"cannot read {f}: its header differs from {files[0]}'s; the files of one source "
                             "must have the same columns")
        names = fields
    unknown = [name for name in read.types if name not in names]
    if unknown:  # DuckDB would ignore it: a typo would leave the column read as text
        # The columns are listed where the header holds a column the read names (a type's, an ordered
        # one's): else it may be a first row of data (``problem.shows_columns``).
        told = missing_column(unknown[0], names, str(read.path), [*read.types, *read.numeric])
        raise DataError(f"[source] types: {told}; correct the name or remove it from types")
    return dataclasses.replace(read, delimiter=delimiter, header=tuple(names), new_line=new_line,
                               line_ending=line_ending, line_endings=line_endings)


def _alike(endings: Iterable[str | None]) -> str | None:
    """The line ending of every file of a source, where they end alike; else None (unsaid)."""
    found = set(endings)
    return found.pop() if len(found) == 1 else None


def _header_fields(line: str, delimiter: str) -> list[str]:
    """The fields of the header record ``line``, a quoted field's line break kept in its name (a
    one-item list of text refused it: "new-line character seen in unquoted field"). A quote after
    spaces opens a quoted field, as DuckDB's reader takes it (``a, "b"`` names b, not '"b"')."""
    return next(csv.reader(io.StringIO(line, newline=""), delimiter=delimiter, skipinitialspace=True), [])


_COMPRESSED = {b"\x1f\x8b\x08": "gzip", b"\x28\xb5\x2f\xfd": "zstd"}  # each format's first bytes (magic)


def _refuse_compressed(path: Path, head: bytes) -> None:
    """A compressed CSV given as [source] path was told as text of another encoding, and the advice,
    followed, read its bytes as a table (review of the sixty-third round): named as such, with the
    two ways to read it. ``head``: the file's first bytes."""
    kind = next((name for magic, name in _COMPRESSED.items() if head.startswith(magic)), None)
    if kind is not None:
        query = f"read_csv('{path.name}', compression = '{kind}', columns = {{…}})"
        raise InputError(f"cannot read {path}: it is {kind}-compressed; decompress it and give the CSV, or read it "
                         f"in a [source] query, {query}, with folder = its folder")


def _header_record(path: Path, encoding: str, delimiter: str | None) -> tuple[str, str | None, bool]:
    """The header record, the line ending after it and whether a quoted name of it holds a line break
    (``csv_lines.header_record``; its fields split at ``delimiter``, else at the one its first line
    tells), the file opened once. UTF-16 is read little-endian, with or without its byte-order mark,
    as the engine reads it."""
    utf16 = encoding.lower() == "utf-16"
    decoder = codecs.getincrementaldecoder("utf-16-le" if utf16 else encoding)()
    with path.open("rb") as handle:
        head = handle.read(_BIG_ENDIAN_SAMPLE if utf16 else 4)
        _refuse_compressed(path, head)
        if utf16:
            _refuse_big_endian(path, head)
        handle.seek(0)
        line = _header_line(handle, decoder, path, encoding)
        try:
            return header_record(line, _characters(handle, decoder), delimiter or _header_delimiter(line))
        except UnicodeDecodeError:  # past line 1, in a quoted name: the line read as before, its quote told
            return line.rstrip("\r\n"), None, False


def _header_line(handle: BinaryIO, decoder: codecs.IncrementalDecoder, path: Path, encoding: str) -> str:
    """The header's first line, its line break kept, decoded a byte at a time up to that break: a bad
    byte further on is not blamed on line 1, and UTF-16's two-byte line break stays whole
    (``readline()`` on bytes cut its '\\n\\0' in half, so no UTF-16 file could be read), and a file
    of CR line breaks is not read whole."""
    pieces: list[str] = []
    try:
        while not (pieces and pieces[-1].endswith(("\n", "\r"))):  # a line break ends it: CR alone, too
            byte = handle.read(1)
            pieces.append(decoder.decode(byte, final=not byte))
            if not byte:
                break
    except UnicodeDecodeError:
        raise InputError(f"cannot read {path}: it is not {encoding.upper()} text (line 1); "
                         f"{_encoding_advice(encoding)}") from None
    line = "".join(pieces).lstrip("\ufeff")
    if not line.strip():
        raise InputError(f"cannot read {path}: the file is empty (no header, no rows)")
    return line


def _characters(handle: BinaryIO, decoder: codecs.IncrementalDecoder) -> Iterator[str]:
    """The characters after what ``decoder`` has decoded of ``handle``, read a byte at a time: only
    as many as are taken."""
    while byte := handle.read(1):
        yield from decoder.decode(byte)
    yield from decoder.decode(b"", final=True)


_BIG_ENDIAN_SAMPLE = 1 << 20  # bytes looked at for the header's line break (a header is told by its end)


def _refuse_big_endian(path: Path, head: bytes) -> None:
    """The engine reads UTF-16 little-endian only, and a big-endian file as one column of noise
    (its line breaks, 00 0A, are never found): refused, said by its byte-order mark (FE FF) or,
    without one, by the header line's break: 0A 00 little-endian, 00 0A big-endian, the first at
    an even offset (a CR's, 0D, where no LF is). Only U+0A00 (unassigned) and U+0D00 would read as a
    break the other way round; the names' bytes cannot tell: a little-endian 一 (U+4E00) is 00 4E,
    a big-endian N (review of the ninety-fifth round: a header of CJK names was refused, and a
    big-endian one holding 一 passed). ``head``: the file's first ``_BIG_ENDIAN_SAMPLE`` bytes."""
    if head.startswith(b"\xff\xfe"):
        return
    if head.startswith(b"\xfe\xff"):
        said = "its byte-order mark says so"
    elif _break_order(head) != "big":
        return
    else:
        said = "no byte-order mark, but its header line's break says so: 00 0A, its zero byte first"
    raise InputError(f"cannot read {path}: it is big-endian UTF-16 ({said}), which is read little-endian only; "
                     "re-save it as UTF-16 LE (Windows' \"Unicode\") or UTF-8")


def _break_order(head: bytes) -> str | None:
    """The byte order the first line break of UTF-16 text ``head`` is written in ("little",
    "big"), an LF's looked for first, then a CR's; None where none is found."""
    for char in (0x0A, 0x0D):
        little, big = _first_unit(head, bytes([char, 0])), _first_unit(head, bytes([0, char]))
        if little is not None or big is not None:
            return "big" if little is None or (big is not None and big < little) else "little"
    return None


def _first_unit(head: bytes, pair: bytes) -> int | None:
    """The first even offset of ``head`` holding the two bytes ``pair``."""
    at = head.find(pair)
    while at >= 0 and at % 2:
        at = head.find(pair, at + 1)
    return None if at < 0 else at


def _encoding_advice(encoding: str) -> str:
    """What to set for a CSV its ``encoding`` does not decode: the other encodings a spec takes."""
    others = " or ".join(f'"{e}"' for e in CSV_ENCODINGS if e != encoding.lower())
    return f"set [source] encoding = {others}"


def _header_delimiter(line: str) -> str:
    """The candidate that splits the header (quotes respected) into the most fields; ',' on ties."""
    return max(CSV_DELIMITERS, key=lambda d: (len(_header_fields(line, d)), d == ","))


_FIELDS = re.compile(r"Expected Number of Columns: (\d+) Found: (\d+)")
_CONVERT = re.compile(r'Error when converting column "(.+?)"\. Could not convert string .* to \'(\w+)\'')


def _field_count(where: str, header: int, found: int, delimiter: str | None) -> str:
    """A row of another field count than the header's. DuckDB stops reading a long row at its first
    field past the header's (its ``Found`` is then the header's count + 1, whatever the row holds),
    so a long row is told as having more; a header of one field, with rows of more, is most often a
    line before the header (a title, a comment) read as the header."""
    if found <= header:
        return f"{where} has {counted(found, 'field')} where the header has {header}; fix that row (or the " \
            f"delimiter: {delimiter!r})"
    said = f"{where} has more fields than the header's {header}; fix that row (or the delimiter: {delimiter!r})"
    if header == 1:
        said += ("; the header, line 1, has one field: if lines come before the header (a title, a comment), "
                 "remove them")
    return said


def csv_problem(error: BaseException, read: FileRead) -> str | None:
    """DuckDB's CSV errors in the spec's words: the line, the column, what to set — never the
    offending record or value. Read from DuckDB's own error, whose values the engine's leaves out;
    its record numbers told as the lines an editor shows (``editor_lines``)."""
    text = _driver_text(error)
    where = editor_lines(text, read.path, read.encoding, read.delimiter) or "a line"
    if fields := _FIELDS.search(text):
        return _field_count(where, int(fields.group(1)), int(fields.group(2)), read.delimiter)
    if convert := _CONVERT.search(text):
        column, wanted = convert.group(1), convert.group(2)
        if column in read.numeric and column not in read.types and wanted == "BIGINT":
            # read as BIGINT because every value is a whole number: this one is past its range
            return (f"column {name_shown(column)} holds a whole number past BIGINT's range, ±9223372036854775807 "
                    f"({where}); declare the column's type for numbers that large: [source] types = "
                    f"{{ {name_cut(column)} = \"DECIMAL(38, 0)\" }} (or \"DOUBLE\"){cut_in_advice(column)}")
        if column in read.numeric and column not in read.types and read.histogram:
            return (f"column {name_shown(column)} holds a value that is not a number ({where}); an ordered sensitive "
                    "column needs numbers: fix the value in the warehouse table (or count a view of it that makes it "
                    "NULL) and export again, or use another distance")
        if column in read.numeric and column not in read.types:
            return (f"column {name_shown(column)} holds a value that is not a number ({where}); an ordered sensitive "
                    f"column needs numbers: {unread_value_fixes(read, ordered=True)}")
        return (f"column {name_shown(column)} holds a value that is not a {wanted} ({where}); "
                f"{unread_value_fixes(read, False)}")
    if "unterminated quote" in text:  # or text after a closed quote: DuckDB says the same of both
        return unterminated_quote_problem(text, read.path, read.encoding, read.delimiter, where)
    if "Invalid unicode" in text:
        return f"it is not {read.encoding.upper()} text ({where}); {_encoding_advice(read.encoding)}"
    if INVALID_STATE in text:  # DuckDB's message names no line: the file is scanned for the reason
        return invalid_state_problem(text, read.path, read.encoding, read.delimiter)
    return None


def _driver_text(error: BaseException) -> str:
    """The driver's own error (an engine's error keeps it as its cause)."""
    return str(error.cause or error) if isinstance(error, EngineError) else str(error)


def _refuse_unlike_files(files: list[Path], label: str) -> None:
    """The files of a folder or a pattern name no column twice, and have one set of columns, of
    types that read unchanged as the first file's (``_read_unchanged``), or are refused. An engine
    reads them as one table, every file with the first's types: a second file's DOUBLE salaries
    were cast to the first's BIGINT (8000.5 released as 8000, a salary no row holds, the re-check
    reading the source the same way), and its text ages failed the cast, the error quoting a row's
    value. Compared as DuckDB reads each file alone, once per kind of footer
    (``DuckDBEngine.parquet_footers``); the refusal names no value."""
    for f in files:  # by each file's statistics: files of one footer hold other values
        refuse_instants_past_range(f)
    if len(files) < 2:
        _refuse_renamed_file_by_file(files)
        for f in files:
            refuse_narrowed_columns(f)
        return
    reader = DuckDBEngine()
    try:
        try:
            footers = reader.parquet_footers(files)
        except Exception:  # a file that is no Parquet: told file by file, as for one file
            _refuse_renamed_file_by_file(files)
            raise
        types_of: dict[tuple, dict[str, str]] = {}
        for f, footer in zip(files, footers):
            if footer not in types_of or has_int96(footer[0]):  # an INT96 column's values differ file by file
                refuse_narrowed_columns(f)
            if footer in types_of:  # read alike: compared when its footer was first met
                continue
            _refuse_rewritten_names(f)
            types_of[footer] = reader.parquet_file_types(f)
            _refuse_unlike_types(label, (files[0], types_of[footers[0]]), (f, types_of[footer]))
    finally:
        reader.close()


def _refuse_shadowed_columns(folder: Path, files: list[Path]) -> None:
    """A Hive folder key (``dept=10/``) that is also a column of the files (names alike but for case,
    as engines match them) is refused: the engine reads the folder's value for every row, and the
    files' own values were gone from the release without a word (a QI so shadowed was searched on
    the folders' values). pyarrow refuses such a folder too. The files share their columns
    (``_refuse_unlike_files``): the first one's are read."""
    keys: dict[str, Path] = {}
    for f in files:
        for part in f.relative_to(folder).parts[:-1]:
            if "=" in part:
                keys.setdefault(part.split("=", 1)[0].casefold(), f.parent)
    if not keys:
        return
    column = next((name for name in _parquet_schema(files[0]).names if name.casefold() in keys), None)
    if column is not None:
        raise InputError(f"cannot read {folder}: its partition folders (such as {keys[column.casefold()]}) name column "
                         f"{name_shown(column)}, which its files hold too; the engine would read the folder's value "
                         "for every row, dropping the files' own: rename the folders' key, or the files' column")


def _refuse_renamed_file_by_file(files: list[Path]) -> None:
    for f in files:
        _refuse_rewritten_names(f)


def _refuse_rewritten_names(path: Path) -> None:
    """A Parquet file's columns and struct fields, each a name DuckDB keeps (``column_names``)."""
    schema = _parquet_schema(path)
    refuse_renamed_columns(schema.names, str(path))
    refuse_alike_fields(schema, str(path))


def _refuse_unlike_types(label: str, first: tuple[Path, dict[str, str]], other: tuple[Path, dict[str, str]]) -> None:
    """``other`` file's columns and types against the first file's, as one table reads them."""
    (first_file, ours), (f, types) = first, other
    unlike = next((c for c in [*ours, *types] if not _read_unchanged(types.get(c), ours.get(c))), None)
    if unlike is not None:
        theirs, read = (t.get(unlike, "(no such column)") for t in (types, ours))
        raise InputError(
            f"cannot read {label}: {f} gives column {name_shown(unlike)} the type {theirs}, {first_file} {read}; the "
            "files of one source must have the same columns, of types that read unchanged as the first "
            "file's (read as one table, every file takes the first's, and a value that does not fit is "
            "changed or stops the job): write them with one schema")


_SIGNED = ["TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT"]
_UNSIGNED = ["UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"]


def _read_unchanged(theirs: str | None, ours: str | None) -> bool:
    """Whether every value of a file's column type ``theirs`` reads unchanged as the first file's
    ``ours``: the same type, a column of NULLs alone, a wider integer, FLOAT as DOUBLE, a decimal
    with room for its digits. A column one file lacks is not."""
    if theirs is None or ours is None:
        return False
    if theirs == ours or theirs.strip('"') == "NULL":
        return True
    if theirs in _UNSIGNED and ours in _UNSIGNED:
        return _UNSIGNED.index(theirs) <= _UNSIGNED.index(ours)
    if ours in _SIGNED and (theirs in _SIGNED or theirs in _UNSIGNED):
        rank = _SIGNED.index(theirs) if theirs in _SIGNED else _UNSIGNED.index(theirs) + 1  # a sign bit more
        return rank <= _SIGNED.index(ours)
    if (theirs, ours) == ("FLOAT", "DOUBLE"):
        return True
    given, read = DECIMAL_TYPE.fullmatch(theirs), DECIMAL_TYPE.fullmatch(ours)
    if given and read:
        (p1, s1), (p2, s2) = (map(int, given.groups()), map(int, read.groups()))
        return s2 >= s1 and p2 - s2 >= p1 - s1
    return False


def _parquet_schema(path: Path) -> pa.Schema:
    import pyarrow.parquet as pq

    try:
        return pq.read_schema(path)
    except Exception as e:
        raise InputError(f"cannot read {path} as parquet: {str(e).splitlines()[0]}") from None


_FIXES = re.compile(r"\n\s*(Possible fixes|Possible Solution|  file =|-- while running:).*", re.S)


def driver_message(error: BaseException) -> str:
    """A driver error in a few words, with any quoted record removed: DuckDB's CSV errors print the
    offending line (``Original Line: …``), and after a quote never closed every later record of the
    file, which would put people's records in a job log (``without_echoed_input``)."""
    # a conversion or invalid-input error (DuckDB's), or a data exception (Spark's), may quote a value
    redacted = message_without_values(error) or spark_message_without_values(error)
    if redacted is not None:
        return redacted
    text = _FIXES.sub("", without_echoed_input(str(error)))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return "; ".join(lines) or type(error).__name__
