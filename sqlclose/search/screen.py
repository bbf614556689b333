"""The screen: nodes of the walk from above ruled out by a sample of their classes, before their
histograms are grouped (``BatchRunner``, the SQL level batches; DuckDB only, where levels are kept).

When a node may suppress no record (no suppression: ``read_within`` is 0), one class below k
fails it. The screen looks for one among a sample of the node's classes. The sample is whole
classes, so the records below k it finds are exact for them and a lower bound for the node: a node
it rules out would fail in full too. A node it does not rule out is grouped as before; the screen
never decides that a node passes.

A sample is shared by nodes. The keyed rows whose class at some node hashes to 0 modulo
``SCREEN_MODULUS`` are whole classes of that node and of every node finer than it. So the nodes of
a level are put in samples drawn at coarser nodes (each QI at the coarsest of their levels) that
still have ``SCREEN_MIN_VALUES`` classes or more; the base is hashed and filtered once per sample,
and each node groups only the sample, about a ``SCREEN_MODULUS``-th of the rows. The full GROUP BY
it spares puts every base row in a hash table of millions of groups.

It pays where fine nodes fail k: on a generated 10 M-row table with a date of birth, 80 of a
level's 82 nodes were ruled out, and the job took 0.73 of its time. Where nodes pass, or fail t
alone, it is work for nothing, so it reads only nodes whose histogram can outgrow the CPU's caches.
docs/performance.md, seventy-fifth round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from sqlclose.model.arrays import numpy_of
from sqlclose.search.items import Item, Subset, chunks
from sqlclose.sql import queries as q

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlclose.model.lattice import Node
    from sqlclose.prepare.problem import Problem
    from sqlclose.search.keyed_base import KeyedBase
    from sqlclose.search.packing import Packing

SCREEN_MODULUS = 32  # the sample: rows whose sampled bits hash to 0 modulo this
# A node is screened when it can have at least this many (class, sensitive value) rows: a hash
# table past the CPU's caches, where grouping a row costs ~3–6× reading it (floors.CACHED_GROUPS).
SCREEN_MIN_ROWS = 262_144
# A sample is drawn at a node of at least this many classes (by its code space), so that hashing
# them picks about a ``SCREEN_MODULUS``-th of its nodes' classes, not a few lumps of them.
SCREEN_MIN_VALUES = 8 * SCREEN_MODULUS
SCREEN_ROWS_PER_QUERY = 4_000_000  # sampled rows one screening query may group (bounds its memory)


class SampledScreen:
    """The screen of a ``BatchRunner`` (mixed into it). It reads the runner's problem, packing,
    keyed base, row bounds and code spaces (``_rows_bound``, ``_space``), names (``_name``), masks
    (``_masks``), the k it drops classes below, its suppression bound (``read_within``) and counters."""

    problem: Problem
    packing: Packing
    keyed: KeyedBase | None
    drop_below: int
    read_within: Callable[[], int] | None
    queries: int
    rows_read: int

    def _within(self) -> int:
        """Records below k past which a node is not read further (``read_within``, else the limit)."""
        return self.problem.max_suppressed if self.read_within is None else self.read_within()

    def _screened(self, parentless: Sequence[tuple[int, Item]], count: int) -> np.ndarray:
        """Per item (``count`` of them, by id): the records below k in its sampled classes; 0 for
        an item not screened. An item with more than ``_within()`` is ruled out."""
        found = np.zeros(count, dtype=np.int64)
        if self.drop_below <= 1 or self._within() > 0:
            return found
        samples: list[tuple[Subset, Node, list[tuple[int, ...]]]] = []  # (subset, sampled levels, plan)
        for n, (subset, node) in parentless:
            if self._rows_bound(subset, node) >= SCREEN_MIN_ROWS:
                self._join_sample(samples, n, subset, node)
        for subset, levels, plan in samples:
            self._screen(subset, levels, plan, found)
        return found

    def _join_sample(self, samples: list, n: int, subset: Subset, node: Node) -> None:
        """Put the node in the first sample whose levels, joined with its own (each QI's coarser
        level), still leave ``SCREEN_MIN_VALUES`` classes; else in a sample of its own levels."""
        row = (n, *self._masks(subset, node))
        for i, (their_subset, levels, plan) in enumerate(samples):
            if their_subset == subset:
                joined = tuple(max(a, b) for a, b in zip(levels, node))
                if self._space(subset, joined) >= SCREEN_MIN_VALUES * self.packing.sa_width:
                    samples[i] = (subset, joined, [*plan, row])
                    return
        samples.append((subset, node, [row]))

    def _screen(self, subset: Subset, levels: Node, plan: list[tuple[int, ...]], found: np.ndarray) -> None:
        """The base's rows whose key at ``levels`` (less its sensitive part) hashes to 0, kept;
        each node of ``plan`` grouped from them, its records below k written into ``found``."""
        engine, sample = self.problem.engine, self._name("sample")
        masks = self._masks(subset, levels)
        engine.keep(sample, q.sampled_rows(self.keyed.table(), masks, self.packing.sa_span, SCREEN_MODULUS))
        self.queries += 1
        self.rows_read += self.problem.base_rows
        per_node = self.problem.base_rows // SCREEN_MODULUS + 1
        for rows in chunks([(per_node, row) for row in plan], SCREEN_ROWS_PER_QUERY):
            query = q.small_class_records(q.table(sample), rows, self.drop_below, self.packing.sa_span)
            result = engine.fetch(query)
            found[numpy_of(result.column("node")).astype(np.int64)] = numpy_of(result.column("dropped"))
            self.queries += 1
            self.rows_read += per_node * len(rows)
        engine.unregister(sample)
