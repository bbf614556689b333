"""Utility metrics of a release (Li et al. section 6; Mauger et al. for more later)."""

from __future__ import annotations

import numpy as np


def discernibility(node: np.ndarray, sizes: np.ndarray, suppressed: np.ndarray, nodes: int,
                   rows: int) -> np.ndarray:
    """Per node of a batch (``node``: each class's node): Σ over its kept classes of size², plus
    rows for every suppressed record (Bayardo & Agrawal, as Li et al. use it). ``suppressed`` is
    a boolean per class; the result is exact int64."""
    kept_squares = np.where(suppressed, 0, sizes).astype(np.int64) ** 2
    if rows < 90_000_000:  # float64 sums of squares are exact below 2**53
        squares = np.bincount(node, weights=kept_squares, minlength=nodes).astype(np.int64)
    else:
        squares = np.zeros(nodes, dtype=np.int64)
        np.add.at(squares, node, kept_squares)
    lost = np.bincount(node, weights=sizes * suppressed, minlength=nodes).astype(np.int64)
    return squares + lost * rows


def average_class_size(kept_rows: int, classes: int) -> float:
    """Rows released per equivalence class (LeFevre et al.'s minimal average group size, unnormalized)."""
    return kept_rows / classes if classes else 0.0
