"""A DuckDB database output rebuilt in a fresh file: what the user keeps there, carried over, and
nothing of what the release replaces.

DuckDB frees a dropped table's blocks but never clears them: a table replaced in place (or a
killed run's temporary table, dropped by the next) stayed in the database file's bytes, so the
published file held the old release too (rv9 #1). The writer therefore builds a new file beside
the old one: the old file's catalog (schemas, tables, views, macros, sequences, types, indexes,
comments) copied by DuckDB's ``COPY FROM DATABASE … (SCHEMA)``, the tables' rows copied one table
at a time, less the table being replaced and sqlclose's own leftovers, which are never copied;
the release is then written there and placed like a file (``placing.Transaction``).

Two runs writing tables into one database take turns (``writing_lock``): each builds its new file
from the old one, so the run placing last would drop the other's table from the file it replaced.
A run holds an exclusive advisory lock on a hidden file beside the database
(``.x.duckdb.sqlclose.lock``) from before it reads the old file until its new one is placed;
another run waits for it, then builds on the file that run placed.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlglot import exp

from sqlclose.engine import DuckDBEngine
from sqlclose.errors import EnvironmentFailure, WaitWarning
from sqlclose.model.spec import catalog_name
from sqlclose.release import placing, recovery

WAIT_SECONDS = 3600.0  # the longest a run waits for another writing the same database to place its file

# The temporary table an earlier build wrote a release to inside the target database.
LEFTOVER_TABLE = re.compile(r"^__sqlclose_new_(?P<pid>\d+)_(?P<token>[0-9a-f]+)$")


def merge_log(engine: DuckDBEngine, path: Path) -> None:
    """Fold a write-ahead log left beside the old file (a writer that crashed) into it: the new file
    placed at ``path`` must not find the old file's log there and replay it."""
    if not path.with_name(path.name + ".wal").exists():
        return
    alias = engine.attach(path)
    try:
        engine.execute(f"CHECKPOINT {_name(alias)}")
    finally:
        engine.detach(alias)


def storage_version(engine: DuckDBEngine, alias: str) -> str | None:
    """The storage format of an attached database (``v1.0.0`` from DuckDB's ``v1.0.0+``): the new
    file keeps it, so that the DuckDB versions that read the old file read the new one."""
    rows = engine.fetch("SELECT tags FROM duckdb_databases() WHERE database_name = $1", [alias]).to_pylist()
    tags = dict(rows[0]["tags"]) if rows else {}
    return (tags.get("storage_version") or "").rstrip("+") or None


def leftovers(engine: DuckDBEngine, alias: str) -> list[tuple[str, str, re.Match]]:
    """sqlclose's temporary tables in the database, (schema, table, its name's match): an earlier
    build's runs killed before their COMMIT (a run holding the database's lock is the only one
    writing it, and this build writes none)."""
    found = engine.fetch("SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = $1",
                         [alias]).to_pylist()
    return [(row["schema_name"], row["table_name"], m) for row in found
            if (m := LEFTOVER_TABLE.match(row["table_name"])) and not recovery.alive(int(m["pid"]), m["token"])]


def carry_over(engine: DuckDBEngine, old: str, new: str, replaced: tuple[str, str] | None) -> None:
    """Copy the old database into the new one but for the table ``replaced`` ((schema, table), as
    DuckDB matches names) and sqlclose's leftovers, whose rows are never read."""
    engine.execute(f"COPY FROM DATABASE {_name(old)} TO {_name(new)} (SCHEMA)")
    skipped = {_identity(schema, table) for schema, table, _ in leftovers(engine, old)}
    if replaced is not None:
        skipped.add(_identity(*replaced))
    tables = _tables_parents_first(engine, new)
    for schema, table in reversed(tables):  # dependents first: a key may reference a skipped table
        if _identity(schema, table) in skipped:  # empty in the new file: its catalog entry alone goes
            engine.execute(exp.Drop(tables=[table_in(new, schema, table)], kind="TABLE"))
    for schema, table in tables:
        if _identity(schema, table) not in skipped:
            _copy_rows(engine, old, new, schema, table)


def _tables_parents_first(engine: DuckDBEngine, alias: str) -> list[tuple[str, str]]:
    """The database's tables, each after the tables its foreign keys reference (a child's rows
    need their parents'), dependents last so that a referenced table can be dropped after them."""
    tables = [(r["schema_name"], r["table_name"]) for r in engine.fetch(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = $1 ORDER BY ALL",
        [alias]).to_pylist()]
    references = engine.fetch(
        "SELECT schema_name, table_name, referenced_table FROM duckdb_constraints() WHERE database_name = $1 "
        "AND constraint_type = 'FOREIGN KEY'", [alias]).to_pylist()
    parents = {t: {(r["schema_name"], r["referenced_table"]) for r in references
                   if (r["schema_name"], r["table_name"]) == t and r["referenced_table"] != t[1]} for t in tables}
    ordered: list[tuple[str, str]] = []
    while len(ordered) < len(tables):
        ready = [t for t in tables if t not in ordered and {p for p in parents[t] if p in parents} <= set(ordered)]
        ordered.extend(ready or [t for t in tables if t not in ordered])  # a cycle: DuckDB then says which key
    return ordered


def _copy_rows(engine: DuckDBEngine, old: str, new: str, schema: str, table: str) -> None:
    """INSERT … SELECT of a table's stored columns (a generated column is computed, not stored)."""
    columns = engine.fetch(
        "SELECT column_name FROM duckdb_columns() WHERE database_name = $1 AND schema_name = $2 AND table_name = $3 "
        "AND NOT is_generated ORDER BY column_index", [old, schema, table]).column("column_name").to_pylist()
    names = [exp.column(c, quoted=True) for c in columns]
    source = exp.select(*names).from_(table_in(old, schema, table))
    target = exp.Schema(this=table_in(new, schema, table), expressions=[n.this.copy() for n in names])
    engine.execute(exp.Insert(this=target, expression=source))


def create_table(engine: DuckDBEngine, table: exp.Table, query: exp.Expression, params: list) -> None:
    """``table`` holding ``query``'s rows, its text columns plain ``VARCHAR``. A source read from
    DuckDB has its text re-collated to ``binary`` (``compared_as_bytes``), which a CREATE TABLE AS
    kept in the table's schema (and no CAST drops): the same rows read from Parquet gave ``VARCHAR``.
    The table is made empty from the query, its text columns' type set anew, then filled."""
    empty = exp.select(exp.Star()).from_(query.subquery("release")).limit(0)
    engine.execute(exp.Create(this=table.copy(), kind="TABLE", expression=empty), params)
    types = engine.column_types(exp.select(exp.Star()).from_(table.copy()))
    for name in (name for name, kind in types.items() if kind == "VARCHAR"):
        engine.execute(exp.Alter(this=table.copy(), kind="TABLE", actions=[exp.AlterColumn(
            this=exp.to_identifier(name, quoted=True), dtype=exp.DataType.build("VARCHAR"))]))
    engine.execute(exp.Insert(this=table.copy(), expression=query), params)


def _identity(schema: str, table: str) -> tuple[str, str]:
    return catalog_name(schema), catalog_name(table)


def table_in(alias: str, schema: str, table: str) -> exp.Table:
    """A table named by its parts (a name may hold a dot), in an attached database."""
    return exp.Table(this=exp.to_identifier(table, quoted=True), db=exp.to_identifier(schema, quoted=True),
                     catalog=exp.to_identifier(alias, quoted=True))


def _name(alias: str) -> str:
    return exp.to_identifier(alias, quoted=True).sql("duckdb")


def lock_path(database: Path) -> Path:
    """The hidden file whose lock a run writing ``database`` holds (``writing_lock``)."""
    return database.with_name(f".{database.name}.sqlclose.lock")


@contextmanager
def writing_lock(database: Path) -> Iterator[None]:
    """Hold the exclusive lock of ``database``'s lock file while the block reads the old file and
    places the new one; wait (at most ``WAIT_SECONDS``) for a run holding it. The file is removed
    on leaving, while still locked: a run waiting on it then finds it gone and locks a new one."""
    lock = lock_path(database)
    fd = _acquire(lock, database)
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)
        os.close(fd)  # releases the lock


def remove_stale_lock(database: Path) -> None:
    """Remove the lock file a killed run left (no run holds its lock), as its other files are."""
    lock = lock_path(database)
    try:
        fd = _open_lock(lock, create=False)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if _names(lock, fd):
            lock.unlink()
    except OSError:  # a run holds it (or no flock here): not stale
        pass
    finally:
        os.close(fd)


def _acquire(lock: Path, database: Path) -> int:
    """An open, locked descriptor of the file now named ``lock``."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        fd = _open_lock(lock)
        try:
            _wait_for_lock(fd, deadline, database)
            if _names(lock, fd):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # its holder removed it on leaving: lock the file named so now


def _open_lock(lock: Path, create: bool = True) -> int:
    """A descriptor of the lock file, made readable and writable by all the umask allows: users
    sharing a group-writable folder and database each lock it. One another user made, that this
    one may not write, is opened read-only: flock locks a read-only descriptor too."""
    try:
        return os.open(lock, os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0), 0o666)
    except PermissionError as refused:
        try:
            return os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:  # the folder refused making it: that is the reason to tell
            raise refused from None


def _wait_for_lock(fd: int, deadline: float, database: Path) -> None:
    """Without flock on this filesystem the commit still refuses a file replaced meanwhile."""
    placing.lock_exclusively(fd, deadline, EnvironmentFailure(
        f"another sqlclose run has been writing to the output database {database} for {WAIT_SECONDS / 60:.0f} min; "
        "nothing was placed at the output path: run again once it is done, or check for a stopped sqlclose "
        f"process (it holds {lock_path(database).name})"), on_wait=lambda: _say_it_waits(database))


def _say_it_waits(database: Path) -> None:
    """The wait may last an hour: a job's log says why it seems to hang (the command prints the
    warning as one line on stderr, none under --quiet)."""
    warnings.warn(f"another sqlclose run is writing to the output database {database} (it holds the lock file "
                  f"{lock_path(database)}); this run waits for it to finish, at most {WAIT_SECONDS / 60:.0f} min",
                  WaitWarning, stacklevel=2)


def _names(lock: Path, fd: int) -> bool:
    """Whether ``lock`` still names the file open at ``fd`` (its holder removes it on leaving)."""
    try:
        named = os.stat(lock)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
