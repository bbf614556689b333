"""Hash grouping of integer keys, as ``pandas.factorize`` gives it, without importing pandas
for small inputs (the import is ~0.3 s of a cold run; docs/performance.md "Cold start")."""

from __future__ import annotations

import sys

import numpy as np

# Above this many keys pandas' hash table beats numpy's sort by more than pandas' import costs.
PANDAS_FROM = 1_000_000


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques) of a 1-D integer array: uniques in order of first appearance,
    ``uniques[codes] == values`` — the result of ``pandas.factorize``."""
    if len(values) >= PANDAS_FROM or "pandas" in sys.modules:
        import pandas as pd

        return pd.factorize(values)
    return _by_sort(values)


def _by_sort(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique sorts; renumbering the sorted uniques by their first position gives pandas' order."""
    sorted_uniques, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order), dtype=np.intp)
    return rank[inverse.reshape(-1)], sorted_uniques[order]
