"""Information loss of full-domain nodes (one level per QI), from class-level counts.

For a full-domain node every record's value of QI j goes to its ancestor at the node's level
l_j, so the table cost of Mauger et al.'s Definition 6 separates per QI:

    μ_T(node) = Σ_j C_j[l_j],   C_j[l] = Σ_leaves v count_j(v) · cost_j(v → ancestor of v at l)

where count_j(v) is how many records hold leaf v in QI j (one GROUP BY over the base histogram,
in SQL). A whole lattice is costed from m small vectors, without touching a class.

Suppressed records count as generalized to the root on every QI (information_loss's
convention: a suppressed record releases none of its QI values). Its cost is then
cost(v → root) = cost(v → a) + cost(a → root) for its class's value a at l_j, so a node's cost
with suppression is its unsuppressed cost plus, per failing class, size × Σ_j to_root_j(a_j):
class-level quantities the search already has (the class's codes at the node's levels).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sqlclose.model.factorize import sorted_unique
from sqlclose.utility.information_loss import Metric


@dataclass(frozen=True, eq=False)
class FullDomainCost:
    """One metric's costs of full-domain nodes, from per-QI leaf counts."""

    metric: Metric
    level_cost: tuple[np.ndarray, ...]  # per QI: C_j[l] for every level l
    to_root_by_code: tuple[tuple[np.ndarray, ...], ...]  # per QI, per level: cost(a → root) by mixed code a

    @classmethod
    def of(cls, metric: Metric, leaf_counts: Sequence[np.ndarray]) -> FullDomainCost:
        """``leaf_counts[j]``: records per leaf of QI j, in ``hierarchy.leaves`` order."""
        level_cost, by_code = [], []
        for j, (tree, counts) in enumerate(zip(metric.trees, leaf_counts)):
            up = metric.to_root[j]
            leaf_nodes = tree.leaf_nodes
            ancestors = tree.ancestors[leaf_nodes]  # leaves × levels
            per_leaf = up[leaf_nodes][:, None] - up[ancestors]  # cost(v → ancestor at l)
            level_cost.append(np.asarray(counts, dtype=np.float64) @ per_leaf)
            h = tree.hierarchy
            codes = []
            for lv in range(tree.levels):
                mixed = h.leaf_codes // h.divisors[lv]
                table = np.zeros(int(mixed.max()) + 1)
                table[mixed] = up[ancestors[:, lv]]
                codes.append(table)
            by_code.append(tuple(codes))
        return cls(metric, tuple(level_cost), tuple(by_code))

    @property
    def name(self) -> str:
        return self.metric.name

    @property
    def full(self) -> float:
        """μ_T(T*): every value at the root."""
        return float(sum(c[-1] for c in self.level_cost))

    def unsuppressed(self, levels: np.ndarray) -> np.ndarray:
        """Cost of each node (rows of ``levels``: one level per QI) with nothing suppressed."""
        levels = np.atleast_2d(np.asarray(levels, dtype=np.int64))
        total = np.zeros(levels.shape[0])
        for j, c in enumerate(self.level_cost):  # QI by QI, always in the same order: equal nodes cost equal
            total += c[levels[:, j]]
        return total

    def suppression_extra(self, levels: np.ndarray, class_node: np.ndarray, codes: np.ndarray,
                          suppressed_sizes: np.ndarray) -> np.ndarray:
        """Per node: what its suppressed records add, Σ over classes of suppressed size × Σ_j
        cost(class value at l_j → root). ``class_node`` indexes rows of ``levels``; ``codes`` are
        the classes' mixed-radix codes at their node's levels; ``suppressed_sizes`` is 0 for a
        kept class."""
        levels = np.atleast_2d(np.asarray(levels, dtype=np.int64))
        hit = np.flatnonzero(suppressed_sizes)
        per_class = np.zeros(hit.size)
        for j, tables in enumerate(self.to_root_by_code):
            lv = levels[class_node[hit], j]
            for level in sorted_unique(lv):
                at = lv == level
                per_class[at] += tables[level][codes[hit[at], j]]
        return np.bincount(class_node[hit], weights=per_class * suppressed_sizes[hit], minlength=levels.shape[0])

    def costs(self, levels: np.ndarray, class_node: np.ndarray, codes: np.ndarray,
              suppressed_sizes: np.ndarray) -> np.ndarray:
        """μ_T per node, suppressed records at the root."""
        return self.unsuppressed(levels) + self.suppression_extra(levels, class_node, codes, suppressed_sizes)

    def alteration(self, cost: float | np.ndarray) -> float | np.ndarray:
        """alt_μ in percent (Definition 7); NaN when even T* costs 0."""
        full = self.full
        return np.asarray(cost) / full * 100.0 if full > 0 else np.full_like(np.asarray(cost, dtype=float), np.nan)


def value_percents(levels: Sequence[int], tops: Sequence[int], rows: int, suppressed: int) -> tuple[float, float]:
    """(p_gen, p_root) of a full-domain node (Definition 9): the % of (record, QI) values above
    level 0, and at the root; suppressed records count at the root on every QI."""
    kept = rows - suppressed
    m = len(levels)
    if not rows or not m:
        return 0.0, 0.0
    raised = sum((kept if lv > 0 else 0) + (suppressed if top > 0 else 0) for lv, top in zip(levels, tops))
    at_root = sum(kept if lv == top else 0 for lv, top in zip(levels, tops)) + suppressed * m
    return raised / (rows * m) * 100.0, at_root / (rows * m) * 100.0
