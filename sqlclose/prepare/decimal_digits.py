"""DECIMAL values of more digits than their column's precision: refused by column and source.

Arrow's decimal128 and Parquet's DECIMAL store a value in more bits than its precision needs, and
nothing but a full validation checks that the value fits: DuckDB's own ``.to_arrow_table()`` gives
a UHUGEINT of 2^127 as a DECIMAL(38, 0) holding -2^127, 39 digits. DuckDB reads such a value as it
is. Its text then failed inside DuckDB ("Negation of HUGEINT is out of range", exit 1, even for a
column the release drops: a live source's fingerprint reads the whole row), or invalidated the
database during the search (the re-check then failed, exit 4); 2^127 - 1 was released, and the
written file failed pyarrow's validation. One SQL pass over the source's DECIMAL columns tells,
before the search: a comparison with the type's own bounds, which never computes the value's text
or negation. Measured on 1 M rows of two DECIMAL columns: 0.005 s from a Parquet file with
statistics (DuckDB folds the comparison where a row group's min and max are within the bounds),
0.07 s from one without, 0.012 s from an Arrow table; a source of no DECIMAL column costs one
DESCRIBE (~2 ms). Only top-level columns are read: a DECIMAL inside a struct or list is left to the
engine. On DuckDB the type names are read (``column_types``: Arrow gives a HUGEINT as a DECIMAL(38, 0));
on Spark the Arrow schema (Spark has no HUGEINT). Spark refuses such a value from Arrow, and from a
Parquet file read row by row, but its vectorized Parquet reader (the default) holds it: a DECIMAL(5, 2)
of 1234.56 was released, re-checked and written, and the file failed pyarrow's validation (ninety-eighth
round).
"""

from __future__ import annotations

import re

import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import DuckDBEngine, Engine
from sqlclose.errors import InputError
from sqlclose.model.text import counted
from sqlclose.sql import queries as q

_DECIMAL = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")


def refuse_decimals_past_precision(engine: Engine, relation: exp.Expression, label: str) -> None:
    """Raise InputError naming the first DECIMAL column of ``relation`` (read by ``label``) that holds a
    value of more digits than its precision, with how many rows, naming no value."""
    columns = _decimal_columns(engine, relation)
    if not columns:
        return
    found = engine.fetch_row(exp.select(*(exp.alias_(_past(name, *size), f"c{i}")
                                          for i, (name, size) in enumerate(columns.items())))
                             .from_(relation.copy()))
    for i, (name, (precision, scale)) in enumerate(columns.items()):
        rows = int(found[f"c{i}"] or 0)
        if rows:
            raise InputError(
                f"cannot read {label}: column {name!r} is a DECIMAL({precision}, {scale}) and {counted(rows, 'row')} "
                f"of it {'holds a value' if rows == 1 else 'hold values'} of more than {precision} digits, which the "
                "type cannot hold (DuckDB's .to_arrow_table() gives a UHUGEINT past 2^127 so, and Arrow "
                f"and Parquet store them unchecked), and the engine cannot read them as they are: write the column as "
                f"text where the table is made (CAST({q.ident(name).sql('duckdb')} AS VARCHAR) in the query "
                "that makes it), or as a DECIMAL that holds them, or correct the values, first (not shown: an error "
                "names no data value)")


def _decimal_columns(engine: Engine, relation: exp.Expression) -> dict[str, tuple[int, int]]:
    """The top-level DECIMAL columns of ``relation`` with their precision and scale: by DuckDB's type
    names (a HUGEINT reaches Arrow as a DECIMAL(38, 0)), by Spark's Arrow schema; none on another engine."""
    if isinstance(engine, DuckDBEngine):
        return {name: (int(m[1]), int(m[2])) for name, kind in
                engine.column_types(exp.select(exp.Star()).from_(relation.copy()).limit(0)).items()
                if (m := _DECIMAL.fullmatch(kind))}
    if engine.name == "spark":  # by name: importing SparkEngine imports pyspark
        return {field.name: (field.type.precision, field.type.scale) for field in engine.schema(relation)
                if pa.types.is_decimal(field.type)}
    return {}


def _past(name: str, precision: int, scale: int) -> exp.Expression:
    """How many rows of the column hold a value past ±(10^precision - 1) / 10^scale, compared with
    bounds of the column's own type (no cast, no text or negation of the stored value)."""
    kind = exp.DataType.build(f"DECIMAL({precision}, {scale})")
    digits = "9" * (precision - scale) + ("." + "9" * scale if scale else "")
    highest = exp.cast(exp.Literal.string(digits), kind)
    lowest = exp.cast(exp.Literal.string("-" + digits), kind)
    column = q.col(name)
    outside = exp.or_(exp.LT(this=column, expression=lowest), exp.GT(this=column.copy(), expression=highest))
    return exp.Sum(this=exp.Case(ifs=[exp.If(this=outside, true=exp.Literal.number(1))],
                                 default=exp.Literal.number(0)))
