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

from typing import Any

import numpy as np

from sqlclose.model.spec import ALL_DISTANCES, EMD_DISTANCES
from sqlclose.privacy.emd import checked, emd

NON_EMD_DISTANCES: tuple[str, ...] = tuple(d for d in ALL_DISTANCES if d not in EMD_DISTANCES)


def is_emd(name: str) -> bool:
    return name in EMD_DISTANCES


def _normalised(P: Any, q: Any) -> tuple[np.ndarray, np.ndarray]:
    P, q = checked(P, q)  # the same validation as every EMD (NaN, infinity, negatives, shapes)
    rows = P.sum(axis=1, keepdims=True)
    if (rows == 0).any() or q.sum() == 0:
        raise ValueError("every distribution needs a positive total")
    return P / rows, q / q.sum()


def variational_distance(P: Any, q: Any) -> np.ndarray:
    """½ Σ |p_i − q_i| per row of P (not an EMD; see module docstring)."""
    P, q = _normalised(P, q)
    return 0.5 * np.abs(P - q).sum(axis=1)


def kl_divergence(P: Any, q: Any) -> np.ndarray:
    """Σ p_i log(p_i / q_i) per row of P; infinite where p_i > 0 = q_i."""
    P, q = _normalised(P, q)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, P * (np.log(P) - np.log(q)), 0.0)
    return terms.sum(axis=1)


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
    raise ValueError(f"unknown distance {name!r}; expected one of {', '.join(ALL_DISTANCES)}")


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


def deficit_map(name: str, values: int, hierarchy: Any = None) -> np.ndarray | None:
    """A values × terms matrix M such that no sub-multiset U of T records of a class with counts
    n is nearer to q than ψ(T) = Σ_j max(0, a_j − b_j / T), a = q @ M (q as shares) and b = n @ M.
    U cannot hold more of a value (or of a hierarchy node, or on one side of an ordered gap) than
    the class does: equal distance ½ Σ |u/T − q| ≥ Σ_v max(0, q_v − n_v / T) (M = I); hierarchical
    the mean of that over levels 0…H−1, its EMD being that mean of equal EMDs (M = leaf-to-node
    indicators of each level, / H); ordered, U's cumulative share at each gap lies within
    [1 − (the class's records above it) / T, (those at or below it) / T] and its EMD is Σ over the
    gaps of |F_U − F_q| / (m − 1) (M = at-or-below and above indicators of each gap, / (m − 1)).
    None for KL, or when the distance is 0 for every distribution."""
    if name in ("equal", "variational"):
        return np.eye(values)
    if name == "hierarchical":
        codes = np.asarray(getattr(hierarchy, "level_codes", hierarchy))
        height = codes.shape[1] - 1
        if height == 0:
            return None
        blocks = [np.eye(values)]
        for level in range(1, height):
            indicator = np.zeros((values, int(codes[:, level].max()) + 1))
            indicator[np.arange(values), codes[:, level]] = 1.0
            blocks.append(indicator)
        return np.hstack(blocks) / height
    if name == "ordered":
        if values == 1:
            return None
        at_or_below = (np.arange(values)[:, None] <= np.arange(values - 1)[None, :]).astype(np.float64)
        return np.hstack([at_or_below, 1.0 - at_or_below]) / (values - 1)
    return None


def largest_within(a: np.ndarray, b: np.ndarray, sizes: np.ndarray, t: float) -> np.ndarray:
    """Per class, the largest T ≤ its size with ψ(T) = Σ_j max(0, a_j − b_j / T) ≤ t (0 if none).
    In x = 1/T, ψ is convex, piecewise linear and non-increasing, with a break where each term
    reaches 0 (x = a_j / b_j): the least x within t is on the segment between the last break
    above t and the first within it, where ψ = Σ over the terms not yet 0 of (a_j − b_j x)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        breaks = np.where(b > 0, a / np.where(b > 0, b, 1.0), np.inf)
    order = np.argsort(breaks, axis=1)
    breaks = np.take_along_axis(breaks, order, axis=1)
    a_sorted = np.broadcast_to(a, b.shape)[np.arange(len(b))[:, None], order]
    b_sorted = np.take_along_axis(b, order, axis=1)
    a_after = np.cumsum(a_sorted[:, ::-1], axis=1)[:, ::-1]  # Σ over the terms from this break on
    b_after = np.cumsum(b_sorted[:, ::-1], axis=1)[:, ::-1]
    finite = np.isfinite(breaks)
    within = finite & (a_after - b_after * np.where(finite, breaks, 0.0) <= t)
    first = np.where(within.any(axis=1), within.argmax(axis=1), -1)  # ψ non-increasing: a suffix is within
    rows = np.arange(len(b))
    k = np.maximum(first, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        root = (a_after[rows, k] - t) / b_after[rows, k]
    lower = np.where(k > 0, breaks[rows, k - 1], 0.0)
    x = np.clip(root, lower, breaks[rows, k])
    largest = np.where(x > 0, np.minimum(sizes, 1.0 / np.where(x > 0, x, 1.0)), sizes)
    return np.where(first >= 0, largest, 0.0)


def distance(P: Any, q: Any, name: str, hierarchy: Any = None) -> np.ndarray:
    """The named distance of every row of P from q (an array, one value per row)."""
    if name in EMD_DISTANCES:
        return np.atleast_1d(emd(np.atleast_2d(P), q, name, hierarchy))
    if name == "variational":
        return variational_distance(P, q)
    if name == "kl":
        return kl_divergence(P, q)
    raise ValueError(f"unknown distance {name!r}; expected one of {', '.join(ALL_DISTANCES)}")
