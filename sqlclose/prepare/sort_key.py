"""The key a large release read from the source's rows is sorted by before its values.

A release is sorted by its values (``queries.sorted_by``): its classes' labels, then its other
columns. Where the engine has one (``Engine.packed_sort_key``: DuckDB), a key of one integer that
holds the first of those columns' order comes first: the sort compares it faster, and it orders
rows as the values do (or ties them, for the values to settle), so the file is the same byte for
byte. Worth its one extra query (the sizes of dictionaries, the ranges of other columns: 60 ms at
10 M rows) from a million rows on: at 10 M rows the 16-column write's COPY took ~15 % less time and
the whole job 5 %; at 1 M the COPY ~7 % less, the job about the same (docs/performance.md,
seventy-second round).
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from sqlclose.engine.base import PackedColumn, PackedKey
from sqlclose.prepare.problem import Problem
from sqlclose.sql import queries as q

# Fewest source rows for which a release is sorted by a packed key first.
PACKED_KEY_MIN_ROWS = 1_000_000


def packed_sort_key(problem: Problem, released: list[q.ReleasedQI], passed: dict[str, exp.Table],
                    ties: q.Ties, schema: pa.Schema) -> PackedKey | None:
    """The packed key of a release read from the rows, its QIs as ``released`` and the columns
    given as they are in dictionary types ``passed`` (``release_query``; ``schema``: the source's),
    or None: too few rows, or no column it is sorted by first can be packed (a label or a value as
    text, a float, a time). Its columns are those ``queries.release`` sorts by, in turn; those it
    holds whole, ``queries.release`` sorts by no more."""
    if problem.rows < PACKED_KEY_MIN_ROWS:
        return None
    by_name = {r.coded.name: r for r in released}
    order = q.released_order(problem.released, released)
    leading: list[PackedColumn] = []
    for name in q.sorted_columns(order, ties.among(order)):
        column = None if name in ties.columns else _packed(name, by_name.get(name), passed, schema)
        if column is None:
            break
        leading.append(column)
    return problem.engine.packed_sort_key(leading, problem.source) if leading else None


def _packed(name: str, qi: q.ReleasedQI | None, passed: dict[str, exp.Table], schema: pa.Schema) -> PackedColumn | None:
    """How the key holds a column's order, if it can: a label or a value in a dictionary type by
    its code; an integer, date or boolean given as it is by its offset."""
    if qi is not None and qi.level:  # a label: text, or in its dictionary type
        return PackedColumn(name, exp.Cast(this=exp.Null(), to=qi.dictionary.copy())) \
            if qi.dictionary is not None else None
    if name in passed:
        return PackedColumn(name, exp.select(q.col("code")).from_(passed[name].copy()).limit(1).subquery())
    kind = schema.field(name).type
    if pa.types.is_integer(kind):
        return PackedColumn(name, kind="integer")
    if pa.types.is_date(kind):
        return PackedColumn(name, kind="date")
    if pa.types.is_boolean(kind):
        return PackedColumn(name, kind="boolean")
    return None
