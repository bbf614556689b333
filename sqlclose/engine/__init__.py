"""SQL engines. DuckDB is the default; others implement ``Engine``."""

from sqlclose.engine.base import Engine
from sqlclose.engine.duckdb import DuckDBEngine

__all__ = ["Engine", "DuckDBEngine"]
