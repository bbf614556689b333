"""A classes × values count matrix kept as its nonzero cells, for a part of a lattice level whose
dense matrix would not fit the search's share of the memory limit (a node of thousands of classes
over 20,000 sensitive values is gigabytes dense, a few megabytes as cells). The criteria read it one
run of classes at a time (``ClassHistograms.slices``), each run made dense as they read it
(``dense_counts``): the same cells, so the same results as the dense matrix."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sqlclose.model.arrays import ascending

# What one cell costs a run judged by its cells (``ClassHistograms.slices``): its row, column and
# count (24 bytes) and the ~15 per-cell float64 temporaries of the ordered t (privacy/ordered_cells.py),
# a third of them, as a run's dense bytes count a third of their temporaries.
CELL_BYTES = 40


@dataclass(frozen=True)
class SparseCounts:
    """The nonzero cells of a ``shape`` float64 matrix: ``rows`` (sorted), ``cols`` and ``values``."""

    rows: np.ndarray  # int64, ascending
    cols: np.ndarray  # int64
    values: np.ndarray  # float64
    shape: tuple[int, int]
    itemsize = 8  # bytes per cell of the dense matrix it stands for (what ``slices`` sizes runs by)
    ndim = 2

    @classmethod
    def from_cells(cls, cells: np.ndarray, values: np.ndarray, shape: tuple[int, int]) -> SparseCounts:
        """Cells numbered row × width + column, in any order; a cell given more than once is summed
        (rows grouped by more sensitive columns than this one). Cells the engine sorted are not
        sorted again (a released node's, ``sql/queries.node_histogram``)."""
        values = np.asarray(values, dtype=np.float64)
        if not ascending(cells):
            order = np.argsort(cells, kind="stable")
            cells, values = cells[order], values[order]
        if cells.size and (cells[1:] == cells[:-1]).any():
            starts = np.flatnonzero(np.r_[True, cells[1:] != cells[:-1]])
            cells, values = cells[starts], np.add.reduceat(values, starts)
        return cls(cells // shape[1], cells % shape[1], values, shape)

    @classmethod
    def from_sorted_cells(cls, cells: np.ndarray, values: np.ndarray, shape: tuple[int, int]) -> SparseCounts:
        """Cells numbered row × width + column, each once, in ascending order (as the engine sorted
        them): no sort, no gather. ``from_cells`` held ~72 bytes a cell at its peak (the order, the
        sorted copies, the rows and columns); this ~32. An ordered t on ~630 k values judged a node
        of millions of cells as one part (docs/engines.md, "Where the process went past the limit")."""
        return cls(cells // shape[1], cells % shape[1], np.asarray(values, dtype=np.float64), shape)

    def __getitem__(self, which: slice | np.ndarray) -> SparseCounts:
        """Rows ``start:stop`` (a step of 1) or the rows a boolean mask keeps, renumbered from 0."""
        if isinstance(which, slice):
            start, stop, _ = which.indices(self.shape[0])
            stop = max(start, stop)
            a, b = np.searchsorted(self.rows, [start, stop])
            return SparseCounts(self.rows[a:b] - start, self.cols[a:b], self.values[a:b], (stop - start, self.shape[1]))
        kept = np.asarray(which, dtype=bool)
        renumbered = np.cumsum(kept) - 1
        held = kept[self.rows]
        return SparseCounts(renumbered[self.rows[held]], self.cols[held], self.values[held],
                            (int(kept.sum()), self.shape[1]))

    @property
    def nbytes(self) -> int:
        """The bytes its cells hold (as ``ndarray.nbytes``)."""
        return self.rows.nbytes + self.cols.nbytes + self.values.nbytes

    def dense(self) -> np.ndarray:
        out = np.zeros(self.shape)
        out[self.rows, self.cols] = self.values
        return out

    def held(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows, columns and counts of the cells holding records (a count above 0), in order."""
        kept = self.values > 0
        if kept.all():  # the usual case: the cells themselves, no copy
            return self.rows, self.cols, self.values
        return self.rows[kept], self.cols[kept], self.values[kept]

    def row_sums(self) -> np.ndarray:
        return np.bincount(self.rows, weights=self.values, minlength=self.shape[0])


def kept_totals(counts: np.ndarray | SparseCounts, kept: np.ndarray) -> np.ndarray:
    """Per value, the records of the classes ``kept`` (a boolean mask) hold: ``kept @ counts``."""
    if isinstance(counts, SparseCounts):
        return np.bincount(counts.cols, weights=counts.values * kept[counts.rows], minlength=counts.shape[1])
    return kept @ counts


def values_held(counts: np.ndarray | SparseCounts) -> np.ndarray:
    """Per class (row), how many values it holds (nonzero cells)."""
    if isinstance(counts, SparseCounts):
        return np.bincount(counts.rows[counts.values > 0], minlength=counts.shape[0])
    return (counts > 0).sum(axis=1)


def dense_counts(counts: np.ndarray | SparseCounts) -> np.ndarray:
    """A count matrix as an array (made dense here when kept as cells)."""
    return counts.dense() if isinstance(counts, SparseCounts) else counts
