"""A small engine-side table copied into a local DuckDB, where each query on the engine is dear.

On an engine with ``Engine.local_search`` (Spark: a query costs planning and jobs), a table that
many small questions read — preparation's column values, the re-check's grouped file — is
collected once as Arrow and registered in a local DuckDB. The collect is bounded: at most one row
past ``limit`` is read (a LIMIT), so a table too large is never held whole; past the limit, or when
the collect fails (a driver's bound below ours), the caller asks the engine as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import pyarrow as pa
from sqlglot import exp

from sqlclose.engine.base import Engine
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.errors import EngineError


class LocalCopy(NamedTuple):
    """Rows copied into a local DuckDB: the engine, their table there and how many they are."""

    engine: Engine
    table: exp.Table
    rows: int


def bounded_fetch(engine: Engine, rows: exp.Select, limit: int, params: Sequence[Any] = ()) -> pa.Table | None:
    """At most ``limit`` of ``rows`` as Arrow (one more is read to tell); None past the limit, or when
    the collect fails."""
    try:
        collected = engine.fetch(rows.limit(limit + 1), list(params) or None)
    except EngineError:
        return None
    return None if collected.num_rows > limit else collected


@contextmanager
def local_copy(engine: Engine, rows: exp.Select, limit: int, stem: str) -> Iterator[LocalCopy | None]:
    """The local DuckDB holding ``rows`` (at most ``limit`` of them), for the block's length; None
    where the engine keeps them."""
    collected = bounded_fetch(engine, rows, limit) if engine.local_search else None
    if collected is None:
        yield None
        return
    local = DuckDBEngine()
    try:
        name = local.temp_name(stem)
        local.register(name, collected)
        yield LocalCopy(local, exp.Table(this=exp.to_identifier(name, quoted=True)), collected.num_rows)
    finally:
        local.close()
