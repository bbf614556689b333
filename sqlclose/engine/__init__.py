"""SQL engines. DuckDB is the default; others implement ``Engine`` and register a name.

``SparkEngine`` is importable from here but loaded only on first use, so pyspark stays optional.
"""

from typing import Any

from sqlclose.engine.base import Engine
from sqlclose.engine.duckdb import DuckDBEngine
from sqlclose.engine.registry import available_engines, engine_for, engine_from, register_engine, registered_engines

__all__ = ["Engine", "DuckDBEngine", "SparkEngine", "available_engines", "engine_for", "engine_from",
           "register_engine", "registered_engines"]


def __getattr__(name: str) -> Any:
    if name == "SparkEngine":  # lazily: importing it imports pyspark
        from sqlclose.engine.spark import SparkEngine

        return SparkEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
