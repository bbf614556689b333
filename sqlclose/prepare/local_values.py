"""Preparation's questions about column values, answered in a local DuckDB where queries are dear.

``column_values`` is the small table preparation reads: a row per distinct value of each coded
column, with the rows holding it (aggregated counts, never rows). Its questions — NULL counts,
the values of rule-built hierarchies, the leaf checks and the leaf counts — are a query each. On
an engine whose every query costs planning and jobs (``Engine.local_search``; Spark: the leaf
check and counts of Adult's seven quasi-identifiers took 7–10 s, a query of joins over a table of
a few hundred rows), the table is collected once as Arrow into a local DuckDB and the questions run
there (docs/performance.md, thirty-fifth round). The lookups the base histogram joins are still
registered on the source's engine, which also keeps asking what depends on its own casts (the text
of a typed sensitive value, the numbers a bands rule reads from text that is not a plain number).

The copy is bounded in bytes (``LOCAL_VALUES_MAX_BYTES``, turned into rows by the table's width):
the collect reads at most one row past the bound (a LIMIT), so a table too large — a column of
millions of distinct values — is never held whole, and its questions stay on the engine, as they do
when the collect itself fails (a driver's ``spark.driver.maxResultSize`` lower than the bound).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.engine.limits import LOCAL_COPY_MAX_BYTES
from sqlclose.engine.local_copy import local_copy

# A number in plain decimal or scientific notation, which every engine reads as the same double.
# Other text ("1_000", "1d", "Infinity") each reads its own way.
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
LOCAL_VALUES_MAX_BYTES = LOCAL_COPY_MAX_BYTES


def row_limit(columns: int) -> int:
    """Rows of a ``column_values`` table of ``columns`` coded columns that fit the bound. As Arrow, a
    row holds its column number and count (12 bytes), a text slot per coded column (NULL but in one:
    an 8-byte offset, Spark shipping large strings, and validity) and its value's text (~16 bytes
    assumed; measured 50 B a row in all for 8 columns in DuckDB's Arrow, 84 B for 16)."""
    return LOCAL_VALUES_MAX_BYTES // (12 + 9 * columns + 16)


@dataclass(frozen=True)
class ValuesReader:
    """Where preparation reads column values: ``engine`` holding them as ``table``. The source's
    engine and its own table stay at hand: a local reader's lookups are registered on both, and a
    question about the engine's own casts is asked there (``at_source``)."""

    engine: Engine
    table: exp.Table
    source_engine: Engine
    source_table: exp.Table

    @property
    def local(self) -> bool:
        return self.engine is not self.source_engine

    def at_source(self) -> ValuesReader:
        return ValuesReader(self.source_engine, self.source_table, self.source_engine, self.source_table)

    def reads_numbers_as_source(self, texts: Iterable[str]) -> bool:
        """Whether this reader reads ``texts`` as numbers as the source's engine would: at the
        source, or when every one is a plain number (a local copy parses the rest its own way)."""
        return not self.local or all(_PLAIN_NUMBER.fullmatch(t) for t in texts)

    def add_lookup(self, name: str, lookup: pa.Table, load: bool = False) -> None:
        """A lookup on the source's engine, for the base histogram to join (``load``: loaded, else
        registered), and beside a local copy, for the questions asked of it."""
        if load:
            self.source_engine.load(name, lookup)
        else:
            self.source_engine.register(name, lookup)
        if self.local:
            self.engine.register(name, lookup)


@contextmanager
def values_reader(engine: Engine, values: exp.Table, columns: int) -> Iterator[ValuesReader]:
    """The reader of ``values`` (``column_values`` of ``columns`` coded columns on ``engine``): a
    local copy when the engine asks for local work and the table fits ``row_limit``, else the
    table where it is."""
    rows = exp.select(exp.Star()).from_(values.copy())
    with local_copy(engine, rows, row_limit(columns), "column_values") as copy:
        if copy is None:
            yield ValuesReader(engine, values, engine, values)
        else:
            yield ValuesReader(copy.engine, copy.table, engine, values)
