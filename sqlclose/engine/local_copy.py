"""A small engine-side table copied into a local DuckDB, where each query on the engine is dear.

On an engine with ``Engine.local_search`` (Spark: a query costs planning and jobs), a table that
many small questions read — preparation's column values, the re-check's grouped file — is
collected once as Arrow and registered in a local DuckDB. The collect is bounded: at most one row
past ``limit`` is read (a LIMIT), so a table too large is never held whole; past the limit, or when
the collect fails (a driver's bound below ours), the caller asks the engine as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlglot import exp

from sqlclose.engine.base import Engine
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.errors import EngineError


@contextmanager
def local_copy(engine: Engine, rows: exp.Select, limit: int, stem: str) -> Iterator[tuple[Engine, exp.Table] | None]:
    """The local DuckDB holding ``rows`` (at most ``limit`` of them) and their table there, for the
    block's length; None where the engine keeps them."""
    if not engine.local_search:
        yield None
        return
    try:
        collected = engine.fetch(rows.limit(limit + 1))
    except EngineError:
        collected = None
    if collected is None or collected.num_rows > limit:
        yield None
        return
    local = DuckDBEngine()
    try:
        name = local.temp_name(stem)
        local.register(name, collected)
        yield local, exp.Table(this=exp.to_identifier(name, quoted=True))
    finally:
        local.close()
