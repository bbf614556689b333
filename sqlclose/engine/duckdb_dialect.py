"""The sqlglot dialect the DuckDB engine renders its SQL in: DuckDB's, with every sort key's
direction and NULLs placement written out.

A connection may set ``default_order = 'DESC'`` or a ``default_null_order``, and DuckDB applies
them to every sort key that does not say (a window's too). sqlglot's DuckDB dialect leaves out what
DuckDB's defaults do anyway (``ASC``, ``NULLS LAST``), so on a caller's connection that set
``default_order = 'DESC'`` the release was written in descending order, and the ordered EMD's
re-check, whose running sums follow its window's order, failed a correct release (exit 4). Here
each key says both, as the tree means them under DuckDB's defaults (unsaid NULLs go last).

The dialect does not subclass sqlglot's generator: compiled sqlglot (``sqlglot[c]``, a dependency
for its speed) refuses Python subclasses of its generators. Its generator looks up how to write
each node in a table of its own, so the dialect hands each generator it makes a copy of that table
with three entries ours: a sort key, an ORDER BY, and a window (which writes its ORDER BY without
the table).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.generator import Generator

Handler = Callable[..., str]


def _ordered_sql(generator: Generator, expression: exp.Ordered) -> str:
    direction = "DESC" if expression.args.get("desc") else "ASC"
    nulls = "FIRST" if expression.args.get("nulls_first") else "LAST"
    fill = generator.sql(expression, "with_fill")
    return f"{generator.sql(expression, 'this')} {direction} NULLS {nulls}" + (f" {fill}" if fill else "")


def _keys_said(order: exp.Order) -> exp.Order:
    """``order`` with each key given bare (a builder's ``order_by(column)``) as a key with nothing
    said, so that ``_ordered_sql`` writes it; a copy only when one is bare."""
    if all(isinstance(key, exp.Ordered) for key in order.expressions):
        return order
    order = order.copy()
    for key in list(order.expressions):
        if not isinstance(key, exp.Ordered):
            key.replace(exp.Ordered(this=key.copy()))
    return order


def _handlers(duckdb_table: dict[type, Handler]) -> dict[type, Handler]:
    order_sql, window_sql = duckdb_table[exp.Order], duckdb_table[exp.Window]

    def order(generator: Generator, expression: exp.Order) -> str:
        return order_sql(generator, _keys_said(expression))

    def window(generator: Generator, expression: exp.Window) -> str:
        keys = expression.args.get("order")
        said = _keys_said(keys) if keys is not None else None
        if said is not keys:  # a bare key: the window rewritten on a copy
            expression = expression.copy()
            expression.set("order", said)
        return window_sql(generator, expression)

    return {**duckdb_table, exp.Ordered: _ordered_sql, exp.Order: order, exp.Window: window}


class SqlcloseDuckDB(DuckDB):
    """sqlglot registers a dialect by its class name in lower case: ``DIALECT``."""

    _table: dict[type, Handler] | None = None

    def generator(self, **opts: Any) -> Generator:
        generator = super().generator(**opts)
        cls = type(self)
        # ``_dispatch`` is sqlglot's own (private) name for the table: should a release rename it,
        # test_connection_sort_settings.py fails rather than a caller's sort setting going unsaid.
        if cls._table is None:
            cls._table = _handlers(generator._dispatch)
        generator._dispatch = cls._table
        return generator


DIALECT = SqlcloseDuckDB.__name__.lower()
