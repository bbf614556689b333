"""Engines by name: the spec's ``[engine] name`` and the command line choose through here.

A new engine is one module implementing ``Engine`` plus one ``register_engine`` line. Spark is
registered by a factory that imports ``engine.spark`` only when called, so neither
``import sqlclose`` nor a DuckDB run ever imports pyspark.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlclose.engine.base import Engine
from sqlclose.errors import SpecError
from sqlclose.model.text import name_shown

if TYPE_CHECKING:
    from sqlclose.model.spec import EngineSettings

EngineFactory = Callable[..., Engine]
_factories: dict[str, EngineFactory] = {}
_requires: dict[str, str] = {}  # engine name -> the module it needs (for ``available_engines``)
_writes: dict[str, tuple[str, ...]] = {}  # engine name -> the output formats it writes, when not all


def register_engine(name: str, factory: EngineFactory, *, requires: str | None = None,
                    writes: tuple[str, ...] | None = None) -> None:
    """Make ``engine_for(name, **options)`` call ``factory(**options)``; ``requires`` names the
    driver module the engine needs (checked by ``available_engines`` without importing it);
    ``writes``: the output formats its engines write, when not every one (told before one starts)."""
    _factories[name] = factory
    if requires:
        _requires[name] = requires
    if writes is not None:
        _writes[name] = writes


def writes_format(name: str, output_format: str) -> bool:
    """Whether an engine of this name writes a release in ``output_format``, without starting one
    (a Spark session takes seconds: a job asking it for a CSV file is refused before)."""
    return output_format in _writes.get(name, (output_format,))


def engine_for(name: str, **options: Any) -> Engine:
    """A new engine of the given name, built with ``options`` (e.g. ``master``, ``conf``)."""
    if name not in _factories:
        raise ValueError(f"unknown engine {name_shown(name)}; known engines: {', '.join(sorted(_factories))}")
    return _factories[name](**options)


def engine_from(settings: EngineSettings) -> Engine:
    """A new engine as a spec's [engine] (or the command line over it) describes it."""
    try:
        return engine_for(settings.name, **settings.options())
    except (ValueError, TypeError) as e:
        raise SpecError(f"[engine]: {e}") from None


def registered_engines() -> list[str]:
    return sorted(_factories)


def available_engines() -> list[str]:
    """Registered engines whose driver is installed."""
    return [n for n in registered_engines() if n not in _requires or importlib.util.find_spec(_requires[n])]


def _duckdb(**options: Any) -> Engine:
    from sqlclose.engine.duckdb import DuckDBEngine

    return DuckDBEngine(**options)


def _spark(**options: Any) -> Engine:
    from sqlclose.engine.spark import SparkEngine  # says how to install pyspark when it is missing

    return SparkEngine(**options)


register_engine("duckdb", _duckdb, requires="duckdb")
register_engine("spark", _spark, requires="pyspark", writes=("parquet-folder",))
