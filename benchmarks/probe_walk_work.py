"""Probe: where the walk from above spends its work deciding the lattice under suppression, and
what deferring the nodes likely to satisfy would change.

It walks the full lattice from the top down as ``full_lattice.walk_from_above`` does, without the
walk from below. Each node is judged in numpy from the base histogram: aggregated counts, one fetch,
off the product's path. For each evaluated node it counts the (class, sensitive value) pairs, the
rows a level batch stages and judges, and sorts the nodes by outcome:

- satisfying;
- failing and deciding its cone, because its suppression lower bound is past the limit;
- failing without deciding its cone, split by whether any node below it satisfies.

It then runs the same walk again, this time deferring every node whose parents all satisfy until
its children are decided. A deferred node is then inferred from a satisfying child by the
tainted-class bound (``probe_cap_inference``), or evaluated if that fails. Figures are in
docs/performance.md ("seventeenth round").

    python benchmarks/probe_walk_work.py benchmarks/data/rows_1000000/table.toml --suppression 0.05
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np
from probe_cap_inference import _Classes, prepared_from_arguments

from sqlclose.model.lattice import Node, predecessors
from sqlclose.privacy.criteria import failing_classes, suppression_lower_bound
from sqlclose.search.full_lattice import FullLattice


@dataclass(frozen=True)
class _Facts:
    satisfied: bool
    decides_cone: bool  # its suppression lower bound is past the limit
    pairs: int
    bound: float
    suppressed: float


class _Judged(_Classes):
    """Each evaluated node's facts (kept for the report), and per base row whether its class fails."""

    def __init__(self, problem, criteria) -> None:
        super().__init__(problem, criteria)
        self.limit = problem.max_suppressed
        self.found: dict[Node, _Facts] = {}

    def facts(self, node: Node) -> tuple[_Facts, np.ndarray]:
        """The node's facts, and per base row whether its class fails."""
        inverse, sizes, hist = self.histograms(node)
        failing = failing_classes(hist, self.criteria)
        suppressed = float(sizes[failing].sum())
        bound = float(suppression_lower_bound(hist, 1, self.criteria)[0])
        found = _Facts(suppressed <= self.limit, bound > self.limit + 1e-9 * max(1, self.limit),
                       int(np.count_nonzero(hist.counts[0])), bound, suppressed)
        self.found[node] = found
        return found, failing[inverse]


def _parents(node: Node, shape: tuple[int, ...]) -> list[Node]:
    return [node[:i] + (node[i] + 1,) + node[i + 1:] for i in range(len(node)) if node[i] + 1 < shape[i]]


class _Walk:
    """The walk from above; with ``defer``, nodes whose parents all satisfy wait for their children."""

    def __init__(self, judged: _Judged, shape: tuple[int, ...], defer: bool) -> None:
        self.judged, self.shape, self.defer = judged, shape, defer
        self.lattice = FullLattice(shape)  # the search's own bookkeeping: decided, satisfying
        self.decided, self.satisfying = self.lattice.decided, self.lattice.satisfying
        self.deferred = np.zeros(shape, dtype=bool)
        self.heights = np.indices(shape).sum(axis=0)
        self.evaluated: list[Node] = []
        self.inferred = 0
        self.possibly: dict[Node, np.ndarray] = {}  # satisfying node -> per base row: its class may fail

    def run(self) -> _Walk:
        while (open_ := ~self.decided & ~self.deferred).any():
            top = self.heights[open_].max()
            for row in np.argwhere(open_ & (self.heights == top)):
                node = tuple(int(v) for v in row)
                parents = _parents(node, self.shape)
                if self.defer and parents and all(self.satisfying[p] for p in parents):
                    self.deferred[node] = True
                else:
                    self._evaluate(node)
            self._resolve(lambda node: all(self.decided[c] for c in predecessors(node)))
        self._resolve(lambda node: True)
        return self

    def _resolve(self, ready) -> None:
        """Deferred nodes, bottom-up: inferred from a satisfying child, else evaluated."""
        for row in sorted(np.argwhere(self.deferred), key=lambda r: int(r.sum())):
            node = tuple(int(v) for v in row)
            if self.decided[node]:
                self.deferred[node] = False
            elif ready(node):
                self.deferred[node] = False
                if not self._inferred(node):
                    self._evaluate(node)

    def _evaluate(self, node: Node) -> None:
        facts, failing_rows = self.judged.facts(node)
        self.evaluated.append(node)
        self.decided[node] = True
        if facts.satisfied:
            self.satisfying[node] = True
            self.possibly[node] = failing_rows
        if facts.decides_cone:
            self.lattice.fail_below(node)

    def _inferred(self, node: Node) -> bool:
        inverse, sizes, _ = self.judged.histograms(node)
        best = None
        for child in predecessors(node):
            if child in self.possibly:
                tainted = np.zeros(len(sizes), dtype=bool)
                tainted[inverse[self.possibly[child]]] = True
                bound = float(sizes[tainted].sum())
                if bound <= self.judged.limit and (best is None or bound < best[0]):
                    best = (bound, tainted)
        if best is None:
            return False
        self.decided[node] = self.satisfying[node] = True
        self.possibly[node] = best[1][inverse]
        self.inferred += 1
        return True


def _work(walk: _Walk) -> dict:
    """Evaluations and pairs by outcome, and how far the bound of the nodes that do not decide
    their cone is from the limit."""
    facts = walk.judged.found
    groups: dict[str, list[Node]] = {"satisfying": [], "failing, decides its cone": [],
                                     "failing, open cone, a node below satisfies": [],
                                     "failing, open cone, nothing below satisfies": []}
    for node in walk.evaluated:
        f = facts[node]
        if f.satisfied:
            groups["satisfying"].append(node)
        elif f.decides_cone:
            groups["failing, decides its cone"].append(node)
        elif walk.satisfying[tuple(slice(0, level + 1) for level in node)].any():
            groups["failing, open cone, a node below satisfies"].append(node)
        else:
            groups["failing, open cone, nothing below satisfies"].append(node)
    out = {name: {"nodes": len(nodes), "pairs": sum(facts[n].pairs for n in nodes)} for name, nodes in groups.items()}
    open_cone = [facts[n] for name, nodes in groups.items() if "open cone" in name for n in nodes]
    if open_cone:
        limit = walk.judged.limit
        out["open cone: bound / limit, quartiles"] = np.quantile([f.bound / limit for f in open_cone],
                                                                 [0.25, 0.5, 0.75]).round(2).tolist()
        out["open cone: suppressed / limit, quartiles"] = np.quantile([f.suppressed / limit for f in open_cone],
                                                                      [0.25, 0.5, 0.75]).round(2).tolist()
    return out


def main() -> None:
    problem, criteria = prepared_from_arguments(__doc__.split("\n\n")[0])
    judged = _Judged(problem, criteria)
    shape = tuple(qi.levels for qi in problem.qis)
    for defer in (False, True):
        started = time.perf_counter()
        walk = _Walk(judged, shape, defer).run()
        print(json.dumps({"defer": defer, "lattice": int(np.prod(shape)), "limit": judged.limit,
                          "evaluated": len(walk.evaluated), "inferred": walk.inferred,
                          "pairs": sum(judged.found[n].pairs for n in walk.evaluated),
                          "satisfying": int(walk.satisfying.sum()), "by outcome": _work(walk),
                          "probe_seconds": round(time.perf_counter() - started, 1)}), flush=True)


if __name__ == "__main__":
    main()
