"""Distances between each class's sensitive distribution and the whole table's.

The three EMDs of Li et al. (``emd.py``: ordered, equal, hierarchical) are what t-closeness
uses. The paper also discusses, and rejects, two distances that ignore the semantic closeness
of values; they are here for comparison and always reported as *not* EMD:

- ``variational``: ½ Σ |p_i − q_i|. Numerically equal to the equal-distance EMD, but named for
  what it is: it says nothing about which values are close.
- ``kl``: Kullback–Leibler divergence Σ p_i log(p_i / q_i) (natural log), unbounded.

Every distance here is convex in the class distribution — the property the search relies on
(monotone under generalization; the suppression bound in ``privacy``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from sqlclose.model.attributes import SensitiveAttribute
from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.spec import ALL_DISTANCES, EMD_DISTANCES
from sqlclose.model.text import name_shown
from sqlclose.privacy.emd import (
    checked,
    checked_entries,
    count_sums,
    emd,
    equal_emd,
    level_groups,
    row_blocks,
    row_sums,
    whole_block,
)


def is_emd(name: str) -> bool:
    return name in EMD_DISTANCES


def variational_distance(P: Any, q: Any) -> np.ndarray:
    """½ Σ |p_i − q_i| per row of P (not an EMD; see module docstring): the equal EMD's number,
    the exact rational of record counts rounded once (``emd.equal_emd``)."""
    return equal_emd(P, q)


def kl_divergence(P: Any, q: Any) -> np.ndarray:
    """Σ p_i log(p_i / q_i) per row of P; infinite where p_i > 0 = q_i. Each term is a function of
    its cell, and a row's terms are added left to right (``row_sums``): a class's bits are its own,
    wherever it lies in a batch (a SIMD sum regrouped them with the row's offset). A block of rows
    at a time (``row_blocks``), its temporaries in the cache."""
    P, q = checked(P, q)  # the same validation as every EMD (NaN, infinity, negatives, shapes)
    if q.sum() == 0:
        raise ValueError("every distribution needs a positive total")
    with np.errstate(divide="ignore"):  # a value the table lacks: log 0 = -inf, its term +inf where p > 0
        log_q = np.log(q / q.sum())
    out = np.empty(P.shape[0])
    for rows in row_blocks(P):
        block = P[rows]
        sizes = count_sums(block) if whole_block(block) else row_sums(block)  # whole: exact in any grouping
        if (sizes == 0).any():
            raise ValueError("every distribution needs a positive total")
        shares = block / sizes[:, np.newaxis]
        with np.errstate(divide="ignore", invalid="ignore"):
            out[rows] = row_sums(np.where(shares > 0, shares * (np.log(shares) - log_q), 0.0))
    return out


def kl_divergence_of_cells(rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, classes: int,
                           q: Any) -> np.ndarray:
    """``kl_divergence`` of each of ``classes`` classes given by their cells (``rows`` ascending,
    ``cols`` ascending within a row), each its dense row's value to the bit: the same term of each
    cell, and the dense row's other terms are +0.0 (``np.where``), which leave a float sum as it
    is, so the class's own terms added left to right are the dense row's ``row_sums``.
    ``np.bincount`` adds each weight into its class's total in the order given, starting from 0.0
    (a plain loop, no regrouping: tests/test_distances_of_cells.py checks the bits)."""
    counts = np.asarray(counts, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    checked_entries("P", counts)
    checked_entries("q", q)
    if q.sum() == 0:
        raise ValueError("every distribution needs a positive total")
    with np.errstate(divide="ignore"):  # as kl_divergence: the log of the whole q, then each cell's
        log_q = np.log(q / q.sum())
    sizes = np.bincount(rows, weights=counts, minlength=classes)  # whole: exact; else left to right, as row_sums
    if (sizes == 0).any():
        raise ValueError("every distribution needs a positive total")
    shares = counts / sizes[rows]
    present = shares > 0
    rows, cols, shares = rows[present], cols[present], shares[present]
    terms = shares * (np.log(shares) - log_q[cols])  # q = 0 beneath p > 0: +inf, as the dense term
    return np.bincount(rows, weights=terms, minlength=classes)


def point_mass_distances(q: Any, name: str, hierarchy: Any = None) -> np.ndarray:
    """Distance from q of each one-value distribution e_i, in O(m·H) memory and time.

    The largest of these is the largest distance any distribution can have from q (every
    distance here is convex, so its maximum over the simplex sits at a vertex). Closed forms:
    equal/variational 1 − q_i; KL −log q_i; ordered (Σ_{j<i} F_j + Σ_{i≤j<m−1} (1 − F_j)) / (m − 1)
    with F the cumulative q; hierarchical (1/H) Σ_{l<H} (1 − q(ancestor of i at level l)).
    """
    q = np.asarray(q, dtype=np.float64)
    q = q / q.sum()
    m = len(q)
    if name in ("equal", "variational"):
        return 1.0 - q
    if name == "kl":
        with np.errstate(divide="ignore"):
            return -np.log(q)
    if name == "ordered":
        if m == 1:
            return np.zeros(1)
        F = np.cumsum(q)[:-1]  # F_j for j = 0..m-2
        below = np.concatenate([[0.0], np.cumsum(F)])  # Σ_{j<i} F_j for i = 0..m-1
        above = np.concatenate([np.cumsum((1 - F)[::-1])[::-1], [0.0]])  # Σ_{i≤j<m−1} (1 − F_j)
        return (below + above) / (m - 1)
    if name == "hierarchical":
        codes = np.asarray(getattr(hierarchy, "level_codes", hierarchy))
        height = codes.shape[1] - 1
        if height == 0:
            return np.zeros(m)
        total = np.zeros(m)
        for level in range(height):
            mass = np.bincount(codes[:, level], weights=q)
            total += 1.0 - mass[codes[:, level]]
        return total / height
    raise ValueError(f"unknown distance {name_shown(name)}; expected one of {', '.join(ALL_DISTANCES)}")


def ordered_least_distance(present: np.ndarray, q: Any) -> np.ndarray:
    """Per row of ``present`` (classes × values in order, True where the class holds the value):
    a lower bound on the ordered EMD from q of every distribution on the present values alone.
    Each value's share q_v must come from a present value, at least the distance to the nearest
    one away: Σ q_v · that distance / (m − 1). (For the equal and hierarchical distances the same
    bound — the shares of the absent values and hierarchy nodes — is ``deficit_map``'s ψ as the
    part shrinks; for the ordered one ψ only sees values missing from an end, this also the gaps.)"""
    q = np.asarray(q, dtype=np.float64)
    q = q / q.sum()
    m = len(q)
    if m == 1:
        return np.zeros(len(present))
    index = np.arange(m, dtype=np.float64)
    left = np.maximum.accumulate(np.where(present, index, -np.inf), axis=1)
    right = np.minimum.accumulate(np.where(present, index, np.inf)[:, ::-1], axis=1)[:, ::-1]
    nearest = np.minimum(index - left, right - index)  # inf in an empty row: no bound needed there
    return np.where(np.isfinite(nearest), nearest, 0.0) @ q / (m - 1)


@dataclass(frozen=True)
class DeficitMap:
    """The terms of ψ for a distance (``deficit_map``): ``of(counts)`` is ``counts @ M`` for the
    values × terms matrix M described there, computed from M's structure — identity, leaf-to-node
    indicators, at-or-below steps — without building it (values × values float64 was 174 GiB at
    431 k salaries). Rows of ``counts`` are classes (or one distribution), columns the values."""

    name: str
    values: int
    level_codes: np.ndarray | None = None  # hierarchical: leaves × (H + 1), as in ``emd``

    def of(self, counts: np.ndarray) -> np.ndarray:
        counts = np.asarray(counts, dtype=np.float64)
        if self.name == "hierarchical":
            return self._by_levels(counts)
        if self.name == "ordered":
            return self._by_gaps(counts)
        return counts  # equal, variational: M is the identity

    @cached_property
    def _groups(self) -> list[tuple[np.ndarray | None, np.ndarray]]:
        """``emd.level_groups`` of the codes, found once: ``of`` runs at every t bound."""
        return level_groups(self.level_codes)

    def _by_levels(self, counts: np.ndarray) -> np.ndarray:
        """Each leaf's count, then per level 1 … H − 1 the counts summed by node, all / H."""
        blocks = [counts] + [np.add.reduceat(counts if order is None else counts[..., order], starts, axis=-1)
                             for order, starts in self._groups]
        return np.concatenate(blocks, axis=-1) / (self.level_codes.shape[1] - 1)

    def _by_gaps(self, counts: np.ndarray) -> np.ndarray:
        """Per gap between neighbouring values: the counts at or below it, then those above, / (m − 1)."""
        gaps = self.values - 1
        out = np.empty((*counts.shape[:-1], 2 * gaps))
        np.cumsum(counts[..., :gaps], axis=-1, out=out[..., :gaps])
        np.subtract(counts.sum(axis=-1, keepdims=True), out[..., :gaps], out=out[..., gaps:])
        out /= gaps
        return out


def deficit_map(name: str, values: int, hierarchy: Any = None) -> DeficitMap | None:
    """The terms of a lower bound: no sub-multiset U of T records of a class with counts n is nearer
    to q than ψ(T) = Σ_j max(0, a_j − b_j / T), a = q @ M (q as shares) and b = n @ M, for a values ×
    terms matrix M (``DeficitMap.of`` computes those products without building M). U cannot hold
    more of a value (or of a hierarchy node, or on one side of an ordered gap) than the class does:
    equal distance ½ Σ |u/T − q| ≥ Σ_v max(0, q_v − n_v / T) (M = I); hierarchical the mean of that
    over levels 0…H−1, its EMD being that mean of equal EMDs (M = leaf-to-node indicators of each
    level, / H); ordered, U's cumulative share at each gap lies within [1 − (the class's records
    above it) / T, (those at or below it) / T] and its EMD is Σ over the gaps of |F_U − F_q| / (m − 1)
    (M = at-or-below and above indicators of each gap, / (m − 1)). None for KL, or when the
    distance is 0 for every distribution."""
    if name in ("equal", "variational"):
        return DeficitMap(name, values)
    if name == "hierarchical":
        codes = np.asarray(getattr(hierarchy, "level_codes", hierarchy))
        return None if codes.shape[1] == 1 else DeficitMap(name, values, codes)
    if name == "ordered":
        return None if values == 1 else DeficitMap(name, values)
    return None


def largest_within(a: np.ndarray, b: np.ndarray, sizes: np.ndarray, t: float) -> np.ndarray:
    """Per class, the largest T ≤ its size with ψ(T) = Σ_j max(0, a_j − b_j / T) ≤ t (0 if none).
    In x = 1/T, ψ is convex, piecewise linear and non-increasing (a term is 0 past x = a_j / b_j),
    so Newton's steps from the left, x ← x + (ψ(x) − t) / (Σ b_j over the terms still above 0),
    never pass the least x within t and land on it once they reach its segment: a few steps per
    class (at most one per break; ≤ 6 on the generated tables), vectorized over the classes not
    there yet. They start at x = 1/size (T is at most the size). A class whose terms with b_j = 0
    (values no part can hold more of) alone sum past t is never within t: 0, found before the
    steps — a third or more of a failing batch's classes, which would otherwise ride along until
    their other terms reach 0 (docs/performance.md, fourteenth round). Sorting each class's breaks
    instead (the shape before) took 2.6× as long on the 1 M-row table's 400 k-class batches."""
    a = np.asarray(a, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    x = 1.0 / np.where(sizes > 0, sizes, 1.0)
    stuck = (b == 0) @ a - t > 1e-12  # ψ at its least (T shrinking to 0) is already past t
    x[stuck] = np.inf
    todo = np.flatnonzero(~stuck)  # the classes not there yet
    rows = b[todo]  # and their rows of b
    for _ in range(b.shape[1] + 2):  # one step per break at most; short of the root is sound
        terms = rows * -x[todo, None]
        terms += a
        np.maximum(terms, 0.0, out=terms)
        over = terms.sum(axis=1) - t
        above = over > 1e-12  # ψ within t up to rounding: a hair more T is a hair less bound
        slope = np.einsum("ij,ij->i", rows, terms > 0)  # on every row: cheaper than copying terms
        moving = above & (slope > 0)  # above t with slope 0: only terms no part can lower are left
        x[todo[above & ~moving]] = np.inf
        if not moving.any():
            break
        todo, over, slope, rows = todo[moving], over[moving], slope[moving], rows[moving]
        x[todo] += over / slope
    with np.errstate(divide="ignore"):
        return np.where(np.isinf(x), 0.0, np.minimum(sizes, 1.0 / x))


def distance(P: Any, q: Any, name: str, hierarchy: Any = None) -> np.ndarray:
    """The named distance of every row of P from q (an array, one value per row)."""
    if name in EMD_DISTANCES:
        return np.atleast_1d(emd(np.atleast_2d(P), q, name, hierarchy))
    if name == "variational":
        return variational_distance(P, q)
    if name == "kl":
        return kl_divergence(P, q)
    raise ValueError(f"unknown distance {name_shown(name)}; expected one of {', '.join(ALL_DISTANCES)}")


def idle_level_warnings(sas: Sequence[SensitiveAttribute]) -> list[str]:
    """A warning per sensitive column under the hierarchical distance whose hierarchy has levels that
    group nothing (``Hierarchy.levels_without_a_group``): accepted silently, a '*' above a single
    root made every distance smaller, so t held more loosely than it reads. Read from the hierarchy
    alone, never from the data."""
    return [said for sa in sas if sa.distance == "hierarchical" and sa.hierarchy is not None
            for said in [_idle_levels_said(sa.name, sa.hierarchy, sa.spec.t if sa.spec is not None else None)]
            if said is not None]


def _idle_levels_said(name: str, hierarchy: Hierarchy, t: float | None) -> str | None:
    idle = hierarchy.levels_without_a_group()
    if not idle:
        return None
    height, one = hierarchy.height, len(idle) == 1
    which, it = (f"level {idle[0]}", "it") if one else (f"levels {', '.join(map(str, idle))}", "them")
    said = (f"sensitive column {name_shown(name)}: {which} of its hierarchy group{'s' if one else ''} nothing (each "
            f"label there has exactly one child below), yet count{'s' if one else ''} in the height ({height}) that "
            "hierarchical distances are divided by")
    if idle == list(range(height - len(idle) + 1, height + 1)):  # above the single root: all distances shrink
        kept = height - len(idle)
        effect = f"so every distance is {kept}/{height} of what it is without {it}"
        if t is not None:
            effect += (f", and t = {t:g} holds as t = {t * height / kept:.4g} would over the hierarchy without "
                       f"{it}: looser than it reads")
    else:
        effect = (f"so two values whose lowest common group lies below {it} come out nearer, and two joined above "
                  f"{it} (below the top) farther, than without {it}")
    return f"{said}, {effect}; remove {it} from the hierarchy unless that is meant"
