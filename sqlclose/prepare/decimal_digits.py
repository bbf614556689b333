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
DESCRIBE (~2 ms). On DuckDB the type names are read (``column_types``: Arrow gives a HUGEINT as a
DECIMAL(38, 0)); on Spark the Arrow schema (Spark has no HUGEINT). Spark refuses such a value from
Arrow, and from a Parquet file read row by row, but its vectorized Parquet reader (the default) holds
it: a DECIMAL(5, 2) of 1234.56 was released, re-checked and written, and the file failed pyarrow's
validation (ninety-eighth round).

A DECIMAL inside a struct's field, a list's items or a map's keys or values, at any depth, is
checked too, path by path (``codes[].amount``): one from a Parquet file was released as read, on
DuckDB and on Spark, and the written file failed pyarrow's validation (ninety-eighth round). A list
is tested by filtering its items (``LIST_FILTER``, Spark's ``FILTER``); a source of no DECIMAL,
nested or not, still costs one DESCRIBE. Measured on DuckDB, 1 M rows of a list of structs of a DECIMAL
(5 items a row) from a Parquet file: 0.3 s, of which reading the list alone takes 0.1-0.2 s
(the other forms tried, the items' min and max, an UNNEST, took as long).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp
from sqlglot.errors import SqlglotError

from sqlclose.engine import DuckDBEngine, Engine
from sqlclose.errors import InputError
from sqlclose.model import mending
from sqlclose.model.text import counted, name_shown
from sqlclose.sql import queries as q

_DECIMAL = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")

# One step from a value down into it: a struct's field (a union's member) by name, a list's items,
# a map's keys or its values.
Step = tuple[str, str]
_ITEMS, _KEYS, _VALUES = ("items", ""), ("keys", ""), ("values", "")
_SHOWN_STEP = {"items": "[]", "keys": "{key}", "values": "{value}"}


@dataclass(frozen=True)
class _Decimals:
    """The DECIMAL values ``steps`` down inside ``column`` (no step: the column's own)."""

    column: str
    steps: tuple[Step, ...]
    precision: int
    scale: int

    @property
    def path(self) -> str:
        """``codes[].amount``: a field by its name (as JSON text unless a plain word), ``[]`` a list's
        items, ``{key}`` and ``{value}`` a map's."""
        return self.column + "".join(
            _SHOWN_STEP.get(kind) or "." + (name if re.fullmatch(r"\w+", name) else json.dumps(name))
            for kind, name in self.steps)


def refuse_decimals_past_precision(engine: Engine, relation: exp.Expression, label: str,
                                   kind: str = mending.QUERY) -> None:
    """Raise InputError naming the first DECIMAL column of ``relation`` (read by ``label``, a source of
    ``kind``: ``Opened.kind``), or DECIMAL field inside one, that holds a value of more digits than its
    precision, with how many rows, naming no value, and the fix in the form the source takes."""
    found = _decimals(engine, relation)
    if not found:
        return
    counts = engine.fetch_row(exp.select(*(exp.alias_(_rows_past(at, engine.dialect), f"c{i}")
                                           for i, at in enumerate(found)))
                              .from_(relation.copy()))
    for i, at in enumerate(found):
        rows = int(counts[f"c{i}"] or 0)
        if rows:
            raise InputError(_told(at, rows, label, kind))


def _told(at: _Decimals, rows: int, label: str, kind: str) -> str:
    """The refusal of ``rows`` rows past ``at``'s precision, naming its column (and path), no value."""
    size = f"DECIMAL({at.precision}, {at.scale})"
    if at.steps:
        where, what = f"column {name_shown(at.column)} holds {size} values at {at.path}", "field"
        fix = f"where the table is made (the query that makes {mending.source_sql(kind, q.ident(at.column))})"
    else:
        where, what = f"column {name_shown(at.column)} is a {size}", "column"
        fix = _column_fix(at.column, kind)
    return (f"cannot read {label}: {where} and {counted(rows, 'row')} of it "
            f"{'holds a value' if rows == 1 else 'hold values'} of more than {at.precision} digits, which the "
            "type cannot hold (DuckDB's .to_arrow_table() gives a UHUGEINT past 2^127 so, and Arrow and Parquet "
            f"store them unchecked), and the engine cannot read them as they are: write the {what} as text {fix}, "
            "or as a DECIMAL that holds them, or correct the values, first (not shown: an error names no data value)")


def _column_fix(name: str, kind: str) -> str:
    """Where and how column ``name`` of a source of ``kind`` is written as text. A Spark DataFrame or
    table (read from Parquet: Spark refuses such a value from Arrow) is told Spark's SQL: DuckDB's
    ``CAST("d" AS VARCHAR)`` inside ``F.expr`` is a string literal's to Spark, every row the text 'd'
    (ninety-eighth round). Any other is told the query that made it, in DuckDB's SQL: an Arrow table
    holding a UHUGEINT's export stores -2^127, which a cast of the table would write as that text."""
    cast = exp.cast(q.col(name), exp.DataType.build("VARCHAR"))
    if mending.is_spark(kind):
        return mending.mended(kind, name, cast, "", "")
    return f"where the table is made (CAST({q.ident(name).sql('duckdb')} AS VARCHAR) in the query that makes it)"


def _decimals(engine: Engine, relation: exp.Expression) -> list[_Decimals]:
    """Where ``relation`` holds DECIMAL values, with their precision and scale: by DuckDB's type
    names (a HUGEINT reaches Arrow as a DECIMAL(38, 0)), by Spark's Arrow schema; none on another engine."""
    if isinstance(engine, DuckDBEngine):
        types = engine.relation_types(relation)
        return [_Decimals(name, steps, precision, scale) for name, kind in types.items() if "DECIMAL(" in kind
                for steps, precision, scale in _duckdb_decimals(name, kind)]
    if engine.name == "spark":  # by name: importing SparkEngine imports pyspark
        return [_Decimals(field.name, steps, precision, scale) for field in engine.schema(relation)
                for steps, precision, scale in _arrow_decimals(field.type)]
    return []


def _duckdb_decimals(name: str, kind: str) -> Iterator[tuple[tuple[Step, ...], int, int]]:
    """The DECIMALs in DuckDB's type name ``kind`` of column ``name``: the column's own, or those its
    nested type holds (read by sqlglot's parser, which keeps quoted field names whole)."""
    if m := _DECIMAL.fullmatch(kind):
        yield (), int(m[1]), int(m[2])
        return
    try:
        parsed = exp.DataType.build(kind, dialect="duckdb")
    except (SqlglotError, ValueError):  # fail closed: a DECIMAL inside that cannot be found is not checked
        raise InputError(f"column {name_shown(name)} is of type {kind}, which holds DECIMAL values that cannot be told "
                         "apart to check their digits: cast the column to a type of no DECIMAL first") from None
    yield from _parsed_decimals(parsed, ())


def _parsed_decimals(kind: exp.DataType, steps: tuple[Step, ...]) -> Iterator[tuple[tuple[Step, ...], int, int]]:
    """The DECIMALs in a type sqlglot parsed, ``steps`` down from the column, with their precision and scale."""
    nested = kind.expressions
    if kind.is_type(exp.DataType.Type.DECIMAL):
        yield steps, int(nested[0].name), int(nested[1].name)
    elif kind.is_type(exp.DataType.Type.STRUCT, exp.DataType.Type.UNION):
        member = "field" if kind.is_type(exp.DataType.Type.STRUCT) else "member"
        for field in nested:
            yield from _parsed_decimals(field.args["kind"], (*steps, (member, field.name)))
    elif kind.is_type(exp.DataType.Type.ARRAY, exp.DataType.Type.LIST):
        yield from _parsed_decimals(nested[0], (*steps, _ITEMS))
    elif kind.is_type(exp.DataType.Type.MAP):
        yield from _parsed_decimals(nested[0], (*steps, _KEYS))
        yield from _parsed_decimals(nested[1], (*steps, _VALUES))


def _arrow_decimals(kind: pa.DataType, steps: tuple[Step, ...] = ()) -> Iterator[tuple[tuple[Step, ...], int, int]]:
    """The DECIMALs in an Arrow type (Spark's schema), as ``_parsed_decimals`` finds DuckDB's."""
    if pa.types.is_decimal(kind):
        yield steps, kind.precision, kind.scale
    elif pa.types.is_struct(kind):
        for field in (kind.field(i) for i in range(kind.num_fields)):
            yield from _arrow_decimals(field.type, (*steps, ("field", field.name)))
    elif pa.types.is_map(kind):
        yield from _arrow_decimals(kind.key_type, (*steps, _KEYS))
        yield from _arrow_decimals(kind.item_type, (*steps, _VALUES))
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        yield from _arrow_decimals(kind.value_type, (*steps, _ITEMS))


def _rows_past(at: _Decimals, dialect: str) -> exp.Expression:
    """How many rows hold, where ``at`` points, a value past ±(10^precision - 1) / 10^scale."""
    outside = _past(q.col(at.column), at.steps, at.precision, at.scale, dialect)
    return exp.Sum(this=exp.Case(ifs=[exp.If(this=outside, true=exp.Literal.number(1))],
                                 default=exp.Literal.number(0)))


def _past(value: exp.Expression, steps: tuple[Step, ...], precision: int, scale: int, dialect: str) -> exp.Expression:
    """Whether ``value``, ``steps`` down, holds a DECIMAL past its bounds, compared with bounds of the
    type's own (no cast, no text or negation of the stored value); NULL counts as no. A list is
    searched by filtering its items, a lambda whose variable is named by depth apart from any column."""
    if not steps:
        kind = exp.DataType.build(f"DECIMAL({precision}, {scale})")
        digits = "9" * (precision - scale) + ("." + "9" * scale if scale else "")
        highest = exp.cast(exp.Literal.string(digits), kind)
        lowest = exp.cast(exp.Literal.string("-" + digits), kind)
        return exp.or_(exp.LT(this=value, expression=lowest), exp.GT(this=value.copy(), expression=highest))
    (kind, name), rest = steps[0], steps[1:]
    if kind in ("field", "member"):
        return _past(_member(value, kind, name, dialect), rest, precision, scale, dialect)
    items = {"keys": exp.func("map_keys", value), "values": exp.func("map_values", value)}.get(kind, value)
    item = exp.to_identifier(f"__sqlclose_item_{len(rest)}")
    test = _past(exp.column(item.copy()), rest, precision, scale, dialect)
    return exp.GT(this=exp.ArraySize(this=exp.ArrayFilter(this=items, expression=exp.Lambda(
        this=test, expressions=[item]))), expression=exp.Literal.number(0))


def _member(value: exp.Expression, kind: str, name: str, dialect: str) -> exp.Expression:
    """A struct's field (Spark's ``s.`name```, DuckDB's ``s['name']``), or a DuckDB union's member."""
    if kind == "member":
        return exp.Anonymous(this="union_extract", expressions=[value, exp.Literal.string(name)])
    if dialect == "spark":
        return exp.Dot(this=value, expression=exp.to_identifier(name, quoted=True))
    return exp.Bracket(this=value, expressions=[exp.Literal.string(name)])
