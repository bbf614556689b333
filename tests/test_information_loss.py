"""The information-loss toolbox of Mauger, Le Mahec & Dequen (2023) against independent oracles:
the paper's printed Example 1 matrix and Adult l-diversity values, hand computations of every
metric's weights, and plain record-by-record reference implementations."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import numpy as np
import pytest

from sqlclose.model.hierarchy import Hierarchy
from sqlclose.utility import (
    METRICS,
    class_l1_closeness,
    class_l_diversity,
    custom_metric,
    full_domain_nodes,
    generalized_percent,
    l1_closeness_value,
    l_diversity_value,
    mean_alteration,
    metric,
    multidimensional_nodes,
    nauc,
    node_class_histograms,
    root_percent,
    trees,
)

AGE = Hierarchy.from_rows([("1", "1-2", "*"), ("2", "1-2", "*"), ("3", "3-4", "*"), ("4", "3-4", "*")])
SEX = Hierarchy.from_rows([("M", "*"), ("F", "*")])

# Hand-computed edge weights, keyed (level of the child) per QI, for AGE (h = 3 levels, 4 leaves)
# and SEX (h = 2, 2 leaves), m = 2: w1 = 1 − (h−1)²/((3−1)² + (2−1)²) = (0.2, 0.8); w2 = 3/h = (1, 1.5).
HAND = {
    # Distortion: (1/(h − lvl(parent))) / Σ_{i=1}^{h−1} 1/(h−i) × w1; for AGE the sum is 1/2 + 1 = 3/2.
    "distortion": ({0: (1 / 2) / 1.5 * 0.2, 1: 1 / 1.5 * 0.2}, {0: 1.0 * 0.8}),
    "ncp": ({0: 1 / 4, 1: 2 / 4}, {0: 1 / 2}),  # leaves lost / all leaves
    "total": ({0: 1 / 2, 1: 1 / 2}, {0: 1.0}),  # one level / (h − 1)
    "llm": ({0: 1.0, 1: 2.0}, {0: 1.5}),  # leaves lost × w2
    "nllm": ({0: 1 / 4, 1: 2 / 4}, {0: 1 / 2 * 1.5}),
    "wllm": ({0: 0.2, 1: 0.4}, {0: 0.8}),
    "wnllm": ({0: 0.05, 1: 0.1}, {0: 0.4}),
}


def _path_cost(per_level: dict[int, float], level: int) -> float:
    """Oracle: walk from a leaf up to ``level`` adding each edge's weight (per child level)."""
    return sum(per_level[lv] for lv in range(level))


def _label_at(h: Hierarchy, leaf: str, level: int) -> str:
    return next(r for r in h.rows if r[0] == leaf)[level]


def test_example_1_costs_matrix_is_the_papers():
    # Figure 2a's Race tree: Cat, Lion under Felid; Dog directly under Mammal. A balanced file
    # gives Dog a pass-through node at level 1 whose edge weighs 0, so every path keeps its cost.
    race = Hierarchy.from_rows([("Cat", "Felid", "Mammal"), ("Lion", "Felid", "Mammal"), ("Dog", "Dog", "Mammal")])
    mu = custom_metric([race], [{"Cat": 1, "Lion": 1, (0, "Dog"): 4, "Felid": 3, (1, "Dog"): 0}])
    tree = mu.trees[0]
    order = [tree.node(0, 0), tree.node(0, 1), tree.node(0, 2), tree.node(1, 0), tree.node(2, 0)]
    assert [race.labels(0), race.labels(1)] == [["Cat", "Lion", "Dog"], ["Felid", "Dog"]]
    printed = [[0, 1, 4, 1, 4],  # Cat, Lion, Dog, Felid, Mammal (Example 1)
               [1, 0, 4, 1, 4],
               [4, 4, 0, 4, 4],
               [0, 0, 3, 0, 3],
               [0, 0, 0, 0, 0]]
    assert mu.cost_matrix(0)[np.ix_(order, order)].tolist() == printed


def test_custom_weights_missing_an_edge_say_which_and_how_to_give_it():
    race = Hierarchy.from_rows([("Cat", "Felid", "Mammal"), ("Lion", "Felid", "Mammal"), ("Dog", "Dog", "Mammal")])
    with pytest.raises(ValueError, match="no weight for the edge up from 'Lion' \\(level 0\\), 'Felid' \\(level 1\\) "
                                         "\\(2 edges in all\\): give each edge a weight keyed by its "
                                         "child's label, or one weight per level step \\(a list of 2\\)"):
        custom_metric([race], [{"Cat": 1, (0, "Dog"): 4, (1, "Dog"): 0}])


@pytest.mark.parametrize("name", METRICS)
def test_named_metric_weights_match_hand_computation(name):
    mu = metric(name, [AGE, SEX])
    for j, h in enumerate([AGE, SEX]):
        tree = mu.trees[j]
        for leaf in h.leaves:
            for level in range(h.levels):
                node = tree.node(level, h.labels(level).index(_label_at(h, leaf, level)))
                leaf_node = tree.leaf_nodes[h.leaves.index(leaf)]
                assert mu.cost(j, leaf_node, node) == pytest.approx(_path_cost(HAND[name][j], level))


def test_w1_sums_powers_of_m():
    # m = 3 QIs of heights 3, 2, 2: (h−1)^3 = 8, 1, 1; w1 = 1 − 8/10, 1 − 1/10, 1 − 1/10.
    from sqlclose.utility import w1, w2
    assert w1([AGE, SEX, SEX]) == pytest.approx([0.2, 0.9, 0.9])
    assert w2([AGE, SEX, SEX]) == pytest.approx([1.0, 1.5, 1.5])


# A small table as explicit records: (age leaf, sex leaf), and a generalization of each record as
# (level, label) per QI — a multidimensional release (records 0–1 and 2–4 are two classes).
RECORDS = [("1", "M"), ("2", "M"), ("3", "F"), ("3", "M"), ("4", "F"), ("4", "F")]
GENERALIZED = [((1, "1-2"), (0, "M")), ((1, "1-2"), (0, "M")),
               ((2, "*"), (1, "*")), ((2, "*"), (1, "*")), ((2, "*"), (1, "*")), ((2, "*"), (1, "*"))]


def _aggregate(records, generalized):
    """Records → distinct (combination, generalization) rows with counts, as SQL would return them."""
    rows: dict = {}
    for r, g in zip(records, generalized):
        rows[(r, g)] = rows.get((r, g), 0) + 1
    hs = [AGE, SEX]
    leaves = np.array([[hs[j].leaves.index(v) for j, v in enumerate(r)] for (r, _) in rows])
    levels = np.array([[lv for lv, _ in g] for (_, g) in rows])
    labels = np.array([[hs[j].labels(lv).index(lab) for j, (lv, lab) in enumerate(g)] for (_, g) in rows])
    return leaves, multidimensional_nodes(trees(hs), levels, labels), np.array(list(rows.values()))


@pytest.mark.parametrize("name", METRICS)
def test_alteration_of_a_small_table_by_hand(name):
    leaves, nodes, counts = _aggregate(RECORDS, GENERALIZED)
    mu = metric(name, [AGE, SEX])
    per_record = [sum(_path_cost(HAND[name][j], g[j][0]) for j, h in enumerate([AGE, SEX]))
                  for r, g in zip(RECORDS, GENERALIZED)]
    full = [sum(_path_cost(HAND[name][j], h.levels - 1) for j, h in enumerate([AGE, SEX])) for r in RECORDS]
    assert mu.table_cost(leaves, nodes, counts) == pytest.approx(sum(per_record))
    assert mu.alteration(leaves, nodes, counts) == pytest.approx(sum(per_record) / sum(full) * 100)


def test_record_cost_is_definition_6():
    # μ̄(F, G) = Σ_j M(f_j, g_j) + M(g_j, f_j): generalizing both records to their LCA per QI.
    mu = metric("ncp", [AGE, SEX])
    ta, ts = mu.trees
    f = np.array([ta.node(0, 0), ts.node(0, 0)])  # ("1", "M")
    g = np.array([[ta.node(0, 1), ts.node(0, 0)],  # ("2", "M"): LCA (1-2, M): 1/4 + 1/4
                  [ta.node(1, 1), ts.node(0, 1)],  # ("3-4", "F"): LCA (*, *): 3/4 + 1/2 for 1, 2/4 + 1/2 for 3-4
                  [ta.node(2, 0), ts.node(1, 0)]])  # ("*", "*"): 3/4 + 1/2
    assert mu.record_cost(f, g) == pytest.approx([0.5, 0.75 + 0.5 + 0.5 + 0.5, 0.75 + 0.5])


def test_quality_criteria_by_hand():
    leaves, nodes, counts = _aggregate(RECORDS, GENERALIZED)
    ts = trees([AGE, SEX])
    # Values raised: records 0–1 age only (2 values), records 2–5 both (8 values): 10 of 12.
    assert generalized_percent(ts, nodes, counts) == pytest.approx(10 / 12 * 100)
    assert root_percent(ts, nodes, counts) == pytest.approx(8 / 12 * 100)
    mus = [metric(n, [AGE, SEX]) for n in ("ncp", "total")]
    assert mean_alteration(mus, leaves, nodes, counts) == pytest.approx(
        (mus[0].alteration(leaves, nodes, counts) + mus[1].alteration(leaves, nodes, counts)) / 2)


ADULT_QIS = ["sex", "race", "marital-status", "education", "native-country", "workclass", "occupation",
             "salary-class"]


@pytest.fixture(scope="module")
def adult_combos(adult_dir: Path):
    """Adult's distinct combinations of 8 QIs with counts, by a plain SQL GROUP BY."""
    hs = [Hierarchy.from_csv(Path(__file__).parents[1] / "datasets" / "adult" / "hierarchies" / f"{c}.csv")
          for c in ADULT_QIS]
    cols = ", ".join(f'"{c}"' for c in ADULT_QIS)
    rows = duckdb.sql(f"SELECT {cols}, COUNT(*) AS n FROM read_csv('{adult_dir / 'adult.csv'}', delim=';') "
                      f"GROUP BY {cols}").fetchall()
    leaves = np.array([[hs[j].leaves.index(r[j]) for j in range(len(hs))] for r in rows])
    return hs, leaves, np.array([r[-1] for r in rows])


@pytest.mark.parametrize("name", METRICS)
def test_raw_table_alters_0_and_root_table_100(adult_combos, name):
    hs, leaves, counts = adult_combos
    mu = metric(name, hs)
    ts = mu.trees
    raw = full_domain_nodes(ts, [0] * len(hs), leaves)
    top = full_domain_nodes(ts, [h.levels - 1 for h in hs], leaves)
    assert mu.alteration(leaves, raw, counts) == 0.0
    assert mu.alteration(leaves, top, counts) == pytest.approx(100.0)
    middle = full_domain_nodes(ts, [min(1, h.levels - 1) for h in hs], leaves)
    assert 0.0 < mu.alteration(leaves, middle, counts) < 100.0
    assert generalized_percent(ts, raw, counts) == 0.0
    assert root_percent(ts, top, counts) == 100.0


def test_costs_matrix_against_walking_the_hierarchy(adult_combos):
    """M(v, v') = cost(v, LCA(v, v')) on a real hierarchy (Distortion), the LCA found by walking rows."""
    hs, _, _ = adult_combos
    j = ADULT_QIS.index("education")
    h, m = hs[j], len(hs)
    heights = [x.levels for x in hs]
    w1 = 1 - (h.levels - 1) ** m / sum((x - 1) ** m for x in heights)
    norm = sum(1 / (h.levels - i) for i in range(1, h.levels))
    edge_up = {lv: (1 / (h.levels - (lv + 1))) / norm * w1 for lv in range(h.levels - 1)}  # by child level
    mu = metric("distortion", hs)
    tree, matrix = mu.trees[j], mu.cost_matrix(j)

    def path(lv, label):  # the node's labels from its level to the top
        return next(r[lv:] for r in h.rows if r[lv] == label)

    nodes = [(lv, lab) for lv in range(h.levels) for lab in h.labels(lv)]
    for a in nodes:
        for b in nodes:
            pa, pb = path(*a), path(*b)
            lca = next(lv for lv in range(max(a[0], b[0]), h.levels) if pa[lv - a[0]] == pb[lv - b[0]])
            expect = sum(edge_up[lv] for lv in range(a[0], lca))
            got = matrix[tree.node(a[0], h.labels(a[0]).index(a[1])), tree.node(b[0], h.labels(b[0]).index(b[1]))]
            assert got == pytest.approx(expect)


def test_suppressed_records_count_as_fully_generalized():
    leaves = np.array([[0, 0], [2, 1]])  # ("1", "M") and ("3", "F")
    counts = np.array([3, 1])
    ts = trees([AGE, SEX])
    nodes = full_domain_nodes(ts, [1, 0], leaves, suppressed=np.array([False, True]))
    mu = metric("total", [AGE, SEX])
    # kept: 3 records × (1/2 + 0); suppressed: 1 × (1 + 1); full: 4 × 2.
    assert mu.alteration(leaves, nodes, counts) == pytest.approx((3 * 0.5 + 2) / 8 * 100)
    assert root_percent(ts, nodes, counts) == pytest.approx(2 / 8 * 100)
    hist = node_class_histograms(nodes, np.array([[3, 0], [0, 1]]), suppressed=np.array([False, True]))
    assert hist.tolist() == [[3, 0]]  # the suppressed combination is not a released class


def test_custom_weights_per_level_equal_per_edge():
    by_level = custom_metric([AGE, SEX], [[1.0, 3.0], [2.0]])
    by_edge = custom_metric([AGE, SEX], [{"1": 1, "2": 1, "3": 1, "4": 1, "1-2": 3, "3-4": 3}, {"M": 2, "F": 2}])
    for j in range(2):
        assert np.array_equal(by_level.cost_matrix(j), by_edge.cost_matrix(j))
    with pytest.raises(ValueError, match="no weight"):
        custom_metric([AGE, SEX], [{"1": 1}, {"M": 2, "F": 2}])
    with pytest.raises(ValueError, match="≥ 0"):
        custom_metric([AGE, SEX], [[1.0, -3.0], [2.0]])
    with pytest.raises(ValueError, match="unknown metric"):
        metric("discernibility", [AGE])


def test_l_diversity_and_l1_closeness_values_by_hand():
    hist = np.array([[2, 2, 0], [1, 1, 1], [3, 0, 0], [1, 2, 1]])
    ref = hist.sum(axis=0)  # 7, 5, 2 of 14
    assert class_l_diversity(hist)[:3] == pytest.approx([2.0, 3.0, 1.0])
    p = np.array([0.25, 0.5, 0.25])
    assert class_l_diversity(hist)[3] == pytest.approx(math.exp(-(p * np.log(p)).sum()))
    assert l_diversity_value(hist) == pytest.approx(1.0)
    q = np.array([7, 5, 2]) / 14
    expect = [abs(0.5 - q[0]) + abs(0.5 - q[1]) + q[2], sum(abs(1 / 3 - q)), abs(1 - q[0]) + q[1] + q[2],
              sum(abs(p - q))]
    assert class_l1_closeness(hist, ref) == pytest.approx(expect)
    assert l1_closeness_value(hist, ref) == pytest.approx(max(expect))
    # Not halved: a one-value class against a two-value table is 1.0 here, 0.5 as equal-distance EMD.
    assert l1_closeness_value(np.array([[1, 0]]), np.array([1, 1])) == pytest.approx(1.0)


def test_maximum_l_diversity_values_printed_for_adult(adult_dir: Path):
    """Section 4.3.2: the whole table as one class has l_div ≃ 50.03 for Age, ≃ 3.53 for Marital status."""
    for column, printed in (("age", 50.03), ("marital-status", 3.53)):
        counts = [n for (n,) in duckdb.sql(f"SELECT COUNT(*) FROM read_csv('{adult_dir / 'adult.csv'}', delim=';') "
                                           f'GROUP BY "{column}"').fetchall()]
        assert l_diversity_value(np.array([counts])) == pytest.approx(printed, abs=0.005)


def test_nauc_is_the_trapezoid_mean():
    x, y = [3, 5, 10, 20], [10, 20, 40, 0]
    assert nauc(x, y, 3, 10) == pytest.approx((2 * 15 + 5 * 30) / 7)
    # Interpolated ends: y(4) = 15, y(15) = 20.
    assert nauc(x, y, 4, 15) == pytest.approx((1 * 17.5 + 5 * 30 + 5 * 30) / 11)
    assert nauc(x[::-1], y[::-1]) == pytest.approx((2 * 15 + 5 * 30 + 10 * 20) / 17)
    with pytest.raises(ValueError):
        nauc(x, y, 1, 10)


def test_sensitive_values_from_cells_are_the_exact_sums_of_the_dense_terms():
    """A released node held as its cells (190 k values: the report's runs of five dense classes took
    minutes) gives its l-diversity and L1 closeness values from the cells. Oracle: the definitions
    over each class's dense row of all values — exp(−Σ p ln p) and Σ |p − r| with every term,
    absent values' included, summed exactly by ``math.fsum`` — the same bits, on random classes with
    ties (identical classes), classes of one value, and values no class holds."""
    from sqlclose.utility.information_loss import l1_closeness_value_of_cells, l_diversity_value_of_cells

    rng = np.random.default_rng(20071053)
    for trial in range(300):
        m, classes = int(rng.integers(1, 60)), int(rng.integers(1, 12))
        counts = (rng.integers(0, 9, (classes, m)) * (rng.random((classes, m)) < rng.random())).astype(np.float64)
        empty = counts.sum(axis=1) == 0
        counts[empty, rng.integers(0, m, int(empty.sum()))] = 1
        if trial % 3 == 0:
            counts[1:] = counts[0]
        totals = counts.sum(axis=0)
        shares = counts / counts.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            plogp = np.where(counts > 0, shares * np.log(np.where(counts > 0, shares, 1.0)), 0.0)
        l_div = float(np.exp(-max(math.fsum(row) for row in plogp.tolist())))  # np.exp, as the dense form
        l1 = max(math.fsum(row) for row in np.abs(shares - totals / totals.sum()).tolist())
        rows, cols = np.nonzero(counts)
        assert l_diversity_value_of_cells(rows, counts[rows, cols], classes) == l_div
        assert l1_closeness_value_of_cells(rows, cols, counts[rows, cols], classes, totals) == l1


def test_l1_value_from_cells_is_exact_over_a_large_domain_of_many_magnitudes():
    """The L1 figure from cells adds each class's absent values as the exact sum of the reference's
    shares, kept as floats whose sum is exact (``information_loss._partials``). They were made by a
    Python loop over the values (a fifth of a second a call at 95 k values, most of the release's
    summary); now by exactly rounded sums of what is left, repeated. Oracle: each class's dense row
    of all m terms |p − r|, absent values' included, summed by ``math.fsum``, the largest — on 20,000
    reference counts spread over 38 binary magnitudes (their sum below 2⁵³), whose shares' exact sum
    is no float: the rounded sum alone would be off."""
    from sqlclose.utility.information_loss import _partials, l1_closeness_value_of_cells

    rng = np.random.default_rng(53)
    m, classes = 20_000, 7
    reference = 2.0 ** rng.integers(0, 38, m) + rng.integers(1, 2**10, m)
    shares = reference / reference.sum()
    assert len(_partials(shares)) >= 2  # the case needs the remainder beside the rounded sum
    counts = np.zeros((classes, m))
    for c in range(classes):
        held = rng.choice(m, int(rng.integers(1, 400)), replace=False)
        counts[c, held] = rng.integers(1, 9, held.size)
    counts[3] = counts[2]  # tied classes
    oracle = max(math.fsum(row) for row in np.abs(counts / counts.sum(axis=1, keepdims=True) - shares).tolist())
    rows, cols = np.nonzero(counts)
    assert l1_closeness_value_of_cells(rows, cols, counts[rows, cols], classes, reference) == oracle
    # One class holding the whole table is the table's distribution: 0 by hand, every term 0. Its sum
    # from cells, Σ (0 − r) + Σ r, is 0 only when Σ r is added exactly (the rounded sum alone left ~1e-17).
    whole = np.arange(m)
    assert l1_closeness_value_of_cells(np.zeros(m, dtype=np.int64), whole, reference, 1, reference) == 0.0
    assert math.isnan(math.fsum(_partials(np.array([0.5, np.nan]))))  # no remainder to chase: it ends


def test_lca_of_one_node_against_many_in_a_hierarchy_too_big_to_tabulate():
    """GAA compares C_s's node with every class's node at each merge; in a hierarchy over 2,048 nodes
    (35 k dates of birth) that went through a nodes × levels matrix per merge and made GAA on
    150 k rows run for half an hour. The one-against-many path must give the same LCA as walking
    the hierarchy's rows (oracle: the lowest level from both nodes up where their labels agree)."""
    rows = [(f"{y}-{d:03d}", str(y), f"{y // 10}0s", "*") for y in range(1900, 1908) for d in range(300)]
    h = Hierarchy.from_rows(rows)
    tree = trees([h])[0]
    assert tree.lca_table is None  # the path under test: no precomputed table

    def path(lv, label):  # the node's labels from its level to the top
        return next(r[lv:] for r in h.rows if r[lv] == label)

    nodes = [(lv, lab) for lv in range(h.levels) for lab in h.labels(lv)]
    rng = np.random.default_rng(7)
    ids = np.array([tree.node(lv, h.labels(lv).index(lab)) for lv, lab in nodes])
    for a in rng.choice(len(nodes), 40, replace=False).tolist() + [len(nodes) - 1, 0]:
        others = rng.choice(len(nodes), 200, replace=False)
        got = tree.lca(int(ids[a]), ids[others])
        for b, node in zip(others, got):
            (la, xa), (lb, xb) = nodes[a], nodes[b]
            pa, pb = path(la, xa), path(lb, xb)
            lv = next(lv for lv in range(max(la, lb), h.levels) if pa[lv - la] == pb[lv - lb])
            assert int(node) == tree.node(lv, h.labels(lv).index(pa[lv - la])), (nodes[a], nodes[b])
