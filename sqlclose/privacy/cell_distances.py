"""The equal, variational, KL, hierarchical or ordered distance of classes given by their cells.

The release summary's ``t_against_release`` on a large sensitive domain: a class holds a few of
the values, and reading it dense over all of them made 600 classes × 99,520 values a matter of
seconds and of 8 MB runs (docs/performance.md, "Issue 10, fifty-third round: the release summary's
distances from each class's own values"). Each class is read here by its own values, to the bits
of its dense row (each class's figure is a function of its own counts alone: docs/emd.md):

- equal / variational: ½ (Σ_{v in class} |p − q| + 1 − Σ_{v in class} q), summed exactly
  (``l1_closeness_value_of_cells``): the bits of the dense row's exact sum;
- KL: the class's terms p ln(p / q) in column order added left to right
  (``distances.kl_divergence_of_cells``): the dense row's other terms are +0.0, which change no sum;
- hierarchical (Li et al.): the exact integer Σ_levels Σ_nodes |N · n_v − n · q_v| from the class's
  leaves and their ancestors, a node it holds none of adding n · q_v, divided once
  (``emd.hierarchical_emd_of_cells``). Only a class the exact form does not take (2 H n N ≥ 2⁶²,
  a count or a q not whole: never a release's record counts below ~10⁹ rows) is made dense there,
  alone with others like it, and summed in floating point as the dense path sums it;
- ordered: ``emd.ordered_emd_of_cells``, the exact integer sum over the gaps, divided once.

``class_distances`` takes either form of a count matrix: ``sqlclose check`` reads a sensitive
column of more than ``DENSE_ORDERED_VALUES`` values by its cells (``audit/tables.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sqlclose.model.sparse_counts import SparseCounts
from sqlclose.model.text import name_shown
from sqlclose.privacy.distances import distance, kl_divergence_of_cells
from sqlclose.privacy.emd import hierarchical_emd_of_cells, ordered_emd_of_cells
from sqlclose.utility.information_loss import l1_closeness_value_of_cells


def largest_equal_of_cells(classes: SparseCounts, released: np.ndarray) -> float:
    """The largest equal (and variational) distance of ``classes`` from ``released`` (counts per
    value; a value the release lacks has share 0 and adds nothing): half the exactly summed L1
    figure, the bits of the dense rows' exact sums over the values held."""
    rows, cols, counts = _present(classes)
    return l1_closeness_value_of_cells(rows, cols, counts, classes.shape[0], released) / 2


def class_distances(counts: np.ndarray | SparseCounts, released: np.ndarray, name: str,
                    hierarchy: Any = None) -> np.ndarray:
    """Each class's ``name`` distance from ``released``, from its dense row or from its cells (the
    same bits: each class's figure is a function of its own counts alone)."""
    if isinstance(counts, SparseCounts):
        return distances_of_cells(counts, released, name, hierarchy)
    return distance(counts, released, name, hierarchy)


def distances_of_cells(classes: SparseCounts, released: np.ndarray, name: str, hierarchy: Any = None) -> np.ndarray:
    """Each class's distance from ``released``: the bits of ``distances.distance`` on its dense row
    (over every value of ``released``, or only those it holds: a value no class holds adds +0.0 to
    KL's sum and nothing to the others'). Equal and variational are the hierarchical distance over a
    tree of one level (the leaves under the root): ``equal_emd`` is ``_level_l1`` with no groups."""
    rows, cols, counts = _present(classes)
    if name == "kl":
        return kl_divergence_of_cells(rows, cols, counts, classes.shape[0], released)
    if name == "ordered":
        return ordered_emd_of_cells(rows, cols, counts, classes.shape[0], released)
    if name in ("equal", "variational"):
        values = classes.shape[1]
        hierarchy = np.column_stack([np.arange(values), np.zeros(values, dtype=np.int64)])
    elif name != "hierarchical":
        raise ValueError(f"unknown distance {name_shown(name)}")
    return hierarchical_emd_of_cells(rows, cols, counts, classes.shape[0], released,
                                     getattr(hierarchy, "level_codes", hierarchy))


def _present(classes: SparseCounts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nonzero cells, by class and by column within a class (``SparseCounts.from_cells``' order)."""
    rows, cols, counts = classes.held()
    key = rows * classes.shape[1] + cols
    if (key[1:] < key[:-1]).any():  # built otherwise than by from_cells
        order = np.argsort(key, kind="stable")
        rows, cols, counts = rows[order], cols[order], counts[order]
    return rows, cols, counts
