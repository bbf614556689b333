"""The search's runners — what computes the class histograms of lattice nodes — and which one a
problem gets.

- ``memory_runner.MemoryRunner``: rollups in numpy over the base histogram, fetched once, when
  it is small (aggregated counts, never input rows): there a level query's fixed cost in the
  engine would dwarf its work.
- ``batch_runner.BatchRunner``: the SQL level batches, a whole level in as few engine queries as
  fit a row budget, kept engine-side as the next level's parents.
- ``node_runner.NodeRunner``: one query per node, for problems whose single QI digit does not fit
  a 62-bit key (and for the release's single node).

Each computes a level's items (``items.Item``: a node of one QI subset's lattice) and says, before
it runs, what it would read (``planned_rows``: the search balances its two walks by it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from sqlclose.prepare.problem import Problem
from sqlclose.search import memory_runner
from sqlclose.search.batch_runner import BatchRunner
from sqlclose.search.items import Item, LevelPart
from sqlclose.search.memory_runner import MemoryRunner, class_strides
from sqlclose.search.node_runner import NodeRunner

Runner = MemoryRunner | BatchRunner | NodeRunner


def runner_for(problem: Problem) -> Runner:
    """Rollups in numpy over the base histogram when the in-memory path takes the problem
    (``memory_runner.takes``); else level batches in SQL (keys in one or more BIGINT words); one
    query per node only when a single QI's codes exceed 62 bits."""
    if memory_runner.takes(problem):
        return MemoryRunner(problem, class_strides(problem))
    packing = problem.packing
    return BatchRunner(problem, packing) if packing is not None else NodeRunner(problem)


def second_runner(runner: Runner) -> Runner:
    """A runner of the same kind for a second walk over the same problem: its own previous level
    and engine tables, the in-memory base histogram shared."""
    if isinstance(runner, MemoryRunner):
        return runner.sibling()
    if isinstance(runner, BatchRunner):
        return BatchRunner(runner.problem, runner.packing, runner.keyed, drop_below=runner.drop_below)
    return NodeRunner(runner.problem)


def level_parts(runner: Runner, items: Sequence[Item]) -> Iterator[LevelPart]:
    """A level's class histograms in parts of whole nodes: the SQL level batches may bring a large
    kept level back in several; the other runners compute a level whole."""
    if isinstance(runner, BatchRunner):
        return runner.level_parts(items)
    return iter([LevelPart(0, len(items), runner.level(items))])
