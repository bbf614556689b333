"""Incognito (LeFevre, DeWitt, Ramakrishnan 2005) as Li et al. use it, exact under suppression.

For i = 1..n it searches the lattices of all i-QI subsets bottom-up. A node whose every
(i-1)-subset projection satisfied is a candidate (subset property, a-priori pruning); a
candidate above a satisfying node satisfies without a query (generalization property).

Pruning needs a monotone criterion. Without suppression the criteria themselves are (k-anonymity;
t-closeness by Li et al.'s Fact 2). With suppression t-closeness is not — a passing class merged
into a failing one can fail and take more rows with it — so the subset phases prune on a
monotone *necessary* condition instead: the suppression lower bound of ``privacy`` (records any
specialization must suppress) stays within the limit. The full-QI lattice is then checked node
by node on every candidate, and the optimum is the best of all satisfying nodes (a more general
node can suppress less), not only of the minimal ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from itertools import combinations

import numpy as np

from sqlclose.model.lattice import Node, by_height, height, lift, minimal, node_list
from sqlclose.prepare.problem import Problem
from sqlclose.privacy.criteria import (
    BatchOutcome,
    Criterion,
    KAnonymity,
    drop_classes_below,
    failing_classes,
    judge_batch,
    k_of,
    suppression_lower_bound,
)
from sqlclose.search.node_histograms import BatchRunner, Subset, level_parts, runner_for
from sqlclose.utility.full_domain import FullDomainCost

TIE = 1e-9  # relative: metric costs this close count as equal (float sums of edge weights)


@dataclass(frozen=True)
class Evaluated:
    """A full-QI node that was queried. For a node whose classes below k alone exceed the
    suppression limit, the SQL path does not fetch its other classes: it fails, and ``classes``
    and ``discernibility`` count only what was judged (it is never the optimum)."""

    node: Node
    satisfied: bool
    classes: int
    suppressed: int
    discernibility: int
    cost: float | None = None  # the search metric's table cost, when it is not discernibility


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


@dataclass(frozen=True)
class SearchProgress:
    """Where a search is: reported after each lattice height (the library only reports; the
    command draws)."""

    subset_size: int  # QIs in the subsets being walked (the full set last)
    qis: int
    evaluated: int  # nodes whose class histograms were computed so far, all subsets
    candidates: int  # candidate nodes at this subset size
    elapsed: float


ProgressCallback = Callable[[SearchProgress], None]


def incognito(problem: Problem, criteria: Sequence[Criterion],
              on_progress: ProgressCallback | None = None, cost: FullDomainCost | None = None) -> SearchResult:
    """All satisfying full-QI nodes, the minimal ones, and the optimum: the least discernibility,
    or the least ``cost`` (one of Mauger et al.'s metrics) when given. Ties (costs within a
    relative 1e-9) go to the lower node, then the lexicographically smaller level tuple."""
    started = time.perf_counter()
    runner = runner_for(problem)
    trim = _trim_for(runner, criteria, cost)

    def report(size: int, cands: dict[Subset, np.ndarray]) -> Callable[[], None]:
        total = sum(int(c.sum()) for c in cands.values())
        return lambda: on_progress and on_progress(SearchProgress(
            size, n, runner.nodes_computed, total, time.perf_counter() - started))
    limit = problem.max_suppressed
    rows = problem.rows
    n = len(problem.qis)
    shape_of = {s: tuple(problem.qis[i].levels for i in s) for s in _all_subsets(n)}

    if limit:
        def prune(hist, nodes):
            bound = suppression_lower_bound(trim(hist, len(nodes)), len(nodes), criteria)
            return bound <= limit, None, None
        can_prune, infer = True, False
    else:
        monotone = [c for c in criteria if c.monotone]

        def prune(hist, nodes):
            return judge_batch(trim(hist, len(nodes)), len(nodes), monotone, rows, limit).satisfied, None, None
        can_prune, infer = bool(monotone), len(monotone) == len(criteria)

    def check(hist, nodes):
        hist = trim(hist, len(nodes))
        failing = failing_classes(hist, criteria)
        outcome = judge_batch(hist, len(nodes), criteria, rows, limit, failing)
        costs = None
        if cost is not None and nodes:
            costs = cost.costs(np.array(nodes), hist.node, hist.codes, hist.sizes * failing)
        return outcome.satisfied, outcome, costs

    passed: dict[Subset, np.ndarray] = {}
    if can_prune:
        for size in range(1, n):  # all subsets of one size walk their lattices together
            cands = {s: _candidates(s, shape_of[s], passed) for s in combinations(range(n), size)}
            passed.update(_explore(runner, cands, prune, infer=True, progress=report(size, cands)))
    full = tuple(range(n))
    cand = _candidates(full, shape_of[full], passed) if can_prune else np.ones(shape_of[full], dtype=bool)
    evaluated: dict[Node, Evaluated] = {}
    # With suppression, a node whose classes all pass needs no suppression; if the criteria are
    # monotone without suppression, so do its generalizations — and they cannot beat it (their
    # discernibility is Σ size², which only grows, and ties go to the lower node). They are
    # marked satisfying without a query.
    skip_above_perfect = not infer and all(c.monotone for c in criteria)
    satisfying = _explore(runner, {full: cand}, check, infer=infer, record=evaluated,
                          skip_above_perfect=skip_above_perfect, progress=report(n, {full: cand}))[full]
    runner.close()

    result = SearchResult(shape_of[full], satisfying, evaluated, runner.nodes_computed, 0.0, queries=runner.queries)
    result.minimal_nodes = node_list(minimal(satisfying))
    # Nodes inferred above a perfect node were not queried and cannot be the optimum.
    pool = result.minimal_nodes if infer else [nd for nd in node_list(satisfying) if nd in evaluated]
    if pool:
        result.optimum = best_node(pool, evaluated, cost is not None)
    result.seconds = time.perf_counter() - started
    return result


def _trim_for(runner, criteria: Sequence[Criterion], cost: FullDomainCost | None) -> Callable:
    """How a level's classes below k are left out before judging (they fail k whatever else
    holds, so no other criterion need be computed on them): engine-side by the SQL level batches,
    in numpy otherwise when other criteria would be computed. Not under a metric other than
    discernibility, whose suppression cost reads every suppressed class's codes."""
    k = k_of(criteria) if cost is None else 1
    if isinstance(runner, BatchRunner):
        runner.drop_below = k
    if k <= 1 or all(isinstance(c, KAnonymity) for c in criteria):
        return lambda hist, nodes: hist
    return lambda hist, nodes: drop_classes_below(hist, k, nodes)


def best_node(pool: Sequence[Node], evaluated: dict[Node, Evaluated], by_cost: bool) -> Node:
    """The least discernibility (exact integers) or the least metric cost (equal within a relative
    1e-9: float sums of edge weights), then the lower node, then the smaller level tuple."""
    if not by_cost:
        return min(pool, key=lambda nd: (evaluated[nd].discernibility, height(nd), nd))
    least = min(evaluated[nd].cost for nd in pool)
    tied = [nd for nd in pool if evaluated[nd].cost <= least + TIE * max(1.0, abs(least))]
    return min(tied, key=lambda nd: (height(nd), nd))


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


def _explore(runner, cands: dict[Subset, np.ndarray], judge, infer: bool,
             record: dict[Node, Evaluated] | None = None,
             skip_above_perfect: bool = False, progress: Callable[[], None] = lambda: None) -> dict[Subset, np.ndarray]:
    """Bottom-up over the lattices of ``cands``' subsets together, one height at a time (one
    batch of queries per height for all of them).

    ``judge(histograms, nodes)`` returns (satisfied per node, BatchOutcome or None, metric cost
    per node or None). With
    ``infer``, a satisfying node marks all its generalizations, which are then not queried; with
    ``skip_above_perfect``, only a node that suppresses nothing does. Returns the satisfying
    nodes of each subset.
    """
    runner.start()
    satisfying = {s: np.zeros(c.shape, dtype=bool) for s, c in cands.items()}
    inferred = {s: np.zeros(c.shape, dtype=bool) for s, c in cands.items()}
    groups = {s: by_height(c) for s, c in cands.items()}  # candidates only: Incognito never asks of others
    for h in range(max(len(g) for g in groups.values())):
        todo = [(s, nd) for s, g in groups.items() if h < len(g) for nd in g[h]
                if not inferred[s][nd]]
        nodes = [nd for _, nd in todo]
        satisfied, outcome, costs = _joined([judge(part.hist, nodes[part.start:part.stop])
                                             for part in level_parts(runner, todo)])
        for n, (s, node) in enumerate(todo):
            if outcome is not None and record is not None:
                record[node] = Evaluated(node, bool(outcome.satisfied[n]), int(outcome.classes[n]),
                                         int(outcome.suppressed[n]), int(outcome.discernibility[n]),
                                         None if costs is None else float(costs[n]))
            if satisfied[n]:
                satisfying[s][node] = True
                if infer or (skip_above_perfect and outcome.suppressed[n] == 0):
                    above = tuple(slice(level, None) for level in node)
                    satisfying[s][above] = True
                    inferred[s][above] = True
        progress()
    return satisfying


def _joined(parts: list[tuple]) -> tuple:
    """(satisfied, outcome, costs) of a level judged in parts of consecutive nodes, as one."""
    if len(parts) == 1:
        return parts[0]
    satisfied = np.concatenate([p[0] for p in parts])
    outcome = None if parts[0][1] is None else BatchOutcome(
        *(np.concatenate([getattr(p[1], f.name) for p in parts]) for f in fields(BatchOutcome)))
    costs = None if parts[0][2] is None else np.concatenate([p[2] for p in parts])
    return satisfied, outcome, costs
