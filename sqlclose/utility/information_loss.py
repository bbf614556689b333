"""Information loss of generalized tables: the unified metric model of Mauger, Le Mahec & Dequen
(Transactions on Data Privacy 16, 2023, sections 3.1–3.3 and 4.1), from aggregated counts.

A *metric* is a weight on every edge of every QI hierarchy (Definition 3). The cost of
generalizing a node v to an ancestor v' is the sum of the weights on the path (Definition 4);
the costs matrix is ``M(v, v') = cost(v, LCA(v, v'))`` (Definition 5); a generalized table costs
the sum over its records of the cost from each original value to its generalized value
(Definition 6), and its *alteration* is that cost over the cost of the fully generalized table,
× 100 (Definition 7).

Notation. The paper's hierarchy *height* h is its number of levels (nodes on a leaf-to-root
path), i.e. ``Hierarchy.levels`` here — not ``Hierarchy.height`` (levels − 1). Leaves are at
level 0, the root at level h − 1.

Nodes. A hierarchy's nodes are numbered level by level from the leaves: node ``(level, i)``
(``i`` indexes ``hierarchy.labels(level)``) is ``offsets[level] + i``; the root is the last.

Inputs are aggregated: *combinations* (distinct leaf tuples, as leaf indices into
``hierarchy.leaves``) with a record count each, and per combination per QI the node it is
generalized to. Everything is numpy; nothing here knows SQL.

Suppressed records. The paper's generalized tables keep all n records (Definition 1) and its
"fully generalized" table T* is every QI at the root, so a suppressed record — which releases
nothing of its QIs — is counted as generalized to the root on every QI (full cost, counted in
% generalized and % at root). The l-diversity and t-closeness values are per released class:
callers pass the class histograms they release (``node_class_histograms`` leaves suppressed
combinations out).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from sqlclose.model.hierarchy import Hierarchy
from sqlclose.model.text import counted, name_shown

METRICS = ("distortion", "ncp", "total", "llm", "nllm", "wllm", "wnllm")
LEAF_COUNTING = ("ncp", "llm", "nllm", "wllm", "wnllm")  # their weights count the leaves below a label
_DENSE_PAIR_LIMIT = 2048  # nodes per hierarchy up to which the pair-cost matrix is precomputed


# ---- hierarchies as trees ------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Tree:
    """A hierarchy's nodes as arrays: parent, level, leaves below, ancestors by level."""

    hierarchy: Hierarchy
    offsets: np.ndarray  # first node id of each level
    parent: np.ndarray  # parent node of each node (-1 for the root)
    level: np.ndarray  # level of each node
    ancestors: np.ndarray  # nodes × levels: ancestor of the node at each level ≥ its own, else -1
    leaf_nodes: np.ndarray  # node id of each leaf, in hierarchy.leaves order (= 0..leaves-1)

    @classmethod
    def of(cls, hierarchy: Hierarchy) -> Tree:
        dense = hierarchy.level_codes  # leaves × levels
        counts = dense.max(axis=0) + 1
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        ids = dense + offsets  # node id of each leaf's ancestor at each level
        nodes, levels = int(counts.sum()), hierarchy.levels
        parent = np.full(nodes, -1, dtype=np.int64)
        level = np.repeat(np.arange(levels), counts)
        ancestors = np.full((nodes, levels), -1, dtype=np.int64)
        for lv in range(levels):
            # A node's ancestors at levels ≥ its own are those of any leaf below it.
            ancestors[ids[:, lv], lv:] = ids[:, lv:]
            if lv + 1 < levels:
                parent[ids[:, lv]] = ids[:, lv + 1]
        return cls(hierarchy, offsets, parent, level, ancestors, ids[:, 0].copy())

    @property
    def nodes(self) -> int:
        return int(self.parent.shape[0])

    @property
    def root(self) -> int:
        return self.nodes - 1

    @property
    def levels(self) -> int:
        """The paper's height h: the number of levels."""
        return int(self.ancestors.shape[1])

    def node(self, level: np.ndarray | int, label: np.ndarray | int) -> np.ndarray:
        """Node id of (level, index into ``hierarchy.labels(level)``), vectorized."""
        return self.offsets[np.asarray(level)] + np.asarray(label)

    def label_index(self, node: np.ndarray) -> np.ndarray:
        return np.asarray(node) - self.offsets[self.level[node]]

    @cached_property
    def leaves_below(self) -> np.ndarray:
        """nl(v): the number of leaves in the subtree of each node; for a rule's hierarchy with a
        declared domain, how much of the domain each node's label covers (model/domains.py)."""
        cover = self.hierarchy.cover
        nl = np.zeros(self.nodes, dtype=np.float64)
        for lv in range(self.levels):
            below = self.ancestors[self.leaf_nodes, lv]
            if cover is None:
                nl += np.bincount(below, minlength=self.nodes)
            else:  # a label's rows all hold its cover
                nl[below] = cover[:, lv]
        return nl

    @cached_property
    def lca_table(self) -> np.ndarray | None:
        """LCA of every pair of nodes, when the hierarchy is small enough to tabulate."""
        if self.nodes > _DENSE_PAIR_LIMIT:
            return None
        v = np.arange(self.nodes)
        return self._lca(v[:, None], v[None, :])

    def lca(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        """Lowest common ancestor of nodes a and b (broadcast)."""
        table = self.lca_table
        if table is not None:
            return table[a, b]
        if np.ndim(a) == 0:  # one node against many (GAA's C_s against every class): a's chain, level by level
            return self._lca_of_one(int(a), np.asarray(b))
        return self._lca(np.asarray(a), np.asarray(b))

    @cached_property
    def _ancestors_by_level(self) -> np.ndarray:
        """``ancestors`` transposed (levels × nodes): one level's column is contiguous to gather from."""
        return np.ascontiguousarray(self.ancestors.T)

    def _lca_of_one(self, a: int, b: np.ndarray) -> np.ndarray:
        """LCA of node a with each of the nodes b, equal to ``_lca``: it is one of a's ancestors, the
        lowest one that is b's ancestor at its level too. Walking a's chain down from the top, a
        level where none matches ends the walk (matches are a suffix of the levels). One gather per
        level instead of ``_lca``'s nodes × levels matrices: a 35 k-date hierarchy compared
        against every GAA class at each merge spent most of GAA's time there."""
        chain = self.ancestors[a]
        lca = np.full(b.shape, chain[-1], dtype=np.int64)
        for lv in range(self.levels - 2, int(self.level[a]) - 1, -1):
            same = self._ancestors_by_level[lv].take(b) == chain[lv]
            if not same.any():
                break
            lca[same] = chain[lv]
        return lca

    def _lca(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        anc_a, anc_b = self.ancestors[a], self.ancestors[b]
        low = np.maximum(self.level[a], self.level[b])
        # Levels at which both have an ancestor and it is the same one: a suffix of the levels.
        same = (anc_a == anc_b) & (anc_a >= 0) & (anc_b >= 0)
        lca_level = np.maximum(self.levels - same.sum(axis=-1), low)
        return np.take_along_axis(np.broadcast_to(anc_a, same.shape), lca_level[..., None], axis=-1)[..., 0]


def trees(hierarchies: Sequence[Hierarchy]) -> list[Tree]:
    """Each hierarchy's tree, built once per hierarchy (a 100 k-leaf ZIP code's takes ~15 ms)."""
    return [h.memo("tree", lambda h=h: Tree.of(h)) for h in hierarchies]


# ---- metrics -------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Metric:
    """Edge weights per QI: ``weights[j][v]`` weighs the edge from node v to its parent (0 at the root)."""

    name: str
    trees: tuple[Tree, ...]
    weights: tuple[np.ndarray, ...]
    # Per QI, per node: what any leaf costs up to it, in closed form, where the metric has one
    # (``_leaf_costs``); ``from_leaves`` gives it as it is.
    leaf_costs: tuple[np.ndarray, ...] | None = None

    @cached_property
    def to_root(self) -> tuple[np.ndarray, ...]:
        """cost(v, root) per node: with it, cost(v, u) = to_root[v] − to_root[u] for an ancestor u."""
        out = []
        for tree, w in zip(self.trees, self.weights):
            up = np.zeros(tree.nodes)
            for lv in range(tree.levels - 2, -1, -1):  # top-down: a node's cost is its parent's plus its edge
                at = np.flatnonzero(tree.level == lv)
                up[at] = up[tree.parent[at]] + w[at]
            out.append(up)
        return tuple(out)

    @cached_property
    def from_leaves(self) -> tuple[np.ndarray, ...] | None:
        """Per QI, per node v: what any leaf below v costs up to v, when that is the same for every
        leaf (the seven named metrics, and custom weights per level step: all leaves are at level 0);
        else None (custom weights per edge). With it a table's cost follows from the records each
        released node holds: ``released_cost``."""
        if self.leaf_costs is not None:
            return self.leaf_costs
        out = []
        for tree, up in zip(self.trees, self.to_root):
            leaf = up[tree.leaf_nodes]
            if not np.allclose(leaf, leaf.max(), rtol=1e-12, atol=0.0):
                return None
            cost = np.maximum(leaf.max() - up, 0.0)
            cost[tree.leaf_nodes] = 0.0  # a value released as it is costs nothing, exactly
            out.append(cost)
        return tuple(out)

    def released_cost(self, node_records: Sequence[np.ndarray]) -> float:
        """μ_T(T^gen) from ``node_records[j]``, the records at each node of QI j (suppressed ones at
        the root), for a metric with ``from_leaves``. Equal to ``table_cost``, but a function of the
        release alone: neither the raw values under a label nor their order reach the floating-point
        sums (the report, which may be published, holds it). Summed exactly (``math.fsum``) over the
        nodes holding records: a dot product over every node of the tree grouped its terms by their
        positions, which the leaves of suppressed rows shift, and its last digits moved with them."""
        from_leaves = self.from_leaves
        assert from_leaves is not None, "released_cost needs a metric whose leaves all cost the same to a node"
        terms = []
        for records, cost in zip(node_records, from_leaves):
            records = np.asarray(records, dtype=np.float64)
            held = np.flatnonzero(records)
            terms.extend((records[held] * cost[held]).tolist())
        return math.fsum(terms)

    def released_alteration(self, node_records: Sequence[np.ndarray]) -> float:
        """alt_μ (Definition 7) from the records at each node, in percent; NaN when T* costs 0. T*'s
        cost is summed as ``released_cost`` sums (``math.fsum``): summed apart, a release at the root
        was 100.00000000000003 % of itself (review of the ninety-third round)."""
        rows = [float(np.sum(records)) for records in node_records]
        full = math.fsum(n * float(cost[tree.root]) for n, cost, tree in zip(rows, self.from_leaves or (), self.trees))
        return self.released_cost(node_records) / full * 100.0 if full > 0 else float("nan")

    def cost(self, j: int, v: np.ndarray, ancestor: np.ndarray) -> np.ndarray:
        """cost(v, v') of Definition 4 for v' an ancestor of v (or v itself)."""
        return self.to_root[j][v] - self.to_root[j][ancestor]

    def cost_matrix(self, j: int) -> np.ndarray:
        """M(v, v') = cost(v, LCA(v, v')) over all nodes of QI j (Definition 5)."""
        tree = self.trees[j]
        v = np.arange(tree.nodes)
        lca = tree.lca(v[:, None], v[None, :]) if tree.lca_table is None else tree.lca_table
        return self.to_root[j][:, None] - self.to_root[j][lca]

    @cached_property
    def _pair_matrices(self) -> tuple[np.ndarray | None, ...]:
        """M + Mᵀ per QI, precomputed when the hierarchy is small enough (else computed per call)."""
        out = []
        for j, tree in enumerate(self.trees):
            m = self.cost_matrix(j) if tree.nodes <= _DENSE_PAIR_LIMIT else None
            out.append(None if m is None else m + m.T)
        return tuple(out)

    def pair_matrix(self, j: int) -> np.ndarray | None:
        """M + Mᵀ of QI j (None for a hierarchy too big to tabulate)."""
        return self._pair_matrices[j]

    def pair_cost(self, j: int, a: int, b: np.ndarray) -> np.ndarray:
        """M(a, b) + M(b, a) for one node a against many nodes b of QI j."""
        dense = self._pair_matrices[j]
        if dense is not None:
            return dense[a].take(b)
        lca = self.trees[j].lca(np.int64(a), b)
        up = self.to_root[j]
        return (up[a] - up[lca]) + (up[b] - up[lca])

    def record_cost(self, f: np.ndarray, g: np.ndarray) -> np.ndarray:
        """μ̄(F, G) of Definition 6: Σ_j M(f_j, g_j) + M(g_j, f_j); ``f`` one record (QIs,), ``g`` (n, QIs)."""
        g = np.atleast_2d(g)
        total = np.zeros(g.shape[0])
        for j in range(len(self.trees)):
            total += self.pair_cost(j, int(f[j]), g[:, j])
        return total

    def table_cost(self, leaves: np.ndarray, nodes: np.ndarray, counts: np.ndarray) -> float:
        """μ_T(T^gen): Σ over combinations of count × Σ_j cost(leaf_j, node_j).

        ``leaves``: combos × QIs leaf indices; ``nodes``: combos × QIs generalized node ids.
        """
        per_combo = np.zeros(leaves.shape[0])
        for j, tree in enumerate(self.trees):
            per_combo += self.cost(j, tree.leaf_nodes[leaves[:, j]], nodes[:, j])
        return float(per_combo @ np.asarray(counts, dtype=np.float64))

    def full_cost(self, leaves: np.ndarray, counts: np.ndarray) -> float:
        """μ_T(T*): every QI at its root."""
        roots = np.array([t.root for t in self.trees], dtype=np.int64)
        return self.table_cost(leaves, np.broadcast_to(roots, leaves.shape), counts)

    def alteration(self, leaves: np.ndarray, nodes: np.ndarray, counts: np.ndarray) -> float:
        """alt_μ (Definition 7), in percent; NaN when even the fully generalized table costs 0."""
        full = self.full_cost(leaves, counts)
        return self.table_cost(leaves, nodes, counts) / full * 100.0 if full > 0 else float("nan")


def w1(hierarchies: Sequence[Hierarchy]) -> np.ndarray:
    """The *wid* weighting of Definition 8: 1 − (h_j − 1)^m / Σ_i (h_i − 1)^m (h = levels, m = QIs)."""
    h = np.array([x.levels for x in hierarchies], dtype=np.float64)
    powers = (h - 1) ** len(hierarchies)
    total = powers.sum()
    return 1.0 - powers / total if total > 0 else np.ones_like(h)


def w2(hierarchies: Sequence[Hierarchy]) -> np.ndarray:
    """Definition 8: h_max / h_j."""
    h = np.array([x.levels for x in hierarchies], dtype=np.float64)
    return h.max() / h


def _edge_weights(name: str, tree: Tree, multiplier: float) -> np.ndarray:
    """The weight of each node's edge to its parent for one named metric (section 3.2)."""
    child = np.arange(tree.nodes - 1)  # every node but the root has a parent edge
    parent = tree.parent[child]
    h = tree.levels
    nl = tree.leaves_below
    lost = (nl[parent] - nl[child]).astype(np.float64)
    if name == "distortion":
        norm = sum(1.0 / (h - i) for i in range(1, h))
        inter = (1.0 / (h - tree.level[parent])) / norm
    elif name == "total":
        inter = (tree.level[parent] - tree.level[child]) / (h - 1)
    elif name in ("ncp", "nllm", "wnllm"):
        inter = lost / nl[tree.root]
    else:  # llm, wllm: lost leaves, not normalized
        inter = lost
    return np.append(inter * multiplier, 0.0)


def metric(name: str, hierarchies: Sequence[Hierarchy]) -> Metric:
    """One of the seven metrics of section 3.2 over the given QI hierarchies."""
    key = name.lower()
    if key not in METRICS:
        raise ValueError(f"unknown metric {name_shown(name)}; choose one of {', '.join(METRICS)}")
    ts = trees(hierarchies)
    if key in ("distortion", "wllm", "wnllm"):
        multipliers = w1(hierarchies)
    elif key in ("llm", "nllm"):
        multipliers = w2(hierarchies)
    else:
        multipliers = np.ones(len(hierarchies))
    weights = tuple(_edge_weights(key, t, float(mu)) for t, mu in zip(ts, multipliers))
    costs = [_leaf_costs(key, t, float(mu)) for t, mu in zip(ts, multipliers)]
    return Metric(key, tuple(ts), weights, None if any(c is None for c in costs) else tuple(costs))


def _leaf_costs(name: str, tree: Tree, multiplier: float) -> np.ndarray | None:
    """For a metric counting the leaves below a label, what any leaf costs up to each node in closed
    form: (nl(v) − nl(leaf)) × the multiplier (÷ nl(root) when normalized); None for the others, or
    when the leaves' nl differ. Its edge weights sum to it along every path in exact arithmetic, but
    in floating point the sum differs in its last bits from path to path, and ``from_leaves`` took
    the largest over the leaves present: with a declared domain's covers (a band clipped at the
    domain's edge, months of 28 to 31 days) a suppressed row's value moved every published figure
    (ages over [3, 97] in bands of 3: a suppressed 96, under the clipped 96-98, or 95)."""
    nl = tree.leaves_below
    leaf = nl[tree.leaf_nodes]
    if name not in LEAF_COUNTING or not (leaf == leaf[0]).all():
        return None
    cost = (nl - leaf[0]) * multiplier
    if name in ("ncp", "nllm", "wnllm"):
        cost = cost / nl[tree.root]
    cost[tree.leaf_nodes] = 0.0
    return cost


EdgeWeights = Sequence[float] | Mapping[tuple[int, str] | str, float]


def custom_metric(hierarchies: Sequence[Hierarchy], weights: Sequence[EdgeWeights], name: str = "custom") -> Metric:
    """A user's own metric: per QI, either one weight per level step (``[w(0→1), w(1→2), …]``) or
    a weight per edge keyed by the child node, ``(level, label)`` or a label unique in the hierarchy."""
    if len(weights) != len(hierarchies):
        raise ValueError(f"custom metric: {counted(len(weights), 'weight set')} for "
                         f"{counted(len(hierarchies), 'hierarchy', 'hierarchies')}")
    ts = trees(hierarchies)
    return Metric(name, tuple(ts), tuple(_user_weights(t, w) for t, w in zip(ts, weights)))


def _user_weights(tree: Tree, given: EdgeWeights) -> np.ndarray:
    h = tree.hierarchy
    out = np.zeros(tree.nodes)
    if not isinstance(given, Mapping):
        per_level = np.asarray(list(given), dtype=np.float64)
        if per_level.shape != (tree.levels - 1,):
            raise ValueError(f"{h.origin}: {per_level.size} level weights for {tree.levels - 1} level steps")
        out[:-1] = per_level[tree.level[:-1]]
        return _non_negative(out, h)
    out[:-1] = np.nan  # every edge (all nodes but the root) must get a weight
    where: dict[str, list[int]] = {}
    for lv in range(tree.levels - 1):
        for i, label in enumerate(h.labels(lv)):
            where.setdefault(label, []).append(int(tree.node(lv, i)))
    for key, w in given.items():
        if isinstance(key, tuple):
            lv, label = key
            nodes = [v for v in where.get(label, []) if tree.level[v] == lv]
        else:
            nodes = where.get(key, [])
            if len(nodes) > 1:
                raise ValueError(f"{h.origin}: label {key!r} is at several levels; key its weight by (level, label)")
        if not nodes:
            raise ValueError(f"{h.origin}: {key!r} is not a node below the top, so it has no edge to weigh")
        out[nodes[0]] = w
    missing = [(int(tree.level[v]), h.labels(int(tree.level[v]))[int(tree.label_index(v))])
               for v in np.flatnonzero(np.isnan(out))]
    if missing:
        shown = ", ".join(f"{label!r} (level {level})" for level, label in missing[:5])
        raise ValueError(f"{h.origin}: no weight for the edge up from {shown}{' …' if len(missing) > 5 else ''} "
                         f"({counted(len(missing), 'edge')} in all): give each edge a weight keyed by its child's "
                         f"label, or one weight per level step (a list of {tree.levels - 1})")
    return _non_negative(out, h)


def _non_negative(w: np.ndarray, h: Hierarchy) -> np.ndarray:
    if (w < 0).any() or not np.isfinite(w).all():
        raise ValueError(f"{h.origin}: edge weights must be finite and ≥ 0 (Definition 3: weights in R+)")
    return w


# ---- generalized tables as node arrays -----------------------------------------------------

def full_domain_nodes(ts: Sequence[Tree], levels: Sequence[int], leaves: np.ndarray,
                      suppressed: np.ndarray | None = None) -> np.ndarray:
    """Generalized node per combination per QI for a full-domain node (one level per QI).
    Suppressed combinations go to the roots (see the module docstring)."""
    nodes = np.column_stack([t.ancestors[t.leaf_nodes[leaves[:, j]], lv] for j, (t, lv) in enumerate(zip(ts, levels))])
    if suppressed is not None:
        nodes[np.asarray(suppressed, dtype=bool)] = [t.root for t in ts]
    return nodes


def multidimensional_nodes(ts: Sequence[Tree], levels: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Node ids from per-combination (level, label index) arrays (combos × QIs), as GAA returns them."""
    return np.column_stack([t.node(levels[:, j], labels[:, j]) for j, t in enumerate(ts)])


# ---- quality criteria (Definition 9) -------------------------------------------------------

def mean_alteration(metrics: Sequence[Metric], leaves: np.ndarray, nodes: np.ndarray, counts: np.ndarray) -> float:
    return float(np.mean([m.alteration(leaves, nodes, counts) for m in metrics]))


def generalized_percent(ts: Sequence[Tree], nodes: np.ndarray, counts: np.ndarray) -> float:
    """p_gen: % of (record, QI) values whose level rose above the original's (leaves are level 0)."""
    raised = np.column_stack([t.level[nodes[:, j]] > 0 for j, t in enumerate(ts)])
    return _percent_of_values(raised, counts)


def root_percent(ts: Sequence[Tree], nodes: np.ndarray, counts: np.ndarray) -> float:
    """p_root: % of (record, QI) values generalized to the root."""
    at_root = np.column_stack([nodes[:, j] == t.root for j, t in enumerate(ts)])
    return _percent_of_values(at_root, counts)


def _percent_of_values(flags: np.ndarray, counts: np.ndarray) -> float:
    counts = np.asarray(counts, dtype=np.float64)
    return float(flags.sum(axis=1) @ counts / (counts.sum() * flags.shape[1]) * 100.0)


# ---- sensitive values: the paper's l-diversity and t-closeness values (section 4.1) ---------

def class_l_diversity(hist: np.ndarray) -> np.ndarray:
    """l_div,T(C) = exp(entropy) per class (Definition 11); rows of ``hist`` are classes' counts."""
    hist = np.atleast_2d(np.asarray(hist, dtype=np.float64))
    sizes = hist.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = hist / sizes[:, None]
        plogp = np.where(hist > 0, p * np.log(np.where(hist > 0, p, 1.0)), 0.0)
    return np.exp(-plogp.sum(axis=1))


def l_diversity_value(hist: np.ndarray) -> float:
    """l_div(T): the least exp(entropy) over classes, each entropy summed exactly
    (``largest_row_sum``): the same bits whatever order the domain's columns come in."""
    hist = np.atleast_2d(np.asarray(hist, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = hist / hist.sum(axis=1)[:, None]
        plogp = np.where(hist > 0, p * np.log(np.where(hist > 0, p, 1.0)), 0.0)
    return float(np.exp(-largest_row_sum(plogp)))  # the least entropy is the largest Σ p log p


def class_l1_closeness(hist: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """t_clo,T(C) = Σ |p_C − p_T| per class (Definitions 12–14): the plain L1 distance, NOT halved —
    twice the equal-distance EMD, in [0, 2]."""
    return _l1_terms(hist, reference).sum(axis=1)


def _l1_terms(hist: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """|p_C − p_T| per class and value: each term a function of its own counts alone."""
    hist = np.atleast_2d(np.asarray(hist, dtype=np.float64))
    ref = np.asarray(reference, dtype=np.float64)
    return np.abs(hist / hist.sum(axis=1)[:, None] - ref / ref.sum())


def l1_closeness_value(hist: np.ndarray, reference: np.ndarray) -> float:
    """t_clo(T): the largest L1 distance of a class's sensitive distribution from the table's, each
    summed exactly (``largest_row_sum``): the report's figure whatever order the engine's domain has."""
    return largest_row_sum(_l1_terms(hist, reference))


def largest_row_sum(terms: np.ndarray) -> float:
    """The largest row sum of ``terms`` (rows × values, finite), each row's sum exactly rounded
    (``math.fsum``), so a function of the row's terms as a multiset: a floating-point sum in the
    columns' order moved in its last digit with that order, and a domain's order is its text's,
    which differs between engines ('1e-07' on DuckDB, '1.0E-7' on Spark). Only the rows whose
    plain sum lies within its rounding error of the largest are summed exactly (a plain sum of
    m terms errs by at most m·2⁻⁵³·Σ|terms|); identical rows once. −inf when there is no row."""
    terms = np.atleast_2d(np.asarray(terms, dtype=np.float64))
    if not terms.shape[0]:
        return float("-inf")
    rough = terms.sum(axis=1)
    slack = np.abs(terms).sum(axis=1) * (terms.shape[1] * 2.0 ** -52)  # twice the bound: generous
    near = terms[rough >= rough.max() - slack - slack.max()]
    if near.shape[0] > 64:  # many tied classes (one distribution over and over): each once
        near = np.unique(near, axis=0)
    return max((math.fsum(row) for row in near.tolist()), default=float(rough.max()))  # NaN: no near row


def l_diversity_value_of_cells(rows: np.ndarray, counts: np.ndarray, classes: int) -> float:
    """``l_diversity_value`` of classes given by their nonzero cells (``rows`` ascending, whole-number
    ``counts``): the same terms (an absent value's is 0), so the same bits, without a row of every
    value per class (190 k values made the report's runs of five classes take minutes)."""
    sizes = np.bincount(rows, weights=counts, minlength=classes)
    p = counts / sizes[rows]
    return float(np.exp(-_largest_cell_sum(rows, p * np.log(p), classes)))


def l1_closeness_value_of_cells(rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, classes: int,
                                reference: np.ndarray) -> float:
    """``l1_closeness_value`` from the classes' cells: an absent value's term is its share r_v of
    ``reference``, so a class's sum is Σ_present (|p − r| − r) + Σ r, summed exactly as the multiset
    of its m terms is (Σ r kept as exact partials), the same bits as the dense rows give."""
    sizes = np.bincount(rows, weights=counts, minlength=classes)
    ref = np.asarray(reference, dtype=np.float64)
    shares = ref / ref.sum()
    present = shares[cols]
    return _largest_cell_sum(rows, np.abs(counts / sizes[rows] - present), classes, -present, _partials(shares))


def _partials(values: np.ndarray) -> list[float]:
    """Floats whose exact sum is the exact sum of finite ``values``, largest first: the sum rounded
    (``math.fsum``, exactly rounded), then what it left out rounded, until nothing is left. Each
    step is one pass in C and shrinks the remainder by 2⁻⁵³ or more, so a few passes suffice
    (the remainder is a multiple of the values' least bit); a Python loop over the values took
    38 ms of CPU a call at 95 k values (docs/performance.md, fifty-third round)."""
    terms = values.tolist()
    partials: list[float] = []
    while (rest := math.fsum(terms)) != 0.0:
        partials.append(rest)
        if not math.isfinite(rest):  # a NaN or infinite value: its sum stands, there is no remainder
            break
        terms.append(-rest)  # the remainder left: the values less every partial so far
    return partials


def _largest_cell_sum(rows: np.ndarray, terms: np.ndarray, classes: int, less: np.ndarray | None = None,
                      plus: list[float] | None = None) -> float:
    """``largest_row_sum`` of classes whose terms are their cells' ``terms`` (and ``less``, and the
    exact ``plus`` every class shares): each near-largest class summed exactly (``math.fsum``)."""
    if not classes:
        return float("-inf")
    extra = np.zeros(len(terms)) if less is None else less
    base = math.fsum(plus) if plus else 0.0
    rough = np.bincount(rows, weights=terms + extra, minlength=classes) + base
    size = np.bincount(rows, weights=np.abs(terms) + np.abs(extra), minlength=classes) + abs(base)
    slack = size * ((len(terms) + len(plus or ()) + 2) * 2.0 ** -52)
    near = np.flatnonzero(rough >= rough.max() - slack - slack.max())
    starts = np.searchsorted(rows, near)
    ends = np.searchsorted(rows, near, side="right")
    exact = [math.fsum([*terms[a:b].tolist(), *extra[a:b].tolist(), *(plus or ())])
             for a, b in zip(starts.tolist(), ends.tolist())]
    return max(exact, default=float(rough.max()))


def node_class_histograms(nodes: np.ndarray, sensitive: np.ndarray, suppressed: np.ndarray | None = None) -> np.ndarray:
    """classes × domain counts of the released classes (distinct node tuples), from per-combination
    generalized nodes and per-combination sensitive counts; suppressed combinations are not released."""
    keep = np.ones(nodes.shape[0], dtype=bool) if suppressed is None else ~np.asarray(suppressed, dtype=bool)
    _, inverse = np.unique(nodes[keep], axis=0, return_inverse=True)
    inverse = inverse.ravel()
    out = np.zeros((int(inverse.max(initial=-1)) + 1, sensitive.shape[1]))
    np.add.at(out, inverse, sensitive[keep])
    return out


# ---- NAUC ----------------------------------------------------------------------------------

def nauc(x: Sequence[float], y: Sequence[float], lo: float | None = None, hi: float | None = None) -> float:
    """Normalized area under a curve (section 3.3.1): its mean value (1/(b−a)) ∫_a^b f on [lo, hi],
    the curve linear between the measured points (trapezoids), interpolated at lo and hi.

    The paper reports it as a percentage: alteration and p_gen/p_root are percentages already;
    for the t-closeness value multiply by 100; for the l-diversity value divide by the table's
    maximum l-diversity value and multiply by 100.
    """
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    order = np.argsort(xs, kind="stable")
    xs, ys = xs[order], ys[order]
    lo = xs[0] if lo is None else float(lo)
    hi = xs[-1] if hi is None else float(hi)
    if not xs[0] <= lo < hi <= xs[-1]:
        raise ValueError(f"NAUC range [{lo:g}, {hi:g}] must lie within the measured points [{xs[0]:g}, {xs[-1]:g}]")
    inside = (xs > lo) & (xs < hi)
    px = np.concatenate([[lo], xs[inside], [hi]])
    py = np.concatenate([[np.interp(lo, xs, ys)], ys[inside], [np.interp(hi, xs, ys)]])
    return float(np.sum((px[1:] - px[:-1]) * (py[1:] + py[:-1]) / 2.0) / (hi - lo))
