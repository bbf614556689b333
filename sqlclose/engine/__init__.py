"""SQL engines. DuckDB is the default; others implement ``Engine``."""

from .base import Engine
from .duckdb import DuckDBEngine

__all__ = ["Engine", "DuckDBEngine"]
