"""Incognito (LeFevre, DeWitt, Ramakrishnan 2005) as Li et al. use it, exact under suppression.

For i = 1..n it searches the lattices of all i-QI subsets bottom-up. A node whose every
(i-1)-subset projection satisfied is a candidate (subset property, a-priori pruning); a
candidate above a satisfying node satisfies without a query (generalization property).

Only *inferable* criteria prune: monotone ones without suppression, monotone-with-suppression
ones (k-anonymity) with it. With suppression, or any non-inferable criterion, the full-QI
lattice is checked node by node on every candidate — the satisfying set is then not upward
closed, and a more general node can lose less, so the optimum is the best of all satisfying
nodes, not only of the minimal ones.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from ..lattice import Node, height, lift, minimal, nodes, nodes_by_height_groups
from ..nodes import Subset, runner_for
from ..privacy import Criterion, judge_batch
from ..problem import Problem


@dataclass(frozen=True)
class Evaluated:
    """A full-QI node that was queried."""

    node: Node
    satisfied: bool
    classes: int
    suppressed: int
    discernibility: int


@dataclass
class SearchResult:
    shape: tuple[int, ...]  # levels per QI
    satisfying: np.ndarray  # bool over the full lattice
    evaluated: dict[Node, Evaluated]
    nodes_evaluated: int  # nodes whose class histograms were computed, over all subset lattices
    seconds: float
    queries: int = 0  # engine queries that computed them (one per lattice level and batch)
    optimum: Node | None = None
    minimal_nodes: list[Node] = field(default_factory=list)

    @property
    def lattice_size(self) -> int:
        return int(np.prod(self.shape))


def incognito(problem: Problem, criteria: Sequence[Criterion], on_progress=None) -> SearchResult:
    """All satisfying full-QI nodes, the minimal ones, and the optimum by discernibility."""
    started = time.perf_counter()
    runner = runner_for(problem)
    limit = problem.max_suppressed
    inferable = [c for c in criteria if (c.monotone_with_suppression if limit else c.monotone)]
    exact_inference = len(inferable) == len(criteria)
    n = len(problem.qis)
    shape_of = {s: tuple(problem.qis[i].levels for i in s) for s in _all_subsets(n)}

    passed: dict[Subset, np.ndarray] = {}
    if inferable:  # subset phases prune only through inferable criteria
        for size in range(1, n):
            for subset in combinations(range(n), size):
                cand = _candidates(subset, shape_of[subset], passed)
                passed[subset] = _explore(runner, subset, cand, inferable, problem.rows, limit, infer=True)
                if on_progress:
                    on_progress(runner.nodes_computed)
    full = tuple(range(n))
    cand = _candidates(full, shape_of[full], passed) if inferable else np.ones(shape_of[full], dtype=bool)
    evaluated: dict[Node, Evaluated] = {}
    # Without suppression and with only monotone criteria, a satisfying node's generalizations
    # satisfy unseen; otherwise every candidate is checked.
    infer = exact_inference and not limit
    satisfying = _explore(runner, full, cand, criteria, problem.rows, limit, infer=infer, record=evaluated)
    runner.close()

    result = SearchResult(shape_of[full], satisfying, evaluated, runner.nodes_computed, 0.0, queries=runner.queries)
    result.minimal_nodes = nodes(minimal(satisfying))
    pool = result.minimal_nodes if infer else nodes(satisfying)
    if pool:
        result.optimum = min(pool, key=lambda nd: (evaluated[nd].discernibility, height(nd), nd))
    result.seconds = time.perf_counter() - started
    return result


def _all_subsets(n: int) -> list[Subset]:
    return [s for size in range(1, n + 1) for s in combinations(range(n), size)]


def _candidates(subset: Subset, shape: tuple[int, ...], passed: dict[Subset, np.ndarray]) -> np.ndarray:
    """Nodes whose every one-smaller projection satisfied (all nodes for single QIs)."""
    cand = np.ones(shape, dtype=bool)
    if len(subset) == 1:
        return cand
    for axis in range(len(subset)):
        smaller = subset[:axis] + subset[axis + 1:]
        cand &= lift(passed[smaller], axis, shape[axis])
    return cand


def _explore(runner, subset: Subset, cand: np.ndarray, criteria: Sequence[Criterion], rows: int, limit: int,
             infer: bool, record: dict[Node, Evaluated] | None = None) -> np.ndarray:
    """Bottom-up over one subset lattice, a height at a time (one batch of queries per height).

    With ``infer``, a satisfying node marks all its generalizations, which are then not queried.
    Returns the satisfying nodes.
    """
    runner.start_subset(subset)
    satisfying = np.zeros(cand.shape, dtype=bool)
    for level_nodes in nodes_by_height_groups(cand.shape):
        todo = [nd for nd in level_nodes if cand[nd] and not (infer and satisfying[nd])]
        outcome = judge_batch(runner.level(todo), len(todo), criteria, rows, limit)
        for n, node in enumerate(todo):
            if record is not None:
                record[node] = Evaluated(node, bool(outcome.satisfied[n]), int(outcome.classes[n]),
                                         int(outcome.suppressed[n]), int(outcome.discernibility[n]))
            if outcome.satisfied[n]:
                if infer:
                    satisfying[tuple(slice(level, None) for level in node)] = True
                else:
                    satisfying[node] = True
    return satisfying
