"""Measures a table as it is: its equivalence classes, every privacy model, and the attacks.

This is the plain path of ``sqlclose check``: classes are a GROUP BY over the quasi-identifier
columns as they are written (no hierarchies, no codes, no rollups), one per sensitive attribute,
kept in the engine in class order. Python reads them in runs of consecutive classes, one row per
(class, sensitive value), so that what it holds is bounded by a run, not by the table: auditing a
raw 10 M-row table (10 M classes) once held every class's matrix and its temporaries at once.

A sensitive column of more than ``DENSE_ORDERED_VALUES`` values is kept as each class's own values
(``SparseCounts``) and every measure and attack reads it by them: a dense row of 632 k values is
5 MB a class, and ten classes of it went 58 % past a 500 MB limit (docs/engines.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from sqlclose.engine import Engine
from sqlclose.engine.limits import search_share
from sqlclose.errors import DataError
from sqlclose.model.arrays import numpy_of
from sqlclose.model.attributes import SensitiveAttribute, values_not_leaves
from sqlclose.model.classes import ClassHistograms
from sqlclose.model.sparse_counts import CELL_BYTES, SparseCounts, values_held
from sqlclose.model.text import agreeing, counted, name_shown
from sqlclose.privacy.criteria import TOLERANCE
from sqlclose.privacy.emd import DENSE_ORDERED_VALUES
from sqlclose.sql import queries as q

# What judging one run of classes may hold, in bytes: per class, RUN_COPIES times its count
# matrix row (the matrix and the measures' temporaries), and PAIR_BYTES per (class, value) row read
# (the Arrow row and its numpy copies: class, position, cell, count). With a column kept as cells,
# CELL_COPIES × CELL_BYTES more per row (its cells and the measures' per-cell temporaries, sorts
# among them) and CLASS_BYTES per class (the measures' per-class arrays): measured with tracemalloc
# on a million classes of one value each (~380 bytes a class at a run's peak). Each run is one range
# read per sensitive column: at 10 M raw classes × 14 values, ~60 reads. Under a memory limit, runs
# hold at most the Python side's share of it, and DuckDB's limit is lowered to leave that room
# (``Engine.fit_memory``) before each run.
RUN_BYTES = 160_000_000
RUN_COPIES = 5
PAIR_BYTES = 80
CELL_COPIES = 5
CLASS_BYTES = 160


@dataclass
class TableClasses:
    """The classes of a table, kept in the engine: per sensitive column (or one table, for the
    sizes, when there is none) its ``q.audit_classes`` rows. Read in runs (``runs``); the QI
    values of a few classes on demand (``class_values``)."""

    engine: Engine
    counted: list[exp.Table]
    sensitive: list[SensitiveAttribute]
    qi: list[str]
    classes: int
    rows: int
    pairs: int  # (class, value) rows over every sensitive column's table
    _domains: dict[str, pa.Array] = field(default_factory=dict, repr=False)  # per column, for domain_positions

    def runs(self, max_bytes: int | None = None) -> Iterator[tuple[int, ClassHistograms]]:
        """(number of its first class, histograms) of consecutive runs covering every class once,
        each holding at most ``max_bytes`` (``RUN_BYTES``, or the Python side's share of the job's
        memory limit when smaller) while judged, a class at least."""
        budget = self.engine.memory_budget
        largest = min(RUN_BYTES, search_share(budget)) if budget else RUN_BYTES
        step = max(1, int((largest if max_bytes is None else max_bytes) // self.class_bytes()))
        for start in range(0, self.classes, step):
            stop = min(start + step, self.classes)
            self.engine.fit_memory(upcoming=int((stop - start) * self.class_bytes()))
            yield start, self._histograms(start, stop)

    def class_bytes(self) -> float:
        """What judging one class holds, on average (``RUN_BYTES``)."""
        matrix_row = 8 * sum(len(sa.domain) for sa in self.sensitive if not as_cells(sa))
        cells = any(map(as_cells, self.sensitive))
        per_pair = PAIR_BYTES + (CELL_COPIES * CELL_BYTES if cells else 0)
        return RUN_COPIES * matrix_row + (CLASS_BYTES if cells else 0) + per_pair * self.pairs / max(self.classes, 1)

    def _histograms(self, start: int, stop: int) -> ClassHistograms:
        count = stop - start
        read = [self.engine.fetch(q.class_range(t), [start, stop]) for t in self.counted]
        sizes = np.bincount(_class_of(read[0], start), weights=_counts(read[0]), minlength=count)
        matrices: list[np.ndarray | SparseCounts] = []
        for sa, rows in zip(self.sensitive, read):
            span = len(sa.domain)
            cells = _class_of(rows, start) * span + domain_positions(rows.column(q.AUDIT_VALUE), sa, self._domains)
            if as_cells(sa):
                matrices.append(SparseCounts.from_cells(cells, _counts(rows), (count, span)))
            else:
                matrices.append(np.bincount(cells, weights=_counts(rows), minlength=count * span).reshape(count, span))
        return ClassHistograms(np.zeros((count, 0), dtype=np.int64), np.rint(sizes).astype(np.int64), matrices,
                               np.zeros(count, dtype=np.int64))

    def class_values(self, classes: Iterable[int]) -> dict[int, dict]:
        """The QI values of each of ``classes`` (class numbers), by one read of those classes."""
        wanted = sorted({int(c) for c in classes})
        if not wanted:
            return {}
        kinds = self.engine.schema(self.counted[0])
        as_text = [i for i in range(len(self.qi)) if _held_as_text(kinds.field(q.audit_qi_name(i)).type)]
        with self.engine.texts_in_utc():  # a TIMESTAMPTZ's label the same on every session
            rows = self.engine.fetch(q.labels_of_classes(self.counted[0], len(self.qi), wanted, as_text)).to_pylist()
        return {row[q.AUDIT_CLASS]: {name: _plain(row[q.audit_qi_name(i)]) for i, name in enumerate(self.qi)}
                for row in rows}

    def drop(self) -> None:
        """Drop the kept tables now (an engine of the caller's lives on)."""
        drop_tables(self.engine, self.counted)


def as_cells(sa: SensitiveAttribute) -> bool:
    """Whether the audit keeps a sensitive column's counts as each class's own values."""
    return len(sa.domain) > DENSE_ORDERED_VALUES


def table_classes(engine: Engine, relation: exp.Expression, qi: Sequence[str],
                  sensitive: Sequence[SensitiveAttribute]) -> TableClasses:
    """Equivalence classes of ``relation`` over ``qi``, counted in the engine: one GROUP BY per
    sensitive column (class sizes come from the first), or one for the sizes when there is none."""
    counted: list[exp.Table] = []
    try:
        for sa in list(sensitive) or [None]:
            engine.fit_memory()  # DuckDB's limit less what Python holds now (a large domain's values)
            query = q.audit_classes(relation, qi, sa.name if sa is not None else None)
            counted.append(engine.create_temp_table(engine.temp_name("audit_classes"), query))
        totals = [engine.fetch_row(q.class_totals(t)) for t in counted]
    except BaseException:
        drop_tables(engine, counted)
        raise
    return TableClasses(engine, counted, list(sensitive), list(qi), int(totals[0]["classes"]),
                        int(totals[0]["records"]), sum(int(t["pairs"]) for t in totals))


def drop_tables(engine: Engine, tables: Sequence[exp.Table]) -> None:
    """Drop kept tables, as far as the engine lets: a failure here must not hide why the audit
    stopped (the engine drops what is left when it closes)."""
    for table in tables:
        try:
            engine.unregister(table.name)
        except Exception:  # noqa: BLE001 - cleanup; the engine's close drops it too
            pass


def _class_of(rows: pa.Table, start: int) -> np.ndarray:
    return numpy_of(rows.column(q.AUDIT_CLASS)).astype(np.int64) - start


def _counts(rows: pa.Table) -> np.ndarray:
    return numpy_of(rows.column(q.AUDIT_COUNT)).astype(np.float64)


def domain_positions(values: pa.Array | pa.ChunkedArray | Sequence, sa: SensitiveAttribute,
                     domains: dict[str, pa.Array] | None = None) -> np.ndarray:
    """Domain index of each (distinct, aggregated) value of a sensitive column, as text: looked up
    by Arrow, not one by one in Python. ``domains`` keeps each column's domain as Arrow between calls."""
    values = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, type=pa.string())
    stand_in = sa.null_value
    if stand_in is not None and stand_in in sa.domain:  # nulls = "value": NULL reads as the stand-in
        values = pc.fill_null(values, str(stand_in))
    domains = {} if domains is None else domains
    if sa.name not in domains:
        domains[sa.name] = pa.array([None if v is None else str(v) for v in sa.domain], type=pa.string())
    found = pc.index_in(values, value_set=domains[sa.name])
    if found.null_count:  # counted, never shown: a sensitive value (check._refuse_values_off_hierarchy)
        missing = pc.unique(pc.filter(values, pc.is_null(found))).to_pylist()
        if sa.hierarchy is not None and None in missing:  # NULL is no text a leaf could be
            raise DataError(f"column {name_shown(sa.name)} holds NULL, which its hierarchy {sa.hierarchy.origin} has "
                            f"no leaf for: add a line for it, {sa.null_value or 'NULL'};…;* (the stand-in a release "
                            "made with nulls = \"value\" reads NULL as), or give the release's spec (--spec)")
        if sa.hierarchy is not None:
            raise DataError(values_not_leaves(sa.name, sa.hierarchy, missing, None, "add a leaf for each to it, or "
                                              "give the hierarchy the release was made with"))
        raise DataError(f"column {name_shown(sa.name)} holds {counted(len(missing), 'value')} that "
                        f"{agreeing(len(missing), 'is', 'are')} not in its domain "
                        f"({counted(len(sa.domain), 'value')}; the values are not shown: a sensitive value is what a "
                        "release protects)")
    return numpy_of(found).astype(np.int64)


def distribution(engine: Engine, relation: exp.Expression, sa: SensitiveAttribute) -> np.ndarray:
    """Counts of each domain value over a whole table (a plain GROUP BY)."""
    rows = engine.fetch(q.distribution(relation, q.as_text(q.col(sa.name))))
    counts = np.zeros(len(sa.domain))
    np.add.at(counts, domain_positions(rows.column("v").to_pylist(), sa), numpy_of(rows.column("n")))
    return counts


# ---- attacks (Li et al. section 3) --------------------------------------------------------
# Each is tallied run by run: ``exposed`` takes a run's classes, counts the classes at risk and
# returns a boolean per class (for listing them); ``result`` is the tally over every run.

class Attack:
    """The classes and records an attack exposes, counted run by run. ``ranked_by``: the name of a
    measure its exposed classes are listed by (highest first, then largest), ``class_measure`` its
    value per class of the last run."""

    ranked_by: str | None = None

    def __init__(self) -> None:
        self.classes = self.records = 0
        self.class_measure: np.ndarray | None = None

    def exposed(self, matrix: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def result(self) -> dict:
        return {"classes": self.classes, "records": self.records}

    def _count(self, hit: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        self.classes += int(hit.sum())
        self.records += int(sizes[hit].sum())
        return hit


class Homogeneity(Attack):
    """Classes whose sensitive values are all equal: membership discloses the value."""

    def exposed(self, matrix: np.ndarray | SparseCounts, sizes: np.ndarray) -> np.ndarray:
        return self._count(values_held(matrix) == 1, sizes)


class Skewness(Attack):
    """Classes where some value's share is at least ``ratio`` times its share in the table (within
    the thresholds' 1e-12: 3/5 against 3/15 is 3x, though floats make it 2.9999999999999996). A
    class holding a value the reference never holds is infinitely skewed (KL is infinite there too).
    Its exposed classes are listed by their ratio."""

    ranked_by = "ratio"

    def __init__(self, reference: np.ndarray, ratio: float) -> None:
        super().__init__()
        self.q_share = reference / reference.sum()
        self.ratio = ratio
        self.worst = 0.0

    def exposed(self, matrix: np.ndarray | SparseCounts, sizes: np.ndarray) -> np.ndarray:
        worst = self._worst_of_cells(matrix) if isinstance(matrix, SparseCounts) else self._worst_of_rows(matrix)
        self.class_measure = worst
        if worst.size:
            self.worst = max(self.worst, float(worst.max()))
        return self._count(worst >= self.ratio - TOLERANCE, sizes)

    def _worst_of_rows(self, matrix: np.ndarray) -> np.ndarray:
        p_share = matrix / np.maximum(matrix.sum(axis=1, keepdims=True), 1)
        q = self.q_share
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(q > 0, p_share / np.where(q > 0, q, 1), np.where(p_share > 0, np.inf, 0.0))
        return ratios.max(axis=1) if ratios.size else np.zeros(matrix.shape[0])

    def _worst_of_cells(self, cells: SparseCounts) -> np.ndarray:
        """``_worst_of_rows`` from each class's own values: an absent value's ratio is 0, below any
        present one's (the same division of the same whole-number sums: the same bits)."""
        rows, cols, values = cells.held()
        p_share = values / np.maximum(cells.row_sums(), 1)[rows]
        q = self.q_share[cols]
        with np.errstate(divide="ignore"):
            ratios = np.where(q > 0, p_share / np.where(q > 0, q, 1), np.inf)
        worst = np.zeros(cells.shape[0])
        np.maximum.at(worst, rows, ratios)
        return worst

    def result(self) -> dict:
        worst = self.worst if np.isfinite(self.worst) else "inf"  # JSON has no infinity: as KL's "inf"
        return {"ratio": self.ratio, "classes": self.classes, "records": self.records, "worst_ratio": worst}


class Similarity(Attack):
    """Classes whose values all fall in one group at ``level`` of the sensitive hierarchy: an
    observer learns the group (e.g. "a stomach disease") without learning the value. The root's
    one group holds every value: learning it reveals nothing, so at the root no class is exposed, nor
    at any level whose one label holds every leaf as the root's does."""

    def __init__(self, sa: SensitiveAttribute, level: int) -> None:
        super().__init__()
        hierarchy = sa.hierarchy  # the level is one of its own (check._require_similarity_level)
        position = {v: i for i, v in enumerate(hierarchy.leaves)}
        missing = [v for v in sa.domain if v not in position]
        if missing:  # check refuses them first, counted over the rows; never shown here either
            raise DataError(values_not_leaves(sa.name, hierarchy, missing, None, "add a leaf for each to it, or "
                                              "give the hierarchy the release was made with"))
        self.groups = hierarchy.level_codes[[position[v] for v in sa.domain], level]
        self.names = hierarchy.labels(level)
        self.level = level
        # One label at the level (the root's, or one group above every leaf): learning it reveals nothing.
        self.reveals_nothing = len(hierarchy.labels(level)) == 1
        self.by_group = np.zeros(int(self.groups.max()) + 1, dtype=np.int64)
        self.learned = np.zeros(len(self.by_group), dtype=bool)

    def exposed(self, matrix: np.ndarray | SparseCounts, sizes: np.ndarray) -> np.ndarray:
        if self.reveals_nothing:
            return np.zeros(matrix.shape[0], dtype=bool)
        rows, groups = self._class_groups(matrix)  # each (class, group) held once
        hit = self._count(np.bincount(rows, minlength=matrix.shape[0]) == 1, sizes)
        learned = hit[rows]
        self.by_group += np.bincount(groups[learned], weights=sizes[rows[learned]],
                                     minlength=len(self.by_group)).astype(np.int64)
        self.learned[groups[learned]] = True
        return hit

    def _class_groups(self, matrix: np.ndarray | SparseCounts) -> tuple[np.ndarray, np.ndarray]:
        """The (class, group) pairs of the groups each class holds values of."""
        if isinstance(matrix, SparseCounts):
            rows, cols, _ = matrix.held()
        else:
            rows, cols = np.nonzero(matrix)
        width = len(self.by_group)
        pairs = np.unique(rows * width + self.groups[cols])
        return pairs // width, pairs % width

    def result(self) -> dict:
        return {"level": self.level, "classes": self.classes, "records": self.records,
                "records_by_group": {self.names[g]: int(self.by_group[g]) for g in np.flatnonzero(self.learned)}}


def _held_as_text(kind: pa.DataType) -> bool:
    """Whether a QI's labels are read as the engine's text: days and instants, which Python's dates
    cannot all hold (a BC day, 'infinity', a year past 9999 stopped `check` of a release the tool
    made, OverflowError), and times of day (TIME '24:00:00' came back as 00:00)."""
    return pa.types.is_temporal(kind) and not (pa.types.is_duration(kind) or pa.types.is_interval(kind))


def _plain(value: object) -> object:
    """JSON-friendly QI values (dates and decimals as text)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
