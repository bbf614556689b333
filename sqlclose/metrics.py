"""Utility metrics of a release (Li et al. section 6; Mauger et al. for more later)."""

from __future__ import annotations

import numpy as np


def discernibility(kept_sizes: np.ndarray, suppressed: int, rows: int) -> int:
    """Σ over kept classes of size², plus rows for every suppressed record (Bayardo & Agrawal)."""
    kept = np.asarray(kept_sizes, dtype=np.int64)
    return int(np.dot(kept, kept)) + int(suppressed) * int(rows)


def average_class_size(kept_rows: int, classes: int) -> float:
    """Rows released per equivalence class (LeFevre et al.'s minimal average group size, unnormalized)."""
    return kept_rows / classes if classes else 0.0
