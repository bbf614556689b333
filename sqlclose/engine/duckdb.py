"""DuckDB, the default engine: embedded, vectorized, out of core when data outgrows memory."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from sqlglot import exp

from .base import Engine


def _table(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True))


class DuckDBEngine(Engine):
    """Runs on a connection of its own, or on the caller's (then only temp objects are made)."""

    name = "duckdb"
    dialect = "duckdb"

    def __init__(self, connection: duckdb.DuckDBPyConnection | None = None, threads: int | None = None) -> None:
        self._own = connection is None
        self.con = connection if connection is not None else duckdb.connect()
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        self._temp: list[tuple[str, str]] = []  # (kind, name) to drop on close

    def row_hash(self, alias: str) -> exp.Expression:
        # HASH of the row (a struct through its alias) is a UBIGINT; SUM widens it to HUGEINT.
        return exp.Anonymous(this="HASH", expressions=[exp.column(alias)])

    def _run(self, sql: str, params: Sequence[Any] | None) -> pa.Table:
        return self.con.sql(sql, params=self.bind(params) if params else None).to_arrow_table()

    def _execute(self, sql: str, params: Sequence[Any] | None) -> None:
        self.con.execute(sql, self.bind(params) if params else None)

    def create_temp_table(self, name: str, query: exp.Expression, params: Sequence[Any] = ()) -> exp.Table:
        create = exp.Create(this=_table(name), kind="TABLE", expression=query,
                            properties=exp.Properties(expressions=[exp.TemporaryProperty()]))
        self.execute(create, params)
        self._temp.append(("table", name))
        return _table(name)

    def register(self, name: str, table: pa.Table) -> None:
        self.con.register(name, table)  # replaces an earlier table of the same name
        if ("arrow", name) not in self._temp:
            self._temp.append(("arrow", name))

    def unregister(self, name: str) -> None:
        if ("arrow", name) in self._temp:
            self.con.unregister(name)
            self._temp.remove(("arrow", name))

    def source_relation(self, kind: str, path: Path, *, delimiter: str | None = None,
                        table: str | None = None) -> exp.Expression:
        name = self.temp_name("source")
        if kind == "csv":
            # Parsed once into a temp table: the search, the release and the checks all read it.
            args: list[exp.Expression] = [exp.Placeholder(this="1"),
                                          exp.EQ(this=exp.var("header"), expression=exp.true())]
            params: list[Any] = [str(path)]
            if delimiter:
                args.append(exp.EQ(this=exp.var("delim"), expression=exp.Placeholder(this="2")))
                params.append(delimiter)
            read = exp.select(exp.Star()).from_(exp.Table(this=exp.Anonymous(this="read_csv", expressions=args)))
            return self.create_temp_table(name, read, params)
        if kind == "parquet":
            self.con.read_parquet(str(path)).create_view(name)
            self._temp.append(("view", name))
            return _table(name)
        if kind == "duckdb":
            alias = self.temp_name("db")
            attach = exp.Attach(this=exp.alias_(exp.Placeholder(this="1"), exp.to_identifier(alias, quoted=True)),
                                expressions=[exp.AttachOption(this=exp.var("READ_ONLY"))])
            self.execute(attach, [str(path)])
            self._temp.append(("database", alias))
            return exp.Table(this=exp.to_identifier(table, quoted=True), db=exp.to_identifier(alias, quoted=True))
        raise ValueError(f"unknown source kind {kind!r}")

    def read_parquet(self, path: Path) -> exp.Expression:
        name = self.temp_name("written")
        self.con.read_parquet(str(path)).create_view(name)
        self._temp.append(("view", name))
        return _table(name)

    def copy_to_parquet(self, query: exp.Expression, path: Path, params: Sequence[Any] = ()) -> None:
        copy = exp.Copy(
            this=query.subquery(),
            kind=False,  # COPY … TO
            files=[exp.Placeholder(this=str(len(params) + 1))],
            params=[exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("PARQUET"))],
        )
        self.execute(copy, [*params, str(path)])

    def close(self) -> None:
        for kind, name in reversed(self._temp):
            try:
                if kind == "arrow":
                    self.con.unregister(name)
                elif kind == "database":
                    self.con.execute(f"DETACH {exp.to_identifier(name, quoted=True).sql('duckdb')}")
                else:
                    self.con.execute(f"DROP {kind.upper()} IF EXISTS {_table(name).sql('duckdb')}")
            except duckdb.Error:
                pass
        self._temp.clear()
        if self._own:
            self.con.close()
