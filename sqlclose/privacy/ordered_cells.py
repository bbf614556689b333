"""The ordered distance's t-closeness work from each class's own values (its nonzero cells), not
from a row of all m values: the measure (``emd.ordered_emd_of_cells``) and the three parts of the
suppression bound (``criteria.TCloseness.suppression_bound``). A class's cumulative distribution is
a step function changing only at its values; over a run of gaps between two of them every term
is read from prefix sums of the table's cumulative shares, split where they cross the class's
level (a binary search): O(values held · log m) per class, all classes at once. At 190 k values
the dense rows made a three-QI search take minutes (docs/performance.md, "Ordered t on large
domains")."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from sqlclose.model.sparse_counts import SparseCounts
from sqlclose.privacy.emd import ordered_emd_of_cells

EDGE = 1e-12  # ψ within t up to rounding (as ``distances.largest_within``)


@dataclass(frozen=True)
class ClassCells:
    """The nonzero cells of a classes × values count matrix, by class (rows ascending, columns
    ascending within a row); every class holds at least one value."""

    rows: np.ndarray
    cols: np.ndarray
    counts: np.ndarray
    classes: int

    @classmethod
    def of(cls, counts: np.ndarray | SparseCounts) -> ClassCells:
        if isinstance(counts, SparseCounts):
            return cls(*counts.held(), counts.shape[0])
        rows, cols = np.nonzero(counts)
        return cls(rows, cols, counts[rows, cols], counts.shape[0])

    @cached_property
    def first(self) -> np.ndarray:
        """Each class's first cell."""
        return np.flatnonzero(np.r_[True, self.rows[1:] != self.rows[:-1]])

    @cached_property
    def last(self) -> np.ndarray:
        """Each class's last cell."""
        return np.r_[self.first[1:] - 1, len(self.rows) - 1]

    @cached_property
    def at_or_below(self) -> np.ndarray:
        """Per cell, its class's records at or below its value (whole numbers: exact)."""
        running = np.cumsum(self.counts)
        before = running[self.first] - self.counts[self.first]
        return running - np.repeat(before, np.diff(np.r_[self.first, len(self.rows)]))

    @cached_property
    def sizes(self) -> np.ndarray:
        return np.bincount(self.rows, weights=self.counts, minlength=self.classes)

    def select(self, kept: np.ndarray) -> ClassCells:
        """The classes a boolean mask keeps, renumbered from 0."""
        renumbered = np.cumsum(kept) - 1
        held = kept[self.rows]
        return ClassCells(renumbered[self.rows[held]], self.cols[held], self.counts[held], int(kept.sum()))


@dataclass(frozen=True)
class OrderedTable:
    """The table's counts ``q`` over its m sorted values, with the prefix sums every class reads."""

    q: np.ndarray

    @cached_property
    def gaps(self) -> int:
        return len(self.q) - 1

    @cached_property
    def shares(self) -> np.ndarray:
        q = np.asarray(self.q, dtype=np.float64)
        return q / q.sum()

    @cached_property
    def cumulative(self) -> np.ndarray:
        """F: the table's share at or below each gap (m − 1 values, nondecreasing)."""
        return np.cumsum(self.shares)[:self.gaps]

    @cached_property
    def cumulative_prefix(self) -> np.ndarray:
        """Σ F over the gaps before i, for i = 0 … m − 1."""
        return np.r_[0.0, np.cumsum(self.cumulative)]

    @cached_property
    def share_prefix(self) -> tuple[np.ndarray, np.ndarray]:
        """Σ q_v and Σ v · q_v over the values before i, for i = 0 … m."""
        return np.r_[0.0, np.cumsum(self.shares)], np.r_[0.0, np.cumsum(np.arange(len(self.q)) * self.shares)]

    def emd(self, cells: ClassCells) -> np.ndarray:
        return ordered_emd_of_cells(cells.rows, cells.cols, cells.counts, cells.classes, self.q)

    def farthest(self, cells: ClassCells, point_mass: np.ndarray) -> np.ndarray:
        """Per class, the largest point-mass distance among its values."""
        return np.maximum.reduceat(point_mass[cells.cols], cells.first)

    def least_distance(self, cells: ClassCells) -> np.ndarray:
        """``distances.ordered_least_distance`` from the cells: Σ_v q_v · (v's distance to the class's
        nearest value) / (m − 1), each run of absent values split at its middle."""
        if self.gaps == 0:
            return np.zeros(cells.classes)
        share, moment = self.share_prefix
        u, w = cells.cols[:-1], cells.cols[1:]
        between = np.ones(len(u), dtype=bool)
        between[cells.last[:-1]] = False  # a class's last value and the next class's first
        u, w, owner = u[between], w[between], cells.rows[:-1][between]
        mid = (u + w) // 2 + 1  # values u < v < mid are nearer u (or as near), mid ≤ v < w nearer w
        inner = ((moment[mid] - moment[u + 1]) - u * (share[mid] - share[u + 1])
                 + w * (share[w] - share[mid]) - (moment[w] - moment[mid]))
        f, ll = cells.cols[cells.first], cells.cols[cells.last]
        m = len(self.q)
        edges = f * share[f] - moment[f] + (moment[m] - moment[ll + 1]) - ll * (share[m] - share[ll + 1])
        return (np.bincount(owner, weights=inner, minlength=cells.classes) + edges) / self.gaps

    def largest_within(self, cells: ClassCells, t: float) -> np.ndarray:
        """``distances.largest_within`` for the ordered ψ (``distances.deficit_map``), its terms read
        per run of gaps between a class's values: per class the largest T ≤ its size with ψ(T) ≤ t."""
        runs = _Runs.of(cells, self.gaps)
        sizes = cells.sizes
        x = 1.0 / sizes
        stuck = runs.unmovable(self) - t > EDGE  # ψ at its least (T shrinking to 0) already past t
        x[stuck] = np.inf
        todo = np.flatnonzero(~stuck)
        for _ in range(2 * self.gaps + 2):  # one step per break at most
            psi, slope = runs.psi(self, x, todo, cells.classes)
            over = psi - t
            above = over > EDGE
            moving = above & (slope > 0)
            x[todo[above & ~moving]] = np.inf
            if not moving.any():
                break
            todo = todo[moving]
            x[todo] += over[moving] / slope[moving]
        with np.errstate(divide="ignore"):
            return np.where(np.isinf(x), 0.0, np.minimum(sizes, 1.0 / x))


@dataclass(frozen=True)
class _Runs:
    """Per class its runs of gaps [start, end) where its count at or below (``level``) is constant:
    before its first value (level 0), then from each value to the next (or to the last gap)."""

    owner: np.ndarray
    start: np.ndarray
    end: np.ndarray
    level: np.ndarray  # records at or below, C_p
    rest: np.ndarray  # records above, n − C_p

    @classmethod
    def of(cls, cells: ClassCells, gaps: int) -> _Runs:
        owner = np.r_[np.arange(cells.classes), cells.rows]
        from_value = np.minimum(cells.cols, gaps)
        to_next = np.r_[cells.cols[1:], gaps]
        to_next[cells.last] = gaps
        start = np.r_[np.zeros(cells.classes, dtype=np.int64), from_value]
        end = np.maximum(np.r_[from_value[cells.first], to_next], start)
        level = np.r_[np.zeros(cells.classes), cells.at_or_below]
        return cls(owner, start, end, level, cells.sizes[owner] - level)

    def unmovable(self, table: OrderedTable) -> np.ndarray:
        """Per class, the terms of ψ no part can lower (b = 0): F before its first value and 1 − F
        from its last on."""
        F = table.cumulative_prefix
        none_below = np.where(self.level == 0, F[self.end] - F[self.start], 0.0)
        none_above = np.where(self.rest == 0, (self.end - self.start) - (F[self.end] - F[self.start]), 0.0)
        return np.bincount(self.owner, weights=none_below + none_above) / max(table.gaps, 1)

    def psi(self, table: OrderedTable, x: np.ndarray, todo: np.ndarray, classes: int) -> tuple[np.ndarray, np.ndarray]:
        """ψ at each class ``todo``'s x and its slope in x (Σ b over the terms above 0), / (m − 1)."""
        wanted = np.zeros(classes, dtype=bool)
        wanted[todo] = True
        pick = np.flatnonzero(wanted[self.owner])
        owner, start, end = self.owner[pick], self.start[pick], self.end[pick]
        level, rest, at = self.level[pick], self.rest[pick], x[self.owner[pick]]
        F, S = table.cumulative, table.cumulative_prefix
        # at or below: max(0, F − C_p · x), above 0 from the first F past C_p · x
        low = np.clip(np.searchsorted(F, level * at, side="right"), start, end)
        below = (S[end] - S[low]) - level * at * (end - low)
        # above: max(0, (1 − F) − (n − C_p) · x), above 0 up to the first F reaching 1 − (n − C_p) · x
        high = np.clip(np.searchsorted(F, 1.0 - rest * at, side="left"), start, end)
        above = (high - start) * (1.0 - rest * at) - (S[high] - S[start])
        slope = level * (end - low) + rest * (high - start)
        scale = max(table.gaps, 1)
        psi = np.bincount(owner, weights=below + above, minlength=classes)[todo] / scale
        return psi, np.bincount(owner, weights=slope, minlength=classes)[todo] / scale
