"""Writing a release in its output format: one writer per format, behind ``WRITERS``.

Every writer does the same three things: write the release to a temporary place, re-check it
from what was written (``verify``: the file read back — a CSV with the released columns' types, so
numbers stay numbers — or the table itself), and only then place it with its report as a pair.
Files (Parquet, CSV) go through ``placing.Transaction``. A table in a DuckDB database too: the
database is rebuilt in a fresh file beside it — its other objects carried over, the table replaced
never copied, since DuckDB leaves a dropped table's rows in the file's bytes (``database_file``) —
the release written and verified there, and the new file placed with the report; an existing table
is replaced only when asked. A new format is one ``Writer`` subclass and one line in ``WRITERS``.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
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
from sqlclose.engine.duckdb import TableSlot, holds_variant_or_union, table_slot
from sqlclose.errors import DatabaseLocked, EngineError, EnvironmentFailure, InputError, OutputExistsError, writing_file
from sqlclose.model import mending
from sqlclose.model.spec import Output, catalog_name, default_report_path, table_parts, typed_name
from sqlclose.model.text import agreeing, counted, name_shown, named
from sqlclose.prepare.problem import Problem
from sqlclose.release import database_file, files, placing, recovery
from sqlclose.release.checkpoints import checkpoint
from sqlclose.release.table_digest import content_digest, refuse_untold


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
    replacing: files.FoundPair | None = None  # the pair overwrite was granted for alone (--force)

    @classmethod
    def of(cls, path: str | Path, report: str | Path | None = None, format: str | None = None,
           table: str | None = None, overwrite: bool = False, partition_by: str | Sequence[str] = (),
           replacing: files.FoundPair | None = None) -> Target:
        """Validated as the spec's [output] is: the format must fit the path's suffix. A text
        ``partition_by`` is one column (``list`` made "zip" the columns 'z', 'i' and 'p')."""
        columns = [partition_by] if isinstance(partition_by, str) else list(partition_by)
        for given, role in ((path, "output"), (report, "report")):
            if given is not None and Path(given).name in ("", ".", ".."):  # '.', '', '/', '..'
                raise InputError(f"the {role} path {name_shown(str(given))} names no file: give one ending in a file's "
                                 "or a folder's name, e.g. out/release.parquet")
        try:
            out = Output(path=Path(path), format=format, table=table, report=Path(report) if report else None,
                         partition_by=columns)
            kind = out.kind
        except ValidationError as e:
            raise InputError(f"output {path}: {e.errors()[0]['msg'].removeprefix('Value error, ')}") from None
        except ValueError as e:
            raise InputError(f"output {path}: {e}") from None
        return cls(out.path, out.report_path, kind, out.table, files.overwrite_given(overwrite),
                   tuple(out.partition_by), replacing)


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
    def node(self) -> dict[str, int] | None: ...

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

    def data_file(self, target: Target) -> Path:
        """The file (or folder) the release is placed at (a symlink's target, the link kept:
        ``files.placed_at``), named when its write fails."""
        return files.placed_at(target.path)

    def recover(self, target: Target) -> None:
        """Settle a run that died placing a release at ``target`` (its pair kept past its commit
        mark, else the previous pair put back), before this run's search: a run that then stops
        early must not leave the output path without its release."""
        placing.recover_output(self.data_file(target), target.report)


class FileWriter(Writer):
    """A release that is one file (Parquet, CSV): written to a hidden temporary file beside the
    target, verified from it, and placed with its report by ``placing.Transaction``."""

    def refuse(self, target: Target, inputs: list[Path]) -> None:
        files.refuse_undecodable_path(target.path, target.report)
        files.refuse_unsafe_targets(target.path, target.report, inputs, target.overwrite, kind=self.format,
                                    replacing=target.replacing is not None)

    def write(self, release: Release, target: Target) -> dict:
        with release.query_for_write(self._dictionaries(target)) as (query, params):
            self._check(release, target, query, params)
            with placing.Transaction(self.data_file(target), target.report, target.overwrite,
                                   replacing=target.replacing) as txn:
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
                _write_report(txn, doc, target)
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


# Per type the engine's Parquet writer does not keep: what it writes instead, the SQL that makes of it
# what Parquet keeps (of the column ``{c}``), and what else the SQL could make (said where the source
# takes SQL: a [source] query, a relation's, a view's; ``_refuse_columns``).
_PARQUET_FIXES = {
    "HUGEINT": ("DuckDB writes HUGEINT and UHUGEINT as DOUBLE, rounding them", "CAST({c} AS DECIMAL(38, 0))",
                ", which holds values of at most 38 digits; else CAST({c} AS VARCHAR)"),
    "TIME WITH TIME ZONE": ("DuckDB writes TIMETZ as the UTC time, dropping its offset", "CAST({c} AS VARCHAR)",
                            ", which keeps its offset; or the time at one zone"),
    "INTERVAL": ("Parquet's INTERVAL holds whole milliseconds, so 1.5 ms would be written as 1 ms",
                 "CAST({c} AS VARCHAR)", ", which writes its text to the microsecond; or epoch_us({c}), a BIGINT of "
                 "microseconds, a month counted as 30 days"),
    "UNION(": ("DuckDB writes a UNION as a STRUCT of its tag's number and its members; Parquet has no union type",
               "CAST({c} AS VARCHAR)", ", which writes its value's text, with union_tag({c}) as another column if "
               "which member it holds matters"),
    # Review of the ninety-first round: two input orders gave two files.
    "VARIANT": ("a VARIANT's values of two types, 1 as INTEGER and as BIGINT, compare and read alike, so no order "
                "of the release's content tells their rows apart, and the file, which keeps the types, would be "
                "written in the input's order",
                "CAST({c} AS VARCHAR)", ", which writes its value's text, with variant_typeof({c}) as another column "
                "if its type matters"),
}


PARQUET_FORMATS = ("parquet", "parquet-folder")


def format_refused(engine_name: str, output_format: str) -> InputError:
    """An output format an engine does not write (Spark: Parquet folders alone)."""
    if output_format == "parquet":
        return InputError(f"the {engine_name} engine writes Parquet folders, not one file: give the output a path "
                          "without a suffix (a Parquet folder)")
    what = {"csv": "a CSV output", "duckdb": "a DuckDB database output"}.get(output_format, name_shown(output_format))
    return InputError(f"{what} is written by the DuckDB engine; the {engine_name} engine writes Parquet folders: give "
                      "the output a path without a suffix, or run on DuckDB")


def refuse_unwritten_format(engine_name: str, output_format: str | None) -> None:
    """Refuse, before the engine starts or the search runs, a format the engine does not write."""
    from sqlclose.engine.registry import writes_format

    if output_format is not None and not writes_format(engine_name, output_format):
        raise format_refused(engine_name, output_format)


def refuse_output_before_search(problem: Problem, output_format: str | None,
                                partition_by: Sequence[str] = ()) -> None:
    """What an output of ``output_format`` (partitioned by ``partition_by``) refuses of the columns
    every node releases as they are, the sensitive and other ones, told before the search (and by a
    dry run): a type Parquet or CSV cannot hold, a partition column not released or of a type a
    folder name cannot carry. A quasi-identifier's type depends on its level: it is checked with the
    release query, as the write checks every column again."""
    refuse_unwritten_format(problem.engine.name, output_format)
    if output_format == "duckdb" and isinstance(problem.engine, DuckDBEngine):
        refuse_read_only(problem.engine)
    if output_format is not None:
        refuse_invalid_text(problem)
    qis = {qi.name for qi in problem.qis}
    columns = [name for name in problem.released if name not in qis]
    query = exp.select(*(exp.column(name, quoted=True) for name in columns)).from_(problem.source.copy())
    if output_format in PARQUET_FORMATS and columns:
        _refuse_unkept(problem.engine, query, [], problem.kind)
    if output_format == "csv" and columns and isinstance(problem.engine, DuckDBEngine):
        _refuse_nested(problem.engine.column_types(query))
    if output_format == "duckdb" and columns and isinstance(problem.engine, DuckDBEngine):
        refuse_untold(problem.engine.column_types(query))
    if output_format == "parquet-folder" and partition_by:
        from sqlclose.release.folder import check_partitions

        check_partitions(partition_by, problem.engine, query, [], problem.released,
                         typed=[name for name in partition_by if name in columns])


def released_labels(release: Release) -> dict[str, list[str]]:
    """Of each quasi-identifier the release gives above its leaves, every text it can hold: its
    hierarchy's labels at the node's level, which the release writes from its lookup (or the top's
    one label). None of a QI at its leaves (the source's own values, matched to the leaves by the
    engine's equality) nor of GAA's release (no one level)."""
    node = release.node
    if node is None:
        return {}
    return {qi.name: qi.hierarchy.labels(node[qi.name]) for qi in release.problem.qis if node[qi.name] > 0}


def refuse_read_only(engine: DuckDBEngine) -> None:
    """A DuckDB table output is built in a database the engine's connection attaches for writing,
    which a read-only connection cannot: DuckDB's own error came out as an internal one (exit 1)."""
    if engine.read_only:
        raise InputError("the DuckDB connection sqlclose runs on was opened read-only, so it cannot write a DuckDB "
                         "database output; write a Parquet or CSV file instead, or give a connection opened for "
                         "writing (duckdb.connect(path) without read_only)")


def refuse_unkept_in_parquet(release: Release, query: exp.Expression, params: list) -> None:
    """Refuse, before anything is written, a released column whose values the engine's Parquet
    writer changes (DuckDB: HUGEINT and UHUGEINT as DOUBLE, TIMETZ as UTC, INTERVAL to the
    millisecond, UNION as a STRUCT). Its re-check refused
    such a release as altered (exit 4) on a valid input; CSV and DuckDB outputs keep them."""
    problem = release.problem
    refuse_invalid_text(problem)
    _refuse_unkept(problem.engine, query, params, problem.kind)


def refuse_invalid_text(problem: Problem) -> None:
    """Text that is not UTF-8 in the released columns of the source, refused on an engine that
    reads such bytes as they are (``Engine.refuse_invalid_text``): once a problem (the output's
    checks before the search, then the write, a sweep's every write), remembered only once it
    passed: a source refused is read again by the next job, fixed or not (review of the round)."""
    if problem.text_checked:
        return
    problem.engine.refuse_invalid_text(problem.source, problem.released, problem.label)
    problem.text_checked = True


def refuse_unordered(release: Release, query: exp.Expression, params: list) -> None:
    """Refuse a released column the engine cannot sort (``Engine.unordered_columns``: Spark's
    VARIANT), in the words a Parquet write refuses it: ``to_arrow`` sorts the rows as a write does,
    and Spark's analysis error came out as the engine's failure (exit 1)."""
    unordered = release.problem.engine.unordered_columns(query, params)
    if unordered:
        _refuse_columns(release.problem.engine, unordered, release.problem.kind)


def _refuse_unkept(engine: Engine, query: exp.Expression, params: list, source_kind: str) -> None:
    """Refuse a column of ``query`` the engine's Parquet writer does not keep (``parquet_unkept_columns``)."""
    unkept = engine.parquet_unkept_columns(query, params)
    if unkept:
        _refuse_columns(engine, unkept, source_kind)


def _refuse_columns(engine: Engine, unkept: dict[str, str], source_kind: str) -> None:
    """Raise InputError for the first of ``unkept`` (each column's name: its type's name), naming the
    others: in the engine's own words where it has them (``Engine.unkept_refusal``: Spark's VARIANT,
    unwritten and unsorted alike), else with what Parquet keeps of it, said where a source of
    ``source_kind`` takes the change (``model.mending.mended``)."""
    name, kind = next(iter(unkept.items()))
    more = f" (and {counted(len(unkept) - 1, 'more column')}: {', '.join(name_shown(c) for c in list(unkept)[1:])})" \
        if len(unkept) > 1 else ""
    if (own := engine.unkept_refusal(name, kind)) is not None:  # the engine's words: its sources, its formats
        why, fix = own
        raise InputError(f"column {name_shown(name)} is {kind}, {why}{more}: {fix}")
    quoted = exp.to_identifier(name, quoted=True).sql("duckdb")
    why, sql, alternatives = next((f for t, f in _PARQUET_FIXES.items() if t in kind), _PARQUET_FIXES["HUGEINT"])
    # Said where the source takes it: a DataFrame, an Arrow table, a relation or a caller's table takes no
    # [source] query (one beside them is refused), and the first two no SQL at all: there, its text.
    in_python = source_kind in (mending.PANDAS, mending.ARROW)
    shown = name_shown(name)
    where = mending.mended(source_kind, name, sql.format(c=quoted), f"df[{shown}] = df[{shown}].astype('string')",
                           f"table = table.set_column(table.schema.get_field_index({shown}), {shown}, "
                           f"table[{shown}].cast('string'))", "" if in_python else alternatives.format(c=quoted))
    raise InputError(f"column {shown} is {kind}, which Parquet cannot hold as it is ({why}){more}: convert it "
                     f"{where}{_other_formats(kind)}")


def _other_formats(kind: str) -> str:
    """The outputs that hold a column of ``kind`` Parquet cannot: a DuckDB table holds no UNION or
    VARIANT, CSV no nested value (a UNION is one, a VARIANT one unless at the top)."""
    if not holds_variant_or_union(kind):
        return ", or write CSV or a DuckDB table"
    return ", or write CSV" if kind == "VARIANT" else ""


class ParquetWriter(FileWriter):
    format = "parquet"

    def _check(self, release: Release, target: Target, query: exp.Expression, params: list) -> None:
        engine = release.problem.engine
        refuse_unwritten_format(engine.name, "parquet")
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
        check_partitions(target.partition_by, release.problem.engine, query, params, release.columns,
                         labels=released_labels(release))

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


def _refuse_nested(types: dict[str, str]) -> None:
    nested = {c: t for c, t in types.items() if t.endswith("]") or t.startswith(("STRUCT", "MAP", "UNION"))}
    if nested:
        told = ", ".join(f"{name_shown(c)} ({t})" for c, t in nested.items())
        fix = ("give it as its text in a [source] query" if any(holds_variant_or_union(t) for t in nested.values())
               else "write Parquet instead")  # Parquet holds no UNION, nor a VARIANT sqlclose can order
        raise InputError(f"CSV cannot hold the nested {agreeing(len(nested), 'column', 'columns')} {told}; {fix}")


class CsvWriter(FileWriter):
    """CSV with a header, read back with the released columns' own types for the re-check (and
    recorded in the report's ``output.column_types`` for ``sqlclose check --against``)."""

    format = "csv"

    def _types(self, release: Release, target: Target, query: exp.Expression, params: list) -> dict[str, str]:
        types = _duckdb(release, "csv").column_types(query, params)
        _refuse_nested(types)
        return types

    def _copy(self, release: Release, target: Target, query: exp.Expression, params: list, path: Path) -> None:
        _duckdb(release, "csv").copy_to_csv(query, path, params)

    def _read_back(self, release: Release, target: Target, query: exp.Expression, params: list, path: Path,
                   types: dict[str, str] | None) -> exp.Expression:
        return _duckdb(release, "csv").read_csv_typed(path, types or {})


class DuckDBTableWriter(Writer):
    """A table in a DuckDB database file: the database rebuilt in a fresh file beside it (the
    user's objects carried over, the table replaced left out: ``database_file``), the release
    written and verified there, and the new file placed with its report as a pair."""

    format = "duckdb"

    def refuse(self, target: Target, inputs: list[Path]) -> None:
        files.refuse_undecodable_path(target.path, target.report)
        for path in (target.path, target.report):
            files.refuse_blocked_folder(path)
        files.refuse_long_names(target.path, target.report, target.table)
        if files.same(target.path, target.report):
            raise OutputExistsError(f"the report path is the output path ({target.path}); give the report its own file")
        for source in inputs:
            if files.same(target.path, source):
                raise OutputExistsError(f"the output database {target.path} is {files.read_by_job(target.path, source)}"
                                        "; write the release to another database file")
        if target.path.is_dir():
            raise OutputExistsError(f"the output path {target.path} is a directory, not a database file")
        self._refuse_slot(_slot(target, target.path), target)
        if target.report.exists() and not target.overwrite:
            raise OutputExistsError(f"{target.report} already exists; pass overwrite (--overwrite) to replace it")
        if target.report.exists() and target.replacing is None:
            files.refuse_foreign_report(target.report)
        files.refuse_stale_default_report(target.path, target.report, target.table)

    @staticmethod
    def _refuse_slot(slot: TableSlot, target: Target) -> None:
        """What the database holds where the table would go, refused before the search (and by a
        dry run): the write's own checks come after it."""
        if not slot.schema_exists:
            _refuse_missing_schema(target)
        if slot.kind == "view":  # the user's object, not a release: never replaced
            view = exp.to_identifier(slot.name, quoted=True).sql("duckdb")
            raise OutputExistsError(f"the output database {target.path} holds a view {name_shown(slot.name)} under the "
                                    f"name of the output table {name_shown(target.table)}; sqlclose replaces a table, "
                                    f"never a view: drop it (DROP VIEW {view}) or name another table (--output-table)")
        if slot.kind is not None and not target.overwrite:
            raise OutputExistsError(f"table {name_shown(target.table)} already exists in {target.path}; pass overwrite "
                                    "(--overwrite) to replace it")
        if slot.kind is not None and slot.referenced_by:  # the rebuilt file cannot leave it out
            raise InputError(f"the FOREIGN KEY of {named('table', slot.referenced_by)} references "
                             f"table {name_shown(slot.name)} in {target.path}, which overwrite would replace (dropping "
                             "it, that key would point at nothing): drop that key or its table first, or name another "
                             "table (--output-table)")

    def recover(self, target: Target) -> None:
        """A dead run's half move and its temporaries, as for a file: its new database beside the
        old one (``.x.duckdb.sqlclose-PID-TOKEN.tmp``, its ``.wal``) is a copy of every table of the
        database and of an unverified release, which a run finding the release up to date, a dry
        run or a failing one left for as long as no run wrote (review of the ninety-sixth round).
        An earlier build's killed table run left no file beside the database: it is told by the
        database's leftover table at the write, its hidden reports kept until then."""
        path = self.data_file(target)
        placing.recover_output(path, target.report, data_runs_only=True)
        database_file.remove_stale_lock(path)

    def write(self, release: Release, target: Target) -> dict:
        engine = _duckdb(release, "duckdb")
        refuse_read_only(engine)
        path = self.data_file(target)
        path.parent.mkdir(parents=True, exist_ok=True)  # as a file output's folder is made
        # Runs writing this database take turns from reading the old file to placing the new one:
        # each builds on the old file, and the one placing last would drop the other's table.
        with database_file.writing_lock(path):
            if target.replacing is not None and files.found_at(path) != target.replacing.data:
                raise files.changed_since_found(path)  # before anything of this run touches the file
            _recover_killed_table_run(engine, path, target.report)  # an earlier build's, before the Transaction's
            with placing.Transaction(path, target.report, target.overwrite, replaces_data=True,
                                   replacing=target.replacing) as txn:
                return self._write_placed(release, target, engine, path, txn)

    def _write_placed(self, release: Release, target: Target, engine: DuckDBEngine, path: Path,
                      txn: placing.Transaction) -> dict:
        """The new file built from the one at ``path`` (a dead run's move settled by the
        Transaction), written, verified and placed with its report."""
        if path.exists():
            database_file.merge_log(engine, path)
        self._refuse_slot(_slot(target, path), target)  # checked again: another run may have placed it since
        txn.builds_on(files.identity(path))  # what the commit may replace: this file, or none
        # Read-only, held until the new file is placed: DuckDB's lock keeps other writers out
        # meanwhile, whose changes the new file would silently lose.
        old = engine.attach(path, read_only=True) if path.exists() else None
        try:
            version = database_file.storage_version(engine, old) if old is not None else None
            doc = self._write_new_file(release, target, engine, old, txn.data, version)
            files.fsync(txn.data)  # a full disk names data_file: the database file, a symlink's target
            _write_report(txn, doc, target)
            if old is not None:
                shutil.copymode(path, txn.data)
            checkpoint("place")
            txn.commit(doc["output"]["content_digest"])  # the journal's mark: a database is not re-read
        finally:
            if old is not None:
                _quietly(engine, lambda: engine.detach(old))
        return doc

    def _write_new_file(self, release: Release, target: Target, engine: DuckDBEngine, old: str | None,
                        new_path: Path, version: str | None) -> dict:
        """The new database at ``new_path``: the old one's objects, then the release, verified from
        the table; detached (so complete on disk) before it is placed."""
        schema, name = table_parts(target.table)
        new = engine.attach(new_path, storage_version=version)
        try:
            self._require_schema(engine, new if old is None else old, schema, target)  # before any copy
            if old is not None:
                database_file.carry_over(engine, old, new, (schema, name) if target.overwrite else None)
            table = database_file.table_in(new, schema, name)
            started = time.perf_counter()
            query, params = release.query()
            refuse_untold(engine.column_types(query, params))  # a quasi-identifier's too, typed at its level
            database_file.create_table(engine, table, query, params)
            release.timings["write_seconds"] = time.perf_counter() - started
            checkpoint("write")
            summary = release.verified_summary(table)
            doc = release.report(summary, target.path, None, output_format=self.format, table=target.table,
                                 content_digest=content_digest(engine, table), verified=True)
            engine.detach(new)
        except BaseException:
            _quietly(engine, lambda: engine.detach(new))
            new_path.with_name(new_path.name + ".wal").unlink(missing_ok=True)
            raise
        return doc

    @staticmethod
    def _require_schema(engine: DuckDBEngine, alias: str, schema: str, target: Target) -> None:
        """Checked again in the file read: the database may have changed since ``refuse``."""
        found = engine.fetch("SELECT schema_name FROM duckdb_schemas() WHERE database_name = $1",
                             [alias]).column("schema_name").to_pylist()
        if catalog_name(schema) not in map(catalog_name, found):  # DuckDB's match: PUB is pub
            _refuse_missing_schema(target)


def _slot(target: Target, path: Path) -> TableSlot:
    """What the database at ``path`` (the target's, or the file a symlink names) holds where the table goes."""
    _refuse_foreign_file(path, target)
    try:
        return table_slot(path, target.table)
    except DatabaseLocked:  # read to write the release: told as the write's
        raise DatabaseLocked.held(target.path, "writing") from None
    except Exception as e:  # not a database, or one the machine refuses (the environment's: exit 5)
        if "same database file with a different configuration" in str(e):  # DuckDB's words for the case
            raise InputError(f"the output database {target.path} is open in this process on another connection "
                             "(say, the one a source table was read from), which sqlclose cannot share: write "
                             "the release to another database file, or close that connection first") from None
        raise EnvironmentFailure.from_engine(e, target.path) or InputError(
            f"cannot open the output database {target.path}: {str(e).splitlines()[0]}") from None


def _refuse_foreign_file(path: Path, target: Target) -> None:
    """A file at the output path that is no DuckDB database (its header names one at byte 8): another
    program's. DuckDB opened a SQLite file through an extension it tried to download ("Failed to
    download extension", exit 2 with nothing said of the file: review of the ninety-second round)."""
    if path.is_file() and path.stat().st_size and not files.is_database(path):  # an empty file DuckDB takes
        raise OutputExistsError(f"the output database {target.path} is not a DuckDB database (another program's "
                                "file); sqlclose adds its release as a table of a DuckDB database, and replaces no "
                                "other file: write it to another path")


def _refuse_missing_schema(target: Target) -> None:
    schema, name = table_parts(target.table)
    raise InputError(f"the output database {target.path} has no schema {name_shown(schema)}; create it (CREATE SCHEMA "
                     f"{exp.to_identifier(schema).sql('duckdb')}) or name the table without it ({typed_name([name])})")


def _recover_killed_table_run(engine: DuckDBEngine, path: Path, report: Path) -> None:
    """An earlier build wrote a table output inside the database, as a temporary table renamed at
    its COMMIT, and placed its report just before: a run of it killed in between left its
    temporary table (never carried into a new file) and maybe its report in place, the old report
    set aside. That report goes (it is the run's if it equals its temporary) and the old one comes
    back, before this run's Transaction removes the dead run's files."""
    if not path.exists():
        return
    alias = engine.attach(path, read_only=True)
    try:
        uncommitted = {(m["pid"], m["token"]) for _, _, m in database_file.leftovers(engine, alias)}
    finally:
        engine.detach(alias)
    dead = [(hidden, name) for hidden, name in recovery.hidden_files(report)
            if (name["pid"], name["token"]) in uncommitted]
    for hidden, name in dead:
        if name["kind"] == "tmp" and report.exists() and filecmp.cmp(hidden, report, shallow=False):
            report.unlink()
    for hidden, name in dead:
        if name["kind"] == "old" and not report.exists():
            os.replace(hidden, report)
        else:
            files.remove(hidden)


def _duckdb(release: Release, output_format: str) -> DuckDBEngine:
    engine = release.problem.engine
    if not isinstance(engine, DuckDBEngine):
        raise format_refused(engine.name, output_format)
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
        raise InputError(f"the output format {name_shown(target.format)} is not written yet (written: "
                         f"{', '.join(WRITERS)})") from None


def write_release(release: Release, target: Target) -> dict:
    """Refuse an unsafe target, then write with the format's writer; the machine's refusals
    (disk full, permission denied) become EnvironmentFailure."""
    writer = writer_for(target)
    writer.refuse(target, release.inputs)
    release.problem.engine.check_connection()  # a caller may have changed it since the search
    try:
        with placing.folders_undone_on_failure(target.path, target.report):
            return writer.write(release, target)
    except OSError as e:  # an error naming no file is the release's, unless writing_file said another
        raise EnvironmentFailure.from_os_error(e, writer.data_file(target)) from None
    except EngineError as e:
        raise EnvironmentFailure.from_engine(e, writer.data_file(target)) or e from None


def _write_report(txn: placing.Transaction, doc: dict, target: Target) -> None:
    """The report at its temporary name beside ``target.report``, which a full disk names."""
    with writing_file(target.report):
        txn.report.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        files.fsync(txn.report)


__all__ = ["WRITERS", "Target", "Writer", "default_report_path", "write_release"]
