"""The engine interface: the search and the release talk to this, never to a driver.

An engine runs sqlglot ASTs rendered in its dialect and hands results back as Arrow. Backends
implement the few primitive hooks (``_run``, ``_execute``, ``register`` …); everything else is
shared and final. Driver errors are re-raised as ``EngineError`` carrying the SQL.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from sqlglot import exp

from sqlclose.errors import EngineError

_names = itertools.count()


@dataclass(frozen=True)
class FileRead:
    """How to read one source file (or, with ``glob``, every file a pattern matches).

    CSV columns are read as text unless ``types`` names a type; ``numeric`` columns (ordered
    sensitive columns) without a declared type get the number type the file's values have.
    """

    kind: str  # parquet | csv | duckdb
    path: Path
    table: str | None = None
    delimiter: str | None = None
    glob: bool = False
    encoding: str = "utf-8"
    nulls: tuple[str, ...] = ("",)
    types: dict[str, str] = field(default_factory=dict)
    numeric: tuple[str, ...] = ()
    numbers_if_numeric: tuple[str, ...] = ()  # read as numbers when a sample says they are (audits)
    header: tuple[str, ...] = ()  # a CSV's column names, as its header line gives them


class Engine(ABC):
    dialect: str = "duckdb"

    def temp_name(self, stem: str) -> str:
        """A name for an object of ours: the reserved prefix keeps it apart from the user's."""
        return f"__sqlclose_{stem}_{next(_names)}"

    def render(self, query: exp.Expression) -> str:
        return query.sql(dialect=self.dialect)

    def fetch(self, query: exp.Expression | str, params: Sequence[Any] | None = None) -> pa.Table:
        """Run a query and return its result as an Arrow table."""
        sql = query if isinstance(query, str) else self.render(query)
        try:
            return self._run(sql, params)
        except EngineError:
            raise
        except Exception as e:  # driver errors differ per backend; keep the SQL with them
            raise EngineError(f"{type(e).__name__}: {e}", sql) from e

    def schema(self, relation: exp.Expression) -> pa.Schema:
        """Column names and types of a relation, without reading its rows."""
        return self.fetch(exp.select(exp.Star()).from_(relation.copy()).limit(0)).schema

    def execute(self, statement: exp.Expression | str, params: Sequence[Any] | None = None) -> None:
        sql = statement if isinstance(statement, str) else self.render(statement)
        try:
            self._execute(sql, params)
        except Exception as e:
            raise EngineError(f"{type(e).__name__}: {e}", sql) from e

    # ---- hooks each backend implements ----------------------------------------------------
    @abstractmethod
    def _run(self, sql: str, params: Sequence[Any] | None) -> pa.Table: ...

    @abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] | None) -> None: ...

    @abstractmethod
    def create_temp_table(self, name: str, query: exp.Expression, params: Sequence[Any] = ()) -> exp.Table:
        """Materialize a query as a temporary table dropped by ``close``; return its AST."""

    @abstractmethod
    def register(self, name: str, table: pa.Table) -> None:
        """Expose an Arrow table (aggregated counts, lookup tables) to SQL under ``name``."""

    @abstractmethod
    def unregister(self, name: str) -> None: ...

    @abstractmethod
    def source_relation(self, read: FileRead) -> exp.Expression:
        """Make a file or database table readable by SQL; return the AST to select FROM. A path is
        literal (a file named ``data[1].csv`` is read as itself) unless ``read.glob``."""

    @abstractmethod
    def copy_to_parquet(self, query: exp.Expression, path: Path, params: Sequence[Any] = ()) -> None:
        """Write the query's result to ``path`` as Parquet (the path is a bound parameter)."""

    @abstractmethod
    def read_parquet(self, path: Path) -> exp.Expression:
        """The AST that reads a Parquet file back (for verification)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        pass
