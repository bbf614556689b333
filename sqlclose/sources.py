"""Opening a source: a path, a (connection, table) pair, an Arrow table or a pandas DataFrame
becomes a relation an engine can select FROM, plus a label for messages.

Reading is literal and declared: a path is one file unless the spec says ``glob = true``; CSV
columns are read as the text they are; a header naming a column twice is refused (DuckDB would
rename the copy, and an identifier's copy would be published). Driver errors are re-worded so
that no raw record reaches a message (CSV errors quote the offending line).
"""

from __future__ import annotations

import csv
import glob as globbing
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import ValidationError
from sqlglot import exp

from . import queries as q
from .engine import DuckDBEngine, Engine
from .engine.base import FileRead
from .errors import InputError
from .spec import Source

SourceLike = Any  # path | (connection, table) | pyarrow.Table | pandas.DataFrame | None (spec's)

_DB_SUFFIXES = {".duckdb": "duckdb", ".db": "duckdb", ".ddb": "duckdb"}


@dataclass(frozen=True)
class ReadOptions:
    """How to read a bare path: the spec's [source] options, or check's --table/--delimiter.
    ``numeric``: columns read as numbers from a CSV (ordered sensitive columns)."""

    table: str | None = None
    delimiter: str | None = None
    format: str | None = None
    glob: bool = False
    encoding: str = "utf-8"
    nulls: tuple[str, ...] = ("",)
    types: dict[str, str] = field(default_factory=dict)
    numeric: tuple[str, ...] = ()

    @classmethod
    def of(cls, source: Source | None, numeric: tuple[str, ...] = ()) -> ReadOptions:
        if source is None:
            return cls(numeric=numeric)
        return cls(source.table, source.delimiter, source.format, source.glob, source.encoding,
                   tuple(source.nulls), dict(source.types), numeric)


@dataclass
class Opened:
    """A readable source: its engine, the relation to select FROM, a label, the files it reads."""

    engine: Engine
    relation: exp.Expression
    label: str
    files: list[Path] = field(default_factory=list)


def open_source(source: SourceLike, engine: Engine | None, options: ReadOptions = ReadOptions()) -> Opened:
    """Make ``source`` readable by SQL. On failure, an engine made here is closed; a caller's is not."""
    if isinstance(source, (str, Path)):
        source = _source_for_path(Path(source), options)
    if isinstance(source, Source):
        return _open_file(source, engine, options)
    if _is_connection_pair(source):
        if engine is not None:
            raise InputError("give either an engine or a (connection, table) source, not both")
        con, name = source
        engine = DuckDBEngine(con)
        relation = exp.Table(this=q.ident(name)) if isinstance(name, str) else \
            exp.Table(this=q.ident(name[-1]), db=q.ident(name[0]))
        _check_table(engine, relation, f"table {name!r}")
        return Opened(engine, relation, f"duckdb table {name}")
    if type(source).__module__.startswith("pandas"):
        source = pa.Table.from_pandas(source, preserve_index=False)
    if isinstance(source, pa.Table):
        _refuse_duplicates(source.schema.names, "the Arrow table")
        own = engine is None
        engine = engine or DuckDBEngine()
        name = engine.temp_name("arrow_source")
        try:
            engine.register(name, source)
        except BaseException:
            if own:
                engine.close()
            raise
        return Opened(engine, q.table(name), "arrow table")
    raise InputError(f"cannot read a source of type {type(source).__name__}: give a path, (connection, table), "
                     "a pyarrow Table or a pandas DataFrame")


def _is_connection_pair(source: Any) -> bool:
    return isinstance(source, tuple) and len(source) == 2 and DuckDBEngine.is_connection(source[0])


def _open_file(source: Source, engine: Engine | None, options: ReadOptions) -> Opened:
    files = _files(source)
    kind = source.kind
    label = str(source.path) + (f" (table {source.table})" if source.table else "")
    folder = source.path.is_dir() and not source.is_pattern
    path = source.path / "**" / "*.parquet" if folder else source.path
    if folder and any(ch in "*?[]{}" for ch in str(source.path)):
        raise InputError(f"source folder {source.path} has a glob character in its name; rename it")
    read = FileRead(kind, path, source.table, source.delimiter, source.glob or folder, source.encoding,
                    tuple(source.nulls), dict(source.types), options.numeric)
    own = engine is None
    engine = engine or DuckDBEngine()
    try:
        if kind == "csv":
            _refuse_csv_duplicates(engine, read, files)
        elif kind == "parquet":
            for f in files:
                _refuse_duplicates(_parquet_names(f), str(f))
        try:
            relation = engine.source_relation(read)
        except Exception as e:  # the driver's own words say what is wrong with the file (records removed)
            raise InputError(f"cannot read {label} as {kind}: {driver_message(e)}") from None
        if kind == "duckdb":
            _check_table(engine, relation, f"table {source.table!r} in {source.path}")
    except BaseException:
        if own:
            engine.close()
        raise
    return Opened(engine, relation, label, files)


def _files(source: Source) -> list[Path]:
    """The files a source reads: its path, every file of a folder, or (glob = true) the matches."""
    if source.is_pattern:
        matches = sorted(Path(p) for p in globbing.glob(str(source.path), recursive=True) if Path(p).is_file())
        if not matches:
            raise InputError(f"source pattern {source.path} matches no file")
        return matches
    if not source.path.exists():
        raise InputError(f"source {source.path} does not exist")
    if source.path.is_dir():
        files = sorted(p for p in source.path.rglob("*.parquet") if p.is_file())
        if source.kind != "parquet" or not files:
            raise InputError(f"source {source.path} is a folder; a folder source must hold .parquet files "
                             "(set format = \"parquet\")")
        return files
    return [source.path]


def _source_for_path(path: Path, options: ReadOptions) -> Source:
    """A path given on its own takes the reading options (format, delimiter, table) that apply to it."""
    fmt = options.format if options.format and not path.suffix else None
    is_db = (fmt or _DB_SUFFIXES.get(path.suffix.lower())) == "duckdb"
    csv_only = {} if is_db or (fmt or path.suffix.lower()) in ("parquet", ".parquet", ".pq") else \
        {"encoding": options.encoding, "nulls": list(options.nulls), "types": options.types}
    try:
        return Source(path=path, format=fmt, delimiter=None if is_db else options.delimiter,
                      table=options.table if is_db else None, glob=options.glob and not is_db, **csv_only)
    except ValidationError as e:
        raise InputError(f"source {path}: {e.errors()[0]['msg'].removeprefix('Value error, ')}") from None


def _check_table(engine: Engine, relation: exp.Expression, label: str) -> None:
    try:
        engine.schema(relation)
    except Exception as e:
        raise InputError(f"cannot read {label}: {driver_message(e)}") from None


def _refuse_duplicates(names: list[str], where: str) -> None:
    twice = sorted(name for name, n in Counter(names).items() if n > 1)
    if twice:
        raise InputError(f"{where} names column(s) {', '.join(repr(n) for n in twice)} more than once; a copy would "
                         "be released under another name (say, an identifier's copy): rename or remove the duplicates")


def _refuse_csv_duplicates(engine: Engine, read: FileRead, files: list[Path]) -> None:
    """DuckDB renames a repeated header name (ssn → ssn_1): read the header line as written."""
    try:
        delimiter = engine.csv_delimiter(read)
    except Exception as e:
        raise InputError(f"cannot read {read.path} as csv: {driver_message(e)}") from None
    for f in files:
        try:
            with f.open(newline="", encoding=read.encoding) as handle:
                header = next(csv.reader(handle, delimiter=delimiter), [])
        except UnicodeDecodeError as e:
            raise InputError(f"cannot read {f} as csv: not {read.encoding} text (byte {e.start} of the header); "
                             "set [source] encoding") from None
        _refuse_duplicates([h.strip() for h in header], str(f))


def _parquet_names(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    try:
        return pq.read_schema(path).names
    except Exception as e:
        raise InputError(f"cannot read {path} as parquet: {str(e).splitlines()[0]}") from None


_FIXES = re.compile(r"\n\s*(Possible fixes|Possible Solution|  file =|-- while running:).*", re.S)


def driver_message(error: BaseException) -> str:
    """A driver error in a few words, with any quoted record removed: DuckDB's CSV errors print the
    offending line (``Original Line: …``), which would put a person's record in a job log."""
    text = _FIXES.sub("", str(error))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("Original Line")]
    return "; ".join(lines) or type(error).__name__
