"""The error for column values a rule (bands, dates, mask) cannot take: counted, never shown.

A value is data, a suppressed row's as much as any: an error quoting it (on stderr, in a job's log,
in ``--json``'s document) lets whoever holds the log test guesses against it. So the error names
the rule, the column and the source, counts the values refused for the first reason found and the
rows holding them, says what to do and, where a condition can pick them out, gives it in the SQL of
the engine in use, for the user to list them where they may see them (docs/bad-input.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

import pyarrow as pa
from sqlglot import exp

from sqlclose.errors import HierarchyError, InputError
from sqlclose.model.mending import QUERY, mended
from sqlclose.model.text import counted, name_cut

# Picks a column's refused values out: given the column (a quoted identifier), the condition.
Condition = Callable[[exp.Expression], exp.Expression]


@dataclass(frozen=True)
class NumberType:
    """A number column's type, for a condition to compare its values in it: whole numbers and
    decimals (``scale`` digits after the point, between ``least`` and ``greatest``) exactly, a float in
    its own precision (``float_sql``: the type its bounds are cast to)."""

    scale: int = 0
    least: Decimal | None = None
    greatest: Decimal | None = None
    float_sql: str | None = None

    @classmethod
    def of(cls, arrow_type: pa.DataType) -> NumberType | None:
        if pa.types.is_integer(arrow_type):
            bits = arrow_type.bit_width
            signed = pa.types.is_signed_integer(arrow_type)
            return cls(0, Decimal(-(2 ** (bits - 1)) if signed else 0),
                       Decimal(2 ** (bits - 1) - 1 if signed else 2 ** bits - 1))
        if pa.types.is_decimal(arrow_type):
            greatest = Decimal(10) ** (arrow_type.precision - arrow_type.scale) - Decimal(10) ** -arrow_type.scale
            return cls(arrow_type.scale, -greatest, greatest)
        if pa.types.is_floating(arrow_type):
            return cls(float_sql="DOUBLE" if arrow_type.bit_width == 64 else "FLOAT")
        return None


@dataclass(frozen=True)
class ValuesAt:
    """Where a rule's values come from, for its errors: the column's name, the source's label, the
    rows holding each value (in the values' order) and the SQL dialect the user's queries are in."""

    column: str | None = None
    source: str | None = None
    rows: Sequence[int] | None = None
    dialect: str = "duckdb"
    source_kind: str = QUERY  # where the user changes a column: a query, a DataFrame, … (``model.mending``)
    number: NumberType | None = None  # the column's number type, when it has one (a condition compares in it)
    column_type: pa.DataType | None = None  # the column's type (None: unknown, taken for text)

    @property
    def is_text(self) -> bool:
        """Whether the column holds text (or its type is unknown): the rule reads its values as they are."""
        t = self.column_type
        return t is None or pa.types.is_string(t) or pa.types.is_large_string(t) or str(t) == "string_view"

    def text_of(self, column: exp.Expression) -> exp.Expression:
        """The column's values as the rule reads them, for a condition on their text: a column of
        another type (an INTEGER ZIP code, a DECIMAL) cast to text as the rule's query casts it
        (``queries.as_text``): ``LENGTH("zip")`` is no query over an INTEGER (review of the
        ninety-sixth round), and on it the condition counts what the error counts."""
        if self.is_text:
            return column
        return exp.Cast(this=column, to=exp.DataType(this=exp.DataType.Type.VARCHAR, nested=False))

    def render(self, sql: exp.Expression) -> str:
        """An expression in the dialect of the engine in use (DuckDB's, Spark's, a warehouse's)."""
        return sql.sql(dialect=self.dialect)

    def mended(self, sql: exp.Expression, pandas: str, arrow: str, purpose: str = "") -> str:
        """Where and how the user changes the column, as the source given takes it (``mending.mended``):
        ``sql`` rendered in the user's dialect, ``pandas`` and ``arrow`` the statements for a DataFrame
        ``df`` and an Arrow ``table``."""
        return mended(self.source_kind, self.column or "v", self.render(sql), pandas, arrow, purpose)

    def where(self, condition: Condition) -> str:
        """``; they are the rows WHERE …``: how to find the values the error does not show."""
        if self.column is None:
            return ""
        return f"; they are the rows WHERE {self.render(condition(exp.column(self.column, quoted=True)))}"


class Refused(Exception):
    """Why a rule cannot take a value (and how to find such values); the error names no value.
    ``reason`` is said of many values ("that are not numbers, …"), ``one`` of a single value where
    it reads otherwise ("that is not a number, …")."""

    def __init__(self, reason: str, find: Condition | None = None, *, one: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.find = find
        self.one = reason if one is None else one

    def said_of(self, values: int) -> str:
        """The reason as it reads after a count of ``values``."""
        return self.one if values == 1 else self.reason


class Refusals:
    """The positions of the values a rule refused, per reason, in the order the reasons were met."""

    def __init__(self) -> None:
        self._by_reason: dict[str, tuple[Refused, list[int]]] = {}

    def add(self, why: Refused, position: int) -> None:
        self._by_reason.setdefault(why.reason, (why, []))[1].append(position)

    def raise_first(self, name: str, at: ValuesAt | None, error: type[InputError] = HierarchyError) -> None:
        """Raise the error for the first reason met, if any: its values and their rows counted."""
        if not self._by_reason:
            return
        why, positions = next(iter(self._by_reason.values()))
        at = at or ValuesAt()
        rows = None if at.rows is None else sum(at.rows[i] for i in positions)
        raise refused_error(name, at, why.said_of(len(positions)), len(positions), rows,
                            at.where(why.find) if why.find else "", error)


def refused_error(name: str, at: ValuesAt, reason: str, values: int, rows: int | None, find: str = "",
                  error: type[InputError] = HierarchyError) -> InputError:
    """``<name> in <source>: the column holds N values (in M rows) <reason> (not shown: …)``, a noun
    singular for a count of 1 (``1 value (in 1 row)``); ``reason`` as it reads after that count."""
    told = counted(values, "value") + ("" if rows is None else f" (in {counted(rows, 'row')})")
    where = name_cut(name) if at.source is None else f"{name_cut(name)} in {at.source}"
    return error(f"{where}: the column holds {told} {reason} (not shown: an error names no data value){find}")
