"""Distances of classes given by their cells (``cell_distances.distances_of_cells``) against the
established dense path, ``distances.distance`` on each class's dense row alone: KL and
hierarchical (the release summary's), equal, variational and ordered (``sqlclose check`` on a
large sensitive domain).

The summary's ``t_against_release`` on a large domain reads each class by its cells; it used to
bound each class's float and make the runs near the largest dense again, to get the dense bits.
Now each class's figure is computed from its cells directly. Oracle: the dense path, a row at a
time (a class's own row, nothing beside it), compared with == on random classes of many shapes —
many classes over few values, few over 20,000, classes holding one value, trees of height 0, 1
and 3 with leaves out of tree order, q with zeros, counts large enough for the exact sums' int64
form and past it (the float form, made dense), fractional counts — and hand-worked fractions.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from sqlclose.model.sparse_counts import SparseCounts
from sqlclose.privacy.cell_distances import distances_of_cells
from sqlclose.privacy.distances import distance
from sqlclose.privacy.emd import EXACT_PRODUCTS


def _tree(values: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """Level codes (leaves × (height + 1)) of a random tree whose leaves are listed out of tree order:
    each level groups the one below into random nodes; codes renumbered densely per level."""
    if height == 0:
        return np.zeros((values, 1), dtype=np.int64)  # one leaf, the root (level_codes' rules)
    columns = [np.arange(values)]
    nodes = values
    for _ in range(height - 1):
        parents = max(1, nodes // int(rng.integers(2, 6)))
        parent_of = rng.integers(0, parents, size=nodes)
        columns.append(np.unique(parent_of[columns[-1]], return_inverse=True)[1].reshape(-1))
        nodes = int(columns[-1].max()) + 1
    columns.append(np.zeros(values, dtype=np.int64))
    return np.column_stack(columns)


def _classes(classes: int, values: int, most: int, rng: np.random.Generator, low: int = 1,
             high: int = 10) -> SparseCounts:
    """``classes`` random classes of 1 … ``most`` values each (every fifth holding one value), counts
    ``low`` … ``high`` − 1, built by ``SparseCounts.from_cells`` as the release builds them."""
    held = rng.integers(1, most + 1, size=classes)
    held[::5] = 1
    cols = np.concatenate([rng.choice(values, int(h), replace=False) for h in held])
    rows = np.repeat(np.arange(classes), held)
    return SparseCounts.from_cells(rows * values + cols, rng.integers(low, high, size=len(rows)).astype(np.float64),
                                   (classes, values))


def _dense_one_by_one(cells: SparseCounts, q: np.ndarray, name: str, tree: np.ndarray | None) -> np.ndarray:
    dense = cells.dense()
    return np.array([distance(dense[i:i + 1], q, name, tree)[0] for i in range(len(dense))])


def _same_bits(cells: SparseCounts, q: np.ndarray, name: str, tree: np.ndarray | None = None) -> None:
    got = distances_of_cells(cells, q, name, tree)
    want = _dense_one_by_one(cells, q, name, tree)
    differ = np.flatnonzero(got != want)
    assert not differ.size, [(int(i), float(got[i]), float(want[i])) for i in differ[:5]]


CASES = {  # name: (classes, values, most values a class holds, height)
    "many classes, few values": (3_000, 40, 25, 3),
    "a large sparse domain": (150, 20_000, 300, 3),
    "wide classes": (40, 2_000, 2_000, 3),
    "height 1": (500, 300, 60, 1),
    "one value": (50, 1, 1, 0),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("seed", [1, 2])
def test_hierarchical_from_cells_is_the_dense_rows_bits(case, seed):
    """q the classes' own totals (the release's) and a q independent of them with zeros."""
    classes, values, most, height = CASES[case]
    rng = np.random.default_rng(seed)
    cells = _classes(classes, values, most, rng)
    tree = _tree(values, height, rng)
    _same_bits(cells, np.bincount(cells.cols, weights=cells.values, minlength=values), "hierarchical", tree)
    other = rng.integers(0, 4, size=values).astype(np.float64)
    other[0] = 1.0  # not all zero
    _same_bits(cells, other, "hierarchical", tree)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("seed", [1, 2])
def test_kl_from_cells_is_the_dense_rows_bits(case, seed):
    """q the classes' own totals, over every value and over the values they hold (as the summary
    gives it, ``released[held]``), and a q with zeros beneath some classes' values (+inf)."""
    classes, values, most, _ = CASES[case]
    rng = np.random.default_rng(seed)
    cells = _classes(classes, values, most, rng)
    released = np.bincount(cells.cols, weights=cells.values, minlength=values)
    _same_bits(cells, released, "kl")
    held = released > 0
    renumbered = SparseCounts(cells.rows, (np.cumsum(held) - 1)[cells.cols], cells.values,
                              (classes, int(held.sum())))
    assert np.array_equal(distances_of_cells(renumbered, released[held], "kl"),
                          distances_of_cells(cells, released, "kl"))
    _same_bits(renumbered, released[held], "kl")
    other = rng.integers(0, 3, size=values).astype(np.float64)
    other[0] = 1.0
    _same_bits(cells, other, "kl")
    assert np.isinf(distances_of_cells(cells, other, "kl")).any() or values == 1


@pytest.mark.parametrize("name", ["kl", "hierarchical"])
def test_large_counts_on_both_sides_of_the_exact_forms_bounds(name):
    """Classes whose 2 H n N lies below 2⁵³ (float64 sums), between 2⁵³ and 2⁶² (int64) and past
    2⁶² (the float form: made dense), side by side in one call: a table of ~10⁹ records."""
    rng = np.random.default_rng(7)
    values = 3_000
    tree = _tree(values, 3, rng)
    small = _classes(30, values, 100, rng)
    middle = _classes(30, values, 100, rng, low=10**6, high=10**7)
    huge = _classes(10, values, 100, rng, low=10**10, high=10**11)
    parts = [small, middle, huge]
    offsets = np.cumsum([0] + [p.shape[0] for p in parts])
    cells = SparseCounts.from_cells(np.concatenate([(p.rows + o) * values + p.cols for p, o in zip(parts, offsets)]),
                                    np.concatenate([p.values for p in parts]), (int(offsets[-1]), values))
    table = rng.integers(0, 600_000, size=values).astype(np.float64)
    bounds = 2.0 * 3 * cells.row_sums() * table.sum()
    assert (bounds < 2**53).any() and ((bounds >= 2**53) & (bounds < EXACT_PRODUCTS)).any()
    assert (bounds >= EXACT_PRODUCTS).any()
    _same_bits(cells, table, name, tree)


def test_a_table_past_2_to_the_53_records():
    """A table of 2⁵⁴ records (32 values of 2⁴⁹): the nodes' counts summed in int64, classes of at
    most 36 records within int64's products (2 · 3 · 36 · 2⁵⁴ < 2⁶²), a larger one past them."""
    rng = np.random.default_rng(13)
    values = 200
    cells = _classes(30, values, 4, rng)
    larger = SparseCounts(np.r_[cells.rows, 30, 30], np.r_[cells.cols, 0, 5], np.r_[cells.values, 500.0, 9.0],
                          (31, values))
    table = np.zeros(values)
    table[rng.choice(values, 32, replace=False)] = 2.0**49
    bounds = 2.0 * 3 * larger.row_sums() * table.sum()
    assert (bounds[:30] >= 2**53).all() and (bounds[:30] < EXACT_PRODUCTS).all() and bounds[30] >= EXACT_PRODUCTS
    _same_bits(larger, table, "hierarchical", _tree(values, 3, rng))


@pytest.mark.parametrize("name", ["kl", "hierarchical"])
def test_fractional_counts_are_the_dense_rows_bits(name):
    """Proportions (not whole): KL's sizes added left to right, the hierarchical float form made dense."""
    rng = np.random.default_rng(11)
    cells = _classes(200, 500, 40, rng)
    cells = SparseCounts(cells.rows, cells.cols, cells.values / 7.0, cells.shape)
    released = np.bincount(cells.cols, weights=cells.values, minlength=500)
    _same_bits(cells, released, name, _tree(500, 3, rng))


@pytest.mark.parametrize("name", ["equal", "variational", "ordered"])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("seed", [1, 2])
def test_equal_variational_and_ordered_from_cells_are_the_dense_rows_bits(name, case, seed):
    """q the classes' own totals, and a q independent of them with zeros (record counts: the
    ordered form takes whole numbers only, as a table's counts are)."""
    classes, values, most, _ = CASES[case]
    rng = np.random.default_rng(seed)
    cells = _classes(classes, values, most, rng)
    _same_bits(cells, np.bincount(cells.cols, weights=cells.values, minlength=values), name)
    other = rng.integers(0, 4, size=values).astype(np.float64)
    other[0] = 1.0
    _same_bits(cells, other, name)


# Four leaves, A = {0, 1}, B = {2, 3}, under the root (H = 2); the table q = 3, 1, 2, 2 (N = 8).
HAND_TREE = np.array([[0, 0, 0], [1, 0, 0], [2, 1, 0], [3, 1, 0]])
HAND_Q = np.array([3.0, 1.0, 2.0, 2.0])


def test_by_hand():
    """A class of counts 2, 0, 0, 1 (n = 3). Hierarchical: Σ_levels Σ_nodes |N·c − n·q| — leaves
    |16 − 9| + |0 − 3| + |0 − 6| + |8 − 6| = 18, nodes A |16 − 12| + B |8 − 12| = 8 — over 2·H·n·N
    = 96: 26/96 = 13/48, rounded once. KL: ⅔ ln((2/3)/(3/8)) + ⅓ ln((1/3)/(2/8)) = ⅔ ln(16/9) + ⅓ ln(4/3).
    A class holding leaf 1 alone (n = 1): leaves 3 + |8 − 1| + 2 + 2 = 14, nodes |8 − 4| + 4 = 8:
    22/32 = 11/16; its KL ln(1 / (1/8)) = ln 8."""
    cells = SparseCounts(np.array([0, 0, 1]), np.array([0, 3, 1]), np.array([2.0, 1.0, 1.0]), (2, 4))
    hierarchical = distances_of_cells(cells, HAND_Q, "hierarchical", HAND_TREE)
    assert hierarchical[0] == float(Fraction(13, 48)) and hierarchical[1] == float(Fraction(11, 16))
    kl = distances_of_cells(cells, HAND_Q, "kl")
    assert kl[0] == pytest.approx(2 / 3 * math.log(16 / 9) + 1 / 3 * math.log(4 / 3), rel=1e-15)
    assert kl[1] == pytest.approx(math.log(8), rel=1e-15)


def test_equal_and_ordered_by_hand():
    """The class of counts 2, 0, 0, 1 (n = 3) against q = 3, 1, 2, 2 (N = 8). Equal: ½ Σ |p − q| =
    ½ (|2/3 − 3/8| + 1/8 + 2/8 + |1/3 − 2/8|) = ½ (7 + 3 + 6 + 2) / 24 = 3/8. Ordered: the cumulative
    differences over the three gaps, 2/3 − 3/8 = 7/24, 2/3 − 4/8 = 4/24, 2/3 − 6/8 = −2/24, summed
    absolutely 13/24 over m − 1 = 3: 13/72."""
    cells = SparseCounts(np.array([0, 0]), np.array([0, 3]), np.array([2.0, 1.0]), (1, 4))
    assert distances_of_cells(cells, HAND_Q, "equal")[0] == float(Fraction(3, 8))
    assert distances_of_cells(cells, HAND_Q, "variational")[0] == float(Fraction(3, 8))
    assert distances_of_cells(cells, HAND_Q, "ordered")[0] == float(Fraction(13, 72))


def test_no_dense_rows_for_record_counts(monkeypatch):
    """Record counts within int64's products: no class made dense (``SparseCounts.dense`` and the
    dense hierarchical path never called)."""
    from sqlclose.privacy import emd as emd_module
    monkeypatch.setattr(SparseCounts, "dense", lambda self: pytest.fail("made dense"))
    monkeypatch.setattr(emd_module, "hierarchical_emd", lambda *a: pytest.fail("made dense"))
    rng = np.random.default_rng(3)
    cells = _classes(400, 50_000, 40, rng)
    released = np.bincount(cells.cols, weights=cells.values, minlength=50_000)
    assert np.isfinite(distances_of_cells(cells, released, "hierarchical", _tree(50_000, 3, rng))).all()
    assert np.isfinite(distances_of_cells(cells, released, "kl")).all()
