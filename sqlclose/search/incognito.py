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

The full lattice is also walked from the top down at the same time (``full_lattice``): a node
that fails the monotone condition decides everything below it. On real data the releasable region
is a small cap of the lattice, and that walk decides it with a tenth of the nodes Incognito computes;
on data where nearly everything satisfies, Incognito's walk ends first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from itertools import combinations

import numpy as np

from sqlclose.model.lattice import Node, by_height, height, lift, minimal, node_list, node_tuples
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
from sqlclose.search.batch_runner import BatchRunner
from sqlclose.search.evaluated import Evaluated, EvaluatedNodes
from sqlclose.search.full_lattice import FullLattice, walk_from_above
from sqlclose.search.items import LevelPart, Subset
from sqlclose.search.lattice_memory import FLOOR_BLOCK, refuse_too_large_lattice
from sqlclose.search.runners import level_parts, runner_for, second_runner
from sqlclose.utility.full_domain import FullDomainCost

TIE = 1e-9  # relative: metric costs this close count as equal (float sums of edge weights)


@dataclass
class SearchResult:
    shape: tuple[int, ...]  # levels per QI
    satisfying: np.ndarray  # bool over the full lattice
    evaluated: EvaluatedNodes  # a mapping from node to its Evaluated outcome
    nodes_evaluated: int  # nodes whose class histograms were computed, over all subset lattices
    seconds: float
    queries: int = 0  # engine queries that computed them (one per lattice level and batch)
    optimum: Node | None = None
    # Every minimal satisfying node; None when the search explored for the optimum alone (an empty
    # list would say that no node satisfies).
    minimal_nodes: list[Node] | None = field(default_factory=list)
    searched: bool = True  # False: no search ran, the node was given (``unsearched``)

    @classmethod
    def unsearched(cls, shape: tuple[int, ...]) -> SearchResult:
        """A lattice nothing was decided in: the release of a given node measured alone, without
        the search (``--node``; the lattice's arrays are zeros no page of which is written)."""
        return cls(shape, np.zeros(shape, dtype=bool), EvaluatedNodes(shape), 0, 0.0, minimal_nodes=None,
                   searched=False)

    @property
    def complete(self) -> bool:
        """Every node decided, so ``satisfying`` and ``minimal_nodes`` are exact; False when the
        search explored for the optimum alone and left nodes that could not be it undecided."""
        return self.minimal_nodes is not None

    @property
    def lattice_size(self) -> int:
        return int(np.prod(self.shape))


@dataclass(frozen=True)
class SearchProgress:
    """Where a search is: reported after each lattice height (the library only reports; the
    command draws)."""

    subset_size: int  # QIs in the subsets the walk from below is at (the full set last)
    qis: int
    evaluated: int  # nodes whose class histograms were computed so far, all subsets, both walks
    candidates: int  # candidate nodes at this subset size
    elapsed: float
    decided: int = 0  # nodes of the full lattice decided so far (by either walk)
    lattice: int = 0  # nodes of the full lattice


ProgressCallback = Callable[[SearchProgress], None]


def incognito(problem: Problem, criteria: Sequence[Criterion],
              on_progress: ProgressCallback | None = None, cost: FullDomainCost | None = None,
              explore: str = "lattice") -> SearchResult:
    """All satisfying full-QI nodes, the minimal ones, and the optimum: the least discernibility,
    or the least ``cost`` (one of Mauger et al.'s metrics) when given. Ties (costs within a
    relative 1e-9) go to the lower node, then the lexicographically smaller level tuple.

    ``explore = "optimum"``: the optimum alone. With discernibility, nodes that cannot be it — by
    the records they must suppress (``_Judge.within``) or the classes they can have
    (``_floor_blocks``) — are decided without evaluation; the result is then not ``complete``.

    The full lattice is decided from both ends: Incognito from below, and a walk from the top
    down (``full_lattice.walk_from_above``), interleaved so that the walk from below reads at most
    ``BELOW_SHARE`` of the rows the walk from above has read; whichever decides the last node ends
    the search. The answer does not depend on which: both are exact."""
    started = time.perf_counter()
    refuse_too_large_lattice([qi.levels for qi in problem.qis], problem.engine.memory_budget)
    below = runner_for(problem)
    above = second_runner(below)
    judge = _Judge(problem, criteria, cost, _trim_for(below, criteria, cost), explore == "optimum")
    _trim_for(above, criteria, cost)
    for runner in (below, above):
        if isinstance(runner, BatchRunner):
            runner.read_within = judge.within  # the limit, or less when exploring for the optimum
    if isinstance(above, BatchRunner):
        above.levels_are_parents = False  # its levels are judged and dropped: large ones in chunks
    n = len(problem.qis)
    lattice = FullLattice(tuple(qi.levels for qi in problem.qis))
    where = {"size": 1, "candidates": 0}

    def report() -> None:
        if on_progress:
            on_progress(SearchProgress(where["size"], n, below.nodes_computed + above.nodes_computed,
                                       where["candidates"], time.perf_counter() - started,
                                       lattice.decided_count(), lattice.size))

    labels = _labels_per_level(problem) if judge.bounded else None
    ruled_out_above: int | None = None  # the best the lattice was last pruned by

    def record(nodes: list[Node], satisfied: np.ndarray, outcome, costs) -> None:
        nonlocal ruled_out_above
        lattice.record(nodes, satisfied, outcome, costs)
        if labels is not None and judge.best is not None and judge.best != ruled_out_above:
            # what cannot cost less than a node found is out
            _rule_out_by_least_discernibility(lattice, labels, problem.rows, judge.best * (1 + TIE))
            ruled_out_above = judge.best

    def evaluate_from_above(nodes: list[Node]) -> np.ndarray:
        parts = _judged(level_parts(above, [(tuple(range(n)), node) for node in nodes]), judge.from_above, nodes)
        above.release_cache()  # nothing rolls up from above: a coarser node never yields a finer one
        record(nodes, *_joined([p[:3] for p in parts]))
        report()
        return np.concatenate([p[3] for p in parts])

    try:
        above.start()
        _both_ends(_from_below(below, judge, lattice, where, report, record),
                   walk_from_above(lattice, evaluate_from_above), below, above, lattice)
    finally:
        below.close()
        above.close()
    lowest = node_list(minimal(lattice.satisfying))  # evaluated nodes: inferred ones sit above one
    result = SearchResult(lattice.shape, lattice.satisfying, lattice.evaluated,
                          below.nodes_computed + above.nodes_computed, 0.0, queries=below.queries + above.queries,
                          minimal_nodes=None if judge.bounded else lowest)
    pool = lowest if judge.infer else lattice.pool()
    if pool:
        result.optimum = best_node(pool, lattice.evaluated, cost is not None)
    result.seconds = time.perf_counter() - started
    return result


class _Judge:
    """How the search judges a batch of nodes: the full criteria (``check``), the monotone
    necessary condition the subset phases prune on (``prune``: the criteria without suppression,
    the suppression lower bound with it), and both at once for the walk from above."""

    def __init__(self, problem: Problem, criteria: Sequence[Criterion], cost: FullDomainCost | None,
                 trim: Callable, for_optimum: bool = False) -> None:
        self.criteria, self.cost, self.trim = criteria, cost, trim
        self.rows, self.limit = problem.rows, problem.max_suppressed
        self.monotone = [c for c in criteria if c.monotone]
        self.can_prune = bool(self.limit) or bool(self.monotone)
        # Without suppression and with every criterion monotone, a satisfying node's generalizations satisfy.
        self.infer = not self.limit and len(self.monotone) == len(criteria)
        # With suppression, a node whose classes all pass needs no suppression; if the criteria are
        # monotone without suppression, so do its generalizations — and they cannot beat it (their
        # discernibility is Σ size², which only grows, and ties go to the lower node). They are
        # marked satisfying without a query.
        self.skip_above_perfect = not self.infer and len(self.monotone) == len(criteria)
        # Exploring for the optimum (discernibility only): each suppressed record costs ``rows``, so
        # a node that must suppress more than (the least discernibility of a satisfying node found)
        # // rows cannot be the optimum, nor can its specializations (they suppress at least as
        # much); nor can a node whose possible classes put a floor above it (``incognito``).
        self.bounded = for_optimum and cost is None
        self.best: int | None = None  # that least discernibility, once a node satisfied

    def within(self) -> int:
        """Records a node may have to suppress and still be the optimum (or satisfy at all)."""
        if self.best is None:
            return self.limit
        return min(self.limit, self.best // self.rows)

    def necessary(self, hist, nodes) -> np.ndarray:
        """Per node: the monotone condition holds (if not, it fails for every specialization too).
        With suppression: the records any specialization must suppress are within ``within()``
        (the bound is a float sum; the margin keeps rounding from ruling out a node)."""
        if self.limit:
            within = self.within()
            return suppression_lower_bound(hist, len(nodes), self.criteria) <= within + 1e-9 * max(1, within)
        return judge_batch(hist, len(nodes), self.monotone, self.rows, self.limit).satisfied

    def prune(self, hist, nodes) -> tuple:
        return self.necessary(self.trim(hist, len(nodes)), nodes), None, None

    def check(self, hist, nodes) -> tuple:
        return self._judged(self.trim(hist, len(nodes)), nodes)

    def from_above(self, hist, nodes) -> tuple:
        """``check``'s outcome, and per node whether everything below it fails."""
        hist = self.trim(hist, len(nodes))
        satisfied, outcome, costs = self._judged(hist, nodes)
        if self.infer:
            fails_below = ~satisfied
        elif self.can_prune:
            fails_below = ~self.necessary(hist, nodes)
        else:
            fails_below = np.zeros(len(nodes), dtype=bool)
        return satisfied, outcome, costs, fails_below

    def _judged(self, hist, nodes) -> tuple:
        failing = failing_classes(hist, self.criteria)
        outcome = judge_batch(hist, len(nodes), self.criteria, self.rows, self.limit, failing)
        if self.bounded and outcome.satisfied.any():
            least = int(outcome.discernibility[outcome.satisfied].min())
            self.best = least if self.best is None else min(self.best, least)
        costs = None
        if self.cost is not None and nodes:
            costs = self.cost.costs(np.array(nodes), hist.node, hist.codes, hist.sizes * failing)
        return outcome.satisfied, outcome, costs


def _from_below(runner, judge: _Judge, lattice: FullLattice, where: dict, report: Callable[[], None],
                record: Callable) -> Iterator[int]:
    """Incognito: the QI subsets' lattices by size (a-priori pruning), then the full lattice's
    candidates bottom-up; yields before each height what it would read (``_explore``). ``where``
    tells the progress report the size; ``record`` takes the full lattice's outcomes."""
    n = len(lattice.shape)
    shape_of = {s: tuple(lattice.shape[i] for i in s) for s in _all_subsets(n)}
    passed: dict[Subset, np.ndarray] = {}  # the satisfying nodes of the size before only: one lattice each
    if judge.can_prune:
        for size in range(1, n):  # all subsets of one size walk their lattices together
            cands = {s: _candidates(s, shape_of[s], passed) for s in combinations(range(n), size)}
            where.update(size=size, candidates=sum(int(c.sum()) for c in cands.values()))
            passed = {}  # its arrays go before this size's are filled (lattice_memory counts on it)
            passed = yield from _explore(runner, cands, judge.prune, infer=True, progress=report)
            del cands
    full = tuple(range(n))
    cand = _candidates(full, lattice.shape, passed) if judge.can_prune else np.ones(lattice.shape, dtype=bool)
    passed.clear()
    lattice.fail_outside(cand)  # a node with a failing projection fails
    where.update(size=n, candidates=int(cand.sum()))
    yield from _explore(runner, {full: cand}, judge.check, infer=judge.infer, lattice=lattice,
                        on_judged=record, skip_above_perfect=judge.skip_above_perfect, progress=report)


# The walk from below may read at most this fraction of the rows the walk from above has read
# (each runner counts the rows its batches read; 0: from above alone, a huge number: Incognito
# alone), shrunk as the walk from above decides more nodes than it judges (``_below_share``). From
# above is the faster end on real data (every case of the benchmarks: Adult 3-12×, 1 M generated
# rows 1.7-4×, 10 M 6×; with a fixed share the walk from below cost the 1 M- and 10 M-row searches
# 10-47 % and decided nothing first, docs/performance.md, twenty-eighth round); from below wins when
# nearly the whole lattice satisfies (a table of repeated rows), where each node from above decides
# only itself, so the share stays whole and bounds the search to ~11× Incognito alone in rows read
# (measured 4× on Adult repeated 5 times; docs/performance.md, "the lattice from both ends").
BELOW_SHARE = 0.1


def _below_share(above, lattice: FullLattice) -> float:
    """The walk from below's share now: ``BELOW_SHARE`` while each node the walk from above judges
    decides about one node (nearly the whole lattice satisfies: the case the walk from below is kept
    for), less as it decides more (a failing node decides everything below it): ``BELOW_SHARE`` ×
    the nodes it computed / the nodes decided (by either walk, or ruled out)."""
    return BELOW_SHARE * min(1.0, max(above.nodes_computed, 1) / max(lattice.decided_count(), 1))


def _both_ends(from_below: Iterator[int], from_above: Iterator[None], below, above, lattice: FullLattice) -> None:
    """Advance the walk from below when its next batch (which it says before running it) keeps it
    within its share of the rows read, else the walk from above, a batch at a time, until the
    lattice is decided (either walk ending means it is). Judged after the batch instead, one batch
    of subsets took the walk from below to 3.6× its share (10 M rows, 5 %: 60 M rows read
    by one batch of 15 two-QI nodes, 5.3 s of a 31 s search; docs/performance.md, eleventh round)."""
    upcoming = next(from_below, None)
    while not lattice.done:
        if upcoming is not None and below.rows_read + upcoming < _below_share(above, lattice) * max(above.rows_read, 1):
            upcoming = next(from_below, None)
            if upcoming is None:
                return
        elif next(from_above, StopIteration) is StopIteration:
            return


def _trim_for(runner, criteria: Sequence[Criterion], cost: FullDomainCost | None) -> Callable:
    """How a level's classes below k are left out before judging (they fail k whatever else
    holds, so no other criterion need be computed on them): engine-side by the SQL level batches,
    in numpy otherwise when other criteria would be computed. Not under a metric other than
    discernibility, whose suppression cost reads every suppressed class's codes. A SQL runner is
    also told what its parts are judged against, to make room for that in DuckDB's limit."""
    k = k_of(criteria) if cost is None else 1
    if isinstance(runner, BatchRunner):
        runner.drop_below = k
        runner.judged_by, runner.codes_read = criteria, 0 if cost is None else len(runner.problem.qis)
    if k <= 1 or all(isinstance(c, KAnonymity) for c in criteria):
        return lambda hist, nodes: hist
    return lambda hist, nodes: drop_classes_below(hist, k, nodes)


def _labels_per_level(problem: Problem) -> list[np.ndarray]:
    """Per QI, its number of labels at each level (float64: the floor's products are exact below 2⁵³)."""
    return [np.array([len(qi.hierarchy.labels(level)) for level in range(qi.levels)], dtype=np.float64)
            for qi in problem.qis]


def _rule_out_by_least_discernibility(lattice: FullLattice, labels: list[np.ndarray], rows: int,
                                      above: float) -> None:
    """Decide the nodes whose floor under their discernibility (``_floor_blocks``) passes ``above``."""
    for index, floor in _floor_blocks(lattice.shape, labels, rows):
        lattice.decided[index] |= floor > above


def _floor_blocks(shape: tuple[int, ...], labels: list[np.ndarray], rows: int) -> Iterator[tuple[tuple, np.ndarray]]:
    """Per node, a floor under its discernibility: rows² / classes (Σ size² over c classes is at
    least rows²/c; a suppressed record costs rows, at least its class's size), with at most
    min(rows, Π labels at the node's levels) classes. By blocks of at most ``FLOOR_BLOCK`` nodes,
    (the index of the leading axes, the block's floors): one float64 array over the whole lattice
    (and its temporaries) took 8 bytes a node, 26 GiB at 20 QIs. A product past ``rows`` is capped,
    so the order of the products (exact below 2⁵³) changes no node's floor."""
    lead = _leading_axes(shape, FLOOR_BLOCK)
    block = np.ones(shape[lead:])
    for axis in range(lead, len(shape)):
        block = block * labels[axis].reshape([-1 if a == axis - lead else 1 for a in range(len(shape) - lead)])
    for index in np.ndindex(*shape[:lead]):
        fixed = float(np.prod([labels[axis][level] for axis, level in enumerate(index)]))
        yield index, float(rows) ** 2 / np.minimum(block * fixed, rows)


def _leading_axes(shape: tuple[int, ...], cells: int) -> int:
    """How many leading axes to iterate over so that a block of the rest holds at most ``cells``."""
    lead = 0
    while lead < len(shape) and math.prod(shape[lead:]) > cells:
        lead += 1
    return lead


def best_node(pool: Sequence[Node], evaluated: Mapping[Node, Evaluated], by_cost: bool) -> Node:
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


def _explore(runner, cands: dict[Subset, np.ndarray], judge, infer: bool, lattice: FullLattice | None = None,
             on_judged: Callable | None = None, skip_above_perfect: bool = False,
             progress: Callable[[], None] = lambda: None) -> Generator[int, None, dict[Subset, np.ndarray]]:
    """Bottom-up over the lattices of ``cands``' subsets together, one height at a time (one
    batch of queries per height for all of them); yields before each height what its batch would
    read (``planned_rows``), and runs it when resumed.

    ``judge(histograms, nodes)`` returns (satisfied per node, BatchOutcome or None, metric cost
    per node or None). With ``infer``, a satisfying node marks all its generalizations, which are
    then not queried; with ``skip_above_perfect``, only a node that suppresses nothing does.
    ``lattice`` (the full subset's walk): its decided nodes are skipped, and what this walk
    decides is written there; ``on_judged(nodes, satisfied, outcome, costs)`` records outcomes.
    Returns the satisfying nodes of each subset.
    """
    runner.start()
    satisfying = {s: np.zeros(c.shape, dtype=bool) for s, c in cands.items()}
    decided = {s: np.zeros(c.shape, dtype=bool) for s, c in cands.items()}
    if lattice is not None:
        (full,) = cands
        satisfying[full], decided[full] = lattice.satisfying, lattice.decided
    groups = {s: by_height(c) for s, c in cands.items()}  # candidates only: Incognito never asks of others
    for h in range(max(len(g) for g in groups.values())):
        # One height's undecided nodes as tuples at a time (search/lattice_memory.py counts the widest).
        todo = [(s, nd) for s, g in groups.items() if h < len(g) for nd in node_tuples(_undecided(g[h], decided[s]))]
        yield runner.planned_rows(todo)
        todo = [(s, nd) for s, nd in todo if not decided[s][nd]]  # the other walk may have decided some meanwhile
        nodes = [nd for _, nd in todo]
        satisfied, outcome, costs = _joined(_judged(level_parts(runner, todo), judge, nodes))
        if on_judged is not None and todo:
            on_judged(nodes, satisfied, outcome, costs)
        for n, (s, node) in enumerate(todo):
            decided[s][node] = True
            if satisfied[n]:
                satisfying[s][node] = True
                if infer or (skip_above_perfect and outcome.suppressed[n] == 0):
                    above = tuple(slice(level, None) for level in node)
                    satisfying[s][above] = True
                    decided[s][above] = True
        progress()
    return satisfying


def _undecided(rows: np.ndarray, decided: np.ndarray) -> np.ndarray:
    """The rows of levels (``by_height``'s) whose node is not decided."""
    return rows[~decided[tuple(rows.T)]]


def _judged(parts: Iterator[LevelPart], judge: Callable, nodes: list[Node]) -> list[tuple]:
    """``judge(histograms, nodes)`` of each part of a level, each let go before the next is
    fetched (a comprehension's variable held it: two parts at once at the search's peak)."""
    judged = []
    for part in parts:
        judged.append(judge(part.hist, nodes[part.start:part.stop]))
        del part
    return judged


def _joined(parts: list[tuple]) -> tuple:
    """(satisfied, outcome, costs) of a level judged in parts of consecutive nodes, as one."""
    if len(parts) == 1:
        return parts[0]
    satisfied = np.concatenate([p[0] for p in parts])
    outcome = None if parts[0][1] is None else BatchOutcome(
        *(np.concatenate([getattr(p[1], f.name) for p in parts]) for f in fields(BatchOutcome)))
    costs = None if parts[0][2] is None else np.concatenate([p[2] for p in parts])
    return satisfied, outcome, costs
