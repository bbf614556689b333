"""What the search's runners share: a lattice item (a node of one QI subset's lattice), a part
of a level's class histograms, and the histograms of no classes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sqlclose.model.classes import ClassHistograms
from sqlclose.model.lattice import Node

Subset = tuple[int, ...]
Item = tuple[Subset, Node]  # a node of one QI subset's lattice


@dataclass
class LevelPart:
    """The class histograms of the items ``start`` … ``stop`` − 1 of a level (``hist.node``
    counts from ``start``)."""

    start: int
    stop: int
    hist: ClassHistograms


def no_classes(qis: int, domain_sizes: Sequence[int]) -> ClassHistograms:
    """The histograms of no class (a level of no item, a part of no class)."""
    return ClassHistograms(np.zeros((0, qis), dtype=np.int64), np.zeros(0, dtype=np.int64),
                           [np.zeros((0, m)) for m in domain_sizes], np.zeros(0, dtype=np.int64))


def chunks(plan: list[tuple[int, tuple]], budget: int) -> list[list[tuple]]:
    """(rows, plan row) pairs split into batches of at most ``budget`` rows (one pair at least)."""
    out: list[list[tuple]] = []
    current: list[tuple] = []
    used = 0
    for rows, row in plan:
        if current and used + rows > budget:
            out.append(current)
            current, used = [], 0
        current.append(row)
        used += rows
    if current:
        out.append(current)
    return out
