"""A chosen generalization: its data, its metrics, and writing it safely.

Writing is all-or-nothing: DuckDB COPYs the release to a temporary file beside the target, the
file is fsynced and re-checked from disk (``verify``), and only then renamed into place, with
its JSON report beside it. On any failure the temporary file is removed and nothing is left at
the output path. An existing output is replaced only when asked.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from sqlglot import exp

from sqlclose._version import __version__, build
from sqlclose.engine.base import leaves_as_found
from sqlclose.errors import InputError, OutputExistsError
from sqlclose.model.arrays import arrow_table
from sqlclose.model.classes import ClassHistograms
from sqlclose.model.factorize import sorted_unique
from sqlclose.model.file_stamps import Stamp, refuse_changed_files
from sqlclose.model.lattice import Node, checked_node
from sqlclose.model.sparse_counts import SparseCounts, kept_totals
from sqlclose.model.spec import Search
from sqlclose.model.text import name_cut, name_shown
from sqlclose.prepare.digests import fingerprint_kind, rows_digest
from sqlclose.prepare.problem import Problem
from sqlclose.prepare.release_query import Counted, counted_columns, release_query
from sqlclose.privacy.cell_distances import distances_of_cells, largest_equal_of_cells
from sqlclose.privacy.criteria import SLICE_BYTES, Criterion, judge
from sqlclose.privacy.distances import distance, idle_level_warnings
from sqlclose.privacy.ordered_cells import ClassCells, OrderedTable
from sqlclose.release import files
from sqlclose.release.checkpoints import checkpoint
from sqlclose.release.report import (
    Generalization,
    HierarchyFile,
    InputSummary,
    Lattice,
    Output,
    Report,
    privacy_section,
    published_privacy,
    shown_labels,
)
from sqlclose.release.utility_section import full_domain_utility, published
from sqlclose.release.verify import compare, recheck_relation
from sqlclose.release.writers import Target, refuse_unordered, write_release
from sqlclose.search import SearchResult
from sqlclose.search.batch_runner import dense_bytes_allowed
from sqlclose.search.evaluated import Evaluated
from sqlclose.search.node_runner import NodeRunner
from sqlclose.sql import queries as q
from sqlclose.utility.information_loss import l1_closeness_value
from sqlclose.utility.metrics import average_class_size

MAX_LABELS_SHOWN = 20


def measure_node(problem: Problem, criteria: Sequence[Criterion], levels: Node,
                 read_from: Problem | None = None) -> tuple[Evaluated, ClassHistograms, np.ndarray]:
    """A node's classes (one GROUP BY), its outcome and its failing classes: how a given node is
    measured alone, by the run (``Release.at``) and by a dry run alike. ``read_from``: a copy of
    ``problem`` over the same base rows on another engine (the hybrid search's local one,
    ``search.hybrid.search_problem``), where the GROUP BY runs instead; the classes are the same
    arrays: ``class_histograms`` makes them from the rows' values alone (in any order, of any integer
    type), and their layout, dense or by cells, is still decided by ``problem``'s engine's budget."""
    on = problem if read_from is None else read_from
    hist = NodeRunner(on).histograms(tuple(range(len(problem.qis))), levels, keep=False,
                                     cells_past=dense_bytes_allowed(problem.engine.memory_budget))
    outcome = judge(hist, criteria, problem.rows, problem.max_suppressed)
    on.engine.release_cached_memory()  # the GROUP BY's pages back before the write
    return (Evaluated(levels, outcome.satisfied, outcome.classes, outcome.suppressed, outcome.discernibility),
            hist, outcome.failing)


@dataclass(frozen=True)
class SearchedRows:
    """A source that can change while the release is open, as it was searched: one read where it lives
    each time (a ``(connection, table)`` pair, a DataFrame, an Arrow table) by its rows' digest under the
    operator's key, else one of the run's own (``rows_digest``: published only as the report's
    fingerprint, ``digests.fingerprint_of``), a source of files by their stamps. A release written after
    an UPDATE held the new rows, re-checked against the new table, under the report's fingerprint of the
    old one."""

    source: exp.Expression  # as read (problem.source may be it less a column's NULL rows)
    key: str = field(repr=False)
    # Its rows_digest under ``key``; None: a source of files read where they lie, told changed by ``stamps`` alone.
    # Under the operator's key when one was given (the report's fingerprint is its HMAC on DuckDB, never
    # the typed digest itself; on Spark the keyed text digest is the fingerprint).
    digest: str | None = field(repr=False)
    # The files a source reads (a Parquet file or folder, a CSV, a DuckDB database), as they were when
    # the source was opened (``Opened.stamps``): a file's device, inode, size and modification time, a
    # folder's the paths and stamps of its table's files (``file_stamps.folder_stamp``). One replaced
    # before the write was published, its rows never judged, under a report that vouched for the old one
    # (review of the sixty-fourth round); one replaced during the scan, before they were stamped after
    # it, too (the ninety-sixth round's: model/file_stamps.py).
    stamps: dict[str, Stamp] = field(default_factory=dict)

    def refuse_changed(self, engine: Any, label: str) -> None:
        """Refuse rows other than the searched ones: a file read at every pass replaced or modified
        since the source was opened (its stamp), or, for a source the caller holds, the keyed
        digest of every row taken before the search read one (``rows_digest``)."""
        refuse_changed_files(self.stamps, label, "after the release was searched",
                             "the release would publish rows the search never judged; run the job again on the "
                             "source as it is now")
        if self.digest is not None and rows_digest(engine, self.source, self.key) != self.digest:
            raise InputError(f"{label} changed after the release was searched (its rows' fingerprint differs): the "
                             "release would publish rows the search never judged; run sqlclose.anonymize again on "
                             "the source as it is now, and leave it unchanged until the release is written (a "
                             "DataFrame or Arrow table is read where it lies, not copied), or pass a relation "
                             "(con.sql(\"SELECT * FROM …\")), which is read once")


@dataclass
class RunObjects:
    """What one run made on an engine the caller gave (``Engine.objects_made``), dropped once."""

    objects: list[Any] = field(default_factory=list)
    closed: bool = False


@dataclass(repr=False)  # the dataclass's repr printed the problem: internals, and the hierarchies' leaves
class Release:
    """The result of ``sqlclose.anonymize``: the optimal node and everything measured about it."""

    MADE_BY: ClassVar[str] = "sqlclose.anonymize"  # what makes a closed release again (its error says)
    problem: Problem
    search: SearchResult
    criteria: list[Criterion]
    spec_sha256: str
    source_label: str
    timings: dict[str, float] = field(default_factory=dict)
    owns_engine: bool = True  # False when the caller passed the engine in: theirs to close
    digest_key: str | None = None  # the operator's secret, keying the report's digests (files.keyed)
    inputs: list[Path] = field(default_factory=list)  # every file the job read: never an output
    # Per column: its hierarchy file, delimiter and the sha256 of the bytes the run read (api._hierarchy_files).
    hierarchy_files: dict[str, tuple[Path, str, str | None]] = field(default_factory=dict)
    selection: Search = field(default_factory=Search)  # the spec's [search]: the metric that chose the node
    node_given: bool = False  # the node was given (``at``, --node), not the search's optimum
    searched_rows: SearchedRows | None = None  # a source the caller may change: refused if it did (``SearchedRows``)
    source_path: Path | None = None  # the path its rows were read from (``Opened.path``): the report's input.path
    _hist: ClassHistograms | None = None
    _failing: np.ndarray | None = None
    _suppressed_table: exp.Table | None = None
    # A run on an engine the caller gave (``anonymize(…, engine=…)``): what it made there, shared
    # with the release's ``at`` copies; the release that ran it (``_drops_run``) drops them on
    # close, and the copies are then closed too.
    _run: RunObjects | None = None
    _drops_run: bool = False

    # ---- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        """Drop the engine objects this release made (and its own connection, if it has one)."""
        if self.owns_engine:
            self.problem.engine.close()
        elif self._drops_run and self._run is not None and not self._run.closed:
            self._run.closed = True
            if not self.problem.engine.closed:
                self.problem.engine.drop_objects(self._run.objects)
            self._run.objects.clear()

    def _closed(self) -> bool:
        return self.problem.engine.closed or (self._run is not None and self._run.closed)

    @contextmanager
    def _recording(self) -> Iterator[None]:
        """What the block makes on the engine is the run's (``_run``), dropped with it on close."""
        if self._run is None:
            yield
            return
        made: list = []
        try:
            with self.problem.engine.objects_made() as made:
                yield
        finally:
            self._run.objects.extend(made)

    def _require_open(self) -> None:
        """Refuse what needs the engine once the release was closed: its tables went with it."""
        if self._closed():
            raise InputError("this release was closed (its `with` block ended, or close() was called), and the "
                             "tables it reads went with it: read or write it before closing, or make it again with "
                             f"{self.MADE_BY}")
        self.problem.engine.check_open()

    def __repr__(self) -> str:
        """What a notebook shows: the source, the node, the rows and whether it is still open; no
        value of the data (the hierarchies' leaves are the input's own values)."""
        node = self.node
        chosen = f"node {_listed(node)}" if node is not None else "multidimensional (GAA)"
        state = "closed" if self._closed() else "open"
        rows = f"{self.problem.rows} rows, k = {self.problem.k}"
        return f"<{type(self).__name__} of {self.source_label}: {chosen}; {rows}; {state}>"

    def __enter__(self) -> Release:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- what was chosen ----------------------------------------------------------------
    @property
    def node(self) -> dict[str, int] | None:
        """Generalization level per quasi-identifier: the lattice node released; None for GAA's
        multidimensional recoding (``GaaRelease``), which releases each class at levels of its own."""
        return self._named(self.search.optimum)

    @property
    def minimal_nodes(self) -> list[dict[str, int]] | None:
        """Every minimal satisfying node; None when the search explored for the optimum alone."""
        if self.search.minimal_nodes is None:
            return None
        return [self._named(n) for n in self.search.minimal_nodes]

    def _levels_of(self, node: dict[str, int] | Node) -> Node:
        """A node given by name (``{"age": 2, …}``, every QI) or as a tuple, checked."""
        qis = self.problem.qis
        return checked_node(node, [qi.name for qi in qis], [qi.levels for qi in qis])

    def _named(self, node: Node) -> dict[str, int]:
        return {qi.name: int(level) for qi, level in zip(self.problem.qis, node)}

    def at(self, node: dict[str, int] | Node) -> Release:
        """The same release at another satisfying node (e.g. one of ``minimal_nodes``): its data,
        summary and report, written and verified the same way. The optimum is unchanged here. A
        node the search decided without measuring it (a generalization of a satisfying node, or
        one left aside when exploring for the optimum) is evaluated now: one GROUP BY."""
        self._require_open()
        levels = self._levels_of(node)
        chosen = self.at_if_satisfied(levels)
        if chosen is None:
            raise InputError(f"node {self._named(levels)} does not satisfy the requirements; {self._instead()}")
        return chosen

    def at_if_satisfied(self, levels: Node) -> Release | None:
        """``at`` a node given as levels (already checked: ``checked_node``), or None when it does
        not satisfy."""
        evaluated, hist, failing = self.search.evaluated.get(levels), None, None
        if self._unmeasured(levels, evaluated):
            evaluated, hist, failing = measure_node(self.problem, self.criteria, levels)
        if evaluated is None or not evaluated.satisfied:
            return None
        known = self.search.evaluated.with_node(levels, evaluated)
        search = dataclasses.replace(self.search, optimum=levels, evaluated=known)
        # timings copied: a write of the copy set its verify_seconds in the original's report too
        return dataclasses.replace(self, search=search, owns_engine=False, node_given=True, _suppressed_table=None,
                                   _drops_run=False, _hist=hist, _failing=failing, timings=dict(self.timings))

    def _unmeasured(self, levels: Node, evaluated: Evaluated | None) -> bool:
        """Whether ``levels`` may satisfy without the search having measured it. With the lattice
        decided, a node not evaluated satisfies exactly when it generalizes a satisfying one (else
        it is below a failing one). Exploring for the optimum, a node left aside, or recorded
        failing with its classes left unread (it could not be the optimum), may satisfy."""
        if not self.search.complete:
            return evaluated is None or not evaluated.satisfied
        return evaluated is None and bool(self.search.satisfying[levels])

    def _instead(self) -> str:
        """What to release instead of a node that does not satisfy."""
        if not self.search.searched:
            return "no search ran (this release's node was given): anonymize without a node to find the optimum"
        # The optimum alone, never the minimal nodes (review h4 of the eighty-fifth round): which
        # other nodes satisfy is kept out of reports and logs (docs/what-a-release-reveals.md).
        also = " (Release.minimal_nodes names the other minimal ones)" if self.minimal_nodes is not None else ""
        return f"the optimum is {_listed(self._named(self.search.optimum))}{also}"

    # ---- measurements of the chosen node ---------------------------------------------------
    def _classes(self) -> tuple[ClassHistograms, np.ndarray]:
        if self._hist is None:
            self._require_open()
            _, self._hist, self._failing = measure_node(self.problem, self.criteria, self.search.optimum)
        return self._hist, self._failing

    @property
    def summary(self) -> dict[str, Any]:
        """Classes, suppression, privacy values reached and utility of the chosen node."""
        hist, failing = self._classes()
        kept = ~failing
        suppressed = int(hist.sizes[failing].sum())
        evaluated = self.search.evaluated[self.search.optimum]
        kept_rows = self.released_rows
        privacy = privacy_section(self.criteria, hist, kept, self.problem.k, self.problem.suppression)
        return {
            "t_against_release": self._t_against_release(hist, kept),
            "classes": int(kept.sum()),
            "suppressed_rows": suppressed,
            "rows": kept_rows,
            "privacy": privacy,
            "utility": {
                "discernibility": evaluated.discernibility,
                "average_class_size": average_class_size(kept_rows, int(kept.sum())),
                **full_domain_utility(self.problem, self.selection, self.search.optimum, hist, failing),
            },
        }

    def _t_against_release(self, hist: ClassHistograms, kept: np.ndarray) -> dict[str, float]:
        return t_against_release(self.problem, hist, kept)

    @property
    def column_roles(self) -> dict[str, str]:
        """Every released column with its role."""
        qis = {qi.name for qi in self.problem.qis}
        sas = {sa.name for sa in self.problem.sas}
        return {c: "quasi-identifier (generalized)" if c in qis else "sensitive (unchanged)" if c in sas
                else "other (unchanged)" for c in self.columns}

    # ---- the data ---------------------------------------------------------------------------
    def _suppressed(self) -> exp.Table | None:
        """The failing classes' codes, registered once per release (the release query excludes them)."""
        hist, failing = self._classes()
        if not failing.any():
            return None
        if self._suppressed_table is None:
            name = self.problem.engine.temp_name("suppressed")
            codes = {qi.coded.code: hist.codes[failing, i] for i, qi in enumerate(self.problem.qis)}
            with self._recording():
                self.problem.engine.register(name, arrow_table(codes))
            self._suppressed_table = q.table(name)
        return self._suppressed_table

    def _query(self, dictionaries: bool = False) -> tuple[Any, list]:
        self._require_open()
        params = q.Params()
        query = release_query(self.problem, self.search.optimum, self._suppressed(), params, self._counted_columns(),
                              dictionaries, self.problem.rows - self.released_rows)
        return query, params.values

    def _counted_columns(self) -> Counted | None:
        """The columns as the base histogram's counts give them back, or None: read from the source."""
        return counted_columns(self.problem, self.search.optimum)

    def to_arrow(self) -> pa.Table:
        """The released table (generalized, identifiers dropped, failing classes suppressed)."""
        query, params = self._query()
        refuse_unordered(self, query, params)
        self._refuse_changed_source()
        return self.problem.engine.fetch(query, params)

    def to_pandas(self) -> Any:
        """The released rows as a pandas DataFrame (``to_arrow().to_pandas()``): for interop, the
        table in memory; ``write`` is the way to publish (verified, with its report)."""
        return self.to_arrow().to_pandas()

    @property
    def columns(self) -> list[str]:
        """The released columns, in input order (no identifier, no dropped column)."""
        return list(self.problem.released)

    @property
    def released_rows(self) -> int:
        """The rows the release holds: the input's (less those dropped for a NULL) less the suppressed."""
        hist, failing = self._classes()
        return self.problem.rows - int(hist.sizes[failing].sum())

    # ---- writing -------------------------------------------------------------------------------
    def write(self, path: str | Path, report: str | Path | None = None, overwrite: bool = False, *,
              format: str | None = None, table: str | None = None,
              partition_by: str | Sequence[str] = (), replacing: files.FoundPair | None = None) -> dict:
        """Write the release (Parquet, a Parquet folder, CSV or a table in a DuckDB database: told by
        the path's suffix unless ``format`` is given), verify it from what was written, then place it and its
        report as a pair; returns the report (also written as JSON). ``replacing``: with ``overwrite``,
        the pair it is granted for alone, as ``files.found_pair`` found it before the search: one
        placed there since is refused (``OutputExistsError``), nothing of this run placed."""
        self._require_open()
        # "~" is the home folder, as in a spec: DuckDB expands it in the temporary file's name
        # anyway, where Python would have made a folder called "~" beside it.
        path, report = _given_path(path, "output"), _given_path(report, "report") if report is not None else None
        if report is not None and files.same(path, report):
            raise OutputExistsError(f"the report path is the output path ({path}); give the report its own file")
        for given, role in ((path, "output"), (report, "report")):
            if given is not None:  # before the format's checks: an input is never written, whatever its suffix
                files.refuse_inputs(Path(given), role, self.inputs)
        target = Target.of(path, report, format, table, overwrite, partition_by, replacing)
        files.refuse_pair_inside_folder_releases(target.path, target.report)
        return write_release(self, target)

    def write_parquet(self, path: str | Path, report: str | Path | None = None, overwrite: bool = False) -> dict:
        """``write`` as a Parquet file."""
        return self.write(path, report, overwrite, format="parquet")

    def write_parquet_folder(self, path: str | Path, report: str | Path | None = None, overwrite: bool = False,
                             partition_by: str | Sequence[str] = ()) -> dict:
        """``write`` as a Parquet folder (release/folder.py), optionally Hive-partitioned by released
        columns (one column may be given as its name); the report's ``output.sha256`` is the folder's
        (``files.folder_sha256``)."""
        return self.write(path, report, overwrite, format="parquet-folder", partition_by=partition_by)

    def query(self, dictionaries: bool = False) -> tuple[Any, list]:
        """The release query and its bound parameters; ``dictionaries``: as a Parquet write runs it,
        its text columns in the engine's dictionary types where it has them (``Engine.dictionary_type``)."""
        return self._query(dictionaries)

    @contextmanager
    def query_for_write(self, dictionaries: bool = False) -> Iterator[tuple[Any, list]]:
        """``query`` for one write: what the block makes on the engine for itself alone (a Parquet
        write's dictionary types and typed lookups, the view reading the written file back) is
        dropped when it ends, written or not, where a sweep's every write kept its own until the
        engine closed. The tables the release keeps for all its queries (``_own_tables``) are made
        first, and kept."""
        self._require_open()
        self._own_tables()
        with leaves_as_found(self.problem.engine):
            yield self._query(dictionaries)

    def _own_tables(self) -> None:
        """Make the tables every query of the release reads (its failing classes' codes)."""
        self._suppressed()

    def verified_summary(self, written: exp.Expression) -> dict:
        """The summary, after the written release (read back as ``written``) passed the
        independent re-check against it; raises VerificationError otherwise."""
        started = time.perf_counter()
        self.problem.engine.release_cached_memory()  # the write's pages back before the summary's arrays
        summary = self.summary
        claimed = {"rows": summary["rows"], "classes": summary["classes"], "privacy": summary["privacy"]}
        for criterion in self.criteria:  # judging is done: the re-check (SQL) runs with less held, ~45 MiB on
            criterion.let_go()           # 632 k ordered values (docs/engines.md, sixty-seventh round)
        self.problem.engine.release_cached_memory()  # and the summary's, before the re-check's SQL
        found = self._recheck_relation(written)
        self._refuse_changed_source()  # after the write and its re-check: a change before or while they ran is seen
        checkpoint("verify")
        compare(claimed, found, self.problem, self.columns)
        self.timings["verify_seconds"] = time.perf_counter() - started
        return summary

    def _recheck_relation(self, written: exp.Expression) -> dict:
        return recheck_relation(self.problem, written)

    def _refuse_changed_source(self) -> None:
        if self.searched_rows is not None:
            self.searched_rows.refuse_changed(self.problem.engine, self.source_label)

    def report(self, summary: dict | None = None, path: Path | None = None, digest: str | None = None, *,
               verified: bool | None = None, output_format: str = "parquet", table: str | None = None,
               content_digest: str | None = None, column_types: dict[str, str] | None = None,
               partition_by: Sequence[str] = ()) -> dict:
        """The report (typed: ``sqlclose.release.report.Report``; JSON schema in docs/report-schema.json)."""
        summary = summary or self.summary
        p = self.problem
        generalization = self.generalization
        warnings = [f"{name_shown(name)} is generalized to the top ({g.labels[0] if g.labels else '*'}): it carries no "
                    "information in this release" for name, g in generalization.items() if g.at_top]
        warnings += idle_level_warnings(p.sas) + self._warnings()
        return Report(
            sqlclose_version=__version__,
            sqlclose_build=build(),
            created_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            spec_sha256=files.keyed(self.digest_key, self.spec_sha256),
            input=InputSummary(source=self.source_label, path=_text_or_none(self.source_path),
                               rows=p.input_rows, fingerprint=p.fingerprint,
                               fingerprint_kind=fingerprint_kind(p.engine) if p.fingerprint is not None else None,
                               dropped_null_rows=p.dropped_rows),
            **self._search_section(),
            generalization=generalization,
            hierarchies={name: HierarchyFile(path=str(f), delimiter=sep, sha256=files.keyed(self.digest_key, read))
                         for name, (f, sep, read) in self.hierarchy_files.items() if read is not None},
            classes=summary["classes"],
            suppressed_rows=summary["suppressed_rows"],
            privacy=published_privacy(summary["privacy"], summary["suppressed_rows"],
                                      {sa.name: sa.null_value for sa in p.sas if sa.null_value is not None}),
            t_against_release=summary["t_against_release"],
            utility=published(summary["utility"]),
            output=Output(path=str(path) if path else None, format=output_format, table=table,
                          rows=summary["rows"], sha256=digest, content_digest=content_digest,
                          columns=self.columns, column_types=column_types, column_roles=self.column_roles,
                          partition_by=list(partition_by) or None),
            warnings=warnings,
            timings={k: round(v, 4) for k, v in self.timings.items()},
            verified=digest is not None if verified is None else verified,
        ).to_dict()

    def _search_section(self) -> dict:
        """The report's fields that describe how the release was found."""
        p = self.problem
        return {"algorithm": "incognito", "node": self.node, "node_given": self.node_given,
                "lattice": Lattice(levels={qi.name: qi.levels for qi in p.qis}, size=self.search.lattice_size,
                                   complete=self.search.complete, searched=self.search.searched,
                                   seconds=round(self.search.seconds, 4))}

    def _warnings(self) -> list[str]:
        return []

    @property
    def qi_types(self) -> dict[str, pa.DataType]:
        """Each quasi-identifier's type in the input (its labels' text depends on it: ``shown_labels``)."""
        self._require_open()  # read on the engine: after close, "Connection already closed" (review, 64th round)
        schema = self.problem.engine.schema(self.problem.source)
        names = {qi.name for qi in self.problem.qis}
        return {f.name: f.type for f in schema if f.name in names}

    @property
    def generalization(self) -> dict[str, Generalization]:
        """Per quasi-identifier: the chosen level and the labels the released classes use there."""
        hist, failing = self._classes()
        types = self.qi_types
        out = {}
        for i, (qi, level) in enumerate(zip(self.problem.qis, self.search.optimum)):
            h = qi.hierarchy
            by_code = h.labels_by_code(level)
            written = [by_code[int(c)] for c in sorted_unique(hist.codes[~failing, i])]
            if level == 0:  # given as it is: the stand-in's rows hold NULL, no label (queries.given_as_is)
                written = [text for text in written if text != qi.coded.null_value]
            used = shown_labels([(level, text) for text in written], types.get(qi.name),
                                functools.partial(self.problem.engine.instants_in_utc, source=self.problem.source,
                                                  column=qi.name))
            out[qi.name] = Generalization(level=int(level), levels=h.levels, labels=used[:MAX_LABELS_SHOWN],
                                          label_count=len(used), at_top=int(level) == h.levels - 1)
        return out


def _given_path(given: object, role: str) -> Path:
    """A path a caller gave ``write``, "~" the home folder: text or a path-like object holding no NUL
    (bytes, or a NUL, ended in Python's TypeError or "embedded null byte")."""
    if not isinstance(given, (str, os.PathLike)) or isinstance(os.fspath(given), bytes):
        raise InputError(f"the {role} path must be text or a pathlib.Path, not {type(given).__name__}")
    if "\x00" in os.fspath(given):
        raise InputError(f"the {role} path {ascii(os.fspath(given))} holds a NUL character, which no file name can")
    return Path(given).expanduser()


def t_against_release(problem: Problem, hist: ClassHistograms, kept: np.ndarray) -> dict[str, float]:
    """Per sensitive column with a t model: the largest distance of a released class from the
    *released* table's own distribution — what an auditor holding only the file computes.
    ``kept``: a boolean mask of the classes released."""
    out: dict[str, float] = {}
    measured = [j for j, sa in enumerate(problem.sas) if sa.spec.t is not None]
    if not measured or not kept.any():
        return out
    for j in measured:
        sa = problem.sas[j]
        released = kept_totals(hist.counts[j], kept)
        # Over the values the file holds. The ordered distance's gaps are between them: a value only
        # suppressed rows had would widen the domain (and tell that they had it). In the equal and
        # the other sums an absent value weighs nothing, but its zero column regrouped the sum's
        # terms and the value moved in its last digits. A hierarchy's leaves are the spec's.
        held = slice(None) if sa.distance == "hierarchical" else released > 0
        if isinstance(hist.counts[j], SparseCounts):  # a large domain: each class by its own values
            out[sa.name] = _largest_of_cells(hist.kept_cell_runs(j, kept, SLICE_BYTES), released, sa)
            continue
        worst = [_largest_distance(counts, released[held], sa) for counts in hist.kept_runs(j, kept, held, SLICE_BYTES)]
        out[sa.name] = float(max(worst))
    return out


def _largest_of_cells(runs: Iterator[SparseCounts], released: np.ndarray, sa: Any) -> float:
    """The largest distance of released classes kept as cells, each read by its own values (600
    classes x 99,520 values made dense took seconds: docs/performance.md, fifty-third round), a run
    of classes at a time (their temporaries too: +147 MiB at once on 632 k ordered values, sixty-
    seventh round): the same float as every run's ``_largest_distance``, each class's figure being
    its own (privacy/cell_distances.py)."""
    if sa.distance == "ordered":
        # Over the values the release holds, the columns renumbered to those: the exact integer
        # sums, the dense rows' bits. The table's prefix sums are made once, for every run.
        table, position = OrderedTable(released[released > 0]), np.cumsum(released > 0) - 1
        largest = (table.emd(dataclasses.replace(cells, cols=position[cells.cols])).max()
                   for cells in map(ClassCells.of, runs))
    elif sa.distance in ("equal", "variational"):
        largest = (largest_equal_of_cells(run, released) for run in runs)
    else:
        largest = (distances_of_cells(run, released, sa.distance, sa.tree).max() for run in runs)
    return float(max(largest))


def _largest_distance(counts: np.ndarray, released: np.ndarray, sa: Any) -> float:
    """The largest distance of a class (a row of ``counts``) from ``released``. The equal distance
    (and the variational) is half the L1 distance, summed exactly: its domain is in its texts'
    order, which is the engine's ('1e-07' on DuckDB, '1.0E-7' on Spark), and a sum in that order
    moved in its last digit from one engine to the other. The ordered and hierarchical distances
    sum in the values' order and the hierarchy's, the same on every engine."""
    if sa.distance in ("equal", "variational"):
        return l1_closeness_value(counts, released) / 2
    return float(distance(counts, released, sa.distance, sa.tree).max())


def _listed(node: dict[str, int]) -> str:
    return ", ".join(f"{name_cut(name)}={level}" for name, level in node.items())


def _text_or_none(path: Path | None) -> str | None:
    return None if path is None else str(path)
