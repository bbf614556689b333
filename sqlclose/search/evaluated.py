"""The full lattice's evaluated nodes and their outcomes: a cell per node in NumPy arrays.

Deciding the whole lattice can evaluate every node of it (from above, nothing is inferred upward).
Kept as a dict of an ``Evaluated`` object per node they took ~400 B a node, outside the lattice
memory bound (docs/performance.md, fifty-third round); as arrays indexed by the node's levels they
take ``BYTES_PER_NODE`` a node of the lattice, counted there (``search/lattice_memory.py``), and a
node's ``Evaluated`` is made when it is asked for.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from sqlclose.model.lattice import Node, node_list
from sqlclose.privacy.criteria import BatchOutcome


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


# Per node of the lattice: evaluated, satisfied and costed (bool); classes, suppressed and
# discernibility (int64, as judged); the cost (float64).
BYTES_PER_NODE = 3 * 1 + 3 * 8 + 8


class EvaluatedNodes(Mapping[Node, Evaluated]):
    """The evaluated nodes of a lattice of ``shape`` with their outcomes, read as a mapping from
    node to ``Evaluated`` (nodes in lexicographic order, then any added by ``with_node``)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        # np.zeros: pages the search never writes are not even resident.
        self.known = np.zeros(shape, dtype=bool)  # the node was evaluated
        self._satisfied = np.zeros(shape, dtype=bool)
        self._classes = np.zeros(shape, dtype=np.int64)
        self._suppressed = np.zeros(shape, dtype=np.int64)
        self._discernibility = np.zeros(shape, dtype=np.int64)
        self._costed = np.zeros(shape, dtype=bool)
        self._cost = np.zeros(shape, dtype=np.float64)
        self._extra: dict[Node, Evaluated] = {}  # measured after the search (``with_node``)

    def record(self, cells: tuple[np.ndarray, ...], satisfied: np.ndarray, outcome: BatchOutcome,
               costs: np.ndarray | None) -> None:
        """A batch's outcomes; ``cells`` index its nodes (one array of levels per QI)."""
        self.known[cells] = True
        self._satisfied[cells] = satisfied
        self._classes[cells] = outcome.classes
        self._suppressed[cells] = outcome.suppressed
        self._discernibility[cells] = outcome.discernibility
        self._costed[cells] = costs is not None
        self._cost[cells] = 0.0 if costs is None else costs

    def with_node(self, node: Node, evaluated: Evaluated) -> EvaluatedNodes:
        """These outcomes and ``node``'s (measured after the search), the arrays shared, not copied."""
        more = copy.copy(self)
        more._extra = {**self._extra, node: evaluated}
        return more

    def _cell(self, node: Node) -> Node | None:
        """``node`` as an index into the arrays; None when it is no node of the lattice."""
        if len(node) != len(self.shape) or not all(0 <= v < n for v, n in zip(node, self.shape)):
            return None
        return tuple(int(v) for v in node)

    def __contains__(self, node: object) -> bool:
        return node in self._extra or (isinstance(node, tuple) and self._in_arrays(node))

    def __getitem__(self, node: Node) -> Evaluated:
        if node in self._extra:
            return self._extra[node]
        cell = self._cell(node)
        if cell is None or not self.known[cell]:
            raise KeyError(node)
        return Evaluated(cell, bool(self._satisfied[cell]), int(self._classes[cell]), int(self._suppressed[cell]),
                         int(self._discernibility[cell]), float(self._cost[cell]) if self._costed[cell] else None)

    def _added(self) -> list[Node]:
        """Nodes ``with_node`` gave that the arrays do not hold."""
        return [node for node in self._extra if not self._in_arrays(node)]

    def _in_arrays(self, node: Node) -> bool:
        cell = self._cell(node)
        return cell is not None and bool(self.known[cell])

    def __iter__(self) -> Iterator[Node]:
        yield from node_list(self.known)
        yield from self._added()

    def __len__(self) -> int:
        return int(np.count_nonzero(self.known)) + len(self._added())
