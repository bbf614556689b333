"""Earth Mover's Distance between sensitive-attribute distributions (Li et al. 2007, section 5).

Three ground distances over the SA domain v1..vm:

- ``ordered``: numeric values sorted; d(vi, vj) = |i - j| / (m - 1).
- ``equal``: categorical; every pair of distinct values at distance 1.
- ``hierarchical``: categorical with a hierarchy of height H whose leaves are all at depth H;
  d(vi, vj) = level of their lowest common ancestor / H.

All functions take a matrix ``P`` (one equivalence class per row, raw counts or proportions)
and the reference distribution ``q`` (the whole table), normalise every row to sum 1 and work
in float64 throughout. Counts are never summed in 32-bit integers: the reference Java tool
does its hierarchical arithmetic in int32, overflows from about 300,000 rows and then accepts
classes that are far from t-close (see docs/emd.md).

Not implemented here: Mauger et al.'s "t-closeness value" is the plain L1 norm sum |p_i - q_i|
(no 1/2), a different quantity from the equal-distance EMD, which is half of it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sqlclose.model.factorize import sorted_unique
from sqlclose.model.spec import EMD_DISTANCES, EmdDistance

Distance = EmdDistance
DISTANCES: tuple[str, ...] = EMD_DISTANCES

# A class is t-close when emd <= t + EMD_TOLERANCE. Proportions such as 1/3 are not exact in
# float64, so an EMD that is exactly t in exact arithmetic may come out a few ulps above t;
# the tolerance keeps such a class from flipping to "not t-close". Comparing is the caller's job.
EMD_TOLERANCE = 1e-12


def checked(P: Any, q: Any) -> tuple[np.ndarray, np.ndarray]:
    """Class histograms ``P`` (float64 classes × m) and a reference ``q``, validated: shapes agree,
    no NaN, no infinity, no negative count. Every distance checks its input here. ``P`` is the
    caller's array when it was float64 already (a copy of a level's matrix was ~2 % of deciding the
    lattice at 1 M rows): read it, never write into it."""
    P = np.asarray(P, dtype=np.float64)  # float64 first: never sum in int32
    q = np.asarray(q, dtype=np.float64)
    if q.ndim != 1:
        raise ValueError(f"q must be 1-D (one value per SA domain element), got shape {q.shape}")
    if P.ndim == 1:
        P = P[np.newaxis, :]
    elif P.ndim != 2:
        raise ValueError(f"P must be 1-D or 2-D (classes x values), got shape {P.shape}")
    m = q.shape[0]
    if m == 0:
        raise ValueError("the SA domain is empty: q has length 0")
    if P.shape[1] != m:
        raise ValueError(
            f"shape mismatch: P has {P.shape[1]} values per row but q has {m} values"
        )
    for name, arr in (("P", P), ("q", q)):
        if not arr.size or (arr.min() >= 0 and arr.max() < np.inf):  # two passes; NaN fails both
            continue
        if np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN")
        if np.isinf(arr).any():
            raise ValueError(f"{name} contains an infinite value")
        if (arr < 0).any():
            raise ValueError(f"{name} contains a negative entry")
    return P, q


def row_sums(a: np.ndarray) -> np.ndarray:
    """Each row's sum, a function of that row alone: the same bits whatever rows share the array.
    A matrix-vector product (BLAS) is as fast but blocks rows by the array's shape, so a class's
    measure would change in its last bits with the classes judged beside it (a run, a batch);
    ``.sum(axis=1)`` is stable too, but ~10× slower on rows of a few values."""
    return np.einsum("ij->i", a)


def _extra(P: Any, q: Any) -> np.ndarray:
    """Validate, normalise each row of P and q to sum 1, and return p - q (classes x m).

    Every EMD here is a function of p - q alone. The result is a fresh float64 array that the
    callers modify in place: at ~30,000 x 14 each extra full-size temporary costs more than
    the arithmetic itself.
    """
    P, q = checked(P, q)
    q_total = q.sum()
    if q_total == 0:
        raise ValueError("q sums to 0: the reference distribution is empty")
    totals = row_sums(P)
    zero_rows = np.flatnonzero(totals == 0)
    if zero_rows.size:
        raise ValueError(
            f"row {int(zero_rows[0])} of P sums to 0 (empty distribution)"
            + (f"; {zero_rows.size} such rows in total" if zero_rows.size > 1 else "")
        )
    extra = P / totals[:, np.newaxis]  # the fresh array: P may be the caller's
    extra -= q / q_total
    return extra


def ordered_emd(P: np.ndarray, q: np.ndarray) -> np.ndarray:
    """EMD under ordered distance |i-j|/(m-1); columns are the sorted values. One value per row."""
    extra = _extra(P, q)
    m = extra.shape[1]
    if m == 1:
        return np.zeros(extra.shape[0])
    # Moving mass only between neighbours is optimal; the mass crossing the gap between
    # v_i and v_{i+1} is the running surplus sum_{j<=i} (p_j - q_j), for i = 1..m-1
    # (the weight 0 drops i = m, whose running sum is 0 up to rounding).
    np.cumsum(extra, axis=1, out=extra)
    return row_sums(np.abs(extra, out=extra)[:, :-1]) / (m - 1)


def equal_emd(P: np.ndarray, q: np.ndarray) -> np.ndarray:
    """EMD under equal distance (all pairs at 1): half the L1 distance. One value per row."""
    extra = _extra(P, q)
    return 0.5 * row_sums(np.abs(extra, out=extra))


def _check_level_codes(level_codes: Any) -> np.ndarray:
    """Validate ``level_codes`` (m x (H+1)) and return it as an int64 array."""
    codes = np.asarray(level_codes)
    if codes.ndim != 2:
        raise ValueError(
            f"level_codes must be 2-D (leaves x (H+1) levels), got shape {codes.shape}"
        )
    if not np.issubdtype(codes.dtype, np.integer):
        raise ValueError(f"level_codes must hold integers, got dtype {codes.dtype}")
    codes = codes.astype(np.int64, copy=False)
    m, levels = codes.shape
    if m == 0 or levels == 0:
        raise ValueError(
            f"level_codes must have at least one leaf and one level, got shape {codes.shape}"
        )
    if not np.array_equal(codes[:, 0], np.arange(m)):
        raise ValueError("level_codes column 0 must be the leaves 0..m-1 in order")
    if (codes[:, -1] != 0).any():
        raise ValueError("level_codes last column (the root) must be all zeros")
    for level in range(1, levels):
        child, parent = codes[:, level - 1], codes[:, level]
        present = sorted_unique(parent)
        if not np.array_equal(present, np.arange(present.size)):
            raise ValueError(
                f"level_codes column {level} must use dense codes 0..n-1, got {present.tolist()}"
            )
        # Exactly one parent per child: all leaves under a child agree on the parent.
        mapping = np.empty(int(child.max()) + 1, dtype=np.int64)
        mapping[child] = parent
        if not np.array_equal(mapping[child], parent):
            bad = int(child[mapping[child] != parent][0])
            raise ValueError(
                f"level_codes: node {bad} at level {level - 1} has more than one parent "
                f"at level {level}"
            )
    return codes


def level_groups(codes: np.ndarray) -> list[tuple[np.ndarray | None, np.ndarray]]:
    """Per level 1 … H − 1 of a hierarchy's leaf ``codes`` (leaves × (H + 1)): the leaves' order
    grouping them by their node at that level (None when they are grouped already: leaves listed in
    tree order, as hierarchy files list them, need no copy), and each node's first position in it,
    for ``np.add.reduceat`` (nodes in code order)."""
    groups = []
    for level in range(1, codes.shape[1] - 1):
        order = np.argsort(codes[:, level], kind="stable")
        starts = np.flatnonzero(np.diff(codes[order, level], prepend=-1))
        groups.append((None if np.array_equal(order, np.arange(len(order))) else order, starts))
    return groups


def hierarchical_emd(P: np.ndarray, q: np.ndarray, level_codes: np.ndarray) -> np.ndarray:
    """EMD under hierarchical distance (LCA level / H), all leaves at depth H. One value per row.

    ``level_codes[i, l]`` is the dense code of leaf i's ancestor at level l (column 0: the leaf,
    column H: the root, all 0).
    """
    codes = _check_level_codes(level_codes)
    extra = _extra(P, q)
    m = extra.shape[1]
    if codes.shape[0] != m:
        raise ValueError(f"level_codes has {codes.shape[0]} leaves but q has {m} values")
    H = codes.shape[1] - 1
    if H == 0:
        return np.zeros(extra.shape[0])
    # Li et al.: extra(leaf) = p - q, extra(N) = sum of its children's extras, and
    # D = sum over internal N of level(N)/H * min(pos_extra(N), neg_extra(N)).
    # Since pos_extra - neg_extra = extra(N), min(pos, neg) = (sum_C |extra(C)| - |extra(N)|)/2,
    # and summing level(N)/H times that over all levels telescopes to
    #     D = 1/(2H) * sum_{l=0}^{H-1} A_l,   A_l = sum of |extra| over the nodes at level l
    # (the root's |extra| is 0). So D is the mean, over levels 0..H-1, of the equal-distance
    # EMD of P and Q generalised to that level. A node's extra sums its leaves' columns in leaf
    # order (np.add.reduceat), so each class's value is a function of its own row, whatever classes
    # are judged beside it (``row_sums``; a matrix product blocks rows by the array's shape).
    total = np.zeros(extra.shape[0])
    for order, starts in level_groups(codes):
        nodes = np.add.reduceat(extra if order is None else extra[:, order], starts, axis=1)
        total += row_sums(np.abs(nodes, out=nodes))
    total += row_sums(np.abs(extra, out=extra))
    return total / (2 * H)


def emd(
    p: Any,
    q: Any,
    distance: str = "equal",
    hierarchy: Any = None,
) -> float | np.ndarray:
    """EMD of one distribution (1-D p -> float) or of each row of a matrix (2-D p -> array) to q.

    ``hierarchy`` (for ``distance="hierarchical"``) is a ``level_codes`` array or any object
    with a ``level_codes`` attribute.
    """
    if distance not in DISTANCES:
        raise ValueError(
            f"unknown distance {distance!r}; expected one of {', '.join(map(repr, DISTANCES))}"
        )
    one = np.ndim(p) == 1
    if distance == "ordered":
        result = ordered_emd(p, q)
    elif distance == "equal":
        result = equal_emd(p, q)
    else:
        if hierarchy is None:
            raise ValueError("distance 'hierarchical' needs a hierarchy (level_codes)")
        codes = getattr(hierarchy, "level_codes", hierarchy)
        result = hierarchical_emd(p, q, codes)
    return float(result[0]) if one else result
