"""The largest equal, variational, KL or hierarchical distance of classes given by their cells.

The release summary's ``t_against_release`` on a large sensitive domain: a class holds a few of
the values, and reading it dense over all of them made 600 classes × 99,520 values a matter of
seconds and of 8 MB runs (docs/performance.md, "Issue 10, fifty-third round: the release summary's
distances from each class's own values"). Each class is read here by its own values:

- equal / variational: ½ (Σ_{v in class} |p − q| + 1 − Σ_{v in class} q), summed exactly
  (``l1_closeness_value_of_cells``): the bits of the dense row's exact sum;
- KL: Σ over the class's values of p ln(p / q), the others adding 0;
- hierarchical (Li et al.): the mean over levels 0 … H − 1 of Σ_nodes |extra| / 2, a node none of
  the class's leaves is under adding its q: only the class's leaves and their ancestors are read.

The dense form is the figure: the hierarchical distance the exact rational of the class's counts
rounded once, KL its terms added left to right (``emd._level_l1``, ``distances.kl_divergence``),
each a function of the class alone. The float sums here come near it, not to its bits, so each
class's value is found from its cells with a bound on how far the dense figure can lie from it
(``near_classes``), and only the runs holding a class that may be the largest are made dense
(release.py): the same float, from a run or two.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sqlclose.model.sparse_counts import SparseCounts
from sqlclose.utility.information_loss import l1_closeness_value_of_cells

_ULP = 2.0**-52


def largest_equal_of_cells(classes: SparseCounts, released: np.ndarray) -> float:
    """The largest equal (and variational) distance of ``classes`` from ``released`` (counts per
    value; a value the release lacks has share 0 and adds nothing): half the exactly summed L1
    figure, the bits of the dense rows' exact sums over the values held."""
    rows, cols, counts = _present(classes)
    return l1_closeness_value_of_cells(rows, cols, counts, classes.shape[0], released) / 2


def near_classes(classes: SparseCounts, released: np.ndarray, name: str, hierarchy: Any = None) -> np.ndarray:
    """The indices of ``classes`` whose KL or hierarchical distance from ``released``, as a dense
    row's floating-point sum gives it, may be the largest: each class's value from its cells,
    within its bound of the dense figure, reaching the least the largest one can be."""
    rows, cols, counts = _present(classes)
    if name == "kl":
        rough, slack = _kl_rough(rows, cols, counts, classes.shape[0], released)
    else:
        rough, slack = _hierarchical_rough(rows, cols, counts, classes.shape[0], released,
                                           np.asarray(getattr(hierarchy, "level_codes", hierarchy)))
    if not slack.any():  # exact (a hierarchy of height 0: every distance 0): one class tells
        return np.array([int(np.argmax(rough))])
    return np.flatnonzero(rough + slack >= (rough - slack).max())


def _present(classes: SparseCounts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cells = classes.values > 0
    return classes.rows[cells], classes.cols[cells], classes.values[cells]


def _kl_rough(rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, classes: int,
              released: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per class Σ p ln(p / q) over its cells, and a bound on its distance from the dense row's
    floating-point sum: each term within a few ulps, and a sum of m terms (m the values held, at
    most the release's) in any grouping errs by at most m ulps of Σ |terms|."""
    sizes = np.bincount(rows, weights=counts, minlength=classes)
    p = counts / sizes[rows]
    q = released / released.sum()
    terms = p * (np.log(p) - np.log(q[cols]))
    rough = np.bincount(rows, weights=terms, minlength=classes)
    return rough, 4 * (len(released) + 8) * _ULP * np.bincount(rows, weights=np.abs(terms), minlength=classes)


def _hierarchical_rough(rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, classes: int,
                        released: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per class the hierarchical EMD from its leaves and their ancestors, and a bound on its
    distance from the dense form's: at each level Σ |p − q| + Σ q ≤ 2, and every float there is
    a sum of at most m terms (m the leaves), so each form lies within (m + H) ulps of 2 per level."""
    height = codes.shape[1] - 1
    leaves = codes.shape[0]
    if height == 0:
        return np.zeros(classes), np.zeros(classes)
    sizes = np.bincount(rows, weights=counts, minlength=classes)
    p = counts / sizes[rows]
    q = released / released.sum()
    levels = np.zeros(classes)
    for level in range(height):
        levels += _level_sum(rows, codes[cols, level], p, np.bincount(codes[:, level], weights=q), classes)
    slack = np.full(classes, 16 * (leaves + height + 8) * _ULP)
    return levels / (2 * height), slack


def _level_sum(rows: np.ndarray, nodes: np.ndarray, p: np.ndarray, q_of_node: np.ndarray, classes: int) -> np.ndarray:
    """Per class Σ over a level's nodes of |p(node) − q(node)|: the nodes it holds none of add q(node),
    so it is Σ over its own nodes of (|p − q| − q), plus Σ q."""
    width = len(q_of_node)
    keys, where = np.unique(rows * width + nodes, return_inverse=True)
    p_of_node = np.bincount(where.reshape(-1), weights=p)
    own_q = q_of_node[keys % width]
    own = np.bincount(keys // width, weights=np.abs(p_of_node - own_q) - own_q, minlength=classes)
    return own + q_of_node.sum()
