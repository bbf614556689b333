"""The Python entry points: ``anonymize`` a source under a spec."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from pydantic import ValidationError
from sqlglot import exp

from . import queries as q
from .engine import DuckDBEngine, Engine
from .errors import InputError, NoSolutionError, SpecError
from .privacy import criteria_for
from .problem import prepare
from .release import Release
from .search import incognito
from .spec import Source, Spec, build_spec, load_spec

SourceLike = Any  # path | (connection, table) | pyarrow.Table | pandas.DataFrame | None (spec's)


def anonymize(source: SourceLike, spec: Spec | str | Path | dict, *, engine: Engine | None = None,
              on_progress: Callable[[int], None] | None = None) -> Release:
    """Find the optimal full-domain generalization of ``source`` that satisfies ``spec``.

    ``source`` is a path (Parquet, CSV, DuckDB file with the spec's table), a
    ``(duckdb connection, table name)`` pair, a pyarrow Table or a pandas DataFrame; ``None``
    takes the spec's ``[source]``. Raises ``NoSolutionError`` when no node satisfies.
    """
    started = time.perf_counter()
    spec = _as_spec(spec)
    if source is None:
        if spec.source is None:
            raise SpecError("no source given: pass one, or add a [source] section with path = \"…\" to the spec")
        source = spec.source
    given = engine
    engine, relation, label = _open(source, engine, ReadOptions.of(spec.source))
    try:
        timings = {}
        problem = prepare(engine, relation, spec, label)
        timings["prepare_seconds"] = time.perf_counter() - started
        criteria = criteria_for(spec.k, problem.sas)
        if spec.k > problem.rows:
            raise NoSolutionError(f"k = {spec.k} is larger than the table ({problem.rows} rows): no "
                                  "generalization can make classes that big; lower k")
        result = incognito(problem, criteria, on_progress)
        timings["search_seconds"] = result.seconds
        if result.optimum is None:
            raise NoSolutionError(_no_solution_message(spec, problem.rows, result.lattice_size))
    except BaseException:
        if given is None:
            engine.close()  # temp objects (and our own connection) go; a caller's connection stays
        raise
    return Release(problem, result, criteria, spec.sha256(), label, timings, owns_engine=given is None)


def _as_spec(spec: Spec | str | Path | dict) -> Spec:
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, (str, Path)):
        return load_spec(spec)
    if isinstance(spec, dict):
        return build_spec(spec)
    raise SpecError(f"spec must be a Spec, a TOML path or a dict, not {type(spec).__name__}")


@dataclass(frozen=True)
class ReadOptions:
    """How to read a bare path: the spec's [source] options, or check's --table/--delimiter."""

    table: str | None = None
    delimiter: str | None = None
    format: str | None = None

    @classmethod
    def of(cls, source: Source | None) -> ReadOptions:
        return cls(source.table, source.delimiter, source.format) if source else cls()


def _open(source: SourceLike, engine: Engine | None,
          options: ReadOptions = ReadOptions()) -> tuple[Engine, exp.Expression, str]:
    """Make ``source`` readable by SQL: (engine, relation to select FROM, label for messages)."""
    if isinstance(source, (str, Path)):
        source = _source_for_path(Path(source), options)
    if isinstance(source, Source):
        if not source.path.exists():
            raise InputError(f"source {source.path} does not exist")
        engine = engine or DuckDBEngine()
        label = str(source.path) + (f" (table {source.table})" if source.table else "")
        try:
            relation = engine.source_relation(source.kind, source.path, delimiter=source.delimiter,
                                              table=source.table)
        except Exception as e:  # the driver's own words say what is wrong with the file
            engine.close()
            detail = str(e).split("\n-- while running:")[0]
            raise InputError(f"cannot read {label} as {source.kind}: {detail}") from None
        if source.kind == "duckdb":
            _check_table(engine, relation, f"table {source.table!r} in {source.path}")
        return engine, relation, label
    if isinstance(source, tuple) and len(source) == 2 and isinstance(source[0], duckdb.DuckDBPyConnection):
        if engine is not None:
            raise InputError("give either an engine or a (connection, table) source, not both")
        con, name = source
        engine = DuckDBEngine(con)
        relation = exp.Table(this=q.ident(name)) if isinstance(name, str) else \
            exp.Table(this=q.ident(name[-1]), db=q.ident(name[0]))
        _check_table(engine, relation, f"table {name!r}")
        return engine, relation, f"duckdb table {name}"
    if type(source).__module__.startswith("pandas"):
        source = pa.Table.from_pandas(source, preserve_index=False)
    if isinstance(source, pa.Table):
        engine = engine or DuckDBEngine()
        name = engine.temp_name("arrow_source")
        engine.register(name, source)
        return engine, q.table(name), "arrow table"
    raise InputError(f"cannot read a source of type {type(source).__name__}: give a path, (connection, table), "
                     "a pyarrow Table or a pandas DataFrame")


def _source_for_path(path: Path, options: ReadOptions) -> Source:
    """A path given on its own takes the reading options (format, delimiter, table) that apply
    to it."""
    suffix_kind = {".duckdb": "duckdb", ".db": "duckdb", ".ddb": "duckdb"}.get(path.suffix.lower())
    fmt = options.format if options.format and not path.suffix else None
    is_db = (fmt or suffix_kind) == "duckdb"
    try:
        return Source(path=path, format=fmt, delimiter=None if is_db else options.delimiter,
                      table=options.table if is_db else None)
    except ValidationError as e:
        raise InputError(f"source {path}: {e.errors()[0]['msg'].removeprefix('Value error, ')}") from None


def _check_table(engine: Engine, relation: exp.Expression, label: str) -> None:
    try:
        engine.schema(relation)
    except Exception as e:
        raise InputError(f"cannot read {label}: {str(e).splitlines()[0]}") from None


def _no_solution_message(spec: Spec, rows: int, size: int) -> str:
    parts = [f"k = {spec.k}"] + [f"{', '.join(s.models)} on {name!r}" for name, s in spec.sensitive.items()]
    return (f"no generalization satisfies {', '.join(parts)} with suppression ≤ {spec.suppression:.1%} "
            f"(searched the lattice of {size} nodes over {rows} rows); relax t or k, allow more suppression, "
            "or add hierarchy levels")
