"""Preparation's questions about column values, answered in a local DuckDB where queries are dear.

``column_values`` is the small table preparation reads: a row per distinct value of each coded
column, with the rows holding it (aggregated counts, never rows). Its questions — NULL counts,
the values of rule-built hierarchies, the leaf checks and the leaf counts — are a query each. On
an engine whose every query costs planning and jobs (``Engine.local_search``; Spark: the leaf
check and counts of Adult's seven quasi-identifiers took 7–10 s, a query of joins over a table of
a few hundred rows), the table is collected once as Arrow into a local DuckDB and the questions run
there (docs/performance.md, thirty-fifth round). The lookups the base histogram joins are still
registered on the source's engine, which also keeps asking what depends on its own casts (the text
of a typed sensitive value).

Past ``LOCAL_VALUES_MAX_ROWS`` rows (a column of millions of distinct values) the questions stay on
the engine: the collect is bounded by a LIMIT, so a table too large is never held whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlglot import exp

from sqlclose.engine import DuckDBEngine, Engine
from sqlclose.sql import queries as q

# Rows of column_values up to which its questions run locally: Arrow holds a row in a few tens of
# bytes (the value's text and the count), so the bound is ~0.1–0.5 GB of driver memory at most,
# the hybrid search's own bound (search/hybrid.py).
LOCAL_VALUES_MAX_ROWS = 10_000_000


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


@contextmanager
def values_reader(engine: Engine, values: exp.Table, max_rows: int | None = None) -> Iterator[ValuesReader]:
    """The reader of ``values`` (``column_values`` on ``engine``): a local copy when the engine asks
    for local work and the table has at most ``max_rows`` rows, else the table where it is."""
    limit = LOCAL_VALUES_MAX_ROWS if max_rows is None else max_rows
    where = ValuesReader(engine, values, engine, values)
    if not engine.local_search:
        yield where
        return
    collected = engine.fetch(q.first_rows(values, limit + 1))
    if collected.num_rows > limit:
        yield where
        return
    local = DuckDBEngine()
    try:
        name = local.temp_name("column_values")
        local.register(name, collected)
        yield ValuesReader(local, q.table(name), engine, values)
    finally:
        local.close()
