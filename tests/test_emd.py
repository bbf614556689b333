"""Tests for sqlclose.emd against an independent oracle: the transport LP.

The oracle solves min sum d_ij f_ij s.t. f >= 0, sum_j f_ij = p_i, sum_i f_ij = q_j with
scipy's HiGHS over an explicit ground-distance matrix built here from first principles
(|i-j|/(m-1); 1 off the diagonal; LCA level / H from explicit root-to-leaf label paths).
Expected values never come from the code under test.
"""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.optimize import linprog

from sqlclose.privacy.emd import (
    EMD_TOLERANCE,
    emd,
    equal_emd,
    hierarchical_emd,
    ordered_emd,
)

SEED = 20071
TOL = 1e-9


# ---------------------------------------------------------------------------- the oracle


def lp_emd(p, q, ground: np.ndarray) -> float:
    """Transport LP between the normalised p and q over the ground-distance matrix."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    p, q = p / p.sum(), q / q.sum()
    m = p.size
    # f is row-major: f[i, j] = flow from p_i to q_j.
    rows = np.kron(np.eye(m), np.ones((1, m)))  # sum_j f_ij = p_i
    cols = np.kron(np.ones((1, m)), np.eye(m))  # sum_i f_ij = q_j
    res = linprog(
        ground.ravel(),
        A_eq=np.vstack([rows, cols]),
        b_eq=np.concatenate([p, q]),
        bounds=(0, None),
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    assert res.status == 0, res.message
    return float(res.fun)


def ordered_ground(m: int) -> np.ndarray:
    if m == 1:
        return np.zeros((1, 1))
    i = np.arange(m)
    return np.abs(i[:, None] - i[None, :]) / (m - 1)


def equal_ground(m: int) -> np.ndarray:
    return 1.0 - np.eye(m)


def tree_ground(paths: list[tuple]) -> np.ndarray:
    """paths[i] = labels from the level below the root down to leaf i (length H).

    Two leaves meet at the level H - (length of their common path prefix).
    """
    m = len(paths)
    H = len(paths[0])
    ground = np.zeros((m, m))
    for a in range(m):
        for b in range(m):
            common = 0
            while common < H and paths[a][common] == paths[b][common]:
                common += 1
            ground[a, b] = (H - common) / H if H else 0.0
    return ground


def codes_from_paths(paths: list[tuple]) -> np.ndarray:
    """level_codes (m x (H+1)): column l = dense code of the ancestor at level l (prefix H-l)."""
    m, H = len(paths), len(paths[0])
    codes = np.zeros((m, H + 1), dtype=np.int64)
    for level in range(H + 1):
        seen: dict[tuple, int] = {}
        for i, path in enumerate(paths):
            codes[i, level] = seen.setdefault(tuple(path[: H - level]), len(seen))
    return codes


# ---------------------------------------------------------------------- random inputs


def random_tree(rng: np.random.Generator, max_leaves: int = 15) -> list[tuple]:
    """Random tree with all leaves at depth H (1..4) and random fan-outs; leaves shuffled."""
    while True:
        H = int(rng.integers(1, 5))
        paths: list[tuple] = [()]
        for _ in range(H):
            paths = [p + (c,) for p in paths for c in range(int(rng.integers(1, 5)))]
            if len(paths) > max_leaves:
                break
        if len(paths) <= max_leaves:
            order = rng.permutation(len(paths))
            return [paths[i] for i in order]


def random_histograms(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """n non-empty count rows over m values: sparse counts, dense counts and one-hot rows."""
    rows = []
    for _ in range(n):
        kind = rng.integers(3)
        if kind == 0:
            row = np.zeros(m, dtype=np.int64)
            row[rng.integers(m)] = rng.integers(1, 50)
        elif kind == 1:
            row = rng.integers(0, 4, size=m) * (rng.random(m) < 0.5)
        else:
            row = rng.integers(0, 1000, size=m)
        if row.sum() == 0:
            row[rng.integers(m)] = 1
        rows.append(row)
    return np.array(rows)


def check_against_lp(P: np.ndarray, q: np.ndarray, got: np.ndarray, ground: np.ndarray):
    assert isinstance(got, np.ndarray) and got.shape == (P.shape[0],)
    assert got.dtype == np.float64
    for row, value in zip(P, got):
        assert value == pytest.approx(lp_emd(row, q, ground), abs=TOL)


# ----------------------------------------------------------------- random vs the LP


@pytest.mark.parametrize("distance", ["ordered", "equal"])
def test_random_flat_distances_match_lp(distance):
    rng = np.random.default_rng([SEED, len(distance)])
    for _ in range(120):
        m = int(rng.integers(1, 16))
        P = random_histograms(rng, int(rng.integers(1, 6)), m)
        q = random_histograms(rng, 1, m)[0]
        ground = ordered_ground(m) if distance == "ordered" else equal_ground(m)
        got = emd(P, q, distance)
        check_against_lp(P, q, got, ground)
        direct = ordered_emd(P, q) if distance == "ordered" else equal_emd(P, q)
        np.testing.assert_array_equal(direct, got)
        single = emd(P[0], q, distance)
        assert isinstance(single, float) and single == pytest.approx(got[0], abs=1e-15)


def test_random_hierarchies_match_lp():
    rng = np.random.default_rng(SEED)
    for _ in range(150):
        paths = random_tree(rng)
        codes = codes_from_paths(paths)
        m = len(paths)
        P = random_histograms(rng, int(rng.integers(1, 6)), m)
        q = random_histograms(rng, 1, m)[0]
        got = emd(P, q, "hierarchical", codes)
        check_against_lp(P, q, got, tree_ground(paths))
        np.testing.assert_array_equal(hierarchical_emd(P, q, codes), got)
        via_attr = emd(P, q, "hierarchical", SimpleNamespace(level_codes=codes))
        np.testing.assert_array_equal(via_attr, got)


def test_hierarchies_in_tree_order_match_lp():
    # Leaves listed parent by parent, as hierarchy files list them: grouped without a copy.
    rng = np.random.default_rng([SEED, 2])
    for _ in range(100):
        paths = sorted(random_tree(rng))
        codes = codes_from_paths(paths)
        P = random_histograms(rng, int(rng.integers(1, 6)), len(paths))
        q = random_histograms(rng, 1, len(paths))[0]
        check_against_lp(P, q, hierarchical_emd(P, q, codes), tree_ground(paths))


def test_leaves_the_table_does_not_hold_are_left_out_at_the_whole_trees_height():
    """A sensitive column's domain is the leaves of its hierarchy the table holds (a 2,000-row table
    of 10 values with a 100 k-leaf hierarchy made every class a row of 100 k counts): the hierarchical
    EMD over those leaves alone (``SensitiveAttribute.tree``: their level codes, renumbered, the
    whole tree's height kept) against the transport LP over every leaf of the tree, the left-out ones
    at mass 0 in p and q."""
    from sqlclose.model.attributes import SensitiveAttribute
    from sqlclose.model.hierarchy import Hierarchy

    rng = np.random.default_rng([SEED, 9])
    checked = 0
    for _ in range(80):
        paths = random_tree(rng)
        height = len(paths[0])
        rows = tuple((f"v{i}", *(f"n{path[:height - level]}" for level in range(1, height)), "*")
                     for i, path in enumerate(paths))
        hierarchy = Hierarchy(rows)
        held = rng.random(len(paths)) < 0.5  # per leaf v{i}, in paths' order
        held[rng.integers(len(paths))] = True
        domain = [leaf for leaf in hierarchy.leaves if held[int(leaf[1:])]]
        P = random_histograms(rng, int(rng.integers(1, 5)), len(paths)) * held
        q = random_histograms(rng, 1, len(paths))[0] * held
        P[:, np.flatnonzero(held)[0]] += 1  # no empty distribution
        q[np.flatnonzero(held)[0]] += 1
        tree = SensitiveAttribute("s", None, domain, hierarchy).tree
        assert tree.shape == (len(domain), height + 1)
        on_domain = [int(leaf[1:]) for leaf in domain]  # the domain's leaves in paths' order
        got = emd(P[:, on_domain], q[on_domain], "hierarchical", tree)
        check_against_lp(P, q, got, tree_ground(paths))
        checked += len(domain) < len(paths)
    assert checked > 40


@pytest.mark.parametrize("distance", ["ordered", "equal", "hierarchical", "hierarchical, shuffled leaves"])
def test_a_class_distance_does_not_depend_on_the_classes_beside_it(distance):
    # The same bits for a class whether it is computed alone, in runs of 7, or among 3,000 classes:
    # a run of classes, a batch of nodes or a memory limit must not change a reported value. (A
    # matrix-vector product changed the last bits of about half the rows with the batch's shape.)
    rng = np.random.default_rng([SEED, 3])
    paths = [(a, b) for a in range(3) for b in range(5)][:14]
    if distance.endswith("shuffled leaves"):
        paths = [paths[i] for i in rng.permutation(len(paths))]
    codes = codes_from_paths(paths)
    P = random_histograms(rng, 3000, len(paths)).astype(np.float64)
    q = random_histograms(rng, 1, len(paths))[0]
    name = distance.split(",")[0]
    whole = emd(P, q, name, codes if name == "hierarchical" else None)
    runs = np.concatenate([emd(P[a:a + 7], q, name, codes if name == "hierarchical" else None)
                           for a in range(0, len(P), 7)])
    alone = np.array([emd(P[i:i + 1], q, name, codes if name == "hierarchical" else None)[0] for i in range(200)])
    np.testing.assert_array_equal(runs, whole)
    np.testing.assert_array_equal(alone, whole[:200])


def test_proportions_and_counts_agree():
    rng = np.random.default_rng(SEED + 1)
    P = random_histograms(rng, 50, 9)
    q = random_histograms(rng, 1, 9)[0]
    props = P / P.sum(axis=1, keepdims=True)
    for distance in ("ordered", "equal"):
        np.testing.assert_allclose(emd(P, q, distance), emd(props, q / q.sum(), distance),
                                   atol=1e-15)


def test_single_value_domain_and_single_leaf():
    assert emd([5], [3], "ordered") == 0.0
    assert emd([5], [3], "equal") == 0.0
    assert emd([5], [3], "hierarchical", np.zeros((1, 1), dtype=int)) == 0.0  # H = 0
    assert emd([5], [3], "hierarchical", np.zeros((1, 3), dtype=int)) == 0.0  # chain, H = 2


def test_inputs_are_not_modified():
    P = np.array([[3.0, 0.0, 1.0, 4.0], [1.0, 1.0, 1.0, 1.0]])
    q = np.array([1.0, 2.0, 3.0, 4.0])
    codes = codes_from_paths([(0, 0), (0, 1), (1, 2), (1, 3)])
    P0, q0, codes0 = P.copy(), q.copy(), codes.copy()
    for distance in ("ordered", "equal", "hierarchical"):
        emd(P, q, distance, codes)
        emd(P[0], q, distance, codes)
    np.testing.assert_array_equal(P, P0)
    np.testing.assert_array_equal(q, q0)
    np.testing.assert_array_equal(codes, codes0)


def test_empty_matrix_gives_empty_result():
    out = emd(np.zeros((0, 4)), [1, 2, 3, 4], "ordered")
    assert out.shape == (0,)


# ------------------------------------------------------- the paper's examples (Li et al.)

SALARIES = [3, 4, 5, 6, 7, 8, 9, 10, 11]  # K, the ordered domain v1..v9

RESP, DIGEST = "Respiratory system diseases", "Digestive system diseases"
INFECTION, VASCULAR = "Respiratory infection", "Vascular lung diseases"
STOMACH, COLON = "Stomach diseases", "Colon diseases"
# Figure 1, height 3: each leaf's path below the root "Respiratory&digestive system diseases".
DISEASE_PATHS = {
    "flu": (RESP, INFECTION, "flu"),
    "pneumonia": (RESP, INFECTION, "pneumonia"),
    "bronchitis": (RESP, INFECTION, "bronchitis"),
    "pulmonary edema": (RESP, VASCULAR, "pulmonary edema"),
    "pulmonary embolism": (RESP, VASCULAR, "pulmonary embolism"),
    "gastric ulcer": (DIGEST, STOMACH, "gastric ulcer"),
    "gastritis": (DIGEST, STOMACH, "gastritis"),
    "stomach cancer": (DIGEST, STOMACH, "stomach cancer"),
    "colitis": (DIGEST, COLON, "colitis"),
    "colon cancer": (DIGEST, COLON, "colon cancer"),
}
DISEASES = list(DISEASE_PATHS)
DISEASE_CODES = codes_from_paths([DISEASE_PATHS[d] for d in DISEASES])
DISEASE_GROUND = tree_ground([DISEASE_PATHS[d] for d in DISEASES])

# Table 3: record id -> (salary K, disease)
TABLE3 = {
    1: (3, "gastric ulcer"),
    2: (4, "gastritis"),
    3: (5, "stomach cancer"),
    4: (6, "gastritis"),
    5: (11, "flu"),
    6: (8, "bronchitis"),
    7: (7, "bronchitis"),
    8: (9, "pneumonia"),
    9: (10, "stomach cancer"),
}


def salary_hist(values) -> np.ndarray:
    return np.array([sum(v == s for v in values) for s in SALARIES])


def disease_hist(values) -> np.ndarray:
    return np.array([sum(v == d for v in values) for d in DISEASES])


Q_SALARY = salary_hist([s for s, _ in TABLE3.values()])
Q_DISEASE = disease_hist([d for _, d in TABLE3.values()])


def assert_exact(value: float, expected: Fraction):
    assert value == pytest.approx(float(expected), abs=1e-12)


def test_paper_salary_examples():
    for klass, expected in (([3, 4, 5], Fraction(3, 8)), ([6, 8, 11], Fraction(1, 6))):
        p = salary_hist(klass)
        got = emd(p, Q_SALARY, "ordered")
        assert_exact(got, expected)
        assert_exact(lp_emd(p, Q_SALARY, ordered_ground(9)), expected)


def test_paper_ground_distances():
    # One-hot distributions: the LP cost is exactly the ground distance between the two leaves.
    for a, b, expected in (
        ("flu", "bronchitis", Fraction(1, 3)),
        ("flu", "pulmonary embolism", Fraction(2, 3)),
        ("flu", "stomach cancer", Fraction(1)),
        ("flu", "flu", Fraction(0)),
    ):
        p, q = disease_hist([a]), disease_hist([b])
        assert_exact(emd(p, q, "hierarchical", DISEASE_CODES), expected)
        assert_exact(lp_emd(p, q, DISEASE_GROUND), expected)


@pytest.mark.parametrize(
    ("klass", "expected"),
    [
        # Erratum: the paper prints 0.5 and 0.278; the formula and the LP agree on these.
        (["gastric ulcer", "gastritis", "stomach cancer"], Fraction(4, 9)),
        (["gastric ulcer", "stomach cancer", "pneumonia"], Fraction(7, 27)),
    ],
)
def test_paper_disease_examples_erratum(klass, expected):
    p = disease_hist(klass)
    assert_exact(emd(p, Q_DISEASE, "hierarchical", DISEASE_CODES), expected)
    assert_exact(lp_emd(p, Q_DISEASE, DISEASE_GROUND), expected)


def test_paper_table5():
    classes = [(1, 3, 8), (4, 5, 6), (2, 7, 9)]
    P_disease = np.array([disease_hist([TABLE3[r][1] for r in c]) for c in classes])
    P_salary = np.array([salary_hist([TABLE3[r][0] for r in c]) for c in classes])

    disease = emd(P_disease, Q_DISEASE, "hierarchical", DISEASE_CODES)
    lp_disease = [lp_emd(p, Q_DISEASE, DISEASE_GROUND) for p in P_disease]
    np.testing.assert_allclose(disease, lp_disease, atol=TOL)
    assert_exact(disease.max(), Fraction(8, 27))  # the paper prints 0.278
    assert_exact(max(lp_disease), Fraction(8, 27))

    salary = emd(P_salary, Q_SALARY, "ordered")
    lp_salary = [lp_emd(p, Q_SALARY, ordered_ground(9)) for p in P_salary]
    np.testing.assert_allclose(salary, lp_salary, atol=TOL)
    assert_exact(salary.max(), Fraction(1, 6))
    assert_exact(max(lp_salary), Fraction(1, 6))


def test_tolerance_constant():
    assert EMD_TOLERANCE == 1e-12
    # Rounded proportions land within the tolerance of the exact value, never beyond it.
    p = salary_hist([6, 8, 11])
    assert abs(emd(p, Q_SALARY, "ordered") - 1 / 6) <= EMD_TOLERANCE


# ---------------------------------------------------------------- overflow guard


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_large_counts_do_not_overflow(dtype):
    # Values near 2**31: their sums (about 3e9 per row) do not fit in 32 bits.
    big = 2**31 - 1
    if dtype == np.int32:
        P = np.array([[big, big - 7, 0, 5, 1000, 0, 3, big // 2, 11, 0]], dtype=dtype)
    else:
        P = np.array([[big, 712_515_144, 0, 5, 140_000_000, 0, 3, 1, 11, 1_189]], dtype=dtype)
        assert P.sum() == 3_000_000_000
    q = np.array([big, 1, big - 1, 2, 3, big // 3, 7, 9, 0, big - 100], dtype=dtype)
    Pf = np.asarray(P, dtype=np.float64)
    qf = np.asarray(q, dtype=np.float64)
    props, qprops = Pf / Pf.sum(axis=1, keepdims=True), qf / qf.sum()
    for distance, ground in (
        ("ordered", ordered_ground(10)),
        ("equal", equal_ground(10)),
        ("hierarchical", DISEASE_GROUND),
    ):
        got = emd(P, q, distance, DISEASE_CODES)
        np.testing.assert_allclose(got, emd(props, qprops, distance, DISEASE_CODES),
                                   rtol=1e-12, atol=1e-15)
        assert 0.0 <= got[0] <= 1.0
        assert got[0] == pytest.approx(lp_emd(props[0], qprops, ground), abs=TOL)


# ---------------------------------------------------------------- input validation


@pytest.mark.parametrize(
    ("p", "q", "match"),
    [
        ([1, -1, 2], [1, 1, 1], "negative"),
        ([1, 1, 1], [1, -2, 1], "negative"),
        ([1, 2], [1, 1, 1], "shape mismatch"),
        ([[1, 2, 3], [0, 0, 0]], [1, 1, 1], "row 1"),
        ([1, 2, 3], [0, 0, 0], "q sums to 0"),
        ([1, np.nan, 3], [1, 1, 1], "NaN"),
        ([1, 2, 3], [1, np.nan, 1], "NaN"),
        ([1, np.inf, 3], [1, 1, 1], "infinite"),
        ([1, 2, 3], [[1, 1, 1]], "1-D"),
        ([[[1, 2, 3]]], [1, 1, 1], "1-D or 2-D"),
        ([], [], "empty"),
    ],
)
def test_invalid_distributions(p, q, match):
    for distance in ("ordered", "equal"):
        with pytest.raises(ValueError, match=match):
            emd(p, q, distance)


def test_unknown_distance_lists_valid_names():
    with pytest.raises(ValueError, match="'ordered', 'equal', 'hierarchical'"):
        emd([1, 2], [2, 1], "euclidean")


def test_hierarchical_without_hierarchy():
    with pytest.raises(ValueError, match="hierarchy"):
        emd([1, 2], [2, 1], "hierarchical")


@pytest.mark.parametrize(
    ("codes", "match"),
    [
        ([[0, 0], [0, 0]], "column 0"),
        ([[1, 0], [0, 0]], "column 0"),
        ([[0, 0], [1, 1]], "root"),
        ([[0, 0, 0], [1, 0, 0], [2, 2, 0]], "dense"),
        ([[0, 0, 0], [1, 1, 0]], "3 values"),
        ([[0, 0.0], [1, 0]], "integers"),
        ([0, 1], "2-D"),
    ],
)
def test_invalid_level_codes(codes, match):
    q = [1, 1, 1]
    with pytest.raises(ValueError, match=match):
        emd([1, 2, 3], q, "hierarchical", np.array(codes))


def test_level_codes_child_with_two_parents():
    # Leaves 0 and 1 share level-1 node 0, but give it different parents at level 2.
    codes = np.array([[0, 0, 0, 0], [1, 0, 1, 0], [2, 1, 1, 0]])
    with pytest.raises(ValueError, match="more than one parent"):
        emd([1, 2, 3], [1, 1, 1], "hierarchical", codes)


@pytest.mark.parametrize("name", ["ordered", "equal", "variational", "kl"])
@pytest.mark.parametrize("bad, message", [(np.nan, "NaN"), (np.inf, "infinite"), (-1.0, "negative")])
def test_every_distance_refuses_the_same_bad_counts(name, bad, message):
    """One validator for every distance (EMD or not): NaN, infinity and negatives are refused alike."""
    from sqlclose.privacy.distances import distance

    with pytest.raises(ValueError, match=message):
        distance(np.array([[1.0, bad, 2.0]]), np.array([1.0, 1.0, 1.0]), name)
    with pytest.raises(ValueError, match=message):
        distance(np.array([[1.0, 1.0, 2.0]]), np.array([1.0, bad, 1.0]), name)


@pytest.mark.parametrize("distance", ["equal", "ordered", "hierarchical"])
def test_emd_leaves_the_callers_histograms_as_they_were(distance):
    """EMD reads a level's class matrix without copying it; it must never write into it."""
    rng = np.random.default_rng(3)
    P = rng.integers(0, 9, size=(50, 4)).astype(np.float64)
    P[:, 0] += 1  # no empty row
    before = P.copy()
    codes = np.array([[0, 0, 0], [1, 0, 0], [2, 1, 0], [3, 1, 0]])
    emd(P, np.array([3.0, 1.0, 2.0, 4.0]), distance, codes if distance == "hierarchical" else None)
    assert np.array_equal(P, before)


# ------------------------------------------- the ordered EMD from a class's values alone


def fraction_ordered_emd(row, q) -> Fraction:
    """The ordered EMD in exact rationals, from the definition: Σ over the m − 1 gaps of
    |(class share at or below) − (table share at or below)| / (m − 1)."""
    n, total, m = int(sum(row)), int(sum(q)), len(q)
    if m == 1:
        return Fraction(0)
    gap_sum, below_p, below_q = Fraction(0), 0, 0
    for i in range(m - 1):
        below_p += int(row[i])
        below_q += int(q[i])
        gap_sum += abs(Fraction(below_p, n) - Fraction(below_q, total))
    return gap_sum / (m - 1)


def edge_case_histograms(rng: np.random.Generator, m: int) -> np.ndarray:
    """Classes holding one value (the first, the last, one inside), every value, equal counts
    (ties), and random sparse rows."""
    rows = [np.eye(m, dtype=np.int64)[0] * 3, np.eye(m, dtype=np.int64)[m - 1], np.eye(m, dtype=np.int64)[m // 2] * 7,
            np.ones(m, dtype=np.int64), np.full(m, 5, dtype=np.int64)]
    rows += list(random_histograms(rng, 12, m))
    return np.array(rows)


@pytest.mark.parametrize("m", [1, 2, 3, 7, 40])
def test_ordered_emd_is_the_exact_rational_rounded_once(m, monkeypatch):
    """Record counts' ordered EMD is summed in integers (Σ |N · C_p − n · C_q| / (n N (m − 1))),
    dense or from each class's cells (``ordered_emd_of_cells``, the path past
    ``DENSE_ORDERED_VALUES`` values, forced here): both are the exact rational EMD rounded once to
    float64, bit for bit, and within the LP's tolerance of the transport LP. The dense float form
    (the old one) differed in its last bits, and a class's value must not depend on which path a
    table's size chose: the search judges with one and the report's largest EMD with the other."""
    from sqlclose.privacy import emd as emd_module

    rng = np.random.default_rng([SEED, 53, m])
    for _ in range(6):
        q = rng.integers(1, 30, size=m)
        if m > 2:
            q[rng.integers(m)] = q[0]  # ties in the table's counts too
        P = edge_case_histograms(rng, m)
        exact = np.array([float(fraction_ordered_emd(row, q)) for row in P])
        dense = ordered_emd(P, q)
        rows, cols = np.nonzero(P)
        cells = emd_module.ordered_emd_of_cells(rows, cols, P[rows, cols], len(P), q)
        monkeypatch.setattr(emd_module, "DENSE_ORDERED_VALUES", 0)
        routed = ordered_emd(P, q)
        monkeypatch.undo()
        for got in (dense, cells, routed):
            np.testing.assert_array_equal(got, exact)
        if 1 < m <= 7:
            check_against_lp(P, q, cells, ordered_ground(m))


def test_ordered_emd_of_cells_on_a_large_domain_matches_the_rationals():
    """5,000 values, classes of a few values each (as a fine class of a salary table): the cells'
    sums against the exact rationals, and against the dense float form within 1e-13."""
    from sqlclose.privacy.emd import _ordered_float, ordered_emd_of_cells

    rng = np.random.default_rng([SEED, 54])
    m = 5000
    q = rng.integers(1, 100, size=m)
    P = np.zeros((30, m), dtype=np.int64)
    for row in P:
        row[rng.choice(m, size=int(rng.integers(1, 6)), replace=False)] = rng.integers(1, 9, size=5)[:1]
    P[0, 0], P[1, m - 1] = 4, 2  # the first value, the last value
    rows, cols = np.nonzero(P)
    got = ordered_emd_of_cells(rows, cols, P[rows, cols], len(P), q)
    np.testing.assert_array_equal(got, [float(fraction_ordered_emd(row, q)) for row in P])
    np.testing.assert_allclose(got, _ordered_float(P.astype(np.float64), q.astype(np.float64)), rtol=0, atol=1e-13)


def test_ordered_counts_past_int64_products_stay_within_rounding():
    """Class size × table rows × values past 2⁶² is summed as the same integer terms in float64:
    within 1e-15 of the exact rationals (and the same bits dense and from the cells)."""
    from sqlclose.privacy.emd import ordered_emd_of_cells

    q = np.array([3_000_000_000, 1, 2_000_000_000, 7, 5, 1_000_000_000], dtype=np.int64)
    P = np.array([[2_000_000_000, 0, 1, 0, 0, 999_999_999], [0, 0, 0, 0, 0, 3], [5, 0, 0, 0, 0, 0]], dtype=np.int64)
    exact = [float(fraction_ordered_emd(row, q)) for row in P]
    np.testing.assert_allclose(ordered_emd(P, q), exact, rtol=0, atol=1e-15)
    rows, cols = np.nonzero(P)
    np.testing.assert_allclose(ordered_emd_of_cells(rows, cols, P[rows, cols], 3, q), exact, rtol=0, atol=1e-15)


def _wide_codes(m: int) -> np.ndarray:
    """A hierarchy of height 3 over m leaves in tree order: groups of 4, of 32, then the root."""
    leaves = np.arange(m)
    return np.stack([leaves, leaves // 4, leaves // 32, np.zeros(m, dtype=np.int64)], axis=1)


def fraction_level_emd(row: np.ndarray, q: np.ndarray, codes: np.ndarray) -> Fraction:
    """Li et al.'s hierarchical EMD as the mean over levels 0 … H − 1 of ½ Σ_nodes |p − q|, in
    exact rationals (H = 1, a root over the leaves, is the equal distance)."""
    n, total, height = int(row.sum()), int(q.sum()), codes.shape[1] - 1
    result = Fraction(0)
    for level in range(height):
        p_node, q_node = {}, {}
        for leaf, node in enumerate(codes[:, level].tolist()):
            p_node[node] = p_node.get(node, 0) + int(row[leaf])
            q_node[node] = q_node.get(node, 0) + int(q[leaf])
        result += sum(abs(Fraction(p_node[v], n) - Fraction(q_node[v], total)) for v in p_node) / 2
    return result / height


@pytest.mark.parametrize("m", [7, 14, 513, 99_519, 99_520])
@pytest.mark.parametrize("name", ["equal", "variational", "hierarchical", "kl"])
def test_a_wide_class_distance_is_the_same_bits_at_every_offset_of_a_batch(name, m):
    """A class's distance was a floating-point sum over its dense row whose grouping followed its
    memory offset in the batch (numpy 2.4's ``einsum`` summed 35 of 40 rows of 99,520 values to
    other bits alone than in a block of 40), so a published figure moved with the classes beside
    it, suppressed ones included. The oracle: the class computed alone, bit for bit, at every
    position of a batch of other random classes; and for the equal/variational and hierarchical
    distances the exact rational (``fractions``) rounded once."""
    from sqlclose.privacy.distances import distance

    rng = np.random.default_rng([SEED, 55, m])
    batch = 9 if m > 10_000 else 40
    q = rng.integers(1, 50, size=m)
    P = np.zeros((batch, m), dtype=np.int64)
    for row in P:  # dense enough to hold most values (the sums that regroup), with ties
        held = rng.random(m) < 0.9
        row[held] = rng.integers(1, 40, size=int(held.sum()))
    codes = _wide_codes(m)
    tree = codes if name == "hierarchical" else None
    alone = np.array([distance(P[i:i + 1], q, name, tree)[0] for i in range(batch)])
    for shift in range(batch):  # every class at every offset
        order = np.roll(np.arange(batch), shift)
        np.testing.assert_array_equal(distance(P[order], q, name, tree), alone[order])
    np.testing.assert_array_equal(distance(P[::2], q, name, tree), alone[::2])  # and in a strided view
    if name != "kl" and m < 1000:
        flat = np.stack([np.arange(m), np.zeros(m, dtype=np.int64)], axis=1)
        exact = [float(fraction_level_emd(row, q, codes if name == "hierarchical" else flat)) for row in P]
        np.testing.assert_array_equal(alone, exact)
