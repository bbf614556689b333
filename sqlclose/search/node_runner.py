"""One query per node, one column per code: the path for single nodes (the release's) and for
problems whose single QI digit does not fit a 62-bit key (``packing``: wider problems spread
their digits over several BIGINT key words and keep the level batches)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sqlclose.model.classes import ClassHistograms, class_histograms
from sqlclose.model.lattice import Node, predecessors
from sqlclose.prepare.problem import Problem
from sqlclose.search.items import Item, Subset, no_classes
from sqlclose.sql import queries as q


@dataclass
class NodeRunner:
    """One query per node, one column per code: for single nodes and unpackable key spaces."""

    problem: Problem
    queries: int = 0
    nodes_computed: int = 0
    rows_read: int = 0
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
            return no_classes(0, [len(s.domain) for s in self.problem.sas])
        widths = {p.codes.shape[1] for p in parts}  # one subset size per level: the codes stack
        codes = np.concatenate([p.codes for p in parts]) if len(widths) == 1 else \
            np.zeros((sum(p.classes for p in parts), 0), dtype=np.int64)
        return ClassHistograms(
            codes, np.concatenate([p.sizes for p in parts]),
            [np.concatenate([p.counts[j] for p in parts]) for j in range(len(self.problem.sas))],
            np.concatenate([np.full(p.classes, n, dtype=np.int64) for n, p in enumerate(parts)]))

    def planned_rows(self, items: Sequence[Item]) -> int:
        """What a batch of ``items`` would read (as ``BatchRunner.planned_rows``): each a computed
        parent's rows, or the base's."""
        return sum(self._source(subset, node)[0] for subset, node in items)

    def _source(self, subset: Subset, node: Node) -> tuple[int, Node | None]:
        """The rows a node reads and the cached parent it reads them from: the smallest, or the base (None)."""
        parents = [(self._cache[subset, p][1], p) for p in predecessors(node) if (subset, p) in self._cache]
        return min(parents) if parents else (self.problem.base_rows, None)

    def histograms(self, subset: Subset, node: Node, keep: bool = True,
                   cells_past: int | None = None) -> ClassHistograms:
        """Class histograms of one node; ``keys`` holds the codes of the subset's QIs; ``cells_past``:
        as ``class_histograms`` (not for a level's nodes: they are stacked dense), its rows then
        sorted by the engine, so that Python need not sort them."""
        read, parent = self._source(subset, node)
        if parent is not None:
            source, from_levels = q.table(self._cache[subset, parent][0]), parent
        else:
            source, from_levels = self.problem.base_at(dict(zip(subset, node))), tuple(0 for _ in node)
        self.rows_read += read
        groups = []
        for i, level, from_level in zip(subset, node, from_levels):
            qi = self.problem.qis[i]
            divisors = qi.hierarchy.divisors
            top = level == qi.levels - 1
            groups.append((qi.coded.code, None if top else divisors[level] // divisors[from_level]))
        sas = self.problem.sas
        result = self.problem.engine.fetch(q.node_histogram(source, groups, [s.coded.code for s in sas],
                                                            ordered=cells_past is not None), owned=True)
        self.queries += 1
        self.nodes_computed += 1
        if keep:
            name = self.problem.engine.temp_name("node")
            self.problem.engine.register(name, result)
            self._cache[subset, node] = (name, result.num_rows)
        if cells_past is not None:  # the release's node: the sort's pages back before its arrays are made
            self.problem.engine.release_cached_memory()
        qi_codes = [self.problem.qis[i].coded.code for i in subset]
        return class_histograms(result, qi_codes, [s.coded.code for s in sas], [len(s.domain) for s in sas],
                                cells_past)

    def release_cache(self) -> None:
        for name, _ in self._cache.values():
            self.problem.engine.unregister(name)
        self._cache.clear()

    close = release_cache
