"""The engine interface: the search and the release talk to this, never to a driver.

An engine runs sqlglot ASTs rendered in its dialect and hands results back as Arrow. Backends
declare ``name`` and ``dialect`` (no defaults: a backend that forgot its dialect would silently
emit another engine's SQL) and implement the primitive hooks (``_run``, ``_execute``,
``register`` …); everything else is shared. Driver errors are re-raised as ``EngineError``
carrying the SQL.

Queries are built dialect-neutrally: a bound parameter is ``exp.Placeholder(this="1")`` (the
first value of the list passed with the query); ``render`` turns each into the engine's own
marker (``placeholder``) and ``bind`` shapes the values the way the driver takes them.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import uuid
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pyarrow as pa
from sqlglot import exp

from sqlclose.errors import EngineError, InputError
from sqlclose.model.spec import DECIMAL_TYPE
from sqlclose.model.text import agreeing, counted, cut_in_advice, name_cut, name_shown

_Result = TypeVar("_Result")  # what a fetch gives: a table, a schema

# Types whose values are equal exactly when their texts are (Engine.hashed_as_is): casting them to
# text for the truth test's row keys cost ~0.35 s of its 2.9 s at 10 M rows (four integer and date
# columns; docs/performance.md, twenty-first round).
_EXACT_TYPES = (pa.types.is_integer, pa.types.is_string, pa.types.is_large_string, pa.types.is_date,
                pa.types.is_boolean)


@dataclass(frozen=True)
class FileRead:
    """How to read a file (or, with ``glob``, every file a pattern matches; with ``parquet_folder``, every
    Parquet file of a folder, Hive partition folders read as columns) — the one description both
    engines take, and, without a path yet, the reading options of a bare path (the spec's
    ``[source]``, or check's ``--table``/``--delimiter``): ``kind`` is then the format asked for.

    CSV columns are read as text unless ``types`` names a type; ``numeric`` columns (ordered
    sensitive columns) without a declared type are read as whole numbers (``undeclared_number_type``).
    """

    kind: str | None = None  # parquet | csv | duckdb | query (None: told by the path)
    path: Path | None = None
    table: str | None = None
    delimiter: str | None = None
    glob: bool = False
    encoding: str = "utf-8"
    nulls: tuple[str, ...] = ("",)
    types: dict[str, str] = field(default_factory=dict)
    numeric: tuple[str, ...] = ()
    header: tuple[str, ...] = ()  # a CSV's column names, as its header line gives them
    # A CSV's line ending ("\n", "\r\n", "\r"), said to the reader when its header's quoted name holds a
    # line break, which DuckDB's detection took for the ending (``csv_lines.header_record``)
    new_line: str | None = None
    # A CSV's line ending as its header record ends (every file's alike; None: unsaid), for Spark's reader,
    # which otherwise takes the first break it meets, a quoted one too, and turns the quoted breaks of that
    # kind into "\n" (``SparkEngine._csv_text``)
    line_ending: str | None = None
    # Each CSV file with the line ending after its header record: where they differ (``line_ending`` None),
    # Spark's reader is told each file's own, as DuckDB's reader takes it (``SparkEngine._by_ending``)
    line_endings: tuple[tuple[Path, str | None], ...] = ()
    query: exp.Expression | None = None  # kind "query": one SELECT, over ``path`` (a DuckDB database) or files
    folder: Path | None = None  # kind "query": where the files it names are looked up
    parquet_folder: bool = False  # ``path`` is a folder's ``**/*.parquet`` (Hive partitions read as columns)
    histogram: bool = False  # the warehouse path's export (its errors' hints name what that path has)
    # A CSV header's names, read without the spaces around them, that are these names so (the spec's for a
    # warehouse histogram's columns, which may hold edge spaces: ' pad age ')
    exact_names: tuple[str, ...] = ()
    checked: bool = False  # the table ``sqlclose check`` audits, read without [source] nulls (so its hints say)
    files: tuple[Path, ...] = ()  # a Parquet folder's or pattern's files, leftovers left out (engine.listing)

    @property
    def format(self) -> str | None:
        return self.kind

    @classmethod
    def of(cls, source: Any, numeric: tuple[str, ...] = ()) -> FileRead:
        """The reading options a spec's ``[source]`` (a ``model.spec.Source``, or None) states."""
        if source is None:
            return cls(numeric=numeric)
        return cls(source.format, None, source.table, source.delimiter, source.glob, source.encoding,
                   tuple(source.nulls), dict(source.types), numeric)


def unread_value_fixes(read: FileRead, ordered: bool, many: bool = False) -> str:
    """What to do about a CSV value (``many``: values) its column's type cannot read, in the terms
    of the command reading it: anonymize applies ``[source] nulls``; ``sqlclose check`` applies none
    to the table it checks (a spec's reach only its reference), and refuses a NULL in a column it
    judges by the ordered distance, so listing the value there would not let it pass."""
    value, it = ("the values", "them") if many else ("the value", "it")
    if read.checked and ordered:
        return (f"fix {value}, or judge the column by another distance (check's --distance, given without --spec); "
                "check applies no [source] nulls to the table it checks, and an ordered column holds no NULL")
    if read.checked:
        return (f"fix {value}, or change the spec's [source] types (check applies no [source] nulls to the table "
                "it checks)")
    if ordered:
        return f"fix {value}, list {it} in [source] nulls, or use another distance"
    return f"fix {value}, or change [source] types or nulls"


# The text of a whole number, and of a plain number (no NaN, no infinity), as both engines' regular
# expressions read them (``Engine.number_types``).
WHOLE_NUMBER = r"\s*[+-]?[0-9]+\s*"
PLAIN_NUMBER = r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*"


def undeclared_number_type(column: str, values: int, whole: int, numbers: int, unusual: int = 0) -> str | None:
    """The type of an ordered CSV column without a declared one, from the counts of its non-NULL
    values, of those that are whole numbers, of those that are plain numbers, and of those that are
    no plain number yet read as a finite one (``unusual``: DuckDB reads 1_000 as 1000): BIGINT when
    every value is whole; None (no number type: the read, or the checks of NaN and of the ordered
    type, name the problem) when some are not plain numbers. Other numbers (a fraction, an exponent,
    an unusual spelling) are refused: the type must not follow the values — sniffed BIGINT or
    DOUBLE, one suppressed row's 5000.5 turned the release's column from 4000 to 4000.0, and read
    as DOUBLE so that text fails with its line, one suppressed row's 1_000 did the same."""
    if whole == values:
        return "BIGINT"
    if unusual:
        raise InputError(f"column {name_shown(column)} holds {counted(unusual, 'value')} read as numbers although not "
                         "written as plain ones (a digit separator such as 1_000); an ordered column of a CSV is read "
                         "from plain numbers unless its type is declared: write them as plain numbers, or declare it, "
                         f"e.g. [source] types = {{ {name_cut(column)} = \"DOUBLE\" }} (or "
                         f"\"BIGINT\"){cut_in_advice(column)}")
    if numbers < values:
        return None
    raise InputError(f"column {name_shown(column)} holds {counted(values - whole, 'number')} that "
                     f"{agreeing(values - whole, 'is', 'are')} not whole (a fraction "
                     f"or an exponent); an ordered column of a CSV is read as whole numbers unless its type is "
                     f"declared: declare it, e.g. [source] types = {{ {name_cut(column)} = \"DOUBLE\" }} (or "
                     f"\"DECIMAL(12, 2)\"){cut_in_advice(column)}")


def _exact_patterns(declared: dict[str, str]) -> dict[str, str]:
    """Per ``declared`` column whose type reads some text exactly, that text (``_exactly_read``)."""
    return {c: p for c, kind in declared.items() if (p := _exactly_read(kind))}


def _exactly_read(kind: str) -> str | None:
    """The text a declared CSV type reads as the value it writes (a regular expression), for
    BIGINT, DECIMAL, DOUBLE, DATE, TIMESTAMP and TIME, None for VARCHAR. BIGINT's read rounds
    3000.5 to 3001 and DECIMAL(p, s)'s past its scale; each engine reads spellings the other does
    not (DuckDB's 0x10 as BIGINT 16, Spark's 1d as DOUBLE 1.0 and Arabic-Indic digits as DECIMAL).
    A digit separator between digits (5_000) is read as the number it writes, on both engines
    (``Engine.read_number``). The date and time types drop what they cannot hold (``_MOMENTS``)."""
    if kind in _MOMENTS:
        return _MOMENTS[kind]
    if kind == "DOUBLE":
        return rf"\s*[+-]?({_DOUBLE_NUMBER}|(?i:nan|inf|infinity))\s*"  # NaN and ±inf: their own checks
    decimal = DECIMAL_TYPE.fullmatch(kind)
    if kind == "BIGINT":
        scale = 0
    elif kind == "DECIMAL" or decimal:
        scale = int(decimal.group(2)) if decimal else 3  # DuckDB's plain DECIMAL: (18,3)
    else:
        return None
    zeros = "(_?0)*"  # trailing zeros change no number (a separator may stand between them too)
    fraction = rf"(\.(0{zeros})?)?" if scale == 0 else rf"(\.([0-9](_?[0-9]){{0,{scale - 1}}}{zeros})?)?"
    tail = "" if scale == 0 else rf"|\.[0-9](_?[0-9]){{0,{scale - 1}}}{zeros}"
    return rf"\s*[+-]?({_DIGITS}{fraction}{tail})\s*"


_DIGITS = "[0-9]+(_[0-9]+)*"  # DuckDB reads 5_000 as 5000: the same number
_DOUBLE_NUMBER = rf"({_DIGITS}(\.({_DIGITS})?)?|\.{_DIGITS})([eE][+-]?{_DIGITS})?"
# The dates, times and timestamps their declared type holds as written. Both engines' casts read more,
# and drop what the type cannot hold: DATE a time of day ('2020-01-01 13:00' as 2020-01-01), TIMESTAMP
# and TIME a UTC offset or zone name ('…00:00+05' and '…00:00-08', 13 hours apart, both as 00:00) and
# digits past the microsecond (…123456789 as …123456). A midnight under DATE, and a UTC offset of zero
# (Z, +00, +00:00), change nothing; digits past the sixth that are zeros neither.
_DAY = r"[0-9]+[-/ ][0-9]{1,2}[-/ ][0-9]{1,2}"
_CLOCK = r"[0-9]{1,2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{0,6}0*)?)?(Z|[+-]00(:?00)?)?"
_MIDNIGHT = r"[T ]\s*0{1,2}:00(:00(\.0*)?)?(Z|[+-]00(:?00)?)?"
_ENDLESS = "(?i:[+-]?infinity)"
_MOMENTS = {
    "DATE": rf"\s*({_DAY}( \(BC\))?({_MIDNIGHT})?|{_ENDLESS})\s*",
    "TIMESTAMP": rf"\s*({_DAY}( \(BC\))?([T ]\s*{_CLOCK})?|{_ENDLESS})\s*",
    "TIME": rf"\s*{_CLOCK}\s*",
}
# What a value of a date or time type not written as the type writes it can be: one the type would
# change, or a spelling of the engine's own (DuckDB reads 20200105 as a DATE, Spark does not).
_OTHER_DAYS = "or a day not written YYYY-MM-DD, such as 20240517, which the engines read differently"
_MOMENT_DROPS = {"DATE": f"a time of day, which DATE drops, {_OTHER_DAYS}",
                 "TIMESTAMP": "a UTC offset or time zone, which TIMESTAMP drops (two instants hours apart read as "
                              f"one), digits past the microsecond, which it cuts, {_OTHER_DAYS}",
                 "TIME": "a UTC offset, which TIME drops, digits past the microsecond, which it cuts, or a time not "
                         "written hh:mm:ss"}
_MOMENT_FIXES = {"DATE": "write the days as YYYY-MM-DD (declare it \"TIMESTAMP\" to keep a time of day)",
                 "TIMESTAMP": "write the values as YYYY-MM-DD hh:mm:ss in UTC, without an offset, to the microsecond",
                 "TIME": "write the values as hh:mm:ss without an offset, to the microsecond"}


def _changed_numbers_message(column: str, kind: str, count: int) -> str:
    if kind in _MOMENTS:
        return (f"column {name_shown(column)} is declared {kind} but holds {counted(count, 'value')} not read as "
                f"written ({_MOMENT_DROPS[kind]}); a release gives values as the rows hold them: "
                f"{_MOMENT_FIXES[kind]}, or declare it \"VARCHAR\" (read as the text it is)")
    if kind == "DOUBLE":
        return (f"column {name_shown(column)} is declared DOUBLE but holds {counted(count, 'value')} not read as "
                "written: a spelling an engine reads as a number although not a plain one (a type suffix; the engines "
                "read such spellings differently), or a number past DOUBLE's range (beyond ±1.8e308, read as infinity, "
                "or a nonzero one below ±4.9e-324, read as 0); write them as plain decimal or scientific numbers, "
                "declare it \"DECIMAL(precision, scale)\" or \"VARCHAR\", or fix the values")
    return (f"column {name_shown(column)} is declared {kind} but holds {counted(count, 'number')} that type would "
            "change (a fraction, more decimals than its scale, or a spelling such as an exponent or a hexadecimal "
            "number); a release gives values as the rows hold them: declare it \"DOUBLE\", or \"DECIMAL(precision, "
            "scale)\" with room for its decimals, or fix the values")


def _finite(number: exp.Expression) -> exp.Expression:
    return exp.LT(this=exp.Abs(this=number), expression=exp.Cast(this=exp.Literal.string("Infinity"),
                                                                 to=exp.DataType.build("DOUBLE")))


@dataclass(frozen=True)
class PackedColumn:
    """A released column whose order a few bits of one integer can hold (``Engine.packed_sort_key``):
    one of a dictionary type, by its member's code (``member``: a value of that type, NULL will do);
    else one given as it is (``kind``: "integer", "date" or "boolean"), by its distance from the
    least value the source holds."""

    name: str
    member: exp.Expression | None = None
    kind: str = "dictionary"


@dataclass(frozen=True)
class PackedKey:
    """``Engine.packed_sort_key``'s key: ``expression``, one integer, and ``whole``, the names of
    the columns whose every value it holds (rows of equal keys hold equal values there), which a
    sort by the key need not compare again."""

    expression: exp.Expression
    whole: tuple[str, ...]


class Engine(ABC):
    name: ClassVar[str]  # how specs and the registry call it: "duckdb", "spark"
    dialect: ClassVar[str]  # the sqlglot dialect its SQL is rendered in
    # Can lattice levels stay engine-side (``keep``/``rename``), so that the search fetches only
    # what the privacy judge reads (search.batch_runner.BatchRunner)? Else each level comes back
    # whole and is registered again (``fetch_and_keep``).
    keeps_levels: bool = False
    # Does a table made by CREATE TABLE AS … ORDER BY keep that order in storage? Then the base
    # histogram is stored sorted (problem._base_order), and grouping it meets each group in runs.
    # Only speed depends on it, never a result.
    orders_tables: ClassVar[bool] = False
    # Text a partitioned Parquet write cannot carry in a folder name, refused before writing (or the
    # search): Spark writes "" as its NULL folder (read back NULL) and fails on that folder's name.
    unwritten_partition_text: ClassVar[tuple[str, ...]] = ()

    def partition_name_bytes(self, value: exp.Expression) -> exp.Expression | None:
        """The bytes of a text partition value's folder name (after ``column=``) as the engine writes
        it, or None when the engine does not say (the folder name's limit is then not checked)."""
        return None

    # Can ORDER BY sort a MAP (or a type holding one)? Spark cannot (INVALID_ORDERING_TYPE): such a
    # column is then sorted by its text alone (``queries.Ties.by_text``).
    orders_maps: ClassVar[bool] = True

    def content_text(self, value: exp.Expression) -> exp.Expression:
        """A text of a value the engine cannot sort (``orders_maps``) that tells apart any two values
        of unlike content, for a release to be ordered by it."""
        return exp.cast(value, "VARCHAR")
    # Whether GROUP BY makes -0.0 the value 0.0 (Spark normalizes it; DuckDB keeps the group's first).
    groups_minus_zero_as_zero: ClassVar[bool] = False
    # Whether the text of NaN with its sign bit set ("-nan") may be cut when grouped: DuckDB (2.0.1)
    # sizes a float's text by a Parquet file's min/max statistics, which pyarrow writes without NaN,
    # and its GROUP BY then kept "-na\x00" (rows lost: no leaf or domain value matched them).
    cuts_negative_nan_text: ClassVar[bool] = False
    # May the base histogram keep the rows as they stand, one per row, when nearly every row is a
    # combination of its own (one HyperLogLog pass tells: prepare.problem._groups_base)? Its readers
    # all sum counts, so only speed depends on it; measured on DuckDB only.
    ungrouped_base: ClassVar[bool] = False
    # An exact integer type that holds a product of three row counts and whose DIV stays an exact
    # integer (the re-check's ordered distance, verify_ordered.sql): DECIMAL(38, 0) on Spark, whose
    # DIV of it is a BIGINT; DuckDB divides a DECIMAL as a DOUBLE, so it uses INT128 (HUGEINT).
    wide_integer: ClassVar[str] = "DECIMAL(38, 0)"
    # The source types whose text (the engine's cast) casts back to the very value: Arrow's type name →
    # the SQL type (``exact_text_type``). Signed integers on every engine; an engine adds what it was
    # checked on.
    exact_text_types: ClassVar[dict[str, str]] = {"int8": "TINYINT", "int16": "SMALLINT", "int32": "INT",
                                                  "int64": "BIGINT"}

    def exact_text_type(self, arrow_type: pa.DataType) -> exp.DataType | None:
        """The SQL type of a source column whose values' text casts back to them, or None. Such a
        column's lookup is joined on its leaves cast to the type (``queries.typed_leaf``) and its
        distinct values are grouped typed, its text cast after: at 10 M rows a date of birth's
        text cost 0.4 s a join and 0.3 s a grouping (docs/performance.md, seventy-sixth round)."""
        name = self.exact_text_types.get(str(arrow_type))
        return None if name is None else exp.DataType.build(name)

    # Has it text types stored as small codes (``dictionary_type``)? Else a Parquet write's text
    # stays text, and nothing is computed to make them.
    has_dictionary_types: ClassVar[bool] = False

    # Is the search better run locally over the collected base histogram (search/hybrid.py)?
    # True for engines whose per-query cost is high (a cluster); DuckDB runs it in place.
    local_search: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for attr in ("name", "dialect"):
            if not isinstance(getattr(cls, attr, None), str):
                raise TypeError(f"engine {cls.__name__} must declare the class attribute {attr!r} (a str)")

    # The folder of links ``link_to`` makes (when a first is), and its removal, run once: by ``close``
    # (``remove_links``) or when the engine is collected unclosed.
    _link_folder: Path | None = None
    _link_cleanup: weakref.finalize | None = None

    def link_to(self, path: Path) -> Path:
        """A link of a plain name (``source<n>`` and ``path``'s suffix) to the file or folder ``path``,
        in a temporary folder of the engine's own: read through it, a path an engine would read
        otherwise (DuckDB's glob characters, Spark's hidden ``_``/``.`` names) reads that one file."""
        if self._link_folder is None:
            self._link_folder = Path(tempfile.mkdtemp(prefix="sqlclose-links-"))
            self._link_cleanup = weakref.finalize(self, shutil.rmtree, str(self._link_folder), True)
        link = self._link_folder / f"source{len(list(self._link_folder.iterdir()))}{''.join(path.suffixes[-1:])}"
        link.symlink_to(path.resolve())
        return link

    def remove_links(self) -> None:
        """The links' folder removed (the links alone, never what they point to), once."""
        if self._link_cleanup is not None:
            self._link_cleanup()
            self._link_folder, self._link_cleanup = None, None

    # Bytes the user allowed this job (``[engine] memory_limit``), or None when no limit was set:
    # the search counts its Python-side structures against it (search.memory_runner.takes).
    memory_budget: int | None = None

    def fit_memory(self, upcoming: int = 0) -> None:
        """Resize the engine's own memory limit to what the job's limit leaves beside what the
        process holds outside the engine now, plus ``upcoming`` bytes the caller is about to
        allocate (a part's judging). Called by the search as it goes; a no-op for an engine whose
        memory lives elsewhere (a cluster's)."""
        return None

    def reset_memory(self) -> None:
        """The engine's memory limit back to its share of the job's (the search has ended)."""
        return None

    def release_cached_memory(self) -> None:
        """Hand back to the system what the engine's allocator keeps cached from statements that
        finished, before a step that must fit beside what the process holds (the release's
        re-check). A no-op for an engine whose memory lives elsewhere, or with no limit set."""
        return None

    def check_connection(self) -> None:
        """Raise InputError when the connection is set in a way sqlclose cannot work under (a
        caller's connection may be changed after the engine was made: checked again before each
        write). Nothing by default."""
        return None

    def check_open(self) -> None:
        """Raise InputError when the caller closed the connection the engine runs on (a release
        made on it cannot be read or written then). Nothing by default."""
        return None

    def temp_name(self, stem: str) -> str:
        """A name for an object of ours: the reserved prefix keeps it apart from the user's. The
        engine's own token keeps two engines on one connection (or session) apart."""
        state = self.__dict__.get("_temp_names")
        if state is None:  # set lazily: a backend's __init__ need not call ours
            state = self.__dict__["_temp_names"] = (uuid.uuid4().hex[:8], itertools.count())
        token, counter = state
        return f"__sqlclose_{stem}_{token}_{next(counter)}"

    # ---- dialect-specific pieces a backend may override -------------------------------------
    def placeholder(self, index: int) -> exp.Expression:
        """The marker of the ``index``-th (1-based) bound parameter: ``$1`` in DuckDB."""
        return exp.Placeholder(this=str(index))

    def bind(self, params: Sequence[Any]) -> Any:
        """The parameters as the driver takes them (a list here; Spark takes a dict)."""
        return list(params)

    # ---- shared --------------------------------------------------------------------------
    def render(self, query: exp.Expression, owned: bool = False) -> str:
        """The query's SQL in this engine's dialect. ``owned``: the caller built the tree for this
        one statement, so the generator may transform it in place instead of copying it."""
        marked = self._with_placeholders(query)
        # The generator copies the tree it renders (its transforms mutate it); a tree with our
        # markers is already our own copy, so it is rendered in place.
        return marked.sql(dialect=self.dialect, copy=marked is query and not owned)

    def _with_placeholders(self, query: exp.Expression) -> exp.Expression:
        if type(self).placeholder is Engine.placeholder:
            return query  # the markers are this engine's own: no walk over the tree to find them
        if not any(_numbered(p) for p in query.find_all(exp.Placeholder)):
            return query
        return query.transform(lambda node: self.placeholder(int(node.name)) if _numbered(node) else node)

    def fetch(self, query: exp.Expression | str, params: Sequence[Any] | None = None, owned: bool = False) -> pa.Table:
        """Run a query and return its result as an Arrow table. ``owned``: as for ``render``."""
        return self._fetched(query, params, self._run, owned)

    def fetch_row(self, query: exp.Expression | str, params: Sequence[Any] | None = None,
                  owned: bool = False) -> dict[str, Any]:
        """The first row of a query that returns one (a count, a check's aggregates), by column name.
        ``owned``: as for ``render``."""
        return self._fetched(query, params, self._run_small, owned).to_pylist()[0]

    def schema(self, relation: exp.Expression, params: Sequence[Any] = ()) -> pa.Schema:
        """Column names and types of a relation (a table, or a subquery with its ``params``), without
        reading its rows."""
        query = exp.select(exp.Star()).from_(relation.copy()).limit(0)
        return self._fetched(query, list(params) or None, self._schema, owned=True)

    def _fetched(self, query: exp.Expression | str, params: Sequence[Any] | None,
                 run: Callable[[str, Sequence[Any] | None], _Result], owned: bool = False) -> _Result:
        sql = query if isinstance(query, str) else self.render(query, owned)
        with self.told_with(sql):
            return run(sql, params)

    def execute(self, statement: exp.Expression | str, params: Sequence[Any] | None = None,
                owned: bool = False) -> None:
        sql = statement if isinstance(statement, str) else self.render(statement, owned)
        with self.told_with(sql):
            self._execute(sql, params)

    @contextmanager
    def told_with(self, sql: str | Callable[[], str]) -> Iterator[None]:
        """A driver's error in the block as sqlclose's, told with ``sql`` (or what it returns: rendered
        only then): driver errors differ per backend. An ``EngineError`` passes as it is, told with its
        own SQL already (Spark: a kept table the statement read, ``_filling``)."""
        try:
            yield
        except EngineError:
            raise
        except Exception as e:
            raise self.wrapped_error(e, sql if isinstance(sql, str) else sql()) from None

    def engine_error(self, e: Exception, sql: str) -> EngineError:
        """The driver's error ``e`` on ``sql`` as sqlclose's; a backend says more where it can."""
        return EngineError(f"{type(e).__name__}: {e}", sql)

    def wrapped_error(self, e: Exception, sql: str) -> EngineError:
        """``engine_error`` holding ``e`` in ``cause``, for a raise ``from None``: a chained
        ``__cause__`` would print the driver's text, which may quote a value, in every traceback."""
        error = self.engine_error(e, sql)
        error.cause = e
        return error

    def number_types(self, relation: exp.Expression, declared: dict[str, str], undeclared: Sequence[str],
                     params: Sequence[Any] = ()) -> dict[str, str | None]:
        """The checks of a CSV's number columns, read as text in ``relation``, in one pass:

        - a column ``declared`` a type that would not read its values as written stops the job:
          both engines' reads round or truncate (3000.5 as BIGINT released as 3001, a salary no row
          holds, and verified, the re-check reading the source the same way; 1e400 as DOUBLE as
          infinity; a time of day under DATE, a UTC offset under TIMESTAMP, dropped), and each
          reads spellings the other does not (``_changed``: DuckDB's 0x10 as BIGINT 16);
        - each ordered column without a declared type (``undeclared``) gets its type by
          ``undeclared_number_type``, from counts of its values, its whole numbers, its plain
          numbers (both engines' own casts take 5000.5 as a whole number) and the values the engine
          reads as finite numbers although they are not plain ones (DuckDB's 1_000).

        Counted, never shown."""
        counts = self.number_type_counts(declared, undeclared)
        if not counts:
            return {}
        source = relation.subquery("csv") if isinstance(relation, exp.Select) else relation.copy()
        query = exp.select(*[c.as_(f"c{i}") for i, c in enumerate(counts)]).from_(source)
        return self.number_types_from(declared, undeclared, list(self.fetch_row(query, params, owned=True).values()))

    def number_type_counts(self, declared: dict[str, str], undeclared: Sequence[str]) -> list[exp.Expression]:
        """The counts ``number_types`` reads, over the columns as text, in the order
        ``number_types_from`` reads them: for a caller that asks them in a pass of its own."""
        counts: list[exp.Expression] = []
        for c, pattern in _exact_patterns(declared).items():
            value = exp.column(exp.to_identifier(c, quoted=True))
            as_written = exp.RegexpLike(this=value.copy(), expression=exp.Literal.string(f"^{pattern}$"))
            counts.append(exp.CountIf(this=self._changed(value, as_written, declared[c])))
        for c in undeclared:
            value = exp.column(exp.to_identifier(c, quoted=True))
            whole, plain = [exp.RegexpLike(this=value.copy(), expression=exp.Literal.string(f"^{pattern}$"))
                            for pattern in (WHOLE_NUMBER, PLAIN_NUMBER)]
            matches = (whole, plain, self._unusual(value, plain))
            counts += [exp.Count(this=value.copy()),
                       *(exp.CountIf(this=m) for m in matches)]
        return counts

    def number_types_from(self, declared: dict[str, str], undeclared: Sequence[str],
                          counts: Sequence[int | None]) -> dict[str, str | None]:
        """``number_types`` from the values of ``number_type_counts``: stop at a declared column
        whose values its type would change, else the undeclared columns' types."""
        row = [n or 0 for n in counts]  # count_if of no rows: NULL
        patterns = _exact_patterns(declared)
        for column, changed in zip(patterns, row):
            if changed:
                raise InputError(_changed_numbers_message(column, declared[column], changed))
        row = row[len(patterns):]
        return {c: undeclared_number_type(c, *row[4 * i:4 * i + 4]) for i, c in enumerate(undeclared)}

    def read_number(self, value: exp.Expression, kind: str) -> exp.Expression:
        """``value`` (text) read as the number type ``kind``, NULL where it reads none: TRY_CAST here
        (DuckDB reads 5_000 as 5000 and 1. as BIGINT 1); a backend whose cast reads otherwise
        makes it read the text ``_exactly_read`` allows as this one does."""
        return exp.TryCast(this=value, to=exp.DataType.build(kind, dialect=self.dialect), safe=True)

    def _unusual(self, value: exp.Expression, plain: exp.Expression) -> exp.Expression:
        """A value that is no plain number yet the engine reads as a finite one (NaN and ±inf are
        left to their own check: NaN is above infinity in both engines' order)."""
        return exp.and_(exp.Not(this=plain.copy()), _finite(self.read_number(value.copy(), "DOUBLE")))

    def _changed(self, value: exp.Expression, exact: exp.Expression, kind: str) -> exp.Expression:
        """A value of a column declared ``kind`` not written as that type reads it exactly, that the
        type reads all the same (0x10 as BIGINT 16, Spark's 1d as DOUBLE) or that reads as a finite
        DOUBLE (3000.5, which BIGINT rounds; 1e3, which BIGINT may or may not read). A value nothing
        reads is left to the typed read, which fails (with its line on DuckDB; counted on Spark)."""
        read = exp.Not(this=exp.Is(this=self.read_number(value.copy(), kind), expression=exp.Null()))
        changed = exp.and_(exp.Not(this=exact.copy()), exp.or_(read, _finite(self.read_number(value.copy(), "DOUBLE"))))
        if kind != "DOUBLE":
            return changed
        # A plain number past DOUBLE's range (1e400) reads as ±inf, and a nonzero one below its least
        # (1e-400) as 0: values no row holds.
        plain = exp.RegexpLike(this=value.copy(), expression=exp.Literal.string(rf"^\s*[+-]?{_DOUBLE_NUMBER}\s*$"))
        nonzero = exp.RegexpLike(this=value.copy(), expression=exp.Literal.string(r"^\s*[+-]?[0_.]*[1-9]"))
        read_as = self.read_number(value.copy(), kind)
        lost = exp.or_(exp.Not(this=_finite(read_as)), exp.and_(nonzero, exp.EQ(this=read_as.copy(),
                                                                                 expression=exp.Literal.number(0))))
        return exp.or_(changed, exp.and_(plain, lost))

    def fetch_and_keep(self, name: str, query: exp.Expression | str) -> pa.Table:
        """Run a query, keep its result engine-side under ``name`` (replacing an earlier one) and
        return it as Arrow: one operation, so a remote engine need not ship the result back."""
        result = self.fetch(query)
        self.register(name, result)
        return result

    def keep(self, name: str, query: exp.Expression, append: bool = False) -> None:
        """Run a query and keep its result engine-side as table ``name`` (replacing an earlier one,
        or with ``append`` adding to it); nothing comes back. Only where ``keeps_levels``. The
        query is the engine's to render in place: callers build it for this one statement."""
        raise NotImplementedError(f"the {self.name} engine does not keep results engine-side")

    def rename(self, old: str, new: str) -> None:
        """A table made by ``keep`` takes the name ``new``, replacing what had it."""
        raise NotImplementedError(f"the {self.name} engine does not keep results engine-side")

    def class_numbers(self, keys: Sequence[exp.Expression]) -> exp.Expression:
        """A number per class of grouped rows, equal within a class (its ``keys``: QI values, NULL
        one of them) and different between classes, not necessarily dense (Spark's are not). Here
        DENSE_RANK over the keys: one sort of every row, which DuckDB runs on all its threads."""
        return dense_rank(keys)

    @contextmanager
    def texts_in_utc(self) -> Iterator[None]:
        """Statements in the block give a TIMESTAMP WITH TIME ZONE's text in UTC, on the Gregorian
        calendar, whatever the session says: what a digest or a fingerprint hashes is then the same
        on every session and machine. A backend whose statements all run in UTC (Spark's:
        ``SparkEngine._statement_zone``) need do nothing."""
        yield

    @contextmanager
    def texts_in_session_zone(self) -> Iterator[None]:
        """Statements in the block give a TIMESTAMP WITH TIME ZONE's text in the session's zone, where
        the backend's statements give it in UTC otherwise (Spark's: ``instants_as_written``). A
        backend whose statements follow the session need do nothing."""
        yield

    def instants_in_utc(self, texts: list[str], source: exp.Expression, column: str) -> list[str]:
        """``texts`` of ``column``'s ``TIMESTAMP WITH TIME ZONE`` values in ``source`` as this engine's
        statements write them, each as DuckDB writes its instant in UTC (``1980-01-01 00:00:00+00``), in
        order; a text no value has (a NULL's stand-in) as it is. A backend whose text of such a value is
        that already returns them as they are."""
        return texts

    def instants_as_written(self, texts: list[str], source: exp.Expression, column: str) -> list[str]:
        """``texts`` of ``column``'s ``TIMESTAMP WITH TIME ZONE`` values in ``source`` as this engine's
        statements write them, each as text that names its instant in the session's zone, offset and all, as
        DuckDB writes it (``1979-12-31 19:00:00-05``), in order; a text no value has as it is. What GAA
        writes as a value's label, and the text the dates rule reads its day from. A backend whose text
        of such a value has its offset (DuckDB's) returns them as they are."""
        return texts

    def _texts_renamed(self, texts: list[str], pairs: exp.Expression, named: exp.Expression, utc: bool) -> list[str]:
        """``texts`` (a column's values as the engine's statements write them), each as ``named`` writes its instant,
        in order: ``pairs`` gives each value's text ``t`` its instant's microseconds ``us``; ``named`` is
        an expression of ``m.us``, read under ``texts_in_utc`` when ``utc``, else ``texts_in_session_zone``
        (``pairs`` is made a table before that, its texts the engine's own). A text ``pairs`` lacks (a
        NULL's stand-in) stays as it is. Shared by the backends' ``instants_in_utc`` and
        ``instants_as_written``, which match a text to its instant by value, not by reading the text back."""
        mapped = self.create_temp_table(self.temp_name("instants"), pairs)
        given = self.temp_name("instant_texts")
        self.register(given, pa.table({"t": pa.array(texts, pa.string()), "i": pa.array(range(len(texts)))}))
        try:
            query = exp.select(exp.alias_(exp.Coalesce(this=named, expressions=[exp.column("t", "g")]), "t")) \
                .from_(exp.alias_(exp.Table(this=exp.to_identifier(given, quoted=True)), "g")).join(
                exp.alias_(mapped, "m"), on=exp.EQ(this=exp.column("t", "g"), expression=exp.column("t", "m")),
                join_type="left").order_by(exp.column("i", "g"))
            with self.texts_in_utc() if utc else self.texts_in_session_zone():
                found = self.fetch(query)
        finally:
            self.unregister(given)
            self.unregister(mapped.name)
        return found.column("t").to_pylist()

    # ---- hooks each backend implements ----------------------------------------------------
    @abstractmethod
    def row_hash(self, alias: str, secret: exp.Expression) -> exp.Expression:
        """A hash of the operator's ``secret`` (a bound parameter) and a whole row of the relation
        aliased ``alias``, of a type that SUM over many rows cannot overflow (the keyed input
        fingerprint sums it). No two engines share a hash."""

    @abstractmethod
    def value_hash(self, value: exp.Expression, as_is: bool = False) -> exp.Expression:
        """A 64-bit hash of one value, as text unless ``as_is``: never NULL, and
        a NULL's apart from every value's. A small lookup's labels can be hashed once per label and
        carried through its join (the truth test's generalized input) instead of once per row."""

    def keys_of_hashes(self, hashes: Sequence[exp.Expression]) -> tuple[exp.Expression, exp.Expression]:
        """Two 64-bit keys of a row whose values are already hashed (``value_hash``), in their order:
        the hash of those hashes (``hash_of_hashes``) and that hash hashed again (``rehash``). The
        re-check's truth test compares rows by them (a key that tells NULL from any value). Each
        value is hashed as text, so that the key does not depend on the columns' types, except where
        the caller knows a column has one type on both sides compared (``hashed_as_is``)."""
        key = self.hash_of_hashes(hashes)
        return key, self.rehash(key.copy())

    @abstractmethod
    def hash_of_hashes(self, hashes: Sequence[exp.Expression]) -> exp.Expression:
        """A 64-bit hash of a row's value hashes, in their order: the row's first key."""

    @abstractmethod
    def rehash(self, key: exp.Expression) -> exp.Expression:
        """A 64-bit hash of a row's first key: its second key. A function of the first, so the keys
        tell rows apart as the first does (64 bits); summed over many rows the second sum is a
        check apart from the first (``verify_row_sums``). It hashes one value where a hash of the
        row's hashes in the other order hashed them all again (0.67 → 0.57 s at 10 M rows,
        seventy-ninth round)."""

    def crossed_in_one_job(self, query: exp.Select) -> exp.Select:
        """``query``, a CROSS JOIN of subqueries of one row each (``verify_row_sums``), as this engine
        computes both sides in one pass of work. By default as it is."""
        return query

    def looked_up(self, select: exp.Select, lookup: exp.Expression, alias: str, leaf: str,
                  key: Callable[[], exp.Expression], bind: Callable[[Any], exp.Expression],
                  outer: bool) -> exp.Select | None:
        """``select`` with a lookup's columns readable under ``alias`` without joining the lookup, or
        None: the caller joins it (``queries.join_lookup``), the default. ``lookup``: a table
        registered here, or a SELECT of expressions over its columns; ``leaf``: its column of leaf
        texts, unique; ``key``: makes the row's value as the text a leaf is (a NULL as its stand-in;
        made only if used, as it may bind one);
        ``bind``: a value as a bound parameter; ``outer``: a row whose key is no leaf is kept (its
        lookup columns NULL), else dropped, as a LEFT or an inner join."""
        return None

    @staticmethod
    def hashed_as_is(written: pa.DataType, generalized: pa.DataType) -> bool:
        """Whether ``value_hash`` may hash a column as it is: the same type on both sides, one whose
        equal values have equal texts and unequal ones unequal texts (not floats: -0.0 = 0.0)."""
        return written == generalized and any(test(written) for test in _EXACT_TYPES)

    @abstractmethod
    def _run(self, sql: str, params: Sequence[Any] | None) -> pa.Table: ...

    def _run_small(self, sql: str, params: Sequence[Any] | None) -> pa.Table:
        """``_run`` for a result of a row or none (``fetch_row``, ``schema``): a backend may take a
        path with less fixed cost per query, one that would cost more on many rows."""
        return self._run(sql, params)

    def _schema(self, sql: str, params: Sequence[Any] | None) -> pa.Schema:
        """The Arrow schema of ``sql``'s result (``LIMIT 0``): a backend that can type it without
        running it says so here."""
        return self._run_small(sql, params).schema

    @abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] | None) -> None: ...

    @abstractmethod
    def create_temp_table(self, name: str, query: exp.Expression, params: Sequence[Any] = (),
                          owned: bool = False) -> exp.Table:
        """Materialize a query as a temporary table dropped by ``close``; return its AST. ``owned``:
        the caller built ``query`` for this table alone (``render``: rendered without a copy)."""

    def create_temp_view(self, name: str, query: exp.Expression) -> exp.Table:
        """A query readable by name, computed where it is read, dropped by ``close``: by default
        materialized as a temporary table (an engine with views of its own overrides it)."""
        return self.create_temp_table(name, query)

    @abstractmethod
    def register(self, name: str, table: pa.Table) -> None:
        """Expose an Arrow table (aggregated counts, plans, small lookups) to SQL under ``name``."""

    def load(self, name: str, table: pa.Table) -> None:
        """Copy an Arrow table into the engine as ``name``, for tables joined against every input
        row (lookups): a table the engine holds has the statistics its planner sizes joins by.
        ``unregister`` drops it. By default the same as ``register``."""
        self.register(name, table)

    @abstractmethod
    def unregister(self, name: str) -> None:
        """Drop a registered or loaded table; unknown names are ignored."""

    @abstractmethod
    def source_relation(self, read: FileRead) -> exp.Expression:
        """Make a file or database table readable by SQL; return the AST to select FROM. A path is
        literal (a file named ``data[1].csv`` is read as itself) unless ``read.glob``."""

    @abstractmethod
    def copy_to_parquet(self, query: exp.Expression, path: Path, params: Sequence[Any] = ()) -> None:
        """Write the query's result to ``path`` as Parquet (a file in DuckDB, a folder in Spark)."""

    @abstractmethod
    def copy_to_parquet_folder(self, query: exp.Expression, path: Path, params: Sequence[Any] = (),
                               partition_by: Sequence[str] = (), rows: int | None = None) -> None:
        """Write the query's result to the new folder ``path`` as Parquet part files, in the
        query's row order, with deterministic file names (``part-…``; no run-specific token) and
        nothing else (no marker or checksum files); ``partition_by`` columns become Hive-style
        ``col=value`` folders (NULL: ``__HIVE_DEFAULT_PARTITION__``) and leave the files. ``rows``,
        the query's row count when the caller knows it, lets an engine write a large result as
        several part files in parallel, each in the query's order and chosen by the rows' own
        values (never by the input's order)."""

    def dictionary_type(self, values: exp.Select) -> exp.DataType | None:
        """A text type whose values are those of ``values`` (a query of one text column), sorted as
        text sorts and stored as small integer codes, for a Parquet write: DuckDB's ENUM, written as
        Parquet text without a dictionary built row by row. None where the engine has none (the
        column stays text): only speed depends on it, never a written value or the rows' order."""
        return None

    def packed_sort_key(self, columns: Sequence[PackedColumn], source: exp.Expression) -> PackedKey | None:
        """One integer of the first ``columns`` a release is sorted by (those of ``source`` as they are
        there, ranged over its rows), that orders rows as those columns do or ties them: sorted by
        first, it can speed a sort and never changes its order; with the columns it holds whole.
        None (the default) where the engine has no use for one."""
        return None

    def is_nan(self, value: exp.Expression) -> exp.Expression:
        """The test of NaN in this engine's SQL."""
        return exp.Anonymous(this="ISNAN", expressions=[value.copy()])

    def has_minus_sign(self, value: exp.Expression) -> exp.Expression:
        """Whether a float (-0.0, NaN) is written with a minus sign: by its text here."""
        return exp.Like(this=exp.Cast(this=value.copy(), to=exp.DataType.build("VARCHAR")),
                        expression=exp.Literal.string("-%"))

    def plain_text_columns(self, relation: exp.Expression, columns: Sequence[str]) -> list[str]:
        """Of ``columns``, those of ``relation`` of the engine's plain text type, whose values are
        their text: here every column Arrow gives as text (an engine whose other types also reach
        Arrow as text, DuckDB's UUID and JSON, tells them apart)."""
        schema = self.schema(relation)
        return [c for c in columns if pa.types.is_string(schema.field(c).type)
                or pa.types.is_large_string(schema.field(c).type)]

    def parquet_unkept_columns(self, query: exp.Expression, params: Sequence[Any] = ()) -> dict[str, str]:
        """The columns of ``query`` whose values this engine's Parquet writer does not keep, with
        their type's name (none here)."""
        return {}

    def unordered_columns(self, query: exp.Expression, params: Sequence[Any] = ()) -> dict[str, str]:
        """The columns of ``query`` whose values this engine cannot sort, with their type's name: a
        release is written and returned in an order of its values alone (none here)."""
        return {}

    def unkept_refusal(self, name: str, kind: str) -> tuple[str, str] | None:
        """Why a column ``parquet_unkept_columns`` or ``unordered_columns`` names is refused, and what to
        do, where the engine says it itself; None for the writers' words (a DuckDB type, a [source]
        query's cast)."""
        return None

    def refuse_invalid_text(self, relation: exp.Expression, columns: Sequence[str], label: str) -> None:
        """Refuse (``SourceDataError``) text that is not UTF-8 in ``columns`` of a source's
        ``relation``, on an engine that reads such bytes as they are; nothing here (DuckDB refuses
        it as it reads it)."""
        return None

    def dictionary_columns(self, relation: exp.Expression, columns: Sequence[str]) -> list[str]:
        """Of ``columns``, those of ``relation`` a dictionary type (``dictionary_type``) may stand
        for: of the engine's plain text type, sorted as text sorts; none on an engine without them."""
        return []

    @contextmanager
    def objects_made(self) -> Iterator[list[Any]]:
        """The temporary objects (tables, types, …) made inside the block and still there at its
        end, listed on leaving it, for ``drop_objects``: what one write made for itself alone.
        Empty on an engine that lists none (``close`` drops what it made)."""
        yield []

    def drop_objects(self, objects: Sequence[Any]) -> None:  # noqa: B027 - optional hook
        """Drop objects ``objects_made`` listed, newest first (a table before the type it holds);
        those already dropped are passed over."""

    @abstractmethod
    def read_parquet(self, path: Path) -> exp.Expression:
        """The AST that reads a Parquet file (or folder) back (for verification). A folder is read
        whole, with Hive-style partition columns as text (after the files' columns)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        pass

    # Set by ``close``: what the engine made (and its own connection) is gone.
    closed: bool = False


@contextmanager
def leaves_as_found(engine: Engine | None) -> Iterator[None]:
    """A block run on an engine the caller gave (``check``, ``sweep``) leaves it as it found it:
    what the block made there is dropped at its end, however it ends. Without one, a no-op (the
    block's own engine is closed by the block)."""
    if engine is None:
        yield
        return
    made: list[Any] = []
    try:
        with engine.objects_made() as made:
            yield
    finally:
        engine.drop_objects(made)


def key_value(value: exp.Expression, as_is: bool, text: str) -> exp.Expression:
    """The value ``Engine.value_hash`` hashes: cast to the dialect's ``text`` type, or as it is."""
    return value.copy() if as_is else exp.Cast(this=value.copy(), to=exp.DataType.build(text))


def dense_rank(keys: Sequence[exp.Expression], partition: exp.Expression | None = None) -> exp.Expression:
    """DENSE_RANK over ``keys`` (NULLs last; a spec has at least one QI), within ``partition`` if given."""
    order = exp.Order(expressions=[exp.Ordered(this=k.copy(), desc=False, nulls_first=False) for k in keys])
    return exp.Window(this=exp.DenseRank(), partition_by=[partition] if partition is not None else None,
                      order=order, over="OVER")


def _numbered(node: exp.Expression) -> bool:
    return isinstance(node, exp.Placeholder) and node.name.isdigit()
