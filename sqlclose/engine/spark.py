"""Spark: the same ASTs rendered in the "spark" dialect, run through ``SparkSession.sql``.

Loaded only when a Spark engine is asked for (``engine_for("spark")``, ``sqlclose.engine.SparkEngine``),
so ``import sqlclose`` never needs pyspark nor starts a JVM; pyspark itself is imported only when a
session is made, so the SQL this engine renders can be inspected (and snapshot-tested) without it.
Needs pyspark ≥ 4 (``DataFrame.toArrow``, ``createDataFrame`` from Arrow, named parameters).

Objects of ours are temporary views of the session: Arrow tables become local relations, temp
tables are cached DataFrames (computed whole by the first statement that reads them, or before
the first that does not, so the source is scanned once, as in DuckDB). Bound parameters are named
(``:p1``, ``:p2`` …): Spark has no numbered markers, and ``?`` markers bind by position of
appearance, which is not the order values are collected in.
"""

from __future__ import annotations

import functools
import logging
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
from sqlglot import exp

from sqlclose.engine.base import Engine, FileRead, dense_rank, key_value, unread_value_fixes
from sqlclose.engine.line_endings import breaks_all, line_ending_change, line_ending_change_words
from sqlclose.engine.parquet_footer import sort_encodings_in_place
from sqlclose.engine.spark_errors import message_without_values
from sqlclose.engine.spark_lookups import MAPPED_ROWS, HeldLookup, held_lookup, keys_leaves, lateral_columns
from sqlclose.errors import EngineError, InputError, SourceDataError
from sqlclose.model.hidden_parts import hidden_name
from sqlclose.model.spec import DECIMAL_TYPE
from sqlclose.model.text import agreeing, counted, name_shown, named, refuse_undecodable_spark_settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_Done = TypeVar("_Done")

# ``[source] encoding`` as Java names it (Spark 4 refuses "latin-1").
_JAVA_CHARSETS = {"utf-8": "UTF-8", "utf-16": "UTF-16LE", "latin-1": "ISO-8859-1"}
REPLACED = "\ufffd"  # what a decoder puts for bytes its encoding does not decode

DEFAULT_CONF = {
    "spark.sql.shuffle.partitions": "2",  # the default 200 costs ~0.2 s per query on small counts
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",  # progress bars on stderr would garble the CLI's output
    "spark.sql.session.timeZone": "UTC",
}
SESSION_ZONE = "spark.sql.session.timeZone"  # dates a TIMESTAMP's text; a caller's session may set another
LARGE_VAR_TYPES = "spark.sql.execution.arrow.useLargeVarTypes"  # how toArrow types text and binary
_READ_EACH_STATEMENT = {SESSION_ZONE: "UTC", LARGE_VAR_TYPES: "false"}  # keys, and their defaults
# Spark's logging for a session of our own, where Spark would log with its built-in defaults:
# those at WARN, less the warnings our queries raise by design (the file says which and why;
# docs/engines.md#logging). A log4j2 file of the cluster's or the caller's is left in charge.
LOG_CONFIG = Path(__file__).with_name("spark_log4j2.properties")
_SPARK_DEFAULT_LOG = "org/apache/spark/log4j2-defaults.properties"
# pyspark imports its test helpers at run time, which warn that pandas 3 is not fully supported:
# sqlclose exchanges Arrow with Spark, never pandas. Only that import's warning is filtered (by its
# module), not the same warning from a user's pandas-on-Spark code.
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning,
                        module=r"pyspark\.testing\.utils")
# Hash buckets the re-check ranks classes within (``class_numbers``): more than a cluster's
# shuffle partitions, so that every partition gets some.
CLASS_BUCKETS = 4096
# A release folder of more rows is written as several part files in parallel (``_in_parts``).
ROWS_PER_PART = 2_000_000
_GLOB = re.compile(r"([\\*?\[\]{}])")


def log_quietly(session: SparkSession) -> bool:
    """Log through ``LOG_CONFIG`` if the session's JVM logs with Spark's built-in defaults (no
    log4j2 file of the cluster's or the caller's); whether it did. After start-up: Spark's own
    start-up lines are printed before any session exists."""
    jvm = session.sparkContext._jvm
    context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
    location = context.getConfiguration().getConfigurationSource().getLocation()
    if location is not None and not str(location).endswith(_SPARK_DEFAULT_LOG):
        return False
    jvm.org.apache.logging.log4j.core.config.Configurator.reconfigure(jvm.java.net.URI(LOG_CONFIG.as_uri()))
    return True


# pyspark's Python loggers that print a failing query's whole error, Java stack and plan (~13 kB of
# JSON for a release query) on stderr whenever an exception is raised, before sqlclose says in one
# line what failed (``SparkEngine.engine_error``); their text may quote a value of the data.
QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def quiet_query_context_logs() -> None:
    """Keep pyspark's query-context logs off stderr, for a session of our own (the caller's process
    logs as its owner set it up)."""
    for name in QUERY_CONTEXT_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _table(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True))


def _running_session() -> SparkSession | None:
    """The session already running in this process (a notebook's), made in this thread or another:
    the one ``getOrCreate`` would hand back (not the thread's active one, which a ``newSession``'s
    DataFrame makes active). It is its owner's, run on as it is: the builder's ``getOrCreate`` with our
    settings, which the engine called before, applied them to it for good (its time zone UTC, its
    shuffle partitions 2, its app's name), and our log configuration to its JVM and Python loggers
    (review, ninety-eighth round)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise ImportError("the Spark engine needs pyspark: pip install 'sqlclose[spark]'") from e
    made = getattr(SparkSession, "_instantiatedSession", None)  # the process's default session, in any thread
    if made is not None and made._sc._jsc is not None:
        return made
    return SparkSession.getActiveSession()


def _own_session(master: str, conf: Mapping[str, str]) -> SparkSession:
    """A session of our own, started with ``conf`` over ``DEFAULT_CONF``, logging quietly."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName("sqlclose")
    for key, value in {**DEFAULT_CONF, **conf}.items():
        builder = builder.config(key, str(value))
    session = builder.getOrCreate()
    log_quietly(session)
    quiet_query_context_logs()
    return session


def _warn_unapplied(session: SparkSession, master: str | None, conf: Mapping[str, str]) -> None:
    """Settings asked of a session of our own that a session already running holds otherwise: left
    unapplied, said (they change how fast a release is made, never the release: ``EngineSettings``)."""
    unlike = [key for key, value in conf.items() if session.conf.get(key, None) != str(value)]
    if master is not None and master != session.sparkContext.master:
        unlike.insert(0, "master")
    if unlike:
        from sqlclose.errors import SqlcloseWarning

        warnings.warn(f"a Spark session already runs in this process, and sqlclose runs on it as its owner set it: "
                      f"{', '.join(unlike)} asked of the engine {agreeing(len(unlike), 'is', 'are')} not applied to "
                      "it; set them on the session yourself, or run the job in a process of its own (the sqlclose "
                      "command)", SqlcloseWarning, stacklevel=3)


# Shuffle partitions per core past which a local session's settings are said to slow a job (``SHUFFLE``).
_PARTITIONS_PER_CORE = 4
SHUFFLE = "spark.sql.shuffle.partitions"


def _warn_many_shuffle_partitions(session: SparkSession) -> None:
    """A caller's session on a local master with far more shuffle partitions than cores (Spark's default,
    200): every query's shuffle runs that many tasks, a few rows each. Table 3 on a caller's local[2]
    session took 3-5 times as long with 200 as with 2, and adaptive execution's coalescing did not
    make up for it (docs/engines.md). Said, never changed: the session is the caller's."""
    if not session.sparkContext.master.startswith("local"):
        return  # a cluster's partitions are its operator's to size
    partitions, cores = session.conf.get(SHUFFLE, "200"), session.sparkContext.defaultParallelism
    if not partitions.isdigit() or int(partitions) <= _PARTITIONS_PER_CORE * cores:
        return
    from sqlclose.errors import SqlcloseWarning

    warnings.warn(f"the Spark session sqlclose runs on has {SHUFFLE} = {partitions} on a local master of "
                  f"{counted(cores, 'core')}: every query's shuffle runs {partitions} small tasks, which made "
                  f"a small job 3-5 times slower; set it to about the cores on the session "
                  f"(spark.conf.set(\"{SHUFFLE}\", \"{cores}\")): sqlclose leaves the session's settings "
                  "as they are", SqlcloseWarning, stacklevel=3)


def _exact_json(value: exp.Expression) -> exp.Expression:
    """``value`` (a struct, map or array) as JSON that tells apart any two unlike values: times to
    the microsecond (TO_JSON's default stops at the millisecond), NULL fields written (not left out)."""
    options = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
               "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS", "ignoreNullFields": "false"}
    return exp.Anonymous(this="TO_JSON", expressions=[value, exp.Anonymous(this="MAP", expressions=[
        exp.Literal.string(part) for pair in options.items() for part in pair])])


def _instant_text(value: exp.Expression) -> exp.Expression:
    """A ``TIMESTAMP``'s text as DuckDB writes a ``TIMESTAMPTZ`` in the zone the statement runs in (UTC, or
    the session's under ``texts_in_session_zone``): Spark's wall time there,
    then the offset as DuckDB writes it, its hours alone unless minutes or seconds are not zero
    (``+00``, ``-05``, ``+05:30``, ``-04:56:02``): ``xxxxx`` writes ``-05:00``, the zero minutes cut."""
    offset = exp.RegexpReplace(this=exp.Anonymous(this="DATE_FORMAT", expressions=[value.copy(),
                                                                                  exp.Literal.string("xxxxx")]),
                               expression=exp.Literal.string(":00$"), replacement=exp.Literal.string(""))
    return exp.Anonymous(this="CONCAT", expressions=[exp.Cast(this=value, to=exp.DataType.build("STRING")), offset])


def _csv_value(name: str, nulls: Sequence[str]) -> exp.Expression:
    """A CSV field's text as DuckDB reads it: Spark's reader gives an empty field NULL and a quoted
    "" an empty text (emptyValue), as DuckDB's read with allow_quoted_nulls = false: an empty field
    is "" unless ``nulls`` lists ""; a field one of ``nulls`` names is NULL."""
    value: exp.Expression = _column(name) if "" in nulls else \
        exp.Coalesce(this=_column(name), expressions=[exp.Literal.string("")])
    markers = [exp.Literal.string(v) for v in nulls if v]
    if markers:
        value = exp.If(this=exp.In(this=value.copy(), expressions=markers), true=exp.Null(), false=value)
    return value


class _CsvChecks:
    """A CSV's checks, in one pass over its fields as read (markers NULL): the rows with more or
    fewer fields than the header (``bad``, the corrupt-record column, not NULL), the number
    columns' counts (``Engine.number_type_counts``) and, per typed column and each type it may get
    (its declared one; BIGINT and DOUBLE for an ``undeclared`` number column, whose values decide),
    the values that type cannot read. They were three passes, three jobs over the
    whole file (fifty-eighth round). Counted, never shown."""

    def __init__(self, engine: Engine, bad: str, declared: dict[str, str], undeclared: list[str],
                 names: Sequence[str] = ()) -> None:
        def unread(column: str, kind: str) -> exp.Expression:
            # TRY_CAST, then a count of what it could not read: a CAST failing on a row quoted its
            # value in the error and in Spark's logs (a suppressed row's too).
            value = _column(column)
            return exp.and_(exp.Not(this=exp.Is(this=value.copy(), expression=exp.Null())),
                            exp.Is(this=engine.read_number(value, kind), expression=exp.Null()))

        types = engine.number_type_counts(declared, undeclared)
        self._kinds = [(c, kind) for c in undeclared for kind in ("BIGINT", "DOUBLE")] + list(declared.items())
        self._type_count = len(types)
        replaced = [exp.GT(this=exp.Anonymous(this="INSTR", expressions=[_column(c), exp.Literal.string(REPLACED)]),
                           expression=exp.Literal.number(0)) for c in names]
        # A line of another ending than the one the reader was told: its "\r" ends the row's last field, or
        # its "\n" starts the next row's first (else the lines are one row, of more fields: ``ragged``).
        # RIGHT and LEFT, not a regular expression: ~0.5 s, not ~1 s, over 1.6 M rows (100 MB) on two cores.
        breaks = [exp.Literal.string("\r"), exp.Literal.string("\n")]
        edges = [exp.Right(this=_column(names[-1]), expression=exp.Literal.number(1)),
                 exp.Left(this=_column(names[0]), expression=exp.Literal.number(1))] if names else []
        broken = [exp.In(this=edge, expressions=[b.copy() for b in breaks]) for edge in edges]
        self.counts = [exp.CountIf(this=exp.Not(this=exp.Is(this=_column(bad), expression=exp.Null()))).as_("ragged"),
                       exp.CountIf(this=exp.or_(*replaced) if replaced else exp.false()).as_("replaced"),
                       exp.CountIf(this=exp.or_(*broken) if broken else exp.false()).as_("broken"),
                       *(count.as_(f"t{i}") for i, count in enumerate(types)),
                       *(exp.CountIf(this=unread(c, kind)).as_(f"u{i}") for i, (c, kind) in enumerate(self._kinds))]

    def ragged(self, row: dict[str, Any]) -> int:
        return int(row["ragged"] or 0)

    def broken(self, row: dict[str, Any]) -> int:
        """Rows whose last field ends, or first field starts, with a line break: a quoted value's, or a
        line of another ending than the reader was told."""
        return int(row["broken"] or 0)

    def replaced(self, row: dict[str, Any]) -> int:
        """Rows holding U+FFFD: Spark's reader puts it for bytes the encoding does not decode."""
        return int(row["replaced"] or 0)

    def type_counts(self, row: dict[str, Any]) -> list[int | None]:
        """The values of ``Engine.number_type_counts``, for ``number_types_from``."""
        return [row[f"t{i}"] for i in range(self._type_count)]

    def unread(self, row: dict[str, Any], types: dict[str, str]) -> dict[str, int]:
        """Per typed column, the values its type (of ``types``) cannot read."""
        found = {key: int(row[f"u{i}"] or 0) for i, key in enumerate(self._kinds)}
        return {c: found[c, kind] for c, kind in types.items()}


def _sorted_whole(query: exp.Expression | str) -> bool:
    """A SELECT sorted over all its rows: no LIMIT or OFFSET keeps a part of them."""
    return (isinstance(query, exp.Select) and query.args.get("order") is not None
            and not query.args.get("limit") and not query.args.get("offset"))


def _keys_named_outside(query: exp.Select) -> bool:
    """The sort keys read only the query's own result columns, so a query wrapped around it can
    sort by them: no table's column, none the SELECT list lacks (unless it holds a ``*``)."""
    names, star = set(query.named_selects), _has_star(query)
    return all(not c.table and (star or c.name in names) for c in query.args["order"].find_all(exp.Column))


def _has_star(query: exp.Select) -> bool:
    return any(isinstance(s, exp.Star) or isinstance(s, exp.Column) and s.is_star for s in query.selects)


def _sorted_outside(query: exp.Select) -> exp.Select | None:
    """``query`` sorted in one task, by a query around it: its rows shuffled to one partition
    (``REPARTITION(1)``) and sorted there (``SORT BY``). A key that is not one of its result columns
    is computed beside them and left out by a last projection, which keeps the order: only where
    that projection can name every result column once (each a column or an alias, no ``*``, no
    two of one name) and not in a SELECT DISTINCT, whose rows the key would split. None when a key
    cannot be moved out (it also reads a result column's name, which inside means an input's)."""
    named, star = set(query.named_selects), _has_star(query)
    result = [s.alias_or_name for s in query.selects
              if isinstance(s, exp.Alias) or isinstance(s, exp.Column) and not s.is_star]
    projectable = len(result) == len(query.selects) and len(set(result)) == len(result)
    inner = query.copy()
    inner.set("order", None)
    keys, hidden = [], []
    for ordered in query.args["order"].expressions:
        key = ordered.this
        if isinstance(key, exp.Column) and not key.table and (star or key.name in named):
            keys.append(ordered.copy())
            continue
        if (not projectable or query.args.get("distinct")
                or any(not c.table and c.name in named for c in key.find_all(exp.Column))):
            return None
        name = f"__sqlclose_sort_{len(hidden)}"
        while name in named:
            name += "_"
        inner.select(exp.alias_(key.copy(), exp.to_identifier(name, quoted=True)), copy=False)
        keys.append(exp.Ordered(this=_column(name), desc=ordered.args.get("desc"),
                                nulls_first=ordered.args.get("nulls_first")))
        hidden.append(name)
    outer = _shuffled_and_sorted(inner, 1, (), keys)
    return exp.select(*map(_column, result)).from_(outer.subquery("sorted")) if hidden else outer


def _shuffled_and_sorted(query: exp.Select, parts: int, hash_keys: Sequence[str],
                         sort: Sequence[exp.Ordered]) -> exp.Select:
    """``query``'s rows in ``parts`` partitions, chosen by a hash of ``hash_keys`` (none: one
    partition), each sorted by ``sort``: a shuffle by a number, which adaptive execution never changes."""
    outer = exp.select(exp.Star()).from_(query.subquery("released"))
    outer.set("hint", exp.Hint(expressions=[exp.Anonymous(
        this="REPARTITION", expressions=[exp.Literal.number(parts), *map(_column, hash_keys)])]))
    outer.set("sort", exp.Sort(expressions=list(sort)))
    return outer


def _plain_projection(query: exp.Select, leaf: str) -> bool:
    """A SELECT of row-wise expressions FROM one table, nothing else (no join, filter, grouping, order,
    limit; no aggregate, window or star, which a map read per row would not compute alike), its column
    ``leaf`` the table's own: the map is keyed by the table's column, the join by the SELECT's."""
    source = query.args.get("from_")
    others = [key for key, value in query.args.items() if value and key not in ("expressions", "from_")]
    if source is None or not isinstance(source.this, exp.Table) or others:
        return False
    if any(item.find(exp.AggFunc, exp.Window, exp.Star) for item in query.expressions):
        return False
    named = [item for item in query.expressions if item.alias_or_name == leaf]
    return all(isinstance(item.unalias(), exp.Column) and item.unalias().name == leaf for item in named)


def _column(name: str) -> exp.Column:
    return exp.Column(this=exp.to_identifier(name, quoted=True))


def literal_path(path: Path | str) -> str:
    """A path Spark reads as it is: Hadoop expands * ? [ ] { } unless they are escaped."""
    return _GLOB.sub(r"\\\1", str(path))


# Spark's conditions for a Parquet type it has none for, and the files' columns of such types (by
# pyarrow's reading of their footers: Spark's error names no column).
_UNREAD_TYPES = ("PARQUET_TYPE_ILLEGAL", "UNSUPPORTED_TIME_TYPE", "PARQUET_TYPE_NOT_SUPPORTED")


def _refuse_unread_parquet_types(error: Exception, read: FileRead) -> None:
    """Raise InputError naming the columns of a type Spark does not read (a TIMESTAMP of nanoseconds,
    pyarrow's and pandas' default; a TIME) and what to write instead, when ``error`` says so."""
    if not any(code in str(error) for code in _UNREAD_TYPES):
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    unread: dict[str, str] = {}
    for path in (read.files or ([read.path] if read.path and read.path.is_file() else []))[:100]:
        try:
            schema = pq.read_schema(path)
        except Exception:
            continue
        for field in schema:
            if pa.types.is_timestamp(field.type) and field.type.unit == "ns":
                unread.setdefault(field.name, "a TIMESTAMP of nanoseconds, which Spark does not read: write it "
                                  "as microseconds (pyarrow: coerce_timestamps=\"us\"; pandas: "
                                  ".astype(\"datetime64[us]\"))")
            elif pa.types.is_time(field.type):
                unread.setdefault(field.name, "a TIME of day, a type Spark has none of: write it as text, or as "
                                  "its seconds since midnight")
    if unread:
        said = "; ".join(f"column {name_shown(name)} is {why}" for name, why in unread.items())
        raise InputError(f"on the Spark engine {said}; or run on DuckDB, which reads them") from None


def _written_path(path: Path) -> str:
    """The path Spark's writer is handed: as it is. The writer expands no pattern (the reader does,
    ``literal_path``): handed an escaped name, it made a folder named with the backslashes, apart
    from the one the release is then looked for in (and left it behind)."""
    return str(Path(path).absolute())


_PART = re.compile(r"^part-(?P<task>\d+)-[0-9a-f-]{36}[.-]c(?P<file>\d+)(?P<rest>(\.[a-z0-9]+)*\.parquet)$")


def tidy_part_files(folder: Path) -> None:
    """``part-00000-<job uuid>-c000.snappy.parquet`` → ``part-00000-c000.snappy.parquet``, its footer's
    encodings in one order (``parquet_footer``: parquet-mr's changes from one JVM to the next); Spark's
    marker (``_SUCCESS``) and checksum (``.*.crc``) files removed: the folder holds data only."""
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        if path.name == "_SUCCESS" or (path.name.startswith(".") and path.name.endswith(".crc")):
            path.unlink()
        elif m := _PART.match(path.name):
            sort_encodings_in_place(path)
            path.rename(path.with_name(f"part-{m['task']}-c{m['file']}{m['rest']}"))


def hive_bases(folder: Path, files: Sequence[Path]) -> dict[Path, list[Path]]:
    """``folder``'s files by the folder their Hive partition folders (``col=value``) start in, Spark's
    base path for them; empty when none is partitioned. DuckDB reads every ``col=value`` part of a
    path as a column, and refuses files under different columns; Spark only the run of them
    nearest the file, and refuses runs under different folders in one read (``2024/`` and
    ``2025/``): each base is then read alone. A layout Spark would read otherwise is refused.
    Messages name columns, never a folder's name: it holds a partition's value."""
    layouts = {f: _partition_run(f.parent.relative_to(folder).parts) for f in files}
    for _, names, apart in layouts.values():
        if apart:
            raise InputError(f"a file is under Hive partition folders (col=value) of {named('column', apart)} and, "
                             f"with other folders between, of {_names(names)}; the Spark engine reads only the "
                             "folders next to each other nearest the file as columns: move the col=value folders "
                             "together, or read it on the DuckDB engine")
    columns = {names for _, names, _ in layouts.values()}
    if len(columns) > 1:
        told = "; ".join(_names(names) if names else "none (a file outside them)" for names in sorted(columns))
        raise InputError(f"its files are under Hive partition folders (col=value) of different columns ({told}), "
                         "which one table cannot hold: put every file under folders of the same columns")
    if columns == {()}:
        return {}
    bases: dict[Path, list[Path]] = {}
    for f, (base, _, _) in layouts.items():
        bases.setdefault(folder.joinpath(*base), []).append(f)
    return bases


def _not_utf8(value: exp.Expression, kind: Any, depth: int = 0) -> exp.Expression | None:
    """Whether ``value``, of the Spark type ``kind``, holds text that is not UTF-8 anywhere in it (a
    struct's fields, a list's items, a map's keys and values, each a level deeper); None when the type
    holds no text. NULL where no text is found but some is NULL: ``count_if`` counts it as no."""
    from pyspark.sql.types import ArrayType, MapType, StringType, StructType

    if isinstance(kind, StringType):
        return exp.Not(this=exp.func("is_valid_utf8", value))
    if isinstance(kind, StructType):
        fields = [_not_utf8(exp.Dot(this=value.copy(), expression=exp.to_identifier(f.name, quoted=True)),
                            f.dataType, depth + 1) for f in kind.fields]
        found = [test for test in fields if test is not None]
        return exp.or_(*found) if found else None
    item = exp.to_identifier(f"_item{depth}")  # a name of the lambda's own: it shadows no column outside it
    if isinstance(kind, ArrayType):
        parts = [(value, kind.elementType)]
    elif isinstance(kind, MapType):
        parts = [(exp.func("map_keys", value), kind.keyType), (exp.func("map_values", value), kind.valueType)]
    else:
        return None
    found = [exp.Exists(this=items.copy(), expression=exp.Lambda(this=test, expressions=[item.copy()]))
             for items, element in parts if (test := _not_utf8(item.copy(), element, depth + 1)) is not None]
    return exp.or_(*found) if found else None


def _names(columns: Sequence[str]) -> str:
    return ", ".join(name_shown(c) for c in columns)


def _partition_run(parts: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """A file's folders below the source: those before the run of ``col=value`` folders nearest the
    file (Spark's partition base), the run's column names, and the columns of any outside it."""
    hive = [i for i, part in enumerate(parts) if "=" in part]
    if not hive:
        return parts, (), ()
    end = hive[-1] + 1
    start = end
    while start > 0 and "=" in parts[start - 1]:
        start -= 1
    names = tuple(part.split("=", 1)[0] for part in parts[start:end])
    apart = tuple(parts[i].split("=", 1)[0] for i in hive if i < start)
    return parts[:start], names, apart


class SparkEngine(Engine):
    """Runs on a session of its own (local mode by default) or on the caller's (then only
    temporary views are made, and the session is left running on ``close``)."""

    name = "spark"
    dialect = "spark"
    local_search = True  # a query costs ~0.1-1 s of planning and jobs: search the histogram locally
    rows_per_part = ROWS_PER_PART  # a release folder's part files: one per this many rows, written in parallel
    groups_minus_zero_as_zero = True  # Spark's NormalizeFloatingNumbers: -0.0 grouped is 0.0
    orders_maps = False  # INVALID_ORDERING_TYPE: a map is sorted by its text alone

    def content_text(self, value: exp.Expression) -> exp.Expression:
        # JSON, not CAST: a cast wrote {'x': 'y, z -> w'} and {'x': 'y', 'z': 'w'} both as
        # "{x -> y, z -> w}", and two such rows kept the input's order in the file.
        return _exact_json(value)
    unwritten_partition_text = ("", "__HIVE_DEFAULT_PARTITION__")  # both written as the NULL folder

    def __init__(self, session: SparkSession | None = None, master: str | None = None,
                 conf: Mapping[str, str] | None = None, cache_levels: bool = False,
                 local_search: bool = True) -> None:
        """``session``: the caller's, run on as its owner set it; without one, the session already
        running in the process (a notebook's) is taken as the caller's too, else one of our own is
        started with ``master`` (default "local[2]") and ``conf`` over ``DEFAULT_CONF``.
        ``cache_levels``: keep each lattice level as a cached DataFrame instead of shipping it
        back as a local relation. Measured 1.8× slower in local mode (Adult search 21 s vs 12 s):
        off by default; it may pay on a cluster, where the driver is far from the executors.
        ``local_search``: run the search in a local DuckDB over the collected base histogram when
        it is small enough (search/hybrid.py); False keeps every query on Spark."""
        # a setting that is no UTF-8 failed in py4j once the JVM had started (Py4JError, a bug's exit)
        refuse_undecodable_spark_settings(master, conf or {}, "conf ")
        self._own = False  # a session the caller gave, or already had running, is theirs: never stopped here
        self.cache_levels = cache_levels
        self.local_search = local_search
        if session is None:
            session = _running_session()
            if session is not None:
                _warn_unapplied(session, master, conf or {})
            else:
                session = _own_session(master or "local[2]", conf or {})
                self._own = True
        self.spark = session
        if not self._own:
            _warn_many_shuffle_partitions(session)
        # Settings read on every statement (its zone, ``_statement_zone``; Arrow's large types, ``_schema``):
        # read once for a session of our own, which nobody else sets (a py4j call each, ~0.3 ms: a
        # Table 3 release makes some 30 statements); a caller's are read each time, as they may change them.
        self._own_settings = {key: session.conf.get(key, default) for key, default in _READ_EACH_STATEMENT.items()} \
            if self._own else None
        self._session_zone = False  # statements in the session's zone, not UTC (``texts_in_session_zone``)
        self._views: dict[str, DataFrame | None] = {}  # our temp views -> the DataFrame we cached, if any
        self._links: dict[Path, Path] = {}  # a hidden-named source file -> the link Spark reads it by
        self._decoded: set[str] = set()  # our views of a CSV's text, which Spark decoded (``refuse_invalid_text``)
        self._unfilled: dict[str, tuple[DataFrame, str]] = {}  # temp tables cached, not yet computed: their SQL
        # Small registered tables a statement may read as maps (``looked_up``), and by (table, leaf
        # column) their maps once asked for, or None where a map cannot stand for the join.
        self._small: dict[str, pa.Table] = {}
        self._maps: dict[tuple[str, str], HeldLookup | None] = {}

    # ---- dialect pieces ----------------------------------------------------------------------
    def placeholder(self, index: int) -> exp.Expression:
        return exp.Placeholder(this=f"p{index}")  # renders as :p1

    def bind(self, params: Sequence[Any]) -> dict[str, Any]:
        return {f"p{i}": value for i, value in enumerate(params, start=1)}

    def row_hash(self, alias: str, secret: exp.Expression) -> exp.Expression:
        # MD5(secret || the row as JSON), its low 64 bits as an unsigned number: DECIMAL(38, 0),
        # so the sum cannot overflow (ANSI mode would raise on a BIGINT overflow).
        # TO_JSON writes a timestamp to the millisecond unless told (``_exact_json``): 5 µs added to
        # one row's time left the fingerprint as it was, and a stale release was "up to date".
        row = _exact_json(exp.Anonymous(this="STRUCT", expressions=[
            exp.Column(this=exp.Star(), table=exp.to_identifier(alias))]))
        md5 = exp.Anonymous(this="MD5", expressions=[exp.Anonymous(this="CONCAT", expressions=[secret, row])])
        low = exp.Anonymous(this="SUBSTRING", expressions=[md5, exp.Literal.number(17), exp.Literal.number(16)])
        number = exp.Anonymous(this="CONV", expressions=[low, exp.Literal.number(16), exp.Literal.number(10)])
        return exp.Cast(this=number, to=exp.DataType.build("DECIMAL(38, 0)"))

    def value_hash(self, value: exp.Expression, as_is: bool = False) -> exp.Expression:
        # XXHASH64 skips NULL arguments, so the value is followed by its IS NULL flag: a NULL hashes
        # as the flag alone, apart from every value (and never to NULL).
        return exp.Anonymous(this="XXHASH64", expressions=[key_value(value, as_is, "STRING"),
                                                          exp.Is(this=value.copy(), expression=exp.Null())])

    def hash_of_hashes(self, hashes: Sequence[exp.Expression]) -> exp.Expression:
        return exp.Anonymous(this="XXHASH64", expressions=[h.copy() for h in hashes])

    def rehash(self, key: exp.Expression) -> exp.Expression:
        return exp.Anonymous(this="XXHASH64", expressions=[key.copy()])

    def class_numbers(self, keys: Sequence[exp.Expression]) -> exp.Expression:
        # DENSE_RANK over the whole relation is one partition: every (class, value) row to one
        # task. Ranked within CLASS_BUCKETS hash buckets of the keys instead (a class's rows share
        # its bucket), the rank times the bucket count plus the bucket is unique per class.
        bucket = exp.Anonymous(this="PMOD", expressions=[
            exp.Anonymous(this="XXHASH64", expressions=[k.copy() for k in keys]), exp.Literal.number(CLASS_BUCKETS)])
        rank = exp.Cast(this=dense_rank(keys, bucket), to=exp.DataType.build("BIGINT"))
        return exp.Add(this=exp.Mul(this=rank, expression=exp.Literal.number(CLASS_BUCKETS)),
                       expression=bucket.copy())

    def crossed_in_one_job(self, query: exp.Select) -> exp.Select:
        """A cartesian product (``SHUFFLE_REPLICATE_NL``): Spark crossed the two one-row sums by a
        broadcast of one side, a job of its own before the statement's (one of a release's ~25 jobs,
        40-200 ms each on a small table, hundred-and-first round); each side is then a stage of one job."""
        joined = [join.this.alias_or_name for join in query.args.get("joins") or []
                  if join.args.get("kind", "").upper() == "CROSS"]
        if not joined:
            return query
        hinted = query.copy()
        hinted.set("hint", exp.Hint(expressions=[exp.Anonymous(
            this="SHUFFLE_REPLICATE_NL", expressions=[exp.to_identifier(name) for name in joined])]))
        return hinted

    def looked_up(self, select: exp.Select, lookup: exp.Expression, alias: str, leaf: str,
                  key: Callable[[], exp.Expression], bind: Callable[[Any], exp.Expression],
                  outer: bool) -> exp.Select | None:
        """A small lookup registered here read as maps bound to the statement (``spark_lookups``): its
        broadcast was a job of its own. A LATERAL subquery of one row, which Spark inlines into a
        projection; an inner join's dropped rows (a key no leaf) left out by a WHERE."""
        found = self._held_of(lookup, leaf)
        if found is None:
            return None
        held, items = found
        columns, is_leaf = lateral_columns(held, items, leaf, key(), bind)
        lateral = exp.Lateral(this=columns, alias=exp.TableAlias(this=exp.to_identifier(alias)))
        select = select.join(lateral, join_type="left")
        return select if outer else select.where(is_leaf)

    def _held_of(self, lookup: exp.Expression, leaf: str) -> tuple[HeldLookup, list[exp.Expression]] | None:
        """The maps of a lookup held here (a table, or a plain SELECT of expressions over one), and the
        columns it gives, each aliased; None for any other relation, or a lookup not held."""
        if isinstance(lookup, exp.Table):
            table, items = lookup, None
        elif isinstance(lookup, exp.Select) and _plain_projection(lookup, leaf):
            table, items = lookup.args["from_"].this, lookup.expressions
        else:
            return None
        if table.args.get("db") or table.name not in self._small:
            return None
        arrow = self._small[table.name]
        if (table.name, leaf) not in self._maps:  # made once, mappable or not
            self._maps[table.name, leaf] = held_lookup(arrow) if keys_leaves(arrow, leaf) else None
        held = self._maps[table.name, leaf]
        if held is None:
            return None
        if items is None:
            items = [_column(name) for name in arrow.column_names]
        return held, [item if isinstance(item, exp.Alias) else exp.alias_(item, item.alias_or_name, quoted=True)
                      for item in items]

    # ---- a caller's session zone ----------------------------------------------------------
    # A caller's session (``SparkEngine(session)``, a DataFrame's) may be in any zone: Spark writes a
    # TIMESTAMP as that zone's wall time, with no offset ('1979-12-31 19:00:00' for 1980-01-01 UTC),
    # and the hour repeated when the clocks go back is one text for two instants: every pass keys a
    # value by its text (``queries.as_text``), so two instants were one leaf (ninety-eighth round).
    # Every statement therefore runs in UTC, where each instant has a text of its own (``_frame``): the
    # base's ``texts_in_utc`` (a no-op) serves.
    # The session's zone is followed where a person reads the instant: the dates rule's days and
    # GAA's written labels (``instants_as_written``), as a caller's DuckDB connection's zone is.
    @contextmanager
    def texts_in_session_zone(self) -> Iterator[None]:
        self._session_zone = True
        try:
            yield
        finally:
            self._session_zone = False

    @contextmanager
    def _statement_zone(self) -> Iterator[None]:
        """UTC for the statement made inside the block, unless ``texts_in_session_zone`` asks for the
        session's. Spark binds the zone into a statement when it analyzes it (``spark.sql``, inside
        the block), so the caller's own setting is back as soon as the block ends."""
        if self._session_zone or self._setting_value(SESSION_ZONE) == "UTC":
            yield
            return
        with self._setting(SESSION_ZONE, "UTC"):
            yield

    def _setting_value(self, key: str) -> str | None:
        """The session's ``key`` (one of ``_READ_EACH_STATEMENT``): as read at the start for a session of
        our own, else as the caller's session holds it now."""
        if self._own_settings is not None:
            return self._own_settings[key]
        return self.spark.conf.get(key, _READ_EACH_STATEMENT[key])

    def instants_in_utc(self, texts: list[str], source: exp.Expression, column: str) -> list[str]:
        """Each text of a ``TIMESTAMP`` (Spark's, an instant) as DuckDB writes the instant in UTC
        (``1980-01-01 00:00:00+00``), the text ``check --against`` reads the file as: Spark's own has
        no offset."""
        return self._instants_named(texts, source, column, utc=True)

    def instants_as_written(self, texts: list[str], source: exp.Expression, column: str) -> list[str]:
        """Each text of a ``TIMESTAMP`` with the session's offset, as DuckDB writes the instant in that
        zone (``1979-12-31 19:00:00-05``): the wall time alone named another instant once read back in
        another zone (GAA wrote it as a label: five hours off from a New York session)."""
        return self._instants_named(texts, source, column, utc=False)

    def _instants_named(self, texts: list[str], source: exp.Expression, column: str, utc: bool) -> list[str]:
        """``texts`` (``column``'s values as the engine's statements write them, in UTC) as
        ``_instant_text`` writes their instants, in UTC or the session's zone, in order. Matched through
        the values' microseconds, not by reading the text back. A text that is no value's (a NULL's
        stand-in) stays as it is."""
        if not texts:
            return texts
        value = _column(column)
        text = exp.Cast(this=value, to=exp.DataType.build("STRING"))
        micros = exp.Anonymous(this="UNIX_MICROS", expressions=[value.copy()])
        pairs = exp.select(exp.alias_(text, "t"), exp.alias_(micros, "us")).distinct() \
            .from_(source.copy()).where(exp.Is(this=value.copy(), expression=exp.Null()).not_())
        named = _instant_text(exp.Anonymous(this="TIMESTAMP_MICROS", expressions=[exp.column("us", "m")]))
        return self._texts_renamed(texts, pairs, named, utc)

    # ---- hooks ----------------------------------------------------------------------------
    def _frame(self, sql: str, params: Sequence[Any] | None) -> DataFrame:
        with self._statement_zone():
            return self.spark.sql(sql, args=self.bind(params)) if params else self.spark.sql(sql)

    def _run(self, sql: str, params: Sequence[Any] | None) -> pa.Table:
        return self._filling(sql, lambda: self._frame(sql, params).toArrow())

    def _execute(self, sql: str, params: Sequence[Any] | None) -> None:
        """A command runs eagerly, when made (``spark.sql``): one reading a kept table not yet computed
        computes it, which then stays computed (``_filling``). It was left listed to fill, and the next
        statement counted it again, a job of its own (hundred-and-first round)."""
        self._filling(sql, lambda: self._frame(sql, params))

    def _schema(self, sql: str, params: Sequence[Any] | None) -> pa.Schema:
        """From Spark's analysis alone, as ``toArrow`` types the rows: reading them ran a job, ~40 ms
        on a warm local session, 7 of a small release's 35 actions."""
        from pyspark.sql.pandas.types import to_arrow_schema

        large = self._setting_value(LARGE_VAR_TYPES) == "true"
        return to_arrow_schema(self._frame(sql, params).schema, error_on_duplicated_field_names_in_struct=True,
                               timezone="UTC", prefers_large_types=large)

    def parquet_unkept_columns(self, query: exp.Expression, params: Sequence[Any] = ()) -> dict[str, str]:
        """Those Spark cannot sort (``unordered_columns``): the write failed after the search, an
        internal error."""
        return self.unordered_columns(query, params)

    def unordered_columns(self, query: exp.Expression, params: Sequence[Any] = ()) -> dict[str, str]:
        """The columns holding a VARIANT (at any depth): Spark orders no VARIANT value, so the sort
        that makes a release's rows independent of the input's order cannot take one. Asked of the
        query unsorted: Spark's analysis refuses a sort by one."""
        unsorted = query.copy()
        if isinstance(unsorted, exp.Select):
            unsorted.set("order", None)
        schema = self._fetched(unsorted, list(params) or None, lambda sql, p: self._frame(sql, p).schema)
        return {f.name: f.dataType.simpleString().upper() for f in schema.fields if _holds_variant(f.dataType)}

    def refuse_invalid_text(self, relation: exp.Expression, columns: Sequence[str], label: str) -> None:
        """Spark reads a Parquet STRING's (or a DataFrame's cast binary's) bytes as they are: text that
        is not UTF-8 was written into a release DuckDB and pyarrow cannot read (a kept column, exit 0),
        or failed its re-check after the search (exit 4), where DuckDB refuses it as it reads it
        (review of the ninety-second round). One pass over the relation's columns holding text, at any
        depth (a struct's field, a list's items, a map's keys and values: ``_not_utf8``; its caller asks
        once a job); refused naming the column, never the value.

        A CSV read here (``source_relation``) holds UTF-8 alone, nothing to pass over: Spark decodes its
        bytes into Java strings (a byte the encoding does not decode becomes U+FFFD, which the read
        refuses) and writes every string back as UTF-8. The pass was a job over every row of the source
        (Adult: 2.6 s of a 27 s release in the tests' session)."""
        if isinstance(relation, exp.Table) and not relation.args.get("db") and relation.name in self._decoded:
            return
        chosen = exp.select(*(exp.column(c, quoted=True) for c in columns)).from_(relation.copy())
        schema = self._fetched(chosen, None, lambda sql, p: self._frame(sql, p).schema)
        tests = [(f.name, test) for f in schema.fields
                 if (test := _not_utf8(exp.column(f.name, quoted=True), f.dataType)) is not None]
        if not tests:
            return
        counts = [exp.func("count_if", test).as_(f"c{i}") for i, (_, test) in enumerate(tests)]
        row = self.fetch_row(exp.select(*counts).from_(relation.copy()))
        bad = [(c, row[f"c{i}"]) for i, (c, _) in enumerate(tests) if row[f"c{i}"]]
        if bad:
            name, rows = bad[0]
            raise SourceDataError(f"cannot read {label}: column {name_shown(name)} holds text that is not valid UTF-8 "
                                  f"(in {counted(rows, 'row')}; a Parquet STRING column must hold UTF-8, and some "
                                  "writers mark raw bytes as text): write that column as binary, or fix its values",
                                  self.render(chosen))

    def unkept_refusal(self, name: str, kind: str) -> tuple[str, str]:
        """A VARIANT alone: Spark takes no [source] query and writes Parquet folders alone."""
        quoted = exp.to_identifier(name, quoted=True).sql("spark")
        return ("which the spark engine does not release: Spark orders no VARIANT value, and a release's rows are "
                "written and returned in an order of its values alone, never the input's",
                f"give its text instead (to_json({quoted}) in the DataFrame or view given), leave it out "
                "(others = \"drop\"), or run on DuckDB and write CSV")

    def _keep(self, name: str, frame: DataFrame, cached: bool) -> None:
        self._drop(name)
        frame.createOrReplaceTempView(name)
        self._views[name] = frame if cached else None

    def _drop(self, name: str) -> None:
        self._decoded.discard(name)
        self._small.pop(name, None)
        self._maps = {key: maps for key, maps in self._maps.items() if key[0] != name}
        self._unfilled.pop(name, None)  # never read: never computed
        if name in self._views:
            frame = self._views.pop(name)
            self.spark.catalog.dropTempView(name)
            if frame is not None:
                frame.unpersist()

    def create_temp_table(self, name: str, query: exp.Expression, params: Sequence[Any] = (),
                          owned: bool = False) -> exp.Table:
        """Cached, and computed (the input read once) by the next statement if it reads the table, else
        before that statement runs (``_filling``): it was computed at once, by a count, a job of its own
        before the statement that reads it, which most do next (the column values, the base histogram,
        the re-check's grouped file: 3 of a Table 3 release's 28 jobs)."""
        sql = self.render(query, owned)
        try:
            frame = self._frame(sql, params).cache()  # planned now: a query Spark cannot analyze fails here
        except Exception as e:
            raise self.wrapped_error(e, sql) from None
        self._keep(name, frame, cached=True)
        self._unfilled[name] = (frame, sql)
        return _table(name)

    def _filling(self, sql: str, action: Callable[[], _Done]) -> _Done:
        """``action``, the job of the statement ``sql``, which computes the tables ``create_temp_table``
        left to fill that it names (Spark caches a partition whole, whatever part of it a query reads).
        Those it does not name are computed first, in the order they were made, as they were when
        made. When the statement fails, a table it names is computed alone, so that the table's own
        error is told with its SQL, as when it was made; a table computed stays computed."""
        named = [name for name in self._unfilled if f"`{name}`" in sql]
        for name in [name for name in self._unfilled if name not in named]:
            self._fill(name)
        try:
            done = action()
        except Exception:
            for name in named:
                self._fill(name)
            raise
        for name in named:
            self._unfilled.pop(name, None)
        return done

    def _fill(self, name: str) -> None:
        """Compute the cached table ``name`` now; its error is told with its own SQL (it stays to fill)."""
        frame, sql = self._unfilled[name]
        try:
            frame.count()
        except Exception as e:
            raise self.wrapped_error(e, sql) from None
        del self._unfilled[name]

    def fetch(self, query: exp.Expression | str, params: Sequence[Any] | None = None, owned: bool = False) -> pa.Table:
        """A sorted query's rows sorted in one task (``_sorted_outside``), as a one-part folder is
        written (``_in_parts``): Spark's own sort cut them into ranges whose bounds it sampled in a
        job of its own, which computed the query a first time, for rows collected to the driver
        whole anyway (a Table 3 release: its leaf check 3 jobs -> 2, its rules' values 2 -> 1)."""
        outer = _sorted_outside(query) if _sorted_whole(query) else None
        if outer is None:
            return super().fetch(query, params, owned)
        with self.told_with(lambda: self.render(query)):
            return self._run(self.render(outer, owned=True), params)

    def fetch_and_keep(self, name: str, query: exp.Expression | str) -> pa.Table:
        if not self.cache_levels:
            return super().fetch_and_keep(name, query)
        sql = query if isinstance(query, str) else self.render(query)
        with self.told_with(sql):
            frame = self._frame(sql, None).cache()
            result = self._filling(sql, frame.toArrow)  # the action that also fills the cache
        self._keep(name, frame, cached=True)
        return result

    def register(self, name: str, table: pa.Table) -> None:
        self._keep(name, self.spark.createDataFrame(table), cached=False)
        if table.num_rows <= MAPPED_ROWS:
            self._small[name] = table  # its maps made when a statement first reads them

    def unregister(self, name: str) -> None:
        self._drop(name)

    def source_relation(self, read: FileRead) -> exp.Expression:
        """Parquet (a file, a folder of part files, a glob only with ``read.glob``) or CSV (parsed
        once into a cached table, every column as text except declared and numeric ones)."""
        if read.kind == "parquet":
            try:
                frame = self._parquet(read)
            except Exception as e:
                _refuse_unread_parquet_types(e, read)
                raise
            return self._view(frame, "source")
        if read.kind == "csv":
            name = self.temp_name("source")
            frame, text = self._csv(read)
            frame = frame.cache()
            self._filling("", frame.count)  # parsed once, from the text's cache, which then goes
            self._keep(name, frame, cached=True)
            self._decoded.add(name)
            self._drop(text)
            return _table(name)
        raise ValueError(f"the Spark engine reads parquet or csv files (or catalog tables through "
                         f"catalog_table), not {read.kind!r}")

    def frame_relation(self, frame: DataFrame) -> exp.Table:
        """A caller's DataFrame, readable by SQL as a temporary view of ours (dropped on close)."""
        return self._view(frame, "frame")

    def catalog_table(self, *parts: str) -> exp.Table:
        """A table of the session's catalog by its parts, each taken as it is (none is split at a
        dot: ``prepare/spark_tables`` splits a name): table; db, table; or catalog, db, table."""
        identifiers = [exp.to_identifier(p, quoted=True) for p in reversed(parts)]
        return exp.Table(**dict(zip(("this", "db", "catalog"), identifiers)))

    def catalog_files(self, table: exp.Table) -> list[str]:
        """The files a table of the catalog reads (``inputFiles``), the table named to
        ``session.table`` as the SQL names it, each part in backticks: so the files kept from being
        overwritten are the very table's that is read (given the name as the user wrote it, Spark
        would split it its own way)."""
        return self.spark.table(table.sql(dialect=self.dialect)).inputFiles()

    def _parquet(self, read: FileRead) -> DataFrame:
        """A file; else the files ``sources.py`` listed (``read.files``), as DuckDB reads them: a
        pattern's matches or a folder's files less a Spark job's leftovers, which Hadoop's glob and
        the folders it matched would read (each person counted again). A folder's Hive partition
        folders are columns, their values text; a pattern's files get no column from their path."""
        reader = self.spark.read
        if not read.files:
            return reader.parquet(str(read.path) if read.glob else self._readable(read.path))
        bases = hive_bases(read.path.parent.parent, read.files) if read.parquet_folder else {}  # folder/**/*.parquet
        if not bases:  # each file's own folder its base: no column from its path
            with self._listed_on_the_driver():
                return reader.parquet(*[self._readable(f) for f in read.files])
        with self._partition_values_as_text(), self._listed_on_the_driver():  # as DuckDB reads them
            frames = [self.spark.read.option("basePath", str(base)).parquet(*[literal_path(f) for f in files])
                      for base, files in bases.items()]
        return functools.reduce(lambda a, b: a.unionByName(b), frames)

    def _readable(self, path: Path) -> str:
        """The path Spark is handed for the file ``path``, literal. Spark's file listing skips a name
        starting with ``_`` or ``.`` (``model.hidden_parts.hidden_name``) even when the file itself is named, so
        ``_q.parquet`` failed ("Unable to infer schema") or read no rows where DuckDB reads it: such a
        file is read through a link of a visible name in a folder of the engine's, removed on close.
        Only a file named (or spelled by a pattern) is given: a folder's leftovers are never listed."""
        if not hidden_name(path.name):
            return literal_path(path)
        if path not in self._links:
            self._links[path] = self.link_to(path)
        return literal_path(self._links[path])

    def csv_delimiter(self, read: FileRead) -> str:
        return read.delimiter or ","  # Spark does not sniff; "," is its default

    def _csv(self, read: FileRead) -> tuple[DataFrame, str]:
        """The CSV's columns typed, and the name of the view of its text they are read from."""
        where = str(read.path) if read.glob else self._readable(read.path)
        # Read as text with no NULL marker of Spark's own: the spec's markers apply, as in DuckDB. A
        # quote inside a quoted field is doubled (RFC 4180, DuckDB's escape): Spark's default escape,
        # a backslash, read "say ""hi""" as it is written and "end\" as end".
        view = self.temp_name("csv")
        names, bad = self._csv_text(read, where, view)
        texts = {name: _csv_value(name, read.nulls) for name in names}
        declared = {c: t for c, t in read.types.items() if c in texts}
        undeclared = [c for c in read.numeric if c in texts and c not in read.types]
        checks = _CsvChecks(self, bad, declared, undeclared, names)
        # Types are told from the fields as read, markers NULL: a marker ("-") counted as a value that
        # is no whole number made an ordered column DOUBLE, where DuckDB reads it as BIGINT.
        as_read = exp.select(*[exp.alias_(v.copy(), exp.to_identifier(n, quoted=True)) for n, v in texts.items()],
                             _column(bad)).from_(_table(view))
        row = self.fetch_row(exp.select(*checks.counts).from_(as_read.subquery("csv")))
        if checks.replaced(row):  # DuckDB's read stops at such a byte, naming its line
            raise InputError(f"{counted(checks.replaced(row), 'row')} "
                             f"{agreeing(checks.replaced(row), 'holds', 'hold')} bytes that are not "
                             f"{read.encoding} text (or the character U+FFFD, which stands for such bytes); set "
                             f"[source] encoding to the file's (utf-8, utf-16, latin-1), or re-save it as UTF-8")
        if checks.ragged(row) or checks.broken(row) or (len(names) == 1 and _crlf_file_breaks_otherwise(read)):
            _refuse_changing_endings(read)
        if checks.ragged(row):
            raise InputError(f"{counted(checks.ragged(row), 'row')} "
                             f"{agreeing(checks.ragged(row), 'has', 'have')} more or fewer fields than the header's "
                             f"{len(names)}; fix them (or the delimiter: {self.csv_delimiter(read)!r})")
        found = self.number_types_from(declared, undeclared, checks.type_counts(row))
        types = {**{c: t or "DOUBLE" for c, t in found.items()}, **read.types}
        self._refuse_unread(checks.unread(row, {c: types[c] for c in texts if c in types}), types, read)
        columns = [exp.alias_(self.read_number(v, types[n]) if n in types else v, exp.to_identifier(n, quoted=True))
                   for n, v in texts.items()]
        return self._frame(self.render(exp.select(*columns).from_(_table(view))), None), view

    def _csv_text(self, read: FileRead, where: str, view: str) -> tuple[list[str], str]:
        """The CSV's fields as text, kept (cached) as ``view``: its columns' names, and the column
        holding a row with more or fewer fields than the header (``_CsvChecks`` counts them: such a
        row stops the job, as on DuckDB). Spark's reader, permissive, gave a row without its note
        field the next field, an SSN (an identifier), as its note, and dropped extra fields.
        Counted, never shown: Spark keeps the row's text in the corrupt-record column."""
        from pyspark.sql import types as T

        # multiLine: a record is read whole, a quoted field's line breaks in it (read line by line,
        # Spark cut "cold\nM,flu" into a row of its own: a person who is not in the file, released).
        # It also reads UTF-16, whose line breaks the line reader cannot find.
        options = {"header": True, "sep": self.csv_delimiter(read), "encoding": _JAVA_CHARSETS[read.encoding],
                   "multiLine": True, "quote": '"', "escape": '"'}
        names = list(read.header) or self.spark.read.csv(where, **options).columns
        bad = next(f"__sqlclose_bad_{i}" for i in range(len(names) + 1) if f"__sqlclose_bad_{i}" not in names)
        schema = T.StructType([T.StructField(n, T.StringType()) for n in [*names, bad]])
        options.update(schema=schema, columnNameOfCorruptRecord=bad, mode="PERMISSIVE",
                       nullValue="\u0000sqlclose-no-null\u0000", emptyValue="")
        # Unsaid, Spark's reader takes the first line break it meets for the file's ending, and turns
        # those inside quoted fields into "\n": a CRLF file's quoted "a\r\nb" was released as "a\nb"
        # (DuckDB's "a\r\nb"); a header's quoted "\r" read the rows as one (a refusal), and its "\n" in
        # a CRLF file left a row's last value ending in "\r", released so. Told, it reads as DuckDB.
        frames = [self.spark.read.csv(paths, **options, **({"lineSep": ending} if ending else {}))
                  for ending, paths in self._by_ending(read, where)]
        # Spark reads the corrupt-record column only from a parsed, cached table
        frame = functools.reduce(lambda a, b: a.union(b), frames).cache()
        self._keep(view, frame, cached=True)
        return names, bad

    def _by_ending(self, read: FileRead, where: str) -> list[tuple[str | None, str | list[str]]]:
        """What Spark's reader reads (``where``), by the line ending it is told: every file's, or, for a
        pattern whose files end their lines differently (``read.line_endings``), each file's own, as
        DuckDB reads them: told none, the reader took each file's first line break for its ending, a
        quoted one too (the CRLF file's "a\r\nb" released as "a\nb", hundredth round). The groups in
        the order of their first file."""
        if len({ending for _, ending in read.line_endings}) < 2:
            return [(read.line_ending, where)]
        groups: dict[str | None, list[str]] = {}
        for path, ending in read.line_endings:
            groups.setdefault(ending, []).append(self._readable(path))
        return list(groups.items())

    def read_number(self, value: exp.Expression, kind: str) -> exp.Expression:
        """TRY_CAST (rendered so, not CAST), of the text as DuckDB's cast reads it where Spark's would
        not: a digit separator between digits dropped (5_000, which DuckDB reads as 5000), and for
        BIGINT a point and zeros after the digits (1. and 1.0, DuckDB's 1). Any other type: as it is."""
        if kind in ("BIGINT", "DOUBLE") or DECIMAL_TYPE.fullmatch(kind) or kind == "DECIMAL":
            value = _replaced(value, "(?<=[0-9])_(?=[0-9])")
        if kind == "BIGINT":
            value = _replaced(value, r"(?<=[0-9])\.0*(?=\s*$)")
        return exp.TryCast(this=value, to=exp.DataType.build(kind, dialect=self.dialect), safe=True)

    def _refuse_unread(self, unread: dict[str, int], types: dict[str, str], read: FileRead) -> None:
        """Stop at a typed column holding values its type cannot read (``unread``: their count per
        column), naming the column and the type, never a value (DuckDB's read names the line:
        Spark's rows have no line numbers)."""
        for name, count in unread.items():
            if count:
                if name in read.numeric and name not in read.types:
                    raise InputError(f"column {name_shown(name)} holds {counted(count, 'value')} that "
                                     f"{agreeing(count, 'is not a number', 'are not numbers')}; an "
                                     f"ordered sensitive column needs numbers: {unread_value_fixes(read, True, True)}")
                raise InputError(f"column {name_shown(name)} holds {counted(count, 'value')} that "
                                 f"{agreeing(count, 'is', 'are')} not a {types[name]}; "
                                 f"{unread_value_fixes(read, False, True)}")

    def _view(self, frame: DataFrame, stem: str) -> exp.Table:
        name = self.temp_name(stem)
        self._keep(name, frame, cached=False)
        return _table(name)

    def copy_to_parquet(self, query: exp.Expression, path: Path, params: Sequence[Any] = ()) -> None:
        """Write a Parquet folder of one part file (``_in_parts``, one part); an existing path is an error."""
        with self.told_with(lambda: self.render(query)):
            with self._timestamps_as_micros():
                writer = self._sorted(query, params, 1, ()).write.mode("errorifexists")
                self._filling(self.render(query), lambda: writer.parquet(_written_path(path)))

    def _sorted(self, query: exp.Expression, params: Sequence[Any], parts: int,
                partition_by: Sequence[str]) -> DataFrame:
        """The release query's rows in ``parts`` sorted partitions (``_in_parts``), or, for a query
        whose sort keys that wrapper cannot name, in one (``_in_one_part``)."""
        frame = self._in_parts(query, params, parts, partition_by)
        return frame if frame is not None else self._in_one_part(self.render(query), params)

    def _in_one_part(self, sql: str, params: Sequence[Any]) -> DataFrame:
        """The sorted release query's rows in one partition, in order, for a query ``_in_parts`` cannot
        wrap. Spark cuts a sorted query into ranges at bounds it samples from the rows in the input's
        order: the same rows shuffled were cut into other part files, so the folder's bytes told two
        orders of one table apart. The ranges joined in order are the release whatever the bounds: one
        task sorts each range in turn and writes them (as DuckDB writes one file); the query's reads and
        shuffle stay parallel. The sample is a job of its own that computes the query a first time."""
        return self._frame(sql, params).coalesce(1)

    def copy_to_parquet_folder(self, query: exp.Expression, path: Path, params: Sequence[Any] = (),
                               partition_by: Sequence[str] = (), rows: int | None = None) -> None:
        """Spark's own folder, made deterministic: part files renamed without the job's UUID,
        ``_SUCCESS`` and the ``.crc`` side files removed. Up to ``rows_per_part`` rows (or ``rows``
        unknown) one part file, or one per Hive partition; more, a part file per
        ``rows_per_part`` rows, or still one per Hive partition, written in parallel (``_in_parts``)."""
        parts = -(-rows // self.rows_per_part) if rows else 1
        with self.told_with(lambda: self.render(query)):
            writer = self._sorted(query, params, parts, partition_by).write.mode("errorifexists")
            if partition_by:
                writer = writer.partitionBy(*partition_by)
            with self._timestamps_as_micros():
                self._filling(self.render(query), lambda: writer.parquet(_written_path(path)))
        tidy_part_files(path)

    def _in_parts(self, query: exp.Expression, params: Sequence[Any], parts: int,
                  partition_by: Sequence[str]) -> DataFrame | None:
        """The sorted release query's rows in ``parts`` partitions chosen by a hash of each row's own
        values (with Hive partitions, of its partition values: each Hive partition one file), each
        partition sorted by the query's order (Hive partition columns first, so that the writer need
        not sort again): which part file holds a row, and where in it, follows from the row alone,
        never from the input's order. Spark's own cut of a sorted query samples its bounds
        from the rows in the input's order; a repartition by a number (``REPARTITION(n, …)``) is one
        adaptive execution never coalesces.

        One part is a shuffle of no key to one task (``REPARTITION(1)``): the query is computed once,
        where a sort's sampled bounds computed it twice (1 M rows through a join, one folder:
        5.6-6.0 s -> 4.4-5.3 s, the same bytes). None when the query is not a sorted SELECT whose keys
        the wrapper can name, or (more than one part) no column can be hashed (maps)."""
        order = query.args.get("order") if isinstance(query, exp.Select) else None
        if order is None or not _keys_named_outside(query):
            return None
        unordered = query.copy()
        unordered.set("order", None)
        keys: list[str] = []
        if parts > 1:  # Hive partitions each go whole to one task (one file each); else each row's values
            schema = self.schema(unordered.subquery(), params)
            keys = list(partition_by) or [f.name for f in schema if not pa.types.is_nested(f.type)]
            if not keys:
                return None
        first = [exp.Ordered(this=_column(c), nulls_first=False) for c in partition_by]
        parted = _shuffled_and_sorted(unordered, parts, keys, [*first, *[o.copy() for o in order.expressions]])
        return self._frame(self.render(parted), params)

    def read_parquet(self, path: Path) -> exp.Expression:
        with self._partition_values_as_text():
            return self._view(self.spark.read.parquet(literal_path(path)), "written")

    @contextmanager
    def _listed_on_the_driver(self) -> Iterator[None]:
        """Files ``sources.py`` already listed, looked up by the driver: past 32 paths Spark lists
        them in a job of a task per path, which took 11-65 s for 1,000 one-file paths and 89-127 s
        for 5,000 on two loaded cores, against 2.8 s and 10.7 s on the driver (a stat per file). The
        setting is read when the files are listed, i.e. inside the block."""
        with self._setting("spark.sql.sources.parallelPartitionDiscovery.threshold", str(2**31 - 1)):
            yield

    @contextmanager
    def _partition_values_as_text(self) -> Iterator[None]:
        """Hive partition values read as text, as DuckDB reads them: typed by guessing from every
        folder's name, a source's were BIGINT or text as a suppressed row's folder said. The
        setting is read when the folder is listed, i.e. inside the block."""
        with self._setting("spark.sql.sources.partitionColumnTypeInference.enabled", "false"):
            yield

    @contextmanager
    def _timestamps_as_micros(self) -> Iterator[None]:
        """A release's timestamps written as Parquet's INT64 microseconds, as DuckDB writes them:
        Spark's default, the legacy INT96, read back by pyarrow as a naive nanosecond time (its time
        zone gone) for a column the source held as ``timestamp[us, tz=UTC]``."""
        with self._setting("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS"):
            yield

    @contextmanager
    def _setting(self, key: str, value: str) -> Iterator[None]:
        """The session's ``key`` set to ``value`` inside the block, put back after (a caller's
        session keeps its own). A setting of ``_READ_EACH_STATEMENT`` on a session of our own is put
        back as read at the start: a zone other than UTC in its ``conf`` was read again around every
        statement (``_statement_zone``), 29 py4j calls of a Table 3 release's 87 (hundredth round)."""
        own = self._own_settings or {}
        before = own[key] if key in own else self.spark.conf.get(key, None)
        self.spark.conf.set(key, value)
        try:
            yield
        finally:
            if before is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, before)

    def engine_error(self, e: Exception, sql: str) -> EngineError:
        """Spark's error in one line, its condition and what it says: the analyzed plan that follows
        (a release query's runs to kB) stays in ``cause``, out of the message a job logs. A data
        exception (a cast or an overflow on a row) is rebuilt without the value it quotes, and is
        bad input (exit 2), as DuckDB's failing view or relation is when opened: sqlclose's own
        queries convert with TRY_CAST, so such a row is the source's, a caller's DataFrame or view
        computing a column lazily (the first pass to read the column meets it)."""
        redacted = message_without_values(e)
        if redacted is not None:
            return SourceDataError(f"a value of the source could not be computed: {type(e).__name__}: {redacted}; fix "
                                   "the DataFrame or view (try_cast gives NULL where cast fails) or the rows it reads",
                                   sql)
        first = next((line.strip() for line in str(e).splitlines() if line.strip()), "")
        return EngineError(f"{type(e).__name__}: {first}" if first else type(e).__name__, sql)

    def close(self) -> None:
        for name in list(self._views):
            try:
                self._drop(name)
            except Exception:  # noqa: BLE001 - closing must not fail on a session already gone
                self._views.pop(name, None)
        self.remove_links()
        self._links = {}
        if self._own:
            self.spark.stop()
        self.closed = True


def _crlf_file_breaks_otherwise(read: FileRead) -> bool:
    """Whether a file told CRLF holds another line break: asked of a CSV of one column alone, whose
    rows show no tell. Told CRLF, Spark's reader reads its LF lines as rows all the same, each value
    plain, where DuckDB refuses the file; with more columns such lines were one row, ragged, and a
    file told LF or CR leaves a value ending in "\\r" or starting with "\\n" (``_CsvChecks``). Bytes
    counted, not decoded: 33 ms of CPU for 1 M rows (7 MB), in a run of two minutes."""
    told = read.line_endings or ((read.path, read.line_ending),)
    return any(ending == "\r\n" and path is not None and path.is_file() and not breaks_all(path, read.encoding, ending)
               for path, ending in told)


def _refuse_changing_endings(read: FileRead) -> None:
    """A CSV file whose line endings change (LF, then CRLF) refused as DuckDB's read refuses it,
    naming the line (``line_endings``): told one ending, Spark's reader left the other lines' values
    ending in "\r", released so, or read two lines as one row (said to have more fields than the
    header). The files are scanned only when the rows read show a line break at a row's edge."""
    files = [path for path, _ in read.line_endings] or ([read.path] if read.path and read.path.is_file() else [])
    for path in files:
        change = line_ending_change(path, read.encoding, read.delimiter)
        if change is not None:
            raise InputError(line_ending_change_words(change, f"{path}, " if path != read.path else ""))


def _replaced(text: exp.Expression, pattern: str) -> exp.Expression:
    """``text`` with every match of the (Java) regular expression ``pattern`` removed."""
    return exp.RegexpReplace(this=text, expression=exp.Literal.string(pattern), replacement=exp.Literal.string(""))


def _holds_variant(kind: Any) -> bool:
    """Whether a Spark type is or holds a VARIANT (in a struct, an array or a map)."""
    from pyspark.sql import types as t

    if isinstance(kind, t.VariantType):
        return True
    if isinstance(kind, t.StructType):
        return any(_holds_variant(f.dataType) for f in kind.fields)
    if isinstance(kind, t.ArrayType):
        return _holds_variant(kind.elementType)
    if isinstance(kind, t.MapType):
        return _holds_variant(kind.keyType) or _holds_variant(kind.valueType)
    return False
