"""Earth Mover's Distance between sensitive-attribute distributions (Li et al. 2007, section 5).

Three ground distances over the SA domain v1..vm:

- ``ordered``: numeric values sorted; d(vi, vj) = |i - j| / (m - 1).
- ``equal``: categorical; every pair of distinct values at distance 1.
- ``hierarchical``: categorical with a hierarchy of height H whose leaves are all at depth H;
  d(vi, vj) = level of their lowest common ancestor / H.

All functions take a matrix ``P`` (one equivalence class per row, raw counts or proportions)
and the reference distribution ``q`` (the whole table). Each class's value is a function of its
own row alone, to the last bit, wherever it lies in a batch: record counts are summed exactly in
int64 and divided once (the exact rational rounded once); proportions are normalised and summed
left to right in float64 (``row_sums``). Counts are never summed in 32-bit integers: the reference Java tool
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
from sqlclose.model.text import name_shown

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
    checked_entries("P", P)
    checked_entries("q", q)
    return P, q


def checked_entries(name: str, arr: np.ndarray) -> None:
    """No NaN, no infinity, no negative entry in ``arr`` (float64), else ValueError naming ``name``."""
    if not arr.size or (arr.min() >= 0 and arr.max() < np.inf):  # two passes; NaN fails both
        return
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains an infinite value")
    if (arr < 0).any():
        raise ValueError(f"{name} contains a negative entry")


def row_sums(a: np.ndarray) -> np.ndarray:
    """Each row's sum in floating point, added left to right (a column at a time over all rows, or
    ``np.cumsum``'s last column past ``COLUMN_BY_COLUMN`` values): each partial sum is one rounding
    of the previous one and the next term, so a row's bits are a function of that row alone,
    wherever it lies in the array. ``np.einsum`` and ``.sum(axis=1)`` are not: their SIMD grouping
    follows each row's offset and the array's shape (numpy 2.4 summed 35 of 40 rows of 99,520 values
    to other bits alone than in a block of 40), and a matrix product blocks rows by the array's
    shape. Whole numbers need none of this (``count_sums``)."""
    if not a.shape[1]:
        return np.zeros(a.shape[0])
    if a.shape[1] > COLUMN_BY_COLUMN:
        return np.cumsum(a, axis=1)[:, -1]
    total = a[:, 0].copy()  # the same additions in the same order, a column over all rows at a time
    for column in range(1, a.shape[1]):
        total += a[:, column]
    return total


# Rows of up to this many values are summed a column at a time, a vector op per column (5.6 M
# values at 7, 14, 40 a row: 12, 21, 13 ms against np.cumsum's 29, 26, 25, on the 2 shared cores);
# wider ones by ``np.cumsum`` (one pass, no Python loop per column).
COLUMN_BY_COLUMN = 40


def count_sums(a: np.ndarray) -> np.ndarray:
    """Each row's sum of whole numbers below 2⁵³ in total: exact in any grouping, so the fast one."""
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
    """EMD under ordered distance |i-j|/(m-1); columns are the sorted values. One value per row.

    Record counts (whole numbers, as the criteria and the report hold them) are summed exactly in
    integers (``ordered_sums``): the same bits whether a class is given dense or as its cells
    (``ordered_emd_of_cells``), correct to the last bit but one. Proportions take the float form."""
    P, q = checked(P, q)
    m = q.shape[0]
    if m == 1 or not P.shape[0]:
        _extra(P, q)  # its checks: an empty row, an empty q
        return np.zeros(P.shape[0])
    sizes = count_sums(P)  # exact when whole (else only told apart from whole by _exact_dtype)
    dtype = _exact_dtype(P, sizes, q)
    if dtype is None:
        return _ordered_float(P, q)
    _require_rows(sizes, q)
    if m > DENSE_ORDERED_VALUES and CELL_COST * np.count_nonzero(P) < P.size:  # by its cells: O(held · log m)
        rows, cols = np.nonzero(P)
        return ordered_emd_of_cells(rows, cols, P[rows, cols], P.shape[0], q)
    total = q.sum()
    running = np.cumsum(P[:, :-1], axis=1, dtype=dtype)  # whole numbers: exact in either type
    running *= dtype(total)
    running -= sizes.astype(dtype)[:, np.newaxis] * np.cumsum(q[:-1].astype(dtype))
    return _per_class(np.abs(running, out=running).sum(axis=1), sizes, total, m)


# Past this many values, a class's EMD is taken from its cells (``ordered_emd_of_cells``) when they
# are few: the same integers, so the same bits. A cell costs ~16-20 dense elements (its binary search,
# an integer division); measured on 5,000 classes (docs/performance.md, "Ordered t on large domains").
DENSE_ORDERED_VALUES = 512
CELL_COST = 16
# Whole-number counts are summed in int64 while every product (class size × table rows × values)
# stays below this; past it, the same integer terms in float64 (a relative error of ~1e-16 a term).
EXACT_PRODUCTS = 2**62


def _ordered_float(P: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The ordered EMD of proportions (or counts past 2⁵³), in float64 over the whole row."""
    extra = _extra(P, q)
    m = extra.shape[1]
    # Moving mass only between neighbours is optimal; the mass crossing the gap between
    # v_i and v_{i+1} is the running surplus sum_{j<=i} (p_j - q_j), for i = 1..m-1
    # (the weight 0 drops i = m, whose running sum is 0 up to rounding).
    np.cumsum(extra, axis=1, out=extra)
    return row_sums(np.abs(extra, out=extra)[:, :-1]) / (m - 1)


def _whole(a: np.ndarray) -> bool:
    return bool(np.all(a == np.floor(a))) and (not a.size or float(a.max()) < 2**53)


def _exact_dtype(P: np.ndarray, sizes: np.ndarray, q: np.ndarray) -> type | None:
    """int64 when the counts are whole numbers whose products fit it, float64 when only the
    counts' sums do (their products then round), None for proportions (the float form)."""
    total = float(q.sum())
    if not (_whole(P) and _whole(q) and total < 2**53 and (not sizes.size or float(sizes.max()) < 2**53)):
        return None
    largest = int(sizes.max()) if sizes.size else 0
    return np.int64 if largest * int(total) * q.shape[0] < EXACT_PRODUCTS else np.float64


def _require_rows(sizes: np.ndarray, q: np.ndarray) -> None:
    """The errors ``_extra`` gives: an empty q, an empty class."""
    if q.sum() == 0:
        raise ValueError("q sums to 0: the reference distribution is empty")
    zero_rows = np.flatnonzero(sizes == 0)
    if zero_rows.size:
        raise ValueError(
            f"row {int(zero_rows[0])} of P sums to 0 (empty distribution)"
            + (f"; {zero_rows.size} such rows in total" if zero_rows.size > 1 else "")
        )


def _per_class(sums: np.ndarray, sizes: np.ndarray, total: float, m: int) -> np.ndarray:
    """EMD = Σ_gaps |N · C_p − n · C_q| / (n · N · (m − 1)): the exact integer sum, one division."""
    return sums.astype(np.float64) / (sizes.astype(np.float64) * float(total) * (m - 1))


def ordered_emd_of_cells(rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, classes: int,
                         q: np.ndarray) -> np.ndarray:
    """The ordered EMD of each of ``classes`` classes given by their nonzero cells (``rows``
    ascending, ``cols`` ascending within a row, whole-number ``counts``) from the table's counts
    ``q``, in O(cells · log m) whatever the m values. With C_q the table's counts at or below each
    gap (N in all) and C_p a class's (n in all), EMD = Σ_gaps |N · C_p − n · C_q| / (n N (m − 1));
    C_p is constant between two of the class's values, and over such a run of gaps, C_q being
    nondecreasing, the terms change sign once: where C_q reaches N · C_p / n (a binary search),
    each side summed from prefix sums of C_q. All in integers while they fit (``EXACT_PRODUCTS``):
    the same value as the dense form, bit for bit."""
    q = np.asarray(q, dtype=np.float64)
    m = q.shape[0]
    counts = np.asarray(counts, dtype=np.float64)
    sizes = np.bincount(rows, weights=counts, minlength=classes)  # whole numbers: exact
    _require_rows(sizes, q)
    if m == 1 or not classes:
        return np.zeros(classes)
    dtype = _exact_dtype(counts[np.newaxis, :], sizes, q)
    if dtype is None:
        raise ValueError("ordered_emd_of_cells needs whole-number counts below 2**53")
    return _per_class(_cell_sums(rows, cols, counts, sizes, q, dtype), sizes, q.sum(), m)


def _cell_sums(rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, sizes: np.ndarray, q: np.ndarray,
               dtype: type) -> np.ndarray:
    """Per class Σ_gaps |N · C_p − n · C_q| (``ordered_emd_of_cells``), in ``dtype``."""
    gaps = q.shape[0] - 1
    at_or_below = np.cumsum(q.astype(np.int64))  # C_q per value, exact: whole counts below 2⁵³
    total = dtype(at_or_below[-1])
    prefix = np.concatenate([[0], np.cumsum(at_or_below[:gaps])]).astype(dtype)  # Σ C_q over gaps < i
    first = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])  # each class's first cell
    whole = counts.astype(np.int64)
    running = np.cumsum(whole)
    running -= np.repeat(running[first] - whole[first], np.diff(np.r_[first, len(rows)]))  # C_p at each cell
    ends = np.r_[cols[1:], gaps]  # a cell's run of gaps: to the class's next value, or to the last gap
    ends[first[1:] - 1] = gaps
    starts = np.minimum(cols, gaps)
    ends = np.maximum(ends, starts)
    n = sizes[rows].astype(np.int64)
    level = running.astype(dtype) * total  # N · C_p over the run
    if dtype is np.int64:
        crossing = -((-running * int(total)) // n)  # the least whole C_q with n · C_q ≥ N · C_p
    else:
        crossing = running * float(total) / n
    split = np.clip(np.searchsorted(at_or_below[:gaps], crossing), starts, ends)
    n = n.astype(dtype)
    below = level * (split - starts).astype(dtype) - n * (prefix[split] - prefix[starts])
    above = n * (prefix[ends] - prefix[split]) - level * (ends - split).astype(dtype)
    sums = np.add.reduceat(below + above, first) if len(rows) else np.zeros(0, dtype)
    # before a class's first value C_p = 0: Σ n · C_q over those gaps
    return sums + n[first] * prefix[cols[first]]


def equal_emd(P: np.ndarray, q: np.ndarray) -> np.ndarray:
    """EMD under equal distance (all pairs at 1): half the L1 distance. One value per row.
    Record counts: Σ |N · n_v − n · q_v| / (2 n N), the exact integer sum divided once
    (``_level_l1``)."""
    return _level_l1(P, q, [], 1)


def _level_l1(P: Any, q: Any, groups: list[tuple[np.ndarray | None, np.ndarray]], height: int) -> np.ndarray:
    """Per row of P, the mean over levels 0 … H − 1 of ½ Σ_nodes |p − q| (level 0 the leaves, the
    others grouped by ``groups``, as ``level_groups`` gives them): the equal EMD (H = 1, no groups)
    and the hierarchical one. A function of each row alone, to the last bit: record counts as
    Σ_levels Σ_nodes |N · n_v − n · q_v| / (2 H n N), the sum exact (``_exact_sums``) and divided
    once; proportions summed left to right (``_level_l1_float``)."""
    P, q = checked(P, q)
    sizes = count_sums(P)  # exact when P is whole (what _exact_sums checks)
    sums = _exact_sums(P, q, sizes, groups, height) if _whole(q) else None
    if sums is None:
        return _level_l1_float(P, q, groups, height)
    return sums.astype(np.float64) / (2.0 * height * sizes * q.sum())


# A block of rows at a time, ~256 KB of values: the temporaries stay in the cache (a whole batch's
# copies cost more than the arithmetic: 400,000 classes × 14 values took 2.4× as long).
BLOCK_VALUES = 2**15


def _exact_sums(P: np.ndarray, q: np.ndarray, sizes: np.ndarray, groups: list[tuple[np.ndarray | None, np.ndarray]],
                height: int) -> np.ndarray | None:
    """Per row Σ_levels Σ_nodes |N · n_v − n · q_v| exactly, or None when P holds a count that is not
    a whole number (proportions) or the sums may not fit. Each term is at most n N, a row's sum at
    most 2 H n N: below 2⁵³ every one is a whole float64, exact in any grouping (10⁶ rows × a class
    of 10⁶ is 2⁴⁰); below 2⁶² the same in int64."""
    total = float(q.sum())
    if total == 0 or (sizes == 0).any():
        _require_rows(sizes, q)
    bound = 2.0 * height * (float(sizes.max()) if sizes.size else 0.0) * total
    if bound >= EXACT_PRODUCTS:
        return None
    if bound >= 2**53:  # rare: the same sums in int64, after a whole-matrix check
        if not _whole(P):
            return None
        return _node_sums(P.astype(np.int64), sizes.astype(np.int64), q.astype(np.int64), int(total), groups)
    sums = np.empty(P.shape[0])
    for rows in row_blocks(P):
        block = P[rows]
        if not whole_block(block):
            return None
        sums[rows] = _node_sums(block, sizes[rows], q, total, groups)
    return sums


def row_blocks(a: np.ndarray) -> list[slice]:
    """``a``'s rows in blocks of about ``BLOCK_VALUES`` values (at least one row each)."""
    step = max(1, BLOCK_VALUES // max(a.shape[1], 1))
    return [slice(first, first + step) for first in range(0, a.shape[0], step)]


def whole_block(block: np.ndarray) -> bool:
    """Whether every value of a (cache-sized) block is a whole number."""
    return np.array_equal(np.floor(block), block)


def _node_sums(counts: np.ndarray, sizes: np.ndarray, table: np.ndarray, total: float | int,
               groups: list[tuple[np.ndarray | None, np.ndarray]]) -> np.ndarray:
    """Per row Σ_levels Σ_nodes |N · n_v − n · q_v|, in the counts' type (whole numbers throughout)."""
    extra = counts * total
    extra -= sizes[:, np.newaxis] * table
    sums = np.zeros(len(counts), dtype=extra.dtype)
    for order, starts in groups:
        nodes = np.add.reduceat(extra if order is None else extra[:, order], starts, axis=1)
        sums += count_sums(np.abs(nodes, out=nodes))
    return sums + count_sums(np.abs(extra, out=extra))  # the leaves last: extra's own buffer


def _level_l1_float(P: np.ndarray, q: np.ndarray, groups: list[tuple[np.ndarray | None, np.ndarray]],
                    height: int) -> np.ndarray:
    """``_level_l1`` of proportions (or counts past int64's products): shares in float64, each
    node's share summed in leaf order (``np.add.reduceat``) and each level's sum left to right."""
    extra = _extra(P, q)
    total = np.zeros(extra.shape[0])
    for order, starts in groups:
        nodes = np.add.reduceat(extra if order is None else extra[:, order], starts, axis=1)
        total += row_sums(np.abs(nodes, out=nodes))
    total += row_sums(np.abs(extra, out=extra))
    return total / (2 * height)


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
    P, q = checked(P, q)
    m = q.shape[0]
    if codes.shape[0] != m:
        raise ValueError(f"level_codes has {codes.shape[0]} leaves but q has {m} values")
    H = codes.shape[1] - 1
    if H == 0:
        _extra(P, q)  # its checks: an empty row, an empty q
        return np.zeros(P.shape[0])
    # Li et al.: extra(leaf) = p - q, extra(N) = sum of its children's extras, and
    # D = sum over internal N of level(N)/H * min(pos_extra(N), neg_extra(N)).
    # Since pos_extra - neg_extra = extra(N), min(pos, neg) = (sum_C |extra(C)| - |extra(N)|)/2,
    # and summing level(N)/H times that over all levels telescopes to
    #     D = 1/(2H) * sum_{l=0}^{H-1} A_l,   A_l = sum of |extra| over the nodes at level l
    # (the root's |extra| is 0). So D is the mean, over levels 0..H-1, of the equal-distance
    # EMD of P and Q generalised to that level (``_level_l1``: in integers for record counts, so
    # each class's value is a function of its own row, whatever classes are judged beside it).
    return _level_l1(P, q, level_groups(codes), H)


def hierarchical_emd_of_cells(rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, classes: int,
                              q: np.ndarray, level_codes: Any) -> np.ndarray:
    """``hierarchical_emd`` of each of ``classes`` classes given by their cells (``rows`` ascending),
    each class's value its dense row's alone, to the bit, in O(cells · H). Record counts:
    ``_level_l1``'s integer Σ_levels Σ_nodes |N · n_v − n · q_v| from the class's leaves and their
    ancestors alone — a node it holds none of adds n · q_v, together H · n · Σ q less their part at
    the nodes it holds — divided once as ``_level_l1`` divides. A class the exact form does not take
    there (a count not whole, 2 H n N past ``EXACT_PRODUCTS``, a q not whole) is made dense, a block
    of rows at a time, and given to ``hierarchical_emd``: its float form sums every node's term."""
    codes = _check_level_codes(level_codes)
    q = np.asarray(q, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    checked_entries("P", counts)
    checked_entries("q", q)
    if codes.shape[0] != q.shape[0]:
        raise ValueError(f"level_codes has {codes.shape[0]} leaves but q has {q.shape[0]} values")
    sizes = np.bincount(rows, weights=counts, minlength=classes)  # whole numbers: exact
    _require_rows(sizes, q)
    height = codes.shape[1] - 1
    if height == 0 or not classes:
        return np.zeros(classes)
    total = q.sum()
    exact = np.zeros(classes, dtype=bool)
    if _whole(q):  # _exact_sums' test, a class at a time: its counts whole, its sums within int64
        fractional = np.bincount(rows, weights=counts != np.floor(counts), minlength=classes) > 0
        exact = ~fractional & (2.0 * height * sizes * float(total) < EXACT_PRODUCTS)
    out = np.empty(classes)
    if exact.any():
        held = exact[rows]
        sums = _node_sums_of_cells(rows[held], cols[held], counts[held].astype(np.int64),
                                   np.where(exact, sizes, 0).astype(np.int64), q, codes, int(total))
        out[exact] = sums[exact].astype(np.float64) / (2.0 * height * sizes[exact] * total)  # as _level_l1
    _dense_rows(np.flatnonzero(~exact), rows, cols, counts, q, codes, out)
    return out


def _node_sums_of_cells(rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, sizes: np.ndarray, q: np.ndarray,
                        codes: np.ndarray, total: int) -> np.ndarray:
    """Per class Σ_levels Σ_nodes |N · n_v − n · q_v| in int64 (``_node_sums``' integers), N = ``total``:
    H · n · Σ q, plus at each node holding some of the class's leaves |N · n_v − n · q_v| − n · q_v.
    The cells ordered by class, then by the leaves' order in the tree (each node's leaves together)."""
    height = codes.shape[1] - 1
    table = q.astype(np.int64)
    sums = height * sizes * int(table.sum())
    if not len(rows):
        return sums
    in_tree = np.empty(len(table), dtype=np.int64)
    in_tree[np.lexsort(codes[:, :height].T)] = np.arange(len(table))  # the highest level first
    key = rows * len(table) + in_tree[cols]
    if (key[1:] < key[:-1]).any():
        order = np.argsort(key, kind="stable")
        rows, cols, counts = rows[order], cols[order], counts[order]
    for level in range(height):
        node = codes[cols, level]
        starts = np.flatnonzero(np.r_[True, (rows[1:] != rows[:-1]) | (node[1:] != node[:-1])])
        at_node = _node_totals(codes[:, level], q, table)
        who, n = rows[starts], sizes[rows[starts]]
        table_part = n * at_node[node[starts]]
        terms = np.abs(total * np.add.reduceat(counts, starts) - table_part) - table_part
        first = np.flatnonzero(np.r_[True, who[1:] != who[:-1]])
        sums[who[first]] += np.add.reduceat(terms, first)
    return sums


def _node_totals(nodes: np.ndarray, q: np.ndarray, table: np.ndarray) -> np.ndarray:
    """The table's records under each node (``nodes``: each leaf's), exactly: in float64 while the
    whole table's count is below 2⁵³ (every partial sum whole), else in int64 (``np.add.at``, slower)."""
    if float(q.sum()) < 2**53:
        return np.bincount(nodes, weights=q).astype(np.int64)
    out = np.zeros(int(nodes.max()) + 1, dtype=np.int64)
    np.add.at(out, nodes, table)
    return out


# The classes ``hierarchical_emd_of_cells`` makes dense, at most this many values (8 MB) at a time.
DENSE_ROWS_VALUES = 2**20


def _dense_rows(which: np.ndarray, rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, q: np.ndarray,
                codes: np.ndarray, out: np.ndarray) -> None:
    """``hierarchical_emd`` of the classes ``which`` made dense, ``DENSE_ROWS_VALUES`` at a time, into ``out``."""
    step = max(1, DENSE_ROWS_VALUES // len(q))
    slot = np.full(len(out), -1)
    for first in range(0, len(which), step):
        block = which[first:first + step]
        slot[block] = np.arange(len(block))
        held = slot[rows] >= 0
        dense = np.zeros((len(block), len(q)))
        dense[slot[rows[held]], cols[held]] = counts[held]
        out[block] = hierarchical_emd(dense, q, codes)
        slot[block] = -1


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
            f"unknown distance {name_shown(distance)}; expected one of {', '.join(map(repr, DISTANCES))}"
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
