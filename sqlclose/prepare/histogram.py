"""The warehouse path's input: the histogram the warehouse computed and exported.

``sqlclose sql`` prints the query (``histogram_sql``); the warehouse runs it and exports the
result as Parquet (or CSV). That file — counts per combination of quasi-identifier and sensitive
values, no rows — is loaded into a local DuckDB and validated (its columns, a count column of
whole numbers ≥ 1; NULLs are judged by the spec's NULL policies as for any source), then
``problem.prepare`` reads it as the scan's result: hierarchies built by rule from its distinct
values, leaves checked, codes assigned, exactly as for a table.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.engine.base import FileRead
from sqlclose.errors import DataError, InputError, SpecError
from sqlclose.model.spec import Source, Spec
from sqlclose.prepare.problem import Problem, prepare
from sqlclose.prepare.sources import Opened, open_source
from sqlclose.sql import queries as q
from sqlclose.sql import warehouse as wh

HISTOGRAM_SUFFIXES = (".parquet", ".pq", ".csv")


def warehouse_source(spec: Spec) -> Source:
    """The spec's warehouse table, or an error saying how to name one."""
    if spec.source is None or spec.source.kind != "warehouse":
        raise SpecError("the warehouse path needs a [source] that names the warehouse table: format = \"warehouse\", "
                        "table = \"schema.table\" (and dialect = \"postgres\", … ; see docs/warehouse.md)")
    return spec.source


def not_read_here(source: Source) -> SpecError:
    """The error for running the local path on a warehouse table."""
    return SpecError(f"the source is the warehouse table {source.table}, which sqlclose does not read: run "
                     "`sqlclose sql SPEC` there, export the result, then `sqlclose anonymize --histogram FILE SPEC` "
                     "(docs/warehouse.md)")


def dialect_of(spec: Spec, given: str | None) -> str:
    """The dialect asked for, else the spec's [source] dialect."""
    dialect = given or warehouse_source(spec).dialect
    if dialect is None:
        raise SpecError("which SQL dialect? pass --dialect (duckdb, spark, postgres, snowflake, bigquery, trino) or "
                        "set [source] dialect = \"…\"")
    return dialect


def scanned_columns(spec: Spec) -> list[q.CodedColumn]:
    """The columns the histogram counts: quasi-identifiers (as text), then sensitive columns
    (ordered ones as numbers)."""
    qis = [q.CodedColumn(name, name, f"q{i}", "") for i, name in enumerate(spec.quasi_identifiers)]
    sas = [q.CodedColumn(name, name, f"s{j}", "", typed=s.distance == "ordered")
           for j, (name, s) in enumerate(spec.sensitive.items())]
    return qis + sas


def histogram_sql(spec: Spec, dialect: str | None = None) -> str:
    """The one query the warehouse runs for the search, in its dialect."""
    source = warehouse_source(spec)
    query = wh.histogram(wh.warehouse_table(source.table_parts), scanned_columns(spec))
    return wh.render(query, dialect_of(spec, dialect))


def table_columns(spec: Spec) -> list[str]:
    """The warehouse table's columns as the spec lists them; unlisted, the declared ones (then
    the release holds only quasi-identifiers and sensitive columns)."""
    source = warehouse_source(spec)
    if source.columns is not None:
        return list(source.columns)
    if spec.others == "keep":
        raise SpecError("others = \"keep\" releases the table's other columns, but sqlclose cannot see a warehouse "
                        "table: list its columns in [source] columns = [\"…\", …]")
    return list(spec.declared_columns)


def open_histogram(path: Path, spec: Spec) -> Opened:
    """The exported histogram in a local DuckDB, its columns and counts checked."""
    path = Path(path)
    if path.suffix.lower() not in HISTOGRAM_SUFFIXES:
        raise InputError(f"the histogram {path} should be the warehouse's export as .parquet (or .csv)")
    ordered = tuple(name for name, s in spec.sensitive.items() if s.distance == "ordered")
    opened = open_source(path, None, FileRead(types={wh.COUNT_COLUMN: "BIGINT"}, numeric=ordered))
    try:
        label = f"the histogram {path}"
        _check_columns(opened.engine.schema(opened.relation), spec, label)
        _check_counts(opened.engine, opened.relation, label)
    except BaseException:
        opened.engine.close()
        raise
    return opened


def prepare_histogram(opened: Opened, spec: Spec) -> Problem:
    """The problem, read from the histogram instead of the table's rows (no input fingerprint:
    the rows never left the warehouse)."""
    return prepare(opened.engine, opened.relation, spec, opened.label, None, counts=wh.COUNT_COLUMN,
                   table_columns=table_columns(spec))


def _check_columns(schema: pa.Schema, spec: Spec, label: str) -> None:
    expected = [c.name for c in scanned_columns(spec)] + [wh.COUNT_COLUMN]
    found = schema.names
    missing = [c for c in expected if c not in found]
    extra = [c for c in found if c not in expected]
    listed = ", ".join(repr(c) for c in found)
    if missing:
        raise DataError(f"{label} has no column {missing[0]!r} (its columns: {listed}); it must hold exactly the "
                        f"columns of `sqlclose sql` for this spec: {', '.join(repr(c) for c in expected)}")
    if extra:
        raise DataError(f"{label} has column(s) the spec does not count: {', '.join(repr(c) for c in extra)}; "
                        "export the result of `sqlclose sql` for this spec unchanged")
    kind = schema.field(wh.COUNT_COLUMN).type
    whole = pa.types.is_integer(kind) or (pa.types.is_decimal(kind) and kind.scale == 0)
    if not whole:
        raise DataError(f"{label}: its count column {wh.COUNT_COLUMN!r} is {kind}, not whole numbers; export "
                        "COUNT(*) as an integer")


def _check_counts(engine: Engine, relation: exp.Expression, label: str) -> None:
    count = q.col(wh.COUNT_COLUMN)

    def rows_where(condition: exp.Expression, name: str) -> exp.Expression:
        flag = exp.If(this=condition, true=exp.Literal.number(1), false=exp.Literal.number(0))
        return exp.alias_(exp.Coalesce(this=exp.Sum(this=flag), expressions=[exp.Literal.number(0)]), name)

    query = exp.select(rows_where(exp.Is(this=count.copy(), expression=exp.Null()), "nulls"),
                       rows_where(exp.LT(this=count.copy(), expression=exp.Literal.number(1)), "below")
                       ).from_(relation.copy())
    found = engine.fetch(query).to_pylist()[0]
    if found["nulls"]:
        raise DataError(f"{label}: {found['nulls']} row(s) have no count ({wh.COUNT_COLUMN!r} is NULL); export the "
                        "result of `sqlclose sql` unchanged")
    if found["below"]:
        raise DataError(f"{label}: {found['below']} row(s) have a count below 1 ({wh.COUNT_COLUMN!r} negative or "
                        "zero); a histogram counts rows: export the result of `sqlclose sql` unchanged")
