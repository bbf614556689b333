"""Equivalence classes of a node, from its grouped counts to numpy matrices.

A node query returns one row per (class codes, sensitive codes) with a count. Here those rows —
aggregated counts, never table rows — become: the class of each row, the size of each class,
and per sensitive attribute a ``classes × domain`` count matrix — or its nonzero cells
(``SparseCounts``) when too large dense or read by its cells alone.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from sqlclose.model.arrays import ascending, numpy_of
from sqlclose.model.sparse_counts import CELL_BYTES, SparseCounts, dense_counts


@dataclass
class ClassHistograms:
    """The classes of one node — or of a batch of nodes, stacked, with ``node`` saying whose."""

    # classes × QIs: the generalized codes of each class (not packed keys) — or a function giving
    # them, called on first read of ``codes`` (only metric suppression costs and releases read them)
    _codes: np.ndarray | Callable[[], np.ndarray]
    sizes: np.ndarray  # classes, int64
    # per sensitive attribute: classes × domain, float64 (too large dense, or a column every model reads
    # by its cells: its cells, SparseCounts)
    counts: list[np.ndarray]
    node: np.ndarray | None = None  # batch index of each class's node (None: a single node)
    # Per node of a batch: records in classes left out because they already fail k-anonymity
    # (see privacy.criteria.drop_classes_below); None when every class is here.
    presuppressed: np.ndarray | None = None
    # Per node of a batch: its classes of at least k were not read, since the records below k alone
    # rule it out (past the suppression limit, or costlier than a node found); judged failing.
    unread: np.ndarray | None = None
    _memo: dict = field(default_factory=dict, repr=False, compare=False)  # measures computed on these classes

    @property
    def codes(self) -> np.ndarray:
        if callable(self._codes):
            self._codes = self._codes()
        return self._codes

    @property
    def classes(self) -> int:
        return int(self.sizes.shape[0])

    def memo(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """A value computed once for these histograms (a per-class measure criteria share, the runs)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def memo_in_runs(self, key: Hashable, compute: Callable[[ClassHistograms], np.ndarray],
                     max_bytes: int, by_cells: frozenset[int] = frozenset()) -> np.ndarray:
        """A per-class array kept under ``key``, computed one run of classes at a time (``slices``),
        each run's part kept with that run too: whoever asks for it, on the whole or on a run, the
        temporaries are those of one run."""
        def in_runs() -> np.ndarray:
            runs = self.slices(max_bytes, by_cells)
            if len(runs) == 1:
                return compute(self)
            return np.concatenate([run.memo_in_runs(key, compute, max_bytes, by_cells) for run in runs])
        return self.memo(key, in_runs)

    def slices(self, max_bytes: int, by_cells: frozenset[int] = frozenset()) -> list[ClassHistograms]:
        """These classes in consecutive runs whose count matrices hold at most ``max_bytes`` (a
        class at least): views, not copies, for the criteria's per-class work, whose temporaries
        are a few matrices of the classes judged (~3× measured). Kept with these histograms, so
        that criteria judging the same classes again (passes, then the suppression bound) find
        each run's measures. A sensitive column in ``by_cells`` kept as its cells is read by them
        alone, never made dense (the ordered t on a large domain): it counts by its cells, not by
        the dense row (190 k values made runs of 5 classes, a Python loop over the classes)."""
        cells = [m for j, m in enumerate(self.counts) if j in by_cells and isinstance(m, SparseCounts)]
        width = sum(m.itemsize * m.shape[1] for m in self.counts if not any(m is c for c in cells))
        if cells:  # one run is these histograms themselves, kept as none (their memo holding them: a cycle)
            return self.memo(("slices", max_bytes, by_cells), lambda: self._runs(width, cells, max_bytes)) or [self]
        step = max(1, max_bytes // width) if width else max(1, self.classes)
        if self.classes <= step:
            return [self]
        if callable(self._codes):  # unpacked once, if ever, for these histograms and all their runs
            self._codes = functools.cache(self._codes)
        return self.memo(("slices", step), lambda: [self._view(a, min(a + step, self.classes))
                                                    for a in range(0, self.classes, step)])

    def _runs(self, width: int, cells: list[SparseCounts], max_bytes: int) -> list[ClassHistograms]:
        """Runs of classes whose dense rows (``width`` bytes a class) and ``cells`` (``CELL_BYTES``
        each) add up to about ``max_bytes``: each starts below a multiple of it. None when one run
        holds them all: a list holding these histograms, kept in their memo, was a reference cycle
        that only the garbage collector freed, so a level's parts piled up (130–160 MiB of them at
        the search's peak; docs/engines.md, sixty-fifth round)."""
        cost = np.full(self.classes, float(width))
        for m in cells:
            cost += CELL_BYTES * np.bincount(m.rows, minlength=self.classes)
        before = np.cumsum(cost) - cost
        starts = np.flatnonzero(np.r_[True, np.diff(before // max_bytes) != 0]) if self.classes else np.zeros(1, int)
        if len(starts) == 1:
            return []
        if callable(self._codes):
            self._codes = functools.cache(self._codes)
        return [self._view(a, b) for a, b in zip(starts.tolist(), [*starts[1:].tolist(), self.classes])]

    def spans(self, max_bytes: int, by_cells: frozenset[int] = frozenset()) -> list[tuple[slice, ClassHistograms]]:
        """``slices``, each with the slice of these classes it holds (for writing its results back)."""
        runs, start = [], 0
        for run in self.slices(max_bytes, by_cells):
            runs.append((slice(start, start + run.classes), run))
            start += run.classes
        return runs

    def kept_runs(self, j: int, kept: np.ndarray, held: np.ndarray | slice, max_bytes: int) -> Iterator[np.ndarray]:
        """Sensitive column ``j``'s counts of the classes ``kept`` (a boolean mask) over the values
        ``held``, dense, a run of classes at a time: a released node of thousands of classes over
        20,000 values is gigabytes as one matrix, one run's is at most ``max_bytes``. Runs are sized
        by column ``j``'s row alone, the only one made dense (``spans`` sizes them by every column's:
        a 16-value column beside a 95 k-value one was read ten classes at a time)."""
        counts = self.counts[j]
        step = max(1, max_bytes // max(1, counts.itemsize * counts.shape[1]))
        for start in range(0, self.classes, step):
            where = slice(start, min(start + step, self.classes))
            if kept[where].any():
                yield dense_counts(counts[where])[kept[where]][:, held]

    def kept_cell_runs(self, j: int, kept: np.ndarray, max_bytes: int) -> Iterator[SparseCounts]:
        """Sensitive column ``j``'s cells (``SparseCounts``) of the classes ``kept`` (a boolean
        mask), renumbered from 0, a run of classes at a time of about ``max_bytes`` at
        ``CELL_BYTES`` a cell (a class's cells never split). The release's summary read a node's
        ~1 M cells at once, copied and with a dozen per-cell temporaries: +100 to +150 MiB at the
        job's peak (ordered t on 632 k values; docs/engines.md, sixty-seventh round)."""
        counts = self.counts[j]
        per_run = max(1, max_bytes // CELL_BYTES)
        starts = np.unique(np.r_[0, counts.rows[::per_run]]) if self.classes else np.zeros(0, np.int64)
        for a, b in zip(starts.tolist(), [*starts[1:].tolist(), self.classes]):
            if kept[a:b].any():
                run = counts[a:b]
                yield run if kept[a:b].all() else run[kept[a:b]]

    def _view(self, start: int, stop: int) -> ClassHistograms:
        """Classes ``start`` … ``stop`` − 1: their codes, sizes and counts (per-node fields stay behind)."""
        codes = self._codes  # a view holds no reference to these histograms (kept in their memo: no cycle)
        return ClassHistograms((lambda: codes()[start:stop]) if callable(codes) else codes[start:stop],
                               self.sizes[start:stop], [m[start:stop] for m in self.counts],
                               None if self.node is None else self.node[start:stop])


def class_histograms(result: pa.Table, qi_codes: Sequence[str], sa_codes: Sequence[str],
                     domain_sizes: Sequence[int], cells_past: int | None = None) -> ClassHistograms:
    """``cells_past``: a count matrix whose dense form would hold more bytes is kept as its nonzero
    cells (``SparseCounts``; a released node of thousands of classes over 20,000 values)."""
    n = numpy_of(result.column("n")).astype(np.int64, copy=False)
    keys, inverse = _classes([numpy_of(result.column(c)) for c in qi_codes], len(n))
    sa = [numpy_of(result.column(name)).astype(np.int64, copy=False) for name in sa_codes]
    if cells_past is not None and 8 * len(keys) * sum(domain_sizes) > cells_past:
        sizes = np.bincount(inverse, weights=n, minlength=len(keys)).astype(np.int64)
        return ClassHistograms(keys, sizes, [SparseCounts.from_cells(inverse * m + codes_of, n, (len(keys), m))
                                             for codes_of, m in zip(sa, domain_sizes)])
    sizes, counts = tally(inverse, len(keys), n, sa, domain_sizes)
    return ClassHistograms(keys, sizes, counts)


def record_totals(counts: np.ndarray) -> np.ndarray:
    """Row sums of a classes × values matrix of record counts (float64 holding whole numbers): a
    matrix-vector product, ~3× faster than ``sum(axis=1)`` on rows this short, and the same
    value — whole-number sums below 2⁵³ are exact in any order."""
    return counts @ np.ones(counts.shape[1])


def tally(inverse: np.ndarray, classes: int, n: np.ndarray, sa_codes: Sequence[np.ndarray],
          domain_sizes: Sequence[int], as_cells: frozenset[int] = frozenset()
          ) -> tuple[np.ndarray, list[np.ndarray | SparseCounts]]:
    """Rows (class index, sensitive codes, count) → class sizes and a classes × domain count
    matrix per sensitive attribute; those in ``as_cells`` as their nonzero cells straight from the
    rows (``SparseCounts``), never dense: a level of 5,000 classes over 95 k values read by the
    ordered t's cells alone is 3.8 GB dense and filled, then searched for its nonzero cells."""
    sizes = np.bincount(inverse, weights=n, minlength=classes).astype(np.int64)
    counts = [SparseCounts.from_cells(inverse * m + sa, n, (classes, m)) if j in as_cells
              else np.bincount(inverse * m + sa, weights=n, minlength=classes * m).reshape(classes, m)
              for j, (sa, m) in enumerate(zip(sa_codes, domain_sizes))]
    return sizes, counts


def _classes(columns: Sequence[np.ndarray], rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct code rows of the QI code ``columns`` and each row's class index. One int64 key
    summed column by column when it fits (never the rows × QIs int64 matrix: 56 MB on a released
    node's 1 M rows of seven QIs, at the peak of a job near its memory limit)."""
    if not columns:
        return np.zeros((1, 0), dtype=np.int64), np.zeros(rows, dtype=np.int64)
    if rows == 0:
        return np.zeros((0, len(columns)), dtype=np.int64), np.zeros(0, dtype=np.int64)
    spans = [int(c.max()) + 1 for c in columns]
    if math.prod(spans) >= 2**62:
        keys, inverse = np.unique(np.column_stack(columns).astype(np.int64, copy=False), axis=0, return_inverse=True)
        return keys, inverse.ravel()
    flat, stride = np.zeros(rows, dtype=np.int64), 1
    for column, span in zip(reversed(columns), reversed(spans)):
        flat += column.astype(np.int64) * stride
        stride *= span
    if ascending(flat):  # rows the engine sorted by class (a released node's): no sort here
        first = np.ones(rows, dtype=bool)
        np.not_equal(flat[1:], flat[:-1], out=first[1:])
        inverse = np.cumsum(first) - 1
    else:
        _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    return np.column_stack([c[first] for c in columns]).astype(np.int64, copy=False), inverse.ravel()
