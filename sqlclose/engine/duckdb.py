"""DuckDB, the default engine: embedded, vectorized, out of core when data outgrows memory."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from sqlglot import exp

from sqlclose.engine.base import Engine, FileRead
from sqlclose.engine.limits import parse_bytes

GLOB_CHARACTERS = frozenset("*?[]{}")
NUMBER_TYPES = ["BIGINT", "DOUBLE", "VARCHAR"]  # what an undeclared numeric CSV column may be sniffed as


def _table(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True))


@contextmanager
def _interruptible() -> Iterator[None]:
    """DuckDB turns Ctrl-C inside a query into its own error: give it back as the interrupt it is."""
    try:
        yield
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None
    except RuntimeError as e:
        if "interrupted" in str(e).lower():
            raise KeyboardInterrupt from None
        raise


def _qualified(table: str, database: str) -> exp.Table:
    """``schema.table`` names a table in a schema of the attached database; a plain name is main's."""
    schema, _, name = table.rpartition(".")
    if not schema:
        return exp.Table(this=exp.to_identifier(name, quoted=True), db=exp.to_identifier(database, quoted=True))
    return exp.Table(this=exp.to_identifier(name, quoted=True), db=exp.to_identifier(schema, quoted=True),
                     catalog=exp.to_identifier(database, quoted=True))


class DuckDBEngine(Engine):
    """Runs on a connection of its own, or on the caller's (then only temp objects are made)."""

    name = "duckdb"
    dialect = "duckdb"

    def __init__(self, connection: duckdb.DuckDBPyConnection | None = None, threads: int | None = None,
                 memory_limit: str | None = None, temp_directory: str | Path | None = None) -> None:
        """A connection of its own (with the given limits: DuckDB spills to ``temp_directory`` beyond
        ``memory_limit``), or the caller's, left as the caller set it."""
        self._own = connection is None
        settings = {"threads": threads, "memory_limit": memory_limit,
                    "temp_directory": str(temp_directory) if temp_directory else None}
        settings = {key: value for key, value in settings.items() if value is not None}
        if connection is not None and settings:
            raise ValueError("threads, memory_limit and temp_directory apply to a connection of sqlclose's own, "
                             "not to a caller's")
        self.con = connection if connection is not None else duckdb.connect(config=settings)
        self.memory_budget = parse_bytes(memory_limit) if memory_limit else None
        self._temp: list[tuple[str, str]] = []  # (kind, name) to drop on close
        self._links: Path | None = None  # folder of literal-path links, removed on close

    @staticmethod
    def is_connection(obj: object) -> bool:
        return isinstance(obj, duckdb.DuckDBPyConnection)

    def row_hash(self, alias: str, secret: exp.Expression) -> exp.Expression:
        # The low 64 bits of MD5(secret || the row as text) are a UBIGINT; SUM widens it to HUGEINT.
        text = exp.DPipe(this=secret, expression=exp.Cast(this=exp.column(alias), to=exp.DataType.build("VARCHAR")))
        return exp.Anonymous(this="MD5_NUMBER_LOWER", expressions=[text])

    def _run(self, sql: str, params: Sequence[Any] | None) -> pa.Table:
        with _interruptible():
            return self.con.sql(sql, params=self.bind(params) if params else None).to_arrow_table()

    def _execute(self, sql: str, params: Sequence[Any] | None) -> None:
        with _interruptible():
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

    def source_relation(self, read: FileRead) -> exp.Expression:
        name = self.temp_name("source")
        if read.kind == "duckdb":
            alias = self.temp_name("db")
            attach = exp.Attach(this=exp.alias_(exp.Placeholder(this="1"), exp.to_identifier(alias, quoted=True)),
                                expressions=[exp.AttachOption(this=exp.var("READ_ONLY"))])
            self.execute(attach, [str(read.path)])
            self._temp.append(("database", alias))
            return _qualified(read.table, alias)
        path = str(read.path) if read.glob else self._literal(read.path)
        if read.kind == "csv":
            # Parsed once into a temp table: the search, the release and the checks all read it.
            return self.create_temp_table(name, *self._read_csv(path, read))
        if read.kind == "parquet":
            self.con.read_parquet(path).create_view(name)
            self._temp.append(("view", name))
            return _table(name)
        raise ValueError(f"unknown source kind {read.kind!r}")

    def _literal(self, path: Path) -> str:
        """DuckDB expands * ? [ ] { } in file paths; a literal path holding them is read through a
        link of a plain name, so it reads that one file and never its look-alikes."""
        if not any(ch in GLOB_CHARACTERS for ch in str(path)):
            return str(path)
        if self._links is None:
            self._links = Path(tempfile.mkdtemp(prefix="sqlclose-links-"))
        link = self._links / f"source{len(list(self._links.iterdir()))}{''.join(path.suffixes[-1:])}"
        link.symlink_to(path.resolve())
        return str(link)

    def _read_csv(self, path: str, read: FileRead) -> tuple[exp.Expression, list[Any]]:
        """No sniffing: the header's columns, each read as the text it is, except declared types and
        numeric (ordered) columns; strict, so a ragged row is an error naming its line."""
        types = {name: read.types.get(name, "VARCHAR") for name in read.header}
        required = [c for c in read.numeric if c not in read.types and c in types]
        optional = [c for c in read.numbers_if_numeric if c not in read.types and c in types and c not in required]
        if required or optional:
            sniffed = self._sniff_numbers(path, read)
            types.update({c: sniffed.get(c, "DOUBLE") for c in required})
            types.update({c: sniffed.get(c, "VARCHAR") for c in optional})
        options = {"auto_detect": False, "header": True, "delim": read.delimiter, "quote": '"', "escape": '"',
                   "columns": types, "encoding": read.encoding, "nullstr": list(read.nulls)}
        args: list[exp.Expression] = [exp.Placeholder(this="1")]
        params: list[Any] = [path]
        for key, value in options.items():
            params.append(value)
            args.append(exp.EQ(this=exp.var(key), expression=exp.Placeholder(this=str(len(params)))))
        read_csv = exp.select(exp.Star()).from_(exp.Table(this=exp.Anonymous(this="read_csv", expressions=args)))
        return read_csv, params

    def _sniff_numbers(self, path: str, read: FileRead) -> dict[str, str]:
        """BIGINT or DOUBLE for columns of numbers (a sample decides); anything else reads as DOUBLE
        so that a stray text value fails with its line."""
        query = "SELECT Columns FROM sniff_csv($1, auto_type_candidates = $2, encoding = $3, delim = $4, header = true)"
        try:
            columns = self.fetch(query, [path, NUMBER_TYPES, read.encoding, read.delimiter]).column(0)[0].as_py()
        except Exception:  # an unreadable sample fails again, with its line, when the file is read
            return {}
        return {c["name"]: c["type"] for c in columns if c["type"] in ("BIGINT", "DOUBLE")}

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
        if self._links is not None:
            shutil.rmtree(self._links, ignore_errors=True)
            self._links = None
        if self._own:
            self.con.close()
