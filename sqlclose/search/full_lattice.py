"""The full QI lattice as the search decides it, and the walk that decides it from the top down.

The search walks the lattice from both ends (``incognito``): Incognito from below, and
``walk_from_above`` from the top, one batch per height. A node is *decided* once it was evaluated or
follows from one that was — everything above a node that satisfies monotone requirements satisfies
them, everything below a node that fails a monotone necessary condition fails — and neither walk
evaluates a node the other has decided. From above nothing is inferred upward, so that walk
evaluates every node that can still satisfy plus the highest that cannot: on real data, where a
release needs coarse levels, far fewer than a walk from the bottom (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from sqlclose.model.lattice import Node, level_type, node_list, strictly_above
from sqlclose.privacy.criteria import BatchOutcome
from sqlclose.search.evaluated import EvaluatedNodes


@lru_cache(maxsize=64)
def _heights(shape: tuple[int, ...]) -> np.ndarray:
    heights = np.zeros(shape, dtype=np.int16)  # 2 bytes a node: wide lattices have millions
    for axis, levels in enumerate(shape):
        heights += np.arange(levels, dtype=np.int16).reshape([-1 if a == axis else 1 for a in range(len(shape))])
    heights.setflags(write=False)
    return heights


@dataclass
class FullLattice:
    """The full lattice's decided and satisfying nodes (boolean arrays, one cell per node), the
    nodes evaluated with their outcomes (arrays too: ``search/evaluated.py``), and those that
    suppress nothing (``perfect``)."""

    shape: tuple[int, ...]
    decided: np.ndarray = field(init=False)
    satisfying: np.ndarray = field(init=False)
    perfect: np.ndarray = field(init=False)
    evaluated: EvaluatedNodes = field(init=False)

    def __post_init__(self) -> None:
        self.evaluated = EvaluatedNodes(self.shape)
        self.decided = np.zeros(self.shape, dtype=bool)
        self.satisfying = np.zeros(self.shape, dtype=bool)
        self.perfect = np.zeros(self.shape, dtype=bool)

    @property
    def size(self) -> int:
        return int(self.decided.size)

    @property
    def done(self) -> bool:
        return bool(self.decided.all())

    def decided_count(self) -> int:
        return int(np.count_nonzero(self.decided))

    def highest_undecided(self) -> list[Node]:
        """The undecided nodes of the greatest height that has any, lexicographically."""
        open_ = ~self.decided
        if not open_.any():
            return []
        heights = _heights(self.shape)
        top = int(heights[open_].max())
        return [tuple(int(v) for v in row) for row in np.argwhere(open_ & (heights == top))]

    def fail_below(self, node: Node) -> None:
        """``node`` fails a monotone necessary condition: it and every specialization fail."""
        self.decided[tuple(slice(0, level + 1) for level in node)] = True

    def record(self, nodes: list[Node], satisfied: np.ndarray, outcome: BatchOutcome,
               costs: np.ndarray | None) -> None:
        """Evaluated nodes' outcomes (either walk's)."""
        if not nodes:
            return
        cells = tuple(np.array(nodes, dtype=level_type(self.shape)).T)  # a byte a level: batches are wide
        satisfied = np.asarray(satisfied, dtype=bool)
        self.evaluated.record(cells, satisfied, outcome, costs)
        self.decided[cells] = True
        passing = tuple(axis[satisfied] for axis in cells)
        self.satisfying[passing] = True
        self.perfect[passing] = np.asarray(outcome.suppressed)[satisfied] == 0

    def pool(self) -> list[Node]:
        """Where the optimum is, with suppression: the evaluated satisfying nodes, except those
        above a node that suppresses nothing (they cannot beat it, as when the walk from below
        infers them without evaluating)."""
        return node_list(self.satisfying & ~strictly_above(self.perfect) & self.evaluated.known)

    def fail_outside(self, candidates: np.ndarray) -> None:
        """Nodes that are not candidates (a projection failed a monotone condition) fail."""
        self.decided |= ~candidates


def walk_from_above(lattice: FullLattice, evaluate: Callable[[list[Node]], np.ndarray]) -> Iterator[None]:
    """Evaluate the highest undecided nodes, one height at a time, until all are decided; yields
    after each batch. ``evaluate(nodes)`` judges and records them and says, per node, whether it
    fails a monotone necessary condition (then so does everything below it)."""
    while nodes := lattice.highest_undecided():
        fails = evaluate(nodes)
        for node, below in zip(nodes, fails.tolist()):
            lattice.decided[node] = True
            if below:
                lattice.fail_below(node)
        yield
