"""Writing a release in its output format: one writer per format, behind ``WRITERS``.

Every writer does the same three things: write the release to a temporary place, re-check it
from what was written (``verify``: the file read back — a CSV with the released columns' types, so
numbers stay numbers — or the table itself), and only then place it with its report as a pair.
Files (Parquet, CSV) go through ``files.Transaction``. A table in a DuckDB database is written
under a temporary name in the target database, verified from that table, and renamed in one
DuckDB transaction that also places the report; no other table is touched, and an existing
table is replaced only when asked. A new format is one ``Writer`` subclass and one line in
``WRITERS``.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import ValidationError
from sqlglot import exp

from sqlclose.engine import DuckDBEngine, Engine
from sqlclose.engine.duckdb import qualified, table_exists
from sqlclose.errors import EngineError, EnvironmentFailure, InputError, OutputExistsError
from sqlclose.model.spec import Output, catalog_name, default_report_path
from sqlclose.prepare.problem import Problem
from sqlclose.release import files
from sqlclose.release.checkpoints import checkpoint

CONTENT_DIGEST_KIND = "md5-sum-v1"  # Σ over rows of the low 64 bits of MD5(row as text): order-independent


@dataclass(frozen=True)
class Target:
    """Where a release goes: a path, its format (told by the suffix unless given), a table for a
    DuckDB database, the report's path, and whether an existing release may be replaced."""

    path: Path
    report: Path
    format: str
    table: str | None = None
    overwrite: bool = False
    partition_by: tuple[str, ...] = ()

    @classmethod
    def of(cls, path: str | Path, report: str | Path | None = None, format: str | None = None,
           table: str | None = None, overwrite: bool = False, partition_by: Sequence[str] = ()) -> Target:
        """Validated as the spec's [output] is: the format must fit the path's suffix."""
        try:
            out = Output(path=Path(path), format=format, table=table, report=Path(report) if report else None,
                         partition_by=list(partition_by))
            kind = out.kind
        except ValidationError as e:
            raise InputError(f"output {path}: {e.errors()[0]['msg'].removeprefix('Value error, ')}") from None
        except ValueError as e:
            raise InputError(f"output {path}: {e}") from None
        return cls(out.path, out.report_path, kind, out.table, overwrite, tuple(out.partition_by))


class Release(Protocol):
    """What a writer asks of a release (``release.Release``, ``gaa_release.GaaRelease``): its query
    for the write, the re-check of what was written, and the report. Named here, so that writers
    do not import the release they write, whose ``write`` calls them."""

    problem: Problem
    timings: dict[str, float]
    inputs: list[Path]

    @property
    def columns(self) -> list[str]: ...

    @property
    def released_rows(self) -> int: ...

    def query(self, dictionaries: bool = False) -> tuple[Any, list]: ...

    def query_for_write(self, dictionaries: bool = False) -> AbstractContextManager[tuple[Any, list]]: ...

    def verified_summary(self, written: exp.Expression) -> dict: ...

    def report(self, summary: dict | None = None, path: Path | None = None, digest: str | None = None, *,
               verified: bool | None = None, output_format: str = "parquet", table: str | None = None,
               content_digest: str | None = None, column_types: dict[str, str] | None = None,
               partition_by: Sequence[str] = ()) -> dict: ...


class Writer(ABC):
    """Writes a release in one format: ``refuse`` (before the search) and ``write``."""

    format: ClassVar[str]

    @abstractmethod
    def refuse(self, target: Target, inputs: list[Path]) -> None:
        """Raise when the target cannot or must not be written (exists, is an input, blocked)."""

    @abstractmethod
    def write(self, release: Release, target: Target) -> dict:
        """Write, verify from what was written, place with the report; return the report."""


class FileWriter(Writer):
    """A release that is one file (Parquet, CSV): written to a hidden temporary file beside the
    target, verified from it, and placed with its report by ``files.Transaction``."""

    def refuse(self, target: Target, inputs: list[Path]) -> None:
        files.refuse_unsafe_targets(target.path, target.report, inputs, target.overwrite, kind=self.format)

    def write(self, release: Release, target: Target) -> dict:
        with release.query_for_write(self._dictionaries(target)) as (query, params):
            self._check(release, target, query, params)
            with files.Transaction(target.path, target.report, target.overwrite) as txn:
                started = time.perf_counter()
                types = self._types(release, target, query, params)
                self._copy(release, target, query, params, txn.data)
                files.fsync(txn.data)
                release.timings["write_seconds"] = time.perf_counter() - started
                checkpoint("write")
                summary = release.verified_summary(self._read_back(release, target, query, params, txn.data, types))
                digest = files.sha256(txn.data)
                doc = release.report(summary, target.path, digest, output_format=self.format,
                                     column_types=types, partition_by=target.partition_by)
                txn.report.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
                files.fsync(txn.report)
                checkpoint("place")
                txn.commit(digest)
        return doc

    def _dictionaries(self, target: Target) -> bool:
        """Whether the release query this format writes (built once: checked, copied and read back
        as is) asks for the engine's dictionary types (``Release.query``)."""
        return False

    def _check(self, release: Release, target: Target, query: exp.Expression, params: list) -> None:
        """Refuse what the engine or the format cannot write, before anything is written."""

    def _types(self, release: Release, target: Target, query: exp.Expression, params: list) -> dict[str, str] | None:
        """The released columns' types, when the format does not keep them itself."""
        return None

    @abstractmethod
    def _copy(self, release: Release, target: Target, query: exp.Expression, params: list, path: Path) -> None: ...

    @abstractmethod
    def _read_back(self, release: Release, target: Target, query: exp.Expression, params: list, path: Path,
                   types: dict[str, str] | None) -> exp.Expression: ...


# Per type the engine's Parquet writer does not keep: what it writes instead, and what a [source]
# query can make of it that Parquet keeps.
_PARQUET_FIXES = {
    "HUGEINT": ("DuckDB writes HUGEINT and UHUGEINT as DOUBLE, rounding them",
                "CAST({c} AS DECIMAL(38, 0)) when its values have at most 38 digits, else CAST({c} AS VARCHAR)"),
    "TIME WITH TIME ZONE": ("DuckDB writes TIMETZ as the UTC time, dropping its offset",
                            "CAST({c} AS VARCHAR), or the time at one zone"),
    "INTERVAL": ("Parquet's INTERVAL holds whole milliseconds, so 1.5 ms would be written as 1 ms",
                 "CAST({c} AS VARCHAR) (its text, to the microsecond), or epoch_us({c}) (a BIGINT of "
                 "microseconds, a month counted as 30 days)"),
}


PARQUET_FORMATS = ("parquet", "parquet-folder")


def refuse_unkept_before_search(problem: Problem, output_format: str | None) -> None:
    """Refuse for a Parquet output, before the search, a sensitive or other column the engine's
    Parquet writer would change: every node releases those as they are (a quasi-identifier's type
    depends on its level, and is checked with the release query, ``refuse_unkept_in_parquet``)."""
    if output_format not in PARQUET_FORMATS:
        return
    qis = {qi.name for qi in problem.qis}
    columns = [name for name in problem.released if name not in qis]
    if columns:
        query = exp.select(*(exp.column(name, quoted=True) for name in columns)).from_(problem.source.copy())
        _refuse_unkept(problem.engine, query, [])


def refuse_unkept_in_parquet(release: Release, query: exp.Expression, params: list) -> None:
    """Refuse, before anything is written, a released column whose values the engine's Parquet
    writer changes (DuckDB: HUGEINT and UHUGEINT as DOUBLE, TIMETZ as UTC, INTERVAL to the
    millisecond). Its re-check refused
    such a release as altered (exit 4) on a valid input; CSV and DuckDB outputs keep them."""
    _refuse_unkept(release.problem.engine, query, params)


def _refuse_unkept(engine: Engine, query: exp.Expression, params: list) -> None:
    unkept = engine.parquet_unkept_columns(query, params)
    if not unkept:
        return
    name, kind = next(iter(unkept.items()))
    quoted = exp.to_identifier(name, quoted=True).sql("duckdb")
    why, fix = next((f for t, f in _PARQUET_FIXES.items() if t in kind), _PARQUET_FIXES["HUGEINT"])
    more = f" (and {len(unkept) - 1} more column(s): {', '.join(repr(c) for c in list(unkept)[1:])})" \
        if len(unkept) > 1 else ""
    raise InputError(f"column {name!r} is {kind}, which Parquet cannot hold as it is ({why}){more}: "
                     f"give it in a [source] query as {fix.format(c=quoted)}, or write CSV or a DuckDB table")


class ParquetWriter(FileWriter):
    format = "parquet"

    def _check(self, release: Release, target: Target, query: exp.Expression, params: list) -> None:
        engine = release.problem.engine
        if not engine.writes_parquet_file:
            raise InputError(f"the {engine.name} engine writes Parquet folders, not one file: give the output a path "
                             "without a suffix (a Parquet folder)")
        refuse_unkept_in_parquet(release, query, params)

    def _dictionaries(self, target: Target) -> bool:
        return True

    def _copy(self, release: Release, target: Target, query: exp.Expression, params: list, path: Path) -> None:
        release.problem.engine.copy_to_parquet(query, path, params)

    def _read_back(self, release: Release, target: Target, query: exp.Expression, params: list, path: Path,
                   types: dict[str, str] | None) -> exp.Expression:
        return release.problem.engine.read_parquet(path)


class ParquetFolderWriter(FileWriter):
    """A folder of Parquet files (release/folder.py), optionally Hive-partitioned; the engine's
    native output on Spark. Placed like a file: the Transaction renames folders too."""

    format = "parquet-folder"

    def _check(self, release: Release, target: Target, query: exp.Expression, params: list) -> None:
        from sqlclose.release.folder import check_partitions  # only folder releases load (and compile) it

        refuse_unkept_in_parquet(release, query, params)
        check_partitions(target.partition_by, release.problem.engine, query, params, release.columns)

    def _dictionaries(self, target: Target) -> bool:
        # A partition column's type names its folders: a partitioned release keeps its plain types.
        return not target.partition_by

    def _types(self, release: Release, target: Target, query: exp.Expression, params: list) -> dict[str, str] | None:
        """The partition columns' types, which folder names do not keep (read back they are text):
        ``check --against`` reads them with these, as the write's own re-check does."""
        if not target.partition_by:
            return None
        from sqlclose.release.folder import sql_type

        schema = release.problem.engine.schema(query.subquery(), params)
        return {c: sql_type(schema.field(c).type).sql("duckdb") for c in target.partition_by}

    def _copy(self, release: Release, target: Target, query: exp.Expression, params: list, path: Path) -> None:
        release.problem.engine.copy_to_parquet_folder(query, path, params, target.partition_by, release.released_rows)

    def _read_back(self, release: Release, target: Target, query: exp.Expression, params: list, path: Path,
                   types: dict[str, str] | None) -> exp.Expression:
        from sqlclose.release.folder import read_folder

        return read_folder(release.problem.engine, path, types or {}, release.columns)


class CsvWriter(FileWriter):
    """CSV with a header, read back with the released columns' own types for the re-check (and
    recorded in the report's ``output.column_types`` for ``sqlclose check --against``)."""

    format = "csv"

    def _types(self, release: Release, target: Target, query: exp.Expression, params: list) -> dict[str, str]:
        types = _duckdb(release, "a CSV output").column_types(query, params)
        nested = [f"{c!r} ({t})" for c, t in types.items() if t.endswith("]") or t.startswith(("STRUCT", "MAP",
                                                                                              "UNION"))]
        if nested:
            raise InputError(f"CSV cannot hold the nested column(s) {', '.join(nested)}; write Parquet instead")
        return types

    def _copy(self, release: Release, target: Target, query: exp.Expression, params: list, path: Path) -> None:
        _duckdb(release, "a CSV output").copy_to_csv(query, path, params)

    def _read_back(self, release: Release, target: Target, query: exp.Expression, params: list, path: Path,
                   types: dict[str, str] | None) -> exp.Expression:
        return _duckdb(release, "a CSV output").read_csv_typed(path, types or {})


_TEMP_TABLE = re.compile(r"^__sqlclose_new_(?P<pid>\d+)_(?P<token>[0-9a-f]+)$")


class DuckDBTableWriter(Writer):
    """A table in a DuckDB database file: a temporary table in the target database (its schema),
    verified from the table, then renamed — with the report placed — in one DuckDB transaction."""

    format = "duckdb"

    def refuse(self, target: Target, inputs: list[Path]) -> None:
        for path in (target.path, target.report):
            files.refuse_blocked_folder(path)
        if files.same(target.path, target.report):
            raise OutputExistsError(f"the report path is the output path ({target.path}); give the report its own file")
        for source in inputs:
            if files.same(target.path, source):
                raise OutputExistsError(f"the output database {target.path} is {files.read_by_job(target.path, source)}"
                                        "; write the release to another database file")
        if target.path.is_dir():
            raise OutputExistsError(f"the output path {target.path} is a directory, not a database file")
        try:
            exists = table_exists(target.path, target.table)
        except Exception as e:  # not a database, or locked by another process (the environment's: exit 5)
            if "same database file with a different configuration" in str(e):  # DuckDB's words for the case
                raise InputError(f"the output database {target.path} is open in this process on another connection "
                                 "(say, the one a source table was read from), which sqlclose cannot share: write "
                                 "the release to another database file, or close that connection first") from None
            raise EnvironmentFailure.from_engine(e, target.path) or InputError(
                f"cannot open the output database {target.path}: {str(e).splitlines()[0]}") from None
        if exists and not target.overwrite:
            raise OutputExistsError(f"table {target.table!r} already exists in {target.path}; pass overwrite "
                                    "(--overwrite) to replace it")
        if target.report.exists() and not target.overwrite:
            raise OutputExistsError(f"{target.report} already exists; pass overwrite (--overwrite) to replace it")

    def write(self, release: Release, target: Target) -> dict:
        engine = _duckdb(release, "a DuckDB database output")
        existed = target.path.exists()
        schema, _, name = target.table.rpartition(".")
        schema = schema or "main"
        token = files.run_token("_")
        temp_name = f"__sqlclose_new_{token}"
        target.path.parent.mkdir(parents=True, exist_ok=True)  # as a file output's folder is made
        alias = engine.attach(target.path)
        temp = qualified(f"{schema}.{temp_name}", alias)
        report = ReportPlacement(target.report, target.overwrite, token)
        try:
            self._require_schema(engine, alias, schema, target)
            ReportPlacement.recover(target.report, uncommitted=self._drop_dead_temporaries(engine, alias))
            started = time.perf_counter()
            query, params = release.query()
            engine.execute(exp.Create(this=temp, kind="TABLE", expression=query), params)
            release.timings["write_seconds"] = time.perf_counter() - started
            checkpoint("write")
            summary = release.verified_summary(temp)
            doc = release.report(summary, target.path, None, output_format=self.format, table=target.table,
                                 content_digest=content_digest(engine, temp), verified=True)
            report.write(doc)
            checkpoint("place")
            self._commit(engine, temp, qualified(f"{schema}.{name}", alias), name, target.overwrite, report)
        except BaseException:
            _quietly(engine, "ROLLBACK")
            report.undo()
            _quietly(engine, exp.Drop(tables=[temp], kind="TABLE", exists=True))
            _quietly(engine, lambda: engine.detach(alias))
            if not existed:  # the database was made by this run: it goes with it
                for leftover in (target.path, target.path.with_name(target.path.name + ".wal")):
                    leftover.unlink(missing_ok=True)
            raise
        finally:
            report.cleanup()
        engine.detach(alias)
        return doc

    @staticmethod
    def _require_schema(engine: DuckDBEngine, alias: str, schema: str, target: Target) -> None:
        found = engine.fetch("SELECT schema_name FROM duckdb_schemas() WHERE database_name = $1",
                             [alias]).column("schema_name").to_pylist()
        if catalog_name(schema) not in map(catalog_name, found):  # DuckDB's match: PUB is pub
            raise InputError(f"the output database {target.path} has no schema {schema!r}; create it (CREATE SCHEMA "
                             f"{schema}) or name the table without it")

    @staticmethod
    def _drop_dead_temporaries(engine: DuckDBEngine, alias: str) -> set[tuple[str, str]]:
        """Temporary tables of runs that were killed (their process is gone) are removed. Returns
        those runs' (pid, token): a run's temporary table is renamed by its COMMIT, so each of them
        died before committing."""
        found = engine.fetch("SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = $1",
                             [alias]).to_pylist()
        dead = set()
        for row in found:
            m = _TEMP_TABLE.match(row["table_name"])
            if m and not files.alive(int(m["pid"]), m["token"]):
                name = qualified(f"{row['schema_name']}.{row['table_name']}", alias)
                engine.execute(exp.Drop(tables=[name], kind="TABLE", exists=True))
                dead.add((m["pid"], m["token"]))
        return dead

    @staticmethod
    def _commit(engine: DuckDBEngine, temp: exp.Table, final: exp.Table, name: str, overwrite: bool,
                report: ReportPlacement) -> None:
        """One DuckDB transaction: the old table goes (when replacing), the new one takes its name,
        and the report is placed before the commit (undone if the commit fails)."""
        engine.execute("BEGIN TRANSACTION")
        if overwrite:
            engine.execute(exp.Drop(tables=[final], kind="TABLE", exists=True))
        rename = exp.Alter(this=temp, kind="TABLE",
                           actions=[exp.AlterRename(this=exp.Table(this=exp.to_identifier(name, quoted=True)))])
        engine.execute(rename)
        report.place()
        engine.execute("COMMIT")
        report.done()


class ReportPlacement:
    """The report of a table output: written hidden beside its target, placed by a hard link (an
    old report set aside when replacing), undone on failure."""

    def __init__(self, path: Path, overwrite: bool, token: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.overwrite = path, overwrite
        self.temp = path.with_name(f".{path.name}.sqlclose-{token.replace('_', '-')}.tmp")
        self.old = path.with_name(f".{path.name}.sqlclose-{token.replace('_', '-')}.old")
        self._placed = self._aside = False

    @staticmethod
    def recover(path: Path, uncommitted: set[tuple[str, str]]) -> None:
        """A killed run's hidden report files (the database's lock, held now, says no other run is
        placing one). The report in place is its own if it equals its temporary (kept until the
        run ends); placed by a run in ``uncommitted`` (its table never committed), it goes. The old
        report it set aside comes back when no report is in place, else goes; its temporary goes."""
        dead = [(hidden, name) for hidden, name in files._hidden_files(path)
                if not files.alive(int(name["pid"]), name["token"])]
        for hidden, name in dead:
            if name["kind"] == "tmp" and (name["pid"], name["token"]) in uncommitted and path.exists() \
                    and filecmp.cmp(hidden, path, shallow=False):
                path.unlink()
        for hidden, name in dead:
            if name["kind"] == "old" and not path.exists():
                os.replace(hidden, path)
            else:
                files.remove(hidden)

    def write(self, doc: dict) -> None:
        self.temp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        files.fsync(self.temp)

    def place(self) -> None:
        if self.overwrite and self.path.exists():
            os.replace(self.path, self.old)
            self._aside = True
        files.place(self.temp, self.path, keep=True)  # the temporary tells a later run which report this is
        self._placed = True

    def done(self) -> None:
        """The table's COMMIT went through: the new report stands (nothing to undo), the old goes."""
        self._placed = self._aside = False
        self.old.unlink(missing_ok=True)
        files.fsync_dir(self.path.parent)

    def undo(self) -> None:
        if self._placed:
            self.path.unlink(missing_ok=True)
        if self._aside and self.old.exists():
            os.replace(self.old, self.path)

    def cleanup(self) -> None:
        self.temp.unlink(missing_ok=True)


def content_digest(engine: DuckDBEngine, relation: exp.Expression) -> str:
    """What a table output holds, independent of row order (a table has no bytes to hash)."""
    row = exp.Anonymous(this="MD5_NUMBER_LOWER", expressions=[
        exp.Cast(this=exp.column("t"), to=exp.DataType.build("VARCHAR"))])
    query = exp.select(exp.func("COALESCE", exp.Sum(this=row), exp.Literal.number(0)).as_("d")).from_(
        exp.alias_(relation.copy(), "t", table=True))
    return f"{CONTENT_DIGEST_KIND}:{engine.fetch(query).column('d')[0].as_py()}"


def _duckdb(release: Release, what: str) -> DuckDBEngine:
    engine = release.problem.engine
    if not isinstance(engine, DuckDBEngine):
        raise InputError(f"{what} is written by the DuckDB engine; the {engine.name} engine writes Parquet")
    return engine


def _quietly(engine: DuckDBEngine, action: object) -> None:
    try:
        action() if callable(action) else engine.execute(action)
    except (EngineError, OSError):
        pass


WRITERS: dict[str, Writer] = {"parquet": ParquetWriter(), "parquet-folder": ParquetFolderWriter(), "csv": CsvWriter(),
                              "duckdb": DuckDBTableWriter()}


def writer_for(target: Target) -> Writer:
    if target.format == "sql":
        raise InputError(f"{target.path} would hold a release query: that is the warehouse path (sqlclose anonymize "
                         "--histogram, docs/warehouse.md); name a .parquet, .csv or .duckdb output here")
    try:
        return WRITERS[target.format]
    except KeyError:
        raise InputError(f"the output format {target.format!r} is not written yet (written: "
                         f"{', '.join(WRITERS)})") from None


def write_release(release: Release, target: Target) -> dict:
    """Refuse an unsafe target, then write with the format's writer; the machine's refusals
    (disk full, permission denied) become EnvironmentFailure."""
    writer = writer_for(target)
    writer.refuse(target, release.inputs)
    release.problem.engine.check_connection()  # a caller may have changed it since the search
    try:
        with files.folders_undone_on_failure(target.path, target.report):
            return writer.write(release, target)
    except OSError as e:
        raise EnvironmentFailure.from_os_error(e, target.path) from None
    except EngineError as e:
        raise EnvironmentFailure.from_engine(e, target.path) or e from None


__all__ = ["WRITERS", "Target", "Writer", "default_report_path", "write_release"]
