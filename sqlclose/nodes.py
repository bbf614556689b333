"""Computes class histograms of lattice nodes, a whole lattice level per query.

Incognito visits a lattice bottom-up by height, and every node it must check at height h has
its finer neighbours at height h-1 already computed. So the runner keeps the previous level's
results (node, packed key, count) registered with the engine and computes every node of the
next level in one query, each rolled up from its smallest computed parent (Incognito's rollup:
a coarser node's classes are unions of a finer node's). Nodes with no computed parent are
grouped from the base histogram, also in one query. One query per level instead of one per
node: the engine's fixed cost per query (parse, plan, bind; ~1 ms) was the search's bottleneck.

``NodeRunner`` is the one-node-at-a-time path with one column per code: it serves single nodes
(the release) and problems whose keys do not fit in 64 bits (see ``packing``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from . import queries as q
from .classes import ClassHistograms, class_histograms, tally
from .lattice import Node, predecessors
from .packing import Packing
from .problem import Problem

Subset = tuple[int, ...]
ROWS_PER_QUERY = 4_000_000  # input rows one batch query may expand to (bounds its memory)


Item = tuple[Subset, Node]  # a node of one QI subset's lattice


@dataclass
class BatchRunner:
    """Class histograms for batches of lattice nodes — of one or many QI subsets at once."""

    problem: Problem
    packing: Packing
    queries: int = 0
    nodes_computed: int = 0
    _ids: dict[Item, int] = field(default_factory=dict)  # items of the previous level -> id
    _rows: dict[Item, int] = field(default_factory=dict)  # … -> rows in their histograms
    _prev: str | None = None
    _names: dict[str, str] = field(default_factory=dict)
    _sql: dict[str, str] = field(default_factory=dict)

    def _name(self, role: str) -> str:
        """One registered name per role, re-registered each time: each query's SQL text is
        rendered by sqlglot once per run and then reused."""
        if role not in self._names:
            self._names[role] = self.problem.engine.temp_name(role)
        return self._names[role]

    def start(self) -> None:
        """Forget the previous level (a new lattice walk begins)."""
        self.release_cache()

    def level(self, items: Sequence[Item]) -> ClassHistograms:
        """Class histograms of ``items`` (nodes of one height, of any subsets), stacked;
        ``.node`` indexes ``items``. Computed in as few queries as fit the row budget."""
        if not items:
            self.release_cache()  # the next level's parents would not be at this height
            return _empty(len(self.problem.qis), [len(s.domain) for s in self.problem.sas])
        ids = {item: n for n, item in enumerate(items)}
        rollups, bases = self._plan(items, ids)
        rollup_columns = ["node", "parent", "stride", "card", "ratio"]
        base_columns = ["node", *(f"d{i}" for i in range(len(self.problem.qis)))]
        jobs = [(chunk, rollup_columns, "rollup") for chunk in _chunks(rollups, ROWS_PER_QUERY)]
        jobs += [(chunk, base_columns, "base") for chunk in _chunks(bases, ROWS_PER_QUERY)]
        if len(jobs) == 1:  # the usual case: the engine keeps the result itself (no round trip)
            result = self._run(*jobs[0], keep=True)
        else:
            result = pa.concat_tables([self._run(*job) for job in jobs])
            self.problem.engine.register(self._name("level"), result)
        self.nodes_computed += len(items)
        self._keep(result, ids)
        return self._stack(result)

    # ---- planning -------------------------------------------------------------------------
    def _plan(self, items: Sequence[Item], ids: dict[Item, int]) -> tuple[list, list]:
        rollups, bases = [], []
        for subset, node in items:
            parents = [p for p in predecessors(node) if (subset, p) in self._ids]
            if parents:
                parent = min(parents, key=lambda p: (self._rows[subset, p], p))
                axis = next(a for a in range(len(node)) if node[a] != parent[a])
                i = subset[axis]
                div = self.problem.qis[i].hierarchy.divisors
                row = (ids[subset, node], self._ids[subset, parent], self.packing.qi_stride[i],
                       self.packing.qi_card[i], div[node[axis]] // div[parent[axis]])
                rollups.append((self._rows[subset, parent], row))
            else:
                # A QI outside the subset is divided by its code range: its digit becomes 0.
                levels = dict(zip(subset, node))
                divisors = [qi.hierarchy.divisors[levels[i]] if i in levels else self.packing.qi_card[i]
                            for i, qi in enumerate(self.problem.qis)]
                bases.append((self.problem.base_rows, (ids[subset, node], *divisors)))
        return rollups, bases

    def _run(self, plan_rows: list[tuple], names: list[str], kind: str, keep: bool = False) -> pa.Table:
        """One batch query; ``keep``: its result also becomes the registered level table."""
        columns = list(zip(*plan_rows))
        plan = self._name("plan")
        self.problem.engine.register(plan, pa.table({n: pa.array(c, pa.int64()) for n, c in zip(names, columns)}))
        if kind not in self._sql:
            query = q.rollup_batch(q.table(self._name("level")), q.table(plan)) if kind == "rollup" else \
                q.base_batch(self.problem.base, q.table(plan), self.problem, self.packing)
            self._sql[kind] = self.problem.engine.render(query)
        self.queries += 1
        if keep:
            return self.problem.engine.fetch_and_keep(self._name("level"), self._sql[kind])
        return self.problem.engine.fetch(self._sql[kind])

    # ---- results --------------------------------------------------------------------------
    def _keep(self, result: pa.Table, ids: dict[Item, int]) -> None:
        """The new level (already registered as the level table) becomes the parents of the next."""
        self._prev = self._name("level")
        counts = np.bincount(result.column("node").to_numpy(), minlength=len(ids))
        self._ids = ids
        self._rows = {item: int(counts[i]) for item, i in ids.items()}

    def _stack(self, result: pa.Table) -> ClassHistograms:
        """Rows (node, packed key, n) → the classes of all nodes, numbered node by node."""
        span = self.packing.sa_span
        node = result.column("node").to_numpy()
        keys = result.column("key").to_numpy()
        counts = result.column("n").to_numpy()
        cls = keys // span
        class_span = int(cls.max()) + 1 if len(cls) else 1
        if class_span * (int(node.max()) + 1 if len(node) else 1) < 2**62:
            order = np.argsort(node * class_span + cls)  # one int64 sort: ~2× a two-key lexsort
        else:
            order = np.lexsort((cls, node))
        node, cls, keys, counts = node[order], cls[order], keys[order], counts[order]
        starts = np.empty(len(node), dtype=bool)
        starts[:1] = True
        starts[1:] = (node[1:] != node[:-1]) | (cls[1:] != cls[:-1])
        inverse = np.cumsum(starts) - 1
        first = np.flatnonzero(starts)
        sa = [self.packing.unpack_sa(keys, j) for j in range(len(self.packing.sa_card))]
        sizes, matrices = tally(inverse, len(first), counts, sa, self.packing.sa_card)
        codes = np.column_stack([self.packing.unpack_qi(cls[first], i) for i in range(len(self.problem.qis))])
        return ClassHistograms(codes, sizes, matrices, node[first])

    def release_cache(self) -> None:
        if self._prev is not None:
            self.problem.engine.unregister(self._prev)
        self._prev, self._ids, self._rows = None, {}, {}

    def close(self) -> None:
        self.release_cache()
        for name in self._names.values():
            self.problem.engine.unregister(name)  # idempotent: the level table may be gone already
        self._names.clear()


def _empty(qis: int, domain_sizes: Sequence[int]) -> ClassHistograms:
    return ClassHistograms(np.zeros((0, qis), dtype=np.int64), np.zeros(0, dtype=np.int64),
                           [np.zeros((0, m)) for m in domain_sizes], np.zeros(0, dtype=np.int64))


def _chunks(plan: list[tuple[int, tuple]], budget: int) -> list[list[tuple]]:
    """Split (estimated input rows, plan row) pairs into batches of at most ``budget`` rows."""
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


@dataclass
class NodeRunner:
    """One query per node, one column per code: for single nodes and unpackable key spaces."""

    problem: Problem
    queries: int = 0
    nodes_computed: int = 0
    _cache: dict[Item, tuple[str, int]] = field(default_factory=dict)

    def start(self) -> None:
        self.release_cache()

    def level(self, items: Sequence[Item]) -> ClassHistograms:
        parts = [self.histograms(subset, node) for subset, node in items]
        # Parents of the next level are this level's nodes; older results are no longer needed.
        current = set(items)
        for item in [i for i in self._cache if i not in current]:
            self.problem.engine.unregister(self._cache.pop(item)[0])
        if not parts:
            return _empty(0, [len(s.domain) for s in self.problem.sas])
        return ClassHistograms(
            np.zeros((sum(p.classes for p in parts), 0), dtype=np.int64), np.concatenate([p.sizes for p in parts]),
            [np.concatenate([p.counts[j] for p in parts]) for j in range(len(self.problem.sas))],
            np.concatenate([np.full(p.classes, n, dtype=np.int64) for n, p in enumerate(parts)]))

    def histograms(self, subset: Subset, node: Node, keep: bool = True) -> ClassHistograms:
        """Class histograms of one node; ``keys`` holds the codes of the subset's QIs."""
        parents = [(self._cache[subset, p][1], p) for p in predecessors(node) if (subset, p) in self._cache]
        if parents:
            parent = min(parents)[1]
            source, from_levels = q.table(self._cache[subset, parent][0]), parent
        else:
            source, from_levels = self.problem.base.copy(), tuple(0 for _ in node)
        groups = []
        for i, level, from_level in zip(subset, node, from_levels):
            divisors = self.problem.qis[i].hierarchy.divisors
            groups.append((self.problem.qis[i].coded.code, divisors[level] // divisors[from_level]))
        sas = self.problem.sas
        result = self.problem.engine.fetch(q.node_histogram(source, groups, [s.coded.code for s in sas]))
        self.queries += 1
        self.nodes_computed += 1
        if keep:
            name = self.problem.engine.temp_name("node")
            self.problem.engine.register(name, result)
            self._cache[subset, node] = (name, result.num_rows)
        qi_codes = [self.problem.qis[i].coded.code for i in subset]
        return class_histograms(result, qi_codes, [s.coded.code for s in sas], [len(s.domain) for s in sas])

    def release_cache(self) -> None:
        for name, _ in self._cache.values():
            self.problem.engine.unregister(name)
        self._cache.clear()

    close = release_cache


def runner_for(problem: Problem) -> BatchRunner | NodeRunner:
    """Level batches when keys pack into 64 bits; otherwise one query per node."""
    packing = Packing.for_problem(problem)
    return BatchRunner(problem, packing) if packing is not None else NodeRunner(problem)
