"""Where the re-check's measures of the grouped file run: a local DuckDB when queries are dear.

The grouped file (``verify_sql._grouped_release``: each distinct written row once, with the rows
it stands for) is what every measure but two reads: the class sizes, the labels' levels, each
sensitive column's counts, its diversity and its distances. On an engine whose every query costs
planning and jobs (``Engine.local_search``; Spark: Adult's re-check took 8.6 s in 12 statements),
the grouped file is collected once, as the engine's own text, into a local DuckDB, and those
measures run there. The two that read the input — the truth test and the reference distribution
Q — stay on the engine; Q, a row per sensitive value, is then copied beside the grouped file.

Every column is collected as the engine's text of it (``CAST … AS VARCHAR``), the form labels and
sensitive values are matched in: the local copy never casts a value itself, so a double reads as
Spark printed it (``1.2E7``), as the input's column values were read. The grouping is kept where
text is one-to-one on the values the engine grouped (``_FAITHFUL``: text, integers, booleans,
dates, decimals, floats — Spark groups −0.0 with 0.0 and NaN with NaN before the text is made —
and timestamps without a time zone); a file with a column of another type (a zoned timestamp,
whose text repeats in a daylight-saving hour; binary; nested values) is measured on the engine.

The copy is bounded in bytes (``GROUPED_MAX_BYTES``, turned into rows by the file's width; the
references copied beside it count against the same bound): at most one row past the bound is read
(a LIMIT). Past it, or when a collect fails, the measures run on the engine as before.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.engine.limits import LOCAL_COPY_MAX_BYTES
from sqlclose.engine.local_copy import bounded_fetch, local_copy

GROUPED_MAX_BYTES = LOCAL_COPY_MAX_BYTES
REFERENCE_ROW_BYTES = 8 + 8 + 25  # a reference row: its position, its share and its value's text
_PART = "__sqlclose_part"  # which of the queries collected together a row is of (``Judge.copied_each``)


class Unfit(Exception):
    """A table the judge needs beside its copy is past the bound, or its collect failed."""


def row_limit(columns: int) -> int:
    """Rows of a grouped file of ``columns`` text columns that fit the bound: per row its count
    (8 bytes), and per column an offset, validity and its text (~24 bytes assumed)."""
    return GROUPED_MAX_BYTES // _row_bytes(columns)


def _row_bytes(columns: int) -> int:
    return 8 + 25 * columns


def _faithful(t: pa.DataType) -> bool:
    """Whether the engine's text of values of type ``t`` is one-to-one on the values it groups."""
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
            or pa.types.is_boolean(t) or pa.types.is_date(t) or pa.types.is_decimal(t)
            or pa.types.is_floating(t) or (pa.types.is_timestamp(t) and t.tz is None))


@dataclass
class Judge:
    """The engine the grouped file's measures run on, the grouped file there, and the names
    registered there (the source's engine drops them; a local engine is closed whole); ``room``:
    the bytes a local copy may still take."""

    engine: Engine
    grouped: exp.Table
    registered: list[str] = field(default_factory=list)
    room: int = 0

    def copied(self, source: Engine, query: exp.Expression, params: Sequence[Any], stem: str) -> exp.Table:
        """The rows of ``query`` (its ``params`` bound) on the source's engine, copied beside a local
        judge (``Unfit`` past the room left, or when the collect fails). Collected from the query
        itself: kept on Spark first, it took a job to keep and one to collect."""
        return self.copied_each(source, [query], params, stem)[0]

    def copied_each(self, source: Engine, queries: Sequence[exp.Expression], params: Sequence[Any],
                    stem: str) -> list[exp.Table]:
        """``copied`` for each of ``queries`` of like columns (``params`` numbered across them),
        collected in one statement: each was a job of its own on Spark (a sensitive column's
        reference distribution: Table 3's two, ~0.1-0.3 s each). Each query's rows come back tagged
        with its position and are parted by it, in the order the engine gave them, as if collected
        alone; together they count against the room as they did one after the other."""
        if len(queries) == 1:
            collected = bounded_fetch(source, exp.select(exp.Star()).from_(queries[0].subquery("r")),
                                      self.room // REFERENCE_ROW_BYTES, params)
            parts = None if collected is None else [collected]
        else:
            parts = self._collected_together(source, queries, params)
        if parts is None:
            raise Unfit(stem)
        tables = []
        for rows in parts:
            self.room -= rows.num_rows * REFERENCE_ROW_BYTES
            name = self.engine.temp_name(stem)
            self.engine.register(name, rows)
            tables.append(exp.Table(this=exp.to_identifier(name, quoted=True)))
        return tables

    def _collected_together(self, source: Engine, queries: Sequence[exp.Expression],
                            params: Sequence[Any]) -> list[pa.Table] | None:
        """The rows of ``queries`` by one UNION ALL, each tagged (``_PART``), parted back by the tag."""
        tagged = [exp.select(exp.alias_(exp.Literal.number(i), _PART), exp.Star()).from_(query.subquery(f"r{i}"))
                  for i, query in enumerate(queries)]
        union = functools.reduce(lambda a, b: exp.union(a, b, distinct=False), tagged)
        rows = bounded_fetch(source, exp.select(exp.Star()).from_(union.subquery("r")),
                             self.room // REFERENCE_ROW_BYTES, params)
        if rows is None:
            return None
        import pyarrow.compute as pc  # here, not at the top: only a local judge collects, and a DuckDB run's
        # cold start would pay its import (tests/test_cold_start.py)

        tags = rows.column(_PART)
        return [rows.filter(pc.equal(tags, i)).drop_columns([_PART]) for i in range(len(queries))]


@contextmanager
def judge_for(engine: Engine, grouped: exp.Table, columns: Sequence[str], rows: str,
              registered: list[str]) -> Iterator[Judge]:
    """The judge of ``grouped`` (its ``columns`` and its count ``rows``): a local copy of it as text
    when the engine asks for local work, its columns' text is faithful and it fits ``row_limit``,
    else the engine itself."""
    if engine.local_search and not all(_faithful(f.type) for f in engine.schema(grouped) if f.name in columns):
        yield Judge(engine, grouped, registered)
        return
    text = [exp.alias_(exp.Cast(this=_col(c), to=exp.DataType.build("VARCHAR")), exp.to_identifier(c, quoted=True))
            for c in columns]
    with local_copy(engine, exp.select(*text, _col(rows)).from_(grouped.copy()), row_limit(len(columns)),
                    "verify_grouped") as copy:
        if copy is None:
            yield Judge(engine, grouped, registered)
        else:
            yield Judge(copy.engine, copy.table, room=GROUPED_MAX_BYTES - copy.rows * _row_bytes(len(columns)))


def _col(name: str) -> exp.Column:
    return exp.Column(this=exp.to_identifier(name, quoted=True))
