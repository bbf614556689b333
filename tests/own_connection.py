"""Plain DuckDB over files a test wrote, on a connection of the query's own: the module's default
connection is shared with other tests in a worker, and was sometimes closed or busy."""

from __future__ import annotations

import duckdb


def rows(sql: str, params: list | None = None) -> list[tuple]:
    """A query's rows on a connection of its own."""
    con = duckdb.connect()
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()
