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
