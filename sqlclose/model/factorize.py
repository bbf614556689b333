"""Grouping integer keys without the imports a cold run cannot afford (docs/performance.md
"Cold start"): ``factorize`` as ``pandas.factorize`` gives it, without pandas for small inputs
(~0.3 s to import); ``sorted_unique`` as ``np.unique`` gives it, without ``numpy.ma`` (which
``np.unique`` imports on its first plain call, to ask whether the array is masked)."""

from __future__ import annotations

import sys

import numpy as np

# Above this many keys — in one call, or sorted so far in this process — pandas' hash table beats
# numpy's sort by more than pandas' import costs (a search over many lattice levels calls this
# hundreds of times: measured on Adult at 5 % suppression, entropy l 1.33 s by sort, 0.95 s by hash).
PANDAS_FROM = 1_000_000
_sorted_so_far = 0


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques) of a 1-D integer array: uniques in order of first appearance,
    ``uniques[codes] == values`` — the result of ``pandas.factorize``."""
    global _sorted_so_far
    if len(values) >= PANDAS_FROM or _sorted_so_far >= PANDAS_FROM or "pandas" in sys.modules:
        import pandas as pd

        return pd.factorize(values)
    _sorted_so_far += len(values)
    return _by_sort(values)


def _by_sort(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique sorts; renumbering the sorted uniques by their first position gives pandas' order."""
    sorted_uniques, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order), dtype=np.intp)
    return rank[inverse.reshape(-1)], sorted_uniques[order]


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` for an integer (or bool) array: its distinct values, sorted, flattened."""
    ordered = np.sort(values, axis=None)
    if ordered.size == 0:
        return ordered
    keep = np.empty(ordered.size, dtype=np.bool_)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
