"""The sqlglot dialect the DuckDB engine renders its SQL in: DuckDB's, with every sort key's
direction and NULLs placement written out.

A connection may set ``default_order = 'DESC'`` or a ``default_null_order``, and DuckDB applies
them to every sort key that does not say (a window's too). sqlglot's DuckDB dialect leaves out what
DuckDB's defaults do anyway (``ASC``, ``NULLS LAST``), so on a caller's connection that set
``default_order = 'DESC'`` the release was written in descending order, and the ordered EMD's
re-check, whose running sums follow its window's order, failed a correct release (exit 4). Here
each key says both, as the tree means them under DuckDB's defaults (unsaid NULLs go last).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB


class SqlcloseDuckDB(DuckDB):
    """sqlglot registers a dialect by its class name in lower case: ``DIALECT``."""

    class Generator(DuckDB.Generator):
        def ordered_sql(self, expression: exp.Ordered) -> str:
            direction = "DESC" if expression.args.get("desc") else "ASC"
            nulls = "FIRST" if expression.args.get("nulls_first") else "LAST"
            fill = self.sql(expression, "with_fill")
            return f"{self.sql(expression, 'this')} {direction} NULLS {nulls}" + (f" {fill}" if fill else "")

        def order_sql(self, expression: exp.Order, flat: bool = False) -> str:
            # A key given bare (a builder's ``order_by(column)``) is a key with nothing said.
            if any(not isinstance(key, exp.Ordered) for key in expression.expressions):
                expression = expression.copy()
                for key in list(expression.expressions):
                    if not isinstance(key, exp.Ordered):
                        key.replace(exp.Ordered(this=key.copy()))
            return super().order_sql(expression, flat)


DIALECT = SqlcloseDuckDB.__name__.lower()
